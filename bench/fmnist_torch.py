#!/usr/bin/env python3
"""fmnist_torch.py: the PyTorch reference for bench/bench_fmnist.c.

Trains tinygrad's beautiful_mnist CNN (the same model as
examples/fashion_mnist.c: conv 1->32 5x5, conv 32->32 5x5, batchnorm, maxpool,
conv 32->64 3x3, conv 64->64 3x3, batchnorm, maxpool, linear 576->10) on
Fashion-MNIST with Adam and the example's learning-rate schedule (linear
warm-up over 10% of the steps to 4e-3, then cosine decay to 0), batch 512,
for --steps steps on the CPU
with --threads threads, then prints one line:

    result steps=S samples_per_s=X accuracy=A torch=VERSION

samples/s counts the steps after the first three (warm-up), like the C side.
Prints "skip reason=..." and exits 3 when torch is missing.
"""
import argparse, gzip, math, sys, time


def idx(path, dims):
    with gzip.open(path, "rb") as f:
        data = f.read()
    hdr = 4 + 4 * dims
    shape = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(dims)]
    return data[hdr:], shape


def learning_rate(step, steps, peak=4e-3):
    warm = max(steps // 10, 1)
    if step < warm:
        return peak * (step + 1) / warm
    return peak * 0.5 * (1 + math.cos(math.pi * (step - warm) / (steps - warm)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--dir", default="/usr/share/datasets/fashion-mnist")
    a = ap.parse_args()
    try:
        import torch
        import torch.nn as nn
    except Exception as e:  # noqa: BLE001
        print(f"skip reason=no-torch({type(e).__name__})")
        sys.exit(3)
    torch.set_num_threads(a.threads)
    torch.manual_seed(1337)
    xtr, s = idx(f"{a.dir}/train-images-idx3-ubyte.gz", 3)
    ytr, _ = idx(f"{a.dir}/train-labels-idx1-ubyte.gz", 1)
    xte, st = idx(f"{a.dir}/t10k-images-idx3-ubyte.gz", 3)
    yte, _ = idx(f"{a.dir}/t10k-labels-idx1-ubyte.gz", 1)
    X = torch.frombuffer(bytearray(xtr), dtype=torch.uint8).float().view(-1, 1, 28, 28) / 255
    Y = torch.frombuffer(bytearray(ytr), dtype=torch.uint8).long()
    XT = torch.frombuffer(bytearray(xte), dtype=torch.uint8).float().view(-1, 1, 28, 28) / 255
    YT = torch.frombuffer(bytearray(yte), dtype=torch.uint8).long()
    model = nn.Sequential(nn.Conv2d(1, 32, 5), nn.ReLU(), nn.Conv2d(32, 32, 5), nn.ReLU(), nn.BatchNorm2d(32), nn.MaxPool2d(2),
                          nn.Conv2d(32, 64, 3), nn.ReLU(), nn.Conv2d(64, 64, 3), nn.ReLU(), nn.BatchNorm2d(64), nn.MaxPool2d(2),
                          nn.Flatten(1), nn.Linear(576, 10))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    t_first = None
    for step in range(a.steps):
        if step == 3:
            t_first = time.perf_counter()
        for group in opt.param_groups:
            group["lr"] = learning_rate(step, a.steps)
        i = torch.randint(0, X.shape[0], (512,))
        loss = nn.functional.cross_entropy(model(X[i]), Y[i])
        opt.zero_grad()
        loss.backward()
        opt.step()
    rate = (a.steps - 3) * 512 / (time.perf_counter() - t_first) if a.steps > 3 else 0
    model.eval()
    with torch.no_grad():
        acc = sum((model(XT[b:b + 1000]).argmax(1) == YT[b:b + 1000]).sum().item() for b in range(0, XT.shape[0], 1000)) / XT.shape[0]
    print(f"result steps={a.steps} samples_per_s={rate:.1f} accuracy={acc:.4f} torch={torch.__version__}")


if __name__ == "__main__":
    main()
