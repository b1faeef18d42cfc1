#!/bin/bash
# `ampgan train/resume` under mpirun, one scenario per call (ctest dist.cli.SCENARIO):
#   cli_ranks.sh AMPGAN MPIRUN SCENARIO
# SCENARIO: no_mpi ranks_and_resume mismatch too_many_ranks killed_rank hung_rank
set -u
A=$1
MPI=$2
SCENARIO=$3
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
common="--backend cpu --width 8 --synthetic-count 64 --batch 8 --sample-every 0 --checkpoint-every 0 --quiet"

no_mpi() {
  echo "== [${SECONDS}s] without mpirun no MPI library is linked or loaded"
  ldd "$A" | grep -q libmpi && fail "ampgan links libmpi"
  LD_DEBUG=files "$A" train $common --steps 2 --out "$T/single" > "$T/single.log" 2>&1 || fail "a plain run failed: $(tail -3 "$T/single.log")"
  grep -q "libmpi" "$T/single.log" && fail "a run without mpirun loaded libmpi"
  grep -q '"world_size": 1' "$T/single/config.json" || fail "config.json lacks world_size 1"
}

ranks_and_resume() {
  echo "== [${SECONDS}s] two ranks, then resume on one, then on two again"
  $MPI -np 2 "$A" train $common --steps 4 --out "$T/r2" > "$T/r2.log" 2>&1 || fail "2 ranks: $(cat "$T/r2.log")"
  grep -q '"world_size": 2' "$T/r2/config.json" || fail "config.json does not record world_size 2"
  grep -q 'global batch 8 = 2 x 4 per rank' "$T/r2/events.jsonl" || fail "the global batch is not reported"
  [ -f "$T/r2/checkpoints/step_000004.safetensors" ] || fail "no checkpoint from rank 0"
  "$A" resume "$T/r2" --steps 6 --quiet > "$T/r1.log" 2>&1 || fail "resume on one device: $(cat "$T/r1.log")"
  grep -q 'resumed with 1 rank (the run was trained with 2 until step 4)' "$T/r2/events.jsonl" || fail "resume with 1 rank does not say so"
  $MPI -np 2 "$A" resume "$T/r2" --steps 8 --quiet > "$T/r3.log" 2>&1 || fail "resume on two ranks: $(cat "$T/r3.log")"
  grep -q 'resumed with 2 ranks (the run was trained with 1 until step 6)' "$T/r2/events.jsonl" || fail "resume with 2 ranks does not say so"
  [ -f "$T/r2/checkpoints/step_000008.safetensors" ] || fail "no checkpoint at step 8"
}

mismatch() {
  echo "== [${SECONDS}s] mismatched settings stop every rank with the reason"
  $MPI -np 1 "$A" train $common --steps 2 --out "$T/mm" : -np 1 "$A" train $common --batch 16 --steps 2 --out "$T/mm" > "$T/mm.log" 2>&1 && fail "mismatched ranks trained"
  [ "$(grep -c 'rank 0 and rank 1 differ in batch' "$T/mm.log")" = 2 ] || fail "not both ranks report the mismatch: $(cat "$T/mm.log")"
  grep -q 'on rank 1: batch 16 (rank 0: 8)' "$T/mm.log" || fail "rank 1 does not name its value"
  [ -e "$T/mm" ] && fail "a refused start left a run folder"
}

too_many_ranks() {
  echo "== [${SECONDS}s] more ranks than the global batch"
  $MPI -np 3 "$A" train $common --batch 2 --steps 2 --out "$T/many" > "$T/many.log" 2>&1 && fail "3 ranks trained a batch of 2"
  grep -q '3 ranks for a global batch of 2' "$T/many.log" || fail "no clear error for too many ranks: $(cat "$T/many.log")"
}

# Starts a long 2-rank run, waits until it trains, does $1 to rank 1, and checks that the run
# ends within the collective timeout (5 s) plus 15 s of slack.
stop_rank1() {
  local sig=$1 out=$T/$2
  $MPI -np 2 "$A" train $common --steps 1000000 --collective-timeout 5 --out "$out" > "$out.log" 2>&1 &
  local mpi=$! rank1="" i
  for i in $(seq 300); do
    [ -f "$out/metrics.csv" ] && [ "$(wc -l < "$out/metrics.csv")" -gt 3 ] && break
    sleep 0.1
  done
  for p in $(pgrep -P "$mpi"); do
    tr '\0' '\n' < "/proc/$p/environ" 2>/dev/null | grep -qx 'OMPI_COMM_WORLD_RANK=1' && rank1=$p
  done
  [ -n "$rank1" ] || { kill "$mpi"; fail "rank 1 not found"; }
  local t0=$SECONDS
  kill -"$sig" "$rank1"
  for i in $(seq 200); do kill -0 "$mpi" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$mpi" 2>/dev/null; then kill -9 "$mpi"; fail "the run still ran 20 s after rank 1 got SIG$sig"; fi
  wait "$mpi" && fail "the run ended with status 0 after rank 1 got SIG$sig"
  echo "   ended $((SECONDS - t0)) s after SIG$sig to rank 1"
}
killed_rank() {
  echo "== [${SECONDS}s] a killed rank ends the run"
  stop_rank1 KILL killed
}

hung_rank() {
  echo "== [${SECONDS}s] a hung rank ends the run after the collective timeout, saying why"
  stop_rank1 STOP hung
  grep -q 'rank 0 of 2: a collective (.*) waited 5 s for the other ranks' "$T/hung.log" || fail "no timeout message: $(cat "$T/hung.log")"
}

case $SCENARIO in
  no_mpi | ranks_and_resume | mismatch | too_many_ranks | killed_rank | hung_rank) "$SCENARIO" ;;
  *) fail "unknown scenario '$SCENARIO'" ;;
esac
echo "passed: $SCENARIO"
