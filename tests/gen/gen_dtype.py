#!/usr/bin/env python3
"""gen_dtype.py: golden data for tests/test_dtype.c.

Run from the repository root:  python3 tests/gen/gen_dtype.py
Needs numpy and ml_dtypes. Output is deterministic (fixed seed). Every file is
little-endian; tg_dtype indices are the enum order of include/tg.h:
  0 bool, 1 int8, 2 uint8, 3 int16, 4 uint16, 5 int32, 6 uint32, 7 int64,
  8 uint64, 9 fp8e4m3, 10 fp8e5m2, 11 float16, 12 bfloat16, 13 float32, 14 float64

tests/goldens/dtype_fp8_decode.bin
  512 float32: [c] = ml_dtypes float8_e4m3fn code c as float32 (c = 0..255),
  [256 + c] = float8_e5m2 code c as float32.
tests/goldens/dtype_f16_decode.bin
  65536 float32: [c] = numpy float16 code c as float32.
tests/goldens/dtype_bf16_decode.bin
  uint64 FNV-1a-64 hash of the 65536 float32 values (their 262144 LE bytes)
  of ml_dtypes bfloat16 codes 0..65535 as float32, then 4096 float32: the
  values of codes 0, 16, 32, ... (to say where a mismatch is).
tests/goldens/dtype_f32_encode.bin
  uint32 n; n float32 inputs x; n uint16 float16(x); n uint16 bfloat16(x);
  n uint8 e4m3(x); n uint8 e5m2(x).
tests/goldens/dtype_f64_encode.bin
  uint32 n; n float64 inputs x; then the same four arrays as above, each
  rounded once from the double.
tests/goldens/dtype_promote.bin
  225 uint8: [a * 15 + b] = tg_dtype_promote(a, b).
tests/goldens/dtype_safe_cast.bin
  225 uint8: [from * 15 + to] = tg_dtype_can_safe_cast(from, to) (0/1), then
  225 uint8: numpy.can_cast(from, to, 'safe') (0/1), 255 where from or to has
  no numpy type (bfloat16, fp8).

Encoding rules (what the goldens hold):
  float16  numpy's cast (round to nearest even, overflow to inf).
  bfloat16 ml_dtypes' cast from float32; from float64 an exact rounding done
           here (ml_dtypes goes through float32 and so rounds twice).
  fp8      NVIDIA cuda_fp8 __NV_SATFINITE: round to nearest even, then |x|
           beyond the largest finite value saturates to it (+-448 for e4m3fn,
           +-57344 for e5m2). e4m3fn has no inf: +-inf saturates too. e5m2
           keeps +-inf (0x7C/0xFC). NaN: e4m3fn sign|0x7F, e5m2 sign|0x7E.
           ml_dtypes agrees in range (the generator checks), but turns finite
           overflow into NaN (e4m3fn) or inf (e5m2), so the saturating cases
           come from exact_round() below, an independent implementation.
  NaN inputs: the tests compare only NaN-ness and sign of the results.
"""
import math
import os
import struct
from fractions import Fraction

import ml_dtypes
import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "goldens")

E4M3 = ml_dtypes.float8_e4m3fn
E5M2 = ml_dtypes.float8_e5m2
BF16 = ml_dtypes.bfloat16

# (mantissa bits, min normal exponent, largest finite value)
FMT = {
    "f16": (10, -14, 65504.0),
    "bf16": (7, -126, float(Fraction(0x1FE, 0x100) * 2 ** 127)),
    "e4m3": (3, -6, 448.0),
    "e5m2": (2, -14, 57344.0),
}


def exact_round(x, fmt):
    """x (a Python float, i.e. double) rounded once, to nearest even, to fmt.
    Returns a float: the rounded value, or +-inf when it rounds beyond the
    largest finite value (the caller applies saturation). NaN passes through."""
    if math.isnan(x) or math.isinf(x) or x == 0:
        return x
    m, emin, maxv = FMT[fmt]
    e = max(math.frexp(abs(x))[1] - 1, emin)      # binade exponent (floor log2)
    q = Fraction(2) ** (e - m)                     # spacing of the format there
    n = round(Fraction(x) / q)                     # round() on a Fraction is half-even
    v = float(n * q)
    if abs(v) > maxv:
        return math.copysign(math.inf, x)
    return v if v != 0 else math.copysign(0.0, x)


def enc_f16(x):
    v = exact_round(x, "f16")
    if math.isnan(x):
        return int(np.array([x], np.float64).astype(np.float16).view(np.uint16)[0])
    return int(np.array([v], np.float64).astype(np.float16).view(np.uint16)[0])


def enc_bf16(x):
    if math.isnan(x):
        return 0xFFC0 if math.copysign(1, x) < 0 else 0x7FC0
    v = exact_round(x, "bf16")
    return struct.unpack("<I", struct.pack("<f", v))[0] >> 16   # v is exact in float32


def enc_fp8(x, fmt):
    """The cuda __NV_SATFINITE rule (with +-inf kept for e5m2)."""
    neg = math.copysign(1, x) < 0
    s = 0x80 if neg else 0
    if math.isnan(x):
        return s | (0x7F if fmt == "e4m3" else 0x7E)
    if math.isinf(x) and fmt == "e5m2":
        return s | 0x7C
    v = exact_round(x, fmt)
    maxv = FMT[fmt][2]
    if math.isinf(v):
        v = math.copysign(maxv, x)
    t = E4M3 if fmt == "e4m3" else E5M2
    code = int(np.array([v], np.float64).astype(t).view(np.uint8)[0])   # v is exact in fmt
    assert float(np.array([code], np.uint8).view(t).astype(np.float64)[0]) == v or v == 0
    return code


def sample_steps(m):
    """Mantissa steps to try in a binade: the first few, the last few (the
    carry into the next binade) and a handful in between."""
    n = 2 ** m
    return sorted({*range(min(n, 6)), *range(max(n - 3, 0), n + 1), n // 3, n // 2, (2 * n) // 3})


def f32_inputs(rng):
    xs = [0.0, -0.0, math.inf, -math.inf, math.nan, -math.nan, 1.0, -1.0, 0.5, 2.0, 3.0]
    bits = [0x7FC00000, 0xFFC00000, 0x7FA00000, 0x7F800001, 0xFF812345, 0x7FFFFFFF,  # NaNs
            0x00000001, 0x80000001, 0x007FFFFF, 0x00800000, 0x7F7FFFFF, 0xFF7FFFFF]
    for fmt, (m, emin, maxv) in FMT.items():
        tiny = 2.0 ** (emin - m)                  # smallest subnormal
        for k in range(0, 8):
            for mult in (k, k + 0.25, k + 0.5, k + 0.75):
                xs += [mult * tiny, -mult * tiny]
        xs += [2.0 ** emin, 2.0 ** emin * (1 - 2.0 ** -(m + 1)), tiny / 2, tiny / 2 * 1.0001, tiny / 2 * 0.9999]
        ulp_top = 2.0 ** (math.frexp(maxv)[1] - 1 - m)
        for d in (-1, -0.5, -0.25, 0, 0.25, 0.4999, 0.5, 0.5001, 0.75, 1, 1.5, 2, 4, 100):
            xs += [maxv + d * ulp_top, -(maxv + d * ulp_top)]
        # ties between neighbours in a few binades (even and odd mantissas)
        for e in (emin, emin + 1, 0, 1, 3, 7):
            q = 2.0 ** (e - m)
            for j in sample_steps(m):
                base = 2.0 ** e + j * q
                xs += [base + q / 2, -(base + q / 2), base + q / 2 * 1.001, base + q / 2 * 0.999]
    xs += [448.0, 464.0, 465.0, 480.0, 500.0, 1e6, 57344.0, 61440.0, 61441.0, 65504.0, 65519.0,
           65520.0, 65536.0, 1e9, 3.4e38, -464.0, -61440.0, -65520.0]
    # random values over many magnitudes, and random bit patterns
    mag = rng.uniform(-30, 20, 1500)
    xs += list((np.sign(rng.uniform(-1, 1, 1500)) * 2.0 ** mag).astype(np.float32).astype(np.float64))
    rb = rng.integers(0, 2 ** 32, 500, dtype=np.uint64).astype(np.uint32)
    with np.errstate(over="ignore"):
        arr = np.array(xs, np.float64).astype(np.float32)   # some bf16 limits overflow float32: fine
    arr = np.concatenate([arr, np.array(bits, np.uint32).view(np.float32), rb.view(np.float32)])
    return arr


def f64_inputs(rng):
    xs = []
    for fmt, (m, emin, maxv) in FMT.items():
        # just above/below every halfway point in a few binades: exact in double
        # but not in float32, so rounding through float32 would tie wrongly.
        for e in (emin - m, emin - 1, emin, 0, 2, 5):
            q = 2.0 ** (max(e, emin) - m)
            for j in sample_steps(m):
                base = 2.0 ** e + j * q
                for eps in (2.0 ** -40, -(2.0 ** -40), 2.0 ** -29, 0.0):
                    v = base + q / 2 + eps * q
                    xs += [v, -v]
        ulp_top = 2.0 ** (math.frexp(maxv)[1] - 1 - m)
        for d in (0.5, 0.5 + 2.0 ** -35, 0.5 - 2.0 ** -35, 1.0):
            xs += [maxv + d * ulp_top, -(maxv + d * ulp_top)]
        tiny = 2.0 ** (emin - m)
        xs += [tiny / 2, tiny / 2 + tiny * 2.0 ** -40, tiny / 2 - tiny * 2.0 ** -40]
    xs += [0.0, -0.0, math.inf, -math.inf, math.nan, 1e300, -1e300, 5e-324, -5e-324, 2.2250738585072014e-308]
    mag = rng.uniform(-30, 20, 1200)
    mant = rng.uniform(1, 2, 1200)
    xs += list(np.sign(rng.uniform(-1, 1, 1200)) * mant * 2.0 ** mag)
    return np.array(xs, np.float64)


def fnv1a64(data):
    h = 0xCBF29CE484222325
    for b in data:
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def same_bits_or_nan(a, b, nanfn):
    return a == b or (nanfn(a) and nanfn(b) and (a & 0x80) == (b & 0x80))


def encode_set(xs):
    f16 = np.array([enc_f16(float(x)) for x in xs], np.uint16)
    bf16 = np.array([enc_bf16(float(x)) for x in xs], np.uint16)
    e4 = np.array([enc_fp8(float(x), "e4m3") for x in xs], np.uint8)
    e5 = np.array([enc_fp8(float(x), "e5m2") for x in xs], np.uint8)
    return f16, bf16, e4, e5


def check_f32_against_libs(xs, f16, bf16, e4, e5):
    """Cross-check the independent implementation against numpy / ml_dtypes."""
    with np.errstate(all="ignore"):
        np16 = xs.astype(np.float16).view(np.uint16)
        ml16 = xs.astype(BF16).view(np.uint16)
        ml4 = xs.astype(E4M3).view(np.uint8)
        ml5 = xs.astype(E5M2).view(np.uint8)
    for i, x in enumerate(xs):
        x = float(x)
        if math.isnan(x):
            assert np16[i] & 0x7C00 == 0x7C00 and np16[i] & 0x3FF and (np16[i] >> 15) == (f16[i] >> 15)
            continue
        assert np16[i] == f16[i], (x, hex(np16[i]), hex(f16[i]))
        assert ml16[i] == bf16[i], (x, hex(ml16[i]), hex(bf16[i]))
        if abs(x) <= 464:                      # e4m3 in range: ml_dtypes is the reference
            assert ml4[i] == e4[i], (x, hex(ml4[i]), hex(e4[i]))
        else:
            assert e4[i] & 0x7F == 0x7E
        if abs(x) < 61440 or math.isinf(x):    # e5m2 in range (and inf)
            assert ml5[i] == e5[i], (x, hex(ml5[i]), hex(e5[i]))
        else:
            assert e5[i] & 0x7F == 0x7B


def check_f64_against_numpy(xs, f16):
    with np.errstate(all="ignore"):
        np16 = xs.astype(np.float16).view(np.uint16)      # numpy rounds float64->float16 once
    for i, x in enumerate(xs):
        if not math.isnan(x):
            assert np16[i] == f16[i], (float(x), hex(np16[i]), hex(f16[i]))


# ---------------------------------------------------------------- dtype tables

NAMES = ["bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
         "fp8e4m3", "fp8e5m2", "float16", "bfloat16", "float32", "float64"]
IDX = {n: i for i, n in enumerate(NAMES)}

# tinygrad/dtype.py promo_lattice (current tinygrad): int64 and uint64 meet at
# "weakfloat", which has priority between uint64 and fp8e4m3 and becomes the
# default float (float32) when it is the result. bool's "weakint" parent is
# left out: it sits between bool and {int8, uint8} and changes no result here.
LATTICE = {
    "bool": ["int8", "uint8"], "int8": ["int16"], "int16": ["int32"], "int32": ["int64"],
    "int64": ["weakfloat"], "uint8": ["int16", "uint16"], "uint16": ["int32", "uint32"],
    "uint32": ["int64", "uint64"], "uint64": ["weakfloat"], "weakfloat": ["fp8e4m3", "fp8e5m2"],
    "fp8e4m3": ["float16", "bfloat16"], "fp8e5m2": ["float16", "bfloat16"],
    "float16": ["float32"], "bfloat16": ["float32"], "float32": ["float64"], "float64": [],
}
PRIORITY = NAMES[:9] + ["weakfloat"] + NAMES[9:]


def parents(d):
    s = {d}
    for p in LATTICE[d]:
        s |= parents(p)
    return s


def promote(a, b):
    r = min(parents(a) & parents(b), key=PRIORITY.index)
    return "float32" if r == "weakfloat" else r


def can_safe_cast(a, b):
    """tinygrad's can_lossless_cast (formerly can_safe_cast), plus a bfloat16
    row: every value of a is exactly representable in b."""
    if a == b or a == "bool":
        return True
    fp8s = ("fp8e4m3", "fp8e5m2")
    table = {
        "float64": ("float32", "float16", "bfloat16", *fp8s, "uint32", "uint16", "uint8", "int32", "int16", "int8"),
        "float32": ("float16", "bfloat16", *fp8s, "uint16", "uint8", "int16", "int8"),
        "float16": (*fp8s, "uint8", "int8"),
        "bfloat16": (*fp8s, "uint8", "int8"),      # not in tinygrad's table; exact all the same
        "uint64": ("uint32", "uint16", "uint8"),
        "uint32": ("uint16", "uint8"),
        "uint16": ("uint8",),
        "int64": ("uint32", "uint16", "uint8", "int32", "int16", "int8"),
        "int32": ("uint16", "uint8", "int16", "int8"),
        "int16": ("uint8", "int8"),
    }
    return a in table.get(b, ())


NP_TYPES = {"bool": np.bool_, "int8": np.int8, "uint8": np.uint8, "int16": np.int16, "uint16": np.uint16,
            "int32": np.int32, "uint32": np.uint32, "int64": np.int64, "uint64": np.uint64,
            "float16": np.float16, "float32": np.float32, "float64": np.float64}


def exhaustive_safe_cast_check():
    """Brute-force the small formats: every value of `a` must survive a round
    trip through `b` exactly, which decides can_safe_cast for the pairs the
    small formats are in (integers are checked at their extremes)."""
    with np.errstate(invalid="ignore"):
        vals = small_format_values()
    _check_exact(vals)


def small_format_values():
    return {
        "fp8e4m3": np.arange(256, dtype=np.uint8).view(E4M3).astype(np.float64),
        "fp8e5m2": np.arange(256, dtype=np.uint8).view(E5M2).astype(np.float64),
        "float16": np.arange(65536, dtype=np.uint16).view(np.float16).astype(np.float64),
        "bfloat16": np.arange(65536, dtype=np.uint16).view(BF16).astype(np.float32).astype(np.float64),
        "int8": np.arange(-128, 128, dtype=np.float64), "uint8": np.arange(256, dtype=np.float64),
        "int16": np.arange(-32768, 32768, dtype=np.float64), "uint16": np.arange(65536, dtype=np.float64),
    }


def _check_exact(vals):
    enc = {"fp8e4m3": lambda v: exact_round(v, "e4m3"), "fp8e5m2": lambda v: exact_round(v, "e5m2"),
           "float16": lambda v: exact_round(v, "f16"), "bfloat16": lambda v: exact_round(v, "bf16")}
    for a, va in vals.items():
        va = va[~np.isnan(va)]
        for b, f in enc.items():
            if a == b:
                continue
            exact = all(f(float(v)) == v for v in va)
            assert exact == can_safe_cast(a, b), (a, b, exact)


def tables():
    prom = np.zeros(225, np.uint8)
    safe = np.zeros(225, np.uint8)
    npc = np.full(225, 255, np.uint8)
    for i, a in enumerate(NAMES):
        for j, b in enumerate(NAMES):
            prom[i * 15 + j] = IDX[promote(a, b)]
            safe[i * 15 + j] = can_safe_cast(a, b)
            if a in NP_TYPES and b in NP_TYPES:
                npc[i * 15 + j] = np.can_cast(NP_TYPES[a], NP_TYPES[b], "safe")
    # tinygrad's table is numpy's, except that numpy calls int64/uint64 ->
    # float64 safe although float64 cannot hold every 64-bit integer.
    for k in range(225):
        if npc[k] != 255 and npc[k] != safe[k]:
            assert (NAMES[k // 15], NAMES[k % 15]) in (("int64", "float64"), ("uint64", "float64")), k
    exhaustive_safe_cast_check()
    # spot checks from tinygrad's own tests
    assert promote("int8", "uint8") == "int16" and promote("int64", "uint64") == "float32"
    assert promote("fp8e4m3", "fp8e5m2") == "float16" and promote("float16", "bfloat16") == "float32"
    assert promote("bool", "bool") == "bool" and promote("int32", "uint32") == "int64"
    return prom, safe, npc


def main():
    os.makedirs(OUT, exist_ok=True)
    rng = np.random.default_rng(20240607)

    def write(name, *parts):
        with open(os.path.join(OUT, name), "wb") as f:
            for p in parts:
                f.write(p if isinstance(p, bytes) else np.ascontiguousarray(p).tobytes())

    # fp8 decode: all codes
    codes = np.arange(256, dtype=np.uint8)
    dec = np.concatenate([codes.view(E4M3).astype(np.float32), codes.view(E5M2).astype(np.float32)])
    for c in range(256):   # cross-check ml_dtypes against the format definition
        for t, (m, emin, _), i in ((E4M3, FMT["e4m3"], c), (E5M2, FMT["e5m2"], 256 + c)):
            e, f = (c & 0x7F) >> m, c & ((1 << m) - 1)
            v = float(dec[i])
            if not math.isnan(v) and not math.isinf(v):
                want = (f * 2.0 ** (emin - m)) if e == 0 else (1 + f / 2 ** m) * 2.0 ** (e - 1 + emin)
                assert abs(v) == want and (c >> 7) == (math.copysign(1, v) < 0), (t, c)
    write("dtype_fp8_decode.bin", dec.astype("<f4"))

    h = np.arange(65536, dtype=np.uint16)
    write("dtype_f16_decode.bin", h.view(np.float16).astype(np.float32).astype("<f4"))
    bfd = h.view(BF16).astype(np.float32).astype("<f4")
    write("dtype_bf16_decode.bin", struct.pack("<Q", fnv1a64(bfd.tobytes())), bfd[::16])

    xs = f32_inputs(rng)
    with np.errstate(invalid="ignore"):
        f16, bf16, e4, e5 = encode_set(xs.astype(np.float64))
    check_f32_against_libs(xs, f16, bf16, e4, e5)
    write("dtype_f32_encode.bin", struct.pack("<I", len(xs)), xs.astype("<f4"), f16.astype("<u2"),
          bf16.astype("<u2"), e4, e5)

    xd = f64_inputs(rng)
    f16, bf16, e4, e5 = encode_set(xd)
    check_f64_against_numpy(xd, f16)
    with np.errstate(invalid="ignore", over="ignore"):   # the traps must catch rounding through float32
        twice = int(np.sum((xd.astype(np.float32).astype(BF16).view(np.uint16) != bf16) & ~np.isnan(xd)))
    assert twice > 0
    write("dtype_f64_encode.bin", struct.pack("<I", len(xd)), xd.astype("<f8"), f16.astype("<u2"),
          bf16.astype("<u2"), e4, e5)

    prom, safe, npc = tables()
    write("dtype_promote.bin", prom)
    write("dtype_safe_cast.bin", safe, npc)
    print(f"wrote goldens: {len(xs)} float32 and {len(xd)} float64 encode inputs")


if __name__ == "__main__":
    main()
