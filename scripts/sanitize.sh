#!/usr/bin/env bash
# The sanitizer pass CI runs after scripts/test.sh: an AddressSanitizer + UndefinedBehaviorSanitizer
# build (clang, float-cast-overflow included, stopping at the first finding) of the engine, the CLI,
# the core and CLI tests and the libFuzzer targets, into build-asan/. It runs those tests there, then
# each fuzz target for FUZZ_SECONDS (default 45; nproc targets at a time) from its committed seed
# corpus in fuzz/corpus/,
# and prints the executions per target. Extra arguments go to CMake.
# Without oneDNN: its JIT kernels are not instrumented, so ASan would check nothing of them (the
# op table checks their results in the ordinary build).
# The mutations follow FUZZ_SEED (default 1), so a run here explores what CI's run explores and a
# finding in CI comes back here; FUZZ_SEED=0 lets libFuzzer pick a new seed, for longer hunts.
#   scripts/sanitize.sh          FUZZ_SECONDS=600 FUZZ_SEED=0 scripts/sanitize.sh
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${FUZZ_SECONDS:-45}
fuzz_seed=${FUZZ_SEED:-1}
cxx=$(command -v clang++-14 || command -v clang++ || true)
cc=$(command -v clang-14 || command -v clang || true)
if [[ -z "$cxx" || -z "$cc" ]]; then
  echo "sanitize: clang not found; install it with scripts/setup.sh --dev" >&2
  exit 1
fi
start=$(date +%s)
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_COMPILER="$cc" -DCMAKE_CXX_COMPILER="$cxx" \
  -DCMAKE_CXX_FLAGS="-gline-tables-only" -DAMPGAN_SANITIZE=ON -DAMPGAN_FUZZ=ON \
  -DAMPGAN_ENABLE_CUDA=OFF -DAMPGAN_ENABLE_ONEDNN=OFF -DAMPGAN_BUILD_GUI=OFF "$@" >/dev/null
fuzz_targets=(idx safetensors config image image_header zip dataset_json)
# The readers' and the CLI's tests (test_cli runs this build's ampgan); the suites that train a
# lot (test_cpu_ops, test_amp, test_resnet, ...) run 10-50x slower under ASan and stay in the
# ordinary build.
tests=(test_io test_data test_limits test_zip_dataset test_half test_cpu_convert test_kernel_math test_cli test_session)
cmake --build build-asan --parallel "$(nproc)" --target ampgan "${tests[@]}" "${fuzz_targets[@]/#/fuzz_}"
built=$(date +%s)

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:strict_string_checks=1:check_initialization_order=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$PWD/fuzz/lsan.supp:print_suppressions=0}
mkdir -p build-asan/logs
failed=()
pids=()
for t in "${tests[@]}"; do
  build-asan/tests/"$t" >build-asan/logs/"$t".log 2>&1 &
  pids+=($!)
  # At most nproc at a time.
  while (($(jobs -rp | wc -l) >= $(nproc))); do sleep 0.5; done
done
for i in "${!tests[@]}"; do
  if wait "${pids[$i]}"; then
    echo "sanitize: ${tests[$i]}: $(grep -E '^\[  PASSED  \]' build-asan/logs/"${tests[$i]}".log)"
  else
    failed+=("${tests[$i]}")
    echo "sanitize: ${tests[$i]} FAILED (build-asan/logs/${tests[$i]}.log):" >&2
    tail -n 60 build-asan/logs/"${tests[$i]}".log >&2
  fi
done
tested=$(date +%s)

# Fuzzing: a scratch corpus seeded from the committed one, so CI never rewrites fuzz/corpus.
# Each target runs on one thread, so nproc of them run at once, each for its full time.
fuzz_one() {
  local t=$1 work=build-asan/fuzz-work/$1 log=build-asan/logs/fuzz_$1.log max_len=65536
  rm -rf "$work" && mkdir -p "$work"
  [[ $t == safetensors ]] && max_len=262144  # the seed checkpoint is 176 KiB
  # One thread: the pool's start-up per input would cost more than the input's work.
  AMPGAN_THREADS=1 build-asan/fuzz/fuzz_"$t" -max_total_time="$seconds" -seed="$fuzz_seed" -timeout=20 -rss_limit_mb=2560 \
    -max_len=$max_len -print_final_stats=1 -artifact_prefix="$work/" "$work" fuzz/corpus/"$t" >"$log" 2>&1
}
fuzz_pids=()
for t in "${fuzz_targets[@]}"; do
  fuzz_one "$t" &
  fuzz_pids+=($!)
  while (($(jobs -rp | wc -l) >= $(nproc))); do sleep 0.5; done
done
for i in "${!fuzz_targets[@]}"; do
  t=${fuzz_targets[$i]} work=build-asan/fuzz-work/${fuzz_targets[$i]} log=build-asan/logs/fuzz_${fuzz_targets[$i]}.log
  if wait "${fuzz_pids[$i]}"; then
    echo "sanitize: fuzz_$t: $(grep -o 'stat::number_of_executed_units: [0-9]*' "$log" | grep -o '[0-9]*$') executions" \
         "in ${seconds} s, corpus $(ls "$work" | wc -l) inputs, no finding"
  else
    failed+=("fuzz_$t")
    echo "sanitize: fuzz_$t FOUND A PROBLEM (input saved in $work/crash-*; $log):" >&2
    tail -n 60 "$log" >&2
  fi
done
end=$(date +%s)
echo "sanitize: build $((built - start)) s, tests $((tested - built)) s, fuzzing $((end - tested)) s"
if ((${#failed[@]})); then
  echo "sanitize: FAILED: ${failed[*]}" >&2
  exit 1
fi
