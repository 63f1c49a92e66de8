"""llama.cpp's tokenize / detokenize under every tokenizer.ggml.pre value
its llama-vocab.cpp accepts (and the "whitespace" and "hybriddna" tokenizer
models), on
small vocabularies, for tests/test_tokenizer_pretok.c.

Base vocab-only GGUFs, written here with gguf-py:

  tok_pre_bytes.gguf  model gpt2 (pre kimi-k2; tok_pre_afmoe.gguf the same
                      with pre afmoe, for fuzz_tokenizer): control tokens <|endoftext|> <s> </s> <sep>,
                      GPT-2's 256 byte characters, then the merges a tiny BPE
                      trainer learns on a multilingual corpus (byte-encoded
                      lines, so merges also cross spaces, digits and scripts:
                      a word split differently gives different ids), and a
                      few whole words (for ignore_merges)
  tok_pre_dna.gguf    model hybriddna, pre qwen2: tok_pre_bytes' vocabulary, then
                      <dna> </dna> <oov> and DNA 6-mers with their U+E000 marker
  tok_pre_raw.gguf    model whitespace, pre whitespace: the same control
                      tokens, <0xXX> byte tokens, the corpus's characters as
                      raw UTF-8 and merges learned on its whitespace-separated
                      words

Each section of tests/goldens/tok_pretok.txt is one variant: a base with
tokenizer.ggml.model and .pre set (optionally without merges, or with
normalizer.lowercase true); llama.cpp loaded that exact file (written to a
temporary folder) and the test rebuilds it the same way. Format:

  string HEX                        the test strings, once, before the variants
                                    (tokenized with add_special and parse_special true)
  variant BASE MODEL PRE [nomerges] [lowercase]
  vocab N bos B eos E add_bos 0|1 add_eos 0|1
  same LABEL                        the results of an earlier variant, LABEL its
                                    variant line's words joined by "/"; or, per string:
  ids ID ...                        its llama_tokenize
  detok HEX|=                       llama_detokenize (remove_special and
                                    unparse_special false); "=" when it is the string

HEX is the bytes in hex, "-" when empty.

llama.cpp is the one the llama-cpp-python sdist carries (0.3.36), built with
BUILD_SHARED_LIBS=ON, driven through tests/gen/llamacpp_bindings.py. Run
from the repo:

    LLAMA_CPP_PY=/work/llama/llama_cpp_python-0.3.36 \\
    LLAMA_CPP_LIB_PATH=/work/llama/llama_cpp_python-0.3.36/vendor/llama.cpp/build/bin \\
    python3 tests/gen/gen_tok_pretok.py

(gguf from PyPI.) The names come from llama-vocab.cpp itself when
LLAMA_CPP_PY is set (every `tokenizer_pre == "..."`), so a newer llama.cpp
adds its new names here; the script stops if llama.cpp rejects one.
"""
import os
import re
import sys
import tempfile

import gguf

from bpe_train import train_bpe
from llamacpp_bindings import ll, init, tokenize, detokenize

OUT = os.path.join(os.path.dirname(__file__), "..", "goldens")

CORPUS = """The quick brown fox jumps over the lazy dog. I'm sure you're right; it's what we'll do, isn't it?
THEY'VE SAID IT'S FINE. Don't stop, we'd've gone.
Numbers: 0 12 345 6789 1234567 3.14159 2,000,000 $100 50% x1y22z333
中文测试，我爱北京天安门。你好世界！漢字と日本語のテキスト、カタカナとひらがな。
한국어 텍스트입니다. ไทยภาษาไทย ភាសាខ្មែរ မြန်မာစာ हिन्दी नमस्ते العربية Ελληνικά Русский язык
café naïve résumé déjà vu — “quotes” ‘single’ «guillemets»
def f(x):
    return x ** 2  # comment
\tif (a && b) { return c; }
<html><body class="x">tags</body></html> email@example.com https://example.org/a?b=1
🦙 llama 🐪 emoji 😀😃! ✓ ★ → ∑ ∞
"""

SPECIALS = ["<|endoftext|>", "<s>", "</s>", "<sep>"]
# whole words as tokens that merges need not reach: ignore_merges takes them whole
WORDS = ["Hello", " world", " World", "don", "'t", " you're", "123", "4567", " Han", "中文", "测试", "天安门",
         " English", "テキスト", " 한국어", "ไทย", "  ", "\n\n", " quick brown", "CamelCase", "1234abc"]
N_MERGES = 300

TESTS = [
    "", " ", "  ", "\n", "\n\n\n", "\t", " \n \n ", "\r\n windows\r\n", "a\r\rb",
    "Hello world", " Hello World", "hello   world  ", "   leading", "trailing   ",
    "I'm sure you're right, it's 'quoted' isn't it? We'll see. They'd've",
    "I'VE DONE IT'S WE'LL", "'s 't 're 've 'm 'll 'd", "'S'T'RE'VE'M'LL'D", "don't", "’curly’ it’s",
    "0", "12", "123", "1234", "12345", "1234567890", "12 345 6789", "3.14159 and 2,000,000",
    "abc1234def", "x1y22z333w4444v55555", "a 1234 b", "1234abc", "-1234", "(5678)",
    "٣٤٥٦ arabic-indic digits", "²³ superscripts ½ ⅓ Ⅻ", "１２３ fullwidth",
    "中文测试", "我爱北京天安门", "你好，世界！", "Han漢字mixed with English", "中文123English",
    "日本語のテキスト、カタカナとひらがな", "ｶﾀｶﾅ halfwidth", "한국어 텍스트입니다", "ᄀᄁ jamo",
    "ไทยภาษา", "ភាសាខ្មែរ", "မြန်မာ", "ꩠꩡ ꧠꧡ", "⼀⼁ radicals", "㐀㐁 ext-A 𠀀𠀁 ext-B 豈更 compat",
    "हिन्दी नमस्ते", "العربية", "Ελληνικά", "Русский язык",
    "café naïve résumé", "e\u0301 combining a\u0308b\u0327", " \u0301 lone mark",
    "🦙 llama 🐪 emoji 😀😃!", "👨\u200d👩\u200d👧 family", "✓★→∑∞",
    "\t tabs\t\tand  double  spaces", "multiple\n\nnewlines\n\n\nend", "a\u00a0nbsp\u3000ideographic\u0085nel\u2028ls",
    "def f(x):\n    return x**2  # comment\n", "\tif (a && b) { return c; }", "<html><body>tags</body></html>",
    "email@example.com https://x.y/z?q=1&r=2", "$100 + 50% = €150 ¥200", "!!!???... --- ### ***", "@#$ %^& *()",
    "CamelCaseWords andALLCAPS HTTPServer iPhone", "ǅungla ǈ ʰᵃ Lt and Lm letters", "ŉ ß ﬁ ligature",
    "mixed中文English123テスト한국", "The quick brown fox jumps over the lazy dog. " * 3,
    "\xff invalid \xc3", "<|endoftext|> special <s>bos</s> <sep>", "x" * 70, "1" * 40, "中" * 30,
    "<dna>ACGTACGTACGTAC</dna>", "gene <dna>acgtnnACGTAcccccc</dna> more", "<dna>ACGTA", "<dna></dna>x",
    "<dna>AC</dna><dna>GGGGGGTTTTTT</dna> <dna>AC GT\nAA</dna>", "<DNA>ACGT</DNA> </dna><dna>中文🦙</dna>",
]

def llama_pre_names():
    """Every tokenizer_pre value llama-vocab.cpp compares against, in order."""
    src = os.path.join(os.environ.get("LLAMA_CPP_PY", "."), "vendor", "llama.cpp", "src", "llama-vocab.cpp")
    text = open(src, encoding="utf-8").read()
    start = text.index("for now, only BPE models have pre-tokenizers")
    end = text.index("unknown pre-tokenizer type", start)
    names = []
    for n in re.findall(r'tokenizer_pre == "([^"]+)"', text[start:end]):
        if n not in names:
            names.append(n)
    return names


def byte_chars():
    """GPT-2's byte -> printable character map."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    m = dict(zip(bs, cs))
    return [chr(m[b]) for b in range(256)]




def vocab_bytes():
    bc = byte_chars()
    merges = train_bpe([[bc[b] for b in l.encode()] for l in CORPUS.split("\n")], N_MERGES)
    toks = SPECIALS + bc
    types_ = [3] * len(SPECIALS) + [1] * 256
    seen = set(toks)
    for a, b in merges + [("".join(bc[b] for b in w.encode()), "") for w in WORDS]:
        if a + b not in seen:
            seen.add(a + b)
            toks.append(a + b)
            types_.append(1)
    return toks, types_, [f"{a} {b}" for a, b in merges]


def vocab_raw():
    words = CORPUS.split()
    merges = train_bpe([list(w) for w in words], N_MERGES)
    toks = SPECIALS + [f"<0x{b:02X}>" for b in range(256)]
    types_ = [3] * len(SPECIALS) + [6] * 256
    seen = set(toks)
    for t in sorted(set("".join(words))) + [a + b for a, b in merges] + [w for w in WORDS if not w.isspace()]:
        if t not in seen:
            seen.add(t)
            toks.append(t)
            types_.append(1)
    return toks, types_, [f"{a} {b}" for a, b in merges]


# base file: its vocabulary, and the model and pre it is written with (the
# variants set their own; fuzz/fuzz_tokenizer.c loads the files as they are)
def vocab_dna():
    """vocab_bytes' and then <dna> </dna> <oov> (normal tokens, so that the
    text reaches the tokenizer) and k-mers with their U+E000 marker, as the
    converter writes them for hybriddna: all 6-mers of a few sequences,
    CCCCCC among them (also a BPE token here)."""
    toks, types_, merges = vocab_bytes()
    if "CCCCCC" not in toks:
        toks.append("CCCCCC")
        types_.append(1)
    kmers = []
    for seq in ["ACGTACGTACGTAC", "GGGGGGTTTTTTCCCCCC", "ACGTAAAAAAAA", "ACAAAA"]:
        for i in range(len(seq) - 5):
            if seq[i:i + 6] not in kmers:
                kmers.append(seq[i:i + 6])
    toks += ["<dna>", "</dna>", "<oov>"] + [k + "\ue000" for k in kmers]
    types_ += [1] * (3 + len(kmers))
    return toks, types_, merges


BASES = {"tok_pre_bytes": (vocab_bytes, "gpt2", "kimi-k2"), "tok_pre_afmoe": (vocab_bytes, "gpt2", "afmoe"),
         "tok_pre_raw": (vocab_raw, "whitespace", "whitespace"), "tok_pre_dna": (vocab_dna, "hybriddna", "qwen2")}


def write_gguf(path, toks, types_, merges, model, pre, lowercase=None):
    w = gguf.GGUFWriter(path, arch="llama")
    w.add_tokenizer_model(model)
    w.add_tokenizer_pre(pre)
    w.add_token_list(toks)
    w.add_token_types(types_)
    if merges is not None:
        w.add_token_merges(merges)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_sep_token_id(3)
    if lowercase is not None:
        w.add_bool("tokenizer.ggml.normalizer.lowercase", lowercase)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def hx(b):
    return b.hex() if b else "-"


def encode(s):
    return s.encode("latin-1") if "\xff" in s else s.encode("utf-8")


def run_variant(tmp, base, model, pre, opts):
    toks, types_, merges = BASES[base][0]()
    path = os.path.join(tmp, "v.gguf")
    write_gguf(path, toks, types_, None if "nomerges" in opts else merges, model, pre,
               True if "lowercase" in opts else None)
    mp = ll.llama_model_default_params()
    mp.vocab_only = True
    model_p = ll.llama_model_load_from_file(path.encode(), mp)
    if not model_p:
        raise SystemExit(f"llama.cpp could not load the {base} {model} {pre} variant")
    vocab = ll.llama_model_get_vocab(model_p)
    head = (f"vocab {ll.llama_vocab_n_tokens(vocab)} bos {ll.llama_vocab_bos(vocab)} eos {ll.llama_vocab_eos(vocab)} "
            f"add_bos {int(ll.llama_vocab_get_add_bos(vocab))} add_eos {int(ll.llama_vocab_get_add_eos(vocab))}")
    body = []
    for s in TESTS:
        data = encode(s)
        ids = tokenize(vocab, data, True, True)
        d = detokenize(vocab, ids, False, False)
        body += ["ids " + " ".join(map(str, ids)), f"detok {'=' if d == data else hx(d)}"]
    ll.llama_model_free(model_p)
    return head, body


def main():
    init()
    for base, (build, model, pre) in BASES.items():
        toks, types_, merges = build()
        write_gguf(os.path.join(OUT, base + ".gguf"), toks, types_, merges, model, pre)
        print(f"{base}: {len(toks)} tokens, {len(merges)} merges")
    # pre whitespace only under model whitespace: with model gpt2, llama.cpp
    # aborts on a word of two whitespace characters (no merge side may hold a space)
    variants = [("tok_pre_afmoe" if n == "afmoe" else "tok_pre_bytes", "gpt2", n, ())
                for n in llama_pre_names() if n != "whitespace"]
    variants += [("tok_pre_bytes", "gpt2", "kimi-k2", ("nomerges",)),
                 ("tok_pre_raw", "whitespace", "whitespace", ()),
                 ("tok_pre_raw", "whitespace", "whitespace", ("lowercase",)),
                 ("tok_pre_dna", "hybriddna", "qwen2", ()), ("tok_pre_dna", "hybriddna", "llama3", ())]
    lines = ["# written by tests/gen/gen_tok_pretok.py from llama.cpp (llama-cpp-python 0.3.36)"]
    lines += [f"string {hx(encode(s))}" for s in TESTS]
    seen = {}
    n_same = 0
    with tempfile.TemporaryDirectory() as tmp:
        for base, model, pre, opts in variants:
            head, body = run_variant(tmp, base, model, pre, opts)
            label = " ".join((base, model, pre) + tuple(opts))
            lines += [f"variant {label}", head]
            key = (base, tuple(body))
            if key in seen:
                lines.append(f"same {seen[key]}")
                n_same += 1
            else:
                seen[key] = label.replace(" ", "/")
                lines += body
    with open(os.path.join(OUT, "tok_pretok.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"wrote tok_pretok.txt: {len(variants)} variants ({len(variants) - n_same} distinct), {len(TESTS)} strings each")


if __name__ == "__main__":
    main()
