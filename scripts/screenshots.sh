#!/usr/bin/env bash
# Regenerates the console's screenshots in docs/screenshots/ (docs/console.md shows them): every
# page at 1600x1000 (desktop) and 420x900 (phone), on the simulated demo fleet (stepped clock,
# 40 simulated minutes in, jobs and an inference service as in scripts/demo-sim.sh).
#
#   bash scripts/screenshots.sh [BUILD_DIR]      (default: build; needs gpuwarden and
#                                                 gw-inference-sim built, and scripts/setup.sh run)
#
# Everything it starts (the agent, the stand-in jobs, the inference service) is stopped when it ends.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
build="$(cd "${1:-$here/build}" && pwd)"
for tool in gpuwarden gw-inference-sim; do
  if [ ! -x "$build/bin/$tool" ]; then
    echo "screenshots: $build/bin/$tool not found: build it first (ninja -C $build gpuwarden gw-inference-sim)" >&2
    exit 1
  fi
done
exec node "$here/scripts/screenshots.mjs" "$build/bin/gpuwarden" "$here/docs/screenshots"
