#!/usr/bin/env python3
"""Goldens for tg's random numbers (run from the repo root).

threefry2x32 with 20 rounds, written here independently from the C version and
checked against the Random123 known-answer vectors below. Element i of the
first draw after tg_manual_seed(seed) uses counter i (low word) / 0 (high word)
and key = seed (low word) / seed >> 32 (high word); tg_rand keeps the low 32
output bits b and returns float32((b >> 9) | 0x3f800000) - 1.

File tests/goldens/random_rand.bin: little-endian
  uint64 seed, uint64 n, then n float32 values of tg_rand((n,), F32)
  then n more float32 values of a second tg_rand((n,), F32) call (counter continues).
"""
import struct, numpy as np

M = 0xFFFFFFFF
ROT = [13, 15, 26, 6, 17, 29, 16, 24]

def threefry2x32(x0, x1, k0, k1):
    ks = [k0, k1, (k0 ^ k1 ^ 0x1BD11BDA) & M]
    x0 = (x0 + ks[0]) & M
    x1 = (x1 + ks[1]) & M
    for i in range(5):
        for j in range(4):
            r = ROT[(i % 2) * 4 + j]
            x0 = (x0 + x1) & M
            x1 = ((x1 << r) | (x1 >> (32 - r))) & M
            x1 ^= x0
        x0 = (x0 + ks[(i + 1) % 3]) & M
        x1 = (x1 + ks[(i + 2) % 3] + i + 1) & M
    return x0, x1

# Random123 kat_vectors: threefry2x32 20 rounds
assert threefry2x32(0, 0, 0, 0) == (0x6b200159, 0x99ba4efe)
assert threefry2x32(M, M, M, M) == (0x1cb996fc, 0xbb002be7)
assert threefry2x32(0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344) == (0xc4923a9c, 0x483df7a0)

def rand(seed, start, n):
    out = np.empty(n, np.float32)
    for i in range(n):
        c = start + i
        lo, _ = threefry2x32(c & M, c >> 32, seed & M, seed >> 32)
        out[i] = np.uint32((lo >> 9) | 0x3f800000).view(np.float32) - np.float32(1)
    return out

if __name__ == "__main__":
    seed, n = 42, 1000
    with open("tests/goldens/random_rand.bin", "wb") as f:
        f.write(struct.pack("<QQ", seed, n))
        f.write(rand(seed, 0, n).tobytes())
        f.write(rand(seed, n, n).tobytes())
    print("wrote tests/goldens/random_rand.bin")
