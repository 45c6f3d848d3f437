#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz, clang, ASan + UBSan, into build-fuzz/) and runs each
# for a bounded time. Exits non-zero when any target crashed, leaked, hit UB, ran out of memory or
# took too long on one input; the input that did it is kept (path printed). docs/fuzzing.md.
#
#   scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]    default: 60 s, every target
#   scripts/fuzz.sh 3600 promql_parse                    one target for an hour
#
# Environment: FUZZ_JOBS  targets run at once (default: the number of cores)
#              FUZZ_RSS_MB memory limit per fuzzing process (default 2048)
# Corpus: seeds in tests/fuzz/corpus/TARGET (read only); what a run finds goes to
# build-fuzz/corpus/TARGET and is reused by later runs. Crashes: build-fuzz/crashes/TARGET/.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
[ $# -gt 0 ] && shift
case "$seconds" in '' | *[!0-9]*)
  echo "usage: $0 [SECONDS_PER_TARGET] [TARGET...]" >&2
  exit 2
  ;;
esac
jobs="${FUZZ_JOBS:-$(nproc)}"
rss_mb="${FUZZ_RSS_MB:-2048}"

export CCACHE_DIR="${CCACHE_DIR:-$HOME/.cache/ccache}"
export CCACHE_BASEDIR="$PWD"
export CCACHE_NOHASHDIR=true
cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGW_FUZZ=ON \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ >/dev/null
cmake --build build-fuzz -j "$(nproc)" --target fuzz

if [ $# -gt 0 ]; then
  targets=("$@")
else
  targets=()
  for f in tests/fuzz/corpus/*/; do targets+=("$(basename "$f")"); done
fi

# Longest input per target: enough for any nesting the depth limits allow (docs/limits.md:
# 512 PromQL levels, 100 template levels) and for past them; binary formats get more room.
max_len() {
  case "$1" in
    wal | chunks) echo 65536 ;;
    *) echo 16384 ;;
  esac
}

export ASAN_OPTIONS="${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
logs=build-fuzz/logs
mkdir -p "$logs"

run_one() {
  local t="$1" bin="build-fuzz/bin/fuzz_$1"
  local work="build-fuzz/corpus/$t" crashes="build-fuzz/crashes/$t"
  [ -x "$bin" ] || { echo "fuzz: no target $t" >&2; return 2; }
  mkdir -p "$work" "$crashes"
  "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb="$rss_mb" \
    -malloc_limit_mb="$rss_mb" -max_len="$(max_len "$t")" -artifact_prefix="$crashes/" \
    -print_final_stats=1 "$work" "tests/fuzz/corpus/$t" >"$logs/$t.log" 2>&1
}

failed=()
report() {
  local t="$1" rc="$2" stats
  stats="$(grep -E '^stat::number_of_executed_units' "$logs/$t.log" | awk '{print $2}')"
  if [ "$rc" -eq 0 ]; then
    printf 'fuzz: %-14s ok   %8s runs in %ss, corpus %s\n' "$t" "${stats:-?}" "$seconds" \
      "$(find "build-fuzz/corpus/$t" -type f | wc -l)"
  else
    failed+=("$t")
    echo "fuzz: $t FAILED (exit $rc); log $logs/$t.log" >&2
    grep -E 'ERROR|SUMMARY|fuzz property|runtime error|Test unit written' "$logs/$t.log" |
      head -20 >&2 || true
  fi
}

# Up to $jobs targets at once; each reports as it ends.
declare -A target_of=()
reap_one() {
  local pid="" rc=0
  wait -n -p pid || rc=$?
  report "${target_of[$pid]}" "$rc"
  unset "target_of[$pid]"
}
for t in "${targets[@]}"; do
  while [ "${#target_of[@]}" -ge "$jobs" ]; do reap_one; done
  run_one "$t" &
  target_of[$!]="$t"
done
while [ "${#target_of[@]}" -gt 0 ]; do reap_one; done

if [ "${#failed[@]}" -gt 0 ]; then
  echo "fuzz: ${#failed[@]} target(s) failed: ${failed[*]}; reproducers in build-fuzz/crashes/" >&2
  echo "fuzz: replay one with build-fuzz/bin/fuzz_TARGET FILE" >&2
  exit 1
fi
echo "fuzz: ${#targets[@]} targets, ${seconds}s each, no failure"
