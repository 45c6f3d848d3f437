#!/usr/bin/env bash
# What remote write adds to `gpuwarden serve` (docs/benchmarks.md, "Remote write"):
#   1. CPU % of one core and RSS of the agent on a simulated 8-GPU node in real time, without and
#      with `remote_write:` to a real VictoriaMetrics on loopback (fresh data directories, /metrics
#      scraped every second as in bench/agent_cost.sh), and the bytes on the wire per sample
#      (prometheus_remote_storage_bytes_total / _samples_total);
#   2. catch-up: a stepped agent records an hour while the store is down (connection refused),
#      then the store starts; samples per second until the queue has sent the whole hour.
#   bench/remote_write_cost.sh [scenario] [seconds]      (default fleet-8, 60)
set -euo pipefail
cd "$(dirname "$0")/.."
scenario="${1:-fleet-8}"
seconds="${2:-60}"
bin="${GW_BIN:-build/bin}"
work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_http() { for _ in $(seq 150); do curl -sf "$1" >/dev/null && return 0; sleep 0.2; done; return 1; }
metric() {  # metric PORT FAMILY REMOTE -> value
  curl -s "localhost:$1/metrics" | awk -v f="$2" -v r="remote_name=\"$3\"" \
    'index($0, f "{") == 1 && index($0, r) {print $NF}'
}
vm_port=$(free_port)
start_vm() {
  victoria-metrics -httpListenAddr=127.0.0.1:$vm_port -storageDataPath="$work/vm" \
    -retentionPeriod=100y >"$work/vm.log" 2>&1 &
  vm_pid=$!
  pids+=("$vm_pid")
  wait_http "localhost:$vm_port/health"
}
start_vm

# ---- 1. Cost in real time ----
cost() {  # cost LABEL CONFIG_FILE
  local port data pid
  port=$(free_port)
  data=$(mktemp -d -p "$work")
  "$bin/gpuwarden" serve --simulate "$scenario" --listen "127.0.0.1:$port" --log-level warn \
    --data-dir "$data" --config "$2" &
  pid=$!
  pids+=("$pid")
  wait_http "localhost:$port/readyz"
  sleep 5  # warm-up
  local ticks u0 s0 u1 s1 t0 t1 rss
  ticks=$(getconf CLK_TCK)
  read -r u0 s0 < <(awk '{print $14, $15}' /proc/$pid/stat)
  t0=$(date +%s.%N)
  for _ in $(seq "$seconds"); do curl -s -o /dev/null "localhost:$port/metrics"; sleep 1; done
  read -r u1 s1 < <(awk '{print $14, $15}' /proc/$pid/stat)
  t1=$(date +%s.%N)
  rss=$(awk '/VmRSS/ {print $2}' /proc/$pid/status)
  local bytes samples
  bytes=$(metric "$port" prometheus_remote_storage_bytes_total vm)
  samples=$(metric "$port" prometheus_remote_storage_samples_total vm)
  awk -v l="$1" -v u0="$u0" -v s0="$s0" -v u1="$u1" -v s1="$s1" -v t0="$t0" -v t1="$t1" \
      -v hz="$ticks" -v rss="$rss" -v b="${bytes:-0}" -v s="${samples:-0}" 'BEGIN {
    printf "%s: cpu_percent_of_one_core=%.3f rss_mib=%.1f", l, (u1 + s1 - u0 - s0) / hz / (t1 - t0) * 100, rss / 1024
    if (s > 0) printf " samples_sent=%d bytes_sent=%d bytes_per_sample=%.3f", s, b, b / s
    printf "\n" }'
  kill "$pid"; wait "$pid" 2>/dev/null || true
}
echo "collect: {interval: 1s}" >"$work/plain.yaml"
cat >"$work/rw.yaml" <<YAML
collect: {interval: 1s}
remote_write:
  - {name: vm, url: "http://127.0.0.1:$vm_port/api/v1/write"}
YAML
cost "without remote_write" "$work/plain.yaml"
cost "with remote_write   " "$work/rw.yaml"

# ---- 2. Catch-up after an hour's outage ----
kill "$vm_pid"; wait "$vm_pid" 2>/dev/null || true
port=$(free_port)
cat >"$work/rw-stepped.yaml" <<YAML
collect: {interval: 1s}
storage: {flush_interval: 10m}
remote_write:
  - name: vm
    url: "http://127.0.0.1:$vm_port/api/v1/write"
    queue_config: {max_backoff: 1s}
YAML
"$bin/gpuwarden" serve --simulate "$scenario" --sim-clock stepped --sim-start $(( $(date +%s) - 7200 )) \
  --listen "127.0.0.1:$port" --log-level error --data-dir "$work/stepped" --config "$work/rw-stepped.yaml" &
pid=$!
pids+=("$pid")
wait_http "localhost:$port/readyz"
a0=$(date +%s.%N)
for _ in $(seq 60); do curl -sf -X POST "localhost:$port/-/sim/advance?seconds=60" >/dev/null; done
a1=$(date +%s.%N)
before=$(metric "$port" prometheus_remote_storage_samples_total vm)
start_vm
c0=$(date +%s.%N)
while [ "$(metric "$port" gpuwarden_remote_write_caught_up vm)" != "1" ]; do sleep 0.2; done
c1=$(date +%s.%N)
after=$(metric "$port" prometheus_remote_storage_samples_total vm)
bytes=$(metric "$port" prometheus_remote_storage_bytes_total vm)
awk -v a0="$a0" -v a1="$a1" -v c0="$c0" -v c1="$c1" -v b="${before:-0}" -v a="$after" -v by="$bytes" 'BEGIN {
  printf "catch-up: recorded 1 h in %.1f s with the store down; sent %d samples (%.3f bytes/sample) in %.1f s after it came back = %.0f samples/s\n",
    a1 - a0, a - b, by / a, c1 - c0, (a - b) / (c1 - c0) }'
