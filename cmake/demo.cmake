# The demo build (GW_DEMO=ON; scripts/build.sh demo, build-demo/): what `bash scripts/demo.sh`
# compiles on a fresh machine before the console answers, made to compile in as little CPU time as
# it can (docs/benchmarks.md, "Fresh machine to console"). The release and ASan builds are not
# touched by any of this. Warnings stay errors.
#
# - No debug information: -O2 like the release build (so the same optimizer-driven warnings), no -g.
# - Unity build: each library's sources compiled a few at a time in one translation unit, so the
#   standard library and the heavy third-party headers (nlohmann/json, yaml-cpp, CLI11) are parsed
#   and their inline functions compiled once per batch instead of once per file.
# - Precompiled headers (GW_DEMO_PCH): the standard library and those third-party headers parsed
#   once per group of targets whose compile flags agree, not once per batch (gw_demo_pch below).
# scripts/build.sh demo configures CMAKE_BUILD_TYPE=Release; CMake's own Release flags are -O3.
set(CMAKE_C_FLAGS_RELEASE "-O2 -DNDEBUG")
set(CMAKE_CXX_FLAGS_RELEASE "-O2 -DNDEBUG")
set(GW_DEMO_UNITY_BATCH 8 CACHE STRING "Sources per unity batch in the demo build; 0: none")
if(GW_DEMO_UNITY_BATCH GREATER 0)
  set(CMAKE_UNITY_BUILD ON)
  set(CMAKE_UNITY_BUILD_BATCH_SIZE ${GW_DEMO_UNITY_BATCH})
endif()
option(GW_DEMO_PCH "Precompiled headers in the demo build (gw_demo_pch)" ON)
if(GW_DEMO_PCH AND CCACHE_PROGRAM)
  # ccache caches a compilation that uses a precompiled header only with these sloppiness
  # settings (its manual, "Precompiled headers"); CMake passes the header with -include, which is
  # what ccache needs besides. Set here, not in scripts/build.sh, so that `ninja -C build-demo`
  # gets them too. The release, ASan and package builds keep the launcher the top level sets.
  set(CMAKE_C_COMPILER_LAUNCHER ${CMAKE_COMMAND} -E env
                                CCACHE_SLOPPINESS=pch_defines,time_macros ${CCACHE_PROGRAM})
  set(CMAKE_CXX_COMPILER_LAUNCHER ${CMAKE_C_COMPILER_LAUNCHER})
endif()

# Files that cannot share a translation unit with the ones batched before them: each defines, in
# an anonymous namespace, a name that another file of its library defines too (kMiB, kGiB, Fmt,
# Percent, WallNowS, a Clock alias, config's At...). They are compiled on their own. Called at
# the end of the top-level CMakeLists.txt, once every directory exists. A file added later that collides fails
# the unity build; scripts/build.sh demo then builds file by file (GW_DEMO_UNITY_BATCH=0).
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

# Precompiled headers. GCC uses a precompiled header only in a compilation whose flags match the
# ones it was made with (-fPIC or -fPIE, -D and -pthread from the libraries' pkg-config flags), so
# the demo's targets go in groups of like flags: the first of each group makes the header, the
# others reuse it (REUSE_FROM). Only system headers go in: the standard library and the
# third-party ones the group's sources include (a project header in it would recompile the whole
# group whenever it changed). scripts/check-demo-build.py (ctest demo_build_check) configures
# this and checks that every compilation that reuses a header has its maker's flags. Should a
# group's flags drift apart anyway, GCC ignores the header with a warning (not an error:
# -Wno-error=invalid-pch) and parses the headers as usual, so the build only gets slower.
set(GW_DEMO_PCH_STD
    <algorithm> <array> <atomic> <cctype> <cerrno> <charconv> <chrono> <cmath> <condition_variable>
    <cstddef> <cstdint> <cstdio> <cstdlib> <cstring> <ctime> <deque> <filesystem> <fstream>
    <functional> <limits> <map> <memory> <mutex> <optional> <set> <span> <sstream> <string>
    <string_view> <thread> <unordered_map> <utility> <vector>)
function(gw_demo_pch)
  if(NOT GW_DEMO_PCH)
    return()
  endif()
  # Per group: its targets (the first makes the header, the others reuse it) and the third-party
  # headers on top of GW_DEMO_PCH_STD.
  set(plain_targets
      gw_base gw_build_info gw_expo gw_nvml gw_collect gw_config gw_diagnose gw_governance gw_hub
      gw_k8s gw_report gw_remote gw_serve gw_top gw_web gw_cli gw_inference_sim gw_training_sim)
  set(plain_headers <nlohmann/json.hpp> <yaml-cpp/yaml.h> <CLI/CLI.hpp>)
  set(re2_targets gw_tsdb gw_promql gw_rules gw_jobs)  # -pthread from re2's pkg-config flags
  set(re2_headers <nlohmann/json.hpp> <yaml-cpp/yaml.h> <re2/re2.h>)
  set(http_targets gw_http gw_notify gw_scrape)  # -DCPPHTTPLIB_* from cpp-httplib's
  set(http_headers <nlohmann/json.hpp> <yaml-cpp/yaml.h> <httplib.h>)
  set(exe_targets gpuwarden gw-inference-sim gw-training-sim gw-default-config)  # -fPIE
  set(exe_headers <nlohmann/json.hpp> <CLI/CLI.hpp>)
  foreach(group plain re2 http exe)
    set(maker "")
    foreach(target IN LISTS ${group}_targets)
      if(NOT TARGET ${target})
        continue()
      endif()
      if(NOT maker)
        set(maker ${target})
        target_precompile_headers(${target} PRIVATE ${GW_DEMO_PCH_STD} ${${group}_headers})
      else()
        target_precompile_headers(${target} REUSE_FROM ${maker})
      endif()
      target_compile_options(${target} PRIVATE -Wno-error=invalid-pch)
    endforeach()
  endforeach()
endfunction()
