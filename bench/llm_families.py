#!/usr/bin/env python3
"""llm_families.py: decode and prefill speed of every model family tg runs,
each on a random 125M-class file in llama.cpp's exact layout, beside
llama.cpp's llama-bench on the same files (issue [2.3]: decode >= 1.0x).

The files come from tests/gen/gen_llm.py's builders (the ones that write the
tiny goldens checked against llama.cpp), at the shape of a real small model
of each family scaled to 125M-class (dim 640-768, 12-18 layers, vocabulary
32000; the MoE families with 16 small experts, 4 used per token), weights
with standard deviation 0.02, and llama.cpp's dummy vocabulary
(tokenizer.ggml.model "none", <arch>.vocab_size) so llama.cpp loads them.
Each is written in F32 once, then `tg quantize` (bit-identical to
llama-quantize) makes F16, Q8_0 and Q4_K_M from it; a tensor that cannot
take a type (rows not a multiple of 256 for the K types, gpt-oss's MXFP4
experts) gets llama-quantize's fallback, and the line's `types=` says what
the file holds. Files are kept under build/bench/families (remade when this
script's configuration of the family changes); the F32 sources are deleted.

    python3 bench/llm_families.py [build/tg]
    LLAMA_BENCH=/path/to/llama-bench   (the reference; without it: tg's figures, reason=no LLAMA_BENCH)
    BENCH_FAMILIES=gemma2,qwen35 ...   (default: every family below)
    BENCH_FAMILY_TYPES=f16,q8_0,q4_k_m (the default)
    BENCH_FAMILY_DIR=DIR               (default build/bench/families)
    BENCH_FAMILY_REPS=3                (-r of both benches)
    BENCH_FAMILY_THREADS=2             (threads of both: TG_THREADS and llama-bench -t)
    BENCH_FAMILY_CPU=1                 (also the CPU time per decoded token, as llm_decode_cpu.py;
                                        only: that alone; BENCH_FAMILY_CPU_REPS=3 its repetitions;
                                        BENCH_FAMILY_BASE=other/tg: that build's too, file by file
                                        beside this one's: base_ms=, base_ratio=)

Per family and type, after `tg bench-llm -m FILE -p 64 -n 32 -r 3` and
`llama-bench -m FILE -t 2 -p 64 -n 32 -r 3` (one after the other, never at
the same time):

  bench llm_family family=F type=T params=P types=MIX tg_decode=X llama_decode=Y ratio_decode=X/Y tg_pp64=A llama_pp64=B ratio_pp64=A/B

tok/s (tg32 decode; pp64 prefill: one 64-token prompt), median of the
repetitions for tg, llama-bench's mean for llama.cpp; as on every bench line,
ratio above 1 means tg is faster. params: the file's parameter count
(the MoE families: all experts).

Two threads on a 2-core VM shared with other work is a fragile measure:
while another process holds a core, llama.cpp's threads (which spin at each
barrier) lose far more than tg's (llama-bench F16 decode here: 1.4-7 tok/s
against 72 on a quiet machine). BENCH_FAMILY_CPU=1 adds, per file, the
measure that holds under load (bench/llm_decode_cpu.py's): the user +
system CPU time of one thread per decoded token, from a 144-token less a
16-token decode (`TG_THREADS=1 tg bench-llm -p 1 -n N -r 1`,
`llama-bench -t 1 -p 0 -n N -r 1`), median of BENCH_FAMILY_CPU_REPS:

  bench llm_family_cpu family=F type=T tg_ms=A llama_ms=B ratio=B/A
"""
import hashlib
import math
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "tests", "gen"))

TYPES = ["f16", "q8_0", "q4_k_m"]
N_PROMPT, N_GEN = 64, 32

# The shared shape: a 125M llama (bench_llm's), weights of std 0.02
BASE = dict(dim=768, layers=12, heads=12, kv=4, hd=64, ffn=2048, vocab=32000, ctx=4096, wscale=0.02 / 0.3, dummy_vocab=True)
# MoE families: 16 experts of 128, 4 used per token (about 60M of the 125M in experts)
MOE = dict(experts=16, used=4, eff=128)
ATTN_F_PHI3 = math.sqrt(1 + math.log(131072 / 4096) / math.log(4096))

# name: (architecture, gen_llm.py's cfg, seed); traits as gen_llm.py's goldens
# of the same family, shapes from a real small model of it
FAMILIES = {
    # the reference shape: what bench_llm's `tg llm-init` llama is
    "llama": ("llama", dict(BASE, neox=False), 101),
    # Gemma 2 (2B's proportions): 256-wide heads, softcaps 50 / 30, every other layer sliding over 4096
    "gemma2": ("gemma2", dict(BASE, heads=4, kv=2, hd=256, neox=True, gemma=2, attn_cap=50.0, final_cap=30.0,
                              window=4096, period=2), 102),
    # Gemma 3 270M with a 32000 vocabulary: dim 640, 18 layers, 4 heads of 256, one kv head,
    # 5 sliding layers (window 512) of 6, rope base 1e6 on the global ones
    "gemma3": ("gemma3", dict(BASE, dim=640, layers=18, heads=4, kv=1, hd=256, neox=True, gemma=3, qk_norm=True,
                              window=512, period=6, base=1e6), 103),
    # Phi-3-mini's layout: fused q|k|v and gate|up, MHA, LongRoPE over an original 4096
    "phi3": ("phi3", dict(BASE, kv=12, neox=True, phi3=True, ctx=131072, phi3_orig=4096, phi3_window=262144,
                          long=[1.0 + 0.1 * i for i in range(32)], short=[1.0 + 0.01 * i for i in range(32)],
                          rp=dict(rd=64, base=10000.0, neox=True, mscale=ATTN_F_PHI3)), 104),
    # gpt-oss: MXFP4 experts with biases, sinks, every other layer sliding over 128, YaRN 32x over 4096
    "gptoss": ("gpt-oss", dict(BASE, **MOE, neox=True, bias=True, oai=True, ffn_norm_pa=True, window=128, period=2,
                               ctx=131072, base=150000.0,
                               rp=dict(rd=64, base=150000.0, neox=True, freq_scale=1 / 32, ext=1.0, orig=4096)), 105),
    # GLM-4.5 MoE: a leading dense layer, sigmoid routing, a shared expert, half the head rotated
    "glm4moe": ("glm4moe", dict(BASE, **MOE, neox=True, bias=True, qk_norm=True, dense=1, sigmoid=True, gating_default=True,
                                norm_w=True, scale=2.5, shared=128, ffn_norm_pa=True,
                                rp=dict(rd=32, base=10000.0, neox=True)), 106),
    # DeepSeek-V3's block (MLA with a low-rank q) at this width: latent 256, q rank 384, 64 + 32 rope dims
    "deepseek2": ("deepseek2", dict(BASE, **MOE, heads=12, kv=12, hd=96, mla=True, kv_lora=256, q_lora=384, rope=32, hv=64,
                                    dense=1, sigmoid=True, norm_w=True, scale=2.5, shared=128), 107),
    # Qwen3 MoE: heads of 128, per-head q/k norms
    "qwen3moe": ("qwen3moe", dict(BASE, **MOE, heads=8, kv=4, hd=128, neox=True, qk_norm=True, norm_w=True), 108),
    # Qwen1.5 MoE: q/k/v biases, a wide shared expert behind a sigmoid gate
    "qwen2moe": ("qwen2moe", dict(BASE, **MOE, neox=True, bias=True, norm_w=False, shared=512), 109),
    # Qwen3.5 (Qwen3-Next's proportions): 3 gated delta-net layers of 4 (4 k heads, 8 v heads of 128,
    # conv 4), gated attention (8 heads of 128, 2 kv), a quarter of each head rotated by M-RoPE
    "qwen35": ("qwen35", dict(BASE, heads=8, kv=2, hd=128, neox=True, qk_norm=True, gated=True, ffn_norm_pa=True, rd=32,
                              interval=4, sections=[6, 5, 5, 0], gdn=dict(hk=4, hv=8, d=128, K=4)), 110),
    "qwen35moe": ("qwen35moe", dict(BASE, **MOE, heads=8, kv=2, hd=128, neox=True, qk_norm=True, gated=True, ffn_norm_pa=True,
                                    rd=32, interval=4, sections=[6, 5, 5, 0], gdn=dict(hk=4, hv=8, d=128, K=4),
                                    norm_w=True, shared=128), 111),
}


def run(cmd, env=None, timeout=1800):
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
    if p.returncode != 0:
        raise RuntimeError(f"{os.path.basename(cmd[0])} failed ({p.returncode}): {(p.stderr or p.stdout).strip()[-300:]}")
    return p.stdout


def file_mix(path):
    """params, and the tensor types of a GGUF as 'Q4_K*72+Q6_K*1+F32*25'."""
    import gguf
    r = gguf.GGUFReader(path)
    counts, params = {}, 0
    for t in r.tensors:
        n = t.tensor_type.name
        counts[n] = counts.get(n, 0) + 1
        params += int(t.n_elements)
    return params, "+".join(f"{k}*{v}" for k, v in sorted(counts.items(), key=lambda kv: -kv[1]))


def make_files(tg, name, mdir, types):
    """Writes MDIR/NAME-TYPE.gguf for each type (kept while the family's
    configuration is unchanged); returns {type: path or an error}."""
    import gen_llm
    gen_llm.ONLY = set()   # it read this script's arguments (the tg path) as model names
    arch, cfg, seed = FAMILIES[name]
    stamp = hashlib.sha1(repr((arch, sorted(cfg.items()), seed)).encode()).hexdigest()[:12]
    stamp_path = os.path.join(mdir, f"{name}.stamp")
    old = open(stamp_path).read() if os.path.exists(stamp_path) else ""
    out = {t: os.path.join(mdir, f"{name}-{t}.gguf") for t in types}
    todo = [t for t in types if old != stamp or not os.path.exists(out[t])]
    if not todo:
        return out
    if old != stamp:
        for t in TYPES:
            if os.path.exists(os.path.join(mdir, f"{name}-{t}.gguf")):
                os.remove(os.path.join(mdir, f"{name}-{t}.gguf"))
    src = os.path.join(mdir, f"llm_{name}.gguf")
    old_stdout, sys.stdout = sys.stdout, open(os.devnull, "w")   # make() says what it wrote
    try:
        gen_llm.make(name, arch, cfg, seed, out=mdir, reference=False)
    finally:
        sys.stdout.close()
        sys.stdout = old_stdout
    for t in todo:
        try:
            run([tg, "quantize", src, out[t], t.upper()])
        except RuntimeError as e:
            out[t] = e
    os.remove(src)
    with open(stamp_path, "w") as f:
        f.write(stamp)
    return out


def tg_bench(tg, path, reps, threads):
    s = run([tg, "bench-llm", "-m", path, "-p", str(N_PROMPT), "-n", str(N_GEN), "-r", str(reps)],
            env=dict(os.environ, TG_THREADS=threads))
    pp = re.search(rf"^pp{N_PROMPT}: ([0-9.]+) tok/s", s, re.M)
    dec = re.search(rf"^tg{N_GEN}: ([0-9.]+) tok/s", s, re.M)
    if not pp or not dec:
        raise RuntimeError(f"tg bench-llm printed no speeds: {s.strip()[-200:]}")
    return float(dec.group(1)), float(pp.group(1))


def llama_bench(bin, path, reps, threads):
    s = run([bin, "-m", path, "-t", threads, "-p", str(N_PROMPT), "-n", str(N_GEN), "-r", str(reps), "-o", "csv"])
    rows = [l.replace('"', "").split(",") for l in s.strip().splitlines()]
    head = rows[0]
    ts, gen = head.index("avg_ts"), head.index("n_gen")
    dec = pp = None
    for r in rows[1:]:
        if int(r[gen]) > 0:
            dec = float(r[ts])
        else:
            pp = float(r[ts])
    if dec is None or pp is None:
        raise RuntimeError(f"llama-bench printed no speeds: {s.strip()[-200:]}")
    return dec, pp


def cpu_line(tg, llama, name, t, path, reps):
    from llm_decode_cpu import per_token_ms
    env = dict(os.environ, TG_THREADS="1")
    base = os.environ.get("BENCH_FAMILY_BASE")
    base_ms = per_token_ms(lambda n: [base, "bench-llm", "-m", path, "-p", "1", "-n", str(n), "-r", "1"], env, reps) if base else None
    tg_ms = per_token_ms(lambda n: [tg, "bench-llm", "-m", path, "-p", "1", "-n", str(n), "-r", "1"], env, reps)
    ll_ms = per_token_ms(lambda n: [llama, "-m", path, "-t", "1", "-p", "0", "-n", str(n), "-r", "1"], env, reps)
    old = f" base_ms={base_ms:.2f} base_ratio={ll_ms / base_ms:.2f}" if base else ""
    print(f"bench llm_family_cpu family={name} type={t} tg_ms={tg_ms:.2f} llama_ms={ll_ms:.2f} ratio={ll_ms / tg_ms:.2f}{old}",
          flush=True)


def main():
    tg = sys.argv[1] if len(sys.argv) > 1 else "build/tg"
    llama = os.environ.get("LLAMA_BENCH")
    if llama and not os.access(llama, os.X_OK):
        llama = None
    mdir = os.environ.get("BENCH_FAMILY_DIR", os.path.join(os.path.dirname(tg) or ".", "bench", "families"))
    reps = int(os.environ.get("BENCH_FAMILY_REPS", "3"))
    threads = os.environ.get("BENCH_FAMILY_THREADS", "2")
    cpu = os.environ.get("BENCH_FAMILY_CPU", "0")
    cpu_reps = int(os.environ.get("BENCH_FAMILY_CPU_REPS", "3"))
    names = [n for n in os.environ.get("BENCH_FAMILIES", ",".join(FAMILIES)).split(",") if n]
    types = [t for t in os.environ.get("BENCH_FAMILY_TYPES", ",".join(TYPES)).split(",") if t]
    try:
        import gguf  # noqa: F401  (gen_llm.py writes with it)
        import numpy  # noqa: F401
    except ImportError as e:
        print(f"bench llm_family skipped reason=no_{e.name}_module (pip install gguf numpy)")
        return 0
    bad = [n for n in names if n not in FAMILIES] + [t for t in types if t not in TYPES]
    if bad:
        print(f"llm_families.py: unknown family or type {', '.join(bad)} (families: {', '.join(FAMILIES)}; types: {', '.join(TYPES)})",
              file=sys.stderr)
        return 2
    os.makedirs(mdir, exist_ok=True)
    fail = 0
    for name in names:
        files = make_files(tg, name, mdir, types)
        for t in types:
            head = f"bench llm_family family={name} type={t}" + (f" threads={threads}" if threads != "2" else "")
            if isinstance(files[t], Exception):
                print(f"{head} skipped reason=tg_quantize: {files[t]}", flush=True)
                continue
            params, mix = file_mix(files[t])
            head += f" params={params / 1e6:.1f}M types={mix}"
            if cpu == "only" and llama:
                try:
                    cpu_line(tg, llama, name, t, files[t], cpu_reps)
                except (RuntimeError, subprocess.TimeoutExpired) as e:
                    print(f"bench llm_family_cpu family={name} type={t} FAIL: {e}", flush=True)
                    fail = 1
                continue
            try:
                tg_dec, tg_pp = tg_bench(tg, files[t], reps, threads)
            except (RuntimeError, subprocess.TimeoutExpired) as e:
                print(f"{head} FAIL tg: {e}", flush=True)
                fail = 1
                continue
            if not llama:
                print(f"{head} tg_decode={tg_dec:.1f} tg_pp64={tg_pp:.1f} reason=no LLAMA_BENCH", flush=True)
                continue
            time.sleep(1)   # tg's worker threads gone before llama.cpp's start
            try:
                ll_dec, ll_pp = llama_bench(llama, files[t], reps, threads)
            except (RuntimeError, subprocess.TimeoutExpired) as e:
                print(f"{head} tg_decode={tg_dec:.1f} tg_pp64={tg_pp:.1f} reason=llama-bench: {e}", flush=True)
                continue
            print(f"{head} tg_decode={tg_dec:.1f} llama_decode={ll_dec:.1f} ratio_decode={tg_dec / ll_dec:.2f} "
                  f"tg_pp64={tg_pp:.1f} llama_pp64={ll_pp:.1f} ratio_pp64={tg_pp / ll_pp:.2f}", flush=True)
            time.sleep(1)
            if cpu == "1":
                try:
                    cpu_line(tg, llama, name, t, files[t], cpu_reps)
                except (RuntimeError, subprocess.TimeoutExpired) as e:
                    print(f"bench llm_family_cpu family={name} type={t} FAIL: {e}", flush=True)
                    fail = 1
    return fail


if __name__ == "__main__":
    sys.exit(main())
