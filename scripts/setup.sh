#!/usr/bin/env bash
# Installs the Debian 12 packages AMP GAN Studio needs. Idempotent: packages already installed
# are skipped, and apt is only called when something is missing. Uses sudo only when not root.
#
#   scripts/setup.sh          build and run (compiler, CMake, Qt 6, QCustomPlot, OpenCV, OpenBLAS, oneDNN,
#                             nlohmann-json, CLI11, zlib, protobuf (TensorBoard event files), GoogleTest,
#                             Fashion-MNIST)
#   scripts/setup.sh --dev    also what the tests and benchmarks use: PyTorch (the peer and the
#                             export check), desktop-file-utils, appstream, lintian, Xvfb, and
#                             clang with its sanitizer and libFuzzer runtimes (scripts/sanitize.sh), and
#                             protobuf's Python runtime and python3-crc32c (tests/python/read_tfevents.py,
#                             the independent reader of the event files)
#
# openmpi-bin and libopenmpi-dev build multi-rank training (mpirun -np N ampgan train) and its
# tests; without them the build leaves it out. The CUDA backend is built when the CUDA toolkit (with cuDNN) is at /usr/local/cuda or on
# PATH; it is not a Debian package, so this script does not install it.
set -euo pipefail

packages=(
  g++ cmake ninja-build pkg-config
  qt6-base-dev libqcustomplot-dev libqcustomplot2.1-qt6
  libopencv-core-dev libopencv-imgproc-dev libopencv-imgcodecs-dev libopencv-videoio-dev libwebp-dev
  libopenblas-dev libdnnl-dev zlib1g-dev libzip-dev nlohmann-json3-dev libcli11-dev libgtest-dev
  libprotobuf-dev protobuf-compiler
  openmpi-bin libopenmpi-dev
  dataset-fashion-mnist
)
if [[ "${1:-}" == "--dev" ]]; then
  packages+=(python3 python3-torch desktop-file-utils appstream lintian dpkg-dev fakeroot file xvfb xauth
             clang-14 libclang-rt-14-dev llvm-14 clang-format-14 clang-tidy-14
             python3-protobuf python3-crc32c)
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if ((${#missing[@]} == 0)); then
  echo "setup: all ${#packages[@]} packages present"
  exit 0
fi

sudo=""
if [[ $(id -u) -ne 0 ]]; then
  if ! command -v sudo >/dev/null; then
    echo "setup: need root (or sudo) to install: ${missing[*]}" >&2
    exit 1
  fi
  sudo="sudo"
fi
echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
