"""The llama-cpp-python sdist's ctypes bindings to llama.cpp, for the
generators that take reference values from llama.cpp itself
(gen_llm_llamacpp.py, gen_tok_gemma4.py).

Only the bindings module is imported: the package's __init__ wants the
high-level API's dependencies (diskcache, jinja2), which these calls do not
need. LLAMA_CPP_PY names the unpacked sdist, LLAMA_CPP_LIB_PATH the folder
of its libllama.so (docs/benchmarks.md says how to build it).
"""
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
