#!/usr/bin/env bash
# Runs clang-tidy (.clang-tidy's checks) over the engine, the CLI, the studio and the CUDA
# plugin's C++ files, from the build's compile_commands.json (scripts/build.sh writes it):
#   scripts/tidy.sh              every file (minutes: one clang run per file, in parallel)
#   scripts/tidy.sh FILE...      only these
set -euo pipefail
cd "$(dirname "$0")/.."
tidy=$(command -v clang-tidy-14 || command -v clang-tidy || true)
[[ -n $tidy ]] || { echo "tidy: clang-tidy not found (scripts/setup.sh --dev installs it)" >&2; exit 1; }
[[ -f build/compile_commands.json ]] || { echo "tidy: build/compile_commands.json missing; run scripts/build.sh" >&2; exit 1; }
if (($#)); then
  files=("$@")
else
  mapfile -t files < <(git ls-files 'core/*.cpp' 'cli/*.cpp' 'ui/*.cpp' 'gpu/*.cpp')
fi
# The build's precompiled headers are GCC's (.gch), which clang cannot read: a copy of the
# compile commands without them, so each file is checked with the includes it names itself.
mkdir -p build/tidy
python3 - build/compile_commands.json build/tidy/compile_commands.json <<'PY'
import json, sys
entries = json.load(open(sys.argv[1]))
for e in entries:
    words, out = e["command"].split(" "), []
    for i, w in enumerate(words):
        pch = w == "-include" and i + 1 < len(words) and words[i + 1].endswith("cmake_pch.hxx")
        if pch or w == "-Winvalid-pch" or (i > 0 and words[i - 1] == "-include" and w.endswith("cmake_pch.hxx")):
            continue
        out.append(w)
    e["command"] = " ".join(out)
json.dump(entries, open(sys.argv[2], "w"))
PY
printf '%s\n' "${files[@]}" | xargs -P "$(nproc)" -n 4 "$tidy" -p build/tidy --quiet 2>/dev/null | tee build/tidy.log |
  grep -E "(warning|error):" || true
if grep -qE "(warning|error):" build/tidy.log; then
  echo "tidy: findings above (build/tidy.log)" >&2
  exit 1
fi
echo "tidy: ${#files[@]} files clean"
