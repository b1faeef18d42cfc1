#!/usr/bin/env bash
# Run HERE, on a machine with the CUDA 13 toolkit, cuBLAS 13 and cuDNN 9 (the development machines
# have them in /usr/local/cuda), not on the GPU machine: builds the compute-only engine for the
# H200 (sm_90) into build-gpu/ and gathers what bench/gpu-check.sh runs there into .gpu-bundle/
# (git-ignored), so the lent GPU minutes are spent running, not configuring and compiling:
#
#   .gpu-bundle/bin/ampgan, bin/test_backend_ops,   the programs (stripped)
#     bin/test_gpu_parity
#   .gpu-bundle/lib/ampgan-studio/libampgan-cuda.so  the plugin, where the programs look for it
#                                                    (<exe>/../lib/ampgan-studio)
#   .gpu-bundle/lib/deps/                            the non-NVIDIA shared libraries they need and
#                                                    a GPU image may lack (OpenBLAS, gfortran, ...)
#   .gpu-bundle/lib/fallback/libcudart.so.13         used only if the GPU machine has no runtime
#   .gpu-bundle/MANIFEST.txt                         commit, build options, files and sizes
#
# cuBLAS and cuDNN (hundreds of MiB) are not carried: the GPU machine has them (CUDA toolkit or
# PyTorch's wheels); gpu-check.sh finds them. The device tool carries at most 64 MiB of ignored
# paths, so the bundle must stay under 60 MiB; this script fails if it does not.
#
#   bench/gpu-bundle.sh            # then, in the GPU session, see bench/gpu-check.sh's header
#
# Environment: BUILD (build-gpu), JOBS (2), AMPGAN_BUNDLE_CMAKE_ARGS (more CMake options, e.g. a
# compiler launcher). .ci/run builds it on every change, so a break shows there. Rebuild the bundle after every source change: what
# runs on the GPU is what this script built, not the working tree.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD=${BUILD:-build-gpu}
BUNDLE=$ROOT/.gpu-bundle
LIMIT_MIB=60

die() { echo "gpu-bundle: $*" >&2; exit 1; }

mkdir -p "$BUILD"
# The CUDA20 options let CMake 3.25 (Debian 12) compile .cu files as C++20.
# No oneDNN: its 38 MiB would not fit; the CPU reference the GPU is compared with is OpenBLAS's.
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DAMPGAN_COMPUTE_ONLY=ON -DAMPGAN_CUDA_ARCHITECTURES=90 \
      -DAMPGAN_BUILD_TESTS=ON -DAMPGAN_ENABLE_ONEDNN=OFF ${AMPGAN_BUNDLE_CMAKE_ARGS:-} > "$BUILD/gpu-bundle-configure.log" 2>&1 || { tail -20 "$BUILD/gpu-bundle-configure.log"; die "configure failed"; }
grep -q "CUDA backend: ON" "$BUILD/gpu-bundle-configure.log" || { grep "CUDA backend" "$BUILD/gpu-bundle-configure.log"; die "the CUDA backend is not built"; }
cmake --build "$BUILD" -j "${JOBS:-2}" --target ampgan test_backend_ops test_gpu_parity

PLUGIN=$BUILD/lib/ampgan-studio/libampgan-cuda.so
for f in "$BUILD/cli/ampgan" "$BUILD/tests/test_backend_ops" "$BUILD/tests/test_gpu_parity" "$PLUGIN"; do [ -f "$f" ] || die "missing $f"; done

rm -rf "$BUNDLE"
mkdir -p "$BUNDLE/bin" "$BUNDLE/lib/ampgan-studio" "$BUNDLE/lib/deps" "$BUNDLE/lib/fallback"
# strip keeps .dynsym, which the plugin resolves the engine's symbols from (ENABLE_EXPORTS).
install -m 755 -s "$BUILD/cli/ampgan" "$BUILD/tests/test_backend_ops" "$BUILD/tests/test_gpu_parity" "$BUNDLE/bin/"
install -m 755 -s "$PLUGIN" "$BUNDLE/lib/ampgan-studio/"

# Shared libraries: everything ldd resolves except the C/C++ runtime (any GPU image has a newer
# one) and NVIDIA's libraries (too big; the GPU machine has its own, matching its driver).
skip='^(linux-vdso|ld-linux|libc|libm|libdl|libpthread|librt|libresolv|libstdc\+\+|libgcc_s|libcuda|libcudart|libcublas|libcublasLt|libcudnn.*|libnvrtc.*|libnvJitLink.*|libz)\.so'
for f in "$BUNDLE/bin/ampgan" "$BUNDLE/bin/test_backend_ops" "$BUNDLE/bin/test_gpu_parity" "$BUNDLE/lib/ampgan-studio/libampgan-cuda.so"; do
  ldd "$f" | awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 }'
done | sort -u | while read -r name path; do
  if [[ $name =~ $skip ]]; then continue; fi
  cp -L "$path" "$BUNDLE/lib/deps/$name"
done
# Libraries of those libraries (libgfortran needs libquadmath, for example).
for f in "$BUNDLE"/lib/deps/*; do
  ldd "$f" | awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 }'
done | sort -u | while read -r name path; do
  if [[ $name =~ $skip ]] || [ -e "$BUNDLE/lib/deps/$name" ]; then continue; fi
  cp -L "$path" "$BUNDLE/lib/deps/$name"
done
CUDART=$(ldd "$PLUGIN" | awk '$1 ~ /^libcudart\.so/ { print $3 }')
[ -n "$CUDART" ] && cp -L "$CUDART" "$BUNDLE/lib/fallback/"

# Every dependency must resolve from the bundle plus NVIDIA's libraries.
if LD_LIBRARY_PATH=$BUNDLE/lib/deps ldd "$BUNDLE/bin/ampgan" "$BUNDLE/bin/test_backend_ops" "$BUNDLE/bin/test_gpu_parity" | grep "not found"; then
  die "a library the programs need was not bundled"
fi

{
  echo "built by bench/gpu-bundle.sh on $(hostname) at $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD 2>/dev/null || echo ' + uncommitted changes')"
  echo "options: -DAMPGAN_COMPUTE_ONLY=ON -DAMPGAN_CUDA_ARCHITECTURES=90 -DAMPGAN_ENABLE_ONEDNN=OFF -DCMAKE_BUILD_TYPE=Release"
  grep "CUDA backend" "$BUILD/gpu-bundle-configure.log"
  echo "linked against:"
  ldd "$PLUGIN" | awk '$1 ~ /^lib(cudart|cublas|cudnn)/ { print "  " $1 }'
  echo "files:"
  (cd "$BUNDLE" && find . -type f ! -name MANIFEST.txt -printf '  %p %s\n' | sort)
} > "$BUNDLE/MANIFEST.txt"

BYTES=$(du -sb "$BUNDLE" | cut -f1)
MIB=$(( (BYTES + 1048575) / 1048576 ))
cat "$BUNDLE/MANIFEST.txt"
echo "gpu-bundle: $BUNDLE is $MIB MiB (limit $LIMIT_MIB)"
(( MIB <= LIMIT_MIB )) || die "the bundle is larger than $LIMIT_MIB MiB: the device tool cannot carry it"
