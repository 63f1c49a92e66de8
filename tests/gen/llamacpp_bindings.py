"""The llama-cpp-python sdist's ctypes bindings to llama.cpp, for the
generators that take reference values from llama.cpp itself
(gen_llm_llamacpp.py, gen_tok_gemma4.py, gen_tok_pretok.py).

Only the bindings module is imported: the package's __init__ wants the
high-level API's dependencies (diskcache, jinja2), which these calls do not
need. LLAMA_CPP_PY names the unpacked sdist, LLAMA_CPP_LIB_PATH the folder
of its libllama.so (docs/benchmarks.md says how to build it).
"""
import ctypes
import importlib
import os
import sys
import types

_pkg = types.ModuleType("llama_cpp")
_pkg.__path__ = [os.path.join(os.environ.get("LLAMA_CPP_PY", "."), "llama_cpp")]
sys.modules["llama_cpp"] = _pkg
ll = importlib.import_module("llama_cpp.llama_cpp")


@ll.llama_log_callback
def _quiet_log(level, text, user_data):   # llama.cpp's warnings and errors only (ggml_log_level WARN 3, ERROR 4)
    if level in (3, 4):
        sys.stderr.write(text.decode(errors="replace"))


def init():
    """llama.cpp's log to warnings and errors, and its backends loaded."""
    ll.llama_log_set(_quiet_log, None)
    ll.llama_backend_init()


def tokenize(vocab, data, add_special, parse_special):
    """llama.cpp's token ids for the bytes data."""
    cap = len(data) * 4 + 16
    buf = (ll.llama_token * cap)()
    n = ll.llama_tokenize(vocab, data, len(data), buf, cap, add_special, parse_special)
    assert n >= 0, n
    return list(buf[:n])


def detokenize(vocab, ids, remove_special, unparse):
    """llama.cpp's bytes for the token ids."""
    arr = (ll.llama_token * max(len(ids), 1))(*ids)
    cap = 64
    while True:
        buf = ctypes.create_string_buffer(cap)
        n = ll.llama_detokenize(vocab, arr, len(ids), buf, cap, remove_special, unparse)
        if n >= 0:
            return buf.raw[:n]
        cap = -n + 1
