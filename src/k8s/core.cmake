# gw_k8s: the pod table and pod list parser, the poller, the attribution source and the loader of
# the gRPC module (no gRPC; the poller reads the kubelet through a PodResourcesApi, see
# src/k8s/pod_resources.h, which the agent gets from libgpuwarden-k8s.so, k8s/grpc_module.h).
add_library(gw_k8s STATIC
  ${CMAKE_CURRENT_LIST_DIR}/pod_table.cpp
  ${CMAKE_CURRENT_LIST_DIR}/poller.cpp
  ${CMAKE_CURRENT_LIST_DIR}/attribution_source.cpp
  ${CMAKE_CURRENT_LIST_DIR}/grpc_module.cpp)
target_include_directories(gw_k8s PUBLIC ${PROJECT_SOURCE_DIR}/src)
target_link_libraries(gw_k8s PUBLIC gw_jobs gw_base Threads::Threads ${CMAKE_DL_LIBS}
                      PRIVATE nlohmann_json::nlohmann_json)
