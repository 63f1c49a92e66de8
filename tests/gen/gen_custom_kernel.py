#!/usr/bin/env python3
"""gen_custom_kernel.py: golden data for tests/test_custom_kernel.c: the
seeds' fp8 quantize-with-amax (tinygrad extra/fp8/fp8_linear.py,
quantize_to_fp8), computed with numpy in float32 and ml_dtypes'
float8_e4m3fn. Nothing comes from tg.

Run from the repository root:  python3 tests/gen/gen_custom_kernel.py
Needs numpy and ml_dtypes. Writes tests/goldens/custom_kernel_fp8.bin in the
format of tests/gen/gen_ops.py (its writer is reused; see the top of that
script).

Op "quantize_fp8": input x (float32); outputs y (fp8e4m3) and inv_scale
(float32, shape (1,)), bit-exact:
    amax = max |x|,  scale = 448 / (amax + 1e-8)  (float32 arithmetic)
    y = e4m3(clip(x * scale, -448, 448)),  inv_scale = 1 / scale
Op "quantize_fp8_grad": inputs x and w (float32); output dx, the gradient
of sum(float(y) * w) by x with the seeds' straight-through estimator (the
clamp and the rounding pass the gradient; amax is detached): the gradient
reaching y is w rounded to fp8 (y's dtype), so dx = float(e4m3(w)) * scale.
"""
import os
import sys

import ml_dtypes
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_ops import Group  # noqa: E402

E4M3 = ml_dtypes.float8_e4m3fn
F = np.float32


class KernelGroup(Group):
    PREFIX = "custom_kernel_"


def scale_of(x):
    amax = np.max(np.abs(x)).astype(F)
    return F(448.0) / (amax + F(1e-8))


def quantize(x):
    s = scale_of(x)
    y = np.clip(x * s, F(-448.0), F(448.0)).astype(F).astype(E4M3)
    return y, np.array([F(1.0) / s], F)


def main():
    g = KernelGroup("fp8", 61)
    shapes = [(64, 48), (7,), (3, 5, 2), (1000,)]
    for shape in shapes:
        x = g.randn(shape, scale=2.0)
        if shape == (7,):
            x[3] = F(-40.0)   # one outlier sets the scale
        y, inv = quantize(x)
        label = "quantize_fp8_" + "x".join(map(str, shape))
        g.add("quantize_fp8", label, [x], [y, inv], bitexact=1)
        w = g.randn(shape, scale=3.0)
        dx = (w.astype(E4M3).astype(F) * scale_of(x)).astype(F)
        g.add("quantize_fp8_grad", label + "_grad", [x, w], [dx], bitexact=1)
    path, n, size = g.write()
    print("%s: %d cases, %d bytes" % (path, n, size))


if __name__ == "__main__":
    main()
