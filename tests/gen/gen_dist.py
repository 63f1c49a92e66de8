#!/usr/bin/env python3
"""Goldens for tests/test_dist.c: the inputs of two ranks and numpy's
element-wise sum, maximum and mean of them (what an allreduce over a world
of 2 must give), per dtype.

    python3 tests/gen/gen_dist.py      # writes tests/goldens/dist_allreduce.bin

Format (little-endian): b"TGDIST1\\n", u32 record count, then per record:
u8 dtype (0 float32, 1 float64, 2 int32, 3 int64), u32 n, then n elements
each of: rank 0's input, rank 1's input, sum, max, mean (the mean only for
the float dtypes)."""
import os
import struct
import numpy as np

rng = np.random.default_rng(22)
records = []
for code, dt, n in [(0, np.float32, 1000), (0, np.float32, 1), (1, np.float64, 777), (2, np.int32, 513), (3, np.int64, 300)]:
    if code <= 1:
        a = (rng.standard_normal(n) * 10).astype(dt)
        b = (rng.standard_normal(n) * 10).astype(dt)
    else:
        a = rng.integers(-2**30, 2**30, n).astype(dt)
        b = rng.integers(-2**30, 2**30, n).astype(dt)
    arrays = [a, b, a + b, np.maximum(a, b)]
    if code <= 1:
        arrays.append((a + b) / dt(2))
    records.append((code, n, arrays))

out = os.path.join(os.path.dirname(__file__), "..", "goldens", "dist_allreduce.bin")
with open(out, "wb") as f:
    f.write(b"TGDIST1\n")
    f.write(struct.pack("<I", len(records)))
    for code, n, arrays in records:
        f.write(struct.pack("<BI", code, n))
        for x in arrays:
            f.write(x.astype(x.dtype.newbyteorder("<")).tobytes())
print("wrote", out)
