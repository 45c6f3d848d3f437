# The demo build (GW_DEMO=ON; scripts/build.sh demo, build-demo/): what `bash scripts/demo.sh`
# compiles on a fresh machine before the console answers, made to compile in as little CPU time as
# it can (docs/benchmarks.md, "Fresh machine to console"). The release and ASan builds are not
# touched by any of this. Warnings stay errors.
#
# - No debug information: -O2 like the release build (so the same optimizer-driven warnings), no -g.
# - Unity build: each library's sources compiled a few at a time in one translation unit, so the
#   standard library and the heavy third-party headers (nlohmann/json, yaml-cpp, CLI11) are parsed
#   and their inline functions compiled once per batch instead of once per file.
# scripts/build.sh demo configures CMAKE_BUILD_TYPE=Release; CMake's own Release flags are -O3.
set(CMAKE_C_FLAGS_RELEASE "-O2 -DNDEBUG")
set(CMAKE_CXX_FLAGS_RELEASE "-O2 -DNDEBUG")
if(NOT DEFINED GW_DEMO_UNITY_BATCH)
  set(GW_DEMO_UNITY_BATCH 8)
endif()
if(GW_DEMO_UNITY_BATCH GREATER 0)
  set(CMAKE_UNITY_BUILD ON)
  set(CMAKE_UNITY_BUILD_BATCH_SIZE ${GW_DEMO_UNITY_BATCH})
endif()
