#!/usr/bin/env bash
# Builds gpuwarden. Usage: scripts/build.sh [release|asan|demo]   (default release)
#   release -> build/      RelWithDebInfo, with tests and benchmarks
#   asan    -> build-asan/ Debug with AddressSanitizer + UndefinedBehaviorSanitizer
#   demo    -> build-demo/ RelWithDebInfo, only what scripts/demo.sh runs: the agent, the simulated
#              driver and the demo's workloads (no tests, no benchmarks, no Kubernetes module, so
#              no gRPC)
set -euo pipefail
cd "$(dirname "$0")/.."
kind="${1:-release}"
jobs="$(nproc)"
export CCACHE_DIR="${CCACHE_DIR:-$HOME/.cache/ccache}"
# Share cache entries between checkouts in different folders (CI builds a fresh clone): paths
# under the repository are hashed relative to it, and -g does not make the folder part of the key.
export CCACHE_BASEDIR="$PWD"
export CCACHE_NOHASHDIR=true
case "$kind" in
  release)
    cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
    cmake --build build -j "$jobs"
    ;;
  demo)
    cmake -S . -B build-demo -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGW_BUILD_TESTS=OFF \
      -DGW_BUILD_BENCH=OFF -DGW_BUILD_INTEGRATION=OFF -DGW_K8S_MODULE=OFF >/dev/null
    targets=(gpuwarden nvml-sim gw-inference-sim)
    if [ -f src/sim/training/CMakeLists.txt ]; then
      targets+=(gw-training-sim)
    fi
    cmake --build build-demo -j "$jobs" --target "${targets[@]}"
    ;;
  asan)
    cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DGW_SANITIZE=ON \
      -DGW_BUILD_BENCH=OFF -DGW_BUILD_INTEGRATION=OFF >/dev/null
    cmake --build build-asan -j "$jobs"
    ;;
  *)
    echo "usage: $0 [release|asan|demo]" >&2
    exit 2
    ;;
esac
