#!/usr/bin/env bash
# Sets everything up, builds and runs the whole test suite (ctest). GPU tests skip visibly
# where there is no NVIDIA GPU; Qt tests run offscreen.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --dev
scripts/build.sh "$@"
export QT_QPA_PLATFORM=offscreen
ctest --test-dir build --output-on-failure --timeout 900 -j "$(nproc)"
