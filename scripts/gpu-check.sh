#!/usr/bin/env bash
# On a machine with a real NVIDIA GPU: build gpuwarden, run it against the real driver, compare
# with nvidia-smi and print short tables: the basics (memory, temperature, power, clocks,
# utilization), utilization over a window (`nvidia-smi dmon -s u`), the profiling counters (GPM;
# `nvidia-smi dmon --gpm-metrics` where the driver has it), MIG mode and instances (`nvidia-smi
# mig -lgi`), NVLink state and errors (`nvidia-smi nvlink -s`, `-e`) and the T.Limit margins
# (`nvidia-smi -q -d TEMPERATURE`). A piece the machine lacks (no MIG, no NVLink, no GPM, an
# nvidia-smi without some option) prints "-" and the rest carries on. One run takes about a
# minute after the build (5 minutes at most: every nvidia-smi call has a timeout).
#
# Usage: scripts/gpu-check.sh [--skip-build] [--simulate SCENARIO]
#   --skip-build         use build/bin/gpuwarden as it is
#   --simulate SCENARIO  dry run without a GPU: gpuwarden on the simulator (nvidia-smi columns
#                        stay "-" unless $NVIDIA_SMI names a stand-in)
# Raw outputs go to ${OUT:-/tmp/gpu-check}. $NVIDIA_SMI overrides the nvidia-smi command.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
out="${OUT:-/tmp/gpu-check}"
smi="${NVIDIA_SMI:-nvidia-smi}"
build=1
simulate=""
while [ $# -gt 0 ]; do
  case "$1" in
    --skip-build) build=0 ;;
    --simulate)
      simulate="${2:?--simulate needs a scenario}"
      shift
      ;;
    *)
      echo "usage: $0 [--skip-build] [--simulate SCENARIO]" >&2
      exit 2
      ;;
  esac
  shift
done
mkdir -p "$out"
if [ "$build" = 1 ]; then
  bash scripts/setup.sh >/dev/null 2>&1 || true
  export CCACHE_DIR="${CCACHE_DIR:-$HOME/.cache/ccache}" CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=true
  { cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null &&
    cmake --build build -j "$(nproc)" --target gpuwarden nvml-sim; } >"$out/build.log" 2>&1 ||
    {
      tail -30 "$out/build.log"
      exit 1
    }
fi
gw=build/bin/gpuwarden
[ -x "$gw" ] || {
  echo "no $gw: build first (drop --skip-build)" >&2
  exit 1
}
sim_args=()
[ -n "$simulate" ] && sim_args=(--simulate "$simulate")

have_smi=0
command -v "$smi" >/dev/null 2>&1 && have_smi=1
# nvidia-smi with a timeout; its output in $out/NAME, "" when it is missing or fails.
smi_to() {
  local name="$1"
  shift
  if [ "$have_smi" = 1 ]; then
    timeout 40 "$smi" "$@" >"$out/$name" 2>&1 || echo "# failed: $smi $*" >>"$out/$name"
  else
    : >"$out/$name"
  fi
}

smi_to nvidia-smi-L.txt -L
cat "$out/nvidia-smi-L.txt"
smi_to nvidia-smi.csv --query-gpu=index,uuid,name,memory.total,memory.used,temperature.gpu,power.draw,power.limit,clocks.sm,clocks.max.sm,pstate,utilization.gpu,ecc.mode.current,clocks_event_reasons.active \
  --format=csv,noheader,nounits
smi_to mig-mode.csv --query-gpu=index,mig.mode.current,mig.mode.pending --format=csv,noheader
"$gw" snapshot --json --log-level info "${sim_args[@]}" >"$out/snapshot.json" 2>"$out/snapshot.log"
"$gw" snapshot "${sim_args[@]}" >"$out/snapshot.txt" 2>&1
cat "$out/snapshot.txt"

# Serve (both sets of names: gpuwarden's and dcgm-exporter's), let GPM get two samples and the
# slow cycle run, then scrape while nvidia-smi samples utilization over the same window.
printf 'exposition:\n  names: both\n' >"$out/gpuwarden.yaml"
"$gw" serve --listen 127.0.0.1:19966 --config "$out/gpuwarden.yaml" --data-dir "$out/data" \
  "${sim_args[@]}" >"$out/serve.log" 2>&1 &
pid=$!
sleep 12
rm -f "$out"/metrics-*.txt
(for i in $(seq 1 10); do
  curl -s localhost:19966/metrics >"$out/metrics-$i.txt"
  sleep 2
done) &
scraper=$!
smi_to dmon-u.txt dmon -s u -c 10
smi_to dmon-gpm.txt dmon -s u --gpm-metrics 2,3,5,10 -c 5
wait "$scraper"
smi_to nvlink-s.txt nvlink -s
smi_to nvlink-e.txt nvlink -e
smi_to mig-lgi.txt mig -lgi
smi_to temperature.txt -q -d TEMPERATURE
curl -s localhost:19966/metrics >"$out/metrics.txt"
promtool check metrics <"$out/metrics.txt" >"$out/promtool.txt" 2>&1
echo "promtool rc=$?" >>"$out/promtool.txt"
ps -o rss=,time= -p "$pid" >"$out/serve-ps.txt"
kill "$pid"
wait "$pid" 2>/dev/null

python3 scripts/gpu-check-report.py "$out"
grep -v "DCGM_FI_" "$out/promtool.txt" | grep -v "^$" | head -20
echo "serve RSS KiB / CPU time: $(cat "$out/serve-ps.txt")"
