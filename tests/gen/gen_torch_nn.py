#!/usr/bin/env python3
"""gen_torch_nn.py: golden data for tests/test_nn.c, from PyTorch.

Run from the repository root:  python3 tests/gen/gen_torch_nn.py
Needs torch (PyPI), numpy, ml_dtypes. Writes tests/goldens/torch_nn_<group>.bin
in the format of tests/gen/gen_ops.py (its writer is reused; see the top of
that script): every case has an op name, a unique label, rtol/atol, int or
float parameters, input arrays and expected output arrays.

Every expected value comes from torch.nn.functional, computed in float64 from
the float32 inputs and rounded once to the result dtype, never from tg.

Parameter conventions (read by tests/test_nn.c):
  conv1d/2d/3d: stride[n], padding[2n] (before, after per spatial axis in
    axis order; negative crops), dilation[n], groups, bias (0/1); inputs x, w
    (, b). torch's conv takes symmetric padding only, so the reference pads
    (or crops) with F.pad first and convolves with padding 0.
  conv_transpose1d/2d/3d: stride, padding, output_padding, dilation (n each),
    groups, bias.
  avg_pool2d / max_pool2d: kernel[2], stride[2] (0: kernel), padding[2],
    dilation[2], ceil_mode, exclude_pad (count_include_pad=False), indices
    (max pool: a second output with the int32 flat indices; torch gives
    int64, tg int32 like tinygrad).
  max_unpool2d: inputs x, indices; kernel, stride, padding, output_size.
  interpolate: size[n], mode (0 nearest, 1 nearest-exact, 2 linear,
    3 bilinear), align_corners.
  einsum: eq = the subscripts as character codes; inputs are the operands.
  linear: inputs x, w (, b).  layernorm: normalized_shape, eps, weight, bias
    (0/1: present as the next inputs).  batchnorm: stats (mean, var inputs
    follow x), weight, bias, eps.  softmin: axis.
  sdpa: is_causal, scale (0: default), enable_gqa, mask (0 none, 1 bool,
    2 float: the 4th input).  dropout: p, training (only the identity cases
    are comparable with torch; the random ones are property tests in C).
  losses (cross_entropy, nll_loss, sparse_categorical_crossentropy,
    binary_crossentropy, binary_crossentropy_logits): reduction (0 mean,
    1 sum, 2 none), ignore_index (when present), label_smoothing, weight /
    pos_weight (0/1: present as the next inputs, in that order).
Backward cases (group "backward") have param backward=1 and grads = the
indices of the inputs that get gradients; their inputs are the op's inputs
followed by w_up, a random array of the output's shape, and their outputs are
[forward output, dL/d input for each index in grads] for L = sum(out * w_up),
from torch.autograd in float64.

Tolerances. u = 2^-24 (float32 unit roundoff). A sum of K products computed
in float32 is within K*u*S of the exact value, S the sum of the absolute
terms. For multilinear ops (conv, conv_transpose, linear, einsum and their
gradients) S is computed exactly by running the same op on |inputs|, K is a
bound on the number of terms per output, and atol = 2*K*u*max(S) (rtol 1e-6).
Other ops (pools, norms, softmax-based, losses, interpolation) have O(1)
inputs and a few roundings per transcendental step (tg's exp/log go through
exp2/log2 with an extra rounding: ~1e-6 relative): rtol 1e-5, atol 1e-5
unless a case says otherwise.
"""
import math
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_ops import Group, OUT, F32E  # noqa: E402

torch.set_default_dtype(torch.float64)


class NNGroup(Group):
    """gen_ops.Group writing tests/goldens/torch_nn_<name>.bin."""
    PREFIX = "torch_nn_"


def T(a):
    """numpy -> torch float64 (ints stay int64)."""
    a = np.asarray(a)
    if a.dtype.kind == "f": return torch.tensor(a.astype(np.float64))
    if a.dtype.kind == "b": return torch.tensor(a)
    return torch.tensor(a.astype(np.int64))


def to_np(t, like=np.float32):
    t = t.detach()
    if t.dtype == torch.bool: return t.numpy()
    if t.dtype in (torch.int64, torch.int32): return t.numpy().astype(like if np.dtype(like).kind in "iu" else np.int64)
    return t.numpy().astype(like)


def multilinear_atol(fn, ins, K, grads=(), w_up=None):
    """2*K*u*max(S): S from fn on |inputs| (and |w_up| for gradients)."""
    a = [T(np.abs(x)) if np.asarray(x).dtype.kind == "f" else T(x) for x in ins]
    for i in grads: a[i].requires_grad_(True)
    out = fn(*a)
    s = float(out.detach().abs().max()) if out.numel() else 0.0
    if grads:
        (out * T(np.abs(w_up))).sum().backward()
        for i in grads: s = max(s, float(a[i].grad.abs().max()))
    return 2.0 * K * F32E * s + 1e-7


def add_fwd(g, op, label, ins, fn, rtol=1e-5, atol=1e-5, out_dtypes=None, **params):
    """Forward case: outputs fn(*inputs in float64), rounded to float32 (or
    out_dtypes[i])."""
    res = fn(*[T(x) for x in ins])
    res = res if isinstance(res, (tuple, list)) else [res]
    outs = []
    for i, r in enumerate(res):
        dt = out_dtypes[i] if out_dtypes else np.float32
        outs.append(to_np(r, dt))
    g.add(op, label, ins, outs, rtol=rtol, atol=atol, **params)


def add_bwd(g, op, label, ins, fn, grads, rtol=1e-5, atol=1e-5, **params):
    """Backward case: inputs + [w_up]; outputs [out, grads...] in float64
    autograd, rounded to float32."""
    ts = [T(x) for x in ins]
    for i in grads: ts[i].requires_grad_(True)
    out = fn(*ts)
    w_up = g.randn(tuple(out.shape))
    (out * T(w_up)).sum().backward()
    outs = [to_np(out)] + [to_np(ts[i].grad) for i in grads]
    g.add(op, label, list(ins) + [w_up], outs, rtol=rtol, atol=atol, backward=1, grads=list(grads), **params)
    return w_up


def sh(s): return "x".join(map(str, s))


# ----------------------------------------------------------------- conv

def torch_pads(pads):
    """natural (before, after) per axis -> F.pad's last-axis-first order"""
    n = len(pads) // 2
    out = []
    for j in reversed(range(n)): out += [pads[2 * j], pads[2 * j + 1]]
    return out


def conv_fn(n, stride, pads, dil, groups):
    conv = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}[n]

    def fn(x, w, b=None):
        return conv(F.pad(x, torch_pads(pads)), w, b, stride=stride, padding=0, dilation=dil, groups=groups)
    return fn


def conv_case(g, n, xs, ws, stride=None, pads=None, dil=None, groups=1, bias=True, tag="", backward=False, dt=np.float32):
    stride = stride or [1] * n
    pads = pads or [0] * (2 * n)
    dil = dil or [1] * n
    x, w = g.randn(xs).astype(dt), g.randn(ws).astype(dt)
    ins = [x, w] + ([g.randn((ws[0],)).astype(dt)] if bias else [])
    fn = conv_fn(n, stride, pads, dil, groups)
    K = ws[1] * int(np.prod(ws[2:])) + 1
    op = "conv%dd" % n
    label = "%s_x%s_w%s_s%s_p%s_d%s_g%d%s%s" % (op, sh(xs), sh(ws), sh(stride), sh(pads), sh(dil), groups, "_bias" if bias else "", tag)
    params = dict(stride=stride, padding=pads, dilation=dil, groups=groups, bias=int(bias))
    if dt == np.float16:
        # tg multiplies in half (each product rounded to half, 2^-11) and sums
        # in float32, then rounds to half: K half-ulps of the terms
        ref = fn(*[T(a) for a in ins])
        at = 2.0 * K * 2.0 ** -11 * float(fn(*[T(np.abs(a)) for a in ins]).abs().max())
        g.add(op, label, ins, [ref.numpy().astype(np.float16)], rtol=1e-3, atol=at, **params)
        return
    if not backward:
        add_fwd(g, op, label, ins, fn, rtol=1e-6, atol=multilinear_atol(fn, ins, K), **params)
    else:
        grads = list(range(len(ins)))
        ts = [T(a) for a in ins]
        out_shape = tuple(fn(*ts).shape)
        rng_state = g.rng.bit_generator.state
        w_up = g.randn(out_shape)
        g.rng.bit_generator.state = rng_state
        Kb = max(K, int(np.prod(out_shape)) + 1)
        at = multilinear_atol(fn, ins, Kb, grads, w_up)
        add_bwd(g, op, "bwd_" + label, ins, fn, grads, rtol=1e-6, atol=at, **params)


def convT_fn(n, stride, pad, opad, dil, groups):
    conv = {1: F.conv_transpose1d, 2: F.conv_transpose2d, 3: F.conv_transpose3d}[n]

    def fn(x, w, b=None):
        return conv(x, w, b, stride=stride, padding=pad, output_padding=opad, dilation=dil, groups=groups)
    return fn


def convT_case(g, n, xs, ws, stride=None, pad=None, opad=None, dil=None, groups=1, bias=True, tag="", backward=False):
    stride, pad, opad, dil = stride or [1] * n, pad or [0] * n, opad or [0] * n, dil or [1] * n
    x, w = g.randn(xs), g.randn(ws)
    ins = [x, w] + ([g.randn((ws[1] * groups,))] if bias else [])
    fn = convT_fn(n, stride, pad, opad, dil, groups)
    K = ws[0] * int(np.prod(ws[2:])) + 1
    op = "conv_transpose%dd" % n
    label = "%s_x%s_w%s_s%s_p%s_op%s_d%s_g%d%s%s" % (op, sh(xs), sh(ws), sh(stride), sh(pad), sh(opad), sh(dil), groups, "_bias" if bias else "", tag)
    params = dict(stride=stride, padding=pad, output_padding=opad, dilation=dil, groups=groups, bias=int(bias))
    if not backward:
        add_fwd(g, op, label, ins, fn, rtol=1e-6, atol=multilinear_atol(fn, ins, K), **params)
    else:
        grads = list(range(len(ins)))
        out_shape = tuple(fn(*[T(a) for a in ins]).shape)
        st = g.rng.bit_generator.state
        w_up = g.randn(out_shape)
        g.rng.bit_generator.state = st
        at = multilinear_atol(fn, ins, max(K, int(np.prod(out_shape)) + 1), grads, w_up)
        add_bwd(g, op, "bwd_" + label, ins, fn, grads, rtol=1e-6, atol=at, **params)


def gen_conv():
    g = NNGroup("conv", 101)
    c2 = lambda *a, **k: conv_case(g, 2, *a, **k)
    c2((2, 3, 5, 5), (4, 3, 3, 3))
    c2((2, 3, 7, 6), (4, 3, 3, 3), stride=[2, 2])
    c2((1, 3, 5, 5), (2, 3, 3, 3), pads=[1, 1, 1, 1])
    c2((1, 2, 5, 6), (3, 2, 3, 2), pads=[1, 2, 0, 1], tag="_asym")
    c2((1, 2, 6, 6), (3, 2, 2, 3), pads=[-1, 0, 1, -1], tag="_negative")
    c2((1, 2, 7, 7), (2, 2, 3, 3), dil=[2, 2])
    c2((2, 4, 5, 5), (6, 2, 3, 3), groups=2)
    c2((1, 3, 6, 6), (6, 1, 3, 3), groups=3, pads=[1, 1, 1, 1], tag="_depthwise")
    c2((2, 4, 4, 5), (3, 4, 1, 1))
    c2((2, 4, 8, 7), (4, 2, 3, 2), stride=[2, 1], dil=[1, 2], pads=[2, 1, 1, 0], groups=2)
    c2((2, 3, 5, 5), (4, 3, 3, 3), bias=False)
    c2((1, 2, 9, 8), (3, 2, 2, 2), stride=[3, 3], tag="_k_lt_s")
    c2((1, 2, 8, 8), (2, 2, 2, 2), stride=[2, 2], tag="_k_eq_s")
    c2((2, 3, 4, 4), (5, 3, 4, 4), tag="_full_window")
    c2((1, 2, 6, 7), (3, 2, 2, 4), stride=[1, 2], pads=[0, 0, 2, 2])
    c2((3, 5, 5), (4, 3, 3, 3), tag="_unbatched")
    c2((1, 2, 10, 9), (2, 2, 3, 3), stride=[3, 2], pads=[1, 2, 2, 1], dil=[2, 1])
    c2((1, 8, 6, 6), (8, 8, 3, 3), pads=[1, 1, 1, 1])
    c2((1, 2, 5, 5), (2, 2, 3, 3), stride=[2, 2], pads=[-1, -1, 1, 1], dil=[1, 2], tag="_neg_dil_stride")
    c2((1, 3, 5, 5), (2, 3, 3, 3), pads=[1, 1, 1, 1], dt=np.float16, tag="_f16")
    c1 = lambda *a, **k: conv_case(g, 1, *a, **k)
    c1((2, 3, 10), (4, 3, 3))
    c1((2, 3, 11), (4, 3, 3), stride=[2], pads=[1, 1])
    c1((1, 2, 12), (2, 2, 3), dil=[3])
    c1((2, 4, 9), (6, 2, 4), groups=2, pads=[2, 0])
    c1((1, 2, 9), (3, 2, 2), pads=[-2, 1], bias=False, tag="_negative")
    c1((3, 8), (2, 3, 5), stride=[3], tag="_unbatched")
    c3 = lambda *a, **k: conv_case(g, 3, *a, **k)
    c3((1, 2, 4, 4, 4), (3, 2, 2, 2, 2))
    c3((1, 2, 5, 5, 4), (2, 2, 3, 3, 2), stride=[2, 2, 1], pads=[1, 1, 0, 1, 1, 0])
    c3((1, 4, 4, 5, 4), (4, 2, 2, 2, 2), groups=2, dil=[1, 2, 1], bias=False)
    c3((2, 1, 5, 4, 4), (2, 1, 3, 2, 2), pads=[-1, 0, 1, 1, 0, 0], stride=[1, 2, 2])
    t2 = lambda *a, **k: convT_case(g, 2, *a, **k)
    t2((1, 3, 4, 4), (3, 2, 3, 3))
    t2((2, 2, 3, 4), (2, 3, 3, 3), stride=[2, 2])
    t2((1, 2, 4, 4), (2, 2, 3, 3), stride=[2, 2], pad=[1, 1])
    t2((1, 2, 3, 3), (2, 2, 3, 3), stride=[2, 2], pad=[1, 1], opad=[1, 1])
    t2((1, 2, 4, 3), (2, 3, 2, 3), dil=[2, 2])
    t2((1, 4, 3, 3), (4, 2, 3, 3), groups=2, stride=[2, 1])
    t2((1, 2, 3, 4), (2, 2, 3, 2), stride=[2, 3], opad=[1, 2], pad=[0, 1], bias=False)
    t2((2, 4, 4), (2, 3, 3, 3), stride=[2, 2], tag="_unbatched")
    t2((1, 2, 5, 5), (2, 1, 3, 3), pad=[2, 2], tag="_pad_k-1")
    t1 = lambda *a, **k: convT_case(g, 1, *a, **k)
    t1((2, 3, 5), (3, 2, 3))
    t1((1, 2, 4), (2, 3, 4), stride=[3], pad=[1], opad=[2])
    t1((1, 4, 5), (4, 1, 3), groups=4, dil=[2], bias=False)
    t3 = lambda *a, **k: convT_case(g, 3, *a, **k)
    t3((1, 2, 3, 3, 2), (2, 2, 2, 2, 2))
    t3((1, 2, 2, 3, 2), (2, 1, 3, 2, 2), stride=[2, 1, 2], pad=[1, 0, 0], opad=[1, 0, 1])
    return g


# ----------------------------------------------------------------- pools and interpolation

def pool_params(kernel, stride=None, padding=None, dilation=None, ceil=False, exclude=False, indices=False):
    return dict(kernel=list(kernel), stride=list(stride or [0, 0]), padding=list(padding or [0, 0]),
                dilation=list(dilation or [1, 1]), ceil_mode=int(ceil), exclude_pad=int(exclude), indices=int(indices))


def avg_fn(p):
    return lambda x: F.avg_pool2d(x, p["kernel"], [s or k for s, k in zip(p["stride"], p["kernel"])], p["padding"],
                                  ceil_mode=bool(p["ceil_mode"]), count_include_pad=not p["exclude_pad"])


def max_fn(p):
    def fn(x):
        r = F.max_pool2d(x, p["kernel"], [s or k for s, k in zip(p["stride"], p["kernel"])], p["padding"], p["dilation"],
                         ceil_mode=bool(p["ceil_mode"]), return_indices=bool(p["indices"]))
        return r
    return fn


def lbl(p):
    return "k%s_s%s_p%s_d%s%s%s" % (sh(p["kernel"]), sh(p["stride"]), sh(p["padding"]), sh(p["dilation"]),
                                   "_ceil" if p["ceil_mode"] else "", "_excl" if p["exclude_pad"] else "")


INTERP = {"nearest": 0, "nearest-exact": 1, "linear": 2, "bilinear": 3}


def gen_pool():
    g = NNGroup("pool", 102)
    # avg pool: a mean of at most 9 values: rtol 1e-6 + atol from the sum
    for xs, p in [((2, 3, 6, 6), pool_params([2, 2])),
                  ((1, 2, 7, 7), pool_params([3, 3], [2, 2])),
                  ((1, 2, 5, 6), pool_params([3, 3], [1, 1], [1, 1])),
                  ((1, 2, 5, 6), pool_params([3, 3], [1, 1], [1, 1], exclude=True)),
                  ((1, 2, 7, 6), pool_params([3, 2], [2, 2], ceil=True)),
                  ((1, 2, 6, 7), pool_params([3, 3], [2, 2], [1, 1], ceil=True)),
                  ((1, 2, 6, 7), pool_params([3, 3], [2, 2], [1, 1], ceil=True, exclude=True)),
                  ((1, 1, 5, 8), pool_params([2, 4], [1, 3], [1, 2])),
                  ((3, 6, 6), pool_params([2, 3])),
                  ((1, 2, 4, 4), pool_params([4, 4]))]:
        x = g.randn(xs)
        add_fwd(g, "avg_pool2d", "avg_pool2d_%s_%s" % (sh(xs), lbl(p)), [x], avg_fn(p), rtol=1e-6, atol=1e-6, **p)
    # max pool: exact (a selection), indices int32
    for xs, p, ties in [((2, 3, 6, 6), pool_params([2, 2], indices=True), False),
                        ((1, 2, 7, 7), pool_params([3, 3], [2, 2], [1, 1], indices=True), False),
                        ((1, 2, 8, 8), pool_params([2, 2], [1, 1], dilation=[2, 2], indices=True), False),
                        ((1, 2, 7, 6), pool_params([3, 2], [2, 2], ceil=True, indices=True), False),
                        ((1, 2, 6, 7), pool_params([3, 3], [2, 2], [1, 1], ceil=True, indices=True), False),
                        ((1, 2, 6, 6), pool_params([3, 3], [1, 1], [1, 1], indices=True), True),
                        ((1, 1, 5, 9), pool_params([2, 3], [1, 2], [1, 0], dilation=[2, 1]), False),
                        ((2, 5, 5), pool_params([2, 2], [1, 1], indices=True), False),
                        ((1, 2, 9, 9), pool_params([3, 3], [3, 3], [1, 1], dilation=[2, 1], ceil=True, indices=True), False)]:
        x = g.randn(xs) if not ties else g.ints(xs, -2, 2, np.int32).astype(np.float32)
        add_fwd(g, "max_pool2d", "max_pool2d_%s_%s%s%s" % (sh(xs), lbl(p), "_idx" if p["indices"] else "", "_ties" if ties else ""),
                [x], max_fn(p), rtol=0, atol=0, out_dtypes=[np.float32, np.int32], **p)
    # max unpool: from torch's own max pool of the input
    for xs, p, osize in [((1, 2, 6, 6), pool_params([2, 2]), None), ((2, 1, 7, 7), pool_params([3, 3], [2, 2], [1, 1]), None),
                         ((1, 2, 5, 5), pool_params([2, 2]), [5, 5])]:
        x = g.randn(xs)
        pooled, idx = F.max_pool2d(T(x), p["kernel"], [s or k for s, k in zip(p["stride"], p["kernel"])], p["padding"], return_indices=True)
        pr = {k: v for k, v in p.items() if k in ("kernel", "stride", "padding")}
        if osize: pr["output_size"] = osize

        def fn(v, i, p=p, osize=osize):
            return F.max_unpool2d(v, i, p["kernel"], [s or k for s, k in zip(p["stride"], p["kernel"])], p["padding"], output_size=osize)
        add_fwd(g, "max_unpool2d", "max_unpool2d_%s_%s%s" % (sh(xs), lbl(p), "_os" + sh(osize) if osize else ""),
                [pooled.numpy().astype(np.float32), idx.numpy().astype(np.int32)], fn, rtol=0, atol=0, **pr)
    # interpolate: two-tap blends: a few roundings: rtol 1e-5, atol 1e-6
    for xs, size, mode, ac in [((1, 2, 5), [9], "nearest", False), ((1, 2, 9), [4], "nearest", False),
                               ((1, 2, 4, 5), [7, 3], "nearest", False), ((1, 1, 3, 3), [6, 6], "nearest", False),
                               ((1, 2, 5, 4), [8, 7], "nearest-exact", False), ((1, 2, 5), [8], "linear", False),
                               ((1, 2, 5), [8], "linear", True), ((1, 2, 9), [4], "linear", False),
                               ((2, 1, 4, 5), [7, 9], "bilinear", False), ((2, 1, 4, 5), [7, 9], "bilinear", True),
                               ((1, 2, 6, 6), [3, 4], "bilinear", False), ((1, 2, 4, 4), [1, 3], "bilinear", True),
                               ((1, 1, 2, 2, 3), [3, 4, 5], "nearest", False)]:
        x = g.randn(xs)
        kw = dict(align_corners=ac) if mode in ("linear", "bilinear") else {}
        add_fwd(g, "interpolate", "interpolate_%s_%s_to_%s%s" % (mode, sh(xs), sh(size), "_ac" if ac else ""), [x],
                lambda t, size=size, mode=mode, kw=kw: F.interpolate(t, size=size, mode=mode, **kw),
                rtol=1e-5, atol=1e-6, size=size, mode=INTERP[mode], align_corners=int(ac))
    return g


# ----------------------------------------------------------------- functional

def eq_codes(s): return [ord(c) for c in s]


def gen_functional():
    g = NNGroup("functional", 103)
    einsums = [("ij,jk->ik", [(3, 4), (4, 5)]), ("ij,jk", [(3, 4), (4, 2)]), ("bij,bjk->bik", [(2, 3, 4), (2, 4, 3)]),
               ("ii->", [(4, 4)]), ("ii->i", [(5, 5)]), ("i,j->ij", [(3,), (4,)]), ("ij->ji", [(3, 5)]), ("ij->", [(3, 4)]),
               ("...ij,...jk->...ik", [(2, 3, 4), (2, 4, 5)]), ("...ij,jk->...ik", [(2, 2, 3, 4), (4, 2)]),
               ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)]), ("bn,anm,bm->ba", [(2, 3), (4, 3, 5), (2, 5)]),
               ("i,i->", [(6,)] * 2), ("Ab,bC->AC", [(2, 3), (3, 4)]), ("iij->j", [(3, 3, 4)]), ("ijk->kji", [(2, 3, 4)]),
               ("bhqd,bhkd->bhqk", [(1, 2, 3, 4), (1, 2, 5, 4)]), ("ij,ij->ij", [(3, 4), (1, 4)]), ("i...->...", [(3, 2, 2)]),
               ("ji", [(2, 3)]), ("ba,ab", [(3, 2), (2, 3)])]
    for eq, shapes in einsums:
        ins = [g.randn(s) for s in shapes]
        fn = lambda *t, eq=eq: torch.einsum(eq, *t)
        K = int(np.prod([max(s) for s in shapes])) + 1
        add_fwd(g, "einsum", "einsum_%s_%s" % (eq, "_".join(sh(s) for s in shapes)), ins, fn, rtol=1e-6,
                atol=multilinear_atol(fn, ins, K), eq=eq_codes(eq))
    for xs, ws, bias in [((4, 5), (3, 5), True), ((2, 3, 5), (4, 5), True), ((4, 5), (3, 5), False), ((3, 5), (5,), False)]:
        ins = [g.randn(xs), g.randn(ws)] + ([g.randn((ws[0],))] if bias else [])
        add_fwd(g, "linear", "linear_%s_%s%s" % (sh(xs), sh(ws), "_bias" if bias else ""), ins, F.linear, rtol=1e-6,
                atol=multilinear_atol(F.linear, ins, xs[-1] + 1))
    # norms: a mean, a variance and an rsqrt: ~1e-6 relative on O(1) values
    for xs, ns, w, b, eps in [((3, 8), [8], False, False, 1e-5), ((2, 3, 4), [3, 4], True, True, 1e-5), ((2, 5), [5], True, False, 1e-3),
                              ((4, 6), [6], False, True, 1e-5), ((2, 2, 3, 4), [4], True, True, 1e-5)]:
        x = g.randn(xs, scale=2.0) + 1
        ins = [x] + ([g.randn(ns)] if w else []) + ([g.randn(ns)] if b else [])

        def fn(x, *wb, ns=ns, w=w, b=b, eps=eps):
            it = iter(wb)
            return F.layer_norm(x, ns, next(it) if w else None, next(it) if b else None, eps)
        add_fwd(g, "layernorm", "layernorm_%s_ns%s%s%s_eps%g" % (sh(xs), sh(ns), "_w" if w else "", "_b" if b else "", eps), ins, fn,
                rtol=1e-5, atol=1e-5, normalized_shape=ns, eps=eps, weight=int(w), bias=int(b))
    for xs, stats, w, b in [((4, 3, 2, 2), False, True, True), ((6, 4), False, False, False), ((2, 3, 5), False, True, False),
                            ((3, 2, 2, 3), True, True, True), ((5, 3), True, False, True)]:
        x = g.randn(xs, scale=1.5) + 0.5
        C = xs[1]
        ins = [x] + ([g.randn((C,)), g.uniform((C,), 0.5, 2.0)] if stats else []) + ([g.randn((C,))] if w else []) + ([g.randn((C,))] if b else [])

        def fn(x, *r, stats=stats, w=w, b=b):
            it = iter(r)
            m, v = (next(it), next(it)) if stats else (None, None)
            ww = next(it) if w else None
            bb = next(it) if b else None
            return F.batch_norm(x, m, v, ww, bb, training=not stats, eps=1e-5)
        add_fwd(g, "batchnorm", "batchnorm_%s%s%s%s" % (sh(xs), "_stats" if stats else "_batch", "_w" if w else "", "_b" if b else ""),
                ins, fn, rtol=1e-5, atol=1e-5, stats=int(stats), weight=int(w), bias=int(b), eps=1e-5)
    for xs, ax in [((3, 5), -1), ((2, 3, 4), 1), ((4,), 0)]:
        add_fwd(g, "softmin", "softmin_%s_axis%d" % (sh(xs), ax), [g.randn(xs)], lambda t, ax=ax: F.softmin(t, ax), rtol=1e-5, atol=1e-7, axis=ax)
    # attention: a softmax and two small matmuls: rtol 1e-5, atol 1e-5
    sd = [((2, 3, 4), (2, 5, 4), (2, 5, 3), dict()), ((1, 2, 4, 8), (1, 2, 4, 8), (1, 2, 4, 8), dict(is_causal=True)),
          ((2, 5, 4), (2, 3, 4), (2, 3, 2), dict(is_causal=True)), ((2, 3, 4), (2, 5, 4), (2, 5, 3), dict(mask=1)),
          ((2, 3, 4), (2, 5, 4), (2, 5, 3), dict(mask=2)), ((1, 3, 4), (1, 3, 4), (1, 3, 4), dict(scale=0.3)),
          ((1, 4, 3, 4), (1, 2, 5, 4), (1, 2, 5, 6), dict(enable_gqa=True)),
          ((2, 6, 2, 4), (2, 3, 2, 4), (2, 3, 2, 4), dict(enable_gqa=True, is_causal=True)),
          ((2, 2, 3, 4), (2, 2, 3, 4), (2, 2, 3, 4), dict(mask=1, scale=0.7))]
    for qs, ks, vs, o in sd:
        ins = [g.randn(qs), g.randn(ks), g.randn(vs)]
        L, S = qs[-2], ks[-2]
        mk = o.get("mask", 0)
        if mk == 1:
            m = g.rng.random((L, S)) < 0.7
            m[:, 0] = True   # no fully masked row (torch's result there depends on the backend)
            ins.append(m)
        elif mk == 2:
            ins.append(g.randn((L, S)))

        def fn(q, k, v, m=None, o=o):
            return F.scaled_dot_product_attention(q, k, v, attn_mask=m, is_causal=o.get("is_causal", False), scale=o.get("scale"),
                                                  enable_gqa=o.get("enable_gqa", False))
        lab = "sdpa_q%s_k%s_v%s%s" % (sh(qs), sh(ks), sh(vs), "".join("_%s%s" % (k, v) for k, v in sorted(o.items())))
        add_fwd(g, "sdpa", lab, ins, fn, rtol=1e-5, atol=1e-5, is_causal=int(o.get("is_causal", False)), scale=float(o.get("scale", 0.0)),
                enable_gqa=int(o.get("enable_gqa", False)), mask=mk)
    x = g.randn((3, 4))
    add_fwd(g, "dropout", "dropout_p0.5_eval_is_identity", [x], lambda t: F.dropout(t, 0.5, training=False), rtol=0, atol=0, p=0.5, training=0)
    add_fwd(g, "dropout", "dropout_p0_train_is_identity", [x], lambda t: F.dropout(t, 0.0, training=True), rtol=0, atol=0, p=0.0, training=1)
    return g


# ----------------------------------------------------------------- losses

RED = {"mean": 0, "sum": 1, "none": 2}


def loss_case(g, op, label, x, y, reduction="mean", weight=None, pos_weight=None, ignore_index=None, ls=0.0, backward=False,
              rtol=1e-5, atol=1e-5):
    ins = [x, y] + ([weight] if weight is not None else []) + ([pos_weight] if pos_weight is not None else [])
    params = dict(reduction=RED[reduction], label_smoothing=ls, weight=int(weight is not None), pos_weight=int(pos_weight is not None))
    if ignore_index is not None: params["ignore_index"] = ignore_index

    def fn(x, y, *r):
        it = iter(r)
        w = next(it) if weight is not None else None
        pw = next(it) if pos_weight is not None else None
        kw = dict(reduction=reduction)
        if op in ("cross_entropy", "nll_loss", "sparse_categorical_crossentropy"):
            if ignore_index is not None: kw["ignore_index"] = ignore_index
            kw["weight"] = w
            if op == "nll_loss": return F.nll_loss(x, y, **kw)
            if op == "sparse_categorical_crossentropy":
                return F.cross_entropy(x.movedim(-1, 1) if x.ndim > 2 else x, y, label_smoothing=ls, **kw)
            return F.cross_entropy(x, y, label_smoothing=ls, **kw)
        if op == "binary_crossentropy": return F.binary_cross_entropy(x, y, weight=w, **kw)
        return F.binary_cross_entropy_with_logits(x, y, weight=w, pos_weight=pw, **kw)
    if backward:
        add_bwd(g, op, "bwd_" + label, ins, fn, [0], rtol=rtol, atol=atol, **params)
    else:
        add_fwd(g, op, label, ins, fn, rtol=rtol, atol=atol, **params)


def gen_loss():
    g = NNGroup("loss", 104)
    N, C = 6, 5
    x = g.randn((N, C), scale=2.0)
    t = g.ints((N,), 0, C - 1, np.int64)
    w = g.uniform((C,), 0.2, 2.0)
    ce = lambda lab, *a, **k: loss_case(g, "cross_entropy", "cross_entropy_" + lab, *a, **k)
    for red in ("mean", "sum", "none"):
        ce("idx_%s" % red, x, t, red)
    ti = t.copy(); ti[[1, 4]] = 2
    ce("idx_ignore2_mean", x, ti, ignore_index=2)
    ce("idx_ignore2_none", x, ti, "none", ignore_index=2)
    tn = t.copy(); tn[2] = -100
    ce("idx_default_ignore_-100", x, tn)
    ce("idx_ls0.1_mean", x, t, ls=0.1)
    ce("idx_ls0.2_sum", x, t, "sum", ls=0.2)
    ce("idx_weight_mean", x, t, weight=w)
    ce("idx_weight_ls_ignore_mean", x, ti, weight=w, ls=0.15, ignore_index=2)
    ce("idx_weight_ls_none", x, t, "none", weight=w, ls=0.3)
    x4 = g.randn((2, 3, 2, 3)); t4 = g.ints((2, 2, 3), 0, 2, np.int64)
    ce("idx_4d_mean", x4, t4)
    ce("idx_4d_none_ls", x4, t4, "none", ls=0.1)
    ce("idx_1d_scalar_target", g.randn((C,)), np.array(3, np.int64))
    ce("idx_int32_target", x, t.astype(np.int32))
    p = np.exp(g.randn((N, C))); p = (p / p.sum(1, keepdims=True)).astype(np.float32)
    ce("prob_mean", x, p)
    ce("prob_sum_ls0.1", x, p, "sum", ls=0.1)
    ce("prob_none_weight", x, p, "none", weight=w)
    ce("prob_4d_mean", x4, np.abs(g.randn((2, 3, 2, 3))))
    lp = F.log_softmax(T(x), 1).numpy().astype(np.float32)
    nl = lambda lab, *a, **k: loss_case(g, "nll_loss", "nll_loss_" + lab, *a, **k)
    nl("mean", lp, t)
    nl("sum_weight", lp, t, "sum", weight=w)
    nl("none_ignore", lp, ti, "none", ignore_index=2)
    nl("mean_weight_ignore", lp, ti, weight=w, ignore_index=2)
    nl("4d_none", F.log_softmax(T(x4), 1).numpy().astype(np.float32), t4, "none")
    sc = lambda lab, *a, **k: loss_case(g, "sparse_categorical_crossentropy", "sparse_categorical_crossentropy_" + lab, *a, **k)
    sc("2d_mean", x, t)
    x3 = g.randn((2, 4, C)); t3 = g.ints((2, 4), 0, C - 1, np.int64)
    sc("3d_classes_last_mean", x3, t3)
    sc("3d_none_ls", x3, t3, "none", ls=0.1)
    t3i = t3.copy(); t3i[0, 1] = 0; t3i[1, 2] = 0
    sc("3d_ignore0_sum", x3, t3i, "sum", ignore_index=0)
    pr = g.uniform((4, 3), 0.02, 0.98); y = g.uniform((4, 3), 0, 1)
    bce = lambda lab, *a, **k: loss_case(g, "binary_crossentropy", "binary_crossentropy_" + lab, *a, **k)
    bce("mean", pr, y)
    bce("sum_weight", pr, y, "sum", weight=g.uniform((4, 3), 0.5, 1.5))
    bce("none", pr, y, "none")
    bce("clamped_log_p0_p1", np.array([0.0, 1.0, 0.5, 1.0], np.float32), np.array([1.0, 0.0, 1.0, 1.0], np.float32), "none")
    lg = g.randn((4, 3), scale=3.0)
    bl = lambda lab, *a, **k: loss_case(g, "binary_crossentropy_logits", "binary_crossentropy_logits_" + lab, *a, **k)
    bl("mean", lg, y)
    bl("sum_pos_weight", lg, y, "sum", pos_weight=g.uniform((3,), 0.5, 3.0))
    bl("none_weight_pos_weight", lg, y, "none", weight=g.uniform((4, 3), 0.5, 1.5), pos_weight=g.uniform((3,), 0.5, 3.0))
    bl("large_logits_none", np.array([-100, -30, 0, 30, 100], np.float32), np.array([1, 0, 0.5, 1, 0], np.float32), "none")
    return g


# ----------------------------------------------------------------- backward

def gen_backward():
    g = NNGroup("backward", 105)
    c2 = lambda *a, **k: conv_case(g, 2, *a, backward=True, **k)
    c2((2, 3, 5, 5), (4, 3, 3, 3))
    c2((1, 4, 7, 6), (4, 2, 3, 2), stride=[2, 1], dil=[1, 2], pads=[2, 1, 1, 0], groups=2)
    c2((1, 2, 6, 6), (3, 2, 2, 3), pads=[-1, 0, 1, -1], tag="_negative")
    c2((1, 2, 8, 8), (2, 2, 2, 2), stride=[2, 2], bias=False, tag="_k_eq_s")
    conv_case(g, 1, (2, 3, 9), (2, 3, 3), stride=[2], pads=[1, 2], backward=True)
    conv_case(g, 3, (1, 2, 4, 4, 3), (2, 2, 2, 2, 2), stride=[1, 2, 1], backward=True)
    convT_case(g, 2, (1, 2, 3, 3), (2, 2, 3, 3), stride=[2, 2], pad=[1, 1], opad=[1, 1], backward=True)
    convT_case(g, 2, (1, 4, 3, 3), (4, 1, 2, 3), groups=2, stride=[1, 2], dil=[2, 1], backward=True)
    # pools: grads are sums of at most 9 upstream values: rtol 1e-5, atol 1e-5
    for xs, p in [((1, 2, 5, 6), pool_params([3, 3], [1, 1], [1, 1])), ((1, 2, 6, 7), pool_params([3, 3], [2, 2], [1, 1], ceil=True, exclude=True))]:
        add_bwd(g, "avg_pool2d", "bwd_avg_pool2d_%s_%s" % (sh(xs), lbl(p)), [g.randn(xs)], avg_fn(p), [0], **p)
    for xs, p in [((1, 2, 6, 6), pool_params([2, 2])), ((1, 2, 7, 7), pool_params([3, 3], [2, 2], [1, 1]))]:
        add_bwd(g, "max_pool2d", "bwd_max_pool2d_%s_%s" % (sh(xs), lbl(p)), [g.randn(xs)], max_fn(p), [0], **p)
    for xs, size, mode, ac in [((1, 2, 4, 5), [7, 3], "bilinear", False), ((1, 2, 4, 5), [6, 8], "bilinear", True), ((1, 2, 5), [8], "nearest", False)]:
        kw = dict(align_corners=ac) if mode != "nearest" else {}
        add_bwd(g, "interpolate", "bwd_interpolate_%s_%s_to_%s%s" % (mode, sh(xs), sh(size), "_ac" if ac else ""), [g.randn(xs)],
                lambda t, size=size, mode=mode, kw=kw: F.interpolate(t, size=size, mode=mode, **kw), [0],
                size=size, mode=INTERP[mode], align_corners=int(ac))
    for eq, shapes in [("ij,jk->ik", [(3, 4), (4, 5)]), ("ii->i", [(4, 4)]), ("bn,anm,bm->ba", [(2, 3), (4, 3, 5), (2, 5)])]:
        ins = [g.randn(s) for s in shapes]
        add_bwd(g, "einsum", "bwd_einsum_%s" % eq, ins, lambda *t, eq=eq: torch.einsum(eq, *t), list(range(len(ins))), rtol=1e-5, atol=1e-4,
                eq=eq_codes(eq))
    ins = [g.randn((2, 3, 5)), g.randn((4, 5)), g.randn((4,))]
    add_bwd(g, "linear", "bwd_linear_2x3x5_4x5_bias", ins, F.linear, [0, 1, 2], rtol=1e-5, atol=1e-4)
    ins = [g.randn((3, 2, 4), scale=2.0), g.randn((2, 4)), g.randn((2, 4))]
    add_bwd(g, "layernorm", "bwd_layernorm_3x2x4_ns2x4_w_b", ins, lambda x, w, b: F.layer_norm(x, [2, 4], w, b, 1e-5), [0, 1, 2],
            normalized_shape=[2, 4], eps=1e-5, weight=1, bias=1)
    ins = [g.randn((4, 3, 2, 2), scale=1.5), g.randn((3,)), g.randn((3,))]
    add_bwd(g, "batchnorm", "bwd_batchnorm_4x3x2x2_batch_w_b", ins,
            lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True, eps=1e-5), [0, 1, 2], stats=0, weight=1, bias=1, eps=1e-5)
    ins = [g.randn((3, 2, 2)), g.randn((2,)), g.uniform((2,), 0.5, 2.0)]
    add_bwd(g, "batchnorm", "bwd_batchnorm_3x2x2_stats", ins, lambda x, m, v: F.batch_norm(x, m, v, None, None, training=False, eps=1e-5),
            [0], stats=1, weight=0, bias=0, eps=1e-5)
    add_bwd(g, "softmin", "bwd_softmin_3x5", [g.randn((3, 5))], lambda t: F.softmin(t, -1), [0], axis=-1)
    ins = [g.randn((1, 2, 4, 3)), g.randn((1, 2, 4, 3)), g.randn((1, 2, 4, 3))]
    add_bwd(g, "sdpa", "bwd_sdpa_causal_1x2x4x3", ins, lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True), [0, 1, 2],
            is_causal=1, scale=0.0, enable_gqa=0, mask=0)
    ins = [g.randn((1, 4, 3, 4)), g.randn((1, 2, 5, 4)), g.randn((1, 2, 5, 4)), g.randn((3, 5))]
    add_bwd(g, "sdpa", "bwd_sdpa_gqa_float_mask", ins,
            lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m, enable_gqa=True), [0, 1, 2],
            is_causal=0, scale=0.0, enable_gqa=1, mask=2)
    x = g.randn((6, 5), scale=2.0); t = g.ints((6,), 0, 4, np.int64); t[3] = 1
    loss_case(g, "cross_entropy", "cross_entropy_weight_ls_ignore1", x, t, weight=g.uniform((5,), 0.2, 2.0), ignore_index=1, ls=0.1, backward=True)
    p = np.exp(g.randn((6, 5))); p = (p / p.sum(1, keepdims=True)).astype(np.float32)
    loss_case(g, "cross_entropy", "cross_entropy_prob_none", x, p, "none", backward=True)
    loss_case(g, "nll_loss", "nll_loss_sum", F.log_softmax(T(x), 1).numpy().astype(np.float32), t, "sum", backward=True)
    loss_case(g, "sparse_categorical_crossentropy", "sparse_3d_mean", g.randn((2, 3, 4)), g.ints((2, 3), 0, 3, np.int64), backward=True)
    loss_case(g, "binary_crossentropy", "binary_crossentropy_mean", g.uniform((3, 4), 0.05, 0.95), g.uniform((3, 4), 0, 1), backward=True)
    loss_case(g, "binary_crossentropy_logits", "binary_crossentropy_logits_pos_weight", g.randn((3, 4), scale=2.0), g.uniform((3, 4), 0, 1),
              pos_weight=g.uniform((4,), 0.5, 2.0), backward=True)
    # stride-1 convs whose gradients tg computes as convolutions (conv_grad):
    # symmetric, asymmetric and full (k-1) padding, 1-D and 3-D
    c2((2, 3, 6, 5), (4, 3, 3, 3), pads=[1, 1, 1, 1], tag="_same")
    c2((1, 2, 6, 7), (3, 2, 3, 2), pads=[0, 2, 1, 0], bias=False, tag="_asym")
    c2((2, 2, 4, 4), (2, 2, 2, 2), pads=[1, 1, 1, 1], tag="_full")
    conv_case(g, 1, (2, 3, 9), (2, 3, 3), pads=[2, 0], backward=True, tag="_s1")
    conv_case(g, 3, (1, 2, 4, 3, 3), (2, 2, 2, 2, 2), pads=[1, 0, 0, 1, 1, 1], backward=True, tag="_s1")
    # windows that tile the input (stride = kernel), with a leftover row and column
    for xs, p in [((2, 3, 7, 5), pool_params([2, 2]))]:
        add_bwd(g, "max_pool2d", "bwd_max_pool2d_%s_%s" % (sh(xs), lbl(p)), [g.randn(xs)], max_fn(p), [0], **p)
        add_bwd(g, "avg_pool2d", "bwd_avg_pool2d_%s_%s" % (sh(xs), lbl(p)), [g.randn(xs)], avg_fn(p), [0], **p)
    return g


def main():
    os.makedirs(OUT, exist_ok=True)
    total = 0
    counts = {}
    for gen in [gen_conv, gen_pool, gen_functional, gen_loss, gen_backward]:
        g = gen()
        path, n, size = g.write()
        total += size
        counts[g.name] = n
        print("%-40s %4d cases %8d bytes" % (os.path.relpath(path), n, size))
    print("total %d bytes, %d forward cases, %d backward cases" % (total, sum(v for k, v in counts.items() if k != "backward"), counts["backward"]))
    assert total < 2_000_000


if __name__ == "__main__":
    main()
