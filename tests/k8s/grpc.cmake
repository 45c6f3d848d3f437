# The pod-resources gRPC client (src/k8s/grpc.cmake) against the stand-in kubelet, and the
# stand-in kubelet itself: build/bin/gw-fake-kubelet, built from the same api.proto (its usage is
# at the top of fake_kubelet.cpp; tests start it through fake_kubelet_process.h).
if(NOT TARGET gw_k8s_grpc)
  return()
endif()

add_executable(gw-fake-kubelet ${CMAKE_CURRENT_LIST_DIR}/fake_kubelet.cpp)
target_link_libraries(gw-fake-kubelet PRIVATE gw_k8s_grpc_proto nlohmann_json::nlohmann_json
                      Threads::Threads)

gw_unit_test(k8s_grpc_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/grpc_client_test.cpp
  LIBS gw_k8s_grpc nlohmann_json::nlohmann_json)
add_dependencies(k8s_grpc_test gw-fake-kubelet)
# api.proto against the whole upstream v1 surface (messages, fields, numbers, types, methods).
gw_unit_test(k8s_proto_surface_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/proto_surface_test.cpp
  LIBS gw_k8s_grpc_proto)
