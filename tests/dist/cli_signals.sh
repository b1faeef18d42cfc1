#!/bin/bash
# Signals under mpirun (ctest dist.signals.*): usage cli_signals.sh AMPGAN MPIRUN SCENARIO.
#   term_rank1   SIGTERM to rank 1 stops every rank at the next step, rank 0 writes its
#                checkpoint and stop event, and the run ends with rank 0's status 130
#   stop_rank1   a stopped rank is not waited for in silence: rank 0 says so, and once rank 1
#                goes on, a signal to it ends the run cleanly
#   int_mpirun   Ctrl-C to mpirun (which sends SIGTERM to every rank) loses no step: the
#                checkpoint is the last step's
#   kill_rank1   kill -9 of rank 1: rank 0 records the end (a stop event naming the newest
#                checkpoint, and a line) before mpirun ends it
set -u
A=$1
MPI=$2
T=$(mktemp -d)
rank0="" rank1=""
# A failed check leaves nothing running: mpirun killed with -9 would leave its ranks behind.
trap 'kill -9 $(jobs -p) $rank0 $rank1 2>/dev/null; rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; [ -f "$T/run.log" ] && tail -20 "$T/run.log"; exit 1; }
common="--backend cpu --width 8 --synthetic-count 64 --batch 8 --sample-every 0 --checkpoint-every 100000 --quiet"

# Starts a long 2-rank run in $T/run, waits until it trains; sets mpi, rank0, rank1.
start() {
  $MPI -np 2 "$A" train $common --steps 1000000 "$@" --out "$T/run" > "$T/run.log" 2>&1 &
  mpi=$!
  local i p
  for i in $(seq 300); do
    [ -f "$T/run/metrics.csv" ] && [ "$(wc -l < "$T/run/metrics.csv")" -gt 5 ] && break
    sleep 0.1
  done
  rank0="" rank1=""
  for p in $(pgrep -P "$mpi"); do
    tr '\0' '\n' < "/proc/$p/environ" 2>/dev/null | grep -qx 'OMPI_COMM_WORLD_RANK=0' && rank0=$p
    tr '\0' '\n' < "/proc/$p/environ" 2>/dev/null | grep -qx 'OMPI_COMM_WORLD_RANK=1' && rank1=$p
  done
  [ -n "$rank0" ] && [ -n "$rank1" ] || fail "the ranks were not found"
}

# Waits up to $1 s for mpirun to end; sets rc.
wait_end() {
  local i
  for i in $(seq $(($1 * 10))); do kill -0 "$mpi" 2>/dev/null || break; sleep 0.1; done
  kill -0 "$mpi" 2>/dev/null && fail "the run still ran $1 s later"
  wait "$mpi"
  rc=$?
}

last_step() { tail -n 1 "$T/run/metrics.csv" | cut -d, -f1; }
last_event() { tail -n 1 "$T/run/events.jsonl"; }

case $3 in
  term_rank1)
    start
    kill -TERM "$rank1"
    wait_end 20
    [ "$rc" = 130 ] || fail "status $rc, not rank 0's 130"
    step=$(last_step)
    [ -f "$T/run/checkpoints/$(printf 'step_%06d' "$step").safetensors" ] || fail "no checkpoint at the last step $step"
    last_event | grep -q '"type":"stop"' || fail "the last event is not a stop: $(last_event)"
    last_event | grep -q 'another rank was signalled' || fail "the stop does not say why: $(last_event)"
    ;;
  stop_rank1)
    start --collective-timeout 20
    kill -STOP "$rank1"
    for i in $(seq 100); do grep -q 'has waited 5 s for the other ranks' "$T/run.log" && break; sleep 0.1; done
    grep -q 'rank 0 of 2: a collective (.*) has waited 5 s for the other ranks' "$T/run.log" || fail "rank 0 waits in silence"
    kill -CONT "$rank1"
    kill -TERM "$rank1"
    wait_end 20
    [ "$rc" = 130 ] || fail "status $rc after the stopped rank went on and was signalled"
    last_event | grep -q '"type":"stop"' || fail "no stop event: $(last_event)"
    ;;
  int_mpirun)
    # mpirun sends its ranks SIGTERM odls_base_sigkill_timeout (1 s) after Ctrl-C, and SIGKILL
    # as long again after that: 4 s leave a loaded machine time to write the checkpoint.
    export OMPI_MCA_odls_base_sigkill_timeout=4
    start
    kill -INT "$mpi"
    wait_end 20
    step=$(last_step)
    [ -f "$T/run/checkpoints/$(printf 'step_%06d' "$step").safetensors" ] || fail "no checkpoint at the last step $step"
    last_event | grep -q '"type":"stop"' || fail "the last event is not a stop: $(last_event)"
    last_event | grep -q 'interrupted' || fail "the stop does not say why: $(last_event)"
    ;;
  kill_rank1)
    start --checkpoint-every 20
    kill -KILL "$rank1"
    wait_end 20
    [ "$rc" = 0 ] && fail "status 0 after rank 1 was killed"
    last_event | grep -q '"type":"stop"' || fail "the last event is not a stop: $(last_event)"
    last_event | grep -q 'the newest checkpoint is' || fail "the stop does not name the newest checkpoint: $(last_event)"
    grep -q 'ampgan: rank 0 of 2: stopped at step' "$T/run.log" || fail "no ampgan line about the end"
    ;;
  *) fail "unknown scenario $3" ;;
esac
echo "passed: $3"
