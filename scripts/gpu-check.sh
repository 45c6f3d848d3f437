#!/usr/bin/env bash
# On a machine with a real NVIDIA GPU: build, run gpuwarden's collector against the real driver,
# compare with nvidia-smi, and print a short table. Writes its raw outputs to ${OUT:-/tmp/gpu-check}.
set -uo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-/tmp/gpu-check}"
mkdir -p "$out"
bash scripts/setup.sh >/dev/null 2>&1 || true
bash scripts/build.sh release >"$out/build.log" 2>&1 || { tail -30 "$out/build.log"; exit 1; }

nvidia-smi -L | tee "$out/nvidia-smi-L.txt"
nvidia-smi --query-gpu=index,uuid,name,memory.total,memory.used,temperature.gpu,power.draw,power.limit,clocks.sm,clocks.max.sm,pstate,utilization.gpu,ecc.mode.current,clocks_event_reasons.active \
  --format=csv,noheader,nounits >"$out/nvidia-smi.csv" 2>&1
build/bin/gpuwarden snapshot --json --log-level info >"$out/snapshot.json" 2>"$out/snapshot.log"
build/bin/gpuwarden snapshot >"$out/snapshot.txt" 2>&1
cat "$out/snapshot.txt"

# Serve for 20 s, scrape, measure the agent's own cost.
build/bin/gpuwarden serve --listen 127.0.0.1:19966 >"$out/serve.log" 2>&1 &
pid=$!
sleep 20
curl -s localhost:19966/metrics >"$out/metrics.txt"
promtool check metrics <"$out/metrics.txt" >"$out/promtool.txt" 2>&1; echo "promtool rc=$?" >>"$out/promtool.txt"
ps -o rss=,time= -p "$pid" >"$out/serve-ps.txt"
kill "$pid"; wait "$pid" 2>/dev/null

python3 - "$out" <<'PY'
import csv, json, sys
out = sys.argv[1]
snap = json.load(open(f"{out}/snapshot.json"))
rows = list(csv.reader(open(f"{out}/nvidia-smi.csv")))
print(f"{'gpu':>3} {'field':<22} {'nvidia-smi':>14} {'gpuwarden':>14}")
for r, g in zip(rows, snap["gpus"]):
    r = [x.strip() for x in r]
    m = g["metrics"]
    pairs = [
        ("memory.total MiB", r[3], m.get("gpu_memory_total_bytes", 0) / 2**20),
        ("memory.used MiB", r[4], m.get("gpu_memory_used_bytes", 0) / 2**20),
        ("temperature C", r[5], m.get("gpu_temperature_celsius")),
        ("power.draw W", r[6], m.get("gpu_power_watts")),
        ("power.limit W", r[7], m.get("gpu_power_limit_watts")),
        ("clocks.sm MHz", r[8], (m.get("gpu_sm_clock_hertz") or 0) / 1e6),
        ("clocks.max.sm MHz", r[9], (m.get("gpu_sm_clock_max_hertz") or 0) / 1e6),
        ("pstate", r[10], m.get("gpu_performance_state")),
        ("utilization %", r[11], (m.get("gpu_utilization_ratio") or 0) * 100),
    ]
    for name, a, b in pairs:
        print(f"{g['index']:>3} {name:<22} {a:>14} {b if b is not None else '-':>14}")
print("uuid match:", all(r[1].strip() == g["uuid"] for r, g in zip(rows, snap["gpus"])))
PY
cat "$out/promtool.txt"
echo "serve RSS KiB / CPU time: $(cat "$out/serve-ps.txt")"
