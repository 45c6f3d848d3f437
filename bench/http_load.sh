#!/usr/bin/env bash
# The HTTP load of issue 16 (docs/benchmarks.md) against `gpuwarden serve --simulate demo` in real
# time: RSS before and after, then bench/http_load.cpp's numbers.
#   bench/http_load.sh [seconds] [clients] [slow_sockets] [costly_queries]   (default 30 50 8 8)
#   GPUWARDEN=/path/to/gpuwarden bench/http_load.sh ...   (another binary; its libnvml-sim.so beside it)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-30}"
clients="${2:-50}"
slow="${3:-8}"
costly="${4:-8}"
port=19978
bin="${GPUWARDEN:-build/bin/gpuwarden}"  # another build's binary, to compare
data=$(mktemp -d)
"$bin" serve --simulate demo --listen "127.0.0.1:$port" --data-dir "$data" \
  --log-level warn &
pid=$!
trap 'kill $pid 2>/dev/null || true; wait $pid 2>/dev/null || true; rm -rf "$data"' EXIT
for _ in $(seq 100); do curl -sf "localhost:$port/readyz" >/dev/null && break; sleep 0.2; done
sleep 5  # some history for query_range
rss() { awk '/VmRSS/ {printf "%.1f", $2 / 1024}' /proc/$pid/status; }
hwm() { awk '/VmHWM/ {printf "%.1f", $2 / 1024}' /proc/$pid/status; }
echo "rss_before_mib=$(rss)"
status=0
build/bin/http_load_bench "$port" "$seconds" "$clients" "$slow" "$costly" || status=$?
echo "rss_after_mib=$(rss) peak_rss_mib=$(hwm)"
exit "$status"
