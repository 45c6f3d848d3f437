# The files that read gpuwarden's configuration file (defaults, YAML, FILE:LINE errors), named
# once for both builds that compile them: gw_config (src/config/CMakeLists.txt, with the YAML
# writer) and the fuzz build's gw_fuzz_config (tests/fuzz/fuzz.cmake), which compiles just these
# so the config fuzz target links no module beyond promql, tsdb and base. A new parsing file
# added here reaches both.
set(GW_CONFIG_PARSE_SOURCES
    ${CMAKE_CURRENT_LIST_DIR}/config.cpp
    ${CMAKE_CURRENT_LIST_DIR}/messages.cpp
    ${CMAKE_CURRENT_LIST_DIR}/governance_config.cpp
    ${CMAKE_CURRENT_LIST_DIR}/diagnose_config.cpp
    ${CMAKE_CURRENT_LIST_DIR}/scrape_config.cpp
    ${CMAKE_CURRENT_LIST_DIR}/remote_config.cpp)
