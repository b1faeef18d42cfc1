#!/usr/bin/env bash
# Runs `ampgan bench` and the PyTorch peer (bench/peers/pytorch_dcgan.py, or pytorch_resnet.py
# with --model resnet) on the same model,
# alternating for several rounds so that both see the same machine load, and prints both and
# their ratio (median images/s over the rounds).
#
#   bench/compare_pytorch.sh                      # DCGAN-32, nc 1, width 64, batch 64, CPU, 2 threads
#   bench/compare_pytorch.sh --device cuda --res 64 --nc 3 --batch 256
#   bench/compare_pytorch.sh --model resnet --nc 3 --width 16 --batch 32
#
# Options: --model dcgan|resnet --res R --nc C --width W --batch B --steps N --warmup N --rounds R --threads T
#          --device cpu|cuda --ampgan PATH --python PATH
#          --peer-amp "off bf16"   the peer's autocast modes (default: all it has on the device; PyTorch's
#                                  BF16 autocast on a CPU without AVX512-BF16 runs at well under 1 img/s on
#                                  the ResNet, so --peer-amp off keeps a round to minutes)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
model=dcgan res=32 nc=1 width=64 batch=64 steps=20 warmup=3 rounds=3 threads=2 device=cpu
ampgan="$here/../build/cli/ampgan"
python=/usr/bin/python3
[[ -x $python ]] || python=python3
while (($#)); do
  case "$1" in
    --model) model=$2; shift 2 ;;
    --res) res=$2; shift 2 ;;
    --nc) nc=$2; shift 2 ;;
    --width) width=$2; shift 2 ;;
    --batch) batch=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --warmup) warmup=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --device) device=$2; shift 2 ;;
    --ampgan) ampgan=$2; shift 2 ;;
    --python) python=$2; shift 2 ;;
    --peer-amp) peer_amp=$2; shift 2 ;;
    *) echo "compare_pytorch.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
[[ -x $ampgan ]] || { echo "compare_pytorch.sh: $ampgan not found; run scripts/build.sh first" >&2; exit 1; }
"$python" -c "import torch" 2>/dev/null || { echo "compare_pytorch.sh: PyTorch missing for $python (scripts/setup.sh --dev installs python3-torch)" >&2; exit 1; }

# Our precisions and the peer's autocast modes. PyTorch's CPU autocast has no FP16.
if [[ $device == cpu ]]; then ours="fp32 fp16 bf16"; theirs="off bf16"; else ours="fp32 tf32 fp16 bf16"; theirs="off fp16 bf16"; fi
[[ -n ${peer_amp:-} ]] && theirs=$peer_amp
log=$(mktemp)
trap 'rm -f "$log"' EXIT
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
for ((r = 1; r <= rounds; r++)); do
  for p in $ours; do
    AMPGAN_THREADS=$threads "$ampgan" bench --backend "$device" --model "$model" --res "$res" --nc "$nc" --width "$width" --batch "$batch" \
      --steps "$steps" --warmup "$warmup" --precision "$p" --json | sed 's/^/ours /' >>"$log"
  done
  for a in $theirs; do
    "$python" "$here/peers/pytorch_$model.py" --res "$res" --nc "$nc" --width "$width" --batch "$batch" --steps "$steps" \
      --warmup "$warmup" --device "$device" --amp "$a" --threads "$threads" | sed 's/^/peer /' >>"$log"
  done
done

echo "load average before: $load_before, after: $(cut -d' ' -f1-3 /proc/loadavg)"
"$python" - "$log" "$res" "$nc" "$width" "$batch" "$device" "$threads" "$rounds" "$model" <<'PY'
import json, statistics, sys
log, res, nc, width, batch, device, threads, rounds, model = sys.argv[1:]
ours, peer, meta = {}, {}, {}
for line in open(log):
    who, _, payload = line.partition(" ")
    j = json.loads(payload)
    if who == "ours":
        ours.setdefault(j["precision"], []).append(j["images_per_s"])
        meta["device"] = j["device"]
        meta.setdefault("mem", {})[j["precision"]] = j["peak_mem_bytes"]
    else:
        peer.setdefault({"off": "fp32", "fp16": "fp16", "bf16": "bf16"}[j["amp"]], []).append(j["images_per_s"])
        meta["torch"] = j["torch"]
med = {k: statistics.median(v) for k, v in ours.items()}
pmed = {k: statistics.median(v) for k, v in peer.items()}
print(f"{'ResNet' if model == 'resnet' else 'DCGAN'}-{res} (nc {nc}, width {width}), batch {batch}, {device}, {threads} threads, {rounds} rounds")
print(f"ampgan on {meta.get('device')}; PyTorch {meta.get('torch')} (eager{', autocast' if device == 'cuda' else ''})")
print(f"{'precision':10} {'ampgan img/s':>13} {'PyTorch img/s':>14} {'ampgan/PyTorch':>15} {'vs our fp32':>12} {'activ. MiB':>11}")
for p in ["fp32", "tf32", "fp16", "bf16"]:
    if p not in med:
        continue
    ratio = f"{med[p] / pmed[p]:.2f}x" if p in pmed else "-"
    theirs = f"{pmed[p]:.1f}" if p in pmed else "-"
    act = meta["mem"][p]["activations"] / 2**20
    print(f"{p:10} {med[p]:13.1f} {theirs:>14} {ratio:>15} {med[p] / med['fp32']:11.2f}x {act:11.1f}")
PY
