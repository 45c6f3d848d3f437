#!/usr/bin/env bash
# The simulated demo with work on it: `gpuwarden serve` on the demo fleet (scenarios/demo.yaml),
# plus real processes on this machine that the simulator runs as jobs on its GPUs, so that every
# layer has something to show — device faults, jobs and teams, idle-but-allocated GPUs and a
# dry-run reclaim, quotas and cost, and an inference service's cost per request:
#
#   GPU 0-3  job llm-pretrain (team research, training) — research's quota is 3 GPUs: over quota
#   GPU 5    job llm-serving (team product): gw-inference-sim, scraped as target `llm`
#   GPU 7    job notebook-alice (team analytics), holding the GPU and computing nothing: noticed
#            after 10 minutes idle, a dry-run reclaim decision 5 minutes later
#   GPU 4, 6 the scenario's own work, no job
#
#   bash scripts/demo-sim.sh BUILD_DIR [gpuwarden serve arguments...]
#
# scripts/demo.sh runs it when there is no NVIDIA driver. Everything it starts is stopped (by PID)
# when serve exits or the script is interrupted; its scratch files live in a temporary folder.
set -euo pipefail
bin="$(cd "$1" && pwd)/bin"
shift
here="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d "${TMPDIR:-/tmp}/gpuwarden-demo.XXXXXX")"
pids=()
stop_all() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap stop_all EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# The simulator writes each GPU's state here and gw-inference-sim follows it (docs/scenarios.md).
export GPUWARDEN_SIM_STATE_DIR="$work/state"

job() {  # workload gpus job team
  env GPUWARDEN_SIM_WORKLOAD="$1" CUDA_VISIBLE_DEVICES="$2" GPUWARDEN_JOB="$3" \
    GPUWARDEN_TEAM="$4" sleep infinity &
  pids+=($!)
}
job training 0,1,2,3 llm-pretrain research
job idle_allocated 7 notebook-alice analytics

env CUDA_VISIBLE_DEVICES=5 GPUWARDEN_JOB=llm-serving GPUWARDEN_TEAM=product \
  "$bin/gw-inference-sim" --listen 127.0.0.1:0 >"$work/inference.log" 2>&1 &
pids+=($!)
port=""
for _ in $(seq 100); do
  port="$(sed -n 's/.*(port \([0-9]*\)).*/\1/p' "$work/inference.log" | head -n 1)"
  [ -n "$port" ] && break
  sleep 0.1
done
if [ -z "$port" ]; then
  echo "demo: gw-inference-sim did not start:" >&2
  cat "$work/inference.log" >&2
  exit 1
fi

# The demo fleet with host processes on (the scenario file itself is left as it is).
{ cat "$here/scenarios/demo.yaml"; printf '\nhost_processes: true\n'; } >"$work/demo.yaml"
cat >"$work/gpuwarden.yaml" <<YAML
jobs:
  idle_window: 10m
governance:
  reclaim:
    - {idle_for: 10m, grace: 5m, action: dry-run}
  quotas:
    research: {gpus: 3}
    product: {gpus: 2}
    analytics: {gpu_hours: 4, period: 1d}
  prices:
    gpu_hour: {H100: 2.99, A100: 1.79, H200: 3.59, L40S: 0.99, default: 1.50}
    energy_kwh: 0.15
    currency: USD
scrape:
  targets:
    - name: llm
      url: http://127.0.0.1:$port/metrics
      interval: 5s
      gpus: [5]
      outputs: 'inference_requests_total{code=~"2.."}'
      output_unit: request
YAML

echo "demo: jobs llm-pretrain (GPU 0-3), llm-serving (GPU 5, an inference service on port $port),"
echo "demo: notebook-alice (GPU 7, idle); prices, quotas and a dry-run reclaim policy: $work/gpuwarden.yaml"
"$bin/gpuwarden" serve --simulate "$work/demo.yaml" --config "$work/gpuwarden.yaml" "$@" &
serve=$!
pids+=("$serve")
status=0
wait "$serve" || status=$?
exit "$status"
