"""Tiny random transformer GGUFs (written with gguf-py) and their logits from
an independent numpy forward pass (float64), for tests/test_llm.c.

Models: a llama (GQA, adjacent-pair RoPE), a qwen3moe (per-head q/k norms,
NEOX RoPE, 4 experts top-2 with renormalized softmax routing), a qwen2moe
(q/k/v biases, softmax routing without renormalization, a shared expert
behind a sigmoid gate) and a deepseek2 (multi-head latent attention with a
low-rank q, a dense first layer, then sigmoid routing with an expert bias,
renormalized and scaled weights, and a shared expert); a gemma2 (norms before
and after attention and feed-forward, GeGLU, the embedding scaled by sqrt(dim)
and tied to the output, score and logit softcaps, every other layer sliding
over a 4-token window, key_length 12 != dim / heads) and a gemma3 (per-head
q/k norms, 5 sliding layers of 6 with rope base 10000 against the global
layers' 1e6 and linear scaling 2). Gemma's GGUF holds its norm weights plus
one (llama.cpp's converter adds it), so the reference uses plain RMS norms
too. Each file gets 7 prompt tokens then 3 single tokens;
the goldens hold the logits after the prompt and after each single token.

Then (at the end of this file) phi3 (fused q|k|v and gate|up, partial
rotary, LongRoPE factors and attention factor), YaRN on a llama and on
deepseek2 (with yarn_log_multiplier), gpt-oss (MXFP4 experts with biases,
softmax over the chosen experts, clamped SwiGLU, attention sinks) and
glm4moe (sigmoid routing, shared expert, partial rope, a skipped MTP
layer); greedy(): argmax decoding runs whose logits and tokens are goldens
too (*.logits.bin, *.greedy.bin), some of them 110 positions long to pass
the sliding layers' rings; llama_q8kv's reference keeps its keys and values
as a q8_0 cache does (gguf-py's Q8_0, bit-exact with ggml), and gpt-oss's
its experts' activations as llama.cpp's q8_0. Run: python3 tests/gen/gen_llm.py [name ...] (gguf-py and
numpy from PyPI; names: only those models).
"""
import os
import sys
import numpy as np
import gguf

MXFP4 = gguf.GGMLQuantizationType.MXFP4

ONLY = set(sys.argv[1:])  # python3 tests/gen/gen_llm.py [name ...]: only those models
OUT = os.path.join(os.path.dirname(__file__), "..", "goldens")
PROMPT = [1, 5, 9, 13, 17, 21, 25]
NEXT = [30, 2, 41]


def rms(x, w, eps):
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * w


def rope(x, pos, base, neox):
    # x (T, H, hd)
    hd = x.shape[-1]
    half = hd // 2
    inv = base ** (-2.0 * np.arange(half) / hd)
    ang = np.asarray(pos)[:, None] * inv[None, :]
    c, s = np.cos(ang)[:, None, :], np.sin(ang)[:, None, :]
    if neox:
        x0, x1 = x[..., :half], x[..., half:]
        return np.concatenate([x0 * c - x1 * s, x0 * s + x1 * c], -1)
    x0, x1 = x[..., 0::2], x[..., 1::2]
    y = np.empty_like(x)
    y[..., 0::2] = x0 * c - x1 * s
    y[..., 1::2] = x0 * s + x1 * c
    return y


def rope_ggml(x, pos, rd, base, neox, freq_scale=1.0, factors=None, ext=0.0, orig=0, beta_fast=32.0, beta_slow=1.0, mscale=1.0):
    """ggml_rope_ext on the first rd dims of each head: angles p * base^(-2i/rd)
    / factor_i, times freq_scale, with YaRN (ext != 0) mixed back toward the
    unscaled angle by a ramp between the correction dims of beta_fast and
    beta_slow, its magnitude 1 + 0.1 ln(1/freq_scale); cos and sin times mscale."""
    half = rd // 2
    i = np.arange(half)
    extrap = np.asarray(pos, dtype=np.float64)[:, None] * base ** (-2.0 * i / rd)[None, :]
    if factors is not None:
        extrap = extrap / np.asarray(factors, dtype=np.float64)[None, :]
    theta = freq_scale * extrap
    if ext:
        corr = lambda beta: rd * np.log(orig / (beta * 2 * np.pi)) / (2 * np.log(base))
        lo, hi = max(0.0, np.floor(corr(beta_fast))), min(rd - 1.0, np.ceil(corr(beta_slow)))
        mix = (1 - np.clip((i - lo) / max(0.001, hi - lo), 0, 1)) * ext
        theta = theta * (1 - mix) + extrap * mix
        mscale = mscale * (1 + 0.1 * np.log(1 / freq_scale))
    c, s = (np.cos(theta) * mscale)[:, None, :], (np.sin(theta) * mscale)[:, None, :]
    rot, rest = x[..., :rd], x[..., rd:]
    if neox:
        x0, x1 = rot[..., :half], rot[..., half:]
        y = np.concatenate([x0 * c - x1 * s, x0 * s + x1 * c], -1)
    else:
        x0, x1 = rot[..., 0::2], rot[..., 1::2]
        y = np.empty_like(rot)
        y[..., 0::2] = x0 * c - x1 * s
        y[..., 1::2] = x0 * s + x1 * c
    return np.concatenate([y, rest], -1)


def imrope(x, pos, rd, sections, base=10000.0):
    """ggml's IMROPE (NEOX pairs) on the first rd dims with positions (p, p,
    p, 0): pair i's section is interleaved t, h, w within the sizes, else the
    4th (angle 0)."""
    half = rd // 2
    ang = np.asarray(pos, dtype=np.float64)[:, None] * base ** (-2.0 * np.arange(half) / rd)[None, :]
    s0, s1, s2, s3 = sections
    for i in range(half):
        sec = i % (s0 + s1 + s2 + s3)
        moves = (sec % 3 == 1 and sec < 3 * s1) or (sec % 3 == 2 and sec < 3 * s2) or (sec % 3 == 0 and sec < 3 * s0)
        if not moves:
            ang[:, i] = 0
    c, s = np.cos(ang)[:, None, :], np.sin(ang)[:, None, :]
    rot, rest = x[..., :rd], x[..., rd:]
    x0, x1 = rot[..., :half], rot[..., half:]
    return np.concatenate([x0 * c - x1 * s, x0 * s + x1 * c, rest], -1)


def gelu(x):  # tanh approximation, as ggml_gelu
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))


def softcap(x, cap):
    return cap * np.tanh(x / cap) if cap else x


def silu(x):
    return x / (1 + np.exp(-x))


def softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def q8_0(x):
    """x (..., n) through ggml's Q8_0 (gguf-py's bit-exact quantizer) and back."""
    a = np.ascontiguousarray(x, dtype=np.float32)
    q = gguf.quants.quantize(a, gguf.GGMLQuantizationType.Q8_0)
    return gguf.quants.dequantize(q, gguf.GGMLQuantizationType.Q8_0).reshape(a.shape).astype(np.float64)


class Model:
    def __init__(self, cfg, w):
        self.c, self.w = cfg, w
        self.k = [[] for _ in range(cfg["layers"])]
        self.v = [[] for _ in range(cfg["layers"])]
        if cfg.get("gdn"):  # a delta-net layer's states: the conv's last inputs, S (v heads, head_v, head_k)
            g = cfg["gdn"]
            C = 2 * g["hk"] * g["d"] + g["hv"] * g["d"]
            self.conv = [np.zeros((g["K"] - 1, C)) for _ in range(cfg["layers"])]
            self.S = [np.zeros((g["hv"], g["d"], g["d"])) for _ in range(cfg["layers"])]

    def recurrent(self, i):
        return bool(self.c.get("gdn")) and (i + 1) % self.c.get("interval", 4) != 0

    def gdn(self, i, h):
        """llama.cpp's gated delta-net layer, token by token: the causal
        depthwise conv over q|k|v with SiLU, L2-normed q and k (v head j reads
        k head j % k_heads), S = exp(g) S with g = softplus(alpha + dt) * a,
        S += beta (v - S k) k^T, o = S q / sqrt(head_k); then the gated norm
        rms(o) * silu(z) and the out-projection."""
        c, w, p, eps = self.c, self.w, f"blk.{i}.", 1e-5
        g = c["gdn"]
        Hk, Hv, D, K = g["hk"], g["hv"], g["d"], g["K"]
        T = h.shape[0]
        qkv = h @ w[p + "attn_qkv.weight"].T
        z = (h @ w[p + "attn_gate.weight"].T).reshape(T, Hv, D)
        beta = 1 / (1 + np.exp(-(h @ w[p + "ssm_beta.weight"].T)))
        a = h @ w[p + "ssm_alpha.weight"].T + w[p + "ssm_dt.bias"]
        gl = np.where(a > 20, a, np.log1p(np.exp(np.minimum(a, 20)))) * w[p + "ssm_a"]
        x = np.concatenate([self.conv[i], qkv])
        self.conv[i] = x[T:]
        W = w[p + "ssm_conv1d.weight"]  # (C, K)
        xc = silu(sum(x[j:j + T] * W[:, j] for j in range(K)))
        q = xc[:, :Hk * D].reshape(T, Hk, D)
        k = xc[:, Hk * D:2 * Hk * D].reshape(T, Hk, D)
        v = xc[:, 2 * Hk * D:].reshape(T, Hv, D)
        l2 = lambda t: t / np.sqrt((t * t).sum(-1, keepdims=True) + eps)
        q, k = l2(q)[:, np.arange(Hv) % Hk], l2(k)[:, np.arange(Hv) % Hk]
        S, o = self.S[i], np.zeros((T, Hv, D))
        for t in range(T):
            S = S * np.exp(gl[t])[:, None, None]
            d = (v[t] - np.einsum("hji,hi->hj", S, k[t])) * beta[t][:, None]
            S = S + d[:, :, None] * k[t][:, None, :]
            o[t] = np.einsum("hji,hi->hj", S, q[t]) / np.sqrt(D)
        self.S[i] = S
        o = rms(o, w[p + "ssm_norm.weight"], eps) * silu(z)
        return o.reshape(T, -1) @ w[p + "ssm_out.weight"].T

    def ffn(self, i, h):
        c, w = self.c, self.w
        p = f"blk.{i}."
        if not c.get("experts"):
            act = gelu if c.get("gemma") else silu
            return (act(h @ w[p + "ffn_gate.weight"].T) * (h @ w[p + "ffn_up.weight"].T)) @ w[p + "ffn_down.weight"].T
        if p + "ffn_gate.weight" in w:  # a leading dense layer
            return (silu(h @ w[p + "ffn_gate.weight"].T) * (h @ w[p + "ffn_up.weight"].T)) @ w[p + "ffn_down.weight"].T
        out = np.zeros_like(h)
        if c.get("oai"):  # gpt-oss: biases, softmax over the top k logits, clamped SwiGLU
            # the MXFP4 experts multiply activations quantized to q8_0, as
            # llama.cpp's mul_mat_id does (MXFP4's vec_dot_type)
            for t in range(h.shape[0]):
                logits = h[t] @ w[p + "ffn_gate_inp.weight"].T + w[p + "ffn_gate_inp.bias"]
                top = np.argsort(-logits, kind="stable")[: c["used"]]
                hq = q8_0(h[t])
                for e, we in zip(top, softmax(logits[top])):
                    g = w[p + "ffn_gate_exps.weight"][e] @ hq + w[p + "ffn_gate_exps.bias"][e]
                    u = w[p + "ffn_up_exps.weight"][e] @ hq + w[p + "ffn_up_exps.bias"][e]
                    g = np.minimum(g, 7.0)
                    act = g / (1 + np.exp(-1.702 * g)) * (np.clip(u, -7.0, 7.0) + 1)
                    out[t] += we * (w[p + "ffn_down_exps.weight"][e] @ q8_0(act) + w[p + "ffn_down_exps.bias"][e])
            return out
        for t in range(h.shape[0]):
            logits = h[t] @ w[p + "ffn_gate_inp.weight"].T
            probs = 1 / (1 + np.exp(-logits)) if c.get("sigmoid") else softmax(logits)
            sel = probs + w[p + "exp_probs_b.bias"] if p + "exp_probs_b.bias" in w else probs
            top = np.argsort(-sel, kind="stable")[: c["used"]]
            wt = probs[top]
            if c["norm_w"]:
                wt = wt / wt.sum()
            if c.get("scale"):
                wt = wt * c["scale"]
            for e, we in zip(top, wt):
                g = w[p + "ffn_gate_exps.weight"][e] @ h[t]
                u = w[p + "ffn_up_exps.weight"][e] @ h[t]
                out[t] += we * (w[p + "ffn_down_exps.weight"][e] @ (silu(g) * u))
            if p + "ffn_gate_shexp.weight" in w:
                s = (silu(w[p + "ffn_gate_shexp.weight"] @ h[t]) * (w[p + "ffn_up_shexp.weight"] @ h[t])) @ w[p + "ffn_down_shexp.weight"].T
                gate = 1 / (1 + np.exp(-(w[p + "ffn_gate_inp_shexp.weight"] @ h[t]))) if p + "ffn_gate_inp_shexp.weight" in w else 1.0
                out[t] += gate * s
        return out

    def swa(self, i):
        c = self.c
        return bool(c.get("window")) and i % c["period"] < c["period"] - 1

    def forward(self, toks, start, every=False):
        c, w = self.c, self.w
        T, H, KV, hd, eps = len(toks), c["heads"], c["kv"], c["hd"], 1e-5
        pos = list(range(start, start + T))
        x = w["token_embd.weight"][toks]
        if c.get("gemma"):
            x = x * np.sqrt(c["dim"])
        for i in range(c["layers"]):
            p = f"blk.{i}."
            h = rms(x, w[p + "attn_norm.weight"], eps)
            if self.recurrent(i):
                x = x + self.gdn(i, h)
                x = x + self.ffn(i, rms(x, w[p + "ffn_norm.weight"], eps))
                continue
            if c.get("mla"):
                q, k, v = self.mla(i, h, pos)
            else:
                q, k, v = self.mha(i, h, pos)
            if c.get("kv_q8"):  # --cache-type q8_0: keys and values as ggml's Q8_0 blocks hold them
                k, v = q8_0(k), q8_0(v)
            self.k[i].extend(k)
            self.v[i].extend(v)
            K, V = np.array(self.k[i]), np.array(self.v[i])  # (S, KV, hd)
            hdk = q.shape[-1]
            att = np.zeros((T, H, V.shape[-1]))
            for t in range(T):
                n = pos[t] + 1
                lo = max(0, n - c["window"]) if self.swa(i) else 0  # keys j with pos - j < window
                for hh in range(H):
                    kv = hh // (H // K.shape[1])
                    sc = softcap(K[lo:n, kv] @ q[t, hh] * c.get("kq_mscale", 1.0) ** 2 / np.sqrt(hdk), c.get("attn_cap"))
                    if p + "attn_sinks.weight" in w:  # one more logit per head, with no value
                        att[t, hh] = softmax(np.append(sc, w[p + "attn_sinks.weight"][hh]))[:-1] @ V[lo:n, kv]
                    else:
                        att[t, hh] = softmax(sc) @ V[lo:n, kv]
            a = att.reshape(T, -1)
            if c.get("gated"):  # Qwen3.5: the attention times sigmoid of q's gate
                a = a / (1 + np.exp(-self.gate))
            a = a @ w[p + "attn_output.weight"].T
            if p + "attn_output.bias" in w:
                a = a + w[p + "attn_output.bias"]
            if c.get("gemma"):
                a = rms(a, w[p + "post_attention_norm.weight"], eps)
            x = x + a
            f = self.ffn(i, rms(x, w[p + "ffn_norm.weight"], eps))
            if c.get("gemma"):
                f = rms(f, w[p + "post_ffw_norm.weight"], eps)
            x = x + f
        out = w["output.weight"] if "output.weight" in w else w["token_embd.weight"]
        return softcap(rms(x if every else x[-1], w["output_norm.weight"], eps) @ out.T, c.get("final_cap"))

    def mla(self, i, h, pos):
        c, w, p, eps = self.c, self.w, f"blk.{i}.", 1e-5
        T, H, hd, rd, R, hv = h.shape[0], c["heads"], c["hd"], c["rope"], c["kv_lora"], c["hv"]
        nope = hd - rd
        q = rms(h @ w[p + "attn_q_a.weight"].T, w[p + "attn_q_a_norm.weight"], eps) @ w[p + "attn_q_b.weight"].T
        q = q.reshape(T, H, hd)
        rp = (lambda x: rope_ggml(x, pos, **c["rp"])) if "rp" in c else (lambda x: rope(x, pos, 10000.0, False))
        q = np.concatenate([q[..., :nope], rp(q[..., nope:])], -1)
        kva = h @ w[p + "attn_kv_a_mqa.weight"].T
        latent = rms(kva[:, :R], w[p + "attn_kv_a_norm.weight"], eps)
        k_pe = rp(kva[:, R:].reshape(T, 1, rd))
        kv = (latent @ w[p + "attn_kv_b.weight"].T).reshape(T, H, nope + hv)
        k = np.concatenate([kv[..., :nope], np.broadcast_to(k_pe, (T, H, rd))], -1)
        return q, k, kv[..., nope:]

    def mha(self, i, h, pos):
        c, w, p, eps = self.c, self.w, f"blk.{i}.", 1e-5
        T, H, KV, hd = h.shape[0], c["heads"], c["kv"], c["hd"]
        if True:
            q, k, v = (h @ w[p + n + ".weight"].T for n in ("attn_q", "attn_k", "attn_v"))
            if c.get("gated"):  # each head's q then its gate
                qg = q.reshape(T, H, 2 * hd)
                q, self.gate = qg[..., :hd].reshape(T, H * hd), qg[..., hd:].reshape(T, H * hd)
            if p + "attn_q.bias" in w:
                q, k, v = q + w[p + "attn_q.bias"], k + w[p + "attn_k.bias"], v + w[p + "attn_v.bias"]
            q, k, v = q.reshape(T, H, hd), k.reshape(T, KV, hd), v.reshape(T, KV, hd)
            if p + "attn_q_norm.weight" in w:
                q, k = rms(q, w[p + "attn_q_norm.weight"], eps), rms(k, w[p + "attn_k_norm.weight"], eps)
            # gemma3: the sliding layers' base is 10000 and unscaled, the global ones' the file's
            swa = self.swa(i)
            base = c.get("swa_base", c.get("base", 10000.0)) if swa else c.get("base", 10000.0)
            scale = 1.0 if swa and "swa_base" in c else c.get("rope_scale", 1.0)
            if "sections" in c:  # Qwen3.5's interleaved M-RoPE at text positions (p, p, p, 0)
                q, k = imrope(q, pos, c["rd"], c["sections"]), imrope(k, pos, c["rd"], c["sections"])
            elif "rp" in c:  # ggml's rope with its scaling parameters (phi3, yarn)
                q, k = rope_ggml(q, pos, **c["rp"]), rope_ggml(k, pos, **c["rp"])
            else:
                rp = [t / scale for t in pos]
                q, k = rope(q, rp, base, c["neox"]), rope(k, rp, base, c["neox"])
        return q, k, v


def greedy(cfg, w, prompt, n, out):
    """Greedy decoding of n tokens after prompt: the logits after the prompt
    and after each of the first n - 1 chosen tokens (n rows) to
    out.logits.bin, the tokens (int32) to out.greedy.bin."""
    m = Model(cfg, w)
    rows, toks, margin = [m.forward(prompt, 0)], [], np.inf
    for i in range(n):
        srt = np.sort(rows[-1])
        margin = min(margin, srt[-1] - srt[-2])
        toks.append(int(np.argmax(rows[-1])))
        if i + 1 < n:
            rows.append(m.forward([toks[-1]], len(prompt) + i))
    np.array(rows, dtype=np.float32).tofile(os.path.join(OUT, f"{out}.logits.bin"))
    np.array(toks, dtype=np.int32).tofile(os.path.join(OUT, f"{out}.greedy.bin"))
    print(f"wrote {out}: {len(prompt)} prompt tokens, {n} greedy, smallest top-2 margin {margin:.4f}")


def make(name, arch, cfg, seed, runs=(), out=OUT, reference=True):
    """Writes out/llm_<name>.gguf (random weights from seed, cfg's shape and
    traits) and, with reference, its logits and runs' greedy goldens; returns
    the weights. cfg["wscale"] scales every random matrix (wider models
    need smaller weights), cfg["dummy_vocab"] adds llama.cpp's dummy
    vocabulary keys (gen_llm_llamacpp.py's with_vocab). With names on the
    command line, only those models are made (None for the others)."""
    if ONLY and name not in ONLY:
        return None
    rng = np.random.default_rng(seed)
    dim, L, H, KV, hd, ffn, V = cfg["dim"], cfg["layers"], cfg["heads"], cfg["kv"], cfg["hd"], cfg["ffn"], cfg["vocab"]
    w = {}

    def t(n, shape, scale=0.3, norm=False):
        a = (1 + 0.1 * rng.standard_normal(shape)) if norm else scale * cfg.get("wscale", 1.0) * rng.standard_normal(shape)
        w[n] = a.astype(np.float32).astype(np.float64)

    t("token_embd.weight", (V, dim), 1.0)
    for i in range(L):
        p = f"blk.{i}."
        t(p + "attn_norm.weight", (dim,), norm=True)
        if cfg.get("gdn") and (i + 1) % cfg.get("interval", 4) != 0:  # a delta-net layer (llama.cpp's layout)
            gd = cfg["gdn"]
            C, VD = 2 * gd["hk"] * gd["d"] + gd["hv"] * gd["d"], gd["hv"] * gd["d"]
            t(p + "attn_qkv.weight", (C, dim))
            t(p + "attn_gate.weight", (VD, dim))
            t(p + "ssm_conv1d.weight", (C, gd["K"]), 0.5)
            t(p + "ssm_dt.bias", (gd["hv"],), 1.0)
            w[p + "ssm_a"] = -np.exp(0.5 * rng.standard_normal(gd["hv"])).astype(np.float32).astype(np.float64)  # -exp(A_log)
            t(p + "ssm_beta.weight", (gd["hv"], dim))
            t(p + "ssm_alpha.weight", (gd["hv"], dim))
            t(p + "ssm_norm.weight", (gd["d"],), norm=True)
            t(p + "ssm_out.weight", (dim, VD))
        elif cfg.get("mla"):
            R, rd, hv, QR = cfg["kv_lora"], cfg["rope"], cfg["hv"], cfg["q_lora"]
            t(p + "attn_q_a.weight", (QR, dim))
            t(p + "attn_q_a_norm.weight", (QR,), norm=True)
            t(p + "attn_q_b.weight", (H * hd, QR))
            t(p + "attn_kv_a_mqa.weight", (R + rd, dim))
            t(p + "attn_kv_a_norm.weight", (R,), norm=True)
            t(p + "attn_kv_b.weight", (H * (hd - rd + hv), R))
            t(p + "attn_output.weight", (dim, H * hv))
        else:
            t(p + "attn_q.weight", (H * hd * (2 if cfg.get("gated") else 1), dim))
            t(p + "attn_k.weight", (KV * hd, dim))
            t(p + "attn_v.weight", (KV * hd, dim))
            t(p + "attn_output.weight", (dim, H * hd))
        if cfg.get("bias"):
            t(p + "attn_q.bias", (H * hd,), 0.1)
            t(p + "attn_k.bias", (KV * hd,), 0.1)
            t(p + "attn_v.bias", (KV * hd,), 0.1)
        if cfg.get("qk_norm") and not (cfg.get("gdn") and (i + 1) % cfg.get("interval", 4) != 0):
            t(p + "attn_q_norm.weight", (hd,), norm=True)
            t(p + "attn_k_norm.weight", (hd,), norm=True)
        if cfg.get("gemma"):
            t(p + "post_attention_norm.weight", (dim,), norm=True)
            t(p + "post_ffw_norm.weight", (dim,), norm=True)
        t(p + "ffn_norm.weight", (dim,), norm=True)
        if cfg.get("experts") and i >= cfg.get("dense", 0):
            E, F = cfg["experts"], cfg["eff"]
            t(p + "ffn_gate_inp.weight", (E, dim))
            if cfg.get("sigmoid"):
                t(p + "exp_probs_b.bias", (E,), 0.5)
            t(p + "ffn_gate_exps.weight", (E, F, dim))
            t(p + "ffn_up_exps.weight", (E, F, dim))
            t(p + "ffn_down_exps.weight", (E, dim, F))
            if cfg.get("oai"):
                t(p + "ffn_gate_inp.bias", (E,), 0.5)
                t(p + "ffn_gate_exps.bias", (E, F), 0.2)
                t(p + "ffn_up_exps.bias", (E, F), 0.2)
                t(p + "ffn_down_exps.bias", (E, dim), 0.2)
                t(p + "attn_output.bias", (dim,), 0.1)
                t(p + "attn_sinks.weight", (H,), 1.0)
                for n in ("ffn_gate_exps.weight", "ffn_up_exps.weight", "ffn_down_exps.weight"):  # MXFP4, as gpt-oss ships them
                    w[p + n] = gguf.quants.dequantize(gguf.quants.quantize(w[p + n].astype(np.float32), MXFP4), MXFP4).astype(np.float64)
            if cfg.get("shared"):
                t(p + "ffn_gate_shexp.weight", (cfg["shared"], dim))
                t(p + "ffn_up_shexp.weight", (cfg["shared"], dim))
                t(p + "ffn_down_shexp.weight", (dim, cfg["shared"]))
                if not cfg.get("sigmoid"):
                    t(p + "ffn_gate_inp_shexp.weight", (dim,))
        else:
            t(p + "ffn_gate.weight", (ffn, dim))
            t(p + "ffn_up.weight", (ffn, dim))
            t(p + "ffn_down.weight", (dim, ffn))
    t("output_norm.weight", (dim,), norm=True)
    if not cfg.get("gemma"):  # gemma's output is the embedding
        t("output.weight", (V, dim))

    path = os.path.join(out, f"llm_{name}.gguf")
    g = gguf.GGUFWriter(path, arch)
    if cfg.get("dummy_vocab"):
        g.add_tokenizer_model("none")
        g.add_vocab_size(V)
    g.add_context_length(cfg.get("ctx", 32))
    g.add_embedding_length(dim)
    g.add_block_count(L + cfg.get("nextn", 0))
    if cfg.get("nextn"):  # the converter's MTP layers: counted in block_count, not run by llama.cpp
        g.add_nextn_predict_layers(cfg["nextn"])
    g.add_feed_forward_length(ffn)
    g.add_head_count(H)
    g.add_head_count_kv(KV)
    g.add_key_length(hd)
    g.add_value_length(cfg.get("hv", hd))
    if cfg.get("mla"):
        g.add_kv_lora_rank(cfg["kv_lora"])
        g.add_q_lora_rank(cfg["q_lora"])
        g.add_rope_dimension_count(cfg["rope"])
    if cfg.get("dense"):
        g.add_leading_dense_block_count(cfg["dense"])
    if cfg.get("sigmoid"):
        if not cfg.get("gating_default"):
            g.add_expert_gating_func(gguf.ExpertGatingFuncType.SIGMOID)
        g.add_expert_weights_norm(cfg["norm_w"])
        g.add_expert_weights_scale(cfg["scale"])
        g.add_expert_shared_count(1)
    g.add_layer_norm_rms_eps(1e-5)
    if cfg.get("gdn"):
        gd = cfg["gdn"]
        g.add_ssm_conv_kernel(gd["K"])
        g.add_ssm_state_size(gd["d"])
        g.add_ssm_group_count(gd["hk"])
        g.add_ssm_time_step_rank(gd["hv"])
        g.add_ssm_inner_size(gd["hv"] * gd["d"])
        if "interval" in cfg:
            g.add_full_attention_interval(cfg["interval"])
        g.add_rope_dimension_count(cfg["rd"])
        g.add_rope_dimension_sections(cfg["sections"])
    if cfg.get("attn_cap"):
        g.add_attn_logit_softcapping(cfg["attn_cap"])
    if cfg.get("final_cap"):
        g.add_final_logit_softcapping(cfg["final_cap"])
    if cfg.get("window"):
        g.add_sliding_window(cfg["window"])
    if cfg.get("base"):
        g.add_rope_freq_base(cfg["base"])
    if cfg.get("rope_scale"):
        g.add_rope_scaling_type(gguf.RopeScalingType.LINEAR)
        g.add_rope_scaling_factor(cfg["rope_scale"])
    if cfg.get("experts"):
        g.add_expert_count(cfg["experts"])
        g.add_expert_used_count(cfg["used"])
        g.add_expert_feed_forward_length(cfg["eff"])
        if cfg.get("shared") and not cfg.get("sigmoid"):
            g.add_expert_shared_feed_forward_length(cfg["shared"])
    if cfg.get("rp"):
        rp = cfg["rp"]
        if rp.get("ext"):
            g.add_rope_scaling_type(gguf.RopeScalingType.YARN)
            g.add_rope_scaling_factor(1 / rp["freq_scale"])
            g.add_rope_scaling_orig_ctx_len(rp["orig"])
            if cfg.get("betas"):  # in the file, but llama.cpp reads them only for grok and mistral3
                g.add_rope_scaling_yarn_beta_fast(cfg["betas"][0])
                g.add_rope_scaling_yarn_beta_slow(cfg["betas"][1])
        if cfg.get("phi3"):
            g.add_rope_scaling_orig_ctx_len(cfg["phi3_orig"])
            g.add_rope_scaling_attn_factors(rp["mscale"])
            g.add_sliding_window(cfg["phi3_window"])  # written by the converter; llama.cpp ignores it
        if cfg.get("log_mul"):  # as the converter writes it: 0.1 * mscale_all_dim
            g.add_rope_scaling_yarn_log_mul(0.1 * cfg["log_mul"])
        if rp["rd"] != hd and not cfg.get("mla"):
            g.add_rope_dimension_count(rp["rd"])
    written = dict(w)
    if cfg.get("ffn_norm_pa"):  # gpt-oss's and GLM-4 MoE's feed-forward norm is called post_attention_norm
        for i in range(L):
            written[f"blk.{i}.post_attention_norm.weight"] = written.pop(f"blk.{i}.ffn_norm.weight")
    for i in range(L, L + cfg.get("nextn", 0)):  # an MTP layer tg must not read (NaN):
        # a whole layer like the last one, plus the nextn tensors, as llama.cpp's loader wants
        last = f"blk.{L - 1}."
        for n in [n for n in written if n.startswith(last)]:
            written[f"blk.{i}." + n[len(last):]] = np.full(written[n].shape, np.nan)
        written[f"blk.{i}.nextn.eh_proj.weight"] = np.full((cfg["dim"], 2 * cfg["dim"]), np.nan)
        for n in ("enorm", "hnorm", "shared_head_norm"):
            written[f"blk.{i}.nextn.{n}.weight"] = np.full((cfg["dim"],), np.nan)
    if cfg.get("oai"):  # MXFP4 experts
        for i in range(L):
            p = f"blk.{i}."
            for n in ("ffn_gate_exps.weight", "ffn_up_exps.weight", "ffn_down_exps.weight"):
                q = gguf.quants.quantize(written.pop(p + n).astype(np.float32), MXFP4)
                g.add_tensor(p + n, q, raw_dtype=MXFP4)
    if cfg.get("phi3"):  # the converter's layout: q|k|v and gate|up fused, LongRoPE factors
        for i in range(L):
            p = f"blk.{i}."
            written[p + "attn_qkv.weight"] = np.concatenate([written.pop(p + n) for n in ("attn_q.weight", "attn_k.weight", "attn_v.weight")])
            written[p + "ffn_up.weight"] = np.concatenate([written.pop(p + "ffn_gate.weight"), written.pop(p + "ffn_up.weight")])
        written["rope_factors_long.weight"] = np.asarray(cfg["long"])
        written["rope_factors_short.weight"] = np.asarray(cfg["short"])
    for n, a in written.items():
        g.add_tensor(n, a.astype(np.float32))
    g.write_header_to_file()
    g.write_kv_data_to_file()
    g.write_tensors_to_file()
    g.close()
    if not reference:
        print(f"wrote {path}")
        return w

    m = Model(cfg, w)
    logits = [m.forward(PROMPT, 0)]
    for i, tok in enumerate(NEXT):
        logits.append(m.forward([tok], len(PROMPT) + i))
    np.array(logits, dtype=np.float32).tofile(os.path.join(OUT, f"llm_{name}.logits.bin"))
    print(f"wrote {path}")
    for suffix, override, prompt, n in runs:
        greedy(dict(cfg, **override), w, prompt, n, os.path.join(OUT, f"llm_{name}{suffix}"))
    return w


def perplexity(cfg, w, tokens, n_ctx, bos, out):
    """llama.cpp's llama-perplexity over tokens: chunks of n_ctx from an
    empty cache, the first token of each replaced by bos, rows n_ctx/2 ..
    n_ctx-2 scored against the next token. Writes the tokens (int32) to
    out.ppl_tokens.bin and float64 [ppl, ppl_err, the running estimate after
    each chunk...] to out.ppl.bin."""
    if w is None:  # its model not made this run
        return
    first, nll = n_ctx // 2, []
    running = []
    for c in range(len(tokens) // n_ctx):
        chunk = list(tokens[c * n_ctx:(c + 1) * n_ctx])
        chunk[0] = bos
        logits = Model(cfg, w).forward(chunk, 0, every=True)
        for j in range(first, n_ctx - 1):
            row = logits[j] - logits[j].max()
            nll.append(-(row[chunk[j + 1]] - np.log(np.exp(row).sum())))
        running.append(np.exp(np.mean(nll)))
    nll = np.array(nll)
    ppl = np.exp(nll.mean())
    err = np.sqrt(((nll ** 2).mean() - nll.mean() ** 2) / (len(nll) - 1)) * ppl
    np.array(tokens, dtype=np.int32).tofile(os.path.join(OUT, f"{out}.ppl_tokens.bin"))
    np.array([ppl, err] + running, dtype=np.float64).tofile(os.path.join(OUT, f"{out}.ppl.bin"))
    print(f"wrote {out}: perplexity {ppl:.6f} +/- {err:.6f} over {len(running)} chunks of {n_ctx}")


def main():
    base = dict(dim=32, layers=2, heads=4, kv=2, hd=8, ffn=48, vocab=53)
    w_llama = make("llama", "llama", dict(base, neox=False), 1)
    # perplexity (tests/test_llm.c: llm_perplexity): 53 tokens, chunks of 16
    # (3 chunks, 7 positions scored in each), BOS 1 at each chunk's start.
    perplexity(dict(base, neox=False), w_llama, [int(t) for t in np.random.default_rng(11).integers(0, 53, 53)], 16, 1,
               os.path.join(OUT, "llm_llama"))
    make("qwen3moe", "qwen3moe", dict(base, hd=12, neox=True, qk_norm=True, experts=4, used=2, eff=24, norm_w=True), 2)
    make("qwen2moe", "qwen2moe", dict(base, neox=True, bias=True, experts=4, used=2, eff=24, norm_w=False, shared=40), 3)
    make("deepseek2", "deepseek2", dict(base, hd=12, heads=4, kv=4, mla=True, kv_lora=16, q_lora=20, rope=4, hv=10, dense=1,
                                        experts=4, used=2, eff=24, sigmoid=True, norm_w=True, scale=2.5, shared=24), 4)

    # Past the sliding window: a 70-token prompt (chunks 64, 4, 1, 1) and 40
    # greedy tokens with a 128-position cache, where tg's sliding layers keep a
    # ring of window + 63 = 67 rows (tests/test_llm.c: llm_swa_ring_*).
    LONG = [(i * 7 + 3) % 53 for i in range(70)]
    make("gemma2", "gemma2", dict(base, hd=12, neox=True, gemma=2, attn_cap=5.0, final_cap=3.0, window=4, period=2), 5,
         runs=[("_long", {}, LONG, 40)])
    make("gemma3", "gemma3", dict(base, layers=6, ffn=32, neox=True, gemma=3, qk_norm=True, window=4, period=6, base=1e6,
                                  swa_base=10000.0, rope_scale=2.0), 6, runs=[("_long", {}, LONG, 40)])

    # Phi-3 as convert_hf_to_gguf.py writes it: fused attn_qkv and ffn_up
    # (gate then up), partial rotary (6 of 8 dims), LongRoPE factors and
    # attention factor sqrt(1 + ln(32/16) / ln(16)) for context 32 over an
    # original 16; a 32-position cache uses the long factors, a 16-position
    # one the short (llama.cpp: n_ctx > original_context_length).
    rng = np.random.default_rng(70)
    LONG_F, SHORT_F = 1 + 3 * rng.random(3), 1 + 0.5 * rng.random(3)
    ATTN_F = float(np.float32(np.sqrt(1 + np.log(32 / 16) / np.log(16))))
    phi3_rp = dict(rd=6, base=10000.0, neox=True, mscale=ATTN_F)
    make("phi3", "phi3", dict(base, neox=True, phi3=True, phi3_orig=16, phi3_window=8, long=LONG_F, short=SHORT_F,
                              rp=dict(phi3_rp, factors=np.float32(LONG_F))), 7,
         runs=[("_short", {"rp": dict(phi3_rp, factors=np.float32(SHORT_F))}, PROMPT, 8),
               ("_greedy", {}, PROMPT, 20)])

    # Phi-3 wide enough for tensor parallel with quantized weights
    # (tests/test_llm.c: llm_tp_fused): over 2 devices each one's q, k and v
    # rows of the fused attn_qkv (64, 32, 32) and of gate|up (64, 64) halve
    # into whole groups of 16 rows, and attn_output's and ffn_down's 64
    # columns into whole 32-value blocks.
    make("phi3_tp", "phi3", dict(base, dim=64, hd=16, ffn=64, neox=True, phi3=True, phi3_orig=16, phi3_window=8, long=LONG_F, short=SHORT_F,
                                 wscale=0.5, rp=dict(phi3_rp, factors=np.float32(LONG_F))), 17, runs=[("_greedy", {}, PROMPT, 20)])

    # YaRN (llama.cpp's rope_yarn): factor 4 over an original context of 64,
    # base 100; the file says betas 16 and 2, which llama.cpp ignores for a llama
    # (its defaults 32 and 1 stand), so the ramp spans pairs 0..4 of 8.
    make("yarn", "llama", dict(base, heads=2, kv=1, hd=16, neox=False, base=100.0, betas=(16.0, 2.0),
                               rp=dict(rd=16, base=100.0, neox=False, freq_scale=0.25, ext=1.0, orig=64)), 8,
         runs=[("_greedy", {}, PROMPT, 20)])

    # gpt-oss: every layer MoE (4 experts, top 2, MXFP4), biases on q/k/v, the
    # output, the router and each expert, softmax over the chosen logits, the
    # clamped SwiGLU, a sink logit per head, layer 0 sliding over 4 positions,
    # YaRN as gpt-oss has it (base 150000, factor 32 over 4096); the long run
    # wraps layer 0's ring.
    make("gptoss", "gpt-oss", dict(base, neox=True, bias=True, oai=True, ffn_norm_pa=True, experts=4, used=2, eff=32, window=4, period=2,
                                   base=150000.0, rp=dict(rd=8, base=150000.0, neox=True, freq_scale=1 / 32, ext=1.0, orig=4096)), 9,
         runs=[("_greedy", {}, PROMPT, 20), ("_long", {}, LONG, 40)])

    # GLM-4.5 MoE (glm4moe): q/k/v biases, per-head q/k norms, half the head
    # rotated (NEOX), a leading dense layer, then sigmoid routing with an
    # expert bias (the arch's default: no expert_gating_func key), renormalized
    # and scaled weights, a shared expert; the feed-forward norm is
    # post_attention_norm; one MTP layer (NaN weights) counted in block_count,
    # which tg skips as llama.cpp does.
    make("glm4moe", "glm4moe", dict(base, layers=3, hd=8, neox=True, bias=True, qk_norm=True, dense=1, experts=4, used=2, eff=24,
                                    sigmoid=True, gating_default=True, norm_w=True, scale=2.5, shared=24, ffn_norm_pa=True, nextn=1,
                                    rp=dict(rd=4, base=10000.0, neox=True)), 10,
         runs=[("_greedy", {}, PROMPT, 20)])

    # DeepSeek with YaRN (factor 4 over 16 positions, mscale_all_dim 0.707):
    # llama.cpp keeps cos and sin at magnitude 1 and scales the scores by
    # mscale^2 / sqrt(key_length), mscale = 1 + 0.1 * 0.707 * ln 4.
    # a q8_0 KV cache (tg_llm_opts.cache_type "q8_0"): head size 32, one block
    # of keys and one of values per head and position.
    make("llama_q8kv", "llama", dict(base, dim=64, heads=4, kv=2, hd=32, neox=False, kv_q8=True), 14)

    F_DS, LM_DS = 4.0, float(np.float32(0.1 * 0.707)) / np.float32(0.1)
    make("deepseek2_yarn", "deepseek2", dict(base, hd=12, heads=4, kv=4, mla=True, kv_lora=16, q_lora=20, rope=4, hv=10, dense=1,
                                             experts=4, used=2, eff=24, sigmoid=True, norm_w=True, scale=2.5, shared=24,
                                             log_mul=0.707, kq_mscale=1 + 0.1 * LM_DS * np.log(F_DS),
                                             rp=dict(rd=4, base=10000.0, neox=False, freq_scale=1 / F_DS, ext=1.0, orig=16,
                                                     mscale=1 / (1 + 0.1 * np.log(F_DS)))), 4)  # cancels rope_yarn's own magnitude

    # Qwen3.5 (qwen35): gated delta-net layers 0 and 2 (full_attention_interval
    # 2), 2 k heads and 4 v heads of 8 (v head j reads k head j % 2), a conv
    # kernel of 4; gated attention in layers 1 and 3 (q's projection holds q and
    # a gate per head, per-head q/k norms, 8 of 16 dims rotated by interleaved
    # M-RoPE with sections [1, 1, 1, 1]: the 4th pair keeps position 0 and does
    # not turn). Qwen3.6 / 3.5 MoE (qwen35moe): the default interval 4 (layers
    # 0-2 recurrent), 4 experts top 2 with renormalized softmax routing and a
    # shared expert behind a sigmoid gate, sections [2, 1, 1, 0], narrower (dim
    # 24, heads of 8 with 4 dims rotated) to keep the file small. The long runs
    # (70-token prompt: chunks 64, 4, 1, 1) carry the states over 110 positions.
    QWEN35 = dict(base, layers=4, hd=16, ffn=24, neox=True, qk_norm=True, gated=True, ffn_norm_pa=True, rd=8, ctx=64,
                  gdn=dict(hk=2, hv=4, d=8, K=4))
    w_qwen35 = make("qwen35", "qwen35", dict(QWEN35, interval=2, sections=[1, 1, 1, 1]), 15,
                    runs=[("_greedy", {}, PROMPT, 20), ("_long", {}, LONG, 40)])
    # its perplexity as llama's above: each chunk from empty states
    perplexity(dict(QWEN35, interval=2, sections=[1, 1, 1, 1]), w_qwen35, [int(t) for t in np.random.default_rng(11).integers(0, 53, 53)],
               16, 1, os.path.join(OUT, "llm_qwen35"))
    make("qwen35moe", "qwen35moe", dict(QWEN35, dim=24, hd=8, rd=4, sections=[2, 1, 1, 0], experts=4, used=2, eff=16, norm_w=True, shared=16), 16,
         runs=[("_greedy", {}, PROMPT, 20), ("_long", {}, LONG, 40)])

    # Qwen3.5 for tensor parallel (tests/test_llm_tp_arch.c): wide enough that
    # its Q8_0 form splits over 2 devices in whole row groups and blocks (each
    # device's q|k|v pieces, z's rows and the out-projection's columns are 32
    # long: k head d and v heads d, d + 2 of 32 dims each).
    make("qwen35_tp", "qwen35", dict(QWEN35, dim=64, ffn=64, interval=2, sections=[1, 1, 1, 1], gdn=dict(hk=2, hv=4, d=32, K=4)), 18)

    # Tensor parallel (tests/test_llm.c: llm_tp_*): a llama whose matrices split
    # over 2 devices at Q8_0's blocks too (64 columns: 2 blocks of 32; rows in
    # groups of 16), run sharded against this one reference.
    make("llama_tp", "llama", dict(base, dim=64, heads=4, kv=2, hd=16, ffn=64, neox=False), 17, runs=[("_greedy", {}, PROMPT, 20)])


if __name__ == "__main__":
    main()
