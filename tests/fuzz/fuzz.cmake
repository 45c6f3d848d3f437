# The libFuzzer build (GW_FUZZ=ON, build-fuzz/; scripts/fuzz.sh drives it, docs/fuzzing.md says
# how). Included from the top-level CMakeLists.txt, which then stops: only the libraries the fuzz
# targets link are configured, and every one of them is compiled with coverage instrumentation
# (fuzzer-no-link) and ASan + UBSan, so libFuzzer sees the code under test, not just the harness.
if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  message(FATAL_ERROR "GW_FUZZ needs clang (libFuzzer): configure with "
                      "-DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++")
endif()

add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer
                    -fno-sanitize-recover=all)
add_link_options(-fsanitize=address,undefined)

foreach(module base tsdb promql rules sim http web jobs k8s)
  add_subdirectory(src/${module})
endforeach()

# The configuration reader (gw_config) links the modules whose settings it fills; the fuzz target
# compiles just the files that parse the configuration (src/config/parse_sources.cmake, the list
# gw_config compiles too).
# (teams.cpp: teams.namespaces' patterns are checked as they are read.)
include(${PROJECT_SOURCE_DIR}/src/config/parse_sources.cmake)
add_library(gw_fuzz_config STATIC ${GW_CONFIG_PARSE_SOURCES} src/jobs/teams.cpp)
target_include_directories(gw_fuzz_config PUBLIC ${PROJECT_SOURCE_DIR}/src)
target_link_libraries(gw_fuzz_config PUBLIC gw_promql gw_tsdb gw_base yaml-cpp PRIVATE PkgConfig::RE2)

# Slurm host lists: just the parser (the rest of jobs/ reads /proc and runs squeue).
add_library(gw_fuzz_hostlist STATIC src/jobs/slurm_hostlist.cpp)
target_include_directories(gw_fuzz_hostlist PUBLIC ${PROJECT_SOURCE_DIR}/src)

# Remote write's message: just the protobuf reader/writer (no snappy, no HTTP).
add_library(gw_fuzz_remote STATIC src/remote/write_request.cpp)
target_include_directories(gw_fuzz_remote PUBLIC ${PROJECT_SOURCE_DIR}/src)
target_link_libraries(gw_fuzz_remote PUBLIC gw_base)

add_custom_target(fuzz)
# gw_fuzz_target(NAME LIBS...): tests/fuzz/NAME.cpp linked with libFuzzer's main as
# build-fuzz/bin/fuzz_NAME; its seeds are tests/fuzz/corpus/NAME/.
function(gw_fuzz_target name)
  add_executable(fuzz_${name} ${PROJECT_SOURCE_DIR}/tests/fuzz/${name}.cpp)
  target_link_libraries(fuzz_${name} PRIVATE ${ARGN})
  target_link_options(fuzz_${name} PRIVATE -fsanitize=fuzzer)
  add_dependencies(fuzz fuzz_${name})
endfunction()

gw_fuzz_target(promql_parse gw_promql)
gw_fuzz_target(promql_eval gw_promql gw_tsdb)
gw_fuzz_target(rule_file gw_rules)
gw_fuzz_target(template gw_rules)
gw_fuzz_target(config gw_fuzz_config)
gw_fuzz_target(web_config gw_http)
gw_fuzz_target(scenario gw_sim_core)
gw_fuzz_target(text_import gw_tsdb)
gw_fuzz_target(wal gw_tsdb)
gw_fuzz_target(chunks gw_tsdb)
gw_fuzz_target(http_request gw_web gw_http)
gw_fuzz_target(http_parser gw_http)
gw_fuzz_target(slurm_hostlist gw_fuzz_hostlist)
gw_fuzz_target(remote_write gw_fuzz_remote)
# The kubelet's List answer through the Kubernetes source (needs gRPC/protobuf like the agent).
gw_fuzz_target(pod_resources gw_k8s gw_k8s_grpc)

# The binary seeds (tests/fuzz/make_seeds.py runs it); not a fuzzer, not part of `fuzz`.
add_executable(fuzz_binary_seeds ${PROJECT_SOURCE_DIR}/tests/fuzz/binary_seeds.cpp)
target_link_libraries(fuzz_binary_seeds PRIVATE gw_tsdb)
# The pod_resources seeds, from the client's own encoder (also run by make_seeds.py).
add_executable(fuzz_pod_resources_seeds ${PROJECT_SOURCE_DIR}/tests/fuzz/pod_resources_seeds.cpp)
target_link_libraries(fuzz_pod_resources_seeds PRIVATE gw_k8s_grpc)
