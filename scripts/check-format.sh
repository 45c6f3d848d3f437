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
bad=()
for f in "${files[@]}"; do
  [ -f "$f" ] || continue
  if ! clang-format --dry-run -Werror "$f" >/dev/null 2>&1; then bad+=("$f"); fi
done
if [ ${#bad[@]} -gt 0 ]; then
  echo "check-format: ${#bad[@]} of ${#files[@]} files are not clang-formatted:" >&2
  printf '  %s\n' "${bad[@]}" >&2
  exit 1
fi
echo "check-format: ${#files[@]} files clang-formatted"
