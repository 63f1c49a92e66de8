#!/usr/bin/env python3
"""matmul_torch.py: the PyTorch CPU reference for bench/bench_sgemm.c.

Times torch.matmul of two N x N float32 matrices on the CPU with a given
number of threads, for each size of --sizes, and prints one line per size:

    n=N torch_ms=BEST threads=T torch=VERSION

BEST is the best of --reps timed calls after --warmup untimed ones (each call
allocates its output, as tg's realize does). With --dir the inputs of size N
are read from DIR/a_N.f32 and DIR/b_N.f32 (raw float32, C order) and the
result of the last call is written into the existing file DIR/c_N.f32
(bench_sgemm compares it with tg's); without it they are random. Needs only
torch (no numpy).

When torch cannot be imported it prints "skip reason=..." and exits with 3,
which bench_sgemm turns into a "skipped" line.

    python3 bench/matmul_torch.py --threads 2 --sizes 1024,2048   # the times alone
"""
import argparse
import os
import sys
import time


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="512,1024,2048", help="comma-separated matrix sizes")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--dir", help="directory with a_N.f32, b_N.f32 and c_N.f32 (written)")
    a = ap.parse_args()

    try:
        import torch
    except Exception as e:  # ImportError, or a broken install
        print(f"skip reason=torch_not_importable_({type(e).__name__})", flush=True)
        sys.exit(3)

    torch.set_num_threads(a.threads)
    for n in [int(s) for s in a.sizes.split(",") if s]:
        def load(tag):
            if a.dir is None:
                return torch.randn((n, n), dtype=torch.float32)
            path = os.path.join(a.dir, f"{tag}_{n}.f32")
            return torch.from_file(path, shared=False, size=n * n, dtype=torch.float32).reshape(n, n).clone()

        x, y = load("a"), load("b")
        best = float("inf")
        with torch.inference_mode():
            for _ in range(a.warmup):
                c = torch.matmul(x, y)
            for _ in range(a.reps):
                t0 = time.perf_counter()
                c = torch.matmul(x, y)
                best = min(best, time.perf_counter() - t0)
            if a.dir is not None:
                o = torch.from_file(os.path.join(a.dir, f"c_{n}.f32"), shared=True, size=n * n, dtype=torch.float32)
                o.copy_(c.reshape(-1))
                del o
        print(f"n={n} torch_ms={best * 1e3:.3f} threads={torch.get_num_threads()} torch={torch.__version__}", flush=True)


if __name__ == "__main__":
    main()
