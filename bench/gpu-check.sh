#!/usr/bin/env bash
# One pass over a lent GPU machine (an H200): pre-flight, GPU parity verdicts, `ampgan bench` at
# batch 256 in each precision, and the PyTorch peer, in at most 8 minutes, from binaries built
# beforehand. Nothing is configured, compiled or downloaded on the GPU machine.
#
# Before the GPU session, on the development machine (CUDA toolkit, cuDNN, cuBLAS present):
#
#   bench/gpu-bundle.sh          # builds compute-only for sm_90 into .gpu-bundle/ (< 60 MiB)
#
# In the GPU session, exactly this call (the command needs OUT set; .gpu-bundle is git-ignored,
# so it travels only when carried; 540 s leaves the script's 470 s budget plus the packing):
#
#   run(command="OUT=$OUT bench/gpu-check.sh", carry=[".gpu-bundle"], timeout_s=540)
#
# What comes back: $OUT/summary.txt (stage verdicts, failure excerpts, the table) and
# $OUT/gpu-check.tgz (every log), two files, rewritten after every stage, so a run cut short
# still returns what it did. The console tail ends with the failure excerpts and the table.
#
# Order, with the stage caps (they add up to 480 s, nvidia-smi at the end included; a global
# deadline, GPU_CHECK_BUDGET=470, shrinks or skips whatever would run past it):
#   pre-flight (first 30 s): machine facts 5, library check 5, `ampgan devices` 10, one fill and
#     one convolution parity case of test_backend_ops with cuDNN's debug log 20. The script
#     STOPS here (exit 2) when the bundle, the GPU or the CUDA backend is missing, or when the
#     GPU tests skip.
#   backend-ops: the whole test_backend_ops binary (every op case against the CPU, and the
#     gradient checks on the GPU and the CPU), run directly (not ctest), one process, 40.
#   parity: the whole test_gpu_parity binary (the scenarios: training steps, graphs, ...), 60.
#   ours: `ampgan bench` at batch 256, DCGAN-64 nc 3 width 64, one precision per call so one
#     failure costs one number: fp16 30, bf16 30, fp32 40, tf32 30.
#   peer: bench/peers/pytorch_dcgan.py, eager AMP: fp16 40, bf16 30, fp32 35, fp16 with
#     --channels-last 30.
#   profile: `ampgan bench --profile` in fp16 (time per op family, eager) 30.
#   peer: fp16 with --compile as a second reference, 40; nvidia-smi 5.
# cuDNN/cuBLAS are found in the system, in /usr/local/cuda, or in PyTorch's wheels
# (site-packages/nvidia/*/lib, versioned names only); LD_LIBRARY_PATH is set for our programs
# only, never for PyTorch. Exit status: 0 all passed, 1 something failed, 2 stopped at pre-flight.
#
# Rehearsing without a GPU (it stops after about a second, "STOP: no GPU", two files in $OUT):
#   OUT=/tmp/out bench/gpu-check.sh
# and for the later stages: GPU_CHECK_NO_STOP=1 (go on past the pre-flight), BUNDLE=<folder> (a
# stand-in bundle), GPU_CHECK_PEER=<script> (a stand-in peer), GPU_CHECK_BUDGET=<seconds>.
set -u

START=$(date +%s)
BUDGET=${GPU_CHECK_BUDGET:-470}
DEADLINE=$((START + BUDGET))
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUNDLE=${BUNDLE:-$ROOT/.gpu-bundle}
OUT=${OUT:-$PWD/gpu-check-out}
BATCH=${BATCH:-256}
STEPS=${STEPS:-50}
mkdir -p "$OUT"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/gpu-check.XXXXXX")
LOGS=$WORK/gpu-check
mkdir -p "$LOGS"
SUMMARY=$LOGS/summary.txt
: > "$SUMMARY"
FAILED=0

log() { echo "[gpu-check +$(( $(date +%s) - START ))s] $*" | tee -a "$SUMMARY"; }
note() { echo "$*" | tee -a "$SUMMARY"; }

# Two files in $OUT, whatever happens: the summary and one archive of every log.
pack() {
  cp "$SUMMARY" "$OUT/summary.txt" 2> /dev/null
  tar czf "$OUT/gpu-check.tgz.tmp" -C "$WORK" gpu-check 2> /dev/null && mv -f "$OUT/gpu-check.tgz.tmp" "$OUT/gpu-check.tgz"
}
# A stage runs in the background and the script waits for it, so a TERM (the device tool's own
# timeout) is handled at once: stop the stage, keep what is there. timeout(1) puts its command in
# a process group of its own, which a TERM to ours would not reach.
STAGE_PID=""
on_term() {
  [ -n "$STAGE_PID" ] && kill -TERM "$STAGE_PID" 2> /dev/null
  log "interrupted"
  pack
  exit 1
}
trap on_term TERM INT

# stage NAME CAP COMMAND...: runs with min(CAP, time left - 10 s), output to $LOGS/NAME.log.
stage() {
  local name=$1 cap=$2
  shift 2
  local left=$(( DEADLINE - $(date +%s) - 10 ))
  local t=$(( cap < left ? cap : left ))
  if (( t < 5 )); then
    echo "skipped: out of time" > "$LOGS/$name.log"
    log "SKIP  $name (out of time)"
    FAILED=1
    return 124
  fi
  log "START $name (cap ${t}s)"
  timeout --kill-after=3 "$t" "$@" > "$LOGS/$name.log" 2>&1 &
  STAGE_PID=$!
  wait "$STAGE_PID"
  local rc=$?
  STAGE_PID=""
  local why=""
  (( rc == 124 || rc == 137 )) && why=" TIMED OUT"
  log "END   $name rc=$rc$why ($(wc -l < "$LOGS/$name.log") log lines)"
  (( rc != 0 )) && FAILED=1
  pack
  return $rc
}

# Failure reasons from a gtest log, for the console.
excerpt() {
  grep -B2 -A12 -E 'Failure|FAILED|error:' "$1" | head -"${2:-120}" | cut -c1-240 | sed 's/^/    /'
}

# GPU_CHECK_NO_STOP=1 goes on past a failed pre-flight: only for rehearsing the later stages on
# a machine without a GPU (they then fail fast, one by one).
stop() {
  log "STOP: $*"
  if [ "${GPU_CHECK_NO_STOP:-0}" = 1 ]; then
    log "(GPU_CHECK_NO_STOP=1: going on)"
    FAILED=1
    return 0
  fi
  pack
  exit 2
}

# ---- pre-flight ---------------------------------------------------------------------------------
AMPGAN=$BUNDLE/bin/ampgan
OPS=$BUNDLE/bin/test_backend_ops
PARITY=$BUNDLE/bin/test_gpu_parity
PLUGIN=$BUNDLE/lib/ampgan-studio/libampgan-cuda.so
for f in "$AMPGAN" "$OPS" "$PARITY" "$PLUGIN"; do
  [ -x "$f" ] || [ -f "$f" ] || stop "$f is missing: run bench/gpu-bundle.sh on the development machine and carry .gpu-bundle"
done
note "bundle: $(sed -n 2p "$BUNDLE/MANIFEST.txt" 2> /dev/null)"

# lib_dir NAME: the folder that holds NAME, or "system" when the loader finds it on its own.
WHEEL_DIRS=""
if command -v python3 > /dev/null; then
  # The nvidia namespace package (PyTorch's wheels) without importing torch: fast.
  WHEEL_DIRS=$(timeout 10 python3 -c 'import nvidia, sys; print("\n".join(nvidia.__path__))' 2> /dev/null)
fi
lib_dir() {
  local name=$1 d
  if /sbin/ldconfig -p 2> /dev/null | grep -q " $name "; then echo system; return 0; fi
  for d in ${GPU_CHECK_LIB_DIRS:-/usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib /usr/lib/x86_64-linux-gnu}; do
    [ -e "$d/$name" ] && { echo "$d"; return 0; }
  done
  local w f
  for w in $WHEEL_DIRS; do
    f=$(find "$w" -maxdepth 4 -name "$name" 2> /dev/null | head -1)
    [ -n "$f" ] && { dirname "$f"; return 0; }
  done
  return 1
}
AG_LD=$BUNDLE/lib/deps
for lib in libcudnn.so.9 libcublas.so.13 libcublasLt.so.13 libcudart.so.13; do
  if d=$(lib_dir "$lib"); then
    note "library: $lib: $d"
    [ "$d" != system ] && case ":$AG_LD:" in *":$d:"*) ;; *) AG_LD=$AG_LD:$d ;; esac
  else
    note "library: $lib: NOT FOUND (system, /usr/local/cuda, PyTorch's wheels)"
  fi
done
AG_LD=$AG_LD:$BUNDLE/lib/fallback
# Our programs' environment: the libraries above, a sane number of CPU threads for the CPU
# references (the engine's pool splits matrix products itself, so OpenBLAS runs one thread).
THREADS=$(nproc 2> /dev/null || echo 8)
(( THREADS > 16 )) && THREADS=16
AG_ENV=(env LD_LIBRARY_PATH="$AG_LD" AMPGAN_CUDA_PLUGIN="$PLUGIN" OPENBLAS_NUM_THREADS=1 AMPGAN_THREADS="$THREADS")

stage machine 5 bash -c 'uname -a; nproc; free -g | head -2;
  if command -v nvidia-smi > /dev/null; then
    nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used,compute_cap,clocks.max.sm --format=csv
  else echo "MISSING: nvidia-smi"; fi
  ls -l /dev/nvidia* 2>&1 | head -5; command -v python3 && python3 --version'
grep -E "MISSING|No devices|NVIDIA-SMI has failed|H200|H100|compute_cap" "$LOGS/machine.log" | head -4 | sed 's/^/    /' | tee -a "$SUMMARY"

stage libraries 5 "${AG_ENV[@]}" ldd "$PLUGIN" "$AMPGAN"
if grep -q "not found" "$LOGS/libraries.log"; then
  grep "not found" "$LOGS/libraries.log" | sort -u | sed 's/^/    /' | tee -a "$SUMMARY"
  stop "the CUDA backend cannot load: a library above is missing (cuDNN 9 / cuBLAS 13 / CUDA 13 runtime)"
fi

stage devices 10 "${AG_ENV[@]}" "$AMPGAN" devices
sed 's/^/    /' "$LOGS/devices.log" | head -8 | tee -a "$SUMMARY"
grep -q "^cuda:[0-9].* usable$" "$LOGS/devices.log" || stop "no GPU: 'ampgan devices' lists no usable GPU (see above)"

# gtest's closing line, "[==========] 2 tests from 2 test suites ran. (812 ms total)": the run
# finished (a crash or a timeout leaves it out).
GTEST_RAN='^\[==========\] [0-9]+ tests? from [0-9]+ test suites? ran\.'
PREFLIGHT='Parity/BackendOpsParity.Run/cuda_fill_n1001_f32:Parity/BackendOpsParity.Run/cuda_conv2d_k4s2p1_n4h8w8c64k128_D_mid_f16'
stage preflight 20 "${AG_ENV[@]}" CUDNN_LOGLEVEL_DBG=2 CUDNN_LOGDEST_DBG=stderr AMPGAN_LOG_CONV=1 \
  "$OPS" --gtest_filter="$PREFLIGHT" --gtest_print_time=1
sed -nE "/$GTEST_RAN/,\$p" "$LOGS/preflight.log" | grep -E "^\[  (PASSED|FAILED|SKIPPED) " | head -6 | cut -c1-200 |
  sed 's/^/    /' | tee -a "$SUMMARY"
grep "conv plan" "$LOGS/preflight.log" | head -3 | cut -c1-240 | sed 's/^/    /' | tee -a "$SUMMARY"
if grep -q "SKIPPED" "$LOGS/preflight.log" || ! grep -qE "$GTEST_RAN" "$LOGS/preflight.log"; then
  grep -m1 -E "no usable GPU|could not start" "$LOGS/preflight.log" | cut -c1-300 | sed 's/^/    /' | tee -a "$SUMMARY"
  stop "the GPU tests do not run (skipped or crashed): see preflight.log in gpu-check.tgz"
fi
excerpt "$LOGS/preflight.log" 40 | tee -a "$SUMMARY"

# ---- the op table, then the scenarios: each whole binary, one process ------------------------------
# gtest_stage NAME CAP BINARY: the binary's verdicts in the summary (the totals, failed and skipped
# tests; where it was cut short, the last lines).
gtest_stage() {
  local name=$1 cap=$2 bin=$3
  stage "$name" "$cap" "${AG_ENV[@]}" AMPGAN_LOG_CONV=1 "$bin" --gtest_print_time=1
  local rc=$?
  if (( rc == 124 || rc == 137 )); then  # cut short: which test was running
    grep -v "^conv plan" "$LOGS/$name.log" | tail -4 | cut -c1-200 | sed 's/^/    (last lines) /' | tee -a "$SUMMARY"
  fi
  grep -E "$GTEST_RAN" "$LOGS/$name.log" | sed 's/^/    /' | tee -a "$SUMMARY"
  sed -nE "/$GTEST_RAN/,\$p" "$LOGS/$name.log" | grep -E "^\[  (PASSED|FAILED|SKIPPED) " | head -40 | cut -c1-200 |
    sed 's/^/    /' | tee -a "$SUMMARY"
}
gtest_stage backend-ops 40 "$OPS"
gtest_stage parity 60 "$PARITY"

# ---- ours: batch 256, one precision per call, fp16 first ---------------------------------------------
for P in fp16 bf16 fp32 tf32; do
  cap=30
  [ "$P" = fp32 ] && cap=40
  if ! stage "ours-$P" "$cap" "${AG_ENV[@]}" AMPGAN_LOG_CONV=1 "$AMPGAN" bench --backend cuda --res 64 --nc 3 \
      --width 64 --batch "$BATCH" --precision "$P" --steps "$STEPS" --warmup 5 --json; then
    grep -v "^conv plan" "$LOGS/ours-$P.log" | tail -3 | cut -c1-400 | sed 's/^/    /' | tee -a "$SUMMARY"
  fi
  grep '^{' "$LOGS/ours-$P.log" > "$LOGS/ours-$P.json" 2> /dev/null
  # How the convolution algorithms were chosen (AMPGAN_LOG_CONV; each plan's line is in the log).
  note "    conv plans: $(grep -c ' -> algo ' "$LOGS/ours-$P.log") ($(grep -c ') timed ' "$LOGS/ours-$P.log") timed," \
    "$(grep -c ') by heuristics' "$LOGS/ours-$P.log") by heuristics," \
    "$(grep -c 'timing the candidates failed' "$LOGS/ours-$P.log") timing failures)"
done

# ---- the PyTorch peer (no LD_LIBRARY_PATH of ours): eager AMP, then compiled ----------------------------
PEER=${GPU_CHECK_PEER:-$ROOT/bench/peers/pytorch_dcgan.py}  # (override: for rehearsals only)
peer() {  # NAME CAP ARGS...
  local name=$1 cap=$2
  shift 2
  stage "peer-$name" "$cap" python3 "$PEER" --res 64 --nc 3 --width 64 --batch "$BATCH" --device cuda --steps "$STEPS" "$@"
  local rc=$?
  grep '^{' "$LOGS/peer-$name.log" > "$LOGS/peer-$name.json" 2> /dev/null
  (( rc != 0 )) && tail -3 "$LOGS/peer-$name.log" | cut -c1-300 | sed 's/^/    /' | tee -a "$SUMMARY"
  return $rc
}
PEERS=0
if ! command -v python3 > /dev/null; then
  log "SKIP  peer runs (no python3)"
elif peer fp16 40 --amp fp16 || ! grep -q "No module named 'torch'" "$LOGS/peer-fp16.log"; then
  PEERS=1
  peer bf16 30 --amp bf16
  peer fp32 35 --amp off
  peer fp16-cl 30 --amp fp16 --channels-last
else
  log "SKIP  the other peer runs (python3 cannot import torch)"
fi

# ---- where our fp16 step's time goes: op families, eager, a sync after each op (bench --profile) ----
stage ours-fp16-profile 30 "${AG_ENV[@]}" "$AMPGAN" bench --backend cuda --res 64 --nc 3 --width 64 --batch "$BATCH" \
  --precision fp16 --steps 20 --warmup 3 --profile
sed -n '/^Profile (--profile)/,$p' "$LOGS/ours-fp16-profile.log" | head -24 | cut -c1-200 | sed 's/^/    /' | tee -a "$SUMMARY"

# ---- the peer compiled, as a second reference (last: torch.compile takes the longest) ------------------
(( PEERS )) && peer fp16-compile 40 --amp fp16 --compile

command -v nvidia-smi > /dev/null && stage nvidia-smi-end 5 nvidia-smi

# ---- what the console shows last: failure excerpts, then the table ----------------------------------------
for name in backend-ops parity; do
  if grep -qE 'Failure|FAILED|error:' "$LOGS/$name.log" 2> /dev/null; then
    note ""
    note "$name failures (first lines; all of $name.log is in gpu-check.tgz):"
    excerpt "$LOGS/$name.log" 120 | head -c 5000 | tee -a "$SUMMARY"
  fi
done
LOGS="$LOGS" BATCH="$BATCH" python3 - << 'EOF' 2>&1 | tee -a "$SUMMARY"
import json, os
logs, batch = os.environ["LOGS"], os.environ["BATCH"]
def load(name):
    try:
        for line in open(os.path.join(logs, name + ".json")):
            if line.startswith("{"):
                return json.loads(line)
    except (OSError, ValueError):
        pass
    return None
mib = lambda b: b / 2**20
f = lambda v, fmt="%.1f": fmt % v if isinstance(v, (int, float)) else "-"
peer_of = {"fp16": "fp16", "bf16": "bf16", "fp32": "fp32"}
print()
print(f"DCGAN-64 nc 3 width 64, batch {batch}: ours (CUDA graphs, up to 3 steps in flight) vs PyTorch eager AMP")
print("(the peer synchronizes after every step, so it reports latency; ours reports pipelined throughput)")
print("%-5s %10s %9s %10s %10s | %10s %9s %10s %7s" % ("prec", "ours img/s", "ours ms", "activ MiB", "total MiB",
      "torch img/s", "torch ms", "torch MiB", "ratio"))
ours = {p: load("ours-" + p) for p in ["fp16", "bf16", "fp32", "tf32"]}
for p, o in ours.items():
    t = load("peer-" + peer_of[p]) if p in peer_of else None
    oi = o.get("images_per_s") if o else None
    ti = t.get("images_per_s") if t else None
    pk = (o or {}).get("peak_mem_bytes", {})
    print("%-5s %10s %9s %10s %10s | %10s %9s %10s %7s" % (p, f(oi), f(o and o.get("step_ms_median"), "%.2f"),
          f(mib(pk["activations"]) if "activations" in pk else None, "%.0f"), f(mib(pk["total"]) if "total" in pk else None, "%.0f"),
          f(ti), f(t and t.get("step_ms_median"), "%.2f"), f(t and t.get("peak_mem_mb"), "%.0f"),
          f(oi / ti if oi and ti else None, "%.2fx")))
for name, what in [("fp16-cl", "fp16 channels-last"), ("fp16-compile", "fp16 torch.compile")]:
    t = load("peer-" + name)
    print("%-5s %10s %9s %10s %10s | %10s %9s %10s   (peer %s)" % ("", "", "", "", "", f(t and t.get("images_per_s")),
          f(t and t.get("step_ms_median"), "%.2f"), f(t and t.get("peak_mem_mb"), "%.0f"), what))
def ratio(a, b):
    return a / b if isinstance(a, (int, float)) and isinstance(b, (int, float)) and b else None
o16, o32, t16 = ours["fp16"], ours["fp32"], load("peer-fp16")
targets = [
    ("ours fp16 / PyTorch eager fp16 img/s >= 2", ratio(o16 and o16.get("images_per_s"), t16 and t16.get("images_per_s")), lambda r: r >= 2),
    ("ours fp16 / ours fp32 img/s >= 3", ratio(o16 and o16.get("images_per_s"), o32 and o32.get("images_per_s")), lambda r: r >= 3),
    ("activation memory fp16 / fp32 <= 0.55", ratio(o16 and o16.get("peak_mem_bytes", {}).get("activations"),
                                                    o32 and o32.get("peak_mem_bytes", {}).get("activations")), lambda r: r <= 0.55),
]
print()
for what, r, ok in targets:
    print("target %-42s %s" % (what + ":", "not measured" if r is None else "%.2f %s" % (r, "MET" if ok(r) else "NOT met")))
EOF

log "done in $(( $(date +%s) - START ))s (exit $FAILED); $OUT/summary.txt and $OUT/gpu-check.tgz"
pack
exit $FAILED
