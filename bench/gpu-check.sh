#!/usr/bin/env bash
# One pass over a lent GPU machine (an H200): build, GPU parity tests, device listing, our
# benchmark against the PyTorch peer. Run from the repository root with $OUT set to a folder for
# the results:
#
#   OUT=/tmp/out bench/gpu-check.sh
#
# Every stage has a timeout and the whole run stays under ~8 minutes (a global deadline shrinks
# or skips the last stages); a failing stage is logged and the script goes on. Logs land in
# $OUT/<stage>.log, machine-readable results in $OUT/*.jsonl / *.json, and a short table of ours
# vs PyTorch (images/s per precision and batch) ends $OUT/summary.txt and the console output.
# Nothing is downloaded. Exit status: 0 if every stage passed, 1 otherwise.
set -u

START=$(date +%s)
BUDGET=${GPU_CHECK_BUDGET:-470}          # seconds for everything
DEADLINE=$((START + BUDGET))
OUT=${OUT:-$PWD/gpu-check-out}
BUILD=${BUILD:-build}
BATCHES=${BATCHES:-"64 256"}
STEPS=${STEPS:-50}
mkdir -p "$OUT"
SUMMARY=$OUT/summary.txt
: > "$SUMMARY"
FAILED=0

log() { echo "[gpu-check +$(( $(date +%s) - START ))s] $*" | tee -a "$SUMMARY"; }

# stage NAME CAP_SECONDS COMMAND...: runs with min(CAP, time left - 10 s), output to $OUT/NAME.log.
stage() {
  local name=$1 cap=$2
  shift 2
  local left=$(( DEADLINE - $(date +%s) - 10 ))
  local t=$(( cap < left ? cap : left ))
  if (( t < 5 )); then
    log "SKIP  $name (out of time)"
    FAILED=1
    return 124
  fi
  log "START $name (timeout ${t}s)"
  timeout --kill-after=5 "$t" "$@" > "$OUT/$name.log" 2>&1
  local rc=$?
  local note=""
  (( rc == 124 || rc == 137 )) && note=" TIMED OUT"
  log "END   $name rc=$rc$note ($(wc -l < "$OUT/$name.log") log lines)"
  (( rc != 0 )) && FAILED=1
  return $rc
}

# ---- carried build dependencies ----------------------------------------------------------------
# The GPU machine has no apt access. bench/gpu-deps.sh (run beforehand on a Debian 12 machine)
# puts the .debs of what a compute-only build needs (OpenBLAS, nlohmann-json, GoogleTest) into
# .deps/; carry that folder along and they are unpacked here into .deps/root.
if ls .deps/*.deb > /dev/null 2>&1; then
  mkdir -p .deps/root
  for f in .deps/*.deb; do
    if command -v dpkg-deb > /dev/null; then
      dpkg-deb -x "$f" .deps/root
    else
      (d=$(mktemp -d) && cd "$d" && ar x "$OLDPWD/$f" && tar -xf data.tar.* -C "$OLDPWD/.deps/root" && rm -rf "$d")
    fi
  done
  export CMAKE_PREFIX_PATH=$PWD/.deps/root/usr${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}
  export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu/openblas-pthread:$PWD/.deps/root/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  log "using the carried packages in .deps/: $(ls .deps/*.deb | wc -l) .debs"
fi

# ---- what this machine has -------------------------------------------------------------------
{
  echo "== machine =="
  uname -a
  nproc
  command -v nvidia-smi > /dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used,compute_cap --format=csv \
    || echo "MISSING: nvidia-smi"
  echo "== tools =="
  for tool in cmake ninja g++ python3; do
    if command -v "$tool" > /dev/null; then echo "$tool: $("$tool" --version 2>&1 | head -1)"; else echo "MISSING: $tool"; fi
  done
  NVCC=${CUDACXX:-/usr/local/cuda/bin/nvcc}
  if [ -x "$NVCC" ] || command -v nvcc > /dev/null; then
    echo "nvcc: $("${NVCC}" --version 2>/dev/null | tail -2 | head -1 || nvcc --version | tail -2 | head -1)"
  else
    echo "MISSING: nvcc (CUDA toolkit): the CUDA backend will not be built"
  fi
  echo "== headers and libraries the build needs =="
  check_file() {  # description, then candidate paths (globs)
    local what=$1
    shift
    for p in "$@"; do
      for f in $p; do
        [ -e "$f" ] && { echo "ok: $what ($f)"; return 0; }
      done
    done
    echo "MISSING: $what"
  }
  check_file "cuDNN header" /usr/local/cuda/include/cudnn.h /usr/include/cudnn.h /usr/include/x86_64-linux-gnu/cudnn.h
  check_file "cuDNN library" "/usr/local/cuda/lib64/libcudnn.so*" "/usr/lib/x86_64-linux-gnu/libcudnn.so*"
  check_file "cuBLAS library" "/usr/local/cuda/lib64/libcublas.so*" "/usr/lib/x86_64-linux-gnu/libcublas.so*"
  check_file "GoogleTest (libgtest-dev)" /usr/include/gtest/gtest.h /usr/local/include/gtest/gtest.h .deps/root/usr/include/gtest/gtest.h
  check_file "nlohmann-json (nlohmann-json3-dev)" /usr/include/nlohmann/json.hpp /usr/local/include/nlohmann/json.hpp .deps/root/usr/include/nlohmann/json.hpp
  check_file "OpenBLAS (libopenblas-dev)" "/usr/include/x86_64-linux-gnu/openblas*/cblas.h" /usr/include/cblas.h /usr/include/openblas/cblas.h ".deps/root/usr/include/x86_64-linux-gnu/openblas*/cblas.h"
  echo "== python =="
  if command -v python3 > /dev/null; then
    python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'available', torch.cuda.is_available())" 2>&1 \
      || echo "MISSING: PyTorch for python3 (the peer comparison is skipped)"
  fi
} > "$OUT/environment.log" 2>&1
log "environment: $OUT/environment.log"
grep MISSING "$OUT/environment.log" | sed 's/^/    /' | tee -a "$SUMMARY"

# ---- build (Release, compute engine only, sm_90 only) -------------------------------------------
# AMPGAN_COMPUTE_ONLY: the engine without datasets, run folders or GUI, so no OpenCV, zlib or Qt
# is needed; `ampgan bench`, `ampgan devices` and the GPU tests are all there is to run here.
# The CUDA20 options let CMake 3.25 (Debian 12) compile .cu files as C++20; newer CMake versions
# define them themselves and ignore these.
CMAKE_ARGS=(-S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DAMPGAN_COMPUTE_ONLY=ON
            -DAMPGAN_CUDA_ARCHITECTURES=90
            -DCMAKE_CUDA20_STANDARD_COMPILE_OPTION=-std=c++20 -DCMAKE_CUDA20_EXTENSION_COMPILE_OPTION=-std=c++20)
TESTS=1
if ! stage configure 90 cmake "${CMAKE_ARGS[@]}"; then
  log "configure failed; retrying without tests (GoogleTest may be missing)"
  TESTS=0
  stage configure-notests 90 cmake "${CMAKE_ARGS[@]}" -DAMPGAN_BUILD_TESTS=OFF
fi
grep -E "CUDA backend|not found|MISSING|Error" "$OUT/configure.log" 2>/dev/null | head -5 | sed 's/^/    /' | tee -a "$SUMMARY"
TARGETS=(ampgan)
(( TESTS )) && TARGETS+=(test_gpu_parity)
stage build 240 ninja -C "$BUILD" "${TARGETS[@]}"
AMPGAN=$BUILD/cli/ampgan

# ---- GPU parity tests -------------------------------------------------------------------------------
if (( TESTS )) && [ -x "$BUILD/tests/test_gpu_parity" ]; then
  # One process per test case: run several at once (each holds its own CUDA context).
  stage gpu-tests 150 bash -c "cd '$BUILD' && GTEST_OUTPUT='xml:$OUT/gtest/' ctest -L gpu --output-on-failure -j 8 --timeout 120"
  grep -E "% tests passed|\((Failed|Timeout|SEGFAULT|Subprocess aborted|Not Run)\)|Total Test time" "$OUT/gpu-tests.log" | head -40 | sed 's/^/    /' | tee -a "$SUMMARY"
else
  log "SKIP  gpu-tests (test_gpu_parity was not built)"
  FAILED=1
fi

# ---- devices ---------------------------------------------------------------------------------------
if [ -x "$AMPGAN" ]; then
  stage devices 30 "$AMPGAN" devices
  sed 's/^/    /' "$OUT/devices.log" | head -12 | tee -a "$SUMMARY"
else
  log "SKIP  devices and our benchmark ($AMPGAN was not built)"
  FAILED=1
fi

# ---- benchmarks: ours, then the peer, batch by batch -------------------------------------------------
PEER=""
for p in .peer/pytorch_dcgan.py bench/peers/pytorch_dcgan.py; do [ -f "$p" ] && { PEER=$p; break; }; done
HAVE_TORCH=0
command -v python3 > /dev/null && python3 -c "import torch" > /dev/null 2>&1 && HAVE_TORCH=1
[ -z "$PEER" ] && log "no PyTorch peer script (.peer/pytorch_dcgan.py): the peer runs are skipped"
(( HAVE_TORCH )) || log "python3 cannot import torch: the peer runs are skipped"

for B in $BATCHES; do
  if [ -x "$AMPGAN" ]; then
    if stage "ours-b$B" 75 "$AMPGAN" bench --backend cuda --res 64 --nc 3 --width 64 --batch "$B" \
        --precision all --steps "$STEPS" --json; then :; fi
    grep '^{' "$OUT/ours-b$B.log" > "$OUT/ours-b$B.jsonl" 2>/dev/null || true
  fi
  if [ -n "$PEER" ] && (( HAVE_TORCH )); then
    for AMP in off fp16 bf16; do
      stage "peer-b$B-$AMP" 45 python3 "$PEER" --res 64 --nc 3 --width 64 --batch "$B" --device cuda \
        --amp "$AMP" --steps "$STEPS"
      grep '^{' "$OUT/peer-b$B-$AMP.log" > "$OUT/peer-b$B-$AMP.json" 2>/dev/null || true
    done
  fi
done

command -v nvidia-smi > /dev/null && nvidia-smi > "$OUT/nvidia-smi-end.log" 2>&1

# ---- the table ----------------------------------------------------------------------------------------
if command -v python3 > /dev/null; then
  OUT="$OUT" BATCHES="$BATCHES" python3 - <<'EOF' 2>&1 | tee -a "$SUMMARY"
import json, os, glob
out, batches = os.environ["OUT"], os.environ["BATCHES"].split()
def load(path):
    rows = []
    try:
        for line in open(path):
            line = line.strip()
            if line.startswith("{"):
                try: rows.append(json.loads(line))
                except ValueError: pass
    except OSError:
        pass
    return rows
def peak_mb(r):
    p = r.get("peak_mem", r.get("peak_mem_bytes"))
    if isinstance(p, dict):
        tot = p.get("total", sum(v for v in p.values() if isinstance(v, (int, float))))
        return tot / 2**20
    if isinstance(p, (int, float)):
        return p / 2**20
    return r.get("peak_mem_mb")
amp_of = {"fp32": "off", "fp16": "fp16", "bf16": "bf16"}
print()
print("%-6s %5s %12s %12s %7s %10s %10s %10s %10s" % ("prec", "batch", "ours img/s", "torch img/s", "ratio",
      "ours ms", "torch ms", "ours MiB", "torch MiB"))
for b in batches:
    ours = {r.get("precision"): r for r in load(f"{out}/ours-b{b}.jsonl")}
    for prec in ["fp32", "tf32", "fp16", "bf16"]:
        o = ours.get(prec)
        peer = load(f"{out}/peer-b{b}-{amp_of[prec]}.json") if prec in amp_of else []
        p = peer[0] if peer else None
        if not o and not p:
            continue
        oi = o.get("images_per_s") if o else None
        pi = p.get("images_per_s") if p else None
        fmt = lambda v, f="%.1f": (f % v) if isinstance(v, (int, float)) else "-"
        ratio = (oi / pi) if isinstance(oi, (int, float)) and isinstance(pi, (int, float)) and pi else None
        print("%-6s %5s %12s %12s %7s %10s %10s %10s %10s" % (prec, b, fmt(oi), fmt(pi), fmt(ratio, "%.2fx"),
              fmt(o.get("step_ms_median") if o else None, "%.2f"), fmt(p.get("step_ms_median") if p else None, "%.2f"),
              fmt(peak_mb(o) if o else None, "%.0f"), fmt(p.get("peak_mem_mb") if p else None, "%.0f")))
print("(ratio = ours / PyTorch images per second; tf32 has no peer run: the peer's fp32 forbids TF32 too)")
EOF
else
  log "python3 missing: see $OUT/ours-*.jsonl and $OUT/peer-*.json"
fi

log "done in $(( $(date +%s) - START ))s; results in $OUT (exit $FAILED)"
exit $FAILED
