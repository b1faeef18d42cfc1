#!/usr/bin/env bash
# Data-parallel on one machine's CPU: N ranks x T threads against 1 rank x N*T threads, the same
# global batch, alternated (A B A B ...) so a change in the machine's load hits both alike.
# Prints each run's median img/s (steps 4.. of metrics.csv; the global batch's images) with the
# load average before and after.
#
#   bench/dist_ranks.sh [AMPGAN] [ROUNDS] [extra train options...]
#   e.g. bench/dist_ranks.sh build/cli/ampgan 2 --width 32 --batch 64 --steps 20
set -euo pipefail
A=${1:-build/cli/ampgan}
ROUNDS=${2:-2}
shift $(( $# > 2 ? 2 : $# )) || true
OPTS=("$@")
[ ${#OPTS[@]} -gt 0 ] || OPTS=(--width 32 --batch 64 --steps 20)
RANKS=${RANKS:-2}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
common=(--backend cpu --synthetic-count 1000 --sample-every 0 --checkpoint-every 0 --quiet "${OPTS[@]}")

median_ips() {  # column images_per_s of rows with step >= 4
  awk -F, 'NR==1 { for (i = 1; i <= NF; i++) if ($i == "images_per_s") c = i; next }
           $1 >= 4 { print $c }' "$1/metrics.csv" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'
}

echo "options: ${common[*]}"
echo "load before: $(uptime | sed 's/.*load average: //')"
printf '%-6s %-28s %10s\n' round layout "img/s"
for r in $(seq "$ROUNDS"); do
  AMPGAN_THREADS=$RANKS "$A" train "${common[@]}" --out "$T/one-$r" > /dev/null
  printf '%-6s %-28s %10.1f\n' "$r" "1 rank x $RANKS threads" "$(median_ips "$T/one-$r")"
  mpirun --oversubscribe -np "$RANKS" -x AMPGAN_THREADS=1 "$A" train "${common[@]}" --out "$T/many-$r" > /dev/null
  printf '%-6s %-28s %10.1f\n' "$r" "$RANKS ranks x 1 thread" "$(median_ips "$T/many-$r")"
done
echo "load after:  $(uptime | sed 's/.*load average: //')"
