"""llama.cpp's tokenize / detokenize / token_to_piece on small vocab-only
GGUFs of the tokenizer models t5 (UGM: unigram, Viterbi), rwkv (greedy
longest match over byte strings) and plamo2 (its own suffix-table Viterbi),
for tests/test_tokenizer_models.c.

The vocabularies are learned on a corpus this script makes (seeded, so the
same every run): sentences of made-up words, numbers, CJK and a few
accented words.

  tok_ugm        t5 as llama.cpp's converter writes a T5 file: a
                 SentencePiece unigram model trained here with the
                 sentencepiece package (scores are its log probabilities),
                 <pad> </s> <unk> first, user-defined <extra_id_N>, two
                 unused pieces (one the matcher can take), add_space_prefix
                 and remove_extra_whitespaces true, and a precompiled_charsmap
                 that sentencepiece builds from RULES below (fullwidth
                 letters, ligatures, tab and no-break space to space)
  tok_ugm_raw    t5 without a charsmap (sentencepiece's identity
                 normalizer), byte-fallback pieces <0xXX> (type byte),
                 add_space_prefix and remove_extra_whitespaces false,
                 add_eos_token false
  tok_rwkv       rwkv as the converter writes RWKV World: <s> (control),
                 the 256 single bytes, byte strings merged by a toy BPE on
                 the corpus's bytes (some cut UTF-8 sequences), [PADn]
                 unused, every text in Python's bytes-repr escaped form;
                 bos = eos = 0, eot the token of "\\n\\n"
  tok_plamo2     plamo2 as the converter writes PLaMo 2: <|plamo:unk|>
                 (unknown), <|plamo:bos|> <|plamo:eos|> <|plamo:pad|>
                 <|plamo:op|> (control, eot 4), the byte tokens <0x00>..<0xFF>,
                 then tok_ugm's unigram pieces with "\u2581" as a real space and
                 their scores, add_space_prefix false

For each: tests/goldens/<name>.gguf and <name>.txt in the format of
gen_tok_gemma4.py (its docstring).

llama.cpp is the one the llama-cpp-python sdist carries (0.3.36), built with
BUILD_SHARED_LIBS=ON and driven through the sdist's ctypes bindings, loading
each file with vocab_only. Run from the repo:

    LLAMA_CPP_PY=/work/llama/llama_cpp_python-0.3.36 \\
    LLAMA_CPP_LIB_PATH=/work/llama/llama_cpp_python-0.3.36/vendor/llama.cpp/build/bin \\
    python3 tests/gen/gen_tok_models.py

(gguf and sentencepiece from PyPI.)
"""
import ctypes
import io
import os
import random
import sys
import tempfile

import gguf
import sentencepiece as spm

from bpe_train import train_bpe
from llamacpp_bindings import ll, init, tokenize, detokenize

OUT = os.path.join(os.path.dirname(__file__), "..", "goldens")
SP = "\u2581"

# sentencepiece normalization rules (source code points -> target, hex)
RULES = [("FF21", "41"), ("FF22", "42"), ("FF43", "63"), ("FF11", "31"), ("FB01", "66 69"), ("FB02", "66 6C"),
         ("9", "20"), ("A0", "20"), ("2160", "49"), ("2161", "49 49"), ("3000", "20"), ("41 42 43", "61 62 63")]


def make_corpus():
    r = random.Random(1234)
    syl = ("ka ki ku ke ko ta to ri ra ne no an en in on un th er es al le de re st nd ou ing ed "
           "the qu br ow ch sh ph ly").split()
    words = ["".join(r.choice(syl) for _ in range(r.randint(1, 3))) for _ in range(2000)]
    words += ["hello", "world", "test", "café", "naïve", "résumé", "über", "straße", "fine", "file"]
    cjk = "中文日本語テキスト中国文字漢字ひらがなカタカナ한국어"
    lines = []
    for _ in range(4000):
        ws = [r.choice(words) for _ in range(r.randint(3, 12))]
        if r.random() < 0.2:
            ws.insert(r.randrange(len(ws)), "".join(r.choice(cjk) for _ in range(r.randint(1, 4))))
        if r.random() < 0.3:
            ws.append(str(r.randint(0, 99999)))
        lines.append(" ".join(ws) + r.choice([".", ",", "!", "?", "", ":"]))
    return lines


def train_unigram(lines, rules, byte_fallback):
    """A sentencepiece unigram model (serialized) over lines; rules None:
    the identity normalizer (no charsmap)."""
    m = io.BytesIO()
    with tempfile.NamedTemporaryFile("w", suffix=".tsv", delete=False) as f:
        for a, b in rules or []:
            f.write(f"{a}\t{b}\n")
    opts = dict(normalization_rule_tsv=f.name) if rules else dict(normalization_rule_name="identity")
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(lines), model_writer=m, model_type="unigram", vocab_size=2000, hard_vocab_limit=False,
        character_coverage=1.0, user_defined_symbols=["<extra_id_0>", "<extra_id_1>", "<extra_id_10>"],
        num_threads=1, pad_id=0, eos_id=1, unk_id=2, bos_id=-1, shuffle_input_sentence=False,
        byte_fallback=byte_fallback, minloglevel=2, **opts)
    os.unlink(f.name)
    return m.getvalue()


def proto_fields(buf):
    """The (field, wire type, value) of a protobuf message (varints and
    length-delimited fields; enough for sentencepiece's NormalizerSpec)."""
    i, out = 0, []

    def varint():
        nonlocal i
        v, s = 0, 0
        while True:
            b = buf[i]
            i += 1
            v |= (b & 0x7F) << s
            s += 7
            if b < 0x80:
                return v
    while i < len(buf):
        key = varint()
        field, wt = key >> 3, key & 7
        if wt == 0:
            out.append((field, wt, varint()))
        elif wt == 2:
            n = varint()
            out.append((field, wt, buf[i:i + n]))
            i += n
        elif wt == 5:
            out.append((field, wt, buf[i:i + 4]))
            i += 4
        elif wt == 1:
            out.append((field, wt, buf[i:i + 8]))
            i += 8
        else:
            raise ValueError(f"wire type {wt}")
    return out


def normalizer_spec(model):
    """precompiled_charsmap, add_dummy_prefix, remove_extra_whitespaces."""
    spec = [v for f, wt, v in proto_fields(model) if f == 3 and wt == 2][0]
    d = {f: v for f, _, v in proto_fields(spec)}
    return bytes(d.get(2, b"")), bool(d.get(3, 1)), bool(d.get(4, 1))


def unigram_pieces(model):
    """(text, score, type) per piece, typed as the T5 converter types them."""
    sp = spm.SentencePieceProcessor(model_proto=model)
    out = []
    for i in range(sp.vocab_size()):
        ty = 1
        if sp.is_unknown(i):
            ty = 2
        elif sp.is_control(i):
            ty = 3
        elif sp.is_unused(i):
            ty = 5
        elif sp.is_byte(i):
            ty = 6
        elif sp.id_to_piece(i).startswith("<extra_id_"):
            ty = 4
        out.append((sp.id_to_piece(i), sp.get_score(i), ty))
    return out


def write_gguf(path, arch, model, toks, scores, types_, kv):
    w = gguf.GGUFWriter(path, arch=arch)
    w.add_tokenizer_model(model)
    w.add_tokenizer_pre("default")
    w.add_token_list(toks)
    if scores is not None:
        w.add_token_scores(scores)
    w.add_token_types(types_)
    for k, v in kv.items():
        getattr(w, "add_" + k)(v)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def build_ugm(lines, path, raw):
    model = train_unigram(lines, None if raw else RULES, byte_fallback=raw)
    charsmap, prefix, remove_ws = normalizer_spec(model)
    assert bool(charsmap) != raw
    pieces = unigram_pieces(model)
    # the converter pads to the model's vocab size with unused [PADn]; one
    # unused piece the matcher takes (unused pieces are in its trie)
    pieces += [(f"[PAD{len(pieces)}]", -10000.0, 5), (SP + "unusedpiece", -3.0, 5)]
    kv = dict(eos_token_id=1, unk_token_id=2, pad_token_id=0)
    if raw:
        prefix = remove_ws = False
        kv["add_eos_token"] = False
    kv["add_space_prefix"] = prefix
    kv["remove_extra_whitespaces"] = remove_ws
    if charsmap:
        kv["precompiled_charsmap"] = charsmap
    write_gguf(path, "t5", "t5", [p for p, _, _ in pieces], [s for _, s, _ in pieces], [t for _, _, t in pieces], kv)
    return pieces


def rwkv_escape(b):
    return repr(b)[2:-1]   # as the converter: b'\xe4' -> \xe4, b'\n' -> \n


def build_rwkv(lines, path):
    data = [l.encode("utf-8").decode("latin-1") for l in lines[:300]]
    merges = train_bpe(data, 500)
    toks = [b"<s>"] + [bytes([i]) for i in range(256)]
    seen = set(toks)
    for a, b in merges:
        t = (a + b).encode("latin-1")
        if t not in seen:
            seen.add(t)
            toks.append(t)
    for t in [b"\n\n", b"  ", b"    ", b"\t\t", "中文".encode(), b"\\n", b"'\"", b"\\x41"]:
        if t not in seen:
            seen.add(t)
            toks.append(t)
    texts = [toks[0].decode()] + [rwkv_escape(t) for t in toks[1:]]
    types_ = [3] + [1] * (len(toks) - 1)
    n = len(texts)
    texts += [f"[PAD{i}]" for i in range(n, n + 4)]
    types_ += [5] * 4
    kv = dict(bos_token_id=0, eos_token_id=0, eot_token_id=toks.index(b"\n\n"))
    write_gguf(path, "rwkv6", "rwkv", texts, None, types_, kv)


def build_plamo2(pieces, path):
    toks = ["<|plamo:unk|>", "<|plamo:bos|>", "<|plamo:eos|>", "<|plamo:pad|>", "<|plamo:op|>"]
    scores = [0.0, 0.0, 0.0, 0.0, -1.5]
    types_ = [2, 3, 3, 3, 3]
    toks += [f"<0x{b:02X}>" for b in range(256)]
    scores += [0.0] * 256
    types_ += [6] * 256
    seen = set(toks)
    for p, s, ty in pieces:
        if ty != 1:
            continue
        p = p.replace(SP, " ")
        if p not in seen:
            seen.add(p)
            toks.append(p)
            scores.append(s)
            types_.append(1)
    # pieces that tie after rounding to 1e-4 (the table's integer scores)
    for p, s in (("hello world", -9.00004), ("hello wor", -4.50002), ("ld", -4.50002), ("  ", -2.0), ("\n", -3.0)):
        if p not in seen:
            seen.add(p)
            toks.append(p)
            scores.append(s)
            types_.append(1)
    kv = dict(bos_token_id=1, eos_token_id=2, unk_token_id=0, pad_token_id=3, eot_token_id=4, add_space_prefix=False)
    write_gguf(path, "plamo2", "plamo2", toks, scores, types_, kv)


TESTS = [
    "", " ", "  ", "   ", "\t", "\n", "\n\n", "\n\n\n", " \n", "\n \n", " \n\n ",
    "hello world", " hello", "hello ", "  hello  world  ", "Hello, world! How are you?", "a\tb\t\tc",
    "line one\nline two\n\nline three", "\r\n windows\r\n", "   leading", "trailing   ", "kaki taro neno",
    "the quick brown", "thethethe", "café naïve résumé", "über straße", "中文", "日本語テキスト", "漢字ひらがな", "한국어",
    "🦙 llama 🐪", "emoji 😀😃!", "x" * 40, "0123456789", "12 345 6789 00000", "3.14159, 2.71828", "-42 +7 1e10",
    SP + "already escaped " + SP + SP, "it's a test , yes . ok ?", " 's 're 'm ' quoted ' ",
    "ＡＢｃ１ ﬁne ﬂow", "Ⅰ Ⅱ", "tab\tnbsp\u00a0ideo\u3000space", "ABC ABCD", "<extra_id_0>", "a<extra_id_0>b<extra_id_1> c",
    "<extra_id_10> <extra_id_1", "<extra_", "</s>", "<pad>x", "<unk>", "text </s> more", "[PAD1803] unusedpiece",
    "\u2581unusedpiece", "<|plamo:bos|>hi<|plamo:eos|>", "<|plamo:op|>", "<s>hello", "hello world ld",
    "hello wor", "\\n \\x41 '\"", "\ufeffbom first", "a\ufeffb", "\u0301accent", "e\u0301", "ｶﾀｶﾅ",
    b"\xff invalid \xc3", "\x00nul\x00", b"tail\xe4\xb8", "kinging ededed ouou", "naïve\tcafé\n\nüber",
]


def random_tests(n):
    """n seeded strings of pieces that meet at odd places (partial special
    texts, combining marks, fullwidth letters, cut UTF-8, BOMs)."""
    alpha = ["a", "ka", "the", " ", "  ", "\t", "\n", "中", "文", "😀", "é", "e\u0301", "Ａ", "ﬁ", "\u00a0", "\u3000",
             "1", "23", "<extra_id_0>", "<extra_", "</s>", "<|plamo:bos|>", "<|plamo:op", "\\x41", "'", '"', b"\xff",
             b"\xe4", b"\x00", "ld", "hello wor", "\ufeff", "ABC", "?", ".", "[PAD1"]
    r = random.Random(99)
    return [b"".join(p if isinstance(p, bytes) else p.encode() for p in (r.choice(alpha) for _ in range(r.randint(1, 14))))
            for _ in range(n)]


def piece(vocab, tid, special):
    buf = ctypes.create_string_buffer(256)
    n = ll.llama_token_to_piece(vocab, tid, buf, 256, 0, special)
    assert n >= 0
    return buf.raw[:n]


def hx(b):
    return b.hex() if b else "-"


def encode_test(s):
    return s if isinstance(s, bytes) else s.encode("utf-8")   # bytes: invalid UTF-8 on purpose


def record(name, path):
    mp = ll.llama_model_default_params()
    mp.vocab_only = True
    model = ll.llama_model_load_from_file(path.encode(), mp)
    if not model:
        raise SystemExit(f"{name}: llama.cpp could not load {path}")
    vocab = ll.llama_model_get_vocab(model)
    n = ll.llama_vocab_n_tokens(vocab)
    lines = [f"# {name}: written by tests/gen/gen_tok_models.py from llama.cpp (llama-cpp-python 0.3.36)",
             f"vocab {n} bos {ll.llama_vocab_bos(vocab)} eos {ll.llama_vocab_eos(vocab)} "
             f"add_bos {int(ll.llama_vocab_get_add_bos(vocab))} add_eos {int(ll.llama_vocab_get_add_eos(vocab))}",
             "eog " + " ".join(str(i) for i in range(n) if ll.llama_vocab_is_eog(vocab, i))]
    for i in range(n):
        lines.append(f"piece {i} {hx(piece(vocab, i, False))} {hx(piece(vocab, i, True))}")
    n_cases = 0
    for s in TESTS + random_tests(40):
        data = encode_test(s)
        for add_special, parse_special in ((True, True), (False, False), (True, False)):
            ids = tokenize(vocab, data, add_special, parse_special)
            lines.append(f"case {int(add_special)} {int(parse_special)} {hx(data)}")
            lines.append("ids " + " ".join(map(str, ids)))
            for rs, up in ((False, False), (True, False), (False, True), (True, True)):
                lines.append(f"detok {int(rs)} {int(up)} {hx(detokenize(vocab, ids, rs, up))}")
            n_cases += 1
    ll.llama_model_free(model)
    with open(os.path.join(OUT, name + ".txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"wrote {name}: {n} tokens, {n_cases} cases, {os.path.getsize(path)} bytes of GGUF")


def main(names):
    init()
    lines = make_corpus()
    path = lambda name: os.path.join(OUT, name + ".gguf")
    pieces = build_ugm(lines, path("tok_ugm"), raw=False)
    build_ugm(lines, path("tok_ugm_raw"), raw=True)
    build_rwkv(lines, path("tok_rwkv"))
    build_plamo2(pieces, path("tok_plamo2"))
    for name in names or ["tok_ugm", "tok_ugm_raw", "tok_rwkv", "tok_plamo2"]:
        record(name, path(name))


if __name__ == "__main__":
    main(sys.argv[1:])
