#!/usr/bin/env python3
"""llm_decode_cpu.py: decoding cost as CPU time per token, one thread, tg
beside llama.cpp's llama-bench on the same files. On a shared, noisy host
the wall clock of two threads swings by 40% between runs (and llama.cpp's
spinning threads lose the most when another process takes a core); the CPU
time one thread spends per token does not count the time it waits for a
core, so it compares the two kernels' work and memory traffic.

    python3 bench/llm_decode_cpu.py [build/tg]
    LLAMA_BENCH=/path/to/llama-bench ...   (the reference; without it: skipped)
    BENCH_LLM_DIR=DIR   (models DIR/llama125m-TYPE.gguf and qwen05b-q4_k_m.gguf, as bench_llm makes them;
                         default build/bench/models)
    BENCH_LLM_TYPES=q4_k_m,q6_k ...   (default: every type bench_llm makes; 05b-q4_k_m
                                       is the 0.5B qwen2-shaped model)
    BENCH_CPU_REPS=3   (runs per side; the median is printed)

Per file:

  bench llm_decode_cpu type=T tg_ms=A llama_ms=B ratio=B/A

A and B: user + system CPU ms per decoded token of one thread
(TG_THREADS=1 `tg bench-llm -r 1`, `llama-bench -t 1 -r 1`), from the
difference of a 144-token and a 16-token decode (so loading, compiling and
the warm-up cancel). ratio > 1: tg spends less CPU per token.
"""
import os
import statistics
import subprocess
import sys

TYPES = ["f32", "f16", "bf16", "q8_0", "q6_k", "q5_k_m", "q4_k_m", "q4_0", "q4_1", "q5_0", "q5_1",
         "iq4_xs", "iq4_nl", "q3_k_m", "q2_k", "05b-q4_k_m"]
SHORT, LONG = 16, 144


def cpu_seconds(cmd, env):
    """user + system CPU seconds of cmd (and its children)."""
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, ru = os.wait4(p.pid, 0)
    err = p.stderr.read().decode(errors="replace")
    p.stderr.close()
    if status != 0:
        raise RuntimeError(f"{cmd[0]} failed ({status}): {err.strip()[-300:]}")
    return ru.ru_utime + ru.ru_stime


def per_token_ms(make_cmd, env, reps):
    cpu_seconds(make_cmd(SHORT), env)   # warm the page cache (and tg's compile cache)
    cpu_seconds(make_cmd(LONG), env)
    v = []
    for _ in range(reps):
        a = cpu_seconds(make_cmd(SHORT), env)
        b = cpu_seconds(make_cmd(LONG), env)
        v.append((b - a) / (LONG - SHORT) * 1000)
    return statistics.median(v)


def main():
    tg = sys.argv[1] if len(sys.argv) > 1 else "build/tg"
    llama = os.environ.get("LLAMA_BENCH")
    mdir = os.environ.get("BENCH_LLM_DIR", "build/bench/models")
    reps = int(os.environ.get("BENCH_CPU_REPS", "3"))
    types = [t for t in os.environ.get("BENCH_LLM_TYPES", ",".join(TYPES)).split(",") if t]
    if not llama or not os.access(llama, os.X_OK):
        print("bench llm_decode_cpu skipped reason=no_LLAMA_BENCH")
        return 0
    env = dict(os.environ, TG_THREADS="1")
    for t in types:
        # as bench_llm names them: 05b-TYPE is the 0.5B qwen2-shaped model
        path = os.path.join(mdir, f"qwen05b-{t[4:]}.gguf" if t.startswith("05b-") else f"llama125m-{t}.gguf")
        if not os.path.exists(path):
            print(f"bench llm_decode_cpu type={t} skipped reason=no_model_{path.replace(' ', '_')}")
            continue
        tg_ms = per_token_ms(lambda n: [tg, "bench-llm", "-m", path, "-p", "1", "-n", str(n), "-r", "1"], env, reps)
        ll_ms = per_token_ms(lambda n: [llama, "-m", path, "-t", "1", "-p", "0", "-n", str(n), "-r", "1"], env, reps)
        print(f"bench llm_decode_cpu type={t} tg_ms={tg_ms:.2f} llama_ms={ll_ms:.2f} ratio={ll_ms / tg_ms:.2f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
