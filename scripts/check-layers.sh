#!/usr/bin/env bash
# Checks that includes point down the layers of docs/ARCHITECTURE.md, as a CTest (layers.includes).
# Each folder of core/ has a rank; a file may include its own folder and folders of lower rank
# only. core/ includes no Qt, cli/, ui/ or gpu/; gpu/ (the CUDA plugin, linked against the compute
# layer) includes compute folders and the Communicator interface it implements for NCCL.
# ui/ is in rooms ranked the same way (widgets lowest, window highest); widgets/ are plain Qt
# widgets with no core/ include, and ui/main.cpp, the program, may include any room.
#   scripts/check-layers.sh [SOURCE_DIR]
set -euo pipefail
cd "${1:-$(dirname "$0")/..}"
declare -A rank=(
  [common]=0 [tensor]=1 [backend]=2 [nn]=3 [amp]=3 [models]=4 [optim]=4 [train]=5 [settings]=6  # ampgan_compute
  [io]=1 [data]=2 [metrics]=6 [dist]=6 [run]=7                                    # ampgan_engine
)
compute=" common tensor backend nn amp models optim train settings "
bad=0
report() { echo "check-layers: $1" >&2; bad=1; }

for dir in core/*/; do
  d=$(basename "$dir")
  [[ -n ${rank[$d]+x} ]] || { report "core/$d has no rank: add it to scripts/check-layers.sh and docs/ARCHITECTURE.md"; continue; }
  while IFS=: read -r file line text; do
    if [[ $text =~ \#include\ \"core/([a-z_]+)/ ]]; then
      to=${BASH_REMATCH[1]}
      [[ $to == "$d" ]] && continue
      if [[ -z ${rank[$to]+x} ]]; then report "$file:$line includes an unknown folder core/$to"; continue; fi
      if [[ $compute == *" $d "* && $compute != *" $to "* ]]; then
        report "$file:$line: the compute layer (core/$d) includes the engine's core/$to"
      elif ((rank[$to] >= rank[$d])); then
        report "$file:$line: core/$d (rank ${rank[$d]}) includes core/$to (rank ${rank[$to]}): includes point down only"
      fi
    elif [[ $text =~ \#include\ [\<\"](Q[A-Za-z]+|Qt[A-Za-z]+/|cli/|ui/|gpu/) ]]; then
      report "$file:$line: core/ includes ${BASH_REMATCH[1]} (core stays free of Qt and of the programs)"
    fi
  done < <(grep -rnE '^[[:space:]]*#[[:space:]]*include' "$dir" || true)
done

while IFS=: read -r file line text; do
  [[ $text =~ \#include\ \"core/([a-z_]+)/([a-z_]+\.h) ]] || continue
  to=${BASH_REMATCH[1]}
  [[ $compute == *" $to "* || "$to/${BASH_REMATCH[2]}" == dist/communicator.h ]] ||
    report "$file:$line: gpu/ (linked against the compute layer) includes core/$to"
done < <(grep -rnE '^[[:space:]]*#[[:space:]]*include "core/' gpu || true)

# ui/'s rooms: a file includes its own room and lower ranks only (docs/ARCHITECTURE.md's map).
declare -A ui_rank=(
  [widgets]=0 [common]=1                                # plain widgets; the values every room shares
  [worker]=2 [plots]=2 [settings]=2 [views]=2 [runs]=3  # the worker thread, the panels and views
  [window]=4                                            # the main window puts them together
)
for dir in ui/*/; do
  d=$(basename "$dir")
  [[ -n ${ui_rank[$d]+x} ]] || { report "ui/$d has no rank: add it to scripts/check-layers.sh and docs/ARCHITECTURE.md"; continue; }
  while IFS=: read -r file line text; do
    if [[ $text =~ \#include\ \"ui/([a-z_]+)/ ]]; then
      to=${BASH_REMATCH[1]}
      [[ $to == "$d" ]] && continue
      if [[ -z ${ui_rank[$to]+x} ]]; then report "$file:$line includes an unknown room ui/$to"; continue; fi
      if ((ui_rank[$to] == ui_rank[$d])); then
        report "$file:$line: ui/$d includes ui/$to, a room of the same rank: what both need goes a room lower"
      elif ((ui_rank[$to] > ui_rank[$d])); then
        report "$file:$line: ui/$d (rank ${ui_rank[$d]}) includes ui/$to (rank ${ui_rank[$to]}): includes point down only"
      fi
    elif [[ $text =~ \#include\ \"ui/[a-z_]+\.h ]]; then
      report "$file:$line includes a header outside the rooms (ui/<room>/<file>.h)"
    elif [[ $d == widgets && $text =~ \#include\ \"core/ ]]; then
      report "$file:$line: ui/widgets/ includes core/ (widgets are plain Qt; an engine type goes through a higher room)"
    elif [[ $text =~ \#include\ \"(cli|gpu)/ ]]; then
      report "$file:$line: ui/ includes ${BASH_REMATCH[1]}/ (the studio reaches the engine through core/ only)"
    fi
  done < <(grep -rnE '^[[:space:]]*#[[:space:]]*include' "$dir" || true)
done
for file in ui/*; do
  [[ -d $file || $file == ui/main.cpp || $file == ui/CMakeLists.txt ]] ||
    report "$file is outside the rooms: put it in the room of its rank (ui/<room>/)"
done

((bad == 0)) && echo "check-layers: every include in core/, gpu/ and ui/ points down"
exit $bad
