#!/usr/bin/env python3
"""gen_torch_layers.py: golden data for tests/test_layers.c, from PyTorch.

Run from the repository root:  python3 tests/gen/gen_torch_layers.py
Needs torch, numpy, ml_dtypes. Writes tests/goldens/torch_layers_<group>.bin
in the format of tests/gen/gen_ops.py (its writer is reused; see the top of
that script).

Group "layers": one case per layer configuration. The layer's weights are
fixed random arrays stored in the case (the C test loads them into the
layer's tensors, so tg's init randomness does not matter). Inputs:
  data[nx]   the forward's inputs (x; LSTMCell: x, h, c)
  w_up[nout] one random array per forward output
  params[np] the trainable parameters, in state-dict order
  bufs[nbuf] buffers loaded before the forward (BatchNorm running stats)
Outputs:
  fwd[nout]  forward outputs
  grads[np]  dL/dparam for L = sum_k sum(fwd[k] * w_up[k]) (torch.autograd)
  gx         dL/dx when gx=1
  bufs[nbuf] the buffers after the forward (BatchNorm running-stat updates)
Everything is computed in float64 from the float32 inputs and rounded once.
Layer configuration parameters are named as the constructor arguments.

Group "optim": a linear least-squares problem, loss = mean((X @ W + b - Y)^2),
inputs X, Y, W0, b0; outputs W, b after each of `steps` steps of the
optimizer (torch.optim, float64; LAMB has no torch version, so it is
tinygrad's formula written out here). Param lrs (when present): the lr
set before each step.

Group "sched": lrs of tg_lr_* against torch.optim.lr_scheduler, one output
array of the lr at steps 0..n-1.
"""
import math
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_ops import Group  # noqa: E402

torch.set_default_dtype(torch.float64)


class LGroup(Group):
    """gen_ops.Group writing tests/goldens/torch_layers_<name>.bin."""
    PREFIX = "torch_layers_"


def f32(t): return t.detach().numpy().astype(np.float32)


def layer_case(g, op, label, module, data, nout=1, bufs=(), gx=True, fwd=None, rtol=1e-5, atol=1e-5, **cfg):
    """module: a torch module in float64 whose parameters are set from random
    float32 arrays here; data: numpy inputs."""
    params = [p for _, p in module.named_parameters()]
    pvals = []
    with torch.no_grad():
        for p in params:
            v = g.randn(tuple(p.shape)) * 0.5
            pvals.append(v)
            p.copy_(torch.tensor(v.astype(np.float64)))
        bvals = []
        for name in bufs:
            b = getattr(module, name)
            v = (g.uniform(tuple(b.shape), 0.5, 1.5) if name == "running_var" else g.randn(tuple(b.shape)) * 0.3).astype(np.float32)
            bvals.append(v)
            b.copy_(torch.tensor(v.astype(np.float64)))
    ts = []
    for d in data:
        t = torch.tensor(d.astype(np.float64) if d.dtype.kind == "f" else d.astype(np.int64))
        ts.append(t)
    if gx: ts[0].requires_grad_(True)
    outs = fwd(module, *ts) if fwd else module(*ts)
    outs = list(outs) if isinstance(outs, (tuple, list)) else [outs]
    assert len(outs) == nout
    w_up = [g.randn(tuple(o.shape)) for o in outs]
    L = sum((o * torch.tensor(w.astype(np.float64))).sum() for o, w in zip(outs, w_up))
    L.backward()
    res = [f32(o) for o in outs] + [f32(p.grad) for p in params]
    if gx: res.append(f32(ts[0].grad))
    for name in bufs: res.append(f32(getattr(module, name)))
    g.add(op, label, list(data) + w_up + pvals + bvals, res, rtol=rtol, atol=atol,
          nx=len(data), nout=nout, np=len(params), nbuf=len(bufs), gx=int(gx), **cfg)


def gen_layers():
    g = LGroup("layers", 301)
    nn = torch.nn
    # Linear
    for bias in (1, 0):
        layer_case(g, "linear", "linear_5_3_bias%d" % bias, nn.Linear(5, 3, bias=bool(bias)), [g.randn((4, 5))],
                   in_features=5, out_features=3, bias=bias)
    layer_case(g, "linear", "linear_3d_input", nn.Linear(5, 2), [g.randn((2, 3, 5))], in_features=5, out_features=2, bias=1)
    # Conv1d
    layer_case(g, "conv1d", "conv1d_4_6_k3_s2_p1_g2", nn.Conv1d(4, 6, 3, stride=2, padding=1, groups=2), [g.randn((2, 4, 9))],
               in_channels=4, out_channels=6, kernel=[3], stride=[2], padding=[1], dilation=[1], groups=2, bias=1)
    layer_case(g, "conv1d", "conv1d_3_2_k2_d2_nobias", nn.Conv1d(3, 2, 2, dilation=2, bias=False), [g.randn((1, 3, 7))],
               in_channels=3, out_channels=2, kernel=[2], stride=[1], padding=[0], dilation=[2], groups=1, bias=0)
    # Conv2d
    layer_case(g, "conv2d", "conv2d_3_4_k3x2_p1", nn.Conv2d(3, 4, (3, 2), padding=1), [g.randn((2, 3, 6, 5))],
               in_channels=3, out_channels=4, kernel=[3, 2], stride=[1, 1], padding=[1, 1], dilation=[1, 1], groups=1, bias=1)
    layer_case(g, "conv2d", "conv2d_4_4_k3_s2_g2_nobias", nn.Conv2d(4, 4, 3, stride=2, groups=2, bias=False), [g.randn((2, 4, 7, 7))],
               in_channels=4, out_channels=4, kernel=[3, 3], stride=[2, 2], padding=[0, 0], dilation=[1, 1], groups=2, bias=0)
    # ConvTranspose2d
    layer_case(g, "conv_transpose2d", "convT2d_4_6_k3_s2_p1_op1_g2",
               nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2), [g.randn((2, 4, 4, 3))],
               in_channels=4, out_channels=6, kernel=[3, 3], stride=[2, 2], padding=[1, 1], output_padding=[1, 1],
               dilation=[1, 1], groups=2, bias=1)
    layer_case(g, "conv_transpose2d", "convT2d_2_3_k2x3_nobias", nn.ConvTranspose2d(2, 3, (2, 3), bias=False),
               [g.randn((1, 2, 3, 4))], in_channels=2, out_channels=3, kernel=[2, 3], stride=[1, 1], padding=[0, 0],
               output_padding=[0, 0], dilation=[1, 1], groups=1, bias=0)
    # BatchNorm: train (batch stats, running-stat update) and eval
    for shape, tag in (((4, 3, 5, 5), "2d"), ((8, 3), "1d")):
        for train in (1, 0):
            m = nn.BatchNorm2d(3) if tag == "2d" else nn.BatchNorm1d(3)
            m.train(bool(train))
            layer_case(g, "batchnorm", "batchnorm%s_%s" % (tag, "train" if train else "eval"), m,
                       [g.randn(shape) * 2 + 0.5], bufs=("running_mean", "running_var"),
                       num_features=3, eps=1e-5, momentum=0.1, train=train, rtol=1e-4, atol=1e-4)
    m = nn.BatchNorm2d(3, momentum=0.3, eps=1e-3)
    layer_case(g, "batchnorm", "batchnorm2d_train_momentum0.3_eps1e-3", m, [g.randn((2, 3, 4, 4))],
               bufs=("running_mean", "running_var"), num_features=3, eps=1e-3, momentum=0.3, train=1, rtol=1e-4, atol=1e-4)
    # LayerNorm
    layer_case(g, "layernorm", "layernorm_4", nn.LayerNorm(4), [g.randn((3, 4))], normalized_shape=[4], eps=1e-5,
               rtol=1e-4, atol=1e-4)
    layer_case(g, "layernorm", "layernorm_3x4", nn.LayerNorm((3, 4), eps=1e-3), [g.randn((2, 3, 4))], normalized_shape=[3, 4],
               eps=1e-3, rtol=1e-4, atol=1e-4)
    # RMSNorm
    layer_case(g, "rmsnorm", "rmsnorm_6", nn.RMSNorm(6, eps=1e-6), [g.randn((2, 3, 6))], dim=6, eps=1e-6, rtol=1e-4, atol=1e-4)
    # GroupNorm / InstanceNorm
    layer_case(g, "groupnorm", "groupnorm_2_6", nn.GroupNorm(2, 6), [g.randn((2, 6, 4, 3))], num_groups=2, num_channels=6,
               eps=1e-5, rtol=1e-4, atol=1e-4)
    layer_case(g, "groupnorm", "groupnorm_3_3_1d", nn.GroupNorm(3, 3, eps=1e-3), [g.randn((4, 3, 5))], num_groups=3,
               num_channels=3, eps=1e-3, rtol=1e-4, atol=1e-4)
    layer_case(g, "instancenorm", "instancenorm2d_3_affine", nn.InstanceNorm2d(3, affine=True), [g.randn((2, 3, 4, 5))],
               num_features=3, eps=1e-5, rtol=1e-4, atol=1e-4)
    # Embedding
    idx = g.ints((2, 5), 0, 9, np.int32)
    idx[0, 0] = idx[1, 3]   # a repeated index: its gradient rows add up
    layer_case(g, "embedding", "embedding_10_4", nn.Embedding(10, 4), [idx], gx=False, vocab_size=10, dim=4)
    # LSTMCell
    def lstm_fwd(m, x, h, c): return m(x, (h, c))
    layer_case(g, "lstmcell", "lstmcell_5_3", nn.LSTMCell(5, 3), [g.randn((4, 5)), g.randn((4, 3)), g.randn((4, 3))], nout=2,
               fwd=lstm_fwd, input_size=5, hidden_size=3, bias=1, rtol=1e-4, atol=1e-5)
    layer_case(g, "lstmcell", "lstmcell_2_4_nostate_nobias", nn.LSTMCell(2, 4, bias=False), [g.randn((3, 2))], nout=2,
               input_size=2, hidden_size=4, bias=0, rtol=1e-4, atol=1e-5)
    return g


def lamb_ref(params, grads_fn, steps, lr, b1, b2, eps, wd, adam=False):
    """tinygrad's LAMB (nn/optim.py) in float64."""
    m = [torch.zeros_like(p) for p in params]
    v = [torch.zeros_like(p) for p in params]
    b1t = b2t = 1.0
    hist = []
    for _ in range(steps):
        gs = grads_fn(params)
        b1t *= b1
        b2t *= b2
        new = []
        for i, (p, gr) in enumerate(zip(params, gs)):
            m[i] = b1 * m[i] + (1 - b1) * gr
            v[i] = b2 * v[i] + (1 - b2) * gr * gr
            up = (m[i] / (1 - b1t)) / ((v[i] / (1 - b2t)).sqrt() + eps) + wd * p
            r = 1.0
            if not adam:
                r1, r2 = p.square().sum().sqrt(), up.square().sum().sqrt()
                r = float(r1 / r2) if r1 > 0 and r2 > 0 else 1.0
            new.append(p - lr * r * up)
        params = new
        hist += [q.clone() for q in params]
    return hist


def gen_optim():
    g = LGroup("optim", 302)
    X, Y = g.randn((8, 3)), g.randn((8, 4))
    W0, b0 = g.randn((3, 4)), g.randn((4,))
    Xt, Yt = torch.tensor(X.astype(np.float64)), torch.tensor(Y.astype(np.float64))

    def loss(W, b): return ((Xt @ W + b - Yt) ** 2).mean()

    def run_torch(make, steps, lrs=None):
        W = torch.tensor(W0.astype(np.float64), requires_grad=True)
        b = torch.tensor(b0.astype(np.float64), requires_grad=True)
        opt = make([W, b])
        hist = []
        for s in range(steps):
            if lrs is not None:
                for pg in opt.param_groups: pg["lr"] = lrs[s]
            opt.zero_grad()
            loss(W, b).backward()
            opt.step()
            hist += [W.detach().clone(), b.detach().clone()]
        return hist

    def add(label, hist, steps, rtol=1e-4, atol=1e-5, **p):
        g.add("optim", label, [X, Y, W0, b0], [f32(h) for h in hist], rtol=rtol, atol=atol, steps=steps, **p)

    S = 5
    O = torch.optim
    for lr, mom, wd, nest in ((0.1, 0.0, 0.0, 0), (0.05, 0.9, 0.0, 0), (0.05, 0.9, 0.01, 1), (0.1, 0.5, 0.1, 0)):
        add("sgd_lr%g_m%g_wd%g_n%d" % (lr, mom, wd, nest),
            run_torch(lambda ps: O.SGD(ps, lr=lr, momentum=mom, weight_decay=wd, nesterov=bool(nest)), S), S,
            kind=0, lr=lr, momentum=mom, weight_decay=wd, nesterov=nest)
    for lr, b1, b2, eps in ((0.01, 0.9, 0.999, 1e-8), (0.05, 0.8, 0.99, 1e-6)):
        add("adam_lr%g_b%g_%g" % (lr, b1, b2), run_torch(lambda ps: O.Adam(ps, lr=lr, betas=(b1, b2), eps=eps), S), S,
            kind=1, lr=lr, b1=b1, b2=b2, eps=eps)
    for lr, wd in ((0.01, 0.01), (0.05, 0.1)):
        add("adamw_lr%g_wd%g" % (lr, wd), run_torch(lambda ps: O.AdamW(ps, lr=lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=wd), S),
            S, kind=2, lr=lr, b1=0.9, b2=0.999, eps=1e-8, weight_decay=wd)

    def grads_fn(ps):
        q = [p.clone().requires_grad_(True) for p in ps]
        loss(*q).backward()
        return [p.grad for p in q]
    for lr, wd in ((0.01, 0.0), (0.02, 0.01)):
        P = [torch.tensor(W0.astype(np.float64)), torch.tensor(b0.astype(np.float64))]
        add("lamb_lr%g_wd%g" % (lr, wd), lamb_ref(P, grads_fn, S, lr, 0.9, 0.999, 1e-6, wd), S,
            kind=3, lr=lr, b1=0.9, b2=0.999, eps=1e-6, weight_decay=wd)
    # lr changed before each step (a schedule): Adam and SGD with momentum
    lrs = [0.05 * 0.5 ** (s // 2) for s in range(6)]
    add("adam_with_step_schedule", run_torch(lambda ps: O.Adam(ps, lr=lrs[0]), 6, lrs), 6,
        kind=1, lr=lrs[0], b1=0.9, b2=0.999, eps=1e-8, lrs=lrs)
    add("sgd_momentum_with_step_schedule", run_torch(lambda ps: O.SGD(ps, lr=lrs[0], momentum=0.9), 6, lrs), 6,
        kind=0, lr=lrs[0], momentum=0.9, weight_decay=0.0, nesterov=0, lrs=lrs)
    return g


def gen_sched():
    g = LGroup("sched", 303)
    S = torch.optim.lr_scheduler

    def lrs_of(make, n, base):
        p = torch.zeros(1, requires_grad=True)
        opt = torch.optim.SGD([p], lr=base)
        sch = make(opt)
        out = []
        for _ in range(n):
            out.append(opt.param_groups[0]["lr"])
            opt.step()
            sch.step()
        return np.array(out, np.float64)

    g.add("step", "steplr_base0.1_size3_gamma0.5", [], lrs_of(lambda o: S.StepLR(o, 3, 0.5), 10, 0.1), rtol=1e-12, atol=1e-15,
          base=0.1, step_size=3, gamma=0.5, n=10)
    g.add("cosine", "cosine_base0.1_tmax8_min0.001", [], lrs_of(lambda o: S.CosineAnnealingLR(o, 8, 0.001), 9, 0.1),
          rtol=1e-9, atol=1e-12, base=0.1, t_max=8, eta_min=0.001, n=9)
    g.add("one_cycle", "onecycle_max0.1_total20", [], lrs_of(lambda o: S.OneCycleLR(o, 0.1, total_steps=20), 20, 0.1),
          rtol=1e-9, atol=1e-12, max_lr=0.1, total_steps=20, pct_start=0.3, div_factor=25.0, final_div_factor=1e4, n=20)
    g.add("one_cycle", "onecycle_max1_total13_pct0.25_div10_final100", [],
          lrs_of(lambda o: S.OneCycleLR(o, 1.0, total_steps=13, pct_start=0.25, div_factor=10, final_div_factor=100), 13, 1.0),
          rtol=1e-9, atol=1e-12, max_lr=1.0, total_steps=13, pct_start=0.25, div_factor=10.0, final_div_factor=100.0, n=13)
    return g


def main():
    for fn in (gen_layers, gen_optim, gen_sched):
        path, n, size = fn().write()
        print("%s: %d cases, %d bytes" % (os.path.relpath(path), n, size))


if __name__ == "__main__":
    main()
