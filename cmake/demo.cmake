# The demo build (GW_DEMO=ON; scripts/build.sh demo, build-demo/): what `bash scripts/demo.sh`
# compiles on a fresh machine before the console answers, made to compile in as little CPU time as
# it can (docs/benchmarks.md, "Fresh machine to console"). The release and ASan builds are not
# touched by any of this. Warnings stay errors.
#
# - -O1, no debug information: two thirds of a batch's compile time is GCC's optimizer, and -O1
#   costs ~30 % less CPU than the release build's -O2 (docs/benchmarks.md, "The demo at -O1"), for
#   an agent that spends ~1 % of a core on the demo fleet either way. Warnings stay errors; a warning
#   only -O1 reports fails this build (and only this one), as at -O2.
# - Unity build: each library's sources compiled a few at a time in one translation unit, so the
#   standard library and the heavy third-party headers (nlohmann/json, yaml-cpp, CLI11) are parsed
#   and their inline functions compiled once per batch instead of once per file.
# scripts/build.sh demo configures CMAKE_BUILD_TYPE=Release; CMake's own Release flags are -O3.
set(CMAKE_C_FLAGS_RELEASE "-O1 -DNDEBUG")
set(CMAKE_CXX_FLAGS_RELEASE "-O1 -DNDEBUG")
set(GW_DEMO_UNITY_BATCH 8 CACHE STRING "Sources per unity batch in the demo build; 0: none")
if(GW_DEMO_UNITY_BATCH GREATER 0)
  set(CMAKE_UNITY_BUILD ON)
  set(CMAKE_UNITY_BUILD_BATCH_SIZE ${GW_DEMO_UNITY_BATCH})
endif()

# Files that cannot share a translation unit with the ones batched before them: each defines, in
# an anonymous namespace, a name that another file of its library defines too (kMiB, kGiB, Fmt,
# Percent, WallNowS, a Clock alias, config's At...). They are compiled on their own. Called at
# the end of the top-level CMakeLists.txt, once every directory exists. A file added later that
# collides fails the unity build; scripts/build.sh demo then builds file by file
# (GW_DEMO_UNITY_BATCH=0), which costs up to twice the CPU time. Only compiling finds such a file
# (scripts/check-demo-build.py checks that the files listed here are compiled on their own).
function(gw_demo_unity_exceptions)
  set(skips
    cli diagnose_commands.cpp
    cli jobs_commands.cpp
    collect gpu_reader_datacenter.cpp
    config diagnose_config.cpp
    diagnose training.cpp
    http prom_api.cpp
    http server.cpp
    scrape scraper.cpp
    serve jobs_metrics.cpp
    sim api_events.cpp
    sim device.cpp
    top render.cpp
    top render_datacenter.cpp
    top render_processes.cpp)
  while(skips)
    list(POP_FRONT skips dir file)
    set_source_files_properties(src/${dir}/${file} DIRECTORY src/${dir}
                                PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
  endwhile()
endfunction()
