#!/usr/bin/env python3
"""gen_torch_math.py: golden data for tests/test_math.c (the ops of include/tg_math.h),
computed with PyTorch.

Run from the repository root:  python3 tests/gen/gen_torch_math.py
Needs torch, numpy and ml_dtypes. Deterministic: every group draws from
np.random.default_rng(<fixed seed>). Writes tests/goldens/torch_math_<group>.bin in
the format of gen_ops.py (its writer is reused; see the top of that script).

Where the expected values come from:
  * continuous float ops: torch in float64 on the (float32/float16) inputs, rounded once
    to the result dtype, so a case measures tg's error against the true value; the
    tolerance covers tg's composition of exp2/log2/sin/sqrt primitives;
  * discrete ops (rounding, floor division and remainders, bits, comparisons, sorting,
    scans of ints, max/min): torch in the input dtype, exact;
  * backward cases: torch autograd in float64 for L = sum(out * w), w a random array of
    the output's shape; inputs = [x (, y, ...), w], outputs = [out, dL/dx (, dL/dy ...)],
    params backward=1 and wrt = the input indices whose gradients follow out.
Where tg follows tinygrad instead of torch the golden says so (dtype column):
  * index outputs (argsort, sort/topk/cummax/cummin indices) are int32 (torch: int64);
  * cumsum of bool/int8/int16/int32 gives int32 (tinygrad's sum dtype; torch: int64),
    cumprod keeps the dtype (torch: int64);
  * erf is tinygrad's polynomial (A&S 7.1.26, |error| <= 1.5e-7): atol 3e-7;
  * gelu is the tanh approximation (torch: approximate='tanh').
"""
import os
import sys
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_ops import Group, OUT  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

torch.set_default_dtype(torch.float32)
np.seterr(all="ignore")                                  # inf/NaN inputs are intended
warnings.filterwarnings("ignore", message=".*degrees of freedom.*")   # var with N <= correction is intended
INF, NAN = float("inf"), float("nan")


class TGroup(Group):
    """A Group written to torch_math_<name>.bin."""
    PREFIX = "torch_math_"


def tt(a):
    return torch.from_numpy(np.array(a, copy=True))


def tn(t, dt=None):
    """torch tensor -> numpy, optionally cast to a numpy dtype"""
    a = t.detach().cpu().numpy()
    return a.astype(dt) if dt is not None else a


def sh(shape):
    return "x".join(map(str, shape)) or "s"


def with_specials(g, shape, specials, scale=1.0, lo=None, hi=None, dt=np.float32):
    """random values of shape (flattened) followed by the special values, 1-D"""
    n = int(np.prod(shape))
    base = g.uniform((n,), lo, hi, dt) if lo is not None else g.randn((n,), dt, scale)
    return np.concatenate([base, np.array(specials, dt)]).astype(dt)


def f64ref(fn, *xs, out=None):
    """fn on float64 copies of the inputs, rounded to out (default: the first input's dtype)"""
    r = fn(*[tt(x).double() for x in xs])
    return tn(r).astype(out or xs[0].dtype)


# ----------------------------------------------------------------- unary


# name: (torch fn on float64, domain (lo, hi) or scale, specials, rtol, atol)
SPEC_INF = [0.0, -0.0, INF, -INF, NAN]
UNARY = {
    "tan": (torch.tan, (-1.4, 1.4), [0.0, -0.0, NAN, 1.0], 1e-5, 1e-6),
    "asin": (torch.asin, (-1.0, 1.0), [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 0.49999, 0.50001, 1.5, -2.0, NAN, 1e-6], 2e-6, 1e-7),
    "acos": (torch.acos, (-1.0, 1.0), [0.0, 1.0, -1.0, 0.5, -0.5, 0.9999, -0.9999, 1.5, NAN], 2e-6, 1e-7),
    "atan": (torch.atan, 4.0, [0.0, -0.0, INF, -INF, NAN, 1e4, -1e4, 2.4142, 2.4143, 0.41421, 0.41422, 1e-6], 2e-6, 1e-7),
    "sinh": (torch.sinh, (-6.0, 6.0), [0.0, -0.0, 1e-5, -1e-5, INF, -INF, NAN, 80.0, -80.0], 1e-5, 1e-7),
    "cosh": (torch.cosh, (-6.0, 6.0), [0.0, INF, -INF, NAN, 80.0, -80.0], 1e-5, 1e-7),
    "asinh": (torch.asinh, 10.0, [0.0, -0.0, 1e-6, -1e-6, 1e5, -1e5, 5000.0, INF, -INF, NAN], 2e-6, 1e-7),
    "acosh": (torch.acosh, (1.0, 20.0), [1.0, 1.0001, 0.5, -1.0, 1e5, 5000.0, INF, NAN], 2e-6, 1e-7),
    "atanh": (torch.atanh, (-0.99, 0.99), [0.0, -0.0, 1e-6, 1.0, -1.0, 1.5, -2.0, NAN], 2e-6, 1e-7),
    "log10": (torch.log10, (0.01, 100.0), [1.0, 10.0, 0.0, -0.0, -1.0, INF, NAN, 1e-30], 2e-6, 0.0),
    "log1p": (torch.log1p, (-0.9, 10.0), [0.0, -0.0, 1e-7, -1e-7, 1e-3, -1.0, -2.0, INF, NAN], 2e-6, 0.0),
    "expm1": (torch.expm1, 3.0, [0.0, -0.0, 1e-7, -1e-7, 1e-3, -100.0, 100.0, 88.0, INF, -INF, NAN], 2e-6, 0.0),
    "erf": (torch.erf, 1.5, [0.0, -0.0, 5.0, -5.0, INF, -INF, NAN, 1e-3], 0.0, 3e-7),
    # activations
    "relu6": (F.relu6, 5.0, SPEC_INF + [6.0, 6.5, -1.0], 0.0, 0.0),
    "hardtanh": (lambda x, lo, hi: F.hardtanh(x, lo, hi), 2.0, SPEC_INF, 0.0, 0.0),
    "leaky_relu": (lambda x, s: F.leaky_relu(x, s), 3.0, SPEC_INF, 2e-7, 0.0),
    "elu": (lambda x, a: F.elu(x, a), 3.0, SPEC_INF + [-1e-6, -30.0], 2e-6, 0.0),
    "celu": (lambda x, a: F.celu(x, a), 3.0, SPEC_INF + [-1e-6, -30.0], 2e-6, 0.0),
    "selu": (F.selu, 3.0, SPEC_INF + [-1e-6, -30.0], 2e-6, 0.0),
    "gelu": (lambda x: F.gelu(x, approximate="tanh"), 3.0, SPEC_INF + [1e-4, -1e-4, 20.0, -20.0, 1e20, -1e20], 4e-6, 1e-7),
    "quick_gelu": (lambda x: x * torch.sigmoid(1.702 * x), 3.0, [0.0, -0.0, INF, NAN, 30.0, -30.0], 4e-6, 1e-7),
    "silu": (F.silu, 3.0, [0.0, -0.0, INF, NAN, 30.0, -30.0, -100.0], 4e-6, 1e-7),
    "swish": (F.silu, 3.0, [0.0, 30.0, -30.0], 4e-6, 1e-7),
    "mish": (F.mish, 3.0, [0.0, -0.0, INF, NAN, 30.0, -30.0, -100.0, 100.0], 4e-6, 1e-7),
    "softplus": (lambda x, b, t: F.softplus(x, b, t), 5.0, [0.0, INF, -INF, NAN, 30.0, -30.0, -100.0, 19.0, 21.0], 2e-6, 1e-7),
    "softsign": (F.softsign, 5.0, [0.0, -0.0, INF, -INF, NAN, 1e30], 1e-6, 0.0),
    "logsigmoid": (F.logsigmoid, 5.0, [0.0, INF, -INF, NAN, 30.0, -30.0, -100.0, 100.0], 2e-6, 1e-7),
    "hardsigmoid": (F.hardsigmoid, 3.0, SPEC_INF + [3.0, -3.0, 2.9], 1e-6, 0.0),
    "hardswish": (F.hardswish, 3.0, SPEC_INF + [3.0, -3.0, 2.9], 1e-6, 0.0),
}
UNARY_PARAMS = {"hardtanh": {"lo": -1.5, "hi": 0.75}, "leaky_relu": {"slope": 0.1}, "elu": {"alpha": 1.3},
                "celu": {"alpha": 0.7}, "softplus": {"beta": 1.0, "threshold": 20.0}}
PORDER = {"hardtanh": ["lo", "hi"], "leaky_relu": ["slope"], "elu": ["alpha"], "celu": ["alpha"], "softplus": ["beta", "threshold"]}


def uref(name, x, params, out=None):
    fn = UNARY[name][0]
    args = [params[k] for k in PORDER.get(name, [])]
    return f64ref(lambda t: fn(t, *args), x, out=out)


def domain(g, name, n):
    d = UNARY[name][1]
    if isinstance(d, tuple):
        return g.uniform((n,), d[0], d[1])
    return g.randn((n,), scale=d)


def gen_unary():
    g = TGroup("unary", 101)
    for name, (fn, dom, specials, rtol, atol) in UNARY.items():
        params = UNARY_PARAMS.get(name, {})
        x = np.concatenate([domain(g, name, 20), np.array(specials, np.float32)]).astype(np.float32)
        g.add(name, "%s_f32_specials" % name, [x], uref(name, x, params), rtol, atol, **params)
        if name in ("tan", "atan", "erf", "gelu", "silu", "softplus", "mish", "hardswish", "elu", "log1p"):
            x2 = domain(g, name, 12).reshape(3, 4)
            g.add(name, "%s_f32_3x4" % name, [x2], uref(name, x2, params), rtol, atol, **params)
        if name in ("tan", "asin", "atan", "sinh", "log1p", "expm1", "gelu", "softplus", "mish", "hardswish"):
            x3 = domain(g, name, 8).astype(np.float64)
            g.add(name, "%s_f64" % name, [x3], uref(name, x3, params), max(rtol, 1e-12) if name in ("sinh", "log1p", "expm1", "gelu", "softplus", "mish", "hardswish") else 2e-6, atol, **params)
        if name in ("atanh", "erf", "silu", "cosh", "log10", "selu"):
            x4 = domain(g, name, 6).astype(np.float16)
            g.add(name, "%s_f16" % name, [x4], uref(name, x4, params), 2e-3, max(atol, 1e-6), **params)
        if name in ("acos", "asinh", "elu", "logsigmoid"):
            s0 = domain(g, name, 1).reshape(())
            g.add(name, "%s_0d" % name, [s0], uref(name, s0, params), rtol, atol, **params)
        if name in ("acosh", "quick_gelu"):
            e = np.zeros((2, 0), np.float32)
            g.add(name, "%s_empty" % name, [e], uref(name, e, params), rtol, atol, **params)
        if name in ("tan", "erf", "relu6", "softsign", "log10", "hardtanh"):
            xi = g.ints((5,), -3, 8, np.int32)
            want = tn(fn(tt(xi).double(), *[params[k] for k in PORDER.get(name, [])]))
            # transcendental ops of ints compute in float32; relu6/hardtanh keep the int dtype (torch)
            want = want.astype(np.int32) if name in ("relu6",) else want.astype(np.float32)
            g.add(name, "%s_i32" % name, [xi], want, rtol, max(atol, 1e-6) if name != "relu6" else 0, **params)

    # rounding, sign, square (exact)
    vals = [0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.49999997, -0.49999997, 0.0, -0.0, 0.4, -0.4, INF, -INF, NAN,
            1e10, -1e10, 8388609.0, 8388608.5, -8388609.0, 16777215.0, 1e-40, -1e-40, 3.7, -3.7, 4.5, 5.5]
    for name, fn in [("trunc", torch.trunc), ("floor", torch.floor), ("ceil", torch.ceil), ("round", torch.round),
                     ("sign", torch.sign), ("square", torch.square)]:
        x = np.concatenate([g.randn((10,), scale=4.0), np.array(vals, np.float32)]).astype(np.float32)
        g.add(name, "%s_f32_specials" % name, [x], tn(fn(tt(x))), 0.0, 0.0, bitexact=1 if name != "square" else 0)
        x64 = np.array(vals + [2.0 ** 52 + 1, 4503599627370495.5, -4503599627370495.5], np.float64)
        g.add(name, "%s_f64" % name, [x64], tn(fn(tt(x64))), 0.0, 0.0)
        xh = np.array([0.5, 1.5, 2.5, -0.5, -2.5, 3.3, -3.7, 1000.5, 0.0], np.float16)
        g.add(name, "%s_f16" % name, [xh], tn(fn(tt(xh))), 0.0, 0.0)
        if name != "square":
            xi = g.ints((2, 3), -100, 100, np.int32)
            g.add(name, "%s_i32" % name, [xi], tn(fn(tt(xi))), 0.0, 0.0)
    xi8 = np.array([-128, -12, 0, 11, 12, 127], np.int8)
    g.add("square", "square_i8_wraps", [xi8], (xi8.astype(np.int32) ** 2).astype(np.int8), 0.0, 0.0)
    g.add("round", "round_0d", [np.float32(2.5)], np.float32(2.0), 0.0, 0.0)
    g.add("sign", "sign_empty", [np.zeros((0, 3), np.float32)], np.zeros((0, 3), np.float32), 0.0, 0.0)
    g.add("sign", "sign_u8", [np.array([0, 1, 200], np.uint8)], np.array([0, 1, 1], np.uint8), 0.0, 0.0)

    # classification
    xs = np.array([0.0, -0.0, 1.0, -1e30, INF, -INF, NAN, -NAN, 1e-40], np.float32)
    for name, fn in [("isnan", torch.isnan), ("isinf", torch.isinf), ("isfinite", torch.isfinite)]:
        g.add(name, "%s_f32" % name, [xs.reshape(3, 3)], tn(fn(tt(xs.reshape(3, 3)))))
        g.add(name, "%s_f16" % name, [xs.astype(np.float16)], tn(fn(tt(xs.astype(np.float16)))))
        xi = np.array([0, 5, -7], np.int32)
        g.add(name, "%s_i32" % name, [xi], tn(fn(tt(xi))))
    g.add("isnan", "isnan_0d", [np.float32(NAN)], np.bool_(True))
    return g


# ----------------------------------------------------------------- binary


def gen_binary():
    g = TGroup("binary", 102)
    # logaddexp, copysign: float, with special pairs
    sa = np.array([0.0, INF, -INF, INF, -INF, NAN, 1.0, 3.0, -100.0, 100.0, 1e-7, 0.0], np.float32)
    sb = np.array([0.0, INF, -INF, -INF, 3.0, 1.0, NAN, 3.0, 100.0, 99.0, -1e-7, -50.0], np.float32)
    a, b = g.randn((3, 4), scale=5.0), g.randn((4,), scale=5.0)
    g.add("logaddexp", "logaddexp_f32_3x4_4", [a, b], f64ref(torch.logaddexp, a, b), 2e-6, 1e-7)
    g.add("logaddexp", "logaddexp_f32_specials", [sa, sb], f64ref(torch.logaddexp, sa, sb), 2e-6, 1e-7)
    ai, bi = g.ints((5,), -5, 5, np.int32), g.ints((5,), -5, 5, np.int32)
    g.add("logaddexp", "logaddexp_i32", [ai, bi], f64ref(torch.logaddexp, ai, bi, out=np.float32), 2e-6, 1e-7)
    ah, bh = g.randn((6,), np.float16), g.randn((6,), np.float16)
    g.add("logaddexp", "logaddexp_f16", [ah, bh], f64ref(torch.logaddexp, ah, bh), 2e-3, 1e-5)
    ca = np.array([1.0, -2.0, 0.0, -0.0, INF, -INF, NAN, 3.0, 3.0, 5.0, -5.0, 0.0], np.float32)
    cb = np.array([-1.0, 2.0, -0.0, 0.0, -3.0, 1.0, -1.0, np.copysign(NAN, -1.0), NAN, -0.0, 0.0, -INF], np.float32)
    g.add("copysign", "copysign_f32_specials", [ca, cb], tn(torch.copysign(tt(ca), tt(cb))), 0.0, 0.0, bitexact=1)
    a, b = g.randn((2, 3)), g.randn((2, 1))
    g.add("copysign", "copysign_f32_bcast", [a, b], tn(torch.copysign(tt(a), tt(b))), 0.0, 0.0)
    g.add("copysign", "copysign_f64", [a.astype(np.float64), -b.astype(np.float64)],
          tn(torch.copysign(tt(a.astype(np.float64)), tt(-b.astype(np.float64)))), 0.0, 0.0)
    g.add("copysign", "copysign_i32", [ai, bi], tn(torch.copysign(tt(ai), tt(bi))).astype(np.float32), 0.0, 0.0)

    # floor division and remainders: exact, in the input dtype
    fa = np.array([-7, 7, -7, 7, -0.0, 0.0, 5, -5, INF, -INF, NAN, 1, -1, 1, 6, -6, 1e30, 7.5, -7.5, 0.3, 1e-30, 5], np.float32)
    fb = np.array([2, -2, -2, 2, 3, -3, 0, 0, 2, 3, 1, INF, INF, -INF, 3, 3, 7, 2, 2, 0.1, 3, NAN], np.float32)
    for name, fn in [("floordiv", torch.floor_divide), ("mod", torch.remainder), ("fmod", torch.fmod)]:
        g.add(name, "%s_f32_specials" % name, [fa, fb], tn(fn(tt(fa), tt(fb))), 0.0, 0.0)
        a, b = g.randn((4, 5), scale=20.0), g.randn((5,), scale=3.0)
        b = np.where(np.abs(b) < 0.1, 0.7, b).astype(np.float32)
        g.add(name, "%s_f32_4x5_5" % name, [a, b], tn(fn(tt(a), tt(b))), 0.0, 0.0)
        a64, b64 = g.randn((6,), np.float64, 1e3), g.randn((6,), np.float64, 3.0)
        g.add(name, "%s_f64" % name, [a64, b64], tn(fn(tt(a64), tt(b64))), 1e-12, 1e-12)
        ah, bh = g.randn((6,), np.float16, 10.0), np.array([3, -3, 2.5, -0.5, 7, 1], np.float16)
        g.add(name, "%s_f16" % name, [ah, bh], tn(fn(tt(ah), tt(bh))), 0.0, 0.0)
        ia = np.array([-7, 7, -7, 7, 0, 5, -5, 6, -6, 2147483647, -2147483648, -2147483648, 13], np.int32)
        ib = np.array([2, -2, -2, 2, 3, 7, 7, 3, -3, 10, 10, -1, 1], np.int32)
        want = tn(fn(tt(ia).long(), tt(ib).long())).astype(np.int32)   # torch traps int32 min // -1
        g.add(name, "%s_i32" % name, [ia, ib], want, 0.0, 0.0)
        i8a, i8b = g.ints((3, 4), -128, 127, np.int8), np.array([3, -5, 7, -128], np.int8)
        g.add(name, "%s_i8_bcast" % name, [i8a, i8b], tn(fn(tt(i8a), tt(i8b))), 0.0, 0.0)
        ua, ub = np.array([7, 200, 0, 255], np.uint8), np.array([2, 7, 3, 16], np.uint8)
        g.add(name, "%s_u8" % name, [ua, ub], tn(fn(tt(ua), tt(ub))), 0.0, 0.0)
        g.add(name, "%s_i32_f32" % name, [ia[:5], fb[:5]], tn(fn(tt(ia[:5]), tt(fb[:5]))), 0.0, 0.0)
    g.add("mod", "mod_0d", [np.float32(-5.5), np.float32(2.0)], np.float32(0.5), 0.0, 0.0)

    # bits
    for name, fn in [("bitwise_and", torch.bitwise_and), ("bitwise_or", torch.bitwise_or), ("bitwise_xor", torch.bitwise_xor)]:
        a, b = g.ints((3, 4), -1000, 1000, np.int32), g.ints((4,), -1000, 1000, np.int32)
        g.add(name, "%s_i32_bcast" % name, [a, b], tn(fn(tt(a), tt(b))))
        ba, bb = np.array([True, False, True, False]), np.array([True, True, False, False])
        g.add(name, "%s_bool" % name, [ba, bb], tn(fn(tt(ba), tt(bb))))
        ua, i16 = np.array([255, 1, 128], np.uint8), np.array([-1, 3, 256], np.int16)
        g.add(name, "%s_u8_i16" % name, [ua, i16], tn(fn(tt(ua), tt(i16))))
        la, lb = np.array([-(2 ** 62), 2 ** 40 + 5, -1], np.int64), np.array([2 ** 62 + 3, 7, 2 ** 33], np.int64)
        g.add(name, "%s_i64" % name, [la, lb], tn(fn(tt(la), tt(lb))))
    xi = np.array([0, 1, -1, 2147483647, -2147483648, 12345], np.int32)
    g.add("bitwise_not", "bitwise_not_i32", [xi], ~xi)
    g.add("bitwise_not", "bitwise_not_u8", [np.array([0, 1, 255], np.uint8)], np.array([255, 254, 0], np.uint8))
    g.add("bitwise_not", "bitwise_not_bool", [np.array([True, False])], np.array([False, True]))
    g.add("bitwise_not", "bitwise_not_u64", [np.array([0, 1], np.uint64)], np.array([2 ** 64 - 1, 2 ** 64 - 2], np.uint64))
    sa = np.array([1, -8, 5, 1, -8, 12345, 7, -1, 3, 3], np.int32)
    sb = np.array([3, 2, 0, 31, 40, 33, -1, 31, 32, 100], np.int32)
    for name, fn in [("lshift", torch.bitwise_left_shift), ("rshift", torch.bitwise_right_shift)]:
        g.add(name, "%s_i32" % name, [sa, sb], tn(fn(tt(sa), tt(sb))))
        ua, ub = np.array([1, 255, 128, 3], np.uint8), np.array([7, 1, 8, 9], np.uint8)
        g.add(name, "%s_u8" % name, [ua, ub], tn(fn(tt(ua), tt(ub))))
        la, lb = np.array([1, -5, 2 ** 40], np.int64), np.array([62, 3, 64], np.int64)
        g.add(name, "%s_i64" % name, [la, lb], tn(fn(tt(la), tt(lb))))
        a8 = np.array([[1, -3], [64, 100]], np.int8)
        g.add(name + "s", "%ss_i8_by3" % name, [a8], tn(fn(tt(a8), 3)), bits=3)
    # clamp
    x = np.concatenate([g.randn((10,), scale=3.0), np.array([NAN, INF, -INF, -0.0], np.float32)])
    g.add("clamp", "clamp_f32_both", [x], tn(torch.clamp(tt(x), -1.0, 2.0)), 0.0, 0.0, lo=-1.0, hi=2.0)
    g.add("clamp", "clamp_f32_lo_only", [x], tn(torch.clamp(tt(x), min=0.5)), 0.0, 0.0, lo=0.5, hi=NAN)
    g.add("clamp", "clamp_f32_hi_only", [x], tn(torch.clamp(tt(x), max=-0.5)), 0.0, 0.0, lo=NAN, hi=-0.5)
    g.add("clamp", "clamp_f32_lo_gt_hi", [x], tn(torch.clamp(tt(x), 1.0, -1.0)), 0.0, 0.0, lo=1.0, hi=-1.0)
    xi = g.ints((2, 5), -10, 10, np.int32)
    g.add("clamp", "clamp_i32", [xi], tn(torch.clamp(tt(xi), -3, 4)), 0.0, 0.0, lo=-3.0, hi=4.0)
    g.add("clamp", "clamp_i32_float_bound", [xi], tn(torch.clamp(tt(xi), min=1.5)), 0.0, 0.0, lo=1.5, hi=NAN)
    g.add("clamp", "clamp_0d", [np.float32(7.0)], np.float32(3.0), 0.0, 0.0, lo=0.0, hi=3.0)
    xh = g.randn((5,), np.float16, 3.0)
    g.add("clamp", "clamp_f16", [xh], tn(torch.clamp(tt(xh), -1.0, 1.0)), 0.0, 0.0, lo=-1.0, hi=1.0)
    a, lo, hi = g.randn((3, 4), scale=2.0), g.randn((4,), scale=0.5) - 1, g.randn((3, 1), scale=0.5) + 1
    g.add("clamp_tensor", "clamp_tensor_bcast", [a, lo.astype(np.float32), hi.astype(np.float32)],
          tn(torch.clamp(tt(a), tt(lo.astype(np.float32)), tt(hi.astype(np.float32)))), 0.0, 0.0)
    cx, cl, ch = np.array([0.0, 5.0, -5.0, NAN, 1.0], np.float32), np.array([NAN, -1.0, -1.0, 0.0, 2.0], np.float32), np.array([1.0, NAN, 1.0, 1.0, 0.0], np.float32)
    g.add("clamp_tensor", "clamp_tensor_nan_bounds", [cx, cl, ch], tn(torch.clamp(tt(cx), tt(cl), tt(ch))), 0.0, 0.0)
    ci, cli, chi = np.array([-5, 0, 5], np.int32), np.array([-1, -1, -1], np.int32), np.array([1], np.int32)
    g.add("clamp_tensor", "clamp_tensor_i32", [ci, cli, chi], tn(torch.clamp(tt(ci), tt(cli), tt(chi))), 0.0, 0.0)
    # masked_fill
    x, m = g.randn((4, 5)), g.rng.random((1, 5)) < 0.5
    g.add("masked_fill", "masked_fill_f32_bcast", [x, m], tn(tt(x).masked_fill(tt(m), -1.5)), 0.0, 0.0, value=-1.5)
    g.add("masked_fill", "masked_fill_f32_nan", [x, m], tn(tt(x).masked_fill(tt(m), NAN)), 0.0, 0.0, value=NAN)
    g.add("masked_fill", "masked_fill_f32_ninf", [x, m], tn(tt(x).masked_fill(tt(m), -INF)), 0.0, 0.0, value=-INF)
    xi, mi = g.ints((3, 2), -9, 9, np.int32), g.rng.random((3, 2)) < 0.5
    g.add("masked_fill", "masked_fill_i32", [xi, mi], tn(tt(xi).masked_fill(tt(mi), 7)), 0.0, 0.0, value=7.0)
    g.add("masked_fill", "masked_fill_0d_mask", [x, np.bool_(True)], np.full((4, 5), 2.0, np.float32), 0.0, 0.0, value=2.0)
    # lerp
    a, b, w = g.randn((3, 4)), g.randn((4,)), g.uniform((3, 1), -0.5, 1.5)
    g.add("lerp", "lerp_f32_bcast", [a, b, w], f64ref(torch.lerp, a, b, w), 1e-6, 1e-7)
    wv = np.array([0.0, 1.0, 0.5, 0.49, 2.0, -1.0], np.float32)
    la, lb = g.randn((6,)), g.randn((6,))
    g.add("lerp", "lerp_f32_edges", [la, lb, wv], tn(torch.lerp(tt(la), tt(lb), tt(wv))), 1e-6, 1e-7)
    g.add("lerps", "lerps_f32_0.3", [a, b], f64ref(lambda x, y: torch.lerp(x, y, 0.3), a, b), 1e-6, 1e-7, w=0.3)
    g.add("lerps", "lerps_f32_1.0", [a, b], tn(torch.lerp(tt(a), tt(np.broadcast_to(b, (3, 4)).copy()), 1.0)), 0.0, 0.0, w=1.0)
    ah, bh = g.randn((4,), np.float16), g.randn((4,), np.float16)
    g.add("lerps", "lerps_f16_0.75", [ah, bh], f64ref(lambda x, y: torch.lerp(x, y, 0.75), ah, bh), 2e-3, 1e-4, w=0.75)
    # isclose
    ia = np.array([1.0, 1.0, 1.0, INF, INF, -INF, NAN, NAN, 0.0, 1e-9, 100.0, 1.0], np.float32)
    ib = np.array([1.0, 1.00001, 1.001, INF, -INF, -INF, NAN, 1.0, 1e-9, 0.0, 100.001, 3e38], np.float32)
    for rt, at, en in [(1e-5, 1e-8, 0), (1e-5, 1e-8, 1), (0.0, 0.0, 0), (1e-2, 1e-3, 1)]:
        g.add("isclose", "isclose_f32_r%g_a%g_n%d" % (rt, at, en), [ia, ib],
              tn(torch.isclose(tt(ia), tt(ib), rtol=rt, atol=at, equal_nan=bool(en))), r_tol=rt, a_tol=at, equal_nan=en)
    xi, yi = np.array([1, 2, 100, -5], np.int32), np.array([1, 3, 101, -5], np.int32)
    g.add("isclose", "isclose_i32", [xi, yi], tn(torch.isclose(tt(xi), tt(yi), rtol=0.01, atol=0.0)), r_tol=0.01, a_tol=0.0, equal_nan=0)
    a = g.randn((2, 3))
    g.add("isclose", "isclose_bcast", [a, a[:1] + 1e-7], tn(torch.isclose(tt(a), tt(a[:1] + 1e-7))), r_tol=1e-5, a_tol=1e-8, equal_nan=0)
    return g


# ----------------------------------------------------------------- reductions


def red_params(axes, keepdim):
    if axes is None: return {"axes_all": 1, "keepdim": int(keepdim)}
    return {"axes": list(axes), "keepdim": int(keepdim)}


def tdim(axes):
    return None if axes is None else tuple(axes)


def gen_reduce():
    g = TGroup("reduce", 103)
    x = g.randn((4, 6), scale=2.0) + 1
    x3 = g.randn((2, 3, 5))
    for name, fn in [("var", torch.var), ("std", torch.std)]:
        for arr, axes, kd, corr in [(x, [1], False, 1), (x, [0], True, 1), (x, None, False, 1), (x, [-1], False, 0),
                                    (x3, [0, 2], True, 2), (x3, [1], False, 5), (x[:, :1], [1], False, 1),
                                    (np.zeros((3, 0), np.float32), [1], False, 1)]:
            def f(t): return fn(t, dim=tdim(axes), keepdim=kd, correction=corr)
            g.add(name, "%s_%s_axes%s_kd%d_c%d" % (name, sh(arr.shape), "all" if axes is None else ",".join(map(str, axes)), kd, corr),
                  [arr], f64ref(f, arr), 1e-5, 1e-6, correction=float(corr), **red_params(axes, kd))
        xi = g.ints((3, 4), -10, 10, np.int32)
        g.add(name, "%s_i32" % name, [xi], f64ref(lambda t: fn(t, dim=1), xi, out=np.float32), 1e-5, 1e-6, correction=1.0, axes=[1], keepdim=0)
        xh = g.randn((3, 8), np.float16)
        g.add(name, "%s_f16" % name, [xh], f64ref(lambda t: fn(t, dim=1), xh), 2e-3, 1e-4, correction=1.0, axes=[1], keepdim=0)
        g.add(name, "%s_0d" % name, [np.float32(3.0)], f64ref(lambda t: fn(t, correction=0), np.float32(3.0)), 0.0, 0.0,
              correction=0.0, axes_all=1, keepdim=0)
    for name, fn in [("var_mean", torch.var_mean), ("std_mean", torch.std_mean)]:
        for arr, axes, kd, corr in [(x, [1], False, 1), (x3, [0, 2], True, 0), (x, None, False, 1)]:
            v, m = fn(tt(arr).double(), dim=tdim(axes), keepdim=kd, correction=corr)
            g.add(name, "%s_%s_axes%s_kd%d_c%d" % (name, sh(arr.shape), "all" if axes is None else ",".join(map(str, axes)), kd, corr),
                  [arr], [tn(v, np.float32), tn(m, np.float32)], 1e-5, 1e-6, correction=float(corr), **red_params(axes, kd))
    # logsumexp
    ls = np.array([[0.0, 1.0, 2.0, 3.0], [-INF, -INF, -INF, -INF], [INF, 1.0, 2.0, 3.0], [NAN, 1.0, 2.0, 3.0],
                   [-INF, 0.0, -INF, 1.0], [100.0, 100.0, -100.0, 0.0]], np.float32)
    g.add("logsumexp", "logsumexp_specials_axis1", [ls], f64ref(lambda t: torch.logsumexp(t, 1), ls), 2e-6, 1e-6, axes=[1], keepdim=0)
    for arr, axes, kd in [(x, [0], True), (x3, [1, 2], False), (x3, None, False), (x, [-1], False)]:
        g.add("logsumexp", "logsumexp_%s_axes%s_kd%d" % (sh(arr.shape), "all" if axes is None else ",".join(map(str, axes)), kd),
              [arr], f64ref(lambda t: torch.logsumexp(t, dim=tdim(axes) if axes is not None else tuple(range(arr.ndim)), keepdim=kd), arr),
              2e-6, 1e-6, **red_params(axes, kd))
    e = np.zeros((2, 0), np.float32)
    g.add("logsumexp", "logsumexp_empty_axis", [e], np.full((2,), -INF, np.float32), 0.0, 0.0, axes=[1], keepdim=0)
    xi = g.ints((2, 5), -5, 5, np.int32)
    g.add("logsumexp", "logsumexp_i32", [xi], f64ref(lambda t: torch.logsumexp(t, 1), xi, out=np.float32), 2e-6, 1e-6, axes=[1], keepdim=0)
    xh = g.randn((2, 7), np.float16, 3.0)
    g.add("logsumexp", "logsumexp_f16", [xh], f64ref(lambda t: torch.logsumexp(t, 1), xh), 2e-3, 1e-4, axes=[1], keepdim=0)
    # any / all
    af = np.array([[0.0, 0.0, 0.0], [0.0, NAN, 0.0], [1.0, 2.0, -0.0], [-1.0, 2.0, 3.0]], np.float32)
    ab = g.rng.random((3, 4, 2)) < 0.3
    ai = np.array([[0, 0], [0, 5], [-3, 2]], np.int32)
    for name, fn in [("any", torch.any), ("all", torch.all)]:
        g.add(name, "%s_f32_axis1" % name, [af], tn(fn(tt(af), 1)), axes=[1], keepdim=0)
        g.add(name, "%s_f32_axis0_kd" % name, [af], tn(fn(tt(af), 0, keepdim=True)), axes=[0], keepdim=1)
        g.add(name, "%s_bool_axes0,2" % name, [ab], tn(fn(fn(tt(ab), 2), 0)), axes=[0, 2], keepdim=0)
        g.add(name, "%s_bool_all" % name, [ab], tn(fn(tt(ab))), axes_all=1, keepdim=0)
        g.add(name, "%s_i32_axis-1" % name, [ai], tn(fn(tt(ai), -1)), axes=[-1], keepdim=0)
        g.add(name, "%s_empty_axis" % name, [np.zeros((2, 0), np.float32)], tn(fn(tt(np.zeros((2, 0), np.float32)), 1)), axes=[1], keepdim=0)
        g.add(name, "%s_0d" % name, [np.float32(0.0)], tn(fn(tt(np.float32(0.0)))), axes_all=1, keepdim=0)
    return g


# ----------------------------------------------------------------- scans


def gen_scan():
    g = TGroup("scan", 104)
    x = g.randn((3, 7))
    x3 = g.randn((2, 5, 3))
    for axis in (1, 0, -1):
        g.add("cumsum", "cumsum_f32_3x7_axis%d" % axis, [x], f64ref(lambda t: torch.cumsum(t, axis), x), 1e-6, 1e-6, axis=axis)
    g.add("cumsum", "cumsum_f32_2x5x3_axis1", [x3], f64ref(lambda t: torch.cumsum(t, 1), x3), 1e-6, 1e-6, axis=1)
    g.add("cumsum", "cumsum_0d", [np.float32(2.5)], np.float32(2.5), 0.0, 0.0, axis=0)
    g.add("cumsum", "cumsum_empty", [np.zeros((0, 4), np.float32)], np.zeros((0, 4), np.float32), 0.0, 0.0, axis=0)
    long1 = g.randn((1000,))
    g.add("cumsum", "cumsum_f32_1000_blocks", [long1], f64ref(lambda t: torch.cumsum(t, 0), long1), 1e-5, 1e-4, axis=0)
    long2 = g.randn((600, 3))
    g.add("cumsum", "cumsum_f32_600x3_axis0_blocks", [long2], f64ref(lambda t: torch.cumsum(t, 0), long2), 1e-5, 1e-4, axis=0)
    i8 = g.ints((2, 6), -100, 100, np.int8)
    g.add("cumsum", "cumsum_i8_to_i32", [i8], tn(torch.cumsum(tt(i8), 1)).astype(np.int32), axis=1)
    bb = g.rng.random((9,)) < 0.5
    g.add("cumsum", "cumsum_bool_to_i32", [bb], tn(torch.cumsum(tt(bb), 0)).astype(np.int32), axis=0)
    lng = g.ints((700,), -1000, 1000, np.int32)
    g.add("cumsum", "cumsum_i32_700_blocks", [lng], np.cumsum(lng).astype(np.int32), axis=0)
    xh = g.randn((2, 9), np.float16)
    g.add("cumsum", "cumsum_f16", [xh], f64ref(lambda t: torch.cumsum(t, 1), xh), 2e-3, 2e-3, axis=1)
    # cumprod: exact order of multiplication; zeros and negatives are exact
    p = np.array([[1.5, -2.0, 0.5, 0.0, 3.0, -1.0], [2.0, 2.0, -0.5, 4.0, NAN, 1.0], [INF, 0.0, 1.0, 2.0, 3.0, 4.0]], np.float32)
    g.add("cumprod", "cumprod_f32_zeros_negatives", [p], tn(torch.cumprod(tt(p), 1)), 0.0, 0.0, axis=1)
    px = g.uniform((4, 5), -2.0, 2.0)
    g.add("cumprod", "cumprod_f32_4x5_axis0", [px], f64ref(lambda t: torch.cumprod(t, 0), px), 1e-6, 1e-7, axis=0)
    pl = g.uniform((600,), 0.99, 1.01)
    g.add("cumprod", "cumprod_f32_600_blocks", [pl], f64ref(lambda t: torch.cumprod(t, 0), pl), 1e-5, 0.0, axis=0)
    pi = g.ints((2, 8), -3, 3, np.int32)
    g.add("cumprod", "cumprod_i32", [pi], tn(torch.cumprod(tt(pi), 1)).astype(np.int32), axis=1)
    g.add("cumprod", "cumprod_0d", [np.float32(-2.0)], np.float32(-2.0), axis=-1)
    # cummax / cummin: values and indices (last index of ties, like torch)
    cm = np.array([[1.0, 1.0, 3.0, 3.0, NAN, 2.0, NAN, 5.0], [-INF, -1.0, -1.0, -5.0, 2.0, 2.0, INF, 0.0],
                   [0.0, -0.0, 0.0, 1.0, 0.5, 1.0, 1.0, 1.0]], np.float32)
    for name, fn in [("cummax", torch.cummax), ("cummin", torch.cummin)]:
        v, i = fn(tt(cm), 1)
        g.add(name, "%s_f32_ties_nan" % name, [cm], [tn(v), tn(i, np.int32)], axis=1)
        v, i = fn(tt(x), 0)
        g.add(name, "%s_f32_3x7_axis0" % name, [x], [tn(v), tn(i, np.int32)], axis=0)
        xi = g.ints((3, 6), -3, 3, np.int32)
        v, i = fn(tt(xi), -1)
        g.add(name, "%s_i32_ties" % name, [xi], [tn(v), tn(i, np.int32)], axis=-1)
        lm = g.randn((700,))
        v, i = fn(tt(lm), 0)
        g.add(name, "%s_f32_700_blocks" % name, [lm], [tn(v), tn(i, np.int32)], axis=0)
        u8 = np.array([3, 200, 1, 255, 0], np.uint8)
        v, i = fn(tt(u8), 0)
        g.add(name, "%s_u8" % name, [u8], [tn(v), tn(i, np.int32)], axis=0)
        g.add(name, "%s_0d" % name, [np.float32(4.0)], [np.float32(4.0), np.int32(0)], axis=0)
        g.add(name + "_values", "%s_values_only" % name, [x3], tn(fn(tt(x3), 2)[0]), axis=2)
    # logcumsumexp
    lc = np.array([[-INF, 1.0, INF, 2.0, 0.0], [-INF, -INF, 0.0, -INF, 3.0], [NAN, 1.0, 2.0, 3.0, 4.0], [100.0, -100.0, 100.0, 0.0, 1.0]], np.float32)
    g.add("logcumsumexp", "logcumsumexp_specials", [lc], f64ref(lambda t: torch.logcumsumexp(t, 1), lc), 2e-6, 1e-6, axis=1)
    for axis in (0, 1):
        g.add("logcumsumexp", "logcumsumexp_3x7_axis%d" % axis, [x], f64ref(lambda t: torch.logcumsumexp(t, axis), x), 2e-6, 1e-6, axis=axis)
    xi = g.ints((2, 4), -5, 5, np.int32)
    g.add("logcumsumexp", "logcumsumexp_i32", [xi], f64ref(lambda t: torch.logcumsumexp(t, 1), xi, out=np.float32), 2e-6, 1e-6, axis=1)
    g.add("logcumsumexp", "logcumsumexp_0d", [np.float32(1.5)], np.float32(1.5), 0.0, 0.0, axis=0)
    return g


# ----------------------------------------------------------------- sorting


def gen_sort():
    g = TGroup("sort", 105)
    s = np.array([[3.0, NAN, 1.0, NAN, -0.0, 0.0, 1.0, -INF, INF, 2.0],
                  [5.0, 4.0, 3.0, 2.0, 1.0, 0.0, -1.0, -2.0, -3.0, -4.0],
                  [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]], np.float32)
    x = g.randn((4, 7))
    xi = g.ints((3, 9), -3, 3, np.int32)
    big = g.randn((3, 100))
    for desc in (0, 1):
        for arr, axis, what in [(s, -1, "f32_nan_ties"), (x, 0, "f32_4x7_axis0"), (xi, 1, "i32_ties"), (big, 1, "f32_3x100")]:
            v, i = torch.sort(tt(arr), dim=axis, descending=bool(desc), stable=True)
            g.add("sort", "sort_%s_desc%d" % (what, desc), [arr], [tn(v), tn(i, np.int32)], 0.0, 0.0, axis=axis, descending=desc,
                  bitexact=1 if arr.dtype == np.float32 else 0)
        g.add("argsort", "argsort_f32_nan_ties_desc%d" % desc, [s],
              tn(torch.argsort(tt(s), dim=1, descending=bool(desc), stable=True), np.int32), axis=1, descending=desc)
    bl = g.rng.random((2, 6)) < 0.5
    v, i = torch.sort(tt(bl), dim=1, stable=True)
    g.add("sort", "sort_bool", [bl], [tn(v), tn(i, np.int32)], axis=1, descending=0)
    u8 = np.array([200, 3, 255, 0, 3], np.uint8)
    v, i = torch.sort(tt(u8), descending=True, stable=True)
    g.add("sort", "sort_u8_desc", [u8], [tn(v), tn(i, np.int32)], axis=0, descending=1)
    xh = g.randn((5,), np.float16)
    v, i = torch.sort(tt(xh), stable=True)
    g.add("sort", "sort_f16", [xh], [tn(v), tn(i, np.int32)], axis=0, descending=0)
    g.add("sort", "sort_0d", [np.float32(3.0)], [np.float32(3.0), np.int32(0)], axis=0, descending=0)
    g.add("sort", "sort_empty", [np.zeros((2, 0), np.float32)], [np.zeros((2, 0), np.float32), np.zeros((2, 0), np.int32)],
          axis=1, descending=0)
    g.add("sort", "sort_len1", [np.array([[2.0], [1.0]], np.float32)], [np.array([[2.0], [1.0]], np.float32), np.zeros((2, 1), np.int32)],
          axis=1, descending=0)
    g.add("sort_values", "sort_values_only", [x], tn(torch.sort(tt(x), dim=1)[0]), axis=1, descending=0)
    g.add("argsort", "argsort_i32_axis0", [xi], tn(torch.argsort(tt(xi), dim=0, stable=True), np.int32), axis=0, descending=0)
    # topk (distinct values: torch does not define the order of ties)
    tk = g.randn((3, 8))
    for k, largest, axis in [(3, 1, -1), (3, 0, 1), (0, 1, 1), (8, 1, 1), (2, 1, 0), (1, 0, 0)]:
        v, i = torch.topk(tt(tk), k, dim=axis, largest=bool(largest), sorted=True)
        g.add("topk", "topk_k%d_largest%d_axis%d" % (k, largest, axis), [tk], [tn(v), tn(i, np.int32)], k=k, axis=axis, largest=largest)
    tnan = np.array([1.0, NAN, 3.0, -INF, 2.0], np.float32)
    for largest in (0, 1):
        v, i = torch.topk(tt(tnan), 2, largest=bool(largest))
        g.add("topk", "topk_nan_largest%d" % largest, [tnan], [tn(v), tn(i, np.int32)], k=2, axis=0, largest=largest)
    ti = np.array([[5, -3, 9, 0], [7, 8, -1, 2]], np.int32)
    v, i = torch.topk(tt(ti), 2, dim=1)
    g.add("topk", "topk_i32", [ti], [tn(v), tn(i, np.int32)], k=2, axis=1, largest=1)
    return g


# ----------------------------------------------------------------- backward


def gen_backward():
    g = TGroup("backward", 106)

    def add_bw(op, label, ins, fn, wrt, rtol=1e-4, atol=1e-5, **params):
        """ins: float32 arrays (wrt indices require grad); fn(*torch float64 tensors) -> output"""
        ts = [tt(a).double().requires_grad_(i in wrt) if a.dtype.kind == "f" else tt(a) for i, a in enumerate(ins)]
        out = fn(*ts)
        w = g.randn(tuple(out.shape))
        (out * tt(w).double()).sum().backward()
        outs = [tn(out, np.float32)] + [tn(ts[i].grad, np.float32) for i in wrt]
        g.add(op, label, list(ins) + [w], outs, rtol, atol, backward=1, wrt=list(wrt), **params)

    smooth = {  # name: (domain, fn) avoiding kinks and singularities
        "tan": ((-1.2, 1.2), torch.tan), "asin": ((-0.9, 0.9), torch.asin), "acos": ((-0.9, 0.9), torch.acos),
        "atan": (4.0, torch.atan), "sinh": ((-3.0, 3.0), torch.sinh), "cosh": ((-3.0, 3.0), torch.cosh),
        "asinh": (5.0, torch.asinh), "acosh": ((1.1, 10.0), torch.acosh), "atanh": ((-0.9, 0.9), torch.atanh),
        "log10": ((0.1, 10.0), torch.log10), "log1p": ((-0.5, 5.0), torch.log1p), "expm1": (2.0, torch.expm1),
        "erf": (1.0, torch.erf), "square": (2.0, torch.square),
        "relu6": (4.0, F.relu6), "leaky_relu": (2.0, lambda t: F.leaky_relu(t, 0.1)), "elu": (2.0, lambda t: F.elu(t, 1.3)),
        "celu": (2.0, lambda t: F.celu(t, 0.7)), "selu": (2.0, F.selu), "gelu": (2.0, lambda t: F.gelu(t, approximate="tanh")),
        "quick_gelu": (2.0, lambda t: t * torch.sigmoid(1.702 * t)), "silu": (2.0, F.silu), "mish": (2.0, F.mish),
        "softplus": (3.0, lambda t: F.softplus(t, 2.0, 5.0)), "softsign": (2.0, F.softsign), "logsigmoid": (3.0, F.logsigmoid),
        "hardsigmoid": (2.0, F.hardsigmoid), "hardswish": (2.0, F.hardswish), "hardtanh": (2.0, lambda t: F.hardtanh(t, -1.5, 0.75)),
    }
    bparams = {"leaky_relu": {"slope": 0.1}, "elu": {"alpha": 1.3}, "celu": {"alpha": 0.7}, "softplus": {"beta": 2.0, "threshold": 5.0},
               "hardtanh": {"lo": -1.5, "hi": 0.75}}
    kinks = {"relu6": [0.0, 6.0], "hardsigmoid": [-3.0, 3.0], "hardswish": [-3.0, 3.0], "hardtanh": [-1.5, 0.75],
             "leaky_relu": [0.0], "elu": [0.0], "celu": [0.0], "selu": [0.0], "softplus": [2.5]}
    for name, (dom, fn) in smooth.items():
        x = g.uniform((3, 4), dom[0], dom[1]) if isinstance(dom, tuple) else g.randn((3, 4), scale=dom)
        for k in kinks.get(name, []):   # keep 0.05 away from kinks
            x = np.where(np.abs(x - k) < 0.05, x + 0.1, x).astype(np.float32)
        atol = 2e-4 if name == "erf" else 1e-5
        add_bw(name, "bw_%s" % name, [x], fn, [0], 1e-4, atol, **bparams.get(name, {}))
    a, b = g.randn((3, 4), scale=2.0), g.randn((4,), scale=2.0)
    add_bw("logaddexp", "bw_logaddexp_bcast", [a, b], torch.logaddexp, [0, 1])
    add_bw("copysign", "bw_copysign", [a, b], torch.copysign, [0, 1])
    bm = np.where(np.abs(b) < 0.3, 1.1, b).astype(np.float32)
    add_bw("fmod", "bw_fmod", [a * 3, bm], torch.fmod, [0, 1])
    add_bw("mod", "bw_mod", [a * 3, bm], torch.remainder, [0, 1])
    add_bw("clamp", "bw_clamp", [a], lambda t: torch.clamp(t, -1.0, 1.5), [0], lo=-1.0, hi=1.5)
    lo, hi = g.randn((4,)) - 1.0, g.randn((3, 1)) + 1.0
    add_bw("clamp_tensor", "bw_clamp_tensor", [a, lo, hi], torch.clamp, [0, 1, 2])
    w = g.uniform((3, 1), -0.5, 1.5)
    add_bw("lerp", "bw_lerp", [a, b, w], torch.lerp, [0, 1, 2])
    add_bw("lerps", "bw_lerps", [a, b], lambda x, y: torch.lerp(x, y, 0.3), [0, 1], w=0.3)
    m = g.rng.random((1, 4)) < 0.5
    add_bw("masked_fill", "bw_masked_fill", [a, m], lambda x, mm: x.masked_fill(mm, 2.0), [0], value=2.0)
    x = g.randn((4, 6), scale=2.0)
    add_bw("var", "bw_var_axis1", [x], lambda t: torch.var(t, 1), [0], correction=1.0, axes=[1], keepdim=0)
    add_bw("std", "bw_std_all", [x], lambda t: torch.std(t, correction=0), [0], correction=0.0, axes_all=1, keepdim=0)
    add_bw("logsumexp", "bw_logsumexp_axis0_kd", [x], lambda t: torch.logsumexp(t, 0, keepdim=True), [0], axes=[0], keepdim=1)
    add_bw("cumsum", "bw_cumsum_axis1", [x], lambda t: torch.cumsum(t, 1), [0], axis=1)
    long1 = g.randn((600,))
    add_bw("cumsum", "bw_cumsum_600_blocks", [long1], lambda t: torch.cumsum(t, 0), [0], axis=0)
    px = g.uniform((3, 5), 0.5, 1.5) * np.where(g.rng.random((3, 5)) < 0.5, -1, 1).astype(np.float32)
    add_bw("cumprod", "bw_cumprod_axis1", [px], lambda t: torch.cumprod(t, 1), [0], axis=1)
    add_bw("cummax_values", "bw_cummax_axis1", [x], lambda t: torch.cummax(t, 1)[0], [0], axis=1)
    add_bw("cummin_values", "bw_cummin_axis0", [x], lambda t: torch.cummin(t, 0)[0], [0], axis=0)
    add_bw("logcumsumexp", "bw_logcumsumexp_axis1", [x], lambda t: torch.logcumsumexp(t, 1), [0], axis=1)
    add_bw("sort_values", "bw_sort_axis1_desc", [x], lambda t: torch.sort(t, 1, descending=True)[0], [0], axis=1, descending=1)
    add_bw("topk_values", "bw_topk_k2", [x], lambda t: torch.topk(t, 2, dim=1)[0], [0], k=2, axis=1, largest=1)
    return g


def main():
    os.makedirs(OUT, exist_ok=True)
    total, fwd, bwd = 0, 0, 0
    for gen in [gen_unary, gen_binary, gen_reduce, gen_scan, gen_sort, gen_backward]:
        g = gen()
        path, n, size = g.write()
        total += size
        if g.name == "backward": bwd += n
        else: fwd += n
        print("%-40s %4d cases %8d bytes" % (os.path.relpath(path), n, size))
    print("forward %d, backward %d cases, %d bytes" % (fwd, bwd, total))
    assert total < 2_000_000


if __name__ == "__main__":
    main()
