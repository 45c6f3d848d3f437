# gw_k8s_grpc: the kubelet pod-resources API over gRPC (k8s/grpc_client.h). api.proto is turned
# into C++ at build time by Debian's protoc and grpc_cpp_plugin (protobuf-compiler-grpc); the
# generated sources are compiled in their own object library, the only place where warnings are
# relaxed. Their headers are included by grpc_client.cpp and the stand-in kubelet only
# (tests/k8s/fake_kubelet.cpp), never by a header: everything else sees k8s/pod_resources.h.
# Included from src/k8s/CMakeLists.txt, and from tests/fuzz/fuzz.cmake for the fuzz build.
find_program(GW_PROTOC protoc REQUIRED)
find_program(GW_GRPC_CPP_PLUGIN grpc_cpp_plugin REQUIRED)
pkg_check_modules(GW_GRPCPP REQUIRED IMPORTED_TARGET GLOBAL grpc++)
pkg_check_modules(GW_PROTOBUF REQUIRED IMPORTED_TARGET GLOBAL protobuf)

# Generated into build/gen/k8s_proto (api.pb.{h,cc}, api.grpc.pb.{h,cc}); GW_K8S_PROTO_DIR is the
# include directory for the two files that include them.
set(GW_K8S_PROTO_DIR ${CMAKE_BINARY_DIR}/gen/k8s_proto)
set(GW_K8S_PROTO_SOURCES ${GW_K8S_PROTO_DIR}/api.pb.cc ${GW_K8S_PROTO_DIR}/api.grpc.pb.cc)
set(GW_K8S_PROTO_HEADERS ${GW_K8S_PROTO_DIR}/api.pb.h ${GW_K8S_PROTO_DIR}/api.grpc.pb.h)
add_custom_command(
  OUTPUT ${GW_K8S_PROTO_SOURCES} ${GW_K8S_PROTO_HEADERS}
  COMMAND ${CMAKE_COMMAND} -E make_directory ${GW_K8S_PROTO_DIR}
  COMMAND ${GW_PROTOC} --proto_path=${CMAKE_CURRENT_LIST_DIR} --cpp_out=${GW_K8S_PROTO_DIR}
          --grpc_out=${GW_K8S_PROTO_DIR} --plugin=protoc-gen-grpc=${GW_GRPC_CPP_PLUGIN}
          ${CMAKE_CURRENT_LIST_DIR}/api.proto
  DEPENDS ${CMAKE_CURRENT_LIST_DIR}/api.proto ${GW_PROTOC} ${GW_GRPC_CPP_PLUGIN}
  COMMENT "protoc: src/k8s/api.proto (pod-resources v1)"
  VERBATIM)

add_library(gw_k8s_grpc_proto OBJECT ${GW_K8S_PROTO_SOURCES})
# Generated code: protoc's output is not ours to fix; its warnings stay warnings here, and only here.
target_compile_options(gw_k8s_grpc_proto PRIVATE -Wno-error)
# SYSTEM: the generated headers' warnings are not reported in the files that include them.
target_include_directories(gw_k8s_grpc_proto SYSTEM PUBLIC ${GW_K8S_PROTO_DIR})
target_link_libraries(gw_k8s_grpc_proto PUBLIC PkgConfig::GW_GRPCPP PkgConfig::GW_PROTOBUF)

# Linking the object library puts its objects into gw_k8s_grpc (and grpc++/protobuf on the link
# line of whatever links gw_k8s_grpc).
add_library(gw_k8s_grpc STATIC ${CMAKE_CURRENT_LIST_DIR}/grpc_client.cpp)
target_include_directories(gw_k8s_grpc PUBLIC ${PROJECT_SOURCE_DIR}/src)
target_link_libraries(gw_k8s_grpc PUBLIC gw_base PRIVATE gw_k8s_grpc_proto)
