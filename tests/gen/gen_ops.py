#!/usr/bin/env python3
"""gen_ops.py: golden data for tests/test_ops.c (read by tests/golden_io.c).

Run from the repository root:  python3 tests/gen/gen_ops.py
Needs numpy and ml_dtypes (for bfloat16 / fp8 arrays). The output is
deterministic: every group draws from np.random.default_rng(<fixed seed>).

Every expected value here comes from numpy (or exact Python arithmetic), never
from tg. Where tinygrad's defined behaviour differs from numpy's, the golden
follows tinygrad (tg's model) and the difference is written next to the case:
  * dtype promotion follows tinygrad's lattice (promote() below), not numpy's:
    int32 + float16 -> float16, int64 + uint64 -> float32, bool + int -> int.
  * true division of integers gives float32 (numpy: float64).
  * sum of bool/int8/int16/int32 accumulates in and returns int32 (uint8/16/32:
    uint32), float16 sums accumulate in float32 and return float16.
  * prod keeps the input dtype (tinygrad: x.cast(x.dtype)._reduce(MUL)), so an
    int8 product wraps modulo 2^8 (numpy/torch would return int64).
  * relu(NaN) = 0: tinygrad's relu is (x > 0).where(x, 0). PyTorch gives NaN.
  * argmax/argmin return int32 (numpy: int64) and the first extreme index.
  * transcendental ops on ints compute in float32.
Everything else (NaN propagation of maximum/minimum and of max reductions,
comparisons with NaN, inf arithmetic, int wraparound, float->int truncation)
is numpy's behaviour, which is also PyTorch's and tinygrad's.

File format (all little-endian), tests/goldens/ops_<group>.bin:
  file   := magic "TGGOLD1\\0" (8 bytes), u32 ncases, case * ncases
  case   := str op, str label, f64 rtol, f64 atol,
            u32 nparams, param * nparams,
            u32 nin, array * nin, u32 nout, array * nout
  str    := u16 length, bytes (no terminator)
  param  := str key, u8 type (0: int64 list, 1: float64 list), u32 count,
            count values (i64 or f64)
  array  := u8 tg dtype code, u8 ndim, i64 shape[ndim], raw element data
            (numel * itemsize bytes, C order)
tg dtype codes are the tg_dtype enum order of include/tg.h:
  0 bool, 1 int8, 2 uint8, 3 int16, 4 uint16, 5 int32, 6 uint32, 7 int64,
  8 uint64, 9 fp8e4m3, 10 fp8e5m2, 11 float16, 12 bfloat16, 13 float32, 14 float64
A result element g matches the expected w when both are NaN, or g == w, or
|g - w| <= atol + rtol * |w| (ints and bools: exactly). With the parameter
bitexact=1 the raw bytes must be equal.

`op` names the C function in test_ops.c's dispatch table that applies the tg op
to the inputs, with the case's parameters (axes, keepdim, shape, dtype,
scalar, index, ...); `label` is unique and says what the case checks.
"""
import math
import os
import sys
import struct

import ml_dtypes
import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "goldens")

BF16 = np.dtype(ml_dtypes.bfloat16)
E4M3 = np.dtype(ml_dtypes.float8_e4m3fn)
E5M2 = np.dtype(ml_dtypes.float8_e5m2)
NP = [np.dtype(np.bool_), np.dtype(np.int8), np.dtype(np.uint8), np.dtype(np.int16), np.dtype(np.uint16),
      np.dtype(np.int32), np.dtype(np.uint32), np.dtype(np.int64), np.dtype(np.uint64), E4M3, E5M2,
      np.dtype(np.float16), BF16, np.dtype(np.float32), np.dtype(np.float64)]
CODE = {d: i for i, d in enumerate(NP)}
(B, I8, U8, I16, U16, I32, U32, I64, U64, FP8E4M3, FP8E5M2, F16, BF16C, F32, F64) = range(15)
F32E = 2.0 ** -24   # float32 unit roundoff (half an ulp at 1)
F16E = 2.0 ** -11

# ----------------------------------------------------------------- dtype rules (tinygrad's)

# tinygrad's promotion lattice (tinygrad/dtype.py, written out independently of
# tg's C table): the least upper bound is the lowest-priority common ancestor;
# 'w' is tinygrad's weakfloat, which becomes the default float (float32).
LATTICE = {B: [I8, U8], I8: [I16], I16: [I32], I32: [I64], I64: ['w'], U8: [I16, U16], U16: [I32, U32],
           U32: [I64, U64], U64: ['w'], 'w': [FP8E4M3, FP8E5M2], FP8E4M3: [F16, BF16C], FP8E5M2: [F16, BF16C],
           F16: [F32], BF16C: [F32], F32: [F64], F64: []}
PRIO = {**{i: float(i) for i in range(15)}, 'w': 8.5}


def ancestors(d):
    s = {d}
    for p in LATTICE[d]:
        s |= ancestors(p)
    return s


def promote(a, b):
    r = min(ancestors(a) & ancestors(b), key=lambda d: PRIO[d])
    return F32 if r == 'w' else r


def is_float(c): return c >= FP8E4M3
def is_int(c): return I8 <= c <= U64
def is_unsigned(c): return c in (U8, U16, U32, U64)
def upper_float(c): return c if is_float(c) else F32


def sum_acc(c):
    if is_unsigned(c): return promote(c, U32)
    if is_int(c) or c == B: return promote(c, I32)
    return promote(c, F32)


# ----------------------------------------------------------------- writing

def tgcode(arr):
    return CODE[arr.dtype]


def enc_str(s):
    b = s.encode()
    assert len(b) < 65536
    return struct.pack("<H", len(b)) + b


def enc_array(a):
    a = np.array(a, order="C", copy=True)   # (np.ascontiguousarray would make 0-d arrays 1-d)
    assert a.dtype in CODE, a.dtype
    assert a.ndim <= 16
    out = struct.pack("<BB", CODE[a.dtype], a.ndim) + struct.pack("<%dq" % a.ndim, *a.shape)
    return out + a.tobytes()


def enc_param(key, v):
    if isinstance(v, (bool, int, np.integer)): v = [int(v)]
    elif isinstance(v, (float, np.floating)): v = [float(v)]
    v = list(v)
    if all(isinstance(x, (bool, int, np.integer)) for x in v):
        return enc_str(key) + struct.pack("<BI", 0, len(v)) + struct.pack("<%dq" % len(v), *[int(x) for x in v])
    return enc_str(key) + struct.pack("<BI", 1, len(v)) + struct.pack("<%dd" % len(v), *[float(x) for x in v])


class Group:
    """Cases written to tests/goldens/<PREFIX><name>.bin; the torch generators
    subclass it with their own PREFIX."""
    PREFIX = "ops_"

    def __init__(self, name, seed):
        self.name, self.cases, self.labels = name, [], set()
        self.rng = np.random.default_rng(seed)

    def add(self, op, label, ins, outs, rtol=0.0, atol=0.0, **params):
        assert label not in self.labels, label
        self.labels.add(label)
        outs = outs if isinstance(outs, (list, tuple)) else [outs]
        ins = [np.asarray(x) for x in ins]
        outs = [np.asarray(x) for x in outs]
        self.cases.append((op, label, float(rtol), float(atol), params, ins, outs))

    def write(self):
        data = bytearray(b"TGGOLD1\0" + struct.pack("<I", len(self.cases)))
        for op, label, rtol, atol, params, ins, outs in self.cases:
            data += enc_str(op) + enc_str(label) + struct.pack("<dd", rtol, atol)
            data += struct.pack("<I", len(params))
            for k, v in params.items():
                data += enc_param(k, v)
            data += struct.pack("<I", len(ins))
            for a in ins: data += enc_array(a)
            data += struct.pack("<I", len(outs))
            for a in outs: data += enc_array(a)
        path = os.path.join(OUT, "%s%s.bin" % (self.PREFIX, self.name))
        with open(path, "wb") as f:
            f.write(bytes(data))
        return path, len(self.cases), len(data)

    # random inputs
    def randn(self, shape, dt=np.float32, scale=1.0):
        return (self.rng.standard_normal(shape) * scale).astype(dt)

    def uniform(self, shape, lo, hi, dt=np.float32):
        return self.rng.uniform(lo, hi, shape).astype(dt)

    def ints(self, shape, lo, hi, dt):
        return self.rng.integers(lo, hi, shape, endpoint=True).astype(dt)


def f32(x): return np.asarray(x, np.float32)


def rounded(x64, code):
    """A float64 reference rounded once to the result dtype."""
    return np.asarray(x64, np.float64).astype(NP[code])


# ----------------------------------------------------------------- creation

def gen_create():
    g = Group("create", 1)
    # Creation ops are exact: a constant or an index cast to the dtype.
    for shape, val, dt in [((2, 3), 3.5, F32), ((), 7, I32), ((4,), 0.1, F16), ((3,), 1, B), ((2, 2), -5, I8),
                           ((5,), 2 ** 40 + 3, I64), ((1, 3), 0.1, F64), ((2,), 1.5, BF16C), ((2, 0), 1.0, F32)]:
        g.add("full", "full_%s_%s_%g" % (NP[dt].name, "x".join(map(str, shape)) or "scalar", val), [],
              np.full(shape, val, np.float64).astype(NP[dt]) if dt != B else np.full(shape, bool(val)),
              shape=list(shape), value=float(val), dtype=dt)
    for dt in (F32, I32, B, U8, F16):
        g.add("zeros", "zeros_%s" % NP[dt].name, [], np.zeros((2, 3), NP[dt]), shape=[2, 3], dtype=dt)
        g.add("ones", "ones_%s" % NP[dt].name, [], np.ones((3, 1), NP[dt]), shape=[3, 1], dtype=dt)
    g.add("scalar", "scalar_f32", [], np.array(-2.25, np.float32), value=-2.25, dtype=F32)
    g.add("scalar", "scalar_i16", [], np.array(-300, np.int16), value=-300, dtype=I16)
    x = g.randn((2, 3))
    g.add("full_like", "full_like_f32", [x], np.full((2, 3), 4.0, np.float32), value=4.0)
    xi = g.ints((4,), -5, 5, np.int8)
    g.add("full_like", "full_like_i8", [xi], np.full((4,), 9, np.int8), value=9)
    g.add("zeros_like", "zeros_like_i8", [xi], np.zeros((4,), np.int8))
    g.add("ones_like", "ones_like_f32", [x], np.ones((2, 3), np.float32))
    # arange: numpy computes start + i*step in float64 for floats (as tg does),
    # then one rounding to the dtype; ints are exact.
    for start, stop, step, dt in [(0, 6, 1, I32), (0, 10, 3, I32), (10, 0, -3, I32), (-5, 5, 2, I8), (0, 128, 1, I8),
                                  (0, 1, 0.1, F32), (-1, 1, 0.25, F16), (3, -2, -0.5, F32), (5, 5, 1, I32),
                                  (0.5, 3, 1, F64), (2, -7, -4, I64), (0, 3, 1, F32), (0, 2 ** 24 + 8, 2 ** 22, F32),
                                  (250, 256, 2, U8), (1, 0, 1, I32)]:
        ref = np.arange(start, stop, step, dtype=np.float64)
        want = ref.astype(NP[dt])
        g.add("arange", "arange_%s_%g_%g_%g" % (NP[dt].name, start, stop, step), [], want,
              start=float(start), stop=float(stop), step=float(step), dtype=dt)
    for n, dt in [(4, F32), (3, I32), (1, B), (0, F32), (5, F16)]:
        g.add("eye", "eye_%d_%s" % (n, NP[dt].name), [], np.eye(n, dtype=NP[dt]), n=n, dtype=dt)
    return g


# ----------------------------------------------------------------- elementwise

BIN = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply,
    "maximum": np.maximum, "minimum": np.minimum,
}
CMP = {"lt": np.less, "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal, "eq": np.equal, "ne": np.not_equal}
LOGIC = {"logical_and": np.logical_and, "logical_or": np.logical_or, "logical_xor": np.logical_xor}

# float32 +,-,*,/,max,min are correctly rounded IEEE operations, and so is the
# float64 reference rounded once to float32, so results should be identical;
# 1e-6 (about 8 ulp) only leaves room for a compiler's reassociation (x/c ->
# x*(1/c)) without hiding a wrong operation. float16 ops are computed in float32
# and rounded once (numpy does the same; float32 has more than 2*11+2 bits, so
# that is the correctly rounded float16 result): exact.
RT_ARITH = {F32: 1e-6, F64: 1e-12, F16: 0.0, BF16C: 0.0}


def ref_binary(name, a, b):
    """tinygrad semantics: promote both to the lattice dtype, compute there."""
    pd = promote(tgcode(a), tgcode(b))
    A, Bv = a.astype(NP[pd]), b.astype(NP[pd])
    with np.errstate(all="ignore"):
        if name in BIN:
            if NP[pd] in (BF16,):   # compute bf16 in float32, round once
                return BIN[name](A.astype(np.float32), Bv.astype(np.float32)).astype(BF16), pd
            return BIN[name](A, Bv), pd
        if name == "div":
            f = upper_float(pd)
            if f == BF16C:
                return (A.astype(np.float32) / Bv.astype(np.float32)).astype(BF16), f
            return (A.astype(NP[f]) / Bv.astype(NP[f])).astype(NP[f]), f
    raise KeyError(name)


def gen_elementwise():
    g = Group("elementwise", 2)
    r = g.rng
    # ---- binary arithmetic with broadcasting
    shapes = [((3, 1), (1, 4)), ((2, 3, 4), (4,))]
    extra = [((), (2, 3)), ((2, 3), ()), ((2, 1, 4), (3, 1)), ((), ())]
    for name in ["add", "sub", "mul", "div", "maximum", "minimum"]:
        for sa, sb in shapes + (extra if name == "add" else []):
            a, b = g.randn(sa), g.randn(sb)
            if name == "div": b = np.where(np.abs(b) < 0.1, 0.5, b).astype(np.float32)
            want, _ = ref_binary(name, a, b)
            g.add(name, "%s_f32_%s_%s" % (name, "x".join(map(str, sa)) or "s", "x".join(map(str, sb)) or "s"),
                  [a, b], want, rtol=RT_ARITH[F32])
    # ---- dtype promotion (tinygrad's lattice)
    promo = [
        (I8, U8, "add"), (I32, F16, "add"), (B, I32, "add"), (U8, I32, "mul"), (U32, I32, "add"), (I64, U64, "add"),
        (F16, F32, "mul"), (F16, F16, "mul"), (F16, F16, "add"), (F16, F16, "div"), (I8, I8, "mul"), (U8, U8, "sub"),
        (I16, I16, "div"), (I32, I32, "div"), (B, F32, "mul"), (F16, BF16C, "add"), (BF16C, BF16C, "mul"),
        (I32, I32, "maximum"), (U8, U8, "minimum"), (I8, I8, "minimum"), (B, B, "maximum"), (B, B, "minimum"),
        (I64, I64, "sub"), (U16, I16, "sub"), (F64, F32, "add"), (U32, U32, "sub"), (I32, I64, "mul"),
        (F16, I8, "maximum"), (U64, U64, "add"),
    ]
    for ca, cb, name in promo:
        def mk(c, shape):
            if c == B: return r.random(shape) < 0.5
            if is_int(c):
                info = np.iinfo(NP[c])
                lo, hi = max(info.min, -100), min(info.max, 200)
                if c in (I64, U64, U32): lo, hi = (0 if is_unsigned(c) else -2 ** 40), 2 ** 40
                return g.ints(shape, lo, hi, NP[c])
            return (r.standard_normal(shape) * 3).astype(NP[c])
        a, b = mk(ca, (3, 4)), mk(cb, (4,))
        if name == "div": b = np.where(b.astype(np.float64) == 0, 1, b).astype(b.dtype)
        want, pd = ref_binary(name, a, b)
        rt = RT_ARITH.get(tgcode(want), 0.0)
        g.add(name, "%s_promote_%s_%s" % (name, NP[ca].name, NP[cb].name), [a, b], want, rtol=rt)
    # ---- integer wraparound (two's complement, as numpy and C's unsigned math do)
    a = np.array([127, -128, 100, -100], np.int8); b = np.array([1, -1, 100, 100], np.int8)
    g.add("add", "add_i8_wrap", [a, b], (a.astype(np.int64) + b).astype(np.int8))
    g.add("mul", "mul_i8_wrap", [a, b], (a.astype(np.int64) * b).astype(np.int8))
    a = np.array([2147483647, -2147483648, 5], np.int32); b = np.array([1, -1, 7], np.int32)
    g.add("add", "add_i32_wrap", [a, b], (a.astype(np.int64) + b).astype(np.int32))
    a = np.array([0, 1, 255], np.uint8); b = np.array([1, 2, 255], np.uint8)
    g.add("sub", "sub_u8_wrap", [a, b], (a.astype(np.int64) - b).astype(np.uint8))
    # 64-bit values beyond 2^53 (a double cannot hold them: must stay integer)
    a = np.array([2 ** 63 + 5, 2 ** 64 - 1, 3, 2 ** 62], np.uint64); b = np.array([2 ** 63 + 7, 1, 2 ** 63, 2 ** 62 + 1], np.uint64)
    g.add("maximum", "maximum_u64_big", [a, b], np.maximum(a, b))
    g.add("minimum", "minimum_u64_big", [a, b], np.minimum(a, b))
    g.add("lt", "lt_u64_big", [a, b], a < b)
    g.add("add", "add_u64_wrap", [a, b], a + b)
    a = np.array([2 ** 62 + 1, -2 ** 63, 2 ** 53 + 1, -7], np.int64); b = np.array([2 ** 62, -1, 1, 2 ** 40], np.int64)
    g.add("add", "add_i64_big_wrap", [a, b], a + b)
    g.add("sub", "sub_i64_big", [a, b], a - b)
    g.add("mul", "mul_i64_big", [a, b], a * b)
    g.add("minimum", "minimum_i64_big", [a, b], np.minimum(a, b))
    g.add("eq", "eq_i64_differ_beyond_2^53", [np.array([2 ** 53 + 1], np.int64), np.array([2 ** 53], np.int64)], np.array([False]))
    # ---- NaN / inf (IEEE, numpy's and PyTorch's behaviour)
    nan, inf = np.nan, np.inf
    a = f32([nan, 1, nan, inf, -inf, 0, -0.0, 2, inf, 3])
    b = f32([1, nan, nan, -inf, -inf, -0.0, 0, inf, inf, -2])
    for name in ["add", "sub", "mul", "div", "maximum", "minimum"]:
        want, _ = ref_binary(name, a, b)
        g.add(name, "%s_nan_inf" % name, [a, b], want)
    for name, fn in CMP.items():
        g.add(name, "%s_nan_inf" % name, [a, b], fn(a, b))
    # ---- division corner cases: x/0, 0/0, int/0 -> float inf/nan
    a = np.array([1, -1, 0, 7], np.int32); b = np.array([0, 0, 0, 2], np.int32)
    with np.errstate(all="ignore"):
        g.add("div", "div_i32_by_zero", [a, b], a.astype(np.float32) / b.astype(np.float32))
    # ---- pow: tg computes exp2(y*log2|x|) in float32 with sign fixes: the
    # product y*log2|x| carries ~2 ulp, i.e. an absolute error of about
    # |y log2 x| * 2.4e-7 in the exponent; for results up to 2^20 that is a
    # relative error of ln2 * 20 * 2.4e-7 = 3.3e-6: rtol 1e-5.
    x = g.uniform((3, 4), 0.1, 8.0); y = g.uniform((3, 4), -3, 3)
    g.add("pow", "pow_f32_pos_base", [x, y], rounded(np.power(x.astype(np.float64), y.astype(np.float64)), F32), rtol=1e-5, atol=1e-30)
    x = f32([-2, -2, -2, -3, 0, 0, 0, 2, -1.5, 5, nan, 4, -8])
    y = f32([3, 2, 0.5, 0, 0, 2, -1, -2, 3, 0, 0, 0.5, 1 / 3])
    with np.errstate(all="ignore"):
        g.add("pow", "pow_f32_special", [x, y], rounded(np.power(x.astype(np.float64), y.astype(np.float64)), F32), rtol=1e-5)
    xi = np.array([2, 3, -2, 0, 1, 7, -3], np.int32); yi = np.array([10, 4, 3, 0, 5, 2, 0], np.int32)
    g.add("pow", "pow_i32", [xi, yi], np.power(xi, yi))   # exact: small results are exact in float32
    xb = g.uniform((4,), 0.5, 3.0)
    g.add("pow", "pow_bcast_scalar_exp", [xb, f32(2.0)], rounded(xb.astype(np.float64) ** 2, F32), rtol=1e-5)
    # ---- scalar right operands (tinygrad: the scalar takes the tensor's dtype
    # when it fits its class; a float scalar with an int tensor gives float32;
    # bool with an int scalar gives int32)
    xf = g.randn((2, 3)); xi = g.ints((2, 3), -50, 50, np.int32); xh = g.randn((4,), np.float16)
    xu = np.array([0, 1, 200], np.uint8); xbool = np.array([True, False, True])
    scal = [
        ("adds", xf, 2.5, xf + np.float32(2.5), 1e-6), ("adds", xi, 2, xi + np.int32(2), 0),
        ("adds", xi, 2.5, xi.astype(np.float32) + np.float32(2.5), 1e-6), ("adds", xbool, 1, xbool.astype(np.int32) + 1, 0),
        ("subs", xu, 1, (xu.astype(np.int64) - 1).astype(np.uint8), 0), ("subs", xf, -1.25, xf + np.float32(1.25), 1e-6),
        ("muls", xh, 0.1, xh * np.float16(0.1), 0), ("muls", xi, 3, xi * np.int32(3), 0),
        ("divs", xi, 2, xi.astype(np.float32) / np.float32(2), 1e-6), ("divs", xf, 3.0, xf / np.float32(3), 1e-6),
        ("pows", g.uniform((5,), 0.5, 4), 0.5, None, 1e-5), ("pows", xf, 2, None, 1e-5),
        ("pows", np.array([1, 2, 3, -4], np.int32), 3, np.array([1, 8, 27, -64], np.int32), 0),
    ]
    for i, (op, x, s, want, rt) in enumerate(scal):
        if want is None:
            want = rounded(np.power(x.astype(np.float64), s), tgcode(x))
        g.add(op, "%s_%s_%g_%d" % (op, x.dtype.name, s, i), [x], want, rtol=rt, scalar=float(s))
    # ---- unary float ops. Inputs in float32; the reference is float64 math
    # rounded once to float32.
    # Tolerances (rtol, atol) and why:
    #  neg, abs, relu: exact.
    #  sqrt, reciprocal: correctly rounded in IEEE: 1e-6 as for arithmetic.
    #  rsqrt = 1/sqrt(x): two roundings: 1e-6.
    #  exp(x) = exp2(x*log2(e)): the product's rounding (|x|*1.2e-7 absolute
    #    in the exponent) becomes relative error |x|*6e-8*ln2*2; for |x| <= 20
    #    that is < 2e-6, plus exp2f's own ulp: rtol 1e-5.
    #  exp2, log2: libm's float versions are within 1-2 ulp: 1e-6 (log2 near 1
    #    is small: atol 1e-7).
    #  log(x) = log2(x)*ln2: two roundings after log2f's ulp: rtol 2e-6; near
    #    x = 1 the result is tiny and the error is absolute: atol 1e-7.
    #  sin: sinf is accurate to an ulp for these |x| <= 10: rtol 1e-6, atol 1e-7.
    #  cos(x) = sin(pi/2 - x): rounding pi/2 - x costs up to half an ulp of
    #    |x| (<= 10: 4.8e-7) absolute: atol 1e-6.
    #  sigmoid = 1/(1+exp(-x)): exp's error, damped: rtol 1e-5, atol 1e-7.
    #  tanh = 2*sigmoid(2x)-1: near 0 the subtraction cancels; the absolute
    #    error is about 2 ulp of 1 (2.4e-7): atol 1e-6, rtol 1e-5.
    unary = {
        "neg": (lambda x: -x, (0, 0), (-5, 5)), "abs": (np.abs, (0, 0), (-5, 5)),
        "relu": (lambda x: np.where(x > 0, x, 0), (0, 0), (-5, 5)),
        "sqrt": (np.sqrt, (1e-6, 0), (0, 100)), "reciprocal": (lambda x: 1 / x, (1e-6, 0), (0.1, 10)),
        "rsqrt": (lambda x: 1 / np.sqrt(x), (1e-6, 0), (0.01, 100)),
        "exp": (np.exp, (1e-5, 0), (-20, 20)), "exp2": (np.exp2, (1e-6, 0), (-20, 20)),
        "log": (np.log, (2e-6, 1e-7), (0.01, 100)), "log2": (np.log2, (1e-6, 1e-7), (0.01, 100)),
        "sin": (np.sin, (1e-6, 1e-7), (-10, 10)), "cos": (np.cos, (1e-6, 1e-6), (-10, 10)),
        "sigmoid": (lambda x: 1 / (1 + np.exp(-x)), (1e-5, 1e-7), (-15, 15)),
        "tanh": (np.tanh, (1e-5, 1e-6), (-5, 5)),
    }
    # one case per op: 20 random values in the op's range, then the specials
    special = f32([nan, inf, -inf, 0.0, -0.0, 1.0, -1.0, 1e-3, -1e-3, 0.5])
    for name, (fn, (rt, at), (lo, hi)) in unary.items():
        x = np.concatenate([g.uniform((20,), lo, hi), special]).reshape(5, 6)
        with np.errstate(all="ignore"):
            if name == "relu":   # tinygrad: relu(NaN) = 0 (PyTorch: NaN); documented at the top
                want = rounded(np.where(x > 0, x.astype(np.float64), 0.0), F32)
            else:
                want = rounded(fn(x.astype(np.float64)), F32)
            g.add(name, "%s_f32_and_specials" % name, [x], want, rtol=rt, atol=at)
    # unary on ints: neg/abs/relu stay integer (wrapping like numpy); the
    # transcendental ones compute in float32.
    xi = np.array([-128, -5, 0, 3, 127], np.int8)
    g.add("neg", "neg_i8_wrap", [xi], -xi)
    g.add("abs", "abs_i8_wrap", [xi], np.abs(xi))
    g.add("relu", "relu_i8", [xi], np.where(xi > 0, xi, 0).astype(np.int8))
    xu = np.array([0, 1, 255], np.uint8)
    g.add("neg", "neg_u8_wrap", [xu], (-xu.astype(np.int64)).astype(np.uint8))
    g.add("abs", "abs_u8", [xu], xu)
    g.add("neg", "neg_bool", [np.array([True, False])], np.array([False, True]))   # tinygrad: -bool is not
    xi32 = np.array([1, 2, 4, 9, 100], np.int32)
    g.add("sqrt", "sqrt_i32_to_f32", [xi32], rounded(np.sqrt(xi32.astype(np.float64)), F32), rtol=1e-6)
    g.add("exp", "exp_i32_to_f32", [np.array([0, 1, -2, 5], np.int32)], rounded(np.exp(np.array([0, 1, -2, 5.0])), F32), rtol=1e-5)
    g.add("log2", "log2_u8_to_f32", [np.array([1, 2, 8, 255], np.uint8)], rounded(np.log2(np.array([1, 2, 8, 255.0])), F32), rtol=1e-6)
    g.add("sigmoid", "sigmoid_bool_to_f32", [np.array([True, False])], rounded(1 / (1 + np.exp(-np.array([1.0, 0.0]))), F32), rtol=1e-5)
    # float16 math: each op computes in float and rounds to half; tg's
    # exp(x) = exp2(x * log2e) rounds the product to half first (relative
    # 2^-11 of an exponent up to ~6), so exp carries about |x|*ln2*2^-11 ~ 2e-3
    # relative; one half ulp is 4.9e-4. rtol 4e-3 for exp, 2e-3 elsewhere.
    xh = g.uniform((8,), -4, 4, np.float16)
    for name, fn, rt in [("exp", np.exp, 4e-3), ("sin", np.sin, 2e-3), ("sigmoid", lambda x: 1 / (1 + np.exp(-x)), 2e-3),
                         ("neg", np.negative, 0), ("abs", np.abs, 0), ("sqrt", lambda x: np.sqrt(np.abs(x)), 2e-3)]:
        xin = np.abs(xh) if name == "sqrt" else xh
        g.add(name, "%s_f16" % name, [xin], rounded(fn(xin.astype(np.float64)), F16), rtol=rt, atol=1e-3 if rt else 0)
    # ---- comparisons (bool results), with promotion first
    for name, fn in CMP.items():
        a, b = g.ints((3, 4), -3, 3, np.int32).astype(np.float32), g.ints((4,), -3, 3, np.int32).astype(np.float32)
        g.add(name, "%s_f32_bcast" % name, [a, b], fn(a, b))
        a, b = np.array([-1, 0, 5, 127], np.int8), np.array([200, 0, 5, 255], np.uint8)   # int16 compare: -1 < 200
        g.add(name, "%s_i8_u8" % name, [a, b], fn(a.astype(np.int16), b.astype(np.int16)))
    a, b = np.array([1, 2, 3], np.int32), np.array([1.5, 2.0, 2.5], np.float32)
    for name in ("lt", "eq"):
        g.add(name, "%s_i32_f32" % name, [a, b], CMP[name](a.astype(np.float32), b))
    a, b = np.array([True, False, True, False]), np.array([True, True, False, False])
    for name in ("lt", "ge", "ne"):
        g.add(name, "%s_bool" % name, [a, b], CMP[name](a.astype(np.int8), b.astype(np.int8)))
    # ---- logical ops (non-bools are compared with zero)
    for name, fn in LOGIC.items():
        g.add(name, "%s_bool_bcast" % name, [a.reshape(4, 1), b], fn(a.reshape(4, 1), b))
        x, y = np.array([0, 2, -1, 0], np.int32), np.array([0.0, 0.0, 0.5, nan], np.float32)
        g.add(name, "%s_i32_f32" % name, [x, y], fn(x != 0, y != 0))
    g.add("logical_not", "logical_not_bool", [a], np.logical_not(a))
    g.add("logical_not", "logical_not_f32", [f32([0, -0.0, 1, nan])], np.array([True, True, False, False]))
    # ---- where: cond broadcast with both branches; branches promote
    c = r.random((3, 1)) < 0.5
    x, y = g.randn((1, 4)), g.randn((3, 4))
    g.add("where", "where_bcast_f32", [c, x, y], np.where(c, x, y))
    c = np.array([True, False, True]); x = np.array([1, 2, 3], np.int8); y = np.array([1.5, 2.5, 3.5], np.float16)
    g.add("where", "where_promote_i8_f16", [c, x, y], np.where(c, x.astype(np.float16), y))
    c = np.array([0, 3, -1], np.int32)
    g.add("where", "where_int_cond", [c, f32([1, 2, 3]), f32(9)], np.where(c != 0, f32([1, 2, 3]), f32(9)))
    g.add("where", "where_nan", [np.array([True, False]), f32([nan, 1]), f32([2, nan])], f32([nan, nan]))
    return g


# ----------------------------------------------------------------- casts

def gen_cast():
    g = Group("cast", 3)
    r = g.rng
    nan, inf = np.nan, np.inf
    # Casts are exact (rtol 0): one rounding to the target, truncation toward
    # zero for float -> int, wraparound for int -> narrower int, != 0 for
    # -> bool. Only inputs whose C cast is defined are used (float -> int in
    # range; no negative float -> unsigned).
    def add(x, to, label=None, want=None):
        with np.errstate(all="ignore"):
            add_(x, to, label, want)
    def add_(x, to, label, want):
        if want is None:
            if to == B: want = x.astype(np.float64) != 0 if x.dtype != BF16 else x.astype(np.float32) != 0
            elif x.dtype in (np.dtype(np.bool_),) or NP[to] not in (BF16, E4M3, E5M2): want = x.astype(NP[to])
            else: want = x.astype(np.float32).astype(NP[to])
        lab = label or "cast_%s_to_%s" % (x.dtype.name, NP[to].name)
        g.add("cast", lab, [x], want, dtype=to)
    fx = f32([0.0, -0.0, 1.9, -1.9, 2.5, -2.5, 100.7, -100.7, 126.99, -127.99])
    add(fx, I8); add(fx, I32); add(fx, I16); add(fx, I64)
    add(f32([0, 0.5, 1.9, 254.99, 128.5]), U8)
    add(f32([0, 1.5, 65535.9, 3e9]), U32)
    add(f32([2147483520.0, -2147483648.0, 1e9, -1e9]), I32, "cast_float32_to_int32_extremes")
    add(np.array([1e300, 1e-300, 1.0000000596046448, 1.0000000596046449, -3.4028235677973366e38, 3.4e39, nan, -inf],
                 np.float64), F32, "cast_float64_to_float32_rounding")
    fh = f32([1.0, 0.1, 65504.0, 65520.0, 1e5, -1e5, 6.1e-5, 5.96e-8, 2.98e-8, 2.99e-8, 1.00048828125, 1.000732421875,
              2049.0, 2051.0, nan, -inf, -0.0])
    add(fh, F16, "cast_float32_to_float16_rounding")
    add(np.array([0.1, 1e-8, 70000.0, 1.0 + 2 ** -11, 1.0 + 2 ** -11 + 2 ** -40], np.float64), F16, "cast_float64_to_float16")
    add(g.randn((6,), np.float16) * np.float16(100), F32)
    add(np.array([0x0001, 0x03ff, 0x7bff, 0x7c00, 0xfc00, 0x8000], np.uint16).view(np.float16), F32, "cast_float16_to_float32_subnormal_inf")
    add(np.array([1.5, -2.75, 100.25, -0.0], np.float16), I32)
    add(np.array([300, -129, 127, -128, 65535, 2 ** 31 - 1, -2 ** 31], np.int32), I8, "cast_int32_to_int8_wrap")
    add(np.array([300, -1, 255, 256, -256], np.int32), U8, "cast_int32_to_uint8_wrap")
    add(np.array([-1, -128, 127, 0], np.int8), U16, "cast_int8_to_uint16_sign_extend")
    add(np.array([-1, -128, 127, 0], np.int8), U64, "cast_int8_to_uint64_sign_extend")
    add(np.array([2 ** 40 + 5, -2 ** 40 - 1, 2 ** 31, -1], np.int64), I32, "cast_int64_to_int32_wrap")
    add(np.array([2 ** 32 - 1, 2 ** 31, 5], np.uint32), I32, "cast_uint32_to_int32_wrap")
    add(np.array([2 ** 63, 2 ** 64 - 1, 7], np.uint64), I64, "cast_uint64_to_int64_wrap")
    add(np.array([16777217, -16777219, 2 ** 31 - 1, 3], np.int32), F32, "cast_int32_to_float32_rounding")
    add(np.array([2 ** 53 + 1, -(2 ** 62) - 1, 12345], np.int64), F64, "cast_int64_to_float64_rounding")
    add(np.array([2 ** 64 - 1, 2 ** 63 + 2 ** 40, 3], np.uint64), F32, "cast_uint64_to_float32")
    add(np.array([0, 255, 17, 2049], np.uint16), F16, "cast_uint16_to_float16_rounding")
    add(np.array([0, 255, 17], np.uint8), F16)
    add(np.array([True, False, True]), F32); add(np.array([True, False]), I64); add(np.array([True, False]), F16)
    add(np.array([True, False]), U8)
    add(f32([0.0, -0.0, 0.5, nan, -inf, 3]), B, "cast_float32_to_bool_nan_negzero")
    add(np.array([0, 256, -1, 2], np.int32), B, "cast_int32_to_bool_256")
    add(np.array([0, 1, 2], np.uint8), B)
    add(np.array([2.5, -1.0], np.float64), I16)
    add(np.array([2.5, -1e30, 7.125], np.float64), F64, "cast_float64_to_float64_identity")
    add(np.array([1, 2], np.int32), I32, "cast_int32_to_int32_identity")
    # bfloat16 / fp8: ml_dtypes rounds once, to nearest even (in range)
    add(f32([1.0, 1.00390625, 1.01171875, 3.14159, -2e38, 1e-40, nan, -inf, 65504.0]), BF16C, "cast_float32_to_bfloat16_rounding")
    add(np.array([1.0, -2.5, 1e38, 3.0078125], np.float32).astype(BF16), F32, "cast_bfloat16_to_float32")
    add(np.array([1.0, -2.5, 130.5], np.float32).astype(BF16), I32, "cast_bfloat16_to_int32")
    add(f32([0.0, 1.0, 0.3, -2.75, 448.0, -300.0, 0.0019]), FP8E4M3, "cast_float32_to_fp8e4m3_in_range")
    add(f32([0.0, 1.0, 0.3, -2.75, 57344.0, -3000.0, 1.5e-5]), FP8E5M2, "cast_float32_to_fp8e5m2_in_range")
    add(np.array([0.5, -3.0, 448.0], np.float32).astype(E4M3), F32, "cast_fp8e4m3_to_float32")
    add(np.array([0.5, -3.0, 57344.0], np.float32).astype(E5M2), F16, "cast_fp8e5m2_to_float16")
    add(np.array([1.5, -3.25, 0.1], np.float16), BF16C, "cast_float16_to_bfloat16")
    add(np.array([3, -7, 100], np.int8), FP8E4M3, "cast_int8_to_fp8e4m3")
    # ---- bitcast: raw bytes, compared bit for bit
    def bc(x, to, label=None):
        g.add("bitcast", label or "bitcast_%s_to_%s" % (x.dtype.name, NP[to].name), [x], x.view(NP[to]), dtype=to, bitexact=1)
    bc(f32([1.0, -2.0, 0.0, -0.0, inf, nan, 1e-45]), I32)
    bc(f32([1.0, -2.0, 3.5]), U32)
    bc(np.array([0x3f800000, 0x7fc00001, -8388608, 1], np.int32), F32, "bitcast_int32_to_float32_nan_payload")
    bc(np.array([0x3c00, 0x7c01, 0xfc00, 0x0001, 0x8000], np.uint16), F16, "bitcast_uint16_to_float16")
    bc(np.array([1.0, -2.0, 65504, 6e-8], np.float16), I16)
    bc(np.array([15360, -1024, 31745], np.int16), F16, "bitcast_int16_to_float16")
    bc(np.array([1.0, -0.0, 1e300], np.float64), I64)
    bc(np.array([4607182418800017408, -1, 1], np.int64), F64, "bitcast_int64_to_float64")
    bc(np.array([-1, 127, -128], np.int8), U8)
    bc(np.array([1.0, -3.5], np.float32).astype(BF16), U16, "bitcast_bfloat16_to_uint16")
    return g


# ----------------------------------------------------------------- movement

def idx(kind, start=0, stop=0, step=1, has_start=True, has_stop=True):
    return [kind, start, stop, step, int(has_start), int(has_stop)]


INT, SLICE, NEWAXIS, ELLIPSIS = 0, 1, 2, 3


def I(i): return idx(INT, i, 0, 1, True, False)
def S(a=None, b=None, s=1): return idx(SLICE, a or 0, b or 0, s, a is not None, b is not None)
NONE = idx(NEWAXIS, 0, 0, 1, False, False)
ELL = idx(ELLIPSIS, 0, 0, 1, False, False)


def to_py(spec):
    out = []
    for k, a, b, s, ha, hb in spec:
        if k == INT: out.append(a)
        elif k == NEWAXIS: out.append(None)
        elif k == ELLIPSIS: out.append(Ellipsis)
        else: out.append(slice(a if ha else None, b if hb else None, s))
    return tuple(out)


def spec_str(spec):
    parts = []
    for k, a, b, s, ha, hb in spec:
        if k == INT: parts.append(str(a))
        elif k == NEWAXIS: parts.append("None")
        elif k == ELLIPSIS: parts.append("...")
        else: parts.append("%s:%s%s" % (a if ha else "", b if hb else "", ":%d" % s if s != 1 else ""))
    return "[" + ",".join(parts) + "]"


def gen_movement():
    g = Group("movement", 4)
    # Movement is exact: data is only rearranged.
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4) * np.float32(1.5) - 7
    for shp, want in [([6, -1], (6, 4)), ([4, 6], (4, 6)), ([24], (24,)), ([-1], (24,)), ([2, 1, 3, 4, 1], None), ([3, -1, 2], (3, 4, 2))]:
        g.add("reshape", "reshape_2x3x4_to_%s" % "x".join(map(str, shp)), [x], x.reshape(shp), shape=shp)
    g.add("reshape", "reshape_1_to_scalar", [f32([5])], f32(5), shape=[])
    g.add("reshape", "reshape_scalar_to_1x1", [f32(5)], f32([[5]]), shape=[1, 1])
    xi = np.arange(12, dtype=np.int16).reshape(3, 4)
    g.add("reshape", "reshape_i16_3x4_to_2x6", [xi], xi.reshape(2, 6), shape=[2, 6])
    for order in [[2, 0, 1], [1, 0, 2], [-1, 0, 1], [0, 1, 2]]:
        g.add("permute", "permute_%s" % "_".join(map(str, order)), [x], np.transpose(x, order), axes=order)
    for src, shp in [((3, 1), [3, 4]), ((3, 1), [2, 3, 4]), ((1,), [2, 3]), ((2, 1, 4), [-1, 5, -1]), ((), [2, 2])]:
        a = np.arange(int(np.prod(src)), dtype=np.int32).reshape(src) + 1
        tgt = [s if s != -1 else src[len(src) - len(shp) + i] for i, s in enumerate(shp)]
        g.add("expand", "expand_%s_to_%s" % ("x".join(map(str, src)) or "s", "x".join(map(str, shp))), [a],
              np.broadcast_to(a, tgt), shape=shp)
    y = np.arange(12, dtype=np.float32).reshape(3, 4) + 1
    for pads, val in [([1, 2, 0, 3], 0.0), ([0, 0, 2, 0], 1.5), ([-1, 1, 2, -2], 0.0), ([-1, -1, -1, -2], 9.0), ([2, -1, 0, 0], -1.0)]:
        want = y
        for ax in range(2):
            b, e = pads[2 * ax], pads[2 * ax + 1]
            sl = [slice(None)] * 2
            sl[ax] = slice(max(-b, 0), want.shape[ax] - max(-e, 0))
            want = want[tuple(sl)]
            pw = [(0, 0)] * 2
            pw[ax] = (max(b, 0), max(e, 0))
            want = np.pad(want, pw, constant_values=val)
        g.add("pad", "pad_3x4_%s_value_%g" % ("_".join(map(str, pads)), val), [y], want, pads=pads, value=val)
    yi = np.arange(6, dtype=np.int8).reshape(2, 3)
    g.add("pad", "pad_i8_value_-7", [yi], np.pad(yi, [(1, 0), (0, 2)], constant_values=-7), pads=[1, 0, 0, 2], value=-7.0)
    g.add("pad", "pad_bool_value_1", [np.array([True, False])], np.array([True, True, False, True]), pads=[1, 1], value=1.0)
    for st, en in [([0, 1, 1], [2, 3, 3]), ([1, 0, 0], [2, 3, 4]), ([0, 2, 3], [2, 2, 4])]:
        g.add("shrink", "shrink_%s_%s" % ("_".join(map(str, st)), "_".join(map(str, en))), [x],
              x[tuple(slice(a, b) for a, b in zip(st, en))], starts=st, ends=en)
    for axes in [[0], [1], [-1], [0, 2], "all"]:
        if axes == "all":
            g.add("flip", "flip_all", [x], x[::-1, ::-1, ::-1], axes_all=1)
        else:
            g.add("flip", "flip_%s" % "_".join(map(str, axes)), [x], np.flip(x, axes), axes=axes)
    g.add("transpose", "transpose_0_2", [x], np.swapaxes(x, 0, 2), axis0=0, axis1=2)
    g.add("transpose", "transpose_-1_-2", [x], np.swapaxes(x, -1, -2), axis0=-1, axis1=-2)
    g.add("T", "T_3d", [x], np.swapaxes(x, -1, -2))
    g.add("T", "T_2d", [y], y.T)
    z = np.arange(6, dtype=np.float32).reshape(1, 3, 1, 2)
    g.add("squeeze", "squeeze_0", [z], z.reshape(3, 1, 2), axis=0)
    g.add("squeeze", "squeeze_-2", [z], z.reshape(1, 3, 2), axis=-2)
    g.add("squeeze", "squeeze_all", [z], z.reshape(3, 2), axis=-1000)
    g.add("squeeze", "squeeze_non1_is_noop", [z], z, axis=1)   # torch semantics; numpy would raise
    for ax in [0, 1, -1, 3]:
        g.add("unsqueeze", "unsqueeze_%d" % ax, [x], np.expand_dims(x, ax), axis=ax)
    for s, e in [(0, -1), (1, 2), (0, 1), (2, 2)]:
        sh = x.shape[:s] + (int(np.prod(x.shape[s:e % 3 + 1])),) + x.shape[e % 3 + 1:]
        g.add("flatten", "flatten_%d_%d" % (s, e), [x], x.reshape(sh), start=s, end=e)
    g.add("flatten", "flatten_scalar", [f32(3)], f32([3]), start=0, end=-1)
    # getitem: Python/numpy basic indexing
    a = np.arange(4 * 5 * 6, dtype=np.float32).reshape(4, 5, 6)
    specs = [
        [I(1)], [I(-1)], [I(1), I(2)], [I(3), I(-1), I(0)], [S(1, 3)], [S(None, None, 2)], [S(None, None, -1)],
        [S(1, -1, 2)], [S(3, 1)], [S(10, None)], [S(-100, 2)], [S(3, 0, -2)], [S(-1, -5, -1)],
        [NONE], [S(), NONE], [ELL, I(1)], [I(1), ELL], [ELL, NONE], [NONE, ELL, NONE], [I(1), S(None, None, -1), NONE, S(2, 5)],
        [S(), S(), S(None, None, 3)], [S(-2, None), ELL, S(None, None, -3)], [S(0, 100, 3)],
        [S(2, 2)], [S(None, None, -7)], [S(5, -100, -2), I(-2)], [S(), I(4), S(1, None, 4)],
        [S(None, None, -1), S(None, None, -1), S(None, None, -1)], [S(1, 2), S(1, 2), S(1, 2)], [I(0), NONE, I(0), NONE],
    ]
    for sp in specs:
        g.add("getitem", "getitem_%s" % spec_str(sp), [a], a[to_py(sp)], index=sum(sp, []))
    ai = np.arange(10, dtype=np.int64) * 3 - 7
    g.add("getitem", "getitem_i64_[::-3]", [ai], ai[::-3], index=S(None, None, -3))
    g.add("getitem", "getitem_i64_[7:2:-2]", [ai], ai[7:2:-2], index=S(7, 2, -2))
    g.add("getitem", "getitem_i64_[-3]", [ai], ai[-3], index=I(-3))
    return g


# ----------------------------------------------------------------- reductions

def sum_tol(x, axis):
    """A bound for a float32 sum: sequential or pairwise accumulation of n
    terms is within (n-1) * u * sum|x_i| of the exact sum (u = 2^-24); the
    reference is exact then rounded once, so allow that plus an ulp."""
    n = x.size if axis is None else int(np.prod([x.shape[a] for a in np.atleast_1d(axis)]))
    s = np.sum(np.abs(x.astype(np.float64)), axis=axis)
    return 2.0 * max(n, 1) * F32E * float(np.max(s)) if np.size(s) else 0.0


def gen_reduce():
    g = Group("reduce", 5)
    x = g.randn((3, 4, 5))
    axsets = [[0], [1], [2], [-1], [0, 2], [-1, -3], None, [0, 1, 2]]
    for i, ax in enumerate(axsets):
        npax = None if ax is None else tuple(ax)
        for kd in (False, True):
            if ax is not None and kd != bool(i % 2): continue   # both keepdims only for TG_ALL
            lab = "all" if ax is None else "_".join(map(str, ax))
            kw = dict(axes_all=1) if ax is None else dict(axes=ax)
            s64 = np.sum(x.astype(np.float64), axis=npax, keepdims=kd)
            g.add("sum", "sum_f32_%s_kd%d" % (lab, kd), [x], rounded(s64, F32), rtol=1e-6, atol=sum_tol(x, npax), keepdim=int(kd), **kw)
            # max/min are exact (no arithmetic)
            g.add("max", "max_f32_%s_kd%d" % (lab, kd), [x], np.max(x, axis=npax, keepdims=kd), keepdim=int(kd), **kw)
            if i not in (1, 4, 6): continue   # min and mean: a subset of the axis sets
            g.add("min", "min_f32_%s_kd%d" % (lab, kd), [x], np.min(x, axis=npax, keepdims=kd), keepdim=int(kd), **kw)
            n = x.size if ax is None else int(np.prod([x.shape[a] for a in ax]))
            g.add("mean", "mean_f32_%s_kd%d" % (lab, kd), [x], rounded(s64 / n, F32), rtol=1e-6,
                  atol=sum_tol(x, npax) / n, keepdim=int(kd), **kw)
    # prod over values near 1: n roundings of relative u each: rtol n*u*2
    p = g.uniform((3, 4, 5), 0.5, 1.5)
    for ax in [[1], [0, 2], None]:
        npax = None if ax is None else tuple(ax)
        kw = dict(axes_all=1) if ax is None else dict(axes=ax)
        n = p.size if ax is None else int(np.prod([p.shape[a] for a in ax]))
        g.add("prod", "prod_f32_%s" % ("all" if ax is None else "_".join(map(str, ax))), [p],
              rounded(np.prod(p.astype(np.float64), axis=npax), F32), rtol=2 * n * F32E + 1e-7, keepdim=0, **kw)
    # long rows: accumulation error
    big = g.randn((8, 1000))
    g.add("sum", "sum_f32_8x1000_axis1", [big], rounded(np.sum(big.astype(np.float64), axis=1), F32), rtol=1e-6,
          atol=sum_tol(big, 1), axes=[1], keepdim=0)
    g.add("mean", "mean_f32_8x1000_all", [big], rounded(np.mean(big.astype(np.float64)), F32), rtol=1e-6,
          atol=sum_tol(big, None) / big.size, axes_all=1, keepdim=0)
    # integer and bool inputs: exact, tinygrad's accumulation dtypes
    b = g.rng.random((4, 5)) < 0.5
    g.add("sum", "sum_bool_all_to_int32", [b], np.sum(b, dtype=np.int32), axes_all=1, keepdim=0)
    g.add("sum", "sum_bool_axis0_to_int32", [b], np.sum(b, axis=0, dtype=np.int32), axes=[0], keepdim=0)
    i8 = g.ints((4, 30), 100, 127, np.int8)
    g.add("sum", "sum_i8_to_int32_no_wrap", [i8], np.sum(i8, axis=1, dtype=np.int32), axes=[1], keepdim=0)
    u8 = g.ints((3, 40), 200, 255, np.uint8)
    g.add("sum", "sum_u8_to_uint32", [u8], np.sum(u8, axis=-1, dtype=np.uint32), axes=[-1], keepdim=0)
    i16 = g.ints((50,), -32768, 32767, np.int16)
    g.add("sum", "sum_i16_to_int32", [i16], np.sum(i16, dtype=np.int32), axes_all=1, keepdim=0)
    i64 = g.ints((2, 3), -2 ** 60, 2 ** 60, np.int64)
    g.add("sum", "sum_i64", [i64], np.sum(i64, axis=0), axes=[0], keepdim=0)
    i32w = np.array([2 ** 31 - 1, 1, 5], np.int32)
    g.add("sum", "sum_i32_wraps", [i32w], np.sum(i32w, dtype=np.int32), axes_all=1, keepdim=0)
    mi = g.ints((3, 4), -128, 127, np.int8)
    g.add("max", "max_i8_axis1", [mi], np.max(mi, axis=1), axes=[1], keepdim=0)
    g.add("min", "min_i8_axis0", [mi], np.min(mi, axis=0), axes=[0], keepdim=0)
    mu = g.ints((3, 4), 0, 255, np.uint8)
    g.add("min", "min_u8_all", [mu], np.min(mu), axes_all=1, keepdim=0)
    g.add("max", "max_u8_axis0_kd", [mu], np.max(mu, axis=0, keepdims=True), axes=[0], keepdim=1)
    mi64 = np.array([[-2 ** 62, 5], [3, -2 ** 63]], np.int64)
    g.add("min", "min_i64_extreme", [mi64], np.min(mi64, axis=1), axes=[1], keepdim=0)
    g.add("max", "max_i64_extreme", [mi64], np.max(mi64, axis=0), axes=[0], keepdim=0)
    mu64 = np.array([[2 ** 63 + 5, 2 ** 63 + 7, 2 ** 64 - 1], [1, 2 ** 62 + 1, 2 ** 62]], np.uint64)
    g.add("min", "min_u64_big", [mu64], np.min(mu64, axis=1), axes=[1], keepdim=0)
    g.add("max", "max_u64_big", [mu64], np.max(mu64, axis=1), axes=[1], keepdim=0)
    g.add("argmin", "argmin_u64_big", [mu64], np.argmin(mu64, axis=1).astype(np.int32), axis=1, keepdim=0)
    g.add("max", "max_bool_any", [b], np.max(b, axis=1), axes=[1], keepdim=0)
    g.add("min", "min_bool_all", [b], np.min(b, axis=1), axes=[1], keepdim=0)
    g.add("mean", "mean_i32_to_f32", [np.array([[1, 2, 4], [5, 5, 6]], np.int32)], f32([7 / 3, 16 / 3]), rtol=1e-6, axes=[1], keepdim=0)
    g.add("mean", "mean_bool_to_f32", [np.array([True, False, True, True])], f32(0.75), axes_all=1, keepdim=0)
    pi = np.array([[1, 2, 3], [-4, 5, 6]], np.int32)
    g.add("prod", "prod_i32_axis1", [pi], np.prod(pi, axis=1).astype(np.int32), axes=[1], keepdim=0)
    p8 = np.array([[100, 3, 2], [-1, 7, 11]], np.int8)
    # tinygrad's prod keeps the dtype: 600 wraps to 600 - 512 = 88 in int8
    g.add("prod", "prod_i8_keeps_dtype_wraps", [p8], (np.prod(p8.astype(np.int64), axis=1) % 256).astype(np.uint8).view(np.int8),
          axes=[1], keepdim=0)
    g.add("prod", "prod_bool_keeps_dtype", [b], np.all(b, axis=0), axes=[0], keepdim=0)
    # fp8: tinygrad sums in float32 and casts back to the fp8 dtype; these
    # values and sums are exact in e4m3 (sums of a few multiples of 0.25 < 16)
    f8 = np.array([[0.25, 1.5, -2.0, 3.0], [4.0, -0.5, 0.75, 1.0]], np.float32).astype(E4M3)
    g.add("sum", "sum_fp8e4m3_keeps_dtype", [f8], f8.astype(np.float64).sum(1).astype(np.float32).astype(E4M3), axes=[1], keepdim=0)
    ph = np.array([[1.5, 2.0, -0.5], [3.0, 0.25, 2.0]], np.float16)
    g.add("prod", "prod_f16_keeps_dtype", [ph], np.prod(ph.astype(np.float64), axis=1).astype(np.float16), axes=[1], keepdim=0)
    # float16: accumulate in float32, round once to half: at most a half ulp
    # plus float32 accumulation (negligible here): rtol 1e-3 (one half ulp at 1
    # is 4.9e-4, a last-bit flip between two near-tie roundings is 9.8e-4).
    h = g.randn((4, 64), np.float16)
    g.add("sum", "sum_f16_axis1", [h], rounded(np.sum(h.astype(np.float64), axis=1), F16), rtol=1e-3, atol=1e-3, axes=[1], keepdim=0)
    g.add("mean", "mean_f16_all", [h], rounded(np.mean(h.astype(np.float64)), F16), rtol=1e-3, atol=1e-4, axes_all=1, keepdim=0)
    g.add("max", "max_f16_axis0", [h], np.max(h, axis=0), axes=[0], keepdim=0)
    # NaN propagates through max/min reductions (numpy, PyTorch); sum too
    xn = f32([[1, np.nan, 3], [4, 5, 6], [-np.inf, -np.inf, 0]])
    g.add("max", "max_nan_propagates", [xn], np.max(xn, axis=1), axes=[1], keepdim=0)
    g.add("min", "min_nan_propagates", [xn], np.min(xn, axis=1), axes=[1], keepdim=0)
    g.add("sum", "sum_nan_inf", [xn], np.sum(xn, axis=0), axes=[0], keepdim=0)
    g.add("max", "max_all_neg_inf", [f32([-np.inf, -np.inf])], f32(-np.inf), axes_all=1, keepdim=0)
    # degenerate shapes
    g.add("sum", "sum_scalar_all", [f32(2.5)], f32(2.5), axes_all=1, keepdim=0)
    g.add("sum", "sum_size1_axis", [f32([[1, 2, 3]])], f32([1, 2, 3]), axes=[0], keepdim=0)
    g.add("sum", "sum_empty_axis", [np.zeros((0, 3), np.float32)], np.zeros(3, np.float32), axes=[0], keepdim=0)
    g.add("prod", "prod_empty_axis", [np.zeros((2, 0), np.float32)], np.ones(2, np.float32), axes=[1], keepdim=0)
    # argmax / argmin: first index of the extreme, int32
    am = g.ints((3, 4, 5), -3, 3, np.int32).astype(np.float32)   # many ties
    for ax, kd in [(0, False), (1, False), (-1, True), (2, False), (-1000, False), (-1000, True)]:
        npax = None if ax == -1000 else ax
        for nm, fn in [("argmax", np.argmax), ("argmin", np.argmin)]:
            w = fn(am, axis=npax).astype(np.int32)
            if kd: w = w.reshape([1] * 3) if npax is None else np.expand_dims(w, npax)
            g.add(nm, "%s_f32_ties_axis%s_kd%d" % (nm, "none" if npax is None else ax, kd), [am], w, axis=ax, keepdim=int(kd))
    ai = np.array([[3, 9, 9, 1], [-5, -5, -7, -7]], np.int8)
    g.add("argmax", "argmax_i8", [ai], np.argmax(ai, axis=1).astype(np.int32), axis=1, keepdim=0)
    g.add("argmin", "argmin_i8", [ai], np.argmin(ai, axis=1).astype(np.int32), axis=1, keepdim=0)
    au = np.array([0, 255, 3, 255], np.uint8)
    g.add("argmax", "argmax_u8", [au], np.int32(1), axis=0, keepdim=0)
    g.add("argmin", "argmin_u8", [au], np.int32(0), axis=0, keepdim=0)
    ab = np.array([False, True, True])
    g.add("argmax", "argmax_bool", [ab], np.int32(1), axis=0, keepdim=0)
    g.add("argmax", "argmax_single", [f32([7])], np.int32(0), axis=0, keepdim=0)
    return g


# ----------------------------------------------------------------- matmul

def mm_tol(a, b):
    """float32 dot products of K terms: |error| <= K*u*sum|a_i b_i| (plus the
    reference's own rounding): atol = 2*K*u*max sum|a||b|."""
    k = a.shape[-1]
    s = np.matmul(np.abs(a.astype(np.float64)), np.abs(b.astype(np.float64)))
    return 2.0 * k * F32E * float(np.max(s))


def gen_matmul():
    g = Group("matmul", 6)
    shapes = [((5,), (5,)), ((3, 4), (4,)), ((4,), (4, 3)), ((2, 3), (3, 5)), ((2, 3, 4), (2, 4, 5)),
              ((1, 3, 4), (2, 4, 5)), ((3, 4), (2, 4, 5)), ((2, 1, 3, 4), (5, 4, 2)), ((2, 3, 4), (4,)),
              ((4,), (2, 4, 3)), ((1, 1), (1, 1)), ((7, 16), (16, 9)), ((1, 8), (8, 1)), ((3, 33), (33,))]
    for sa, sb in shapes:
        a, b = g.randn(sa), g.randn(sb)
        want = rounded(np.matmul(a.astype(np.float64), b.astype(np.float64)), F32)
        lab = "%s@%s" % ("x".join(map(str, sa)), "x".join(map(str, sb)))
        g.add("matmul", "matmul_f32_" + lab, [a, b], want, rtol=1e-6, atol=mm_tol(a, b))
    a, b = g.randn((3, 4)), g.randn((4, 2))
    g.add("dot", "dot_f32_3x4@4x2", [a, b], rounded(a.astype(np.float64) @ b.astype(np.float64), F32), rtol=1e-6, atol=mm_tol(a, b))
    ai, bi = g.ints((3, 5), -20, 20, np.int32), g.ints((5, 4), -20, 20, np.int32)
    g.add("matmul", "matmul_i32", [ai, bi], ai @ bi)
    ai8, bi8 = g.ints((2, 6), -20, 20, np.int8), g.ints((6, 3), -20, 20, np.int8)
    # tinygrad: the sum accumulates in int32, then casts to the promoted int8 (wraps)
    g.add("matmul", "matmul_i8_wraps_to_int8", [ai8, bi8], (ai8.astype(np.int64) @ bi8.astype(np.int64)).astype(np.int8))
    bf = g.randn((5, 2))
    g.add("matmul", "matmul_i32_f32_promotes", [ai, bf], rounded(ai.astype(np.float64) @ bf.astype(np.float64), F32),
          rtol=1e-6, atol=mm_tol(ai.astype(np.float32), bf))
    # float16: products rounded to half (as tg multiplies in half), summed in
    # float32, rounded to half: the reference does the same with float64
    # accumulation; the sum of K=8 products carries K*2^-24 relative, far below
    # a half ulp (4.9e-4): rtol 1e-3 and a small atol for cancellation.
    ah, bh = g.randn((3, 8), np.float16), g.randn((8, 2), np.float16)
    prods = (ah[:, :, None] * bh[None, :, :]).astype(np.float64)   # half products, exact in float64
    g.add("matmul", "matmul_f16", [ah, bh], rounded(prods.sum(axis=1), F16), rtol=1e-3, atol=2e-3)
    return g


# ----------------------------------------------------------------- softmax

def softmax64(x, axis):
    x = x.astype(np.float64)
    m = np.max(x, axis=axis, keepdims=True)
    e = np.exp(x - m)
    return e / e.sum(axis=axis, keepdims=True)


def log_softmax64(x, axis):
    x = x.astype(np.float64)
    m = np.max(x, axis=axis, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=axis, keepdims=True))


def gen_softmax():
    g = Group("softmax", 7)
    # softmax = exp(x - max) / sum: exp carries ~1e-6 relative for arguments
    # down to -20 (see exp above), the sum and division an ulp each: rtol 1e-5;
    # tiny probabilities (e^-20) are compared absolutely: atol 1e-7.
    # log_softmax = (x - max) - log(sum): absolute error ~ a few ulp of
    # max(|x - max|, log(n)): rtol 1e-5, atol 2e-6.
    cases = [((4, 6), -1, 1.0), ((4, 6), 0, 1.0), ((2, 3, 4), 1, 2.0), ((2, 3, 4), -3, 1.0), ((2, 3, 4), 2, 3.0), ((7,), 0, 1.0)]
    for shape, ax, scale in cases:
        x = g.randn(shape, scale=scale)
        lab = "%s_axis%d" % ("x".join(map(str, shape)), ax)
        g.add("softmax", "softmax_" + lab, [x], rounded(softmax64(x, ax), F32), rtol=1e-5, atol=1e-7, axis=ax)
        g.add("log_softmax", "log_softmax_" + lab, [x], rounded(log_softmax64(x, ax), F32), rtol=1e-5, atol=2e-6, axis=ax)
    big = f32([[1000, 1001, 1002], [-1000, -1001, -1002], [1e30, 0, -1e30], [88.0, 89.0, 90.0]])
    g.add("softmax", "softmax_large_values", [big], rounded(softmax64(big, -1), F32), rtol=1e-5, atol=1e-7, axis=-1)
    g.add("log_softmax", "log_softmax_large_values", [big], rounded(log_softmax64(big, -1), F32), rtol=1e-5, atol=2e-6, axis=-1)
    ninf = f32([[-np.inf, 0, 1], [2, -np.inf, -np.inf]])
    with np.errstate(all="ignore"):
        g.add("softmax", "softmax_neg_inf_entries", [ninf], rounded(softmax64(ninf, 1), F32), rtol=1e-5, atol=1e-7, axis=1)
        g.add("log_softmax", "log_softmax_neg_inf_entries", [ninf], rounded(log_softmax64(ninf, 1), F32), rtol=1e-5, atol=2e-6, axis=1)
    xi = np.array([[1, 2, 3], [0, 0, 0]], np.int32)
    g.add("softmax", "softmax_i32_to_f32", [xi], rounded(softmax64(xi, -1), F32), rtol=1e-5, atol=1e-7, axis=-1)
    # float16: every step rounds to half: a few half ulps: rtol 4e-3
    xh = g.randn((3, 5), np.float16)
    g.add("softmax", "softmax_f16", [xh], rounded(softmax64(xh, -1), F16), rtol=4e-3, atol=1e-3, axis=-1)
    return g


# ----------------------------------------------------------------- composed chains

def gen_chain():
    g = Group("chain", 8)
    x, w, b = g.randn((4, 8)), g.randn((8, 3)), g.randn((3,))
    ref = np.maximum(x.astype(np.float64) @ w.astype(np.float64) + b, 0)
    g.add("linear_relu", "linear_relu_4x8@8x3+3", [x, w, b], rounded(ref, F32), rtol=1e-6, atol=mm_tol(x, w) + 1e-6)
    a, c = g.randn((3, 5)), g.randn((3, 5))
    g.add("add_sum1", "add_then_sum_axis1", [a, c], rounded((a.astype(np.float64) + c).sum(1), F32), rtol=1e-6, atol=sum_tol(a + c, 1) + 1e-6)
    g.add("softmax_of_realized", "softmax_of_realized_sum", [a, c], rounded(softmax64(a.astype(np.float64) + c, -1), F32), rtol=1e-5, atol=1e-7)
    g.add("where_chain", "where_gt0_mul2_else_sub1", [a, c], np.where(a > 0, a * np.float32(2), c - np.float32(1)))
    y = g.randn((5, 6))
    g.add("sum_of_slice", "sum_of_slice_[1:4,::2]_axis0", [y], rounded(y[1:4, ::2].astype(np.float64).sum(0), F32), rtol=1e-6, atol=1e-6)
    g.add("flip_add", "flip0_plus_self", [y], y[::-1] + y, rtol=1e-6)
    g.add("getitem_of_computed", "add1_then_[::-1,1]", [y], (y + np.float32(1))[::-1, 1])
    g.add("double_reduce", "sum1_then_max0", [y], rounded(y.astype(np.float64).sum(1).max(0), F32), rtol=1e-6, atol=1e-6)
    g.add("reduce_reshape_add", "sum1_reshape_add1", [y], rounded(y.astype(np.float64).sum(1).reshape(5, 1) + 1, F32), rtol=1e-6, atol=1e-6)
    u, v = g.randn((3, 1)), g.randn((1, 4))
    g.add("outer_sum", "outer_product_sum_axis0", [u, v], rounded((u.astype(np.float64) * v).sum(0), F32), rtol=1e-6, atol=1e-6)
    q = g.randn((4, 3)); p = g.randn((5, 3))
    g.add("matmul_T", "a@b.T", [q, p], rounded(q.astype(np.float64) @ p.astype(np.float64).T, F32), rtol=1e-6, atol=mm_tol(q, p.T))
    z = g.randn((3, 8), scale=2.0)
    z64 = z.astype(np.float64)
    mu = z64.mean(-1, keepdims=True)
    var = ((z64 - mu) ** 2).mean(-1, keepdims=True)
    # layernorm: the mean/var sums and the rsqrt: ~1e-6 relative, values O(1)
    g.add("layernorm", "layernorm_3x8", [z], rounded((z64 - mu) / np.sqrt(var + 1e-5), F32), rtol=1e-5, atol=1e-5)
    k = g.randn((2, 3))
    g.add("pad_then_sum", "pad_1_1_then_sum_all", [k], rounded(np.pad(k.astype(np.float64), 1, constant_values=2.0).sum(), F32), rtol=1e-6, atol=1e-5)
    e = g.randn((4, 5))
    g.add("exp_sum_log", "logsumexp_axis1", [e], rounded(np.log(np.exp(e.astype(np.float64)).sum(1)), F32), rtol=1e-5, atol=1e-6)
    ic = g.ints((3, 4), -10, 10, np.int32)
    g.add("int_chain", "int32_(a*3+1)%_max_axis1", [ic], np.max(ic * 3 + 1, axis=1))
    # float identities a rewriter may only apply to ints: x-x, x/x, x*0, x==x
    # and x!=x are not 0, 1, 0, true, false when x is NaN or inf
    sp = f32([np.nan, np.inf, -np.inf, 0.0, 2.5])
    with np.errstate(all="ignore"):
        g.add("self_sub", "x-x_nan_inf", [sp], sp - sp)
        g.add("self_div", "x/x_nan_inf_zero", [sp], sp / sp)
        g.add("mul_zero", "x*0_nan_inf", [sp], sp * np.float32(0))
    g.add("self_eq", "x==x_nan", [sp], sp == sp)
    g.add("self_ne", "x!=x_nan", [sp], sp != sp)
    g.add("self_max", "maximum(x,x)_nan", [sp], np.maximum(sp, sp))
    return g


def gen_views():
    """Ops over views (permuted, expanded, padded, shrunk, flipped inputs),
    reductions of views and views of reductions, and larger shapes."""
    g = Group("views", 9)
    x = g.randn((3, 4, 5))
    x64 = x.astype(np.float64)
    # sums: tolerance from sum_tol (see reduce); movement parts exact
    xp = np.transpose(x, (2, 0, 1))
    g.add("sum_permuted", "sum(permute(x,2,0,1),axes=0,2)", [x], rounded(xp.astype(np.float64).sum((0, 2)), F32), rtol=1e-6, atol=sum_tol(xp, (0, 2)))
    c = g.randn((3, 1))
    g.add("sum_expanded", "sum(expand(3x1,3x4),axis1)", [c], rounded(c.astype(np.float64) * 4, F32).reshape(3), rtol=1e-6)
    y = g.randn((3, 4))
    yp = np.pad(y.astype(np.float64), [(1, 2), (0, 1)], constant_values=1.5)
    g.add("sum_padded", "sum(pad(x,1,2,0,1,value=1.5),axis0)", [y], rounded(yp.sum(0), F32), rtol=1e-6, atol=sum_tol(yp, 0))
    g.add("pad_of_sum", "pad(sum(x,axis1),2,1,value=5)", [y], rounded(np.pad(y.astype(np.float64).sum(1), (2, 1), constant_values=5), F32),
          rtol=1e-6, atol=sum_tol(y, 1))
    g.add("reshape_of_shrink", "x[:,1:3].reshape(-1)", [y], y[:, 1:3].reshape(-1))
    g.add("flip_reshape_permute", "flip(reshape(permute(x,1,0,2),(6,-1)),all)", [x], np.transpose(x, (1, 0, 2)).reshape(6, -1)[::-1, ::-1])
    g.add("expand_reshape", "reshape(expand(3x1,3x4),12)", [c], np.broadcast_to(c, (3, 4)).reshape(12))
    a, b = g.randn((4, 3)), g.randn((5, 4))
    g.add("matmul_TT", "T(a)@T(b)", [a, b], rounded(a.astype(np.float64).T @ b.astype(np.float64).T, F32), rtol=1e-6, atol=mm_tol(a.T, b.T))
    xi = g.ints((3, 4, 5), -4, 4, np.int32).astype(np.float32)
    g.add("argmax_permuted", "argmax(permute(x,2,0,1),axis1)", [xi], np.argmax(np.transpose(xi, (2, 0, 1)), axis=1).astype(np.int32))
    g.add("getitem_permuted", "permute(x,2,0,1)[::2,::-1]", [x], np.transpose(x, (2, 0, 1))[::2, ::-1])
    g.add("max_of_flipped_slice", "max(flip(x,0)[1:,::2],axis=(0,2))", [x], np.max(x[::-1][1:, ::2], axis=(0, 2)))
    g.add("add_views", "x.T+flip(x,0).T", [y], y.T + y[::-1].T, rtol=1e-6)
    g.add("contiguous_of_view", "contiguous(x[1:,::-2])*2", [y], y[1:, ::-2] * np.float32(2))
    # larger shapes
    big = g.randn((33, 17, 9))
    g.add("sum", "sum_33x17x9_axes0_2", [big], rounded(big.astype(np.float64).sum((0, 2)), F32), rtol=1e-6, atol=sum_tol(big, (0, 2)),
          axes=[0, 2], keepdim=0)
    g.add("max", "max_33x17x9_axis1_kd", [big], np.max(big, axis=1, keepdims=True), axes=[1], keepdim=1)
    ma, mb = g.randn((64, 65)), g.randn((65, 33))
    g.add("matmul", "matmul_f32_64x65@65x33", [ma, mb], rounded(ma.astype(np.float64) @ mb.astype(np.float64), F32), rtol=1e-6, atol=mm_tol(ma, mb))
    e1, e2 = g.randn((1000,)), g.randn((1000,))
    g.add("mul", "mul_f32_1000", [e1, e2], e1 * e2, rtol=1e-6)
    sm = g.randn((16, 129), scale=3.0)
    g.add("softmax", "softmax_16x129", [sm], rounded(softmax64(sm, -1), F32), rtol=1e-5, atol=1e-7, axis=-1)
    return g


def gen_matmul_tc():
    """Half and bfloat16 matmuls with shapes a tensor core tiles (M, N, K
    multiples of 16, 8, 16) and one it does not. A tensor core multiplies
    exactly and sums in float32, while tg's portable kernels round each
    product to the input type first (as numpy's half arithmetic does): the
    expected value is the exact sum (float64) rounded to the output type,
    and atol covers the product roundings, 2*u_in*max sum|a||b|."""
    g = Group("matmul_tc", 7)
    ue = {F16: 2.0 ** -11, BF16C: 2.0 ** -8}
    def case(op, label, a, b, code, out_code, transpose_b=False):
        bb = b.T if transpose_b else b
        exact = np.matmul(a.astype(np.float64), bb.astype(np.float64))
        bound = float(np.max(np.matmul(np.abs(a.astype(np.float64)), np.abs(bb.astype(np.float64)))))
        rtol = 2.0 * ue[out_code] if out_code in ue else 1e-5
        g.add(op, label, [a, b], rounded(exact, out_code), rtol=rtol, atol=2.0 * ue[code] * bound)
    for dt, code, tag in [(np.float16, F16, "f16"), (BF16, BF16C, "bf16")]:
        a, b = g.randn((64, 32), dt), g.randn((32, 48), dt)
        case("matmul", "matmul_%s_64x32@32x48" % tag, a, b, code, code)
        a, b = g.randn((2, 32, 16), dt), g.randn((2, 16, 24), dt)
        case("matmul", "matmul_%s_batched_2x32x16@2x16x24" % tag, a, b, code, code)
        a, b = g.randn((32, 64), dt), g.randn((16, 64), dt)
        case("matmul_T", "matmul_%s_32x64@(16x64).T" % tag, a, b, code, code, transpose_b=True)
        a, b = g.randn((48, 128), dt), g.randn((128, 32), dt)
        case("matmul_f32acc", "matmul_%s_cast_f32_48x128@128x32" % tag, a, b, code, F32)
    a, b = g.randn((24, 20), np.float16), g.randn((20, 12), np.float16)
    case("matmul", "matmul_f16_untiled_24x20@20x12", a, b, F16, F16)
    return g


GROUPS = [gen_create, gen_elementwise, gen_cast, gen_movement, gen_reduce, gen_matmul, gen_softmax, gen_chain, gen_views, gen_matmul_tc]


def main():
    """All groups, or the ones named on the command line (e.g. matmul_tc)."""
    os.makedirs(OUT, exist_ok=True)
    total = 0
    only = set(sys.argv[1:])
    for gen in GROUPS:
        if only and gen.__name__[len("gen_"):] not in only:
            continue
        g = gen()
        path, n, size = g.write()
        total += size
        print("%-40s %4d cases %8d bytes" % (os.path.relpath(path), n, size))
    print("total %d bytes" % total)
    assert total < 2_000_000


if __name__ == "__main__":
    main()
