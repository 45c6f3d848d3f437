# gw_k8s: the pod table and pod list parser, the poller and the attribution source (no gRPC; the
# poller reads the kubelet through a PodResourcesApi, see src/k8s/pod_resources.h).
add_library(gw_k8s STATIC
  ${CMAKE_CURRENT_LIST_DIR}/pod_table.cpp
  ${CMAKE_CURRENT_LIST_DIR}/poller.cpp
  ${CMAKE_CURRENT_LIST_DIR}/attribution_source.cpp)
target_include_directories(gw_k8s PUBLIC ${PROJECT_SOURCE_DIR}/src)
target_link_libraries(gw_k8s PUBLIC gw_jobs gw_base Threads::Threads
                      PRIVATE nlohmann_json::nlohmann_json)
