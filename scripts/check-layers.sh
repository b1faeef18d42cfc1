#!/usr/bin/env bash
# Checks that includes point down the layers of docs/ARCHITECTURE.md, as a CTest (layers.includes).
# Each folder of core/ has a rank; a file may include its own folder and folders of lower rank
# only. core/ includes no Qt, cli/, ui/ or gpu/; gpu/ (the CUDA plugin, linked against the compute
# layer) includes compute folders and the Communicator interface it implements for NCCL.
#   scripts/check-layers.sh [SOURCE_DIR]
set -euo pipefail
cd "${1:-$(dirname "$0")/..}"
declare -A rank=(
  [common]=0 [tensor]=1 [backend]=2 [nn]=3 [amp]=3 [models]=4 [optim]=4 [train]=5  # ampgan_compute
  [io]=1 [data]=2 [metrics]=6 [dist]=6 [run]=7                                    # ampgan_engine
)
compute=" common tensor backend nn amp models optim train "
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

((bad == 0)) && echo "check-layers: every include in core/ and gpu/ points down"
exit $bad
