# The loader of libgpuwarden-k8s.so (k8s/grpc_module.h) in a binary that links gw_k8s only, as the
# agent does (linking gw_k8s_grpc too would register api.proto's descriptors twice).
if(NOT TARGET gpuwarden-k8s OR NOT TARGET gw-fake-kubelet)
  return()
endif()
gw_unit_test(k8s_module_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/grpc_module_test.cpp
  LIBS gw_k8s nlohmann_json::nlohmann_json)
target_compile_definitions(k8s_module_test PRIVATE GW_K8S_MODULE="$<TARGET_FILE:gpuwarden-k8s>")
add_dependencies(k8s_module_test gpuwarden-k8s gw-fake-kubelet)
