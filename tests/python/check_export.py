#!/usr/bin/env python3
"""Loads a generator exported by `ampgan export-generator` into the PyTorch peer's generator
(bench/peers/pytorch_dcgan.py, or pytorch_resnet.py for a resnet run) with a strict load_state_dict, runs it on given latents with batch
statistics (train mode, as `ampgan sample` does) and writes the images as raw NHWC float32.
A class-conditional generator (metadata "classes") also takes each image's class, a list such
as 0,2,1,... of N classes.

  check_export.py GEN.safetensors LATENTS.f32 N OUT.f32 [CLASSES]

The safetensors format is read with json + struct here because the `safetensors` package is not
in Debian; users with it installed can simply call safetensors.torch.load_file.
"""
import json
import os
import struct
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench", "peers"))
import pytorch_dcgan  # noqa: E402
import pytorch_resnet  # noqa: E402


def load_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    meta = header.pop("__metadata__", {})
    dtypes = {"F32": torch.float32, "I64": torch.int64}
    tensors = {}
    for name, t in header.items():
        begin, end = t["data_offsets"]
        raw = bytearray(data[8 + n + begin:8 + n + end])
        tensors[name] = torch.frombuffer(raw, dtype=dtypes[t["dtype"]]).reshape(t["shape"])
    return tensors, meta


def main():
    path, latents, n, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    state, meta = load_safetensors(path)
    peer = pytorch_resnet if meta.get("model") == "resnet" else pytorch_dcgan
    classes = int(meta.get("classes", "0"))
    g = peer.generator(int(meta["res"]), int(meta["nc"]), int(meta["width"]), classes=classes)
    g.load_state_dict(state)  # strict: every name and shape must match
    with open(latents, "rb") as f:
        z = torch.frombuffer(bytearray(f.read()), dtype=torch.float32).reshape(n, int(meta["latent"]), 1, 1)
    g.train()
    with torch.no_grad():
        if classes > 0:
            labels = torch.tensor([int(c) for c in sys.argv[5].split(",")], dtype=torch.long)
            assert labels.shape == (n,) and 0 <= labels.min() and labels.max() < classes, sys.argv[5]
            x = g(z, labels)
        else:
            x = g(z)
    x.permute(0, 2, 3, 1).contiguous().numpy().tofile(out)


if __name__ == "__main__":
    main()
