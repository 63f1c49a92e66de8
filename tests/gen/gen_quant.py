#!/usr/bin/env python3
"""gen_quant.py: a quantized GGUF golden for tests/test_quant.c, written and
decoded by gguf-py (a second reference beside ggml's C output in
../shared/testdata/quants).

Run from the repository root:  python3 tests/gen/gen_quant.py
Needs numpy and gguf (pip install gguf). Deterministic (seeded).

tests/goldens/quant_small.gguf
  gguf.GGUFWriter, tensors QUANT below in order. Types gguf-py can quantize
  are quantized from normal noise with gguf.quants.quantize; the others hold
  random blocks whose fp16 scale fields are overwritten with modest finite
  values (so no inf or NaN appears), stored with raw_dtype.
tests/goldens/quant_small_expected.bin
  for each tensor in order: gguf.quants.dequantize of its bytes, float32, in
  tg's (= numpy's) C order.
"""
import gguf
import numpy as np
from gguf import GGMLQuantizationType as T

OUT = "tests/goldens"

# name, type, tg shape (rows, cols): cols is a multiple of the block size
QUANT = [
    ("f32", T.F32, (2, 8)),
    ("f16", T.F16, (3, 4)),
    ("q8_0", T.Q8_0, (4, 64)),
    ("q4_0", T.Q4_0, (3, 64)),
    ("q4_1", T.Q4_1, (2, 32)),
    ("q5_0", T.Q5_0, (2, 32)),
    ("q5_1", T.Q5_1, (2, 64)),
    ("tq1_0", T.TQ1_0, (1, 256)),
    ("tq2_0", T.TQ2_0, (2, 256)),
    ("mxfp4", T.MXFP4, (2, 64)),
    ("q2_k", T.Q2_K, (2, 256)),
    ("q3_k", T.Q3_K, (2, 256)),
    ("q4_k", T.Q4_K, (3, 256)),
    ("q5_k", T.Q5_K, (2, 256)),
    ("q6_k", T.Q6_K, (3, 256)),
    ("iq4_nl", T.IQ4_NL, (2, 64)),
    ("iq4_xs", T.IQ4_XS, (1, 512)),
    ("iq2_xxs", T.IQ2_XXS, (1, 256)),
    ("iq2_xs", T.IQ2_XS, (1, 256)),
    ("iq2_s", T.IQ2_S, (1, 256)),
    ("iq3_xxs", T.IQ3_XXS, (1, 256)),
    ("iq3_s", T.IQ3_S, (1, 256)),
    ("iq1_s", T.IQ1_S, (1, 256)),
    ("iq1_m", T.IQ1_M, (1, 256)),
]

# byte offsets of the fp16 scale fields in a block (IQ1_M is special)
SCALES = {
    T.Q2_K: [80, 82], T.Q3_K: [108], T.Q4_K: [0, 2], T.Q5_K: [0, 2], T.Q6_K: [208],
    T.IQ4_NL: [0], T.IQ4_XS: [0], T.IQ2_XXS: [0], T.IQ2_XS: [0], T.IQ2_S: [0],
    T.IQ3_XXS: [0], T.IQ3_S: [0], T.IQ1_S: [0],
}
QUANTIZABLE = {T.Q8_0, T.Q4_0, T.Q4_1, T.Q5_0, T.Q5_1, T.TQ1_0, T.TQ2_0, T.MXFP4}


def random_blocks(rng, ty, nblocks):
    bs, bpb = gguf.GGML_QUANT_SIZES[ty]
    b = rng.integers(0, 256, size=(nblocks, bpb), dtype=np.uint8)
    # fp16 scales with exponent field 9..16 (about 2^-6 .. 2), random sign
    scale = lambda: (rng.integers(0, 2) << 15) | (rng.integers(9, 17) << 10) | rng.integers(0, 1024)
    for blk in b:
        if ty == T.IQ1_M:   # the top nibbles of the last four 16-bit words
            h = scale()
            for k in range(4):
                w = int(blk[bpb - 8 + 2 * k]) | int(blk[bpb - 7 + 2 * k]) << 8
                w = (w & 0x0FFF) | (((h >> (4 * k)) & 0xF) << 12)
                blk[bpb - 8 + 2 * k], blk[bpb - 7 + 2 * k] = w & 0xFF, w >> 8
        for off in SCALES.get(ty, []):
            h = scale()
            blk[off], blk[off + 1] = h & 0xFF, h >> 8
    return b


def main():
    rng = np.random.default_rng([20250220, 7])
    w = gguf.GGUFWriter(f"{OUT}/quant_small.gguf", "tgtest")
    exp = []
    for name, ty, shape in QUANT:
        rows, cols = shape
        if ty == T.F32 or ty == T.F16:
            v = rng.standard_normal(shape).astype(np.float32 if ty == T.F32 else np.float16)
            w.add_tensor(name, v)
            exp.append(v.astype(np.float32).flatten())
            continue
        bs, bpb = gguf.GGML_QUANT_SIZES[ty]
        if ty in QUANTIZABLE:
            raw = gguf.quants.quantize(rng.standard_normal(shape).astype(np.float32), ty)
        else:
            raw = random_blocks(rng, ty, rows * cols // bs).reshape(rows, cols // bs * bpb)
        w.add_tensor(name, raw, raw_shape=raw.shape, raw_dtype=ty)
        deq = gguf.quants.dequantize(raw, ty).astype(np.float32)
        assert deq.shape == shape and np.isfinite(deq).all(), name
        exp.append(deq.flatten())
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    np.concatenate(exp).astype("<f4").tofile(f"{OUT}/quant_small_expected.bin")
    r = gguf.GGUFReader(f"{OUT}/quant_small.gguf")
    assert [t.name for t in r.tensors] == [q[0] for q in QUANT]
    print(f"{OUT}/quant_small.gguf: {len(QUANT)} tensors")


if __name__ == "__main__":
    main()
