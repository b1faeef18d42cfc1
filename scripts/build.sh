#!/usr/bin/env bash
# Configures and builds (Release) into build/. Extra arguments go to CMake, e.g.
#   scripts/build.sh -DAMPGAN_ENABLE_CUDA=OFF
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release "$@"
cmake --build build --parallel "$(nproc)"
