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
#   GPU 4, 6 the scenario's own work, and three short training jobs of team vision that end in the
#            first minutes, so that the job and team pages show outcomes and throughput at once:
#            vision-sweep-1 (GPU 6) completes after 90 s, vision-sweep-2 (GPU 6) after 4 min, and
#            vision-finetune (GPU 4) dies at 2.5 min on an uncorrectable ECC error (XID 48) that
#            this demo adds to GPU 4 — outcome failed, cause gpu_fault, and GpuJobKilledByGpuFault.
#            Their counters are found two ways (docs/jobs.md, "Training throughput"): sweep-1's
#            is a target bound to its job in the configuration (scrape.targets[].job_id), the
#            others' are found through the port each run declares (GPUWARDEN_METRICS_PORT); either
#            way scraped while the job runs, neither scraped nor "down" once it ended.
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

training() {  # gpus job team log gw-training-sim-arguments...: a training run as a job
  local gpus="$1" name="$2" team="$3" log="$4"
  shift 4
  env CUDA_VISIBLE_DEVICES="$gpus" GPUWARDEN_JOB="$name" GPUWARDEN_TEAM="$team" \
    "$bin/gw-training-sim" "$@" >"$work/$log" 2>&1 &
  pids+=($!)
}
training_port() {  # log: the port of its /metrics
  wait_port "$work/$1" 's/.*metrics on 127\.0\.0\.1:\([0-9]*\).*/\1/p' gw-training-sim
}
# The training job: 4 GPUs, counting tokens; 4 GiB per GPU beside the scenario's own processes.
training 0,1,2,3 llm-pretrain research training.log --unit tokens --rate 16 --batch 8 \
  --tokens-per-sample 4096 --memory-mib 4096
# Team vision's short runs (started together with the others: no start-up time added).
training 6 vision-sweep-1 vision sweep-1.log --duration 90 --rate 120 --memory-mib 8192
training 6 vision-sweep-2 vision sweep-2.log --duration 240 --rate 120 --memory-mib 8192
training 4 vision-finetune vision finetune.log --rate 90 --memory-mib 20480
# Every program is started; now the ports they picked.
port="$(wait_port "$work/inference.log" 's/.*(port \([0-9]*\)).*/\1/p' gw-inference-sim)"
train_port="$(training_port training.log)"
sweep1_port="$(training_port sweep-1.log)"

# The demo fleet with host processes on, and an uncorrectable ECC error on GPU 4 at 2.5 min that
# ends vision-finetune (the scenario file itself is left as it is).
{
  sed '/{pid: 41000, name: "tritonserver"/a\    faults:\n      - {type: ecc_uncorrectable, at: 150s}' \
    "$here/scenarios/demo.yaml"
  printf '\nhost_processes: true\n'
} >"$work/demo.yaml"
if ! grep -q 'ecc_uncorrectable, at: 150s' "$work/demo.yaml"; then
  echo "demo: scenarios/demo.yaml has no tritonserver process 41000 on GPU 4 to add the fault to" >&2
  exit 1
fi
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
    - name: vision-sweep-1
      url: http://127.0.0.1:$sweep1_port/metrics
      interval: 5s
      outputs: training_samples_total
      output_unit: samples
      job_id: vision-sweep-1
YAML

echo "demo: jobs llm-pretrain (GPU 0-3, a training run on port $train_port), llm-serving (GPU 5, an"
echo "demo: inference service on port $port), vision-sweep-1 and -2 (GPU 6, done after 90 s and"
echo "demo: 4 min), vision-finetune (GPU 4: an ECC error ends it at 2.5 min),"
echo "demo: notebook-alice (GPU 7, idle); prices, quotas and a dry-run reclaim policy: $work/gpuwarden.yaml"
"$bin/gpuwarden" serve --simulate "$work/demo.yaml" --config "$work/gpuwarden.yaml" "$@" &
serve=$!
pids+=("$serve")
status=0
wait "$serve" || status=$?
exit "$status"
