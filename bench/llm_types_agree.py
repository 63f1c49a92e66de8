#!/usr/bin/env python3
"""llm_types_agree.py: does tg compute what llama.cpp computes, file type by
file type? On bench_llm's models (the random 125M llama in every type, and
the 0.5B Q4_K_M mix, made by `tg llm-init` under build/bench/models):

  - greedy text: `tg run -n 64 --temp 0` against llama-completion's on the
    same prompt (the text after the prompt must be the same);
  - perplexity: `tg perplexity -c 128 --chunks 4` against llama-perplexity
    with the same arguments on tests/data/ppl_story.txt (the final
    estimates must agree within 0.5%, as issue [2.2] asks).

    python3 bench/llm_types_agree.py [build/tg]
    LLAMA_COMPLETION=/path/llama-completion LLAMA_PERPLEXITY=/path/llama-perplexity ...
    BENCH_LLM_DIR=DIR (default build/bench/models; make bench's bench_llm makes them)

Per file it prints

  bench llm_agree type=T same_text=0|1 first_diff=CHAR [llama_b1_same=0|1 tg_eq_b1=0|1] ppl_tg=P ppl_llama=Q diff_pct=D ok=0|1

A quantized random model can flip a near tie and then diverge, and there
llama.cpp's own text can depend on its batch size: where the texts differ,
llama-completion runs again with batch size 1 (-b 1 -ub 1, the prompt a
token at a time, as tg's decode steps see it): llama_b1_same says whether
llama.cpp's two texts agree, tg_eq_b1 whether tg's equals the batch-1 one.
Perplexity is then the judge, so ok= is the perplexity's agreement. Without the llama.cpp tools the lines
say skipped and why.
"""
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
PROMPT = "Once upon a time, in a small town by the sea, there lived"
TEXT = os.path.join(HERE, "..", "tests", "data", "ppl_story.txt")
PPL_ARGS = ["-c", "128", "--chunks", "4"]


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    return p.returncode, p.stdout, p.stderr


def final_ppl(out):
    m = re.search(r"Final estimate: PPL = ([0-9.]+)", out)
    return float(m.group(1)) if m else None


def generated(out):
    """llama-completion echoes the prompt (in its own detokenization): what follows its last word."""
    last = PROMPT.split()[-1]
    return out[out.find(last) + len(last):].rstrip("\n") if last in out else out


def main():
    tg = sys.argv[1] if len(sys.argv) > 1 else "build/tg"
    models = os.environ.get("BENCH_LLM_DIR", os.path.join(os.path.dirname(tg), "bench", "models"))
    comp, ppl = os.environ.get("LLAMA_COMPLETION"), os.environ.get("LLAMA_PERPLEXITY")
    files = sorted(f for f in os.listdir(models) if f.endswith(".gguf")) if os.path.isdir(models) else []
    if not files:
        print(f"bench llm_agree skipped reason=no_models_in_{models}_(make bench's bench_llm makes them)")
        return 0
    if not comp or not ppl:
        print("bench llm_agree skipped reason=set_LLAMA_COMPLETION_and_LLAMA_PERPLEXITY")
        return 0
    bad = 0
    for f in files:
        path = os.path.join(models, f)
        kind = f[:-5].replace("llama125m-", "").replace("qwen05b-", "05b-")
        rc, tg_text, err = run([tg, "run", "-m", path, "-p", PROMPT, "-n", "64", "--temp", "0"])
        rc2, ll_text, err2 = run([comp, "-m", path, "-p", PROMPT, "-n", "64", "--temp", "0", "-no-cnv", "-t", "2"])
        if rc or rc2:
            print(f"bench FAIL llm_agree type={kind}: tg run {rc}, llama-completion {rc2}: {(err or err2).strip()[-200:]}")
            bad += 1
            continue
        ll_gen = generated(ll_text)
        tg_gen = tg_text.rstrip("\n")
        same = ll_gen == tg_gen
        first = next((i for i, (a, b) in enumerate(zip(tg_gen, ll_gen)) if a != b), min(len(tg_gen), len(ll_gen)))
        b1 = ""
        if not same:
            rc3, b1_text, _ = run([comp, "-m", path, "-p", PROMPT, "-n", "64", "--temp", "0", "-no-cnv", "-t", "2", "-b", "1", "-ub", "1"])
            if rc3 == 0:
                b1_gen = generated(b1_text)
                b1 = f" llama_b1_same={int(b1_gen == ll_gen)} tg_eq_b1={int(b1_gen == tg_gen)}"
        rc, out, err = run([tg, "perplexity", "-m", path, "-f", TEXT] + PPL_ARGS)
        rc2, out2, err2 = run([ppl, "-m", path, "-f", TEXT, "-t", "2"] + PPL_ARGS)
        p_tg, p_ll = final_ppl(out + err), final_ppl(out2 + err2)
        if p_tg is None or p_ll is None:
            print(f"bench FAIL llm_agree type={kind}: no final estimate (tg {rc}, llama-perplexity {rc2})")
            bad += 1
            continue
        diff = 100 * abs(p_tg - p_ll) / p_ll
        ok = diff <= 0.5
        bad += not ok
        print(f"bench llm_agree type={kind} same_text={int(same)} first_diff={-1 if same else first}{b1} "
              f"ppl_tg={p_tg:.3f} ppl_llama={p_ll:.3f} diff_pct={diff:.3f} ok={int(ok)}", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
