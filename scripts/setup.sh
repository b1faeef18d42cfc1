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
#                             the independent reader of the event files), python3-onnx (ONNX's checker,
#                             tests/python/check_onnx.py) and, with npm and node 20 or newer, npm's
#                             onnxruntime-node into ~/.cache/ampgan-test/node_modules (tests/test_onnx.cpp
#                             runs the exported generators with it; Debian 12's nodejs is 18, too old)
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
  libprotobuf-dev protobuf-compiler libonnx-dev
  openmpi-bin libopenmpi-dev
  dataset-fashion-mnist
)
if [[ "${1:-}" == "--dev" ]]; then
  packages+=(python3 python3-torch desktop-file-utils appstream lintian dpkg-dev fakeroot file xvfb xauth
             clang-14 libclang-rt-14-dev llvm-14 clang-format-14 clang-tidy-14
             python3-protobuf python3-crc32c python3-onnx)
fi

# onnxruntime for the ONNX export's tests: npm's package holds the CPU runtime; its install
# script only fetches GPU parts (from a host that may be unreachable), hence --ignore-scripts.
install_onnxruntime_node() {
  local dir="$HOME/.cache/ampgan-test" major
  if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    echo "setup: no node/npm: the onnxruntime tests of tests/test_onnx.cpp will skip (they need node 20+)"
    return 0
  fi
  major=$(node --version | sed -E 's/^v([0-9]+).*/\1/')
  if ((major < 20)); then
    echo "setup: node $(node --version) is older than 20: the onnxruntime tests of tests/test_onnx.cpp will skip"
    return 0
  fi
  if [[ -f "$dir/node_modules/onnxruntime-node/package.json" ]]; then
    echo "setup: onnxruntime-node present in $dir/node_modules"
    return 0
  fi
  mkdir -p "$dir"
  echo "setup: npm install onnxruntime-node@1.30 into $dir/node_modules"
  # Without the npm registry (an offline machine) the tests skip visibly; setup goes on.
  npm install --prefix "$dir" --ignore-scripts --no-audit --no-fund onnxruntime-node@1.30 ||
    echo "setup: npm could not install onnxruntime-node: the onnxruntime tests of tests/test_onnx.cpp will skip"
}

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if ((${#missing[@]} == 0)); then
  echo "setup: all ${#packages[@]} packages present"
  if [[ "${1:-}" == "--dev" ]]; then install_onnxruntime_node; fi
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
if [[ "${1:-}" == "--dev" ]]; then install_onnxruntime_node; fi
