#!/usr/bin/env bash
# Does mixed precision keep sample quality? Trains the same DCGAN on Fashion-MNIST in FP32, FP16
# AMP and BF16 AMP with the same seeds, steps and data order, evaluates SWD and FD during
# training, and prints one table (and writes it to OUT/summary.md).
#
#   bench/amp_quality_study.sh [--steps 1500] [--width 32] [--batch 64] [--seeds "0 1 2"]
#                              [--precisions "fp32 fp16 bf16"] [--backend cpu] [--out runs/study]
#                              [--model dcgan|resnet] [--eval-samples 1024]
#   (--model resnet trains with SNGAN's recipe: hinge, TTUR, n_dis 5, an EMA generator)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
steps=1500 width=32 batch=64 seeds="0 1 2" precisions="fp32 fp16 bf16" backend=cpu out="runs/study" model=dcgan eval_samples=1024
ampgan="$here/../build/cli/ampgan"
python=/usr/bin/python3
[[ -x $python ]] || python=python3
while (($#)); do
  case "$1" in
    --steps) steps=$2; shift 2 ;;
    --width) width=$2; shift 2 ;;
    --batch) batch=$2; shift 2 ;;
    --seeds) seeds=$2; shift 2 ;;
    --precisions) precisions=$2; shift 2 ;;
    --backend) backend=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --model) model=$2; shift 2 ;;
    --eval-samples) eval_samples=$2; shift 2 ;;
    --ampgan) ampgan=$2; shift 2 ;;
    *) echo "amp_quality_study.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
mkdir -p "$out"
every=$((steps / 3))
for s in $seeds; do
  for p in $precisions; do
    dir="$out/$p-seed$s"
    if [[ -f $dir/checkpoints/$(printf 'step_%06d.safetensors' "$steps") ]]; then
      echo "study: $dir done already"
      continue
    fi
    rm -rf "$dir"
    echo "study: training $dir"
    "$ampgan" train --dataset fashion-mnist --model "$model" --eval-samples "$eval_samples" --precision "$p" --seed "$s" --steps "$steps" --width "$width" \
      --batch "$batch" --backend "$backend" --eval-every "$every" --sample-every "$every" --checkpoint-every 0 \
      --out "$dir" --quiet
  done
done

"$python" - "$out" "$steps" "$width" "$batch" "$seeds" "$precisions" "$model" "$eval_samples" <<'PY' | tee "$out/summary.md"
import csv, json, os, statistics, sys
out, steps, width, batch, seeds, precisions, model, eval_samples = sys.argv[1:]
rows = []
for p in precisions.split():
    per = []
    for s in seeds.split():
        d = os.path.join(out, f"{p}-seed{s}")
        m = list(csv.DictReader(open(os.path.join(d, "metrics.csv"))))
        ev = [r for r in m if r["swd"]]
        last = ev[-1]
        ips = statistics.median(float(r["images_per_s"]) for r in m[len(m) // 10:])
        skips = sum(int(r["skipped_d"]) + int(r["skipped_g"]) for r in m)
        # The last evaluation's diversity (samples' mean pairwise distance over the real images'),
        # from events.jsonl; runs of builds before it was measured have none.
        div = float("nan")
        for line in open(os.path.join(d, "events.jsonl")):
            e = json.loads(line)
            if e.get("type") == "eval" and "diversity" in e:
                div = e["diversity"]
        per.append(dict(seed=s, swd=float(last["swd"]), fd=float(last["fd"]), ips=ips, skips=skips, div=div,
                        scale=float(m[-1]["scale_d"]), loss_g=statistics.mean(float(r["loss_g"]) for r in m[-100:])))
    rows.append((p, per))
print(f"Fashion-MNIST, {'ResNet' if model == 'resnet' else 'DCGAN'}-32 width {width}, batch {batch}, {steps} steps, "
      f"seeds {seeds}; metrics at step {steps} on {eval_samples} samples (lower is better)\n")
print("| precision | seed | SWD x1e3 | FD | diversity | G loss (last 100) | images/s | skipped steps (D+G) | final D scale |")
print("|---|---|---|---|---|---|---|---|---|")
for p, per in rows:
    for r in per:
        print(f"| {p} | {r['seed']} | {r['swd']:.1f} | {r['fd']:.2f} | {r['div']:.3f} | {r['loss_g']:.3f} | {r['ips']:.0f} | {r['skips']} | {r['scale']:g} |")
print("\n| precision | SWD mean +- sd | FD mean +- sd | images/s (median of runs) | skipped steps (mean) |")
print("|---|---|---|---|---|")
def ms(v):
    return f"{statistics.mean(v):.2f} +- {statistics.stdev(v):.2f}" if len(v) > 1 else f"{v[0]:.2f}"
for p, per in rows:
    print(f"| {p} | {ms([r['swd'] for r in per])} | {ms([r['fd'] for r in per])} | "
          f"{statistics.median(r['ips'] for r in per):.0f} | {statistics.mean(r['skips'] for r in per):.1f} |")
PY
