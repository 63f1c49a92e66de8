"""llama.cpp's own logits and greedy tokens for gen_llm.py's tiny family
files (tests/goldens/llm_<name>.gguf), for tests/test_llm_llamacpp.c.

For each file: the logits after the prompt [1, 5, 9, 13, 17, 21, 25] and
after each of the next greedy tokens but the last (32 rows), to
llm_<name>_llamacpp.logits.bin (float32), and the 32 greedy tokens to
llm_<name>_llamacpp.greedy.bin (int32): the layout of gen_llm.py's greedy().
The KV cache is f32 and flash attention off, so the figures are llama.cpp's
float32 CPU forward pass (with flash attention on it rounds through f16, about
3e-3 on these logits). llama_q8kv is left out: llama.cpp's q8_0 cache needs
flash attention, which also quantizes the query to q8_0 (4e-2 here); tg's q8_0
cache is checked bit-exactly against gguf-py's Q8_0 in gen_llm.py instead.

gen_llm.py's files carry no vocabulary; llama.cpp wants one, so each is
copied (gguf-py's gguf_new_metadata) with tokenizer.ggml.model = "none" and
<arch>.vocab_size: llama.cpp then adds that many dummy tokens, and only
token ids go in and out.

llama.cpp is the one the llama-cpp-python sdist carries (0.3.36, llama.cpp
0c1e570), built as docs/benchmarks.md says with BUILD_SHARED_LIBS=ON, and
driven through the sdist's own ctypes bindings. Run:

    LLAMA_CPP_PY=/path/llama_cpp_python-0.3.36 \\
    LLAMA_CPP_LIB_PATH=/path/llama_cpp_python-0.3.36/vendor/llama.cpp/build/bin \\
    python3 tests/gen/gen_llm_llamacpp.py [NAME ...]

(numpy and gguf from PyPI.)
"""
import os
import sys
import tempfile

import numpy as np
import gguf
from gguf.scripts.gguf_new_metadata import MetadataDetails, copy_with_new_metadata

from llamacpp_bindings import ll, init

OUT = os.path.join(os.path.dirname(__file__), "..", "goldens")
PROMPT = [1, 5, 9, 13, 17, 21, 25]
N_GREEDY = 32
# name: the KV cache type (ggml's enum: 0 f32)
FAMILIES = {
    "llama": 0, "yarn": 0, "qwen3moe": 0, "qwen2moe": 0,
    "deepseek2": 0, "deepseek2_yarn": 0, "gemma2": 0, "gemma3": 0,
    "phi3": 0, "gptoss": 0, "glm4moe": 0, "qwen35": 0, "qwen35moe": 0,
}


def with_vocab(src, dst):
    reader = gguf.GGUFReader(src)
    arch = bytes(reader.fields["general.architecture"].parts[-1]).decode()
    # gguf shapes run innermost first: token_embd is (dim, vocab)
    vocab = next(int(t.shape[1]) for t in reader.tensors if t.name == "token_embd.weight")
    writer = gguf.GGUFWriter(dst, arch=arch, endianess=reader.endianess)
    new = {
        gguf.Keys.Tokenizer.MODEL: MetadataDetails(gguf.GGUFValueType.STRING, "none"),
        f"{arch}.vocab_size": MetadataDetails(gguf.GGUFValueType.UINT32, vocab),
    }
    copy_with_new_metadata(reader, writer, new, [])
    return vocab


def run(name, cache_type):
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, name + ".gguf")
        V = with_vocab(os.path.join(OUT, f"llm_{name}.gguf"), path)
        mp = ll.llama_model_default_params()
        model = ll.llama_model_load_from_file(path.encode(), mp)
        if not model:
            raise SystemExit(f"{name}: llama.cpp could not load the file (see its log above)")
        cp = ll.llama_context_default_params()
        cp.n_ctx = 0                 # the file's context length, as tg's n_ctx 0
        cp.n_batch = cp.n_ubatch = 64
        cp.n_threads = cp.n_threads_batch = 2
        cp.type_k = cp.type_v = cache_type
        cp.flash_attn_type = 0   # off: llama.cpp's CPU flash attention rounds through f16 (3e-3 here)
        ctx = ll.llama_init_from_model(model, cp)
        if not ctx:
            raise SystemExit(f"{name}: llama.cpp could not make a context")
        assert ll.llama_vocab_n_tokens(ll.llama_model_get_vocab(model)) == V
        rows, toks, margin, feed = [], [], np.inf, list(PROMPT)
        for i in range(N_GREEDY):
            arr = (ll.llama_token * len(feed))(*feed)
            if ll.llama_decode(ctx, ll.llama_batch_get_one(arr, len(feed))) != 0:
                raise SystemExit(f"{name}: llama_decode failed at step {i}")
            logits = np.ctypeslib.as_array(ll.llama_get_logits_ith(ctx, -1), shape=(V,)).astype(np.float32)
            srt = np.sort(logits)
            margin = min(margin, float(srt[-1] - srt[-2]))
            rows.append(logits.copy())
            toks.append(int(np.argmax(logits)))
            feed = [toks[-1]]
        ll.llama_free(ctx)
        ll.llama_model_free(model)
    np.array(rows, dtype=np.float32).tofile(os.path.join(OUT, f"llm_{name}_llamacpp.logits.bin"))
    np.array(toks, dtype=np.int32).tofile(os.path.join(OUT, f"llm_{name}_llamacpp.greedy.bin"))
    print(f"wrote llm_{name}_llamacpp: {N_GREEDY} greedy tokens {toks[:8]}..., smallest top-2 margin {margin:.4f}")



if __name__ == "__main__":
    init()
    for name in sys.argv[1:] or FAMILIES:
        run(name, FAMILIES[name])
