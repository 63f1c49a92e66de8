#!/usr/bin/env python3
"""bench_serve_parallel.py: `tg serve`'s aggregate throughput with many
clients at once (continuous batching over parallel slots), measured with the
official openai client, beside llama-server on the same file when one is
given.

    TG_BENCH_SERVE_MODEL=model.gguf python3 bench/bench_serve_parallel.py [build/tg]
    LLAMA_SERVER=/path/to/llama-server ... (optional: the same load against it)
    BENCH_THREADS=1 ... (optional: TG_THREADS for tg, -t/-tb for llama-server;
                         on a busy machine one thread each is the steadier
                         comparison: spinning worker threads suffer most)

For each server: one stream of N_TOKENS (64) tokens alone, then STREAMS (8)
streams of N_TOKENS at once; it prints

  bench serve_parallel server=tg streams=8 tokens=64 tok_s_1=A tok_s_8=B ttft_8_ms=T ratio=B/A

(ratio: aggregate tok/s of 8 streams over one stream's, >= 3 is the goal of
[2.4]) and, with llama-server, a line with ratio = tg's tok_s_8 over
llama-server's. Greedy sampling; a stream that ends early (an end token)
counts the tokens it gave. Without the model or the openai package it prints a
"skipped" line.
"""
import os
import subprocess
import sys
import threading
import time
import urllib.request

from soak_serve import free_port   # bench/ is the script's directory

STREAMS = int(os.environ.get("BENCH_STREAMS", "8"))
N_TOKENS = int(os.environ.get("BENCH_TOKENS", "64"))
# short prompts (completions, no chat template), so the figure is the
# decoding that batching shares; the time to first text is printed beside
PROMPTS = ["The robot who learned to paint", "Rainbows form when", "Ten uses for a paperclip:",
           "At night the old city", "A good cup of tea needs", "The history of bicycles",
           "A poem about the sea:", "Bees make honey by"]


def wait_ready(port, proc, timeout=900):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError("server exited with %s" % proc.returncode)
        try:
            with urllib.request.urlopen("http://127.0.0.1:%d/health" % port, timeout=5) as r:
                if r.status == 200:
                    return
        except Exception:  # noqa: BLE001 - not up yet
            pass
        time.sleep(0.5)
    raise RuntimeError("server did not come up")


def one_stream(client, prompt, out, i):
    try:
        stream_once(client, prompt, out, i)
    except Exception as e:  # noqa: BLE001 - reported by load()
        out[i] = e


def stream_once(client, prompt, out, i):
    t0 = time.time()
    first, n = None, 0
    stream = client.completions.create(model="m", prompt=prompt, max_tokens=N_TOKENS, temperature=0, stream=True,
                                       stream_options={"include_usage": True})
    for c in stream:
        if first is None and c.choices and c.choices[0].text:
            first = time.time() - t0
        if c.usage:
            n = c.usage.completion_tokens
    out[i] = (n, first if first is not None else time.time() - t0, time.time() - t0)


def load(client, streams):
    out = [None] * streams
    ts = [threading.Thread(target=one_stream, args=(client, PROMPTS[i % len(PROMPTS)], out, i)) for i in range(streams)]
    t0 = time.time()
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    wall = time.time() - t0
    errs = [o for o in out if isinstance(o, Exception)]
    if errs:
        raise RuntimeError("%d of %d streams failed: %r" % (len(errs), streams, errs[0]))
    toks = sum(o[0] for o in out)
    return toks / wall, 1000 * sum(o[1] for o in out) / streams, toks


def measure(name, cmd, port, env=None):
    import openai
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    try:
        wait_ready(port, proc)
        client = openai.OpenAI(base_url="http://127.0.0.1:%d/v1" % port, api_key="none", max_retries=0, timeout=900)
        load(client, STREAMS)   # warm-up: every batch size and prompt length once
        one, ttft1, _ = load(client, 1)
        many, ttft, toks = load(client, STREAMS)
        print("bench serve_parallel server=%s streams=%d tokens=%d tok_s_1=%.2f tok_s_%d=%.2f ttft_1_ms=%.0f ttft_%d_ms=%.0f "
              "generated=%d ratio=%.2f" % (name, STREAMS, N_TOKENS, one, STREAMS, many, ttft1, STREAMS, ttft, toks, many / one),
              flush=True)
        return many
    finally:
        proc.terminate()
        proc.wait()


def main():
    tg = sys.argv[1] if len(sys.argv) > 1 else "build/tg"
    model = os.environ.get("TG_BENCH_SERVE_MODEL")
    if not model or not os.path.exists(model):
        print("bench serve_parallel skipped reason=set_TG_BENCH_SERVE_MODEL_to_a_gguf_of_0.5B_or_more")
        return 0
    try:
        import openai  # noqa: F401
    except ImportError:
        print("bench serve_parallel skipped reason=no_openai_package")
        return 0
    ctx = STREAMS * 512
    port = free_port()
    threads = os.environ.get("BENCH_THREADS")
    env = dict(os.environ, TG_THREADS=threads) if threads else None
    tg_rate = measure("tg", [tg, "serve", "-m", model, "--port", str(port), "--parallel", str(STREAMS), "-c", str(ctx)], port, env)
    llama = os.environ.get("LLAMA_SERVER")
    if llama:
        port = free_port()
        extra = ["-t", threads, "-tb", threads] if threads else []
        ref = measure("llama-server", [llama, "-m", model, "--port", str(port), "-np", str(STREAMS), "-c", str(ctx)] + extra, port)
        print("bench serve_parallel_vs_llama streams=%d tg_tok_s=%.2f llama_tok_s=%.2f ratio=%.2f" % (STREAMS, tg_rate, ref, tg_rate / ref))
    return 0


if __name__ == "__main__":
    sys.exit(main())
