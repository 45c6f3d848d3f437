#!/usr/bin/env bash
# Sets everything up and runs gpuwarden serve: on the real GPUs when an NVIDIA driver is
# present, otherwise on the simulated demo fleet. Extra arguments go to `gpuwarden serve`.
set -euo pipefail
cd "$(dirname "$0")/.."
# Only what the demo needs: its packages (no test peers) and its binaries (no tests).
bash scripts/setup.sh demo
echo "demo: building the agent, the simulated driver and the demo's workloads in build-demo/"
bash scripts/build.sh demo
if ldconfig -p 2>/dev/null | grep -q 'libnvidia-ml.so.1'; then
  echo "demo: NVIDIA driver found: watching the real GPUs"
  exec build-demo/bin/gpuwarden serve "$@"
fi
echo "demo: no NVIDIA driver here: running the simulated demo fleet, with jobs, teams and a service"
echo "demo: open http://localhost:9966/  (the console; /metrics for Prometheus)"
exec bash scripts/demo-sim.sh build-demo "$@"
