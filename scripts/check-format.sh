#!/usr/bin/env bash
# Checks that every C++ and CUDA file follows .clang-format (clang-format 14, as Debian 12 has):
#   scripts/check-format.sh          every tracked file
#   scripts/check-format.sh BASE     only the files changed since the commit BASE
#   scripts/check-format.sh --fix    reformats instead of checking
set -euo pipefail
cd "$(dirname "$0")/.."
fmt=$(command -v clang-format-14 || command -v clang-format || true)
[[ -n $fmt ]] || { echo "check-format: clang-format not found (scripts/setup.sh --dev installs it)" >&2; exit 1; }
fix=0
if [[ ${1:-} == --fix ]]; then fix=1; shift; fi
pattern='\.(cpp|h|cu|cuh)$'
if [[ -n ${1:-} ]]; then
  mapfile -t files < <(git diff --name-only --diff-filter=ACMR "$1" -- | grep -E "$pattern" || true)
else
  mapfile -t files < <(git ls-files | grep -E "$pattern")
fi
((${#files[@]})) || { echo "check-format: no C++ files to check"; exit 0; }
if ((fix)); then
  "$fmt" -i --style=file "${files[@]}"
  echo "check-format: reformatted ${#files[@]} files"
  exit 0
fi
if ! "$fmt" --dry-run -Werror --style=file "${files[@]}" 2>/tmp/check-format.$$; then
  grep -E "^[^ ].*error:" /tmp/check-format.$$ | cut -d: -f1 | sort -u | sed 's/^/  /' >&2
  rm -f /tmp/check-format.$$
  echo "check-format: the files above are not formatted; run scripts/check-format.sh --fix" >&2
  exit 1
fi
rm -f /tmp/check-format.$$
echo "check-format: ${#files[@]} files follow .clang-format"
