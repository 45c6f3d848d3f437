#!/usr/bin/env bash
# Installs the Debian packages gpuwarden needs. Idempotent: when everything is present it
# returns without touching apt.
#   bash scripts/setup.sh         everything: building, the whole test suite, the demo
#   bash scripts/setup.sh demo    only what building and running the demo needs (scripts/demo.sh)
set -euo pipefail
mode="${1:-all}"

# Building gpuwarden and running it (the demo): the toolchain and the libraries.
# No git (whoever cloned the repository has it; without it the version says "unknown") and no
# python3 (only the tests and the package build use it): 30 MB less on a fresh machine.
DEMO_PACKAGES=(
  g++ cmake ninja-build ccache pkg-config
  libcpp-httplib-dev nlohmann-json3-dev libyaml-cpp-dev libcli11-dev
  libsqlite3-dev libzstd-dev libssl-dev libcrypt-dev libre2-dev zlib1g-dev
  # remote write's compression (src/remote/)
  libsnappy-dev
)

PACKAGES=(
  "${DEMO_PACKAGES[@]}" git python3
  # gRPC and protobuf with their code generators for the kubelet's pod-resources API (src/k8s/,
  # libgpuwarden-k8s.so); the demo build leaves that module out (GW_BUILD_K8S_MODULE=OFF)
  libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc
  # toolchain
  clang-format
  # libFuzzer targets (scripts/fuzz.sh): clang 14 and its sanitizer/fuzzer runtimes
  clang libclang-rt-14-dev
  # tests and benchmarks
  libgtest-dev libgmock-dev googletest libbenchmark-dev openssl procps curl python3 python3-yaml
  # strict HTML5 parsing of `gpuwarden report` output (tests/report)
  python3-html5lib
  # real peers the tests meet: Prometheus 2.42 and promtool, Alertmanager 0.25, VictoriaMetrics
  # 1.79 (a remote-write receiver, tests/remote)
  prometheus prometheus-alertmanager victoria-metrics
  # Slurm 22.05 with munge (the task-layer tests start their own on loopback)
  slurmctld slurmd slurm-client munge
  # a terminal for the interactive `gpuwarden top` test (tests/top/)
  tmux
  # the web console's browser tests (tests/web) drive Debian's chromium, never a downloaded one
  chromium
  # the Debian packages (scripts/package.sh, tests/dist): dpkg-buildpackage with debhelper,
  # lintian, and man to check the generated man page
  dpkg-dev debhelper fakeroot lintian man-db
)
if [ "$mode" = demo ]; then
  PACKAGES=("${DEMO_PACKAGES[@]}")
elif [ "$mode" != all ]; then
  echo "usage: $0 [demo]" >&2
  exit 2
fi

# The browser tests' npm packages (tests/web/package-lock.json: playwright-core), from the npm
# registry with `npm ci`, when what is installed differs from the lock file. No browser download.
install_web_test_packages() {
  local lock=tests/web/package-lock.json
  [ -f "$lock" ] || return 0
  if ! node -e 'const l=require("./tests/web/package-lock.json").packages["node_modules/playwright-core"];
      const i=require("./tests/web/node_modules/playwright-core/package.json");
      process.exit(l.version===i.version?0:1)' 2>/dev/null; then
    echo "setup: npm ci in tests/web"
    (cd tests/web && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund >/dev/null)
  fi
}
cd "$(dirname "$0")/.."

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "$mode" = all ]; then
  command -v npm >/dev/null || missing+=(nodejs npm)
  # kubectl for the deploy kit's manifest check (tests/deploy): Debian's kubernetes-client, unless
  # a kubectl from another package is already there (the two conflict on /usr/bin/kubectl).
  command -v kubectl >/dev/null || missing+=(kubernetes-client)
fi
if [ ${#missing[@]} -eq 0 ]; then
  [ "$mode" = all ] && install_web_test_packages
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# Packages must not start their own services (prometheus would grab :9090).
if [ ! -e /usr/sbin/policy-rc.d ]; then
  printf '#!/bin/sh\nexit 101\n' | $SUDO tee /usr/sbin/policy-rc.d >/dev/null
  $SUDO chmod +x /usr/sbin/policy-rc.d
  trap '$SUDO rm -f /usr/sbin/policy-rc.d' EXIT
fi
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
if [ "$mode" = all ]; then install_web_test_packages; fi
