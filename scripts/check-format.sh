#!/usr/bin/env bash
# Fails, naming the files, when a C++ source of the project differs from what clang-format makes of
# it with the repository's .clang-format. Run by ctest (format_check); fix with
# `git ls-files '*.cpp' '*.h' | xargs clang-format -i`.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v clang-format >/dev/null; then
  echo "check-format: clang-format is not installed (scripts/setup.sh installs it)" >&2
  exit 1
fi
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files -- '*.cpp' '*.h')
else
  mapfile -t files < <(find src tests bench tools -name '*.cpp' -o -name '*.h' 2>/dev/null)
fi
# Third-party or generated sources are not ours to format (none today; list them here).
existing=()
for f in "${files[@]}"; do [ -f "$f" ] && existing+=("$f"); done
# One clang-format process per 64 files, two at a time (process start-up dominates); only when a
# batch fails are its files checked one by one, to name them.
bad=()
if ! printf '%s\0' "${existing[@]}" |
  xargs -0 -n 64 -P 2 clang-format --dry-run -Werror >/dev/null 2>&1; then
  for f in "${existing[@]}"; do
    if ! clang-format --dry-run -Werror "$f" >/dev/null 2>&1; then bad+=("$f"); fi
  done
fi
if [ ${#bad[@]} -gt 0 ]; then
  echo "check-format: ${#bad[@]} of ${#files[@]} files are not clang-formatted:" >&2
  printf '  %s\n' "${bad[@]}" >&2
  exit 1
fi
echo "check-format: ${#files[@]} files clang-formatted"
