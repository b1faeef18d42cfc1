#!/usr/bin/env python3
"""The ResNet GAN (SNGAN/BigGAN-style, unconditional) in PyTorch: the peer of `ampgan --model resnet`.

Exactly core/models/resnet.h's networks, in PyTorch's NCHW, with the same state_dict names as
`ampgan export-generator` writes for a ResNet run. Trained on random data of the right shape, so
only the training step is timed; prints one JSON line with the median step time and images/s.

  python3 pytorch_resnet.py --res 32 --nc 3 --width 16 --batch 32 --steps 10 --device cpu
  python3 pytorch_resnet.py --res 64 --nc 3 --width 64 --batch 64 --device cuda --amp fp16

Width W, latent 128, every conv and linear with a bias:
  G: Linear(128 -> 16*c0), viewed as (c0, 4, 4); up-blocks [BN, ReLU, nearest-up x2, conv3x3, BN,
     ReLU, conv3x3; shortcut nearest-up x2, conv1x1]; BN, ReLU, conv3x3 -> nc, Tanh.
     Class-conditional (generator(..., classes=K), not timed here): the up-blocks' BNs scale
     by 1 + Embedding(K, c)(y) and shift by Embedding(K, c)(y) after their own affine.
  D: blocks [ReLU (not in the first), conv3x3, ReLU, conv3x3, avg-pool /2 when down; shortcut
     conv1x1 then avg-pool when channels change or down, else identity]; ReLU, sum over H and W,
     Linear(c -> 1). Spectral norm on every D weight, one power iteration per D step (D runs in
     train mode for its first forward of a step and in eval mode, with u and v held, after it).
  Channel plans: res 32: G c0 4W, 3 blocks 4W -> 4W; D 2W: nc -> 2W down, 2W down, 2W, 2W.
                 res 64/128: G c0 16W, blocks out 16W, 8W, 4W, 2W (, W at 128);
                 D out W, 2W, 4W, 8W (, 16W at 128) down, then 16W not down.
  Hinge loss, Adam betas (0, 0.999), lr G 1e-4 and D 4e-4 (TTUR), n_dis D steps per G step (1
  here by default, as `ampgan bench` times one D and one G update).
"""
import argparse, json

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils import spectral_norm

from pytorch_dcgan import median_step_seconds  # the same timing as the DCGAN peer

NZ = 128


def g_plan(res, width):
    if res == 32:
        return 4 * width, [4 * width] * 3
    outs = [16 * width, 8 * width, 4 * width, 2 * width] + ([width] if res == 128 else [])
    return 16 * width, outs


def d_plan(res, nc, width):
    w = width
    if res == 32:
        return [(nc, 2 * w, True), (2 * w, 2 * w, True), (2 * w, 2 * w, False), (2 * w, 2 * w, False)]
    b = [(nc, w, True), (w, 2 * w, True), (2 * w, 4 * w, True), (4 * w, 8 * w, True)]
    if res == 128:
        b.append((8 * w, 16 * w, True))
    b.append((16 * w if res == 128 else 8 * w, 16 * w, False))
    return b


class ConditionalBatchNorm2d(nn.BatchNorm2d):
    """Batch norm (with its own affine), then each sample's channels scaled by 1 + gain[y] and
    shifted by bias[y] (core/nn/conditional_batchnorm2d.h). A BatchNorm2d itself, so that its
    parameters and statistics keep the plain batch norm's names beside embed_gain / embed_bias."""

    def __init__(self, channels, classes):
        super().__init__(channels)
        self.embed_gain = nn.Embedding(classes, channels)
        self.embed_bias = nn.Embedding(classes, channels)
        nn.init.zeros_(self.embed_gain.weight)  # starts as the unconditional batch norm
        nn.init.zeros_(self.embed_bias.weight)

    def forward(self, x, y):
        h = super().forward(x)
        return h * (1 + self.embed_gain(y))[:, :, None, None] + self.embed_bias(y)[:, :, None, None]


class UpBlock(nn.Module):
    def __init__(self, cin, cout, classes=0):
        super().__init__()
        self.bn1 = ConditionalBatchNorm2d(cin, classes) if classes > 0 else nn.BatchNorm2d(cin)
        self.conv1 = nn.Conv2d(cin, cout, 3, 1, 1)
        self.bn2 = ConditionalBatchNorm2d(cout, classes) if classes > 0 else nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1)
        self.shortcut = nn.Conv2d(cin, cout, 1, 1, 0)

    def forward(self, x, y=None):
        def bn(m, t):
            return m(t) if y is None else m(t, y)

        h = F.interpolate(F.relu(bn(self.bn1, x)), scale_factor=2, mode="nearest")
        h = self.conv2(F.relu(bn(self.bn2, self.conv1(h))))
        return h + self.shortcut(F.interpolate(x, scale_factor=2, mode="nearest"))


class Generator(nn.Module):
    """classes > 0: the class-conditional generator, forward(z, y) with the classes y (LongTensor,
    shape (n,)); the up-blocks' batch norms are conditional, the last one stays plain."""

    def __init__(self, res, nc, width, nz=NZ, classes=0):
        super().__init__()
        self.c0, outs = g_plan(res, width)
        self.linear = nn.Linear(nz, 16 * self.c0)
        blocks, cin = [], self.c0
        for o in outs:
            blocks.append(UpBlock(cin, o, classes))
            cin = o
        self.blocks = nn.ModuleList(blocks)
        self.bn = nn.BatchNorm2d(cin)
        self.conv_out = nn.Conv2d(cin, nc, 3, 1, 1)

    def forward(self, z, y=None):
        x = self.linear(z.flatten(1)).view(z.shape[0], self.c0, 4, 4)
        for b in self.blocks:
            x = b(x, y)
        return torch.tanh(self.conv_out(F.relu(self.bn(x))))


class DownBlock(nn.Module):
    def __init__(self, cin, cout, down, first):
        super().__init__()
        self.first, self.down = first, down
        self.conv1 = spectral_norm(nn.Conv2d(cin, cout, 3, 1, 1))
        self.conv2 = spectral_norm(nn.Conv2d(cout, cout, 3, 1, 1))
        self.shortcut = spectral_norm(nn.Conv2d(cin, cout, 1, 1, 0)) if cin != cout or down else None

    def forward(self, x):
        h = x if self.first else F.relu(x)
        h = self.conv2(F.relu(self.conv1(h)))
        if self.down:
            h = F.avg_pool2d(h, 2)
        s = x
        if self.shortcut is not None:
            s = self.shortcut(x)
            if self.down:
                s = F.avg_pool2d(s, 2)
        return h + s


class Discriminator(nn.Module):
    def __init__(self, res, nc, width):
        super().__init__()
        plan = d_plan(res, nc, width)
        self.blocks = nn.ModuleList([DownBlock(i, o, d, k == 0) for k, (i, o, d) in enumerate(plan)])
        self.linear = spectral_norm(nn.Linear(plan[-1][1], 1))

    def forward(self, x):
        for b in self.blocks:
            x = b(x)
        return self.linear(F.relu(x).sum(dim=(2, 3)))


def generator(res, nc, width, classes=0):
    return Generator(res, nc, width, classes=classes)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--res", type=int, default=32)
    ap.add_argument("--nc", type=int, default=3)
    ap.add_argument("--width", type=int, default=64)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--n-dis", type=int, default=1)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--amp", choices=["off", "fp16", "bf16"], default="off")
    ap.add_argument("--threads", type=int, default=0)
    a = ap.parse_args()

    torch.manual_seed(0)
    if a.threads:
        torch.set_num_threads(a.threads)
    dev = torch.device(a.device)
    if dev.type == "cuda":
        torch.backends.cudnn.benchmark = True
    G, D = Generator(a.res, a.nc, a.width).to(dev), Discriminator(a.res, a.nc, a.width).to(dev)
    optG = torch.optim.Adam(G.parameters(), lr=1e-4, betas=(0.0, 0.999))
    optD = torch.optim.Adam(D.parameters(), lr=4e-4, betas=(0.0, 0.999))
    dtype = {"off": None, "fp16": torch.float16, "bf16": torch.bfloat16}[a.amp]
    scaler = None
    if dev.type == "cuda":
        scaler = torch.cuda.amp.GradScaler(enabled=a.amp == "fp16")
    real = torch.rand(a.batch, a.nc, a.res, a.res, device=dev).mul_(2).sub_(1)

    def autocast():
        if dtype is None:
            return torch.autocast(dev.type, enabled=False)
        return torch.autocast(dev.type, dtype=dtype)

    def backward_step(loss, opt):
        opt.zero_grad(set_to_none=True)
        if scaler is not None:
            scaler.scale(loss).backward(); scaler.step(opt); scaler.update()
        else:
            loss.backward(); opt.step()

    def step():
        for k in range(a.n_dis):
            z = torch.randn(a.batch, NZ, device=dev)
            with autocast():
                fake = G(z)
                D.train()  # one power iteration per D step
                d_real = D(real)
                D.eval()
                loss_d = F.relu(1 - d_real).mean() + F.relu(1 + D(fake.detach())).mean()
            backward_step(loss_d, optD)
        # The same work as ampgan's G step: gradients flow through D to G, but D's own weight
        # gradients, which the G step never uses, are not computed.
        D.requires_grad_(False)
        with autocast():
            loss_g = -D(fake).mean()
        backward_step(loss_g, optG)
        D.requires_grad_(True)
        return loss_d, loss_g

    med, (ld, lg) = median_step_seconds(step, a.warmup, a.steps, dev)
    out = dict(peer="pytorch", model="resnet", torch=torch.__version__, device=str(dev), amp=a.amp, res=a.res,
               nc=a.nc, width=a.width, batch=a.batch, steps=a.steps, n_dis=a.n_dis, sync_each_step=True,
               threads=torch.get_num_threads(), step_ms_median=round(med * 1e3, 3),
               images_per_s=round(a.batch / med, 1), loss_d=float(ld), loss_g=float(lg),
               params_g=sum(p.numel() for p in G.parameters()),
               params_d=sum(p.numel() for n, p in D.named_parameters()))
    if dev.type == "cuda":
        out["peak_mem_mb"] = round(torch.cuda.max_memory_allocated() / 2**20, 1)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
