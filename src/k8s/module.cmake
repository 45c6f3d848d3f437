# libgpuwarden-k8s.so: the gRPC pod-resources client as a module (k8s/grpc_module.h). The agent
# binary does not link gRPC or protobuf; it dlopens this when jobs.scheduler is kubernetes. Built
# into build/bin beside the gpuwarden binary (CMAKE_LIBRARY_OUTPUT_DIRECTORY), where the loader
# looks first; installed as /usr/lib/gpuwarden/libgpuwarden-k8s.so (docs/operations.md).
# Only the two entry points are exported (module_exports.map); everything else, the generated
# code included, stays local, so the module's copies never interpose on the agent's symbols.
add_library(gpuwarden-k8s SHARED ${CMAKE_CURRENT_LIST_DIR}/grpc_module_entry.cpp)
target_link_libraries(gpuwarden-k8s PRIVATE gw_k8s_grpc gw_k8s_grpc_proto)
set_target_properties(gpuwarden-k8s PROPERTIES
  OUTPUT_NAME gpuwarden-k8s CXX_VISIBILITY_PRESET hidden VISIBILITY_INLINES_HIDDEN ON
  LINK_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/module_exports.map)
target_link_options(gpuwarden-k8s PRIVATE
  -Wl,--version-script=${CMAKE_CURRENT_LIST_DIR}/module_exports.map)
if(NOT GW_SANITIZE)
  target_link_options(gpuwarden-k8s PRIVATE -Wl,--no-undefined)
endif()
