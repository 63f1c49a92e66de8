#!/usr/bin/env python3
"""make_corpus.py: seed corpora for the fuzzers of fuzz/ (see docs/security.md).

    python3 fuzz/make_corpus.py [OUT_DIR]      (default fuzz/corpus)

Writes OUT_DIR/<harness>/<seed> for every harness fuzz/fuzz_<harness>.c,
from the real files of ../shared/testdata (vocabularies, the stories260K
model, quant blocks, chat templates and conversations) and tests/goldens
(small GGUF, safetensors and .npy files), plus small files made here that
hold what real files rarely do (every GGUF value type, nested arrays,
quantized tensors, each .npy version). Large real files are cut down
(vocabularies to their first tokens and the merges among them) so that each
execution stays fast. Standard library only; missing test data is skipped
with a note. The seeds of one harness follow its input format (the first
bytes that pick a vocabulary, a template or flags).
"""
import glob
import hashlib
import json
import os
import struct
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TESTDATA = os.environ.get("TG_FUZZ_TESTDATA") or os.path.join(ROOT, "..", "shared", "testdata")
GOLDENS = os.path.join(ROOT, "tests", "goldens")
OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "fuzz", "corpus")


def put(harness, data, name=None):
    d = os.path.join(OUT, harness)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    name = name or hashlib.sha1(data).hexdigest()[:16]
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def td(*parts):
    p = os.path.join(TESTDATA, *parts)
    if not os.path.exists(p):
        print(f"make_corpus: {p} missing, skipped", file=sys.stderr)
        return None
    return p


# ---- GGUF: a reader and writer of the container (gguf_file.h has the layout)

SCALAR = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}
STRING, ARRAY = 8, 9


def gguf_read(path):
    b = open(path, "rb").read()
    pos = 0

    def u(fmt):
        nonlocal pos
        v = struct.unpack_from("<" + fmt, b, pos)[0]
        pos += struct.calcsize(fmt)
        return v

    def s():
        nonlocal pos
        n = u("Q")
        v = b[pos:pos + n]
        pos += n
        return v

    def value(t):
        if t == STRING:
            return s()
        if t == ARRAY:
            et, n = u("I"), u("Q")
            return (et, [value(et) for _ in range(n)])
        return u(SCALAR[t])

    u("I"), u("I")
    nt, nkv = u("Q"), u("Q")
    kv = []
    for _ in range(nkv):
        k = s().decode()
        t = u("I")
        kv.append((k, t, value(t)))
    return kv, nt


def gguf_value(t, v):
    if t == STRING:
        v = v if isinstance(v, bytes) else v.encode()
        return struct.pack("<Q", len(v)) + v
    if t == ARRAY:
        et, items = v
        return struct.pack("<IQ", et, len(items)) + b"".join(gguf_value(et, x) for x in items)
    return struct.pack("<" + SCALAR[t], v)


def gguf_write(kv, tensors=(), version=3, align=32):
    """kv: (key, type, value); tensors: (name, ne, ggml_type, data bytes)."""
    out = struct.pack("<IIQQ", 0x46554747, version, len(tensors), len(kv))
    for k, t, v in kv:
        out += gguf_value(STRING, k) + struct.pack("<I", t) + gguf_value(t, v)
    off, blobs = 0, b""
    for name, ne, gt, data in tensors:
        out += gguf_value(STRING, name) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<Q", n) for n in ne)
        out += struct.pack("<IQ", gt, off)
        pad = (-len(data)) % align
        blobs += data + b"\0" * pad
        off += len(data) + pad
    out += b"\0" * ((-len(out)) % align)
    return out + blobs


# ggml types: id, block size, bytes per block (ggml_types.c)
QTYPES = [("F32", 0, 1, 4), ("F16", 1, 1, 2), ("Q4_0", 2, 32, 18), ("Q4_1", 3, 32, 20), ("Q5_0", 6, 32, 22),
          ("Q5_1", 7, 32, 24), ("Q8_0", 8, 32, 34), ("Q2_K", 10, 256, 84), ("Q3_K", 11, 256, 110),
          ("Q4_K", 12, 256, 144), ("Q5_K", 13, 256, 176), ("Q6_K", 14, 256, 210), ("IQ2_XXS", 16, 256, 66),
          ("IQ2_XS", 17, 256, 74), ("IQ3_XXS", 18, 256, 98), ("IQ1_S", 19, 256, 50), ("IQ4_NL", 20, 32, 18),
          ("IQ3_S", 21, 256, 110), ("IQ2_S", 22, 256, 82), ("IQ4_XS", 23, 256, 136), ("IQ1_M", 29, 256, 56),
          ("BF16", 30, 1, 2), ("TQ1_0", 34, 256, 54), ("TQ2_0", 35, 256, 66), ("MXFP4", 39, 32, 17)]


def blocks(name, nbytes):
    p = td("quants", f"{name}.blocks.bin")
    data = open(p, "rb").read() if p else b""
    data = (data * (nbytes // max(len(data), 1) + 1))[:nbytes] if data else bytes(range(256)) * (nbytes // 256 + 1)
    return data[:nbytes]


def seeds_gguf():
    # every value type, string and nested arrays, alignment
    kv = [("general.architecture", STRING, b"llama"), ("general.alignment", 4, 64)]
    for t, v in [(0, 200), (1, -5), (2, 60000), (3, -30000), (4, 4000000000), (5, -2000000000), (6, 1.5), (7, True),
                 (10, 2 ** 63), (11, -2 ** 62), (12, -0.25)]:
        kv.append((f"test.scalar.{t}", t, v))
    kv += [("test.f32.nan", 6, float("nan")), ("test.f64.inf", 12, float("inf")), ("test.f64.huge", 12, 1e300),
           ("test.arr.i32", ARRAY, (5, [1, -2, 3])), ("test.arr.str", ARRAY, (STRING, [b"a", b"", b"\xe2\x96\x81x"])),
           ("test.arr.nested", ARRAY, (ARRAY, [(4, [1, 2]), (STRING, [b"x"]), (ARRAY, [(7, [True])])])),
           ("test.arr.empty", ARRAY, (12, []))]
    put("gguf", gguf_write(kv), "types")
    put("gguf", gguf_write([], version=2), "empty_v2")
    put("gguf", gguf_write([("general.alignment", 4, 1)], [("t", [3], 0, struct.pack("<3f", 1, 2, 3))], align=1), "align1")
    # one small tensor of every type tg loads
    tensors = []
    for name, gt, bs, bpb in QTYPES:
        n = 2 * bs if bs > 1 else 8
        tensors.append((f"w.{name}", [n, 1], gt, blocks(name, n // bs * bpb)))
    for name, gt, size in [("I8", 24, 1), ("I16", 25, 2), ("I32", 26, 4), ("I64", 27, 8), ("F64", 28, 8)]:
        tensors.append((f"w.{name}", [4], gt, bytes(range(4 * size))))
    put("gguf", gguf_write([("general.architecture", STRING, b"none")], tensors), "tensors_all_types")
    # real files: stories260K's metadata (an SPM tokenizer, llama hyperparameters) without and with tensors
    p = td("models", "stories260K-F16.gguf")
    if p:
        kv, _ = gguf_read(p)
        put("gguf", gguf_write(kv), "stories260k_meta")
        put("gguf", open(p, "rb").read(), "stories260k_f16")
    # vocabularies cut to their first tokens (and the merges among them), each pre-tokenizer
    for v in ["gpt-2", "llama-spm", "phi-3", "bert-bge", "deepseek-llm", "falcon", "starcoder", "refact", "mpt",
              "gpt-neox", "baichuan", "deepseek-coder"]:
        p = td("vocab", f"ggml-vocab-{v}.gguf")
        if not p:
            continue
        kv, _ = gguf_read(p)
        put("gguf", gguf_write(shrink_vocab(kv, 600)), f"vocab_{v}")
    for name in ["gguf_writer_all.gguf", "gguf_writer_state.gguf", "quant_small.gguf", "state_small.gguf",
                 "llm_llama.gguf", "llm_qwen3moe.gguf", "llm_deepseek2.gguf"]:
        p = os.path.join(GOLDENS, name)
        if os.path.exists(p):
            put("gguf", open(p, "rb").read(), name)


def seeds_gguf_load():
    """The same files as fuzz_gguf, minus the vocabularies (no tensors)."""
    d = os.path.join(OUT, "gguf")
    for name in sorted(os.listdir(d)) if os.path.isdir(d) else []:
        if not name.startswith("vocab_"):
            put("gguf_load", open(os.path.join(d, name), "rb").read(), name)


def shrink_vocab(kv, n):
    d = {k: (t, v) for k, t, v in kv}
    toks = d["tokenizer.ggml.tokens"][1][1]
    keep = list(toks[:n])
    # keep the special tokens (often at the end) by moving them into range
    ids = {}
    for k, (t, v) in d.items():
        if k.startswith("tokenizer.ggml.") and k.endswith("_token_id") and isinstance(v, int) and v >= n:
            ids[k] = len(keep) - 1 - len(ids)
            keep[ids[k]] = toks[v]
    kept = set(keep)
    out = []
    for k, t, v in kv:
        if k in ("tokenizer.ggml.tokens", "tokenizer.ggml.scores", "tokenizer.ggml.token_type"):
            v = (v[0], (keep if k.endswith("tokens") else v[1][:n]))
        elif k == "tokenizer.ggml.merges":
            ms = [m for m in v[1] if b" " in m and all(x in kept for x in m.split(b" ", 1)) and m.replace(b" ", b"", 1) in kept]
            v = (STRING, ms)
        elif k in ids:
            v = ids[k]
        elif k == "tokenizer.chat_template":
            continue
        out.append((k, t, v))
    return out


# ---- safetensors and .npy

def safetensors(tensors, meta=None):
    hdr, off, data = {}, 0, b""
    if meta:
        hdr["__metadata__"] = meta
    for name, dt, shape, raw in tensors:
        hdr[name] = {"dtype": dt, "shape": shape, "data_offsets": [off, off + len(raw)]}
        off += len(raw)
        data += raw
    h = json.dumps(hdr, separators=(",", ":")).encode()
    h += b" " * ((-len(h)) % 8)
    return struct.pack("<Q", len(h)) + h + data


def seeds_safetensors():
    put("safetensors", safetensors([("a", "F32", [2, 2], struct.pack("<4f", 1, 2, 3, 4)),
                                    ("b", "I64", [1], struct.pack("<q", -1)),
                                    ("c", "BF16", [3], b"\x80\x3f" * 3),
                                    ("d", "F8_E4M3", [2, 1], b"\x38\x7f"),
                                    ("e", "BOOL", [0], b"")], {"format": "pt"}), "mixed")
    put("safetensors", safetensors([]), "empty")
    for dt, size in [("U8", 1), ("I8", 1), ("U16", 2), ("I16", 2), ("U32", 4), ("I32", 4), ("U64", 8), ("F16", 2),
                     ("F64", 8), ("F8_E5M2", 1)]:
        put("safetensors", safetensors([("x", dt, [2, 3], bytes(range(6 * size)))]), f"dtype_{dt}")
    for name in ["state_meta.safetensors", "state_torch.safetensors"]:
        p = os.path.join(GOLDENS, name)
        if os.path.exists(p):
            put("safetensors", open(p, "rb").read(), name)


def npy(descr, shape, raw, version=1, fortran=False):
    h = "{'descr': '%s', 'fortran_order': %s, 'shape': %s, }" % (descr, fortran, "(%s)" % "".join(f"{s}," for s in shape))
    lenfmt = "<H" if version == 1 else "<I"
    pre = 10 if version == 1 else 12
    h = h.encode() + b" " * ((-(pre + len(h) + 1)) % 64) + b"\n"
    return b"\x93NUMPY" + bytes([version, 0]) + struct.pack(lenfmt, len(h)) + h + raw


def seeds_npy():
    for descr, size in [("<f4", 4), ("<f2", 2), ("<f8", 8), ("|b1", 1), ("|i1", 1), ("|u1", 1), ("<i2", 2),
                        ("<u2", 2), ("<i4", 4), ("<u4", 4), ("<i8", 8), ("<u8", 8)]:
        put("npy", npy(descr, [2, 3], bytes(range(6 * size))), f"{descr[1:]}")
    put("npy", npy("<f4", [], struct.pack("<f", 1)), "scalar")
    put("npy", npy("<f4", [0, 5], b""), "zero")
    put("npy", npy("<i4", [3], struct.pack("<3i", 1, 2, 3), version=2), "v2")
    put("npy", npy("<i4", [3], struct.pack("<3i", 1, 2, 3), version=3), "v3")
    put("npy", npy("<f4", [2, 2], struct.pack("<4f", 1, 2, 3, 4), fortran=True), "fortran")
    for p in glob.glob(os.path.join(GOLDENS, "state_npy_*.npy")):
        put("npy", open(p, "rb").read(), os.path.basename(p))


# ---- dequantize: type index (fuzz_dequant.c's order: ascending ggml ids), rows, blocks

def seeds_dequant():
    for i, (name, gt, bs, bpb) in enumerate(sorted(QTYPES, key=lambda q: q[1])):
        n = 4 * 2 * bs
        put("dequant", bytes([i, 3]) + blocks(name, n // bs * bpb), f"{name}")


# ---- tokenizer: vocabulary index and flags, then text (fuzz_tokenizer.c)

VOCABS = ["llama-spm", "phi-3", "baichuan", "gpt-2", "falcon", "starcoder", "mpt", "refact", "deepseek-coder",
          "deepseek-llm", "gpt-neox", "bert-bge"]


def seeds_tokenizer():
    pool = []   # llama.cpp's test strings, for the vocabularies that have none
    for p in sorted(glob.glob(os.path.join(TESTDATA, "vocab", "*.inp"))):
        pool += [t for t in open(p, "rb").read().split(b"\n__ggml_vocab_test__\n") if t]
    for i, v in enumerate(VOCABS):
        p = os.path.join(TESTDATA, "vocab", f"ggml-vocab-{v}.gguf.inp")
        texts = open(p, "rb").read().split(b"\n__ggml_vocab_test__\n") if os.path.exists(p) else pool[i::len(VOCABS)]
        texts = [t for t in texts if t][:12] + [b"<|im_start|>user\nHi<|im_end|><s></s>[CLS]"]
        for j, t in enumerate(texts):
            flags = j % 8   # add_special, parse_special, special
            put("tokenizer", bytes([i + len(VOCABS) * flags]) + t, f"{v}_{j}")


# ---- Jinja templates (fuzz_jinja.c: options byte, then the template)

def templates():
    p = td("chat", "templates")
    return sorted(glob.glob(os.path.join(p, "*.jinja"))) if p else []


def seeds_jinja():
    p = td("chat", "syntax_cases.jsonl")
    for i, line in enumerate(open(p) if p else []):
        c = json.loads(line)
        o = c.get("options", {})
        flags = (o.get("trim_blocks") and 1 or 0) | (o.get("lstrip_blocks") and 2 or 0) | (o.get("keep_trailing_newline") and 4 or 0)
        put("jinja", bytes([flags]) + c["template"].encode(), f"syntax_{i:03d}")
    for t in templates():
        put("jinja", b"\x03" + open(t, "rb").read(), os.path.basename(t))
    extra = ["{{ (-9223372036854775807 - 1) // -1 }}", "{{ 7 % -1 }}", "{{ range(0, 10, 3) | list }}",
             "{% macro f(n) %}{{ f(n - 1) }}{% endmacro %}{{ f(3) }}", "{{ messages | tojson(indent=2) }}",
             "{% for m in messages %}{{ m.role | upper }}{% if loop.last %}!{% endif %}{% endfor %}",
             "{{ 'x' * 3 }}{{ n + 1 }}{{ m - 1 }}{{ f | int }}{{ s[1:] }}{{ l | sort }}{{ d | items | list }}",
             "{% set ns = namespace(a=1) %}{% set ns.a = ns.a + 1 %}{{ ns.a }}{{ raise_exception('x') }}",
             "{{ strftime_now('%Y-%m-%d') }}{{ '%5d|%s' % (3, 'a') }}"]
    for i, t in enumerate(extra):
        put("jinja", b"\x03" + t.encode(), f"extra_{i}")


# ---- chat: template index (sorted names), flags, then JSON parts or bytes (fuzz_chat.c)

def seeds_chat():
    convs = []
    p = td("chat", "cases.jsonl")
    for line in open(p) if p else []:
        c = json.loads(line)
        if "messages" in c:
            convs.append((c["messages"], c.get("tools"), c.get("extra_context") or c.get("extra")))
    seen, uniq = set(), []
    for c in convs:
        k = json.dumps(c, sort_keys=True)
        if k not in seen:
            seen.add(k)
            uniq.append(c)
    n = len(templates())
    for i in range(max(n, 1) + 4):   # the presets follow the templates
        for j, (msgs, tools, extra) in enumerate(uniq[i % max(len(uniq), 1):][:2]):
            parts = [json.dumps(msgs).encode(), json.dumps(tools).encode() if tools else b"",
                     json.dumps(extra).encode() if extra else b""]
            put("chat", bytes([i, 1 | (2 if j == 0 else 0)]) + b"\0".join(parts), f"t{i:02d}_{j}")
        put("chat", bytes([i, 0]) + bytes(range(1, 200)), f"t{i:02d}_bytes")


# ---- request bodies (fuzz_request.c: endpoint byte, then the body)

def seeds_request():
    chat = [
        {"model": "m", "messages": [{"role": "user", "content": "Hello"}], "max_tokens": 16},
        {"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": [{"type": "text", "text": "Hi"}]},
                      {"role": "assistant", "content": None, "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
                      {"role": "tool", "content": "1", "tool_call_id": "c"}, {"role": "assistant", "content": "Pre"}],
         "temperature": 0.5, "top_p": 0.9, "top_k": 40, "min_p": 0.05, "seed": 7, "stop": ["\n", "END"], "n": 1,
         "stream": True, "stream_options": {"include_usage": True}, "max_completion_tokens": 8,
         "frequency_penalty": 0, "presence_penalty": 0, "user": "u", "logprobs": False, "response_format": {"type": "text"}},
        {"messages": [{"role": "user", "content": "json"}], "response_format": {"type": "json_schema", "json_schema": {
            "name": "p", "strict": True, "schema": {"type": "object", "properties": {"n": {"type": "integer", "minimum": 0}},
                                                    "required": ["n"], "additionalProperties": False}}}},
        {"messages": [{"role": "user", "content": "g"}], "grammar": "root ::= (\"yes\" | \"no\") [.!]?"},
        {"messages": [{"role": "developer", "content": "x", "name": "n"}], "stop": "s", "tools": [], "tool_choice": "auto",
         "parallel_tool_calls": True, "metadata": {"a": "b"}, "store": False, "service_tier": "auto"},
        {"messages": [{"role": "user", "content": "x"}, {"role": "assistant", "content": None, "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "a", "name": "f", "content": "1"}],
         "tools": [{"type": "function", "function": {"name": "f", "description": "d", "parameters": {"type": "object"}}}],
         "tool_choice": {"type": "function", "function": {"name": "f"}}, "parallel_tool_calls": False,
         "reasoning_format": "deepseek", "chat_template_kwargs": {"enable_thinking": False},
         "add_generation_prompt": True, "continue_final_message": False},
    ]
    text = [
        {"model": "m", "prompt": "Once upon a time", "max_tokens": 8, "echo": False},
        {"prompt": [1, 403, 407], "temperature": 0, "stream": True, "suffix": None, "best_of": 1, "logit_bias": {}},
        {"prompt": ["one string"], "stop": None, "seed": -3},
    ]
    for i, b in enumerate(chat):
        put("request", b"\x01" + json.dumps(b).encode(), f"chat_{i}")
    for i, b in enumerate(text):
        put("request", b"\x00" + json.dumps(b).encode(), f"text_{i}")
    for i, b in enumerate(['{"prompt":"a"}xyz', '{"prompt":"a","prompt":"b"}', '[]', '{"messages":[{"role":"user"}]}',
                           '{"prompt": "a", "max_tokens": 1e400}', '{"prompt": "\\ud800"}']):
        put("request", bytes([i & 1]) + b.encode(), f"bad_{i}")


# ---- model replies (fuzz_chat_msg.c: a flags byte, then the text)

def seeds_chat_msg():
    call = '{"name": "f", "arguments": {"s": "x", "n": 1}}'
    replies = [
        (0, 4, f"Sure.\n<tool_call>\n{call}\n</tool_call>\n<tool_call>{call}</tool_call>"),
        (0, 4, f"<function=f>{{\"n\": 1}}</function> ```json\n{call}\n``` <tools>{call}</tools>"),
        (1, 4, "<tool_call>\n<function=f>\n<parameter=s>\n1\n</parameter>\n<parameter=n>\n2\n</parameter>\n</function>\n</tool_call>"),
        (2, 4, '{"name": "f", "parameters": {"n": 1}}'),
        (2, 4, '<|python_tag|>brave_search.call(query="a", n=2)'),
        (3, 4, '[TOOL_CALLS][{"name": "f", "arguments": {"n": 1}, "id": "abc123def"}][TOOL_CALLS]f[ARGS]{"s": "y"}'),
        (0, 0, "<think>\nhmm\n</think>\n\nHello"),
        (0, 32, "hmm</think>Hello <tool_call>{bad</tool_call>"),
        (0, 4 | 8, "[THINK]x[/THINK]<|START_THINKING|>y<|END_THINKING|><seed:think>"),
    ]
    for i, (fmt, flags, text) in enumerate(replies):
        put("chat_msg", bytes([fmt | flags]) + text.encode(), f"reply_{i}")


# ---- grammars (fuzz_gbnf.c: GBNF, NUL, text) and schemas (fuzz_json_schema.c)

def seeds_grammar():
    gbnf = [
        ('root ::= "a" [b-d]+ x? | "{" ("x" | "y"){2,3} "}"\nx ::= "\\u00e9" [^a]\n', "abbd\u00e9z"),
        ('root ::= p\np ::= "(" p* ")"  # balanced\n', "(()(()))"),
        ('root ::= [^"\\\\\\x00-\\x1F]* | .{1,3} | "\\U0001F600"\n', "\U0001F600"),
        ('root ::= e "x" e\ne ::= "" | "e"\n', "exe"),
    ]
    for i, (g, t) in enumerate(gbnf):
        put("gbnf", g.encode() + b"\0" + t.encode(), f"gbnf_{i}")
    schemas = [{"type": "object"}, {}]
    path = os.path.join(GOLDENS, "grammar_schemas.json")
    if os.path.exists(path):
        with open(path) as f:
            schemas += [o["schema"] for o in json.load(f)[:40]]
    schemas.append({"$defs": {"n": {"type": "object", "properties": {"v": {"type": "integer"}, "k": {"type": "array", "items": {"$ref": "#/$defs/n"}}},
                                      "required": ["v"]}}, "$ref": "#/$defs/n"})
    schemas.append({"type": "string", "format": "date-time"})
    for i, s in enumerate(schemas):
        put("json_schema", json.dumps(s), f"schema_{i}")
        if i < 10:
            put("gbnf", b"root ::= value\nvalue ::= object | array | \"null\"\nobject ::= \"{\" \"}\"\narray ::= \"[\" value? \"]\"\n\0" + json.dumps(s).encode()[:64], f"text_{i}")


def main():
    for f in [seeds_gguf, seeds_gguf_load, seeds_safetensors, seeds_npy, seeds_dequant, seeds_tokenizer, seeds_jinja, seeds_chat, seeds_request,
              seeds_grammar, seeds_chat_msg]:
        f()
    for h in sorted(os.listdir(OUT)):
        print(f"make_corpus: {h}: {len(os.listdir(os.path.join(OUT, h)))} seeds")


if __name__ == "__main__":
    main()
