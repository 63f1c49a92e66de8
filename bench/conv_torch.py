#!/usr/bin/env python3
"""conv_torch.py: the PyTorch CPU reference for bench/bench_conv.c.

Times torch.nn.functional.conv2d (inference mode, float32) on the CPU with a
given number of threads and prints one line:

    torch_ms=BEST threads=T torch=VERSION

BEST is the best of --reps timed calls after --warmup untimed ones (each call
allocates its output, as tg's realize does). With --x/--weight the inputs are
read from raw float32 files (N*Cin*H*W and Cout*Cin*K*K values, C order), and
with --out the result of the last call is written into an existing raw file of
the right size (bench_conv compares it with tg's). Without them the inputs are
random. Needs only torch (no numpy).

When torch cannot be imported it prints "skip reason=..." and exits with 3,
which bench_conv turns into a "skipped" line.

    python3 bench/conv_torch.py --threads 2 --reps 5     # the time alone
"""
import argparse
import sys
import time


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=32)
    ap.add_argument("--cin", type=int, default=64)
    ap.add_argument("--cout", type=int, default=64)
    ap.add_argument("--hw", type=int, default=56, help="input height and width")
    ap.add_argument("--k", type=int, default=3, help="kernel height and width")
    ap.add_argument("--pad", type=int, default=1)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--x", help="raw float32 input file")
    ap.add_argument("--weight", help="raw float32 weight file")
    ap.add_argument("--out", help="existing raw float32 file to write the output into")
    a = ap.parse_args()

    try:
        import torch
        import torch.nn.functional as F
    except Exception as e:  # ImportError, or a broken install
        print(f"skip reason=torch_not_importable_({type(e).__name__})", flush=True)
        sys.exit(3)

    torch.set_num_threads(a.threads)
    xs = (a.n, a.cin, a.hw, a.hw)
    ws = (a.cout, a.cin, a.k, a.k)

    def load(path, shape):
        numel = 1
        for d in shape:
            numel *= d
        if path is None:
            return torch.randn(shape, dtype=torch.float32)
        return torch.from_file(path, shared=False, size=numel, dtype=torch.float32).reshape(shape).clone()

    x, w = load(a.x, xs), load(a.weight, ws)
    best = float("inf")
    with torch.inference_mode():
        for _ in range(a.warmup):
            y = F.conv2d(x, w, padding=a.pad)
        for _ in range(a.reps):
            t0 = time.perf_counter()
            y = F.conv2d(x, w, padding=a.pad)
            best = min(best, time.perf_counter() - t0)
        if a.out:
            o = torch.from_file(a.out, shared=True, size=y.numel(), dtype=torch.float32)
            o.copy_(y.reshape(-1))
            del o
    print(f"torch_ms={best * 1e3:.3f} threads={torch.get_num_threads()} torch={torch.__version__}", flush=True)


if __name__ == "__main__":
    main()
