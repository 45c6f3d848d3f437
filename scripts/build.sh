#!/usr/bin/env bash
# Builds gpuwarden. Usage: scripts/build.sh [release|asan|demo]   (default release)
#   release -> build/      RelWithDebInfo, with tests and benchmarks
#   asan    -> build-asan/ Debug with AddressSanitizer + UndefinedBehaviorSanitizer
#   demo    -> build-demo/ -O1 without debug information, a unity build (cmake/demo.cmake), only
#              what scripts/demo.sh runs: the agent, the simulated driver and the demo's workloads
#              (no tests, no benchmarks, no Kubernetes module, so no gRPC)
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
    # cmake/demo.cmake: -O1 without debug information, a unity build, no Kubernetes module (so no
    # gRPC). A cold ccache (a fresh machine) costs less in depend mode: no second preprocessor run.
    export CCACHE_DEPEND=true
    configure_demo() {
      cmake -S . -B build-demo -G Ninja -DCMAKE_BUILD_TYPE=Release -DGW_DEMO=ON \
        -DGW_BUILD_TESTS=OFF -DGW_BUILD_BENCH=OFF -DGW_BUILD_INTEGRATION=OFF \
        -DGW_BUILD_K8S_MODULE=OFF -DGW_DEMO_UNITY_BATCH="$1" >/dev/null
    }
    targets=(gpuwarden nvml-sim gw-inference-sim)
    if [ -f src/sim/training/CMakeLists.txt ]; then
      targets+=(gw-training-sim)
    fi
    configure_demo 8
    if ! cmake --build build-demo -j "$jobs" --target "${targets[@]}"; then
      # A file that cannot share a translation unit with its neighbours (cmake/demo.cmake).
      echo "build: the demo's unity build failed (above); building it file by file" >&2
      configure_demo 0
      cmake --build build-demo -j "$jobs" --target "${targets[@]}"
    fi
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
