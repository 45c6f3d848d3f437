#!/usr/bin/env bash
# Builds the Debian packages (gpuwarden, gpuwarden-k8s, gpuwarden-sim and their -dbgsym) from
# this working tree with dpkg-buildpackage, and checks them with lintian (docs/packaging.md).
#
#   bash scripts/package.sh [OUTDIR]      (default: dist/)
#
# The tree is exported (tracked and not-ignored files, plus .build-info naming the commit) into
# OUTDIR/src/gpuwarden-VERSION and built there, so nothing is written into the checkout but OUTDIR.
# The build shares ccache with scripts/build.sh: the same compilations, answered from the cache.
set -euo pipefail
cd "$(dirname "$0")/.."
out="$(mkdir -p "${1:-dist}" && cd "${1:-dist}" && pwd)"
version="$(dpkg-parsechangelog -S Version)"
src="$out/src/gpuwarden-$version"
rm -rf "$out/src" "$out"/*.deb "$out"/*.changes "$out"/*.buildinfo
mkdir -p "$src"

# Tracked files and new ones not ignored, as they are in the working tree (deleted ones skipped).
git ls-files -z --cached --others --exclude-standard |
  while IFS= read -r -d '' f; do [ -e "$f" ] || [ -L "$f" ] && printf '%s\0' "$f"; done |
  tar --null -T - -cf - | tar -xf - -C "$src"
{
  echo "revision=$(git rev-parse HEAD 2>/dev/null || echo unknown)"
  echo "branch=$(git rev-parse --abbrev-ref HEAD 2>/dev/null || echo unknown)"
  echo "date=$(TZ=UTC git log -1 --format=%cd --date=format-local:%Y%m%d-%H:%M:%S 2>/dev/null || echo unknown)"
} >"$src/.build-info"

export CCACHE_DIR="${CCACHE_DIR:-$HOME/.cache/ccache}"
export CCACHE_BASEDIR="$src"
export CCACHE_NOHASHDIR=true
start=$(date +%s)
(cd "$src" && dpkg-buildpackage -b -us -uc -d -j"$(nproc)" >"$out/build.log" 2>&1) || {
  tail -n 60 "$out/build.log" >&2
  echo "package: dpkg-buildpackage failed; the whole log is $out/build.log" >&2
  exit 1
}
mv "$out"/src/*.deb "$out"/src/*.changes "$out"/src/*.buildinfo "$out"/
echo "package: built in $(( $(date +%s) - start )) s:"
ls -l "$out"/*.deb | awk '{print "  " $5 "\t" $NF}'

# lintian: errors fail the build; warnings are printed.
lintian --fail-on error --no-tag-display-limit "$out"/*.changes | tee "$out/lintian.txt"
