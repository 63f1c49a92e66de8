"""Goldens for tests/test_sha256.c: SHA-256 digests (Python's hashlib) of
messages of byte i = (31*i + 7) mod 256, at lengths around the 64-byte block
and padding boundaries.

    python3 tests/gen/gen_sha256.py   # writes tests/goldens/sha256_digests.txt
"""
import hashlib, os

LENGTHS = [0, 1, 3, 55, 56, 57, 63, 64, 65, 119, 120, 127, 128, 129, 1000, 4095, 4096, 100003]
out = os.path.join(os.path.dirname(__file__), "..", "goldens", "sha256_digests.txt")
with open(out, "w") as f:
    for n in LENGTHS:
        msg = bytes((31 * i + 7) % 256 for i in range(n))
        f.write(f"{n} {hashlib.sha256(msg).hexdigest()}\n")
