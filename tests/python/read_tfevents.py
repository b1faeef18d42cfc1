#!/usr/bin/python3
"""An independent reader of a run folder's TensorBoard event files, for tests/test_interop.cpp.

  read_tfevents.py PROTO RUN_DIR

Decodes every events.out.tfevents.* file of RUN_DIR with protobuf's own Python runtime on the
schema PROTO (compiled here by protoc into a temporary folder), checks each record's two
CRC-32Cs with python3-crc32c (not with our C++ code), and compares what it finds with the run's
own files: the scalars with metrics.csv (every row, every column, each step once across all
files), the images with samples/*.png (byte for byte), the histograms with histograms.csv, the
precision notes with events.jsonl. Prints one JSON summary line and exits 0, or prints what
differs and exits 1. Needs Debian's python3-protobuf, python3-crc32c and protobuf-compiler.
"""
import csv
import glob
import importlib
import json
import math
import os
import struct
import subprocess
import sys
import tempfile

import crc32c

# metrics.csv column -> TensorBoard tag (README, "Your runs in TensorBoard").
TAGS = {
    "loss_d": "loss/D", "loss_g": "loss/G", "d_real": "D(x)", "d_fake": "D(G(z))",
    "grad_norm_d": "grad_norm/D", "grad_norm_g": "grad_norm/G", "scale_d": "loss_scale/D",
    "scale_g": "loss_scale/G", "skipped_d": "skipped/D", "skipped_g": "skipped/G",
    "underflow_d": "underflow/D", "underflow_g": "underflow/G", "images_per_s": "throughput/img_per_s",
    "step_ms": "time/step_ms", "memory_mb": "memory/backend_MB", "swd": "quality/SWD", "fd": "quality/FD",
}
PRECISION = {"fp32": 0, "tf32": 1, "fp16": 2, "bf16": 3}
HIST_MIN_EXP, HIST_MAX_EXP = -64, 31

problems = []


def fail(msg):
    problems.append(msg)


def masked(data):
    c = crc32c.crc32c(data)
    return ((((c >> 15) | (c << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


def records(path):
    data = open(path, "rb").read()
    pos, out = 0, []
    while pos < len(data):
        if len(data) - pos < 12:
            fail(f"{path}: {len(data) - pos} bytes after the last whole record")
            break
        (length,) = struct.unpack_from("<Q", data, pos)
        (lcrc,) = struct.unpack_from("<I", data, pos + 8)
        if lcrc != masked(data[pos:pos + 8]):
            fail(f"{path}: length CRC wrong at byte {pos}")
            break
        if pos + 12 + length + 4 > len(data):
            fail(f"{path}: record at byte {pos} is cut off")
            break
        body = data[pos + 12:pos + 12 + length]
        (dcrc,) = struct.unpack_from("<I", data, pos + 12 + length)
        if dcrc != masked(body):
            fail(f"{path}: data CRC wrong at byte {pos}")
            break
        out.append(body)
        pos += 12 + length + 4
    return out


def load_schema(proto):
    tmp = tempfile.mkdtemp(prefix="tfevents-py-")
    d, name = os.path.split(os.path.abspath(proto))
    subprocess.run(["protoc", "-I", d, "--python_out", tmp, os.path.join(d, name)], check=True)
    sys.path.insert(0, tmp)
    return importlib.import_module(name[:-len(".proto")] + "_pb2")


def close(a, b):
    return abs(a - b) <= 1e-6 * abs(b) + 1e-30  # simple_value is a float32 of the CSV's double


def main():
    proto, run = sys.argv[1], sys.argv[2]
    pb = load_schema(proto)
    files = sorted(glob.glob(os.path.join(run, "events.out.tfevents.*")))
    if not files:
        fail("no events.out.tfevents.* file in " + run)
    scalars, images, hists, notes = {}, {}, {}, []
    n_records = 0
    for f in files:
        recs = records(f)
        n_records += len(recs)
        for i, r in enumerate(recs):
            e = pb.Event()
            e.ParseFromString(r)
            if i == 0:
                if e.file_version != "brain.Event:2":
                    fail(f"{f}: first record is not the file_version event")
                continue
            for v in e.summary.value:
                key = (v.tag, e.step)
                kind = v.WhichOneof("value")
                if kind == "simple_value":
                    if key in scalars:
                        fail(f"scalar {v.tag} at step {e.step} written twice")
                    scalars[key] = v.simple_value
                elif kind == "image":
                    if key in images:
                        fail(f"image at step {e.step} written twice")
                    images[key] = v.image
                elif kind == "histo":
                    if key in hists:
                        fail(f"histogram {v.tag} at step {e.step} written twice")
                    hists[key] = v.histo
                elif kind == "tensor":
                    if v.metadata.plugin_data.plugin_name != "text" or v.tensor.dtype != 7:
                        fail(f"tensor {v.tag} is not a text summary")
                    notes.append((e.step, v.tensor.string_val[0].decode()))

    rows = list(csv.DictReader(open(os.path.join(run, "metrics.csv"))))
    steps = set()
    for row in rows:
        s = int(row["step"])
        steps.add(s)
        for col, tag in TAGS.items():
            if row[col] == "":
                if (tag, s) in scalars:
                    fail(f"{tag} at step {s} but metrics.csv's cell is empty")
                continue
            got = scalars.get((tag, s))
            if got is None:
                fail(f"no {tag} at step {s}")
            elif not close(got, float(row[col])):
                fail(f"{tag} at step {s}: {got} in the event file, {row[col]} in metrics.csv")
        if scalars.get(("precision", s)) != PRECISION[row["precision"]]:
            fail(f"precision at step {s}: {scalars.get(('precision', s))}, metrics.csv {row['precision']}")
    extra = {s for (_, s) in scalars} - steps
    if extra:
        fail(f"scalars at steps metrics.csv does not have: {sorted(extra)[:10]}")

    # A grid past metrics.csv's last step is from a history a resume from an older checkpoint
    # set aside (samples/ keeps it until that step is trained again): not part of this run.
    pngs = sorted(p for p in glob.glob(os.path.join(run, "samples", "step_*.png"))
                  if int(os.path.basename(p)[5:-4]) <= max(steps, default=0))
    for p in pngs:
        s = int(os.path.basename(p)[5:-4])
        im = images.get(("samples", s))
        data = open(p, "rb").read()
        if im is None:
            fail(f"no image for {p}")
            continue
        w, h = struct.unpack(">II", data[16:24])  # the PNG's IHDR
        if im.encoded_image_string != data or im.width != w or im.height != h:
            fail(f"image at step {s} differs from {p}")
    if len(images) != len(pngs):
        fail(f"{len(images)} images in the event files, {len(pngs)} sample grids")

    hist_path = os.path.join(run, "histograms.csv")
    n_hist = 0
    if os.path.exists(hist_path):
        for row in csv.DictReader(open(hist_path)):
            n_hist += 1
            s, net = int(row["step"]), row["network"]
            h = hists.get(("grad_exponent/" + net, s))
            if h is None:
                fail(f"no histogram of {net} at step {s}")
                continue
            want = [float(row["zero"])] + [float(row[f"e{e}"]) for e in range(HIST_MIN_EXP, HIST_MAX_EXP + 1)] \
                + [float(row["nonfinite"])]
            limits = [HIST_MIN_EXP] + [e + 1 for e in range(HIST_MIN_EXP, HIST_MAX_EXP + 1)] + [HIST_MAX_EXP + 2]
            if list(h.bucket) != want or list(h.bucket_limit) != limits or h.num != sum(want):
                fail(f"histogram of {net} at step {s} differs from histograms.csv")
    if len(hists) != n_hist:
        fail(f"{len(hists)} histograms in the event files, {n_hist} rows in histograms.csv")

    switches = [json.loads(line) for line in open(os.path.join(run, "events.jsonl"))]
    switches = [(e["step"], e["message"]) for e in switches if e.get("type") == "precision_switch"]
    if sorted(notes) != sorted(switches):
        fail(f"precision notes {notes} but events.jsonl has {switches}")

    if problems:
        for p in problems[:20]:
            print("MISMATCH", p)
        return 1
    print("OK " + json.dumps({"files": len(files), "records": n_records, "scalar_steps": len(steps),
                              "first_step": min(steps), "last_step": max(steps), "images": len(images),
                              "histograms": len(hists), "notes": len(notes)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
