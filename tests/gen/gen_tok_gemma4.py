"""llama.cpp's tokenize / detokenize / token_to_piece on small vocab-only
GGUFs of the SentencePiece-style BPE tokenizers (tokenizer.ggml.model
"gemma4"; tokenizer.ggml.pre "gemma4", "granite-embed-multi-311m",
"sarvam-moe"), for tests/test_tokenizer_gemma4.c.

The files have the layout llama.cpp's converter writes for Gemma 4: control
tokens first (<pad> <eos> <bos>, <unk> as unknown, <mask>, the turn and
tool-response markers), a user-defined token, the byte tokens <0x00>..<0xFF>
(type byte), then the normal tokens: the characters of a small corpus with
spaces escaped to U+2581, and the results of merges learned on it by the
tiny BPE trainer below (tokenizer.ggml.merges), plus whole-newline tokens
("\\n\\n", "\\n\\n\\n"; only "\\n\\n" from a merge). Characters outside the corpus (most
emoji, CJK, accents) take the <0xXX> byte fallback.

  tok_gemma4     model gemma4 (pre "default" in the file: llama.cpp forces
                 gemma4), add_bos_token false (forced true), add_eos false
  tok_granite311m model gpt2, pre granite-embed-multi-311m, no add_bos key
  tok_sarvam     model gpt2, pre sarvam-moe, add_bos and add_eos true

For each: tests/goldens/<name>.gguf and <name>.txt, the text format:

  vocab N bos B eos E add_bos 0|1 add_eos 0|1
  eog ID ...                        llama_vocab_is_eog
  piece ID HEX HEX                  token_to_piece, special false / true
  case ADD_SPECIAL PARSE_SPECIAL HEX   a test string
  ids ID ...                        its llama_tokenize
  detok REMOVE_SPECIAL UNPARSE HEX  llama_detokenize of those ids

HEX is the bytes in hex, "-" when empty.

llama.cpp is the one the llama-cpp-python sdist carries (0.3.36), built with
BUILD_SHARED_LIBS=ON and driven through the sdist's own ctypes bindings (as
gen_llm_llamacpp.py), loading each file with vocab_only. Run from the repo:

    LLAMA_CPP_PY=/work/llama/llama_cpp_python-0.3.36 \\
    LLAMA_CPP_LIB_PATH=/work/llama/llama_cpp_python-0.3.36/vendor/llama.cpp/build/bin \\
    python3 tests/gen/gen_tok_gemma4.py

(gguf from PyPI.)
"""
import ctypes
import os
import sys

import gguf

from bpe_train import train_bpe
from llamacpp_bindings import ll, init, tokenize, detokenize

OUT = os.path.join(os.path.dirname(__file__), "..", "goldens")
SP = "\u2581"

CORPUS = """The quick brown fox jumps over the lazy dog.
Hello world, hello there! How are you today?
It's a test of the tokenizer: spaces, tabs\tand  double  spaces.
    indented code with four spaces
def hello(): return "world"
café naïve résumé — déjà vu
these words and those words are the words we want
"""

# (text, type): 3 control, 2 unknown, 4 user-defined
SPECIALS = [("<pad>", 3), ("<eos>", 3), ("<bos>", 3), ("<unk>", 2), ("<mask>", 3), ("<|turn>", 3), ("<turn|>", 3),
            ("<|tool_response>", 3), ("<tool_response|>", 3), ("<|image|>", 4)]
N_MERGES = 120




def build_vocab():
    lines = [l.replace(" ", SP) for l in CORPUS.split("\n")]
    merges = train_bpe(lines, N_MERGES)
    toks = [t for t, _ in SPECIALS] + [f"<0x{b:02X}>" for b in range(256)]
    types_ = [ty for _, ty in SPECIALS] + [6] * 256
    normal = ["\n", "\n\n", "\n\n\n", "\t", "</s>"]
    for c in sorted(set("".join(lines))):
        normal.append(c)
    for a, b in merges:
        normal.append(a + b)
    seen = set(toks)
    for t in normal:
        if t not in seen:
            seen.add(t)
            toks.append(t)
            types_.append(1)
    merges.append(("\n", "\n"))   # makes "\n\n": whole-newline words are looked up first only under gemma4
    return toks, types_, [f"{a} {b}" for a, b in merges]


VARIANTS = {
    "tok_gemma4": dict(model="gemma4", pre="default", add_bos=False, add_eos=False),
    "tok_granite311m": dict(model="gpt2", pre="granite-embed-multi-311m", add_bos=None, add_eos=None),
    "tok_sarvam": dict(model="gpt2", pre="sarvam-moe", add_bos=True, add_eos=True),
}


def write_gguf(path, v, toks, types_, merges):
    w = gguf.GGUFWriter(path, arch="gemma4")
    w.add_tokenizer_model(v["model"])
    w.add_tokenizer_pre(v["pre"])
    w.add_token_list(toks)
    w.add_token_scores([0.0] * len(toks))
    w.add_token_types(types_)
    w.add_token_merges(merges)
    w.add_bos_token_id(2)
    w.add_eos_token_id(1)
    w.add_unk_token_id(3)
    w.add_pad_token_id(0)
    if v["add_bos"] is not None:
        w.add_add_bos_token(v["add_bos"])
    if v["add_eos"] is not None:
        w.add_add_eos_token(v["add_eos"])
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


TESTS = [
    "", " ", "  ", "   ", "\t", "\n", "\n\n", "\n\n\n", "\n\n\n\n", "\n\n\n\n\n\n\n", " \n", "\n \n", " \n\n ",
    "hello world", " hello", "hello ", "  hello  world  ", "Hello, world! How are you?", "a\tb\t\tc",
    "line one\nline two\n\nline three", "\r\n windows\r\n", "mixed\n\n  spaces\t\n", "   leading", "trailing   ",
    "café naïve", "über straße", "中文", "日本語テキスト", "🦙 llama 🐪", "emoji 😀😃!", "x" * 40,
    SP + "already escaped " + SP + SP, "it's a test , yes . ok ?", " 's 're 'm ' quoted ' ",
    "<bos>hello", "<|turn>user\nhi there<turn|>\n<|turn>model\n", "<eos>", "text <|tool_response> more",
    "</s>", " <pad> ", "<unk>", "<mask>x", "an <|image|> here", "<|turn><|turn>", "def hello(): return \"world\"",
    "    indented code with four spaces", "\xff invalid \xc3",
]


def piece(vocab, tid, special):
    buf = ctypes.create_string_buffer(256)
    n = ll.llama_token_to_piece(vocab, tid, buf, 256, 0, special)
    assert n >= 0
    return buf.raw[:n]


def hx(b):
    return b.hex() if b else "-"


def run(name, v):
    toks, types_, merges = build_vocab()
    path = os.path.join(OUT, name + ".gguf")
    write_gguf(path, v, toks, types_, merges)
    mp = ll.llama_model_default_params()
    mp.vocab_only = True
    model = ll.llama_model_load_from_file(path.encode(), mp)
    if not model:
        raise SystemExit(f"{name}: llama.cpp could not load {path}")
    vocab = ll.llama_model_get_vocab(model)
    n = ll.llama_vocab_n_tokens(vocab)
    lines = [f"# {name}: written by tests/gen/gen_tok_gemma4.py from llama.cpp (llama-cpp-python 0.3.36)",
             f"vocab {n} bos {ll.llama_vocab_bos(vocab)} eos {ll.llama_vocab_eos(vocab)} "
             f"add_bos {int(ll.llama_vocab_get_add_bos(vocab))} add_eos {int(ll.llama_vocab_get_add_eos(vocab))}",
             "eog " + " ".join(str(i) for i in range(n) if ll.llama_vocab_is_eog(vocab, i))]
    for i in range(n):
        lines.append(f"piece {i} {hx(piece(vocab, i, False))} {hx(piece(vocab, i, True))}")
    n_cases = 0
    for s in TESTS:
        data = s.encode("utf-8", "surrogateescape") if "\xff" not in s else s.encode("latin-1")
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
    print(f"wrote {name}: {n} tokens, {len(merges)} merges, {n_cases} cases")



if __name__ == "__main__":
    init()
    for name in sys.argv[1:] or VARIANTS:
        run(name, VARIANTS[name])
