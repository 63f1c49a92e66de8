#!/usr/bin/env python3
"""stress_gguf.py OUT.gguf: an F32 GGUF of 6 tensors (256 x 4096) whose rows
are hard cases for quantizers: zeros, constants, normals from 1e-8 to 1e3,
heavy tails, quarter-integer grids, tiny noise with large outliers, all
positive, all negative. Deterministic (seed 5). Needs numpy and gguf."""
import sys

import gguf
import numpy as np

rng = np.random.default_rng(5)
w = gguf.GGUFWriter(sys.argv[1], "llama")
for k in range(6):
    rows = []
    for r in range(256):
        kind, n = rng.integers(0, 8), 4096
        if kind == 0:
            x = np.zeros(n)
        elif kind == 1:
            x = rng.standard_normal(n) * 10.0 ** rng.uniform(-8, 3)
        elif kind == 2:
            x = rng.standard_t(2, n) * 10.0 ** rng.uniform(-3, 2)
        elif kind == 3:
            x = np.round(rng.standard_normal(n) * 4) / 4
        elif kind == 4:
            x = rng.uniform(-1, 1, n) * 1e-6
            x[rng.integers(0, n, 10)] = rng.uniform(-100, 100, 10)
        elif kind == 5:
            x = np.abs(rng.standard_normal(n))
        elif kind == 6:
            x = -np.abs(rng.standard_normal(n)) * 1e3
        else:
            x = np.full(n, rng.uniform(-2, 2))
        rows.append(x)
    w.add_tensor(f"blk.{k}.ffn_up.weight", np.array(rows, dtype=np.float32))
w.write_header_to_file()
w.write_kv_data_to_file()
w.write_tensors_to_file()
w.close()
