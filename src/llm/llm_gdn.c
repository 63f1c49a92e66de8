/* llm_gdn.c: the gated delta-net layer of Qwen3.5 / 3.6 (llama.cpp's
 * build_layer_attn_linear and its delta-net base), as tensor ops over the
 * shared builders of llm_forward.c. Invariant: the layer's only memory is
 * its two states per sequence, both read as zero at position 0 (a fresh
 * sequence, a perplexity chunk, a rewind that starts over):
 *   conv  (n_seq, kernel - 1, channels): the last kernel - 1 inputs of the
 *         causal depthwise conv over q|k|v;
 *   S     (n_seq, v heads, head_v, head_k): the recurrent state, S[j][i]
 *         pairing value dim j with key dim i (ggml's layout).
 * Per token and v head (q, k of k head h % k_heads, L2-normed; q times
 * head_k^-1/2): S = exp(g) S with g = softplus(alpha + dt_bias) * a
 * (a = -exp(A_log)); d = beta (v - S k) with beta = sigmoid(b); S += d k^T;
 * o = S q. Then a gated RMS norm (ssm_norm times silu(z)) and the
 * out-projection. A prompt chunk of T tokens runs the chunked form
 * (delta_chunk: the same sums as matmuls over the chunk), a decode step
 * (T 1; a batched step's rows are one token of their own sequence each)
 * the recurrence, as does a chunk under TG_LLM_GDN_RECURRENT=1. */
#include <math.h>
#include "llm/llm.h"
#include "util/util.h"
#include "util/settings.h"

/* x (..., n) / sqrt(sum x^2 + eps): ggml's rms_norm(x, eps / n) / sqrt(n) */
static tg_tensor *l2_norm(tg_tensor *x, float eps) {
  return tg_mul(x, tg_rsqrt(tg_add(tg_sum(tg_mul(x, x), TG_AXES(-1), true), tg_scalar(eps, TG_F32))));
}

/* x (B, T, Hk, D) for each of Hv = R * Hk heads: head h reads head h % Hk
 * (the converter orders v heads so; llama.cpp's ggml_repeat), within each
 * of P groups of heads: head g Hv/P + h' reads g Hk/P + h' % (Hk/P) (the
 * device order of tensor parallel, llm_tp.c; P 1 on one device) */
static tg_tensor *tile_heads(tg_tensor *x, int64_t Hv, int64_t P) {
  int64_t B = tg_dim(x, 0), T = tg_dim(x, 1), Hk = tg_dim(x, 2), D = tg_dim(x, 3);
  if (Hv == Hk) return x;
  tg_tensor *e = tg_expand(tg_reshape(x, TG_SHAPE(B, T, P, 1, Hk / P, D)), TG_SHAPE(B, T, P, Hv / Hk, Hk / P, D));
  return tg_reshape(e, TG_SHAPE(B, T, Hv, D));
}

/* The gates' per-head values x (N, Hv) in tensor parallel's device order
 * and split over the P devices: their small projections (beta, alpha, dt,
 * a) stay whole on every device in the file's head order (llm_tp.c
 * reorder_gdn), so each device computes every head's, then group d takes
 * heads r Hk + d Hk/P + j (r < Hv/Hk, j < Hk/P). x itself when P is 1 (one
 * device, or a layer that runs whole on each). */
static tg_tensor *device_heads(tg_llm *m, tg_tensor *x, int64_t P) {
  int64_t Hk = m->gdn.k_heads, N = tg_dim(x, 0), Hv = tg_dim(x, 1);
  if (P == 1) return x;
  tg_tensor *o = tg_reshape(tg_permute(tg_reshape(x, TG_SHAPE(N, Hv / Hk, P, Hk / P)), TG_AXES(0, 2, 1, 3)), TG_SHAPE(N, Hv));
  return llm_tp_split(m, o, 1);
}

/* The rows of a state that the graph's sequences own: (B, ...). */
static tg_tensor *state_rows(tg_llm *m, tg_tensor *state) {
  if (m->batch_seqs) return tg_take(state, m->batch_seqs);
  if (m->n_seq > 1) return tg_take(state, tg_reshape(m->seq_var, TG_SHAPE(1)));
  return state;
}

/* (I + M)^-1 for M strictly lower-triangular (..., n, n), by halves:
 * [[A, 0], [C, D]]^-1 = [[A^-1, 0], [-D^-1 C A^-1, D^-1]]; blocks of at
 * most 8 as (I - M)(I + M^2)(I + M^4) (M^8 = 0 there), whose terms stay
 * small (a triangular solve's work, as matmuls). */
static tg_tensor *inv_unit_lower(tg_tensor *M) {
  int64_t n = tg_dim(M, -1);
  if (n <= 8) {
    tg_tensor *I = tg_eye(n, TG_F32), *N = tg_neg(M), *R = tg_add(I, N);
    for (int64_t p = 2; p < n; p *= 2) {
      N = tg_contiguous(tg_matmul(N, N));
      R = tg_contiguous(tg_matmul(R, tg_add(I, N)));
    }
    return R;
  }
  int64_t h = n / 2;
  tg_tensor *Ai = inv_unit_lower(tg_contiguous(TG_GET(M, TG_ELLIPSIS, TG_UPTO(h), TG_UPTO(h))));
  tg_tensor *Di = inv_unit_lower(tg_contiguous(TG_GET(M, TG_ELLIPSIS, TG_FROM(h), TG_FROM(h))));
  tg_tensor *C = TG_GET(M, TG_ELLIPSIS, TG_FROM(h), TG_UPTO(h));
  tg_tensor *low = tg_neg(tg_matmul(Di, tg_contiguous(tg_matmul(C, Ai))));                         /* (..., n-h, h) */
  /* zeros where M's (zero) upper right block is: on M's device(s) */
  tg_tensor *top = tg_cat((tg_tensor *[]){ Ai, tg_zeros_like(TG_GET(M, TG_ELLIPSIS, TG_UPTO(h), TG_FROM(h))) }, 2, -1);
  tg_tensor *bottom = tg_cat((tg_tensor *[]){ low, Di }, 2, -1);
  return tg_contiguous(tg_cat((tg_tensor *[]){ top, bottom }, 2, -2));
}

/* The delta rule over a chunk of T tokens at once (the chunked gated delta
 * rule, llama.cpp's build_delta_net_chunking): with G the running sum of
 * the log decays, D[i][j] = exp(G_i - G_j) for j <= i (every exponent <= 0,
 * nothing overflows), the WY form A = (I + strict(beta k k^T * D))^-1 gives
 * the chunk's new values v' = A (beta v) - A (beta k exp(G)) S^T; outputs
 * o = (q exp(G)) S^T + tril(q k^T * D) v', and the state after the chunk
 * S exp(G_T) + v'^T (k exp(G_T - G)). q, k (B, H, T, Dk), v (B, H, T, Dv),
 * g, beta (B, H, T, 1), *S (B, H, Dv, Dk) in and out; o (B, H, T, Dv). */
static tg_tensor *delta_chunk(tg_tensor *q, tg_tensor *k, tg_tensor *v, tg_tensor *g, tg_tensor *beta, tg_tensor **S) {
  int64_t B = tg_dim(q, 0), H = tg_dim(q, 1), T = tg_dim(q, 2);
  tg_tensor *G = tg_contiguous(tg_cumsum(g, 2));                                                   /* (B, H, T, 1) */
  tg_tensor *ones = tg_ones(TG_SHAPE(T, T), TG_F32);
  tg_tensor *causal = tg_gt(tg_tril(ones, 0), tg_scalar(0, TG_F32)), *strict = tg_gt(tg_tril(ones, -1), tg_scalar(0, TG_F32));
  tg_tensor *zero = tg_scalar(0, TG_F32);
  /* G_i - G_j as the sum of g over j < s <= i, not a difference of two
   * running sums: those grow to hundreds over a chunk (strong decays) and
   * their difference would lose float32's digits where it matters, near
   * the diagonal */
  tg_tensor *ar = tg_arange(0, (double)T, 1, TG_I32);
  tg_tensor *si = tg_reshape(ar, TG_SHAPE(T, 1, 1)), *sj = tg_reshape(ar, TG_SHAPE(1, T, 1)), *ss = tg_reshape(ar, TG_SHAPE(1, 1, T));
  tg_tensor *span = tg_logical_and(tg_gt(ss, sj), tg_le(ss, si));                                 /* (T, T, T): j < s <= i */
  tg_tensor *diff = tg_contiguous(tg_sum(tg_where(span, tg_reshape(g, TG_SHAPE(B, H, 1, 1, T)), zero), TG_AXES(-1), false));   /* (B, H, T, T) */
  tg_tensor *D = tg_contiguous(tg_where(causal, tg_exp(diff), zero));
  tg_tensor *kb = tg_mul(k, beta), *kT = tg_T(k);
  tg_tensor *M = tg_contiguous(tg_where(strict, tg_mul(tg_matmul(kb, kT), D), zero));
  tg_tensor *A = inv_unit_lower(M);
  tg_tensor *eG = tg_exp(G), *St = tg_T(*S);                                                        /* St (B, H, Dk, Dv) */
  tg_tensor *vn = tg_contiguous(tg_sub(tg_matmul(A, tg_contiguous(tg_mul(v, beta))),
                                       tg_matmul(tg_contiguous(tg_matmul(A, tg_contiguous(tg_mul(kb, eG)))), St)));  /* (B, H, T, Dv) */
  tg_tensor *qk = tg_where(causal, tg_mul(tg_matmul(q, kT), D), zero);
  tg_tensor *o = tg_add(tg_matmul(tg_contiguous(tg_mul(q, eG)), St), tg_matmul(tg_contiguous(qk), vn));
  tg_tensor *Glast = TG_GET(G, TG_ALLIDX, TG_ALLIDX, TG_FROM(T - 1));                               /* (B, H, 1, 1) */
  tg_tensor *to_end = tg_reshape(TG_GET(diff, TG_ALLIDX, TG_ALLIDX, TG_I(T - 1)), TG_SHAPE(B, H, T, 1));   /* G_T - G_j */
  tg_tensor *kd = tg_contiguous(tg_mul(k, tg_exp(to_end)));
  *S = tg_contiguous(tg_add(tg_mul(*S, tg_exp(Glast)), tg_matmul(tg_T(vn), kd)));
  return o;
}

/* The recurrence, token by token: q, k (B, T, H, 1, Dk), v (B, T, H, Dv),
 * decay exp(g) (B, T, H, 1, 1), beta (B, T, H, 1); *S (B, H, Dv, Dk) in
 * and out, each step's stored; o (B, T, H, Dv). NULL for T past a chunk. */
static tg_tensor *delta_steps(tg_tensor *q, tg_tensor *k, tg_tensor *v, tg_tensor *decay, tg_tensor *beta, tg_tensor **S) {
  int64_t T = tg_dim(q, 1);
  tg_tensor *outs[LLM_MAX_CHUNK];
  if (T > LLM_MAX_CHUNK) { tg_seterr("internal: a delta-net chunk of %lld tokens (at most %d)", (long long)T, LLM_MAX_CHUNK); return NULL; }
  for (int64_t t = 0; t < T; t++) {
    tg_tensor *kt = TG_GET(k, TG_ALLIDX, TG_I(t)), *qt = TG_GET(q, TG_ALLIDX, TG_I(t));              /* (B, H, 1, Dk) */
    tg_tensor *s = tg_mul(*S, TG_GET(decay, TG_ALLIDX, TG_I(t)));
    tg_tensor *sk = tg_sum(tg_mul(s, kt), TG_AXES(-1), false);                                      /* (B, H, Dv) */
    tg_tensor *d = tg_mul(tg_sub(TG_GET(v, TG_ALLIDX, TG_I(t)), sk), TG_GET(beta, TG_ALLIDX, TG_I(t)));
    *S = tg_contiguous(tg_add(s, tg_mul(tg_unsqueeze(d, -1), kt)));
    outs[t] = tg_sum(tg_mul(*S, qt), TG_AXES(-1), false);                                           /* (B, H, Dv) */
  }
  return T == 1 ? tg_unsqueeze(outs[0], 1) : tg_stack(outs, (int)T, 1);
}

tg_tensor *llm_gdn(tg_llm *m, llm_layer *l, tg_tensor *h) {
  const tg_llm_config *c = &m->cfg;
  bool batched = m->batch_seqs != NULL;
  int64_t N = tg_dim(h, 0), B = batched ? N : 1, T = batched ? 1 : N;
  int64_t Hk = m->gdn.k_heads, Hv = m->gdn.v_heads, Dk = m->gdn.head_k, Dv = m->gdn.head_v, K = m->gdn.conv_k;
  int64_t C = 2 * Hk * Dk + Hv * Dv;
  int64_t P = l->tp_whole & LLM_TP_GDN ? 1 : m->n_tp;   /* channel groups: one per device (llm_tp.c), or one */
  tg_tensor *zero = tg_scalar(0, TG_F32);
  /* each row's position: a state is zero at position 0 */
  tg_tensor *pos = batched ? m->batch_pos : tg_reshape(m->pos, TG_SHAPE(1));                         /* (B,) */
  tg_tensor *fresh = tg_eq(pos, tg_scalar(0, TG_I32));

  tg_tensor *qkv = tg_reshape(llm_linear(m, h, l->ssm_qkv, NULL), TG_SHAPE(B, T, C));
  tg_tensor *z = tg_reshape(llm_linear(m, h, l->ssm_z, NULL), TG_SHAPE(B, T, Hv, Dv));
  tg_tensor *beta = tg_contiguous(tg_reshape(tg_sigmoid(device_heads(m, llm_linear(m, h, l->ssm_beta, NULL), P)), TG_SHAPE(B, T, Hv, 1)));
  tg_tensor *g = device_heads(m, tg_mul(tg_softplus(llm_linear(m, h, l->ssm_alpha, l->ssm_dt), 1, 20), tg_cast(l->ssm_a, TG_F32)), P);   /* log decay (N, Hv) */

  /* the causal depthwise conv over the state's kernel - 1 inputs and the
   * chunk's; the last kernel - 1 of them are the next state */
  tg_tensor *cs = tg_where(tg_reshape(fresh, TG_SHAPE(B, 1, 1)), zero, state_rows(m, l->conv_state));   /* (B, K-1, C) */
  tg_tensor *x = tg_contiguous(tg_cat((tg_tensor *[]){ cs, qkv }, 2, 1));                            /* (B, K-1+T, C) */
  tg_tensor *w = tg_cast(l->ssm_conv1d, TG_F32);                                                     /* (C, K) */
  tg_tensor *conv = NULL;
  for (int64_t j = 0; j < K; j++) {
    tg_tensor *tap = tg_mul(TG_GET(x, TG_ALLIDX, TG_SLICE(j, j + T, 1)), TG_GET(w, TG_ALLIDX, TG_I(j)));
    conv = conv ? tg_add(conv, tap) : tap;
  }
  tg_assign(state_rows(m, l->conv_state), TG_GET(x, TG_ALLIDX, TG_FROM(T)));
  /* the channels as P groups of q | k | v (tensor parallel: one per
   * device, in the order llm_tp.c gave the rows; one group on one device) */
  int64_t qk = Hk * Dk / P;
  tg_tensor *xc = tg_reshape(tg_contiguous(tg_silu(conv)), TG_SHAPE(B, T, P, C / P));               /* (B, T, P, C/P) */
  tg_tensor *q = tg_reshape(TG_GET(xc, TG_ALLIDX, TG_ALLIDX, TG_ALLIDX, TG_UPTO(qk)), TG_SHAPE(B, T, Hk, Dk));
  tg_tensor *k = tg_reshape(TG_GET(xc, TG_ALLIDX, TG_ALLIDX, TG_ALLIDX, TG_SLICE(qk, 2 * qk, 1)), TG_SHAPE(B, T, Hk, Dk));
  tg_tensor *v = tg_reshape(TG_GET(xc, TG_ALLIDX, TG_ALLIDX, TG_ALLIDX, TG_FROM(2 * qk)), TG_SHAPE(B, T, Hv, Dv));
  q = tg_mul(l2_norm(q, c->rms_eps), tg_scalar(1.0 / sqrt((double)Dk), TG_F32));
  k = l2_norm(k, c->rms_eps);
  q = tg_contiguous(tg_reshape(tile_heads(q, Hv, P), TG_SHAPE(B, T, Hv, 1, Dk)));
  k = tg_contiguous(tg_reshape(tile_heads(k, Hv, P), TG_SHAPE(B, T, Hv, 1, Dk)));
  v = tg_contiguous(v);

  tg_tensor *S = tg_where(tg_reshape(fresh, TG_SHAPE(B, 1, 1, 1)), zero, state_rows(m, l->ssm_state));   /* (B, Hv, Dv, Dk) */
  tg_tensor *o;
  if (T > 1 && !setting_on(SET_TG_LLM_GDN_RECURRENT)) {
    /* a prompt chunk: the chunked form, matmuls over the chunk (heads outside tokens) */
    tg_tensor *src[5] = { q, k, v, g, beta }, *hm[5];
    for (int i = 0; i < 5; i++)
      hm[i] = tg_contiguous(tg_permute(tg_reshape(src[i], TG_SHAPE(B, T, Hv, i == 2 ? Dv : i < 2 ? Dk : 1)), TG_AXES(0, 2, 1, 3)));
    o = tg_permute(delta_chunk(hm[0], hm[1], hm[2], hm[3], hm[4], &S), TG_AXES(0, 2, 1, 3));         /* (B, T, Hv, Dv) */
  } else {
    /* one token per row (decoding), or TG_LLM_GDN_RECURRENT=1 */
    o = delta_steps(q, k, v, tg_contiguous(tg_reshape(tg_exp(g), TG_SHAPE(B, T, Hv, 1, 1))), beta, &S);
    if (!o) return NULL;
  }
  tg_assign(state_rows(m, l->ssm_state), S);

  /* gated RMS norm per v head, then the out-projection */
  o = tg_mul(llm_rms_norm(o, l->ssm_norm, c->rms_eps), tg_silu(z));
  return llm_linear(m, tg_reshape(o, TG_SHAPE(N, Hv * Dv)), l->ssm_out, NULL);
}
