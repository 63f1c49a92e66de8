#!/usr/bin/env python3
"""gen_controls.py: golden data for tests/test_controls.c (the seeds' smaller
controls: accumulate dtypes, DEFAULT_FLOAT, dtype names, asymmetric pool
padding, threefry).

Run from the repository root:  python3 tests/gen/gen_controls.py
Needs numpy, ml_dtypes, torch, and tinygrad (all PyPI; tinygrad only for
its dtype names and resolve_pool_pads, pure Python, no device is run).
Writes tests/goldens/controls_<group>.bin in the format of tests/gen/gen_ops.py
(its writer is reused; see the top of that script). Nothing comes from tg.

Groups and their references:
  acc     numpy: sum/prod/mean with dtype= (numpy's sum(dtype=), prod(dtype=),
          mean(dtype=); the sum and prod cases are also checked against
          tinygrad's sum/prod(dtype=) on its PYTHON device) and matmul(dtype=) (numpy casts the operands to the
          dtype first, as tg_matmul_dtype does). Ints exactly (they wrap in
          the dtype, so the order of the sum does not matter); floats from
          float64 over the cast inputs, rounded once. Params: axes (empty =
          all), keepdim, dtype (tg code). Op "sum_acc_float": tg_sum with
          tg_set_sum_acc_float(acc) (SUM_DTYPE); its result dtype is
          tinygrad's promote(in, acc). Op "default_float": tg_div / tg_sqrt /
          tg_adds(0.5) (param fn 0/1/2) of int tensors with
          tg_set_default_float(dtype): numpy in float64 rounded to the
          default float.
  pool    torch: avg_pool2d / max_pool2d with asymmetric pads, computed as
          F.pad(x, pads, value) then the pool with padding 0 (torch pools
          take symmetric padding only). Param tpad: the padding as tinygrad
          takes it (1, 2 or 4 values; 4 in F.pad order), which the test
          turns into pads with tg_resolve_pool_pads; kernel, stride,
          dilation, ceil_mode, exclude_pad, indices as in gen_torch_nn.py.
          ceil_mode: the output size is ceil((i + pB + pA - ek) / s) + 1,
          less one when the last window would start in the after-padding
          (torch's rule for its symmetric padding, per side); the reference
          pads enough on the right and keeps that many windows; avg divides
          by the window's cells in the input or the regular padding.
          count_include_pad=False divides by the window's input cells.
          Max pool indices are positions h*W + w in the unpadded input
          plane (torch's indices into the padded plane, shifted). Op
          conv2d: F.pad + F.conv2d (padding 0), inputs x, w. Every pool
          case is also checked against tinygrad's own avg_pool2d /
          max_pool2d (its PYTHON device) with the same padding. Op
          conv_transpose2d: F.conv_transpose2d with padding 0 (stride,
          output_padding, dilation), then (pB, pA) cropped from each output
          axis, tinygrad's asymmetric padding of a transposed conv.
  resolve tinygrad.helpers.resolve_pool_pads + flat_to_grouped: param tpad
          (n values), ndims; output int32 pairs per axis in axis order.
  names   np.dtype(name) and tinygrad's to_dtype(name) for each name the
          test looks up: output int32 [tg dtype code]. Where the two
          disagree ("int", "uint", "float") tinygrad's meaning is taken.
  threefry  threefry2x32 (20 rounds) from gen_random.py (checked there
          against the Random123 known-answer vectors, and here against
          tinygrad's Tensor.threefry on its PYTHON device): inputs x, key
          (uint64), output uint64 (hi << 32) | lo.
"""
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_ops import Group, NP, CODE, F16, BF16C, F32, F64, I8, U8, I16, U16, I32, U32, I64, U64, promote  # noqa: E402
from gen_random import threefry2x32  # noqa: E402

torch.set_default_dtype(torch.float64)


class CtlGroup(Group):
    PREFIX = "controls_"


def code(dt): return CODE[np.dtype(dt)]


# ----------------------------------------------------------------- acc

def reduce_ref(fn, x, axes, keepdim, dt):
    """numpy's fn(x, axis, dtype=dt); floats through float64 of the cast
    input, rounded once to dt."""
    ax = tuple(axes) if axes else None
    xc = x.astype(NP[dt])
    if np.dtype(NP[dt]).kind == "f":
        r = fn(xc.astype(np.float64), axis=ax, keepdims=keepdim)
    else:
        r = fn(xc, axis=ax, keepdims=keepdim, dtype=NP[dt])
    return np.asarray(r).astype(NP[dt])


def check_tinygrad_reduce(op, x, axes, keepdim, dt, want, rtol, atol):
    """numpy's sum/prod(dtype=) must be what tinygrad's sum/prod(dtype=) give
    (its PYTHON emulator device)."""
    from tinygrad import Tensor
    from tinygrad.dtype import to_dtype
    t = Tensor(x, device="PYTHON")
    f = t.sum if op == "sum_dtype" else t.prod
    r = f(axis=tuple(axes) if axes else None, keepdim=keepdim, dtype=to_dtype(NP[dt].name)).numpy()
    assert r.dtype == want.dtype and r.shape == want.shape, (op, dt, r.dtype, r.shape)
    assert np.allclose(r.astype(np.float64), want.astype(np.float64), rtol=max(rtol, 1e-6), atol=atol), (op, dt)


def gen_acc():
    g = CtlGroup("acc", 21)
    cases = [
        # uint8 sums wrap in uint8 (default: uint32)
        ("sum_dtype", "sum_u8_as_u8_wraps", g.ints((5, 7), 100, 255, np.uint8), (), False, U8),
        ("sum_dtype", "sum_u8_as_u8_axis1_keepdim", g.ints((5, 7), 100, 255, np.uint8), (1,), True, U8),
        ("sum_dtype", "sum_i8_as_i64", g.ints((4, 9), -128, 127, np.int8), (0,), False, I64),
        ("sum_dtype", "sum_i32_as_i16_wraps", g.ints((6, 5), -30000, 30000, np.int32), (0,), False, I16),
        ("sum_dtype", "sum_f32_as_i32_truncates", g.uniform((3, 8), -9.9, 9.9), (1,), False, I32),
        ("sum_dtype", "sum_f16_as_f32", (g.randn((4, 64)) * 100).astype(np.float16), (1,), False, F32),
        ("sum_dtype", "sum_f16_as_f64_all", (g.randn((3, 5, 7)) * 100).astype(np.float16), (), False, F64),
        ("sum_dtype", "sum_f32_as_f64", g.randn((2, 300)), (-1,), False, F64),
        ("sum_dtype", "sum_i16_as_f32", g.ints((5, 6), -1000, 1000, np.int16), (0,), False, F32),
        ("prod_dtype", "prod_i8_as_i64_exact", g.ints((3, 6), -9, 9, np.int8), (1,), False, I64),
        ("prod_dtype", "prod_u8_as_u8_wraps", g.ints((2, 5), 2, 30, np.uint8), (1,), False, U8),
        ("prod_dtype", "prod_f16_as_f32", g.uniform((3, 6), 0.5, 2.0).astype(np.float16), (1,), True, F32),
        ("mean_dtype", "mean_i32_as_f64", g.ints((4, 7), -100000, 100000, np.int32), (1,), False, F64),
        ("mean_dtype", "mean_f16_as_f32", (g.randn((5, 40)) * 50).astype(np.float16), (), False, F32),
        ("mean_dtype", "mean_f32_as_f64_keepdim", g.randn((6, 50)), (0,), True, F64),
        ("mean_dtype", "mean_u8_as_f16", g.ints((3, 8), 0, 255, np.uint8), (1,), False, F16),
    ]
    fns = {"sum_dtype": np.sum, "prod_dtype": np.prod, "mean_dtype": np.mean}
    for op, label, x, axes, keepdim, dt in cases:
        want = reduce_ref(fns[op], x, axes, keepdim, dt)
        # float results: one rounding of a float64 sum of at most 300 terms
        # accumulated in dt (K*u*S bounds; S <= 300 * max|x|)
        kind = np.dtype(NP[dt]).kind
        if kind == "f":
            u = {F16: 2.0 ** -11, F32: 2.0 ** -24, F64: 2.0 ** -53}[dt]
            n = int(np.prod([x.shape[a] for a in axes])) if axes else x.size
            s = float(np.abs(x.astype(np.float64)).max()) * (n if op != "prod_dtype" else 1)
            rtol, atol = 2 * n * u, 2 * n * u * s / (n if op == "mean_dtype" else 1)
        else:
            rtol = atol = 0.0
        if op != "mean_dtype":   # tinygrad's mean has no dtype
            check_tinygrad_reduce(op, x, axes, keepdim, dt, want, rtol, atol)
        g.add(op, label, [x], [want], rtol=rtol, atol=atol, axes=list(axes), keepdim=int(keepdim), dtype=dt)
    # matmul / dot with an accumulate dtype: operands cast to dt first
    mm = [
        ("mm_i8_as_i32_exact", g.ints((5, 16), -128, 127, np.int8), g.ints((16, 3), -128, 127, np.int8), I32),
        ("mm_u8_as_u16_wraps", g.ints((4, 12), 0, 255, np.uint8), g.ints((12, 6), 0, 255, np.uint8), U16),
        ("mm_i8_batched_as_i64", g.ints((2, 3, 10), -128, 127, np.int8), g.ints((2, 10, 4), -128, 127, np.int8), I64),
        ("dot_i16_1d_as_i64", g.ints((33,), -30000, 30000, np.int16), g.ints((33,), -30000, 30000, np.int16), I64),
        ("mm_f16_as_f32", (g.randn((6, 48)) * 4).astype(np.float16), (g.randn((48, 5)) * 4).astype(np.float16), F32),
        ("mm_bf16_as_f32", g.randn((3, 40)).astype(NP[BF16C]), g.randn((40, 64)).astype(NP[BF16C]), F32),
        ("mm_f32_as_f64", g.randn((4, 70)), g.randn((70, 64)), F64),
        ("mm_i32_as_f32", g.ints((3, 8), -50, 50, np.int32), g.ints((8, 2), -50, 50, np.int32), F32),
        # big enough for tg's panel-packed matmul (m*k*n >= 2^20, n % 32 == 0)
        ("mm_f16_as_f32_packed", g.randn((64, 128)).astype(np.float16), g.randn((128, 128)).astype(np.float16), F32),
        ("mm_i8_as_i32_packed", g.ints((64, 128), -128, 127, np.int8), g.ints((128, 128), -128, 127, np.int8), I32),
    ]
    for label, a, b, dt in mm:
        k = a.shape[-1]
        if np.dtype(NP[dt]).kind == "f":
            want = np.matmul(a.astype(NP[dt]).astype(np.float64), b.astype(NP[dt]).astype(np.float64)).astype(NP[dt])
            u = {F16: 2.0 ** -11, F32: 2.0 ** -24, F64: 2.0 ** -53}[dt]
            s = float(np.matmul(np.abs(a.astype(np.float64)), np.abs(b.astype(np.float64))).max())
            rtol, atol = 1e-6 if dt != F64 else 1e-14, 2 * k * u * s
        else:
            want = np.matmul(a.astype(NP[dt]), b.astype(NP[dt]), dtype=NP[dt])
            rtol = atol = 0.0
        g.add("matmul_dtype", label, [a, b], [want], rtol=rtol, atol=atol, dtype=dt)
    # SUM_DTYPE: float sums accumulate in promote(dtype, SUM_DTYPE) and return
    # it, except half/bfloat16/fp8 sums, which return their own dtype
    for label, x, acc in [("sum_f32_sum_dtype_f64", g.randn((3, 200)), F64),
                          ("sum_f16_sum_dtype_f64", (g.randn((3, 100)) * 10).astype(np.float16), F64),
                          ("sum_f32_sum_dtype_f16", g.randn((2, 50)), F16)]:
        inc = code(x.dtype)
        accd = promote(inc, acc)
        outd = inc if inc in (F16, BF16C) else accd
        r = x.astype(NP[accd]).astype(np.float64).sum(axis=1)
        want = r.astype(NP[accd]).astype(NP[outd])
        u = {F16: 2.0 ** -11, F32: 2.0 ** -24, F64: 2.0 ** -53}[accd]
        n = x.shape[1]
        g.add("sum_acc_float", label, [x], [want], rtol=4 * n * u + 1e-3 * (outd == F16),
              atol=2 * n * u * float(np.abs(x.astype(np.float64)).max()), acc=acc)
    # DEFAULT_FLOAT: ints turned into floats become the default float
    a = g.ints((3, 5), -40, 40, np.int32)
    b = g.ints((3, 5), 1, 9, np.int32)
    for dfl in (F16, F64, BF16C):
        for fn, name in ((0, "div"), (1, "sqrt"), (2, "adds_half")):
            if fn == 0:
                want, ins = (a.astype(np.float64) / b.astype(np.float64)), [a, b]
            elif fn == 1:
                want, ins = np.sqrt(np.abs(a).astype(np.float64)), [np.abs(a)]
            else:
                want, ins = a.astype(np.float64) + 0.5, [a]
            rt = {F16: 2.0 ** -10, F64: 1e-15, BF16C: 2.0 ** -7}[dfl]
            # sqrt in a small float computes in float32 and rounds once: 1 ulp
            g.add("default_float", "default_float_%s_%s" % (NP[dfl].name, name), ins, [want.astype(NP[dfl])],
                  rtol=rt, atol=0.0, fn=fn, dtype=dfl)
    return g


# ----------------------------------------------------------------- pool

def grouped(tpad, nd):
    """tinygrad's resolve_pool_pads then flat_to_grouped: ((before, after) per axis)."""
    from tinygrad.helpers import resolve_pool_pads, flat_to_grouped
    return [tuple(int(v) for v in p) for p in flat_to_grouped(resolve_pool_pads(list(tpad) if len(tpad) > 1 else tpad[0], nd))]


def ceildiv(a, b): return -(-a // b)


def pool_ref(x, kind, k, s, d, pairs, ceil, exclude, indices):
    """torch pooling of x (float64) with asymmetric pairs [(pB, pA)] per axis."""
    H, W = x.shape[-2:]
    ek = [d[j] * (k[j] - 1) + 1 for j in range(2)]
    sizes = (H, W)
    o = []
    for j in range(2):
        pB, pA = pairs[j]
        padded = sizes[j] + pB + pA
        if ceil:
            oj = ceildiv(padded - ek[j], s[j]) + 1
            if s[j] * (oj - 1) >= sizes[j] + pB: oj -= 1
        else:
            oj = (padded - ek[j]) // s[j] + 1
        o.append(oj)
    # right padding so that the o windows fit exactly
    extra = [max(0, s[j] * (o[j] - 1) + ek[j] - (sizes[j] + pairs[j][0] + pairs[j][1])) for j in range(2)]
    tp = (pairs[1][0], pairs[1][1], pairs[0][0], pairs[0][1])
    te = (0, extra[1], 0, extra[0])
    xt = torch.tensor(x)
    if kind == "max":
        xp = F.pad(F.pad(xt, tp, value=-np.inf), te, value=-np.inf)
        r, idx = F.max_pool2d(xp, k, s, 0, d, return_indices=True)
        r = r[..., :o[0], :o[1]]
        idx = idx[..., :o[0], :o[1]]
        Wp = xp.shape[-1]
        hh, ww = idx // Wp - pairs[0][0], idx % Wp - pairs[1][0]
        flat = hh * W + ww
        return (r, flat) if indices else (r,)
    xp = F.pad(F.pad(xt, tp, value=0.0), te, value=0.0)
    sm = F.avg_pool2d(xp, k, s, 0, divisor_override=1)[..., :o[0], :o[1]]
    if exclude:
        ones = F.pad(F.pad(torch.ones_like(xt), tp, value=0.0), te, value=0.0)
    else:
        ones = F.pad(F.pad(torch.ones_like(xt), tp, value=1.0), te, value=0.0)
    cnt = F.avg_pool2d(ones, k, s, 0, divisor_override=1)[..., :o[0], :o[1]]
    return (sm / cnt,)


def check_tinygrad_pool(x, kind, k, s, d, tpad, ceil, exclude, outs):
    """The torch-built reference must be what tinygrad's own pools give
    (run by its PYTHON emulator device): its padding forms, ceil mode and
    indices are the semantics tg follows."""
    from tinygrad import Tensor
    t = Tensor(x, device="PYTHON")
    tp = tpad[0] if len(tpad) == 1 else tuple(tpad)
    if kind == "avg":
        r = t.avg_pool2d(tuple(k), tuple(s), 1, tp, ceil, not exclude).numpy()
        assert r.shape == outs[0].shape and np.abs(r - outs[0]).max() <= 1e-6, ("tinygrad avg_pool2d differs", tpad)
    else:
        r, idx = t.max_pool2d(tuple(k), tuple(s), tuple(d), tp, ceil, return_indices=True)
        assert r.shape == outs[0].shape and np.abs(r.numpy() - outs[0]).max() == 0, ("tinygrad max_pool2d differs", tpad)
        assert len(outs) == 1 or (idx.numpy() == outs[1]).all(), ("tinygrad max_pool2d indices differ", tpad)


def gen_pool():
    g = CtlGroup("pool", 22)
    cases = [
        # (kind, x shape, kernel, stride, dilation, tpad, ceil, exclude, indices)
        ("avg", (2, 3, 6, 7), (3, 3), (1, 1), (1, 1), (1, 2, 0, 1), False, False, False),
        ("avg", (1, 2, 7, 6), (2, 3), (2, 2), (1, 1), (0, 2), False, False, False),
        ("avg", (1, 2, 8, 8), (3, 3), (2, 2), (1, 1), (2, 0, 1, 3), False, True, False),
        ("avg", (1, 1, 7, 9), (3, 2), (2, 3), (1, 1), (1, 0, 2, 1), True, False, False),
        ("avg", (1, 1, 7, 9), (3, 2), (2, 3), (1, 1), (1, 0, 2, 1), True, True, False),
        ("avg", (2, 5, 5), (2, 2), (1, 1), (1, 1), (3,), False, False, False),
        ("avg", (1, 2, 9, 8), (3, 3), (1, 2), (1, 1), (-1, 2, 1, -2), False, False, False),
        ("max", (2, 2, 6, 7), (3, 3), (1, 1), (1, 1), (1, 2, 0, 1), False, False, True),
        ("max", (1, 3, 8, 8), (2, 3), (2, 2), (1, 1), (0, 1, 1, 0), False, False, True),
        ("max", (1, 2, 9, 9), (3, 3), (2, 2), (2, 1), (2, 1, 0, 2), False, False, True),
        ("max", (1, 1, 7, 9), (3, 2), (2, 3), (1, 1), (1, 0, 2, 1), True, False, True),
        ("max", (1, 2, 8, 7), (2, 2), (1, 1), (1, 1), (-2, 1, 1, -1), False, False, True),
        ("max", (3, 6, 6), (3, 3), (3, 3), (1, 1), (1, 2), False, False, False),
    ]
    for kind, xs, k, s, d, tpad, ceil, exclude, indices in cases:
        x = g.randn(xs)
        pairs = grouped(tpad, 2)
        res = pool_ref(x.astype(np.float64), kind, k, s, d, pairs, ceil, exclude, indices)
        outs = [res[0].numpy().astype(np.float32)] + ([res[1].numpy().astype(np.int32)] if len(res) > 1 else [])
        check_tinygrad_pool(x, kind, k, s, d, tpad, ceil, exclude, outs)
        label = "%s_pool_%s_k%s_s%s_d%s_p%s%s%s" % (kind, "x".join(map(str, xs)), "".join(map(str, k)), "".join(map(str, s)),
                                                   "".join(map(str, d)), "_".join(map(str, tpad)), "_ceil" if ceil else "",
                                                   "_excl" if exclude else "")
        g.add(kind + "_pool2d", label, [x], outs, rtol=1e-6, atol=1e-6, kernel=list(k), stride=list(s), dilation=list(d),
              tpad=list(tpad), ceil_mode=int(ceil), exclude_pad=int(exclude), indices=int(indices))
    # conv2d with tinygrad's padding forms: F.pad, then conv with padding 0
    for xs, ws, tpad, stride in [((1, 2, 6, 7), (3, 2, 3, 3), (1, 2, 0, 1), (1, 1)),
                                 ((2, 3, 5, 5), (4, 3, 2, 3), (2, 1), (2, 1)),
                                 ((1, 1, 6, 6), (2, 1, 3, 3), (1,), (1, 1)),
                                 ((1, 2, 7, 8), (2, 2, 3, 2), (-1, 2, 2, -1), (1, 2))]:
        x, w = g.randn(xs), g.randn(ws)
        pairs = grouped(tpad, 2)
        tp = (pairs[1][0], pairs[1][1], pairs[0][0], pairs[0][1])
        r = F.conv2d(F.pad(torch.tensor(x.astype(np.float64)), tp), torch.tensor(w.astype(np.float64)), stride=stride)
        K = ws[1] * ws[2] * ws[3]
        s_abs = F.conv2d(F.pad(torch.tensor(np.abs(x).astype(np.float64)), tp), torch.tensor(np.abs(w).astype(np.float64)), stride=stride)
        atol = 2.0 * K * 2.0 ** -24 * float(s_abs.max()) + 1e-7
        g.add("conv2d", "conv2d_%s_w%s_p%s_s%s" % ("x".join(map(str, xs)), "x".join(map(str, ws)), "_".join(map(str, tpad)),
                                                   "".join(map(str, stride))),
              [x, w], [r.numpy().astype(np.float32)], rtol=1e-6, atol=atol, tpad=list(tpad), stride=list(stride))
    # conv_transpose2d with asymmetric padding: torch's with padding 0, then
    # pB cropped from the start and pA from the end of each output axis
    for xs, ws, tpad, stride, opad, dil in [((1, 2, 4, 5), (2, 3, 3, 3), (1, 0, 2, 1), (2, 2), (1, 0), (1, 1)),
                                            ((2, 3, 3, 4), (3, 2, 2, 3), (0, 2), (1, 2), (0, 1), (1, 1)),
                                            ((1, 2, 5, 4), (2, 2, 3, 2), (2, 1, 0, 1), (2, 1), (0, 0), (1, 2))]:
        x, w = g.randn(xs), g.randn(ws)
        pairs = grouped(tpad, 2)

        def ct(a, b):
            r = F.conv_transpose2d(a, b, stride=stride, output_padding=opad, dilation=dil)
            H, W = r.shape[-2:]
            return r[..., pairs[0][0]:H - pairs[0][1], pairs[1][0]:W - pairs[1][1]]
        r = ct(torch.tensor(x.astype(np.float64)), torch.tensor(w.astype(np.float64)))
        s_abs = ct(torch.tensor(np.abs(x).astype(np.float64)), torch.tensor(np.abs(w).astype(np.float64)))
        K = ws[0] * ws[2] * ws[3]
        atol = 2.0 * K * 2.0 ** -24 * float(s_abs.max()) + 1e-7
        g.add("conv_transpose2d", "conv_transpose2d_%s_w%s_p%s_s%s_op%s_d%s" % (
                  "x".join(map(str, xs)), "x".join(map(str, ws)), "_".join(map(str, tpad)), "".join(map(str, stride)),
                  "".join(map(str, opad)), "".join(map(str, dil))),
              [x, w], [r.numpy().astype(np.float32)], rtol=1e-6, atol=atol, tpad=list(tpad), stride=list(stride),
              output_padding=list(opad), dilation=list(dil))
    return g


def gen_resolve():
    g = CtlGroup("resolve", 23)
    for tpad, nd in [((2,), 1), ((1, 3), 1), ((0,), 2), ((1, 2), 2), ((1, 2, 3, 4), 2), ((-1, 2, 0, 5), 2),
                     ((1, 2, 3), 3), ((1, 2, 3, 4, 5, 6), 3), ((7,), 3)]:
        pairs = grouped(tpad, nd)
        g.add("resolve", "resolve_%d_%s" % (nd, "_".join(map(str, tpad))), [], [np.array(pairs, np.int32).reshape(-1)],
              tpad=list(tpad), ndims=nd)
    return g


# ----------------------------------------------------------------- names

TG_OF_TINYGRAD = {"bool": 0, "char": 1, "uchar": 2, "short": 3, "ushort": 4, "int": 5, "uint": 6, "long": 7, "ulong": 8,
                  "fp8e4m3": 9, "fp8e5m2": 10, "half": 11, "bfloat16": 12, "float": 13, "double": 14}


def tg_code_of_tinygrad(dt):
    """A tinygrad DType as a tg code, by its canonical name (dtypes.X.name
    is the C name: 'float', 'unsigned char', ...; fmt gives width)."""
    from tinygrad.dtype import dtypes
    for attr, c in TG_OF_TINYGRAD.items():
        if getattr(dtypes, attr) == dt: return c
    raise KeyError(dt)


NUMPY_ONLY = ["bool_", "single", "byte", "ubyte", "intc", "uintc", "longlong", "ulonglong", "int_", "intp", "uintp",
              "b1", "i1", "u1", "i2", "u2", "i4", "u4", "i8", "u8", "f2", "f4", "f8", "<f4", "=i2", "|u1",
              "?", "b", "B", "h", "H", "i", "I", "l", "L", "q", "Q", "e", "f", "d", "np.float16", "numpy.int64"]
TINYGRAD_NAMES = ["bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "fp8e4m3", "fp8e5m2",
                  "float16", "bfloat16", "float32", "float64", "half", "float", "double", "uchar", "ushort", "uint", "ulong",
                  "char", "short", "int", "long", "HALF", "Float32", "BFloat16", "dtypes.float", "dtypes.half"]
EXTRA = {"float8_e4m3fn": np.dtype(NP[9]), "float8_e5m2": np.dtype(NP[10]), "bf16": np.dtype(NP[12]), "f16": np.float16,
         "f32": np.float32, "f64": np.float64, "torch.float16": np.float16, "torch.bfloat16": np.dtype(NP[12]),
         "torch.float8_e4m3fn": np.dtype(NP[9])}


def gen_names():
    import ml_dtypes  # noqa: F401  (registers the names numpy then knows)
    from tinygrad.dtype import to_dtype
    g = CtlGroup("names", 24)
    for n in TINYGRAD_NAMES:
        c = tg_code_of_tinygrad(to_dtype(n[len("dtypes."):] if n.startswith("dtypes.") else n))
        g.add("name", "tinygrad_" + n, [], [np.array([c], np.int32)], name=[ord(ch) for ch in n])
    for n in NUMPY_ONLY:
        c = CODE[np.dtype(n.split(".")[-1])]
        g.add("name", "numpy_" + n, [], [np.array([c], np.int32)], name=[ord(ch) for ch in n])
    for n, dt in EXTRA.items():
        if n.startswith("torch."): assert str(getattr(torch, n.split(".")[1])) == n
        g.add("name", "other_" + n, [], [np.array([CODE[np.dtype(dt)]], np.int32)], name=[ord(ch) for ch in n])
    return g


# ----------------------------------------------------------------- threefry

def gen_threefry():
    g = CtlGroup("threefry", 25)
    M = 0xFFFFFFFF
    xs = [0, 1, 2 ** 32, 2 ** 64 - 1, 0x0123456789ABCDEF, 0xFEDCBA9876543210, 2 ** 53 - 1, 12345]
    keys = [0, 0x5eed, 2 ** 64 - 1, 0x13198a2e03707344 << 0, 42, 0xDEADBEEFCAFEF00D, 7, 1 << 63]
    rng = np.random.default_rng(25)
    xs += [int(v) for v in rng.integers(0, 2 ** 63, 8, dtype=np.int64)]
    keys += [int(v) for v in rng.integers(0, 2 ** 63, 8, dtype=np.int64)]

    def tf(x, k):
        lo, hi = threefry2x32(x & M, x >> 32, k & M, k >> 32)
        return (hi << 32) | lo
    want = [tf(x, k) for x, k in zip(xs, keys)]
    # and tinygrad's own Tensor.threefry, run by its PYTHON (emulator) device
    from tinygrad import Tensor
    tx = Tensor(np.array(xs, np.uint64), device="PYTHON").threefry(Tensor(np.array(keys, np.uint64), device="PYTHON"))
    assert [int(v) for v in tx.numpy().tolist()] == want, "tinygrad's threefry differs"
    g.add("threefry", "threefry_pairs", [np.array(xs, np.uint64), np.array(keys, np.uint64)], [np.array(want, np.uint64)])
    # small values (exact as doubles): the tg_full constant path
    small = [(3, 5), (0, 0), (2 ** 40 + 1, 2 ** 50 + 3), (2 ** 53, 99)]
    g.add("threefry", "threefry_small", [np.array([a for a, _ in small], np.uint64), np.array([b for _, b in small], np.uint64)],
          [np.array([tf(a, b) for a, b in small], np.uint64)])
    return g


def main():
    for g in (gen_acc(), gen_pool(), gen_resolve(), gen_names(), gen_threefry()):
        path, n, size = g.write()
        print("wrote %s (%d cases, %d bytes)" % (os.path.relpath(path), n, size))


if __name__ == "__main__":
    main()
