#!/usr/bin/env python3
"""gen_state_files.py: golden state files for tests/test_io.c.

Run from the repository root:  python3 tests/gen/gen_state_files.py
Needs torch, numpy, safetensors and gguf (pip install safetensors gguf).
Deterministic: every value is a formula of its index, no randomness.

tests/goldens/state_torch.safetensors
  written by safetensors.torch.save_file: the tensors of TENSORS below (every
  safetensors dtype torch has, a 0-d and an empty tensor) with metadata
  {"format": "pt"}. tg loads it, saves the same tensors with tg_safetensors_save,
  and the test compares the two files byte for byte.
tests/goldens/state_meta.safetensors
  one float32 tensor named 'a"b' = [0, 1, 2] with metadata {"k\\": "tab\tnl\n\"é\x1f\x7f/"}:
  tg must escape names and metadata exactly as the Python package does.
tests/goldens/state_torch_expected.bin
  for each entry of TENSORS in that order: its values as float64 (C order).
tests/goldens/state_npy_<name>.npy
  numpy.save of NPY below (one per dtype, plus v2: a version 2.0 header,
  fortran: fortran_order True, which tg must refuse).
tests/goldens/state_npy_expected.bin
  for each entry of NPY in order: its values as float64.
tests/goldens/state_small.gguf
  gguf.GGUFWriter: metadata of every GGUF value type (u8 i8 u16 i16 u32 i32
  f32 bool string array-of-int array-of-string u64 i64 f64, nested arrays),
  general.alignment 64, and tensors GGUF below (F32, F16, BF16).
tests/goldens/state_gguf_expected.bin
  for each entry of GGUF in order: its values as float64, in the numpy
  array's (= tg's) C order.
"""
import os
import struct

import gguf
import numpy as np
import torch
from safetensors.torch import save_file

OUT = "tests/goldens"


def values(n, kind):
    i = np.arange(n, dtype=np.float64)
    if kind == "bool":
        return (i % 3 == 1).astype(np.float64)
    if kind == "u":
        return (i * 37) % 200
    if kind == "i":
        return ((i * 37) % 200) - 100
    # floats exactly representable in every float type (fp8 e5m2 included)
    return (i % 8 - 4) * 0.25 + (i // 8)


# name, torch dtype, shape, kind
TENSORS = [
    ("w.f32", torch.float32, (2, 3), "f"),
    ("w.f64", torch.float64, (3,), "f"),
    ("w.f16", torch.float16, (2, 2), "f"),
    ("w.bf16", torch.bfloat16, (4,), "f"),
    ("i.i64", torch.int64, (2,), "i"),
    ("i.i32", torch.int32, (), "i"),
    ("i.i16", torch.int16, (3,), "i"),
    ("i.i8", torch.int8, (2, 2), "i"),
    ("u.u8", torch.uint8, (5,), "u"),
    ("u.u16", torch.uint16, (3,), "u"),
    ("u.u32", torch.uint32, (2,), "u"),
    ("u.u64", torch.uint64, (2,), "u"),
    ("b.bool", torch.bool, (3,), "bool"),
    ("f8.e4m3", torch.float8_e4m3fn, (4,), "f"),
    ("f8.e5m2", torch.float8_e5m2, (4,), "f"),
    ("empty", torch.float32, (0, 3), "f"),
    ("scalar.f32", torch.float32, (), "f"),
]

NPY = [
    ("f32", np.float32, (2, 3), "f"),
    ("f64", np.float64, (), "f"),
    ("f16", np.float16, (4,), "f"),
    ("i8", np.int8, (2, 2), "i"),
    ("i16", np.int16, (3,), "i"),
    ("i32", np.int32, (2, 1, 2), "i"),
    ("i64", np.int64, (3,), "i"),
    ("u8", np.uint8, (5,), "u"),
    ("u16", np.uint16, (2,), "u"),
    ("u32", np.uint32, (2,), "u"),
    ("u64", np.uint64, (2,), "u"),
    ("bool", np.bool_, (3,), "bool"),
    ("empty", np.float32, (0, 2), "f"),
    ("v2", np.float32, (3,), "f"),
    ("fortran", np.float32, (2, 3), "f"),
]

# name, ggml type, numpy shape (tg's shape; ggml's ne is reversed)
GGUF = [
    ("tok.weight", "F32", (3, 4)),
    ("blk.0.attn", "F16", (2, 5)),
    ("blk.0.bf", "BF16", (6,)),
    ("out.vec", "F32", (1,)),
]


def main():
    os.makedirs(OUT, exist_ok=True)
    # ---- safetensors
    ts, exp = {}, []
    for name, dt, shape, kind in TENSORS:
        n = int(np.prod(shape)) if shape else 1
        v = values(n, kind).reshape(shape)
        t = torch.tensor(v, dtype=torch.float64).to(dt) if kind != "bool" else torch.tensor(v != 0)
        ts[name] = t
        exp.append(t.to(torch.float64).flatten().numpy())
    save_file(ts, f"{OUT}/state_torch.safetensors", metadata={"format": "pt"})
    np.concatenate(exp).astype("<f8").tofile(f"{OUT}/state_torch_expected.bin")
    # string escaping in the header (serde_json's): quotes, backslashes,
    # control characters, UTF-8
    save_file({"a\"b": torch.arange(3, dtype=torch.float32)}, f"{OUT}/state_meta.safetensors",
              metadata={"k\\": "tab\tnl\n\"é\x1f\x7f/"})

    # ---- npy
    exp = []
    for name, dt, shape, kind in NPY:
        n = int(np.prod(shape)) if shape else 1
        a = values(n, kind).reshape(shape).astype(dt)
        path = f"{OUT}/state_npy_{name}.npy"
        if name == "v2":
            with open(path, "wb") as f:
                np.lib.format.write_array(f, a, version=(2, 0))
        elif name == "fortran":
            np.save(path, np.asfortranarray(a))
        else:
            np.save(path, a)
        exp.append(a.astype(np.float64).flatten())
    np.concatenate(exp).astype("<f8").tofile(f"{OUT}/state_npy_expected.bin")

    # ---- gguf
    w = gguf.GGUFWriter(f"{OUT}/state_small.gguf", "tgtest")
    w.add_custom_alignment(64)
    w.add_uint8("t.u8", 200)
    w.add_int8("t.i8", -5)
    w.add_uint16("t.u16", 60000)
    w.add_int16("t.i16", -300)
    w.add_uint32("t.u32", 4000000000)
    w.add_int32("t.i32", -70000)
    w.add_float32("t.f32", 1.5)
    w.add_bool("t.bool", True)
    w.add_string("t.str", "héllo")
    w.add_array("t.arr_i", [1, 2, 3])
    w.add_array("t.arr_s", ["a", "bc", ""])
    w.add_array("t.arr_nested", [[1, 2], [3]])
    w.add_array("t.arr_empty", [])
    w.add_uint64("t.u64", 2**40)
    w.add_int64("t.i64", -(2**40))
    w.add_float64("t.f64", 0.125)
    exp = []
    for name, ty, shape in GGUF:
        n = int(np.prod(shape))
        v = values(n, "f").reshape(shape)
        if ty == "F32":
            w.add_tensor(name, v.astype(np.float32))
        elif ty == "F16":
            w.add_tensor(name, v.astype(np.float16))
        else:
            bits = (v.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)  # exact: values fit bf16
            w.add_tensor(name, bits.view(np.uint8).reshape(shape[:-1] + (shape[-1] * 2,)),
                         raw_dtype=gguf.GGMLQuantizationType.BF16)
        exp.append(v.flatten())
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    np.concatenate(exp).astype("<f8").tofile(f"{OUT}/state_gguf_expected.bin")

    # a check of the reverse direction, run here (CI never runs Python): the
    # safetensors package reads back what it wrote; tg's own save is compared
    # byte for byte with state_torch.safetensors in tests/test_io.c.
    from safetensors.torch import load_file
    back = load_file(f"{OUT}/state_torch.safetensors")
    for name, t in ts.items():
        assert back[name].dtype == t.dtype and torch.equal(back[name].to(torch.float64), t.to(torch.float64)), name
    r = gguf.GGUFReader(f"{OUT}/state_small.gguf")
    assert [t.name for t in r.tensors] == [g[0] for g in GGUF]
    for f in sorted(os.listdir(OUT)):
        if f.startswith("state_"):
            print(f"{OUT}/{f}: {os.path.getsize(f'{OUT}/{f}')} bytes")


if __name__ == "__main__":
    main()
