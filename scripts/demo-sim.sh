#!/usr/bin/env bash
# The simulated demo with work on it: `gpuwarden serve` on the demo fleet (scenarios/demo.yaml),
# plus real processes on this machine that the simulator runs as jobs on its GPUs, so that every
# layer has something to show — device faults, jobs and teams, idle-but-allocated GPUs and a
# dry-run reclaim, quotas and cost, and an inference service's cost per request:
#
#   GPU 0-3  job llm-pretrain (team research): gw-training-sim, its tokens counter scraped as
#            target `pretrain` bound to the job (throughput; it slows while GPU 3 overheats at
#            20-32 min) — research's quota is 3 GPUs: over quota
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
job idle_allocated 7 notebook-alice analytics

wait_port() {  # log sed-expression name: the port the program's log names
  local p=""
  for _ in $(seq 100); do
    p="$(sed -n "$2" "$1" | head -n 1)"
    [ -n "$p" ] && break
    sleep 0.1
  done
  if [ -z "$p" ]; then
    echo "demo: $3 did not start:" >&2
    cat "$1" >&2
    exit 1
  fi
  echo "$p"
}

env CUDA_VISIBLE_DEVICES=5 GPUWARDEN_JOB=llm-serving GPUWARDEN_TEAM=product \
  "$bin/gw-inference-sim" --listen 127.0.0.1:0 >"$work/inference.log" 2>&1 &
pids+=($!)
port="$(wait_port "$work/inference.log" 's/.*(port \([0-9]*\)).*/\1/p' gw-inference-sim)"

# The training job: 4 GPUs, counting tokens; 4 GiB per GPU beside the scenario's own processes.
env CUDA_VISIBLE_DEVICES=0,1,2,3 GPUWARDEN_JOB=llm-pretrain GPUWARDEN_TEAM=research \
  "$bin/gw-training-sim" --unit tokens --rate 16 --batch 8 --tokens-per-sample 4096 \
  --memory-mib 4096 >"$work/training.log" 2>&1 &
pids+=($!)
train_port="$(wait_port "$work/training.log" 's/.*metrics on 127\.0\.0\.1:\([0-9]*\).*/\1/p' \
  gw-training-sim)"

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
    - name: pretrain
      url: http://127.0.0.1:$train_port/metrics
      interval: 5s
      outputs: training_tokens_total
      output_unit: tokens
      job_id: llm-pretrain
YAML

echo "demo: jobs llm-pretrain (GPU 0-3, a training run on port $train_port), llm-serving (GPU 5, an"
echo "demo: inference service on port $port),"
echo "demo: notebook-alice (GPU 7, idle); prices, quotas and a dry-run reclaim policy: $work/gpuwarden.yaml"
"$bin/gpuwarden" serve --simulate "$work/demo.yaml" --config "$work/gpuwarden.yaml" "$@" &
serve=$!
pids+=("$serve")
status=0
wait "$serve" || status=$?
exit "$status"
