#!/usr/bin/env python3
"""bench_ttft.py: time to the first token of a fresh process, as a user
meets it: `tg run -m FILE -p PROMPT -n 1` (load, a prompt of 16 tokens, one
token), wall clock, beside llama.cpp's llama-completion on the same file when
one is given.

    python3 bench/bench_ttft.py [build/tg]
    TG_BENCH_TTFT_MODELS=a.gguf,b.gguf ...   (default: a random 125M llama, Q4_K_M)
    LLAMA_COMPLETION=/path/to/llama-completion ...   (optional reference)
    BENCH_TTFT_THREADS=N   (llama-completion -t; default: the cores tg uses)

Per file it prints

  bench ttft model=NAME prompt_tokens=16 tg_cold_s=C tg_warm_s=W tg_warm_repack_s=R llama_s=L llama_warmup_s=LW ratio=L/W ratio_repack=L/R

cold: an empty compile cache (every kernel lowered, rendered and compiled);
warm: the same cache again (what every later run costs: the kernels, and
the row-packed weights the cold run cached), the best of 3, as
is llama_s (llama-completion --no-warmup; llama_warmup_s: its default, which
first runs an empty warm-up pass). ratio > 1: tg's warm first token comes
sooner than llama.cpp's. tg_warm_repack_s (ratio_repack): warm kernels but
TG_PACK_CACHE=0, the weights packed again (what a first load of a file
costs once its kernels are compiled).
Without llama-completion, ratio is left out and reason= says why.
"""
import os
import shutil
import subprocess
import sys
import tempfile
import time

WORDS = ("the quick brown fox jumps over a lazy dog while small cats sleep near "
         "warm fires and old friends talk about long winters in quiet towns").split()
TARGET_TOKENS = 16


def run_s(cmd, env):
    t0 = time.monotonic()
    r = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    dt = time.monotonic() - t0
    if r.returncode != 0:
        raise RuntimeError(f"{cmd[0]} failed ({r.returncode}): {r.stderr.strip()[-400:]}")
    return dt


def prompt_of(tg, model, env):
    """The first run of WORDS that tg's tokenizer makes TARGET_TOKENS tokens (with BOS) or more."""
    for n in range(1, len(WORDS) + 1):
        text = " ".join(WORDS[:n])
        out = subprocess.run([tg, "tokenize", "-m", model, "--show-count", "--ids", text], env=env,
                             capture_output=True, text=True, check=True).stdout
        count = [line.rsplit(":", 1)[1] for line in out.splitlines() if line.startswith("Total number of tokens:")]
        ntok = int(count[-1]) if count else out.count(",") + 1
        if ntok >= TARGET_TOKENS:
            return text, ntok
    return " ".join(WORDS), ntok


def main():
    tg = sys.argv[1] if len(sys.argv) > 1 else "build/tg"
    tmp = tempfile.mkdtemp(prefix="tg-bench-ttft-")
    try:
        env = dict(os.environ)
        models = [m for m in os.environ.get("TG_BENCH_TTFT_MODELS", "").split(",") if m]
        if not models:
            path = os.path.join(tmp, "llama125m-q4_k_m.gguf")
            subprocess.run([tg, "llm-init", path, "--type", "q4_k_m"], env=env, check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            models = [path]
        llama = os.environ.get("LLAMA_COMPLETION")
        threads = os.environ.get("BENCH_TTFT_THREADS") or env.get("TG_THREADS") or str(len(os.sched_getaffinity(0)))
        for model in models:
            name = os.path.basename(model).rsplit(".", 1)[0]
            text, ntok = prompt_of(tg, model, env)
            cache = os.path.join(tmp, "cache-" + name)
            os.makedirs(cache, exist_ok=True)
            tenv = dict(env, TG_CACHE_DIR=cache)
            cmd = [tg, "run", "-m", model, "-p", text, "-n", "1", "--temp", "0"]
            cold = run_s(cmd, tenv)
            warm = min(run_s(cmd, tenv) for _ in range(3))
            # the same warm compile cache, the weights packed again (no
            # packed-weights cache: what a first load of a file costs)
            repack = min(run_s(cmd, dict(tenv, TG_PACK_CACHE="0")) for _ in range(3))
            line = (f"bench ttft model={name} prompt_tokens={ntok} tg_cold_s={cold:.3f} tg_warm_s={warm:.3f}"
                    f" tg_warm_repack_s={repack:.3f}")
            if llama and os.access(llama, os.X_OK):
                # llama-completion by default first runs an empty warm-up pass;
                # the ratio is against it without one (--no-warmup), the stricter
                # comparison, and the default's time is printed beside it
                lcmd = [llama, "-m", model, "-p", text, "-n", "1", "-t", threads, "-no-cnv", "--temp", "0"]
                ref = min(run_s(lcmd + ["--no-warmup"], env) for _ in range(3))
                ref_default = min(run_s(lcmd, env) for _ in range(3))
                line += (f" llama_s={ref:.3f} llama_warmup_s={ref_default:.3f} ratio={ref / warm:.2f}"
                         f" ratio_repack={ref / repack:.2f}")
            else:
                line += " reason=no_LLAMA_COMPLETION"
            print(line, flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
