#!/usr/bin/env bash
# Sets everything up and runs the whole test suite:
#   1. release build, every test (unit + integration against real Prometheus and promtool);
#   2. ASan+UBSan build, the unit tests under the sanitizers;
#   3. every libFuzzer target for FUZZ_SECONDS (default 15) seconds (scripts/fuzz.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
jobs="$(nproc)"

echo "== release build"
bash scripts/build.sh release
echo "== tests (release)"
(cd build && ctest --output-on-failure -j "$jobs" --timeout 300)

echo "== ASan+UBSan build"
bash scripts/build.sh asan
echo "== unit tests under ASan+UBSan"
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
(cd build-asan && ctest --output-on-failure -j "$jobs" -L unit --timeout 300)

echo "== fuzzing (scripts/fuzz.sh, ${FUZZ_SECONDS:-15} s per target)"
bash scripts/fuzz.sh "${FUZZ_SECONDS:-15}"
