#!/usr/bin/env bash
# Whole-process cost of `gpuwarden serve` on a simulated fleet in real time, scraped every second
# like Prometheus would: CPU % of one core and RSS after a warm-up.
#   bench/agent_cost.sh [scenario] [seconds]      (default fleet-8, 60)
#   GW_BIN=/other/build/bin bench/agent_cost.sh   (another build: before/after pairs)
# The simulator runs inside the agent's process (dlopen), so CPU includes its physics; the share
# spent inside NVML functions is printed from the agent's own self-metrics.
set -euo pipefail
cd "$(dirname "$0")/.."
scenario="${1:-fleet-8}"
seconds="${2:-60}"
port=${PORT:-19977}
bin="${GW_BIN:-build/bin}"
data=$(mktemp -d)  # a fresh data directory per run: RSS and CPU do not depend on earlier runs
"$bin/gpuwarden" serve --simulate "$scenario" --listen "127.0.0.1:$port" --log-level warn \
    --data-dir "$data" &
pid=$!
trap 'kill $pid 2>/dev/null || true; wait $pid 2>/dev/null || true; rm -rf "$data"' EXIT
# Context switches of every thread (voluntary + involuntary): each one is a thread waking up.
switches() { cat /proc/$pid/task/*/status 2>/dev/null | awk '/ctxt_switches/ {s += $2} END {print s}'; }
for _ in $(seq 50); do curl -sf "localhost:$port/readyz" >/dev/null && break; sleep 0.2; done
sleep 5  # warm-up
ticks=$(getconf CLK_TCK)
read -r u0 s0 < <(awk '{print $14, $15}' /proc/$pid/stat)
t0=$(date +%s.%N)
w0=$(switches)
for _ in $(seq "$seconds"); do curl -s -o /dev/null "localhost:$port/metrics"; sleep 1; done
read -r u1 s1 < <(awk '{print $14, $15}' /proc/$pid/stat)
t1=$(date +%s.%N)
w1=$(switches)
rss_kb=$(awk '/VmRSS/ {print $2}' /proc/$pid/status)
nvml=$(curl -s "localhost:$port/metrics" | awk '/^gpuwarden_nvml_call_duration_seconds_total/ {s+=$2} END {printf "%.3f", s}')
awk -v u0="$u0" -v s0="$s0" -v u1="$u1" -v s1="$s1" -v t0="$t0" -v t1="$t1" -v hz="$ticks" \
    -v rss="$rss_kb" -v nvml="$nvml" -v sc="$scenario" -v n="$seconds" -v w0="$w0" -v w1="$w1" 'BEGIN {
  printf "scenario=%s seconds=%s cpu_percent_of_one_core=%.3f rss_mib=%.1f wakeups_per_s=%.1f nvml_seconds_total_since_start=%s\n",
    sc, n, (u1 + s1 - u0 - s0) / hz / (t1 - t0) * 100, rss / 1024, (w1 - w0) / (t1 - t0), nvml }'
