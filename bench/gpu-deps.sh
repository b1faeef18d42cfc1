#!/usr/bin/env bash
# Run on a Debian 12 machine with apt (not on the GPU machine, which cannot download): fetches
# the packages a compute-only build (AMPGAN_COMPUTE_ONLY=ON) needs beyond the CUDA toolkit --
# OpenBLAS, nlohmann-json, GoogleTest -- into .deps/ (git-ignored), about 14 MB. Carry .deps to the
# GPU machine; bench/gpu-check.sh unpacks and uses them.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .deps
cd .deps
apt-get download libopenblas-dev libopenblas-pthread-dev libopenblas0-pthread libgfortran5 \
  nlohmann-json3-dev libgtest-dev 2>&1 | grep -v "^W: Download is performed unsandboxed" || true
ls -la
