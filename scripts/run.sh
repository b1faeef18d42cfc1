#!/usr/bin/env bash
# Sets everything up, builds and starts AMP GAN Studio. Without a display (no $DISPLAY or
# $WAYLAND_DISPLAY) it trains the default dataset with the command-line twin instead.
# Arguments go to the application, e.g. scripts/run.sh --start --precision fp16
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh >/dev/null
if [[ -n "${DISPLAY:-}${WAYLAND_DISPLAY:-}" && -x build/ui/ampgan-studio ]]; then
  exec build/ui/ampgan-studio "$@"
fi
echo "run: no display; training Fashion-MNIST with the command-line twin (build/cli/ampgan)"
exec build/cli/ampgan train --dataset fashion-mnist --steps 500 --sample-every 100 "$@"
