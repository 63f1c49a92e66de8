#!/usr/bin/env python3
"""gen_gguf_writer.py: GGUF goldens written by gguf-py for tests/test_gguf_writer.c.

Run from the repository root:  python3 tests/gen/gen_gguf_writer.py
Needs numpy and gguf (pip install gguf; made with gguf 0.19). Deterministic:
every value is a formula of its index, so the C test can build the same
content and compare the files byte for byte.

tests/goldens/gguf_writer_all.gguf
  GGUFWriter(arch "tgtest"), general.alignment 64, then one key of every
  value type (u8 i8 u16 i16 u32 i32 f32 bool string u64 i64 f64), arrays of
  u8, i32, f32, bool and strings (with an empty and a UTF-8 string), an
  array of i32 arrays, and tensors:
    t.f32   F32  shape (3, 5)      value i*0.25 - 3
    t.f16   F16  shape (7,)        value (i - 3) / 4
    t.i32   I32  shape (2, 1, 3)   value 7*i - 11
    t.bf16  BF16 shape (2, 4)      raw bits 0x3f80 + 3*i
    t.q8_0  Q8_0 ne (32, 2)        raw bytes (37*i + 11) mod 256
tests/goldens/gguf_writer_state.gguf
  what tg_gguf_save writes for a small state dict: GGUFWriter(arch
  "tgtest"), general.name "state", tensors w (F32, (2, 3), i - 2.5),
  b (F16, (3,), i / 8), n (I32, (4,), i * 1000 - 1).
"""
import numpy as np
import gguf
from gguf import GGUFValueType as VT

OUT = "tests/goldens"


def finish(w):
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def gen_all():
    w = gguf.GGUFWriter(f"{OUT}/gguf_writer_all.gguf", "tgtest")
    w.add_custom_alignment(64)
    w.add_uint8("v.u8", 200)
    w.add_int8("v.i8", -100)
    w.add_uint16("v.u16", 60000)
    w.add_int16("v.i16", -30000)
    w.add_uint32("v.u32", 4000000000)
    w.add_int32("v.i32", -2000000000)
    w.add_float32("v.f32", 1.5)
    w.add_bool("v.bool", True)
    w.add_string("v.str", "hello, GGUF")
    w.add_uint64("v.u64", 2**63 + 5)
    w.add_int64("v.i64", -(2**62) - 3)
    w.add_float64("v.f64", -0.1)
    w.add_key_value("a.u8", [1, 2, 255], VT.ARRAY, sub_type=VT.UINT8)
    w.add_array("a.i32", [-1, 0, 7, 1 << 30])
    w.add_array("a.f32", [0.5, -2.0, 3.25])
    w.add_array("a.bool", [True, False, True])
    w.add_array("a.str", ["<s>", "", "é€", "word"])
    w.add_array("a.nested", [[1, 2], [3, 4, 5]])

    i = np.arange
    w.add_tensor("t.f32", (i(15, dtype=np.float32) * 0.25 - 3).reshape(3, 5))
    w.add_tensor("t.f16", ((i(7) - 3) / 4).astype(np.float16))
    w.add_tensor("t.i32", (i(6, dtype=np.int32) * 7 - 11).reshape(2, 1, 3))
    bf = (0x3F80 + 3 * i(8)).astype(np.uint16).view(np.uint8).reshape(2, 8)
    w.add_tensor("t.bf16", bf, raw_dtype=gguf.GGMLQuantizationType.BF16)
    q8 = ((37 * i(2 * 34) + 11) % 256).astype(np.uint8).reshape(2, 34)
    w.add_tensor("t.q8_0", q8, raw_dtype=gguf.GGMLQuantizationType.Q8_0)
    finish(w)

    r = gguf.GGUFReader(f"{OUT}/gguf_writer_all.gguf")
    assert r.alignment == 64, r.alignment
    assert [t.name for t in r.tensors] == ["t.f32", "t.f16", "t.i32", "t.bf16", "t.q8_0"]
    assert list(r.tensors[4].shape) == [32, 2] and list(r.tensors[3].shape) == [4, 2]


def gen_state():
    w = gguf.GGUFWriter(f"{OUT}/gguf_writer_state.gguf", "tgtest")
    w.add_string("general.name", "state")
    w.add_tensor("w", (np.arange(6, dtype=np.float32) - 2.5).reshape(2, 3))
    w.add_tensor("b", (np.arange(3) / 8).astype(np.float16))
    w.add_tensor("n", np.arange(4, dtype=np.int32) * 1000 - 1)
    finish(w)


if __name__ == "__main__":
    gen_all()
    gen_state()
    print("wrote", f"{OUT}/gguf_writer_all.gguf", f"{OUT}/gguf_writer_state.gguf")
