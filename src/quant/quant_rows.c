/* quant_rows.c: tg_quant_pack_rows, tg_quant_matmul_rows,
 * tg_quant_matmul_rows_experts and tg_dequantize_rows (tg_quant.h).
 *
 * Decoding multiplies one row of x with every row of W. In ggml's layout a
 * row's blocks follow each other, so a SIMD vector can only hold values of
 * one row, and a block's values need unpacking, widening and a scale per
 * row. Packed by rows, 16 rows' bytes of the same block sit side by side
 * (4 bytes of each row, then the next 4): one 64-byte vector holds 4 values
 * of 16 rows, and one byte dot product (x86 vpdpbusd: 4 unsigned bytes times
 * 4 signed bytes, added into an int32 lane) multiplies them with 4 values of
 * x, the same for every row. llama.cpp's CPU backend repacks Q4_0 the same
 * way (its "q4_0_8x8"). The weights stay unsigned (Q4_0's and Q4_1's nibbles 0..15,
 * Q8_0's values plus 128, Q4_K's nibbles, Q5_K's 5-bit values, Q6_K's 6-bit values 0..63); an
 * offset (8, 128, 32) comes back as the offset times the sum of x's values.
 *
 * Packed forms ("4-byte groups": for each group of 4 bytes of a row's
 * field, the 16 rows' 4 bytes one after another):
 *   Q4_0  scales (N/16, K/32, 16) F16, the 16 rows' block scales;
 *         quants (N/16, K/32, 256) U8: the 16 nibble bytes in 4-byte groups
 *         (byte i of a block holds value i, low nibble, and i + 16).
 *   Q8_0  scales as Q4_0's; quants (N/16, K/32, 512) U8: the 32 int8
 *         values plus 128 (unsigned, as vpdpbusd needs) in 4-byte groups.
 *   Q5_0  scales as Q4_0's; quants (N/16, K/32, 320) U8: Q4_0's nibble
 *         bytes (the 5-bit values' low 4 bits), then one 4-byte group of
 *         fifth bits: byte p holds bit 4h + gi = the fifth bit of value
 *         16h + 4gi + p, so the bits of 4 consecutive values sit at one
 *         shift in 4 bytes and come out with constant shifts.
 *   Q4_1, Q5_1  as Q4_0 and Q5_0 (the values unsigned), and scales
 *         (N/16, 2 * K/32, 16) F16: the 16 rows' d of every block, then
 *         their m.
 *   Q4_K  scales (N/16, 2 * K/256, 16) F16: the 16 rows' d of every
 *         super-block, then their dmin;
 *         quants (N/16, K/256, 2304) U8: the 8 sub-block scales, then the
 *         8 mins (6-bit values unpacked to bytes, 16 rows each), then qs
 *         (128 bytes) in 4-byte groups.
 *   Q5_K  as Q4_K, and before qs its qh (32 bytes: bit j of byte l is the
 *         fifth bit of value 32j + l) in 4-byte groups: quants
 *         (N/16, K/256, 2816) U8 (qh first: a matvec reads all of it with
 *         qs's first 8 groups, so the lines are read in address order).
 *   Q2_K  scales (N/16, 2 * K/256, 16) F16: d, then dmin; quants
 *         (N/16, K/256, 1536) U8: the 16 4-bit sub-block scales, then
 *         the 16 mins, as bytes (16 rows each), then qs (64 bytes) in
 *         4-byte groups.
 *   Q3_K  scales (N/16, K/256, 16) F16, the super-block scales d;
 *         quants (N/16, K/256, 1792) U8: the 16 sub-block scales less 32
 *         (int8, 16 rows each), then hmask (32 bytes) and qs (64) in
 *         4-byte groups (hmask first, as Q5_K's qh).
 *   IQ4_NL  as Q4_0: the file's nibbles (indices into the 16 levels
 *         qt_kvalues_iq4nl). A matvec looks each nibble's level + 128 up
 *         in a 16-byte table (nibble_levels: one byte shuffle per 64 values
 *         on x86), so the weights stream at Q4_0's bytes.
 *   MXFP4  as IQ4_NL (its nibbles at byte 1, looked up in the doubled
 *         E2M1 levels qt_kvalues_mxfp4), and scales (N/16, K/32, 16) F32:
 *         the E8M0 exponent byte as ggml_e8m0_to_fp32_half's float (2^(e-128)
 *         is outside F16's range).
 *   IQ4_XS  scales (N/16, K/256, 16) F16, the super-block scales d;
 *         quants (N/16, K/256, 2176) U8: the 8 sub-block scales ls - 32
 *         (int8, 16 rows each), then qs (128 bytes: byte 16s + j holds
 *         value 32s + j, low nibble, and 32s + 16 + j) in 4-byte groups.
 *   Q6_K  scales (N/16, K/256, 16) F16, the super-block scales d;
 *         quants (N/16, K/256, 3328) U8: the 16 int8 sub-block scales (16
 *         rows each), then ql (128 bytes) and qh (64) in 4-byte groups,
 *         interleaved in the order a matvec reads them (q6_k_lines): for
 *         each n (half of the super-block) and s2 (half of a 32-value
 *         chunk), qh's 4 groups 8n + 4s2 + t, then ql's 16n + 4s2 + t and
 *         16n + 8 + 4s2 + t. Read as two streams 2 KB apart (ql, then qh),
 *         the weights came from memory at half the speed of one stream
 *         (AMD Zen 4: 9-10 against 16-19 GB/s on one core).
 *
 * The packed 64-byte lines of a block are read in address order by the
 * matvec kernels where a type's fields allow it: a kernel that jumps
 * between two places of a block makes the hardware prefetchers stop. */
#include "io/ggml_types.h"
#include "quant/quant.h"
#include "tensor/tensor.h"
#include "util/util.h"

enum { ROWS = TG_QUANT_PACK_ROWS };   /* rows side by side: one 64-byte vector of 4-byte groups */

typedef struct {
  int type, block, bytes;   /* values and bytes of a ggml block */
  int scale_at, nscales;    /* byte offset and count of the fp16 scales in the block */
  int64_t quant_bytes;      /* per block of 16 rows in the packed quants */
  tg_dtype scale_dtype;     /* of the packed scales: F16, F32 for MXFP4's E8M0 */
} rows_format;

static const rows_format formats[] = {
  { GGML_TYPE_Q4_0, 32, 18, 0, 1, ROWS * 16, TG_F16 },
  { GGML_TYPE_Q8_0, 32, 34, 0, 1, ROWS * 32, TG_F16 },
  { GGML_TYPE_Q5_0, 32, 22, 0, 1, ROWS * 20, TG_F16 },
  { GGML_TYPE_Q4_1, 32, 20, 0, 2, ROWS * 16, TG_F16 },
  { GGML_TYPE_Q5_1, 32, 24, 0, 2, ROWS * 20, TG_F16 },
  { GGML_TYPE_Q4_K, 256, 144, 0, 2, ROWS * (16 + 128), TG_F16 },
  { GGML_TYPE_Q5_K, 256, 176, 0, 2, ROWS * (16 + 128 + 32), TG_F16 },
  { GGML_TYPE_Q6_K, 256, 210, 208, 1, ROWS * 208, TG_F16 },
  { GGML_TYPE_Q2_K, 256, 84, 80, 2, ROWS * (32 + 64), TG_F16 },
  { GGML_TYPE_Q3_K, 256, 110, 108, 1, ROWS * (16 + 64 + 32), TG_F16 },
  { GGML_TYPE_IQ4_NL, 32, 18, 0, 1, ROWS * 16, TG_F16 },
  { GGML_TYPE_IQ4_XS, 256, 136, 0, 1, ROWS * (8 + 128), TG_F16 },
  { GGML_TYPE_MXFP4, 32, 17, 0, 1, ROWS * 16, TG_F32 },
};

static const rows_format *format_of(int t, tg_shape w, const char *who) {
  const rows_format *f = NULL;
  for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++) if (formats[i].type == t) f = &formats[i];
  const char *name = tg_ggml_type_name(t) ? tg_ggml_type_name(t) : "?";
  if (!f) return tg_seterr("%s: no row-packed form for type %s (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS and MXFP4 have one)", who, name), NULL;
  if (w.ndim != 2) return tg_seterr("%s: W must be 2-D (N, K), not %d-D", who, w.ndim), NULL;
  if (w.d[0] % ROWS || w.d[0] <= 0 || w.d[1] % f->block || w.d[1] <= 0)
    return tg_seterr("%s: W (%lld, %lld) of %s needs N a multiple of %d and K of %d", who, (long long)w.d[0], (long long)w.d[1], name, ROWS, f->block), NULL;
  return f;
}

/* Are scales and quants tg_quant_pack_rows's for W (w)? The scales
 * (g, S * nb, 16), or the same memory as (g, S, nb, 16). */
static bool packed_shapes_ok(tg_tensor *scales, tg_tensor *quants, const rows_format *f, tg_shape w, const char *who) {
  int64_t g = w.d[0] / ROWS, nb = w.d[1] / f->block;
  tg_shape ss = tg_shape_of(scales), qs = tg_shape_of(quants);
  bool flat = ss.ndim == 3 && ss.d[0] == g && ss.d[1] == nb * f->nscales && ss.d[2] == ROWS;
  bool planes = ss.ndim == 4 && ss.d[0] == g && ss.d[1] == f->nscales && ss.d[2] == nb && ss.d[3] == ROWS;
  if (tg_dtype_of(scales) != f->scale_dtype || !(flat || planes) || tg_dtype_of(quants) != TG_U8 ||
      qs.ndim != 3 || qs.d[0] != g || qs.d[1] != nb || qs.d[2] != f->quant_bytes)
    return tg_seterr("%s: scales and quants are not tg_quant_pack_rows's for W (%lld, %lld)", who, (long long)w.d[0], (long long)w.d[1]), false;
  return true;
}

/* Experts W (E, N, K) packed as the (E * N, K) matrix, their scales and
 * quants viewed per expert: quants (E, N/16, nb, bytes), scales (E, N/16,
 * S * nb, 16) or (E, N/16, S, nb, 16). The same memory; the view in which
 * a split of every expert's rows (its 16-row groups) is one box (tensor
 * parallel shards it on axis 1: src/llm/llm_tp.c). */
static bool expert_view(tg_tensor *scales, tg_tensor *quants, const rows_format *f, int64_t e, int64_t n, int64_t k) {
  int64_t g = n / ROWS, nb = k / f->block;
  tg_shape ss = tg_shape_of(scales), qs = tg_shape_of(quants);
  if (qs.ndim != 4 || qs.d[0] != e || qs.d[1] != g || qs.d[2] != nb || qs.d[3] != f->quant_bytes || ss.d[0] != e || ss.d[1] != g) return false;
  bool flat = ss.ndim == 4 && ss.d[2] == nb * f->nscales && ss.d[3] == ROWS;
  bool planes = ss.ndim == 5 && ss.d[2] == f->nscales && ss.d[3] == nb && ss.d[4] == ROWS;
  return (flat || planes) && tg_dtype_of(scales) == f->scale_dtype && tg_dtype_of(quants) == TG_U8;
}

/* The scales as (g, S, nb, 16): plane s holds every block's scale s. A
 * split of the blocks (W's columns) is a box of this view, not of the
 * packed (g, S * nb, 16) (tensor parallel shards it: src/llm/llm_tp.c). */
static tg_tensor *scale_planes(tg_tensor *scales, const rows_format *f, int64_t g, int64_t nb) {
  return tg_reshape(scales, TG_SHAPE(g, f->nscales, nb, ROWS));
}

/* Bytes [lo, lo + 4*ngroups) of every row's block (g, 16, nb, bytes) in
 * 4-byte groups: (g, nb, ngroups, 16, 4). */
static tg_tensor *in_groups(tg_tensor *blk, int lo, int ngroups) {
  int64_t g = tg_dim(blk, 0), nb = tg_dim(blk, 2);
  tg_tensor *f = tg_reshape(qm_slice_last(blk, lo, lo + 4 * ngroups), TG_SHAPE(g, ROWS, nb, ngroups, 4));
  return tg_permute(f, TG_AXES(0, 2, 3, 1, 4));
}

/* Writes the parts (g, nb, ...) one after another into every (g, nb) row of
 * q (g, nb, bytes), each by its own kernel over the part's own axes: a
 * permutation's source index then stays affine in the loops (a cat of the
 * parts would gate every byte and divide its index), so packing runs at
 * copy speed. */
static int place_parts(tg_tensor *q, tg_tensor *const *parts, int n) {
  if (tg_realize(q) < 0) return -1;
  int64_t off = 0;
  for (int i = 0; i < n; i++) {
    if (!parts[i]) return -1;
    int64_t bytes = tg_numel(parts[i]) / (tg_dim(q, 0) * tg_dim(q, 1));
    tg_tensor *view = tg_reshape(qm_slice_last(q, off, off + bytes), tg_shape_of(parts[i]));
    if (!view || tg_realize(tg_assign(view, parts[i])) < 0) return -1;
    off += bytes;
  }
  return off == tg_dim(q, 2) ? 0 : tg_seterr("internal: packed parts fill %lld of %lld bytes", (long long)off, (long long)tg_dim(q, 2));
}

/* Bytes [lo, hi) of the last axis of quants (..., nb, bytes) as the n
 * sizes of d, the leading axes (the 16-row groups, and a take's axes before
 * them: tg_quant_matmul_rows_experts) kept. */
static tg_tensor *split_last(tg_tensor *quants, int64_t lo, int64_t hi, int n, const int64_t *d) {
  tg_tensor *a = qm_slice_last(quants, lo, hi);
  return tg_reshape(a, qm_with_tail(a, n, d));
}

/* Q6_K's packed lines after the sub-block scales: (..., g, nb, n, s2,
 * kind, t, 16, 4), kind 0 qh's group 8n + 4s2 + t, kinds 1 and 2 ql's
 * groups 16n + 8c0 + 4s2 + t (c0 = kind - 1); quants (..., g, nb, bytes). */
static tg_tensor *q6_k_lines(tg_tensor *quants) {
  return split_last(quants, 16 * ROWS, 16 * ROWS + 48 * 64, 6, (int64_t[]){ 2, 2, 3, 4, ROWS, 4 });
}

/* View [lo, hi) of the kind axis (the fourth from last) of q6_k_lines. */
static tg_tensor *q6_k_kinds(tg_tensor *lines, int64_t lo, int64_t hi) {
  int64_t st[TG_MAX_DIMS] = { 0 }, en[TG_MAX_DIMS];
  int nd = tg_ndim(lines);
  for (int i = 0; i < nd; i++) en[i] = tg_dim(lines, i);
  st[nd - 4] = lo, en[nd - 4] = hi;
  return tg_shrink(lines, st, en);
}

/* Q6_K's packed block: the scales (g, nb, 16, 16), then ql and qh of the
 * ggml blocks blk (g, 16, nb, 210) in q6_k_lines's order, each written by
 * a kernel of its own (as place_parts). */
static int place_q6_k(tg_tensor *q, tg_tensor *scales, tg_tensor *blk) {
  if (tg_realize(q) < 0) return -1;
  int64_t g = tg_dim(q, 0), nb = tg_dim(q, 1);
  tg_tensor *sv = tg_reshape(qm_slice_last(q, 0, 16 * ROWS), tg_shape_of(scales));
  tg_tensor *lines = q6_k_lines(q);
  tg_tensor *ql = tg_reshape(in_groups(blk, 0, 32), TG_SHAPE(g, nb, 2, 2, 2, 4, ROWS, 4));   /* (n, c0, s2, t) */
  tg_tensor *qh = tg_reshape(in_groups(blk, 128, 16), TG_SHAPE(g, nb, 2, 2, 1, 4, ROWS, 4)); /* (n, s2, t) */
  if (!sv || !lines || tg_realize(tg_assign(sv, scales)) < 0) return -1;
  if (tg_realize(tg_assign(q6_k_kinds(lines, 0, 1), qh)) < 0) return -1;
  return tg_realize(tg_assign(q6_k_kinds(lines, 1, 3), tg_permute(ql, TG_AXES(0, 1, 2, 4, 3, 5, 6, 7)))) < 0 ? -1 : 0;
}

/* Sub-block scales ls (g*16*nb, nsub) I32 (6-bit values) as the int8 bytes
 * ls - 32, 16 rows side by side: (g, nb, nsub, 16) U8. */
static tg_tensor *signed_scales(tg_tensor *ls, int64_t g, int64_t nb, int nsub) {
  tg_tensor *b = tg_bitcast(tg_cast(tg_subs(ls, 32), TG_I8), TG_U8);
  return tg_permute(tg_reshape(b, TG_SHAPE(g, ROWS, nb, nsub)), TG_AXES(0, 2, 3, 1));
}

/* Packs raw (the ggml blocks of one matrix of n rows, format f) into sv
 * (n/16, S * nb, 16) F16 and q (n/16, nb, bytes) U8, views of realized
 * memory, by assigns (each part of q by a kernel of its own). 0 or -1. */
static int pack_into(tg_tensor *raw, int t, const rows_format *f, int64_t n, int64_t nb, tg_tensor *sv, tg_tensor *q) {
  int64_t g = n / ROWS;
  tg_tensor *blk = tg_reshape(raw, TG_SHAPE(g, ROWS, nb, f->bytes));
  /* the fp16 scales, kept as fp16 (MXFP4: its E8M0 byte as float32) */
  tg_tensor *flat = tg_reshape(blk, TG_SHAPE(g * ROWS * nb, f->bytes));
  tg_tensor *d = t == GGML_TYPE_MXFP4 ? qt_e8m0_half(qt_u8(flat, f->scale_at, 1))
                                      : tg_bitcast(tg_cast(qt_u16(flat, f->scale_at, f->nscales), TG_U16), TG_F16);
  d = tg_reshape(d, TG_SHAPE(g, ROWS, nb, f->nscales));
  /* (g, nscales * nb, 16): each scale of every block, then the next one
   * (so 16 rows' scales are one vector, and one row group's are contiguous
   * 16 at a time, not a panel of 32 to the kernel heuristic) */
  tg_tensor *s = tg_reshape(tg_permute(d, TG_AXES(0, 3, 2, 1)), TG_SHAPE(g, (int64_t)f->nscales * nb, ROWS));
  if (!s || tg_realize(tg_assign(sv, s)) < 0) return -1;
  tg_tensor *parts[4] = { NULL, NULL, NULL, NULL };
  int nparts = 1;
  const int bits_at = t == GGML_TYPE_MXFP4 ? 1 : 2 * f->nscales;   /* Q4_1 and Q5_1: d and m before the bits */
  if (t == GGML_TYPE_Q4_0 || t == GGML_TYPE_Q4_1 || t == GGML_TYPE_IQ4_NL || t == GGML_TYPE_MXFP4) parts[0] = in_groups(blk, bits_at, 4);
  else if (t == GGML_TYPE_Q5_0 || t == GGML_TYPE_Q5_1) {
    /* qh's bit v (value v = 16h + 4gi + p) to bit 4h + gi of byte p */
    tg_tensor *bit = qt_unpack(tg_cast(qm_slice_last(blk, bits_at, bits_at + 4), TG_I32), -1, 8, 1);           /* (g, 16, nb, 4, 8): v = 8*byte + bit */
    bit = tg_reshape(bit, TG_SHAPE(g, ROWS, nb, 2, 4, 4));                                          /* (.., h, gi, p) */
    tg_tensor *at = tg_reshape(tg_arange(0, 8, 1, TG_I32), TG_SHAPE(2, 4, 1));                       /* 4h + gi */
    tg_tensor *hb = tg_sum(tg_lshift(bit, at), TG_AXES(3, 4), false);                                /* (g, 16, nb, p) */
    parts[0] = in_groups(blk, bits_at + 4, 4);
    parts[1] = tg_permute(tg_cast(hb, TG_U8), TG_AXES(0, 2, 1, 3));                                  /* (g, nb, 16, p) */
    nparts = 2;
  }
  else if (t == GGML_TYPE_Q4_K || t == GGML_TYPE_Q5_K) {   /* scales and mins unpacked to bytes, 16 rows each */
    tg_tensor *sc, *mn;   /* (each its own part: stacked, every byte of both would be gated) */
    qt_scale_min_k4(tg_reshape(blk, TG_SHAPE(g * ROWS * nb, f->bytes)), 4, 1, &sc, &mn);
    parts[0] = tg_permute(tg_reshape(tg_cast(sc, TG_U8), TG_SHAPE(g, ROWS, nb, 8)), TG_AXES(0, 2, 3, 1));  /* (g, nb, 8, 16) */
    parts[1] = tg_permute(tg_reshape(tg_cast(mn, TG_U8), TG_SHAPE(g, ROWS, nb, 8)), TG_AXES(0, 2, 3, 1));
    bool q5 = t == GGML_TYPE_Q5_K;   /* Q5_K: qh (16..47) before qs (48..175), in the block as packed */
    parts[2] = in_groups(blk, 16, q5 ? 8 : 32);
    if (q5) parts[3] = in_groups(blk, 48, 32);
    nparts = q5 ? 4 : 3;
  }
  else if (t == GGML_TYPE_Q8_0) parts[0] = tg_bitwise_xor(in_groups(blk, 2, 8), tensor_const(128, TG_U8));   /* int8 w as w + 128 */
  else if (t == GGML_TYPE_IQ4_XS) {   /* the 8 sub-block scales ls - 32 (nibble ib of the 4 bytes at 4, bits 2ib of the word at 2) as int8, 16 rows each, then qs */
    tg_tensor *flat = tg_reshape(blk, TG_SHAPE(g * ROWS * nb, f->bytes));
    tg_tensor *lo = tg_reshape(qt_unpack(qt_u8(flat, 4, 4), 2, 2, 4), TG_SHAPE(g * ROWS * nb, 8));
    tg_tensor *hi = tg_reshape(qt_unpack(qt_u16(flat, 2, 1), 2, 8, 2), TG_SHAPE(g * ROWS * nb, 8));
    parts[0] = signed_scales(qt_or(lo, tg_lshifts(hi, 4)), g, nb, 8);
    parts[1] = in_groups(blk, 8, 32);
    nparts = 2;
  }
  else if (t == GGML_TYPE_Q3_K) {   /* the 16 6-bit scales (as dq_q3_k unpacks them) less 32, qs, hmask */
    tg_tensor *flat = tg_reshape(blk, TG_SHAPE(g * ROWS * nb, f->bytes));
    tg_tensor *lo = tg_reshape(qt_unpack(qt_u8(flat, 96, 8), 1, 2, 4), TG_SHAPE(g * ROWS * nb, 16));
    tg_tensor *hi = tg_reshape(qt_unpack(qt_u8(flat, 104, 4), 1, 4, 2), TG_SHAPE(g * ROWS * nb, 16));
    parts[0] = signed_scales(qt_or(lo, tg_lshifts(hi, 4)), g, nb, 16);
    parts[1] = in_groups(blk, 0, 8);
    parts[2] = in_groups(blk, 32, 16);
    nparts = 3;
  }
  else if (t == GGML_TYPE_Q2_K) {   /* the 16 4-bit scales, then the 16 mins, as bytes (16 rows each), qs */
    tg_tensor *sm = qt_unpack(tg_reshape(qm_slice_last(blk, 0, 16), TG_SHAPE(g, ROWS, nb, 16)), 3, 2, 4);   /* (g, 16, nb, 2, 16) */
    parts[0] = tg_permute(tg_reshape(sm, TG_SHAPE(g, ROWS, nb, 32)), TG_AXES(0, 2, 3, 1));               /* (g, nb, 32, 16) */
    parts[1] = in_groups(blk, 16, 16);
    nparts = 2;
  }
  else {   /* Q6_K: sub-block scales (16 rows per scale), then ql and qh interleaved */
    parts[0] = tg_permute(qm_slice_last(blk, 192, 208), TG_AXES(0, 2, 3, 1));
    nparts = 0;
  }
  return nparts ? place_parts(q, parts, nparts) : place_q6_k(q, parts[0], blk);
}

/* The packed tensors of a matrix of w_shape in format f, allocated: 0 or -1 */
static int packed_empty(const rows_format *f, tg_shape w, tg_tensor **s, tg_tensor **q) {
  int64_t g = w.d[0] / ROWS, nb = w.d[1] / f->block;
  *s = tg_empty(TG_SHAPE(g, (int64_t)f->nscales * nb, ROWS), f->scale_dtype);
  *q = tg_empty(TG_SHAPE(g, nb, f->quant_bytes), TG_U8);
  return *s && *q && tg_realize(*s) == 0 && tg_realize(*q) == 0 ? 0 : -1;
}

int tg_quant_pack_rows(tg_tensor *raw, int t, tg_shape w_shape, tg_tensor **scales, tg_tensor **quants) {
  if (!raw || !scales || !quants) return tg_seterr("tg_quant_pack_rows: NULL argument");
  *scales = *quants = NULL;
  if (!format_of(t, w_shape, "tg_quant_pack_rows")) return -1;
  return tg_quant_pack_rows_stacked(&raw, &w_shape.d[0], 1, t, w_shape.d[1], scales, quants);
}

int tg_quant_pack_rows_stacked(tg_tensor *const *raws, const int64_t *rows, int n, int t, int64_t cols, tg_tensor **scales, tg_tensor **quants) {
  if (!raws || !rows || !scales || !quants) return tg_seterr("tg_quant_pack_rows: NULL argument");
  *scales = *quants = NULL;
  if (n < 1 || n > 16) return tg_seterr("tg_quant_pack_rows: %d matrices (1 to 16 can be stacked)", n);
  int64_t total = 0;
  for (int i = 0; i < n; i++) {
    if (!raws[i]) return tg_seterr("tg_quant_pack_rows: matrix %d is NULL", i);
    if (rows[i] <= 0 || rows[i] % ROWS || tg_add_overflow_i64(total, rows[i], &total))
      return tg_seterr("tg_quant_pack_rows: matrix %d has %lld rows (a positive multiple of %d)", i, (long long)rows[i], ROWS);
  }
  tg_shape w_shape = TG_SHAPE(total, cols);
  const rows_format *f = format_of(t, w_shape, "tg_quant_pack_rows");
  if (!f) return -1;
  int64_t nb = cols / f->block;
  for (int i = 0; i < n; i++)
    if (tg_dtype_of(raws[i]) != TG_U8 || tg_numel(raws[i]) != tg_ggml_nbytes(t, rows[i] * cols))
      return tg_seterr("tg_quant_pack_rows: raw%s must be U8 with %lld bytes", n > 1 ? " part" : "", (long long)tg_ggml_nbytes(t, rows[i] * cols));
  tg_scope_begin();
  const char *dev_prev = tensor_device_begin(tg_device_of(raws[0]));   /* constants and tables on raw's device */
  tg_tensor *s, *q;
  int rc = packed_empty(f, w_shape, &s, &q);
  /* each matrix into its rows of the packed tensors: a stacked q|k|v's
   * parts are read where they lie, each by its own kernels (a lazy
   * concatenation would gate every byte) */
  for (int64_t i = 0, g0 = 0; i < n && rc == 0; g0 += rows[i] / ROWS, i++) {
    int64_t gi = rows[i] / ROWS;
    tg_tensor *sv = tg_shrink(s, (int64_t[]){ g0, 0, 0 }, (int64_t[]){ g0 + gi, tg_dim(s, 1), ROWS });
    tg_tensor *qv = tg_shrink(q, (int64_t[]){ g0, 0, 0 }, (int64_t[]){ g0 + gi, nb, f->quant_bytes });
    rc = sv && qv ? pack_into(raws[i], t, f, rows[i], nb, sv, qv) : -1;
  }
  if (rc == 0) *scales = tg_keep(s), *quants = tg_keep(q);
  tensor_device_end(dev_prev);
  tg_scope_end();
  return rc;
}

/* The levels plus 128 (IQ4_NL's and IQ4_XS's 1..241, MXFP4's 116..140:
 * unsigned bytes as vpdpbusd needs) of the nibbles q (U8, 0..15) in a
 * 16-entry table: a take from a 16-byte table, which the vectorizer turns
 * into a byte shuffle (OP_LUT16). */
static tg_tensor *nibble_levels(tg_tensor *q, const int *table) {
  uint8_t lv[16];
  for (int i = 0; i < 16; i++) lv[i] = (uint8_t)(table[i] + 128);
  return tg_take(tg_from_data(lv, TG_SHAPE(16), TG_U8), q);
}

/* Chains of 4 products of bytes added in int32, over axis p (size 4, the
 * last) of w (..., 4) and x (..., 4) (broadcasting): what the vectorizer
 * turns into byte dot products. acc (or NULL) is added first. */
static tg_tensor *dot4(tg_tensor *acc, tg_tensor *w, tg_tensor *x) {
  tg_tensor *d = NULL;
  for (int p = 0; p < 4; p++) {
    tg_tensor *prod = tg_mul(tg_cast(TG_GET(w, TG_ELLIPSIS, TG_I(p)), TG_I32), tg_cast(TG_GET(x, TG_ELLIPSIS, TG_I(p)), TG_I32));
    d = d ? tg_add(d, prod) : prod;
  }
  return acc ? tg_add(acc, d) : d;
}

/* The blocks' sums scaled and added over the nb axis: sumi * (d_w * d_x),
 * and with sign -1 or +1 a second term less or added: m_w * mx (mx (...,
 * nb, 1) per block of x), times the integer sum mini when not NULL. scales
 * (..., g, S, nb, 16) holds d (and m in plane 1 when sign is not 0).
 * Returns (..., g, 16). */
static tg_tensor *blocks_scaled(tg_tensor *x, int64_t nb, tg_tensor *scales, tg_tensor *dx, tg_tensor *sumi, tg_tensor *mini, tg_tensor *mx, int sign) {
  const tg_shape per_block = qm_with_tail(x, 3, (int64_t[]){ 1, nb, 1 });                     /* (..., 1, nb, 1) */
  tg_tensor *dd = tg_cast(scales, TG_F32);                                                    /* (..., g, S, nb, 16) */
  tg_tensor *v = tg_mul(tg_cast(sumi, TG_F32), tg_mul(TG_GET(dd, TG_ELLIPSIS, TG_I(0), TG_ALLIDX, TG_ALLIDX), tg_reshape(dx, per_block)));
  if (sign) {
    tg_tensor *mxm = tg_mul(TG_GET(dd, TG_ELLIPSIS, TG_I(1), TG_ALLIDX, TG_ALLIDX), tg_reshape(mx, per_block));
    tg_tensor *t = mini ? tg_mul(tg_cast(mini, TG_F32), mxm) : mxm;
    v = sign > 0 ? tg_add(v, t) : tg_sub(v, t);
  }
  return tg_sum(v, TG_AXES(-2), false);
}

/* Q4_0, Q5_0, Q8_0, IQ4_NL and MXFP4: per block, the integer sum over its
 * 32 values of (w - offset) * x (offset 8 for Q4_0's nibbles, 16 for Q5_0's
 * 5-bit values, 128 for Q8_0's, IQ4_NL's and MXFP4's shifted bytes), scaled
 * by d_w * d_x (ggml_vec_dot_{q4_0,q5_0,q8_0,iq4_nl,mxfp4}_q8_0; MXFP4's
 * d_w the E8M0 scale's half). Q4_1 and Q5_1: no offset, and the
 * block's min m_w times x's s (fp16 of d_x times its sum) added
 * (ggml_vec_dot_{q4_1,q5_1}_q8_1). x (..., K) float. */
static tg_tensor *rows_32(int t, tg_tensor *x, tg_tensor *scales, tg_tensor *quants, int64_t nb, int64_t g) {
  const bool mins = t == GGML_TYPE_Q4_1 || t == GGML_TYPE_Q5_1;
  tg_tensor *xq, *dx, *sx = NULL;
  qm_quantize_q8_1(x, TG_I8, &xq, &dx, mins ? &sx : NULL);                           /* (..., nb, 32), (..., nb, 1) */
  tg_tensor *xsum = mins ? NULL : tg_contiguous(tg_sum(tg_cast(xq, TG_I32), TG_AXES(-1), true));
  const tg_shape per_block = qm_with_tail(x, 3, (int64_t[]){ 1, nb, 1 });              /* (..., 1, nb, 1) */
  /* x's value h*16 + gi*4 + p against the rows' byte gi*4 + p (Q4_0: its
   * nibble h; IQ4_NL: its level + 128; Q5_0: that nibble and bit 4h + gi of group 4; Q8_0: h = 0
   * and 8 groups) */
  const bool q5 = t == GGML_TYPE_Q5_0 || t == GGML_TYPE_Q5_1;
  /* IQ4_NL, MXFP4: Q4_0's nibbles, looked up as levels + 128 */
  const int *levels = t == GGML_TYPE_IQ4_NL ? qt_kvalues_iq4nl : t == GGML_TYPE_MXFP4 ? qt_kvalues_mxfp4 : NULL;
  const bool iq4 = levels != NULL;
  const int nh = t == GGML_TYPE_Q8_0 ? 1 : 2, ng = 8 / nh, offset = mins ? 0 : q5 ? 16 : nh == 1 || iq4 ? 128 : 8;
  tg_tensor *xv = tg_reshape(xq, qm_with_tail(x, 6, (int64_t[]){ 1, nb, nh, ng, 1, 4 }));   /* (..., 1, nb, h, gi, 1, p) */
  tg_tensor *q = tg_reshape(quants, qm_with_tail(quants, 3, (int64_t[]){ ng + q5, ROWS, 4 }));
  tg_tensor *val[2] = { q, NULL };
  if (nh == 2) val[0] = tg_bitwise_and(q, tensor_const(15, TG_U8)), val[1] = tg_rshifts(q, 4);
  if (iq4) val[0] = nibble_levels(val[0], levels), val[1] = nibble_levels(val[1], levels);
  tg_tensor *fifth = q5 ? TG_GET(q, TG_ELLIPSIS, TG_I(ng), TG_ALLIDX, TG_ALLIDX) : NULL;                  /* (g, nb, 16, p) */
  tg_tensor *dot = NULL;
  for (int h = 0; h < nh; h++)
    for (int gi = 0; gi < ng; gi++) {
      tg_tensor *w = TG_GET(val[h], TG_ELLIPSIS, TG_I(gi), TG_ALLIDX, TG_ALLIDX);                             /* (g, nb, 16, p) */
      if (q5) {   /* bit 4h + gi of the fifth-bit group, to bit 4 */
        tg_tensor *b = 4 * h + gi ? tg_rshifts(fifth, 4 * h + gi) : fifth;
        w = tg_bitwise_or(w, tg_lshifts(tg_bitwise_and(b, tensor_const(1, TG_U8)), 4));
      }
      tg_tensor *xs = TG_GET(xv, TG_ELLIPSIS, TG_I(h), TG_I(gi), TG_ALLIDX, TG_ALLIDX);          /* (..., 1, nb, 1, p) */
      dot = dot4(dot, w, xs);
    }
  tg_tensor *blk = offset ? tg_sub(dot, tg_mul(tg_reshape(xsum, per_block), tensor_const(offset, TG_I32))) : dot;
  return blocks_scaled(x, nb, scales, dx, blk, NULL, sx, mins ? 1 : 0);
}

/* Q4_K: per sub-block j = 2c + h of 32 values (value 64c + 32h + l is
 * nibble h of qs[32c + l]), sum of q * x times the 6-bit scale, and the
 * 6-bit min times the sum of x's sub-block; the super-block's two integer
 * sums (at most 8 * 63 * 32 * 31 * 127 in size) scaled by d_w * d_x and
 * dmin_w * d_x (ggml_vec_dot_q4_K_q8_K). Q5_K (q5) adds bit j of qh[l] as
 * each value's fifth bit (ggml_vec_dot_q5_K_q8_K). */
static tg_tensor *rows_q45_k(tg_tensor *x, tg_tensor *scales, tg_tensor *quants, int64_t nb, int64_t g, bool q5) {
  tg_tensor *xq, *dx;
  qm_quantize_q8_k(x, TG_I8, &xq, &dx);                                               /* (..., nb, 256), (..., nb, 1) */
  tg_tensor *x32 = tg_reshape(xq, qm_with_tail(xq, 2, (int64_t[]){ 8, 32 }));
  tg_tensor *xsum = tg_contiguous(tg_sum(tg_cast(x32, TG_I32), TG_AXES(-1), false));  /* (..., nb, j) */
  tg_tensor *xs = tg_reshape(xsum, qm_with_tail(x, 4, (int64_t[]){ 1, nb, 1, 8 }));     /* (..., 1, nb, 1, j) */
  tg_tensor *xv = tg_reshape(xq, qm_with_tail(x, 6, (int64_t[]){ 1, nb, 1, 8, 8, 4 })); /* (..., 1, nb, 1, j, t, p) */
  tg_tensor *sm = split_last(quants, 0, 16 * ROWS, 3, (int64_t[]){ 2, 8, ROWS });
  const int64_t qs_at = 16 * ROWS + (q5 ? 8 * 64 : 0);   /* Q5_K: after qh */
  tg_tensor *qs = split_last(quants, qs_at, qs_at + 32 * 64, 3, (int64_t[]){ 32, ROWS, 4 });
  tg_tensor *qh = q5 ? split_last(quants, 16 * ROWS, 16 * ROWS + 8 * 64, 3, (int64_t[]){ 8, ROWS, 4 }) : NULL;
  tg_tensor *sumi = NULL, *summ = NULL;
  for (int j = 0; j < 8; j++) {
    int c = j / 2, h = j % 2;
    tg_tensor *dot = NULL;
    for (int t = 0; t < 8; t++) {
      tg_tensor *w = TG_GET(qs, TG_ELLIPSIS, TG_I(8 * c + t), TG_ALLIDX, TG_ALLIDX);                           /* (g, nb, 16, p) */
      w = h ? tg_rshifts(w, 4) : tg_bitwise_and(w, tensor_const(15, TG_U8));
      if (q5) {   /* bit j of qh's group t, to bit 4 */
        tg_tensor *b = TG_GET(qh, TG_ELLIPSIS, TG_I(t), TG_ALLIDX, TG_ALLIDX);
        w = tg_bitwise_or(w, tg_lshifts(tg_bitwise_and(j ? tg_rshifts(b, j) : b, tensor_const(1, TG_U8)), 4));
      }
      dot = dot4(dot, w, TG_GET(xv, TG_ELLIPSIS, TG_I(j), TG_I(t), TG_ALLIDX));
    }
    tg_tensor *sc = tg_cast(TG_GET(sm, TG_ELLIPSIS, TG_I(0), TG_I(j), TG_ALLIDX), TG_I32);          /* (g, nb, 16) */
    tg_tensor *mn = tg_cast(TG_GET(sm, TG_ELLIPSIS, TG_I(1), TG_I(j), TG_ALLIDX), TG_I32);
    tg_tensor *a = tg_mul(dot, sc), *b = tg_mul(TG_GET(xs, TG_ELLIPSIS, TG_I(j)), mn);
    sumi = sumi ? tg_add(sumi, a) : a;
    summ = summ ? tg_add(summ, b) : b;
  }
  return blocks_scaled(x, nb, scales, dx, sumi, summ, dx, -1);
}

/* Q6_K: per sub-block s of 16 values, sum of (q - 32) * x times the int8
 * scale, the super-block's integer sum scaled by d_w * d_x
 * (ggml_vec_dot_q6_K_q8_K). Value j = 128n + 32c + l of a super-block is
 * nibble c>>1 of ql[64n + 32(c&1) + l] and bits 2c of qh[32n + l]; with
 * l = 16*s2 + 4t + p, its sub-block is s = 8n + 2c + s2. The 16 sub-blocks
 * are written out (constant shifts; one load of a group serves every
 * sub-block that uses it) and summed in int32 (at most 16 * 128 * 16 * 32 *
 * 127 in size), so a super-block costs one conversion to float. */
/* x quantized to Q8_K for weights with nsub signed-scale sub-blocks per
 * super-block: *xv (..., 1, nb, 1, s, t, p) its values by sub-block and
 * 4-byte group, *bs (..., 1, nb, 1, s) the sub-blocks' sums, *dx (..., nb, 1). */
static void q8_k_subblocks(tg_tensor *x, int64_t nb, int nsub, tg_tensor **xv, tg_tensor **bs, tg_tensor **dx) {
  tg_tensor *xq;
  qm_quantize_q8_k(x, TG_I8, &xq, dx);                                                  /* (..., nb, 256) */
  tg_tensor *xs = tg_reshape(xq, qm_with_tail(xq, 2, (int64_t[]){ nsub, 256 / nsub }));  /* (..., nb, s, 256/nsub) */
  tg_tensor *bsum = tg_contiguous(tg_sum(tg_cast(xs, TG_I32), TG_AXES(-1), false));     /* (..., nb, s) */
  *bs = tg_reshape(bsum, qm_with_tail(x, 4, (int64_t[]){ 1, nb, 1, nsub }));
  *xv = tg_reshape(xq, qm_with_tail(x, 6, (int64_t[]){ 1, nb, 1, nsub, 64 / nsub, 4 }));
}

static tg_tensor *rows_q6_k(tg_tensor *x, tg_tensor *scales, tg_tensor *quants, int64_t nb) {
  tg_tensor *xv, *bs, *dx;
  q8_k_subblocks(x, nb, 16, &xv, &bs, &dx);
  tg_tensor *sc = tg_bitcast(split_last(quants, 0, 16 * ROWS, 2, (int64_t[]){ 16, ROWS }), TG_I8);   /* (..., g, nb, s, 16) */
  tg_tensor *lines = q6_k_lines(quants);
  tg_tensor *total = NULL;
  /* the sub-blocks in the order of their lines (an int32 sum: any order is exact) */
  for (int i = 0; i < 16; i++) {
    int n = i / 8, s2 = i / 4 % 2, c0 = i / 2 % 2, c = 2 * (i % 2) + c0, s = 8 * n + 2 * c + s2;
    tg_tensor *dot = NULL;
    for (int t = 0; t < 4; t++) {
      tg_tensor *lo = TG_GET(lines, TG_ELLIPSIS, TG_I(n), TG_I(s2), TG_I(1 + c0), TG_I(t), TG_ALLIDX, TG_ALLIDX);   /* (..., g, nb, 16, p) */
      tg_tensor *hi = TG_GET(lines, TG_ELLIPSIS, TG_I(n), TG_I(s2), TG_I(0), TG_I(t), TG_ALLIDX, TG_ALLIDX);
      if (c >> 1) lo = tg_rshifts(lo, 4);
      lo = tg_bitwise_and(lo, tensor_const(15, TG_U8));
      if (c) hi = tg_rshifts(hi, 2 * c);
      hi = tg_lshifts(tg_bitwise_and(hi, tensor_const(3, TG_U8)), 4);
      dot = dot4(dot, tg_bitwise_or(lo, hi), TG_GET(xv, TG_ELLIPSIS, TG_I(s), TG_I(t), TG_ALLIDX));
    }
    tg_tensor *sub = tg_sub(dot, tg_mul(TG_GET(bs, TG_ELLIPSIS, TG_I(s)), tensor_const(32, TG_I32)));
    sub = tg_mul(sub, tg_cast(TG_GET(sc, TG_ELLIPSIS, TG_I(s), TG_ALLIDX), TG_I32));
    total = total ? tg_add(total, sub) : sub;
  }
  return blocks_scaled(x, nb, scales, dx, total, NULL, NULL, 0);
}

/* Q2_K and Q3_K: per sub-block s = 8n + 2j + h of 16 values, value l of
 * it being bits 2j of qs[32n + 16h + l] (Q3_K: and bit 4n + j of
 * hmask[16h + l] as bit 2, the value less 4: a clear hmask bit subtracts
 * 4). Q3_K: the sum of q * x times the int8 scale, the super-block's
 * integer sum scaled by d_w * d_x (ggml_vec_dot_q3_K_q8_K). Q2_K: the
 * 4-bit scale times the sum of q * x, less the 4-bit min times the sum of
 * x's sub-block; the two integer sums scaled by d_w * d_x and dmin_w * d_x
 * (ggml_vec_dot_q2_K_q8_K). */
static tg_tensor *rows_q23_k(tg_tensor *x, tg_tensor *scales, tg_tensor *quants, int64_t nb, bool q3) {
  tg_tensor *xv, *bs, *dx;
  q8_k_subblocks(x, nb, 16, &xv, &bs, &dx);
  const int64_t sm_bytes = (q3 ? 16 : 32) * ROWS;   /* Q3_K: int8 scales; Q2_K: scales, then mins */
  tg_tensor *sm = split_last(quants, 0, sm_bytes, 3, (int64_t[]){ q3 ? 1 : 2, 16, ROWS });   /* (..., g, nb, 1 or 2, s, 16) */
  if (q3) sm = tg_bitcast(sm, TG_I8);
  const int64_t qs_at = sm_bytes + (q3 ? 8 * 64 : 0);   /* Q3_K: after hmask */
  tg_tensor *qs = split_last(quants, qs_at, qs_at + 16 * 64, 3, (int64_t[]){ 16, ROWS, 4 });
  tg_tensor *hm = q3 ? split_last(quants, sm_bytes, sm_bytes + 8 * 64, 3, (int64_t[]){ 8, ROWS, 4 }) : NULL;
  tg_tensor *sumi = NULL, *summ = NULL;
  for (int s = 0; s < 16; s++) {
    int n = s / 8, j = s % 8 / 2, h = s % 2;
    tg_tensor *dot = NULL;
    for (int t = 0; t < 4; t++) {
      tg_tensor *w = TG_GET(qs, TG_ELLIPSIS, TG_I(8 * n + 4 * h + t), TG_ALLIDX, TG_ALLIDX);
      w = tg_bitwise_and(j ? tg_rshifts(w, 2 * j) : w, tensor_const(3, TG_U8));
      if (q3) {
        tg_tensor *hb = TG_GET(hm, TG_ELLIPSIS, TG_I(4 * h + t), TG_ALLIDX, TG_ALLIDX);
        if (4 * n + j) hb = tg_rshifts(hb, 4 * n + j);
        w = tg_bitwise_or(w, tg_lshifts(tg_bitwise_and(hb, tensor_const(1, TG_U8)), 2));
      }
      dot = dot4(dot, w, TG_GET(xv, TG_ELLIPSIS, TG_I(s), TG_I(t), TG_ALLIDX));
    }
    tg_tensor *xsum = TG_GET(bs, TG_ELLIPSIS, TG_I(s));
    if (q3) dot = tg_sub(dot, tg_mul(xsum, tensor_const(4, TG_I32)));
    tg_tensor *a = tg_mul(dot, tg_cast(TG_GET(sm, TG_ELLIPSIS, TG_I(0), TG_I(s), TG_ALLIDX), TG_I32));
    sumi = sumi ? tg_add(sumi, a) : a;
    if (!q3) {
      tg_tensor *b = tg_mul(xsum, tg_cast(TG_GET(sm, TG_ELLIPSIS, TG_I(1), TG_I(s), TG_ALLIDX), TG_I32));
      summ = summ ? tg_add(summ, b) : b;
    }
  }
  return blocks_scaled(x, nb, scales, dx, sumi, summ, dx, q3 ? 0 : -1);
}

/* IQ4_XS: per sub-block s of 32 values (nibble h of qs's group 4s + t is
 * value 32s + 16h + 4t + p), sum of (level + 128 - 128) * x times the
 * int8 scale ls - 32, the super-block's integer sum (at most 8 *
 * 32 * 32 * 127 * 127 in size) scaled by d_w * d_x
 * (ggml_vec_dot_iq4_xs_q8_K). */
static tg_tensor *rows_iq4_xs(tg_tensor *x, tg_tensor *scales, tg_tensor *quants, int64_t nb) {
  tg_tensor *xv, *bs, *dx;
  q8_k_subblocks(x, nb, 8, &xv, &bs, &dx);
  tg_tensor *sc = tg_bitcast(split_last(quants, 0, 8 * ROWS, 2, (int64_t[]){ 8, ROWS }), TG_I8);   /* (..., g, nb, s, 16) */
  tg_tensor *qs = split_last(quants, 8 * ROWS, 8 * ROWS + 32 * 64, 3, (int64_t[]){ 32, ROWS, 4 });
  tg_tensor *lv[2] = { nibble_levels(tg_bitwise_and(qs, tensor_const(15, TG_U8)), qt_kvalues_iq4nl), nibble_levels(tg_rshifts(qs, 4), qt_kvalues_iq4nl) };
  tg_tensor *total = NULL;
  for (int s = 0; s < 8; s++) {
    tg_tensor *dot = NULL;
    for (int h = 0; h < 2; h++)
      for (int t = 0; t < 4; t++)
        dot = dot4(dot, TG_GET(lv[h], TG_ELLIPSIS, TG_I(4 * s + t), TG_ALLIDX, TG_ALLIDX), TG_GET(xv, TG_ELLIPSIS, TG_I(s), TG_I(4 * h + t), TG_ALLIDX));
    tg_tensor *sub = tg_sub(dot, tg_mul(TG_GET(bs, TG_ELLIPSIS, TG_I(s)), tensor_const(128, TG_I32)));
    sub = tg_mul(sub, tg_cast(TG_GET(sc, TG_ELLIPSIS, TG_I(s), TG_ALLIDX), TG_I32));
    total = total ? tg_add(total, sub) : sub;
  }
  return blocks_scaled(x, nb, scales, dx, total, NULL, NULL, 0);
}

/* Q6_K's 6-bit values (0..63) of packed quants: (g, nb, 16 s, 4 t, 16, 4 p),
 * value 16s + 4t + p of the super-block; shifts along broadcast axes, so
 * one expression covers every sub-block. */
static tg_tensor *q6_k_values(tg_tensor *quants, int64_t g, int64_t nb) {
  tg_tensor *lines = q6_k_lines(quants);   /* (g, nb, n, s2, kind, t, 16, p) */
  /* ql's nibble c1 of group 16n + 8c0 + 4s2 + t: (g, nb, n, c1, c0, s2, t, 16, p) */
  tg_tensor *ql = tg_permute(q6_k_kinds(lines, 1, 3), TG_AXES(0, 1, 2, 4, 3, 5, 6, 7));
  tg_tensor *nib = qt_unpack(ql, 3, 2, 4);
  /* qh's 2 bits 2c = 2(2c1 + c0) of group 8n + 4s2 + t */
  tg_tensor *qh = tg_reshape(q6_k_kinds(lines, 0, 1), TG_SHAPE(g, nb, 2, 2, 4, ROWS, 4));
  tg_tensor *hi = tg_reshape(qt_unpack(qh, 3, 4, 2), TG_SHAPE(g, nb, 2, 2, 2, 2, 4, ROWS, 4));
  return tg_reshape(tg_bitwise_or(nib, tg_lshifts(hi, 4)), TG_SHAPE(g, nb, 16, 4, ROWS, 4));
}

/* The matvec of every type; quants (..., g, nb, bytes) and scales (...,
 * g, S, nb, 16) may have leading axes (a take's,
 * tg_quant_matmul_rows_experts), which the result keeps: (..., g, 16). */
static tg_tensor *rows_any(int t, tg_tensor *x, tg_tensor *scales, tg_tensor *quants, int64_t nb, int64_t g) {
  switch (t) {
    case GGML_TYPE_Q4_K: case GGML_TYPE_Q5_K: return rows_q45_k(x, scales, quants, nb, g, t == GGML_TYPE_Q5_K);
    case GGML_TYPE_Q6_K: return rows_q6_k(x, scales, quants, nb);
    case GGML_TYPE_IQ4_XS: return rows_iq4_xs(x, scales, quants, nb);
    case GGML_TYPE_Q2_K: case GGML_TYPE_Q3_K: return rows_q23_k(x, scales, quants, nb, t == GGML_TYPE_Q3_K);
    default: return rows_32(t, x, scales, quants, nb, g);
  }
}

tg_tensor *tg_dequantize_rows(tg_tensor *scales, tg_tensor *quants, int t, tg_shape w_shape) {
  if (!scales || !quants) return tg_seterr("tg_dequantize_rows: NULL argument"), NULL;
  if (w_shape.ndim == 3) {   /* experts (E, N, K), packed as the (E * N, K) matrix */
    if (w_shape.d[1] % ROWS || w_shape.d[0] <= 0 || w_shape.d[1] <= 0 || w_shape.d[0] > INT64_MAX / w_shape.d[1])
      return tg_seterr("tg_dequantize_rows: experts W (%lld, %lld, %lld) need N a multiple of %d", (long long)w_shape.d[0], (long long)w_shape.d[1],
                       (long long)w_shape.d[2], ROWS), NULL;
    int64_t e = w_shape.d[0], n = w_shape.d[1], k = w_shape.d[2];
    tg_scope_begin();
    tg_tensor *w;
    const rows_format *f = tg_ndim(quants) == 4 ? format_of(t, TG_SHAPE(e * n, k), "tg_dequantize_rows") : NULL;
    if (f && expert_view(scales, quants, f, e, n, k)) {
      /* viewed per expert: with the groups first, (N/16 * E, ...) is a
       * matrix of groups whose values come back in the experts' order
       * (sharded on the groups, each part stays a box of every view) */
      tg_tensor *sc = tg_flatten(tg_transpose(scales, 0, 1), 0, 1), *qs = tg_flatten(tg_transpose(quants, 0, 1), 0, 1);
      tg_tensor *v = tg_reshape(tg_dequantize_rows(sc, qs, t, TG_SHAPE(e * n, k)), TG_SHAPE(n / ROWS, e, ROWS, k));
      w = tg_reshape(tg_transpose(v, 0, 1), w_shape);
    } else w = tg_reshape(tg_dequantize_rows(scales, quants, t, TG_SHAPE(e * n, k)), w_shape);
    if (w) tg_keep(w);
    tg_scope_end();
    return w;
  }
  const rows_format *f = format_of(t, w_shape, "tg_dequantize_rows");
  if (!f || !packed_shapes_ok(scales, quants, f, w_shape, "tg_dequantize_rows")) return NULL;
  int64_t n = w_shape.d[0], k = w_shape.d[1], nb = k / f->block, g = n / ROWS;
  tg_scope_begin();
  const char *dev_prev = tensor_device_begin(tg_device_of(quants));   /* constants and tables on quants's device */
  tg_tensor *d = tg_cast(scale_planes(scales, f, g, nb), TG_F32), *v, *w;
  /* ggml's dequantize_row_*: (q - 8) * d, (q - 16) * d, q * d, d * sc * q - dmin * m,
   * d * sc * (q - 32), in that order of float operations */
  if (t == GGML_TYPE_Q4_K || t == GGML_TYPE_Q5_K) {   /* (d * sc) * q - dmin * m, value 64c + 32h + 4t + p */
    const int64_t qs_at = 16 * ROWS + (t == GGML_TYPE_Q5_K ? 8 * 64 : 0);   /* Q5_K: after qh */
    tg_tensor *qs = tg_reshape(qm_slice_last(quants, qs_at, qs_at + 32 * 64), TG_SHAPE(g, nb, 4, 8, ROWS, 4));
    tg_tensor *q = qt_unpack(qs, 3, 2, 4);                                                                      /* (g, nb, c, h, t, 16, p) */
    if (t == GGML_TYPE_Q5_K) {   /* bit 2c + h of qh's group t */
      tg_tensor *qh = tg_reshape(qm_slice_last(quants, 16 * ROWS, 16 * ROWS + 8 * 64), TG_SHAPE(g, nb, 8, ROWS, 4));
      tg_tensor *hb = tg_reshape(qt_unpack(qh, 2, 8, 1), TG_SHAPE(g, nb, 4, 2, 8, ROWS, 4));
      q = tg_bitwise_or(q, tg_lshifts(hb, 4));
    }
    tg_tensor *sm = tg_cast(tg_reshape(qm_slice_last(quants, 0, 16 * ROWS), TG_SHAPE(g, nb, 2, 4, 2, 1, ROWS, 1)), TG_F32);
    tg_tensor *dd = tg_reshape(d, TG_SHAPE(g, 2, nb, 1, 1, 1, ROWS, 1));
    tg_tensor *ds = tg_mul(TG_GET(dd, TG_ALLIDX, TG_I(0)), TG_GET(sm, TG_ALLIDX, TG_ALLIDX, TG_I(0)));
    tg_tensor *dm = tg_mul(TG_GET(dd, TG_ALLIDX, TG_I(1)), TG_GET(sm, TG_ALLIDX, TG_ALLIDX, TG_I(1)));
    w = tg_sub(tg_mul(ds, tg_cast(q, TG_F32)), dm);                                                             /* (g, nb, c, h, t, 16, p) */
    w = tg_permute(w, TG_AXES(0, 5, 1, 2, 3, 4, 6));
  } else if (t == GGML_TYPE_Q3_K) {   /* (d * (sc - 32)) * (q - 4), value 16s + 4t + p, s = 8n + 2j + h */
    tg_tensor *sc = tg_reshape(tg_bitcast(qm_slice_last(quants, 0, 16 * ROWS), TG_I8), TG_SHAPE(g, nb, 16, 1, ROWS, 1));
    tg_tensor *qs = tg_reshape(qm_slice_last(quants, 16 * ROWS + 8 * 64, 16 * ROWS + 24 * 64), TG_SHAPE(g, nb, 2, 2, 4, ROWS, 4));   /* (n, h, t) */
    tg_tensor *hm = tg_reshape(qm_slice_last(quants, 16 * ROWS, 16 * ROWS + 8 * 64), TG_SHAPE(g, nb, 2, 4, ROWS, 4));   /* (h, t) */
    tg_tensor *lo = qt_unpack(qs, 3, 4, 2);                                                                   /* (g, nb, n, j, h, t, 16, p) */
    tg_tensor *hb = tg_reshape(qt_unpack(hm, 2, 8, 1), TG_SHAPE(g, nb, 2, 4, 2, 4, ROWS, 4));                 /* bit 4n + j */
    tg_tensor *q = tg_subs(tg_cast(tg_reshape(tg_bitwise_or(lo, tg_lshifts(hb, 2)), TG_SHAPE(g, nb, 16, 4, ROWS, 4)), TG_I32), 4);
    tg_tensor *dl = tg_mul(tg_reshape(d, TG_SHAPE(g, nb, 1, 1, ROWS, 1)), tg_cast(sc, TG_F32));
    w = tg_permute(tg_mul(dl, tg_cast(q, TG_F32)), TG_AXES(0, 4, 1, 2, 3, 5));
  } else if (t == GGML_TYPE_Q2_K) {   /* (d * sc) * q - dmin * m, value 16s + 4t + p, s = 8n + 2j + h */
    tg_tensor *sm = tg_cast(tg_reshape(qm_slice_last(quants, 0, 32 * ROWS), TG_SHAPE(g, nb, 2, 16, 1, ROWS, 1)), TG_F32);
    tg_tensor *qs = tg_reshape(qm_slice_last(quants, 32 * ROWS, 32 * ROWS + 16 * 64), TG_SHAPE(g, nb, 2, 2, 4, ROWS, 4));   /* (n, h, t) */
    tg_tensor *q = tg_reshape(qt_unpack(qs, 3, 4, 2), TG_SHAPE(g, nb, 16, 4, ROWS, 4));                        /* (n, j, h) = s */
    tg_tensor *dd = tg_reshape(d, TG_SHAPE(g, 2, nb, 1, 1, ROWS, 1));
    tg_tensor *ds = tg_mul(TG_GET(dd, TG_ALLIDX, TG_I(0)), TG_GET(sm, TG_ALLIDX, TG_ALLIDX, TG_I(0)));
    tg_tensor *dm = tg_mul(TG_GET(dd, TG_ALLIDX, TG_I(1)), TG_GET(sm, TG_ALLIDX, TG_ALLIDX, TG_I(1)));
    w = tg_permute(tg_sub(tg_mul(ds, tg_cast(q, TG_F32)), dm), TG_AXES(0, 4, 1, 2, 3, 5));
  } else if (t == GGML_TYPE_IQ4_XS) {   /* (d * (ls - 32)) * level, value 32s + 16h + 4t + p */
    tg_tensor *sc = tg_reshape(tg_bitcast(qm_slice_last(quants, 0, 8 * ROWS), TG_I8), TG_SHAPE(g, nb, 8, 1, 1, ROWS, 1));
    tg_tensor *qs = tg_reshape(qm_slice_last(quants, 8 * ROWS, 8 * ROWS + 32 * 64), TG_SHAPE(g, nb, 8, 4, ROWS, 4));
    tg_tensor *lv = qt_lut(qt_unpack(qs, 3, 2, 4), qt_kvalues_iq4nl, 16);                                     /* (g, nb, s, h, t, 16, p) */
    tg_tensor *dl = tg_mul(tg_reshape(d, TG_SHAPE(g, nb, 1, 1, 1, ROWS, 1)), tg_cast(sc, TG_F32));
    w = tg_permute(tg_mul(dl, tg_cast(lv, TG_F32)), TG_AXES(0, 5, 1, 2, 3, 4, 6));
  } else if (t == GGML_TYPE_Q6_K) {
    tg_tensor *sc = tg_reshape(tg_bitcast(qm_slice_last(quants, 0, 16 * ROWS), TG_I8), TG_SHAPE(g, nb, 16, 1, ROWS, 1));
    tg_tensor *q = tg_sub(tg_cast(q6_k_values(quants, g, nb), TG_I32), tensor_const(32, TG_I32));
    w = tg_mul(tg_mul(tg_reshape(d, TG_SHAPE(g, nb, 1, 1, ROWS, 1)), tg_cast(sc, TG_F32)), tg_cast(q, TG_F32));   /* (g, nb, s, t, 16, p) */
    w = tg_permute(w, TG_AXES(0, 4, 1, 2, 3, 5));
  } else {
    const bool mins = t == GGML_TYPE_Q4_1 || t == GGML_TYPE_Q5_1;   /* q * d + m, no offset */
    if (t == GGML_TYPE_Q4_0 || t == GGML_TYPE_Q4_1)   /* nibble h of byte gi*4 + p is value h*16 + gi*4 + p */
      v = tg_cast(qt_unpack(tg_reshape(quants, TG_SHAPE(g, nb, 4, ROWS, 4)), 2, 2, 4), TG_I32);
    else if (t == GGML_TYPE_IQ4_NL || t == GGML_TYPE_MXFP4)   /* and its level (ggml's x0 * d) */
      v = qt_lut(qt_unpack(tg_reshape(quants, TG_SHAPE(g, nb, 4, ROWS, 4)), 2, 2, 4), t == GGML_TYPE_MXFP4 ? qt_kvalues_mxfp4 : qt_kvalues_iq4nl, 16);
    else if (t == GGML_TYPE_Q5_0 || t == GGML_TYPE_Q5_1) {   /* and bit 4h + gi of the fifth-bit group p */
      tg_tensor *lo = qt_unpack(tg_reshape(qm_slice_last(quants, 0, 256), TG_SHAPE(g, nb, 4, ROWS, 4)), 2, 2, 4);      /* (g, nb, h, gi, 16, p) */
      tg_tensor *fb = tg_reshape(qm_slice_last(quants, 256, 320), TG_SHAPE(g, nb, 1, ROWS, 4));
      tg_tensor *hi = tg_reshape(qt_unpack(fb, 2, 8, 1), TG_SHAPE(g, nb, 2, 4, ROWS, 4));
      v = tg_cast(tg_bitwise_or(lo, tg_lshifts(hi, 4)), TG_I32);
    }
    else v = tg_cast(tg_bitcast(tg_bitwise_xor(tg_reshape(quants, TG_SHAPE(g, nb, 1, 8, ROWS, 4)), tensor_const(128, TG_U8)), TG_I8), TG_I32);
    if (t == GGML_TYPE_Q4_0 || t == GGML_TYPE_Q5_0) v = tg_sub(v, tensor_const(t == GGML_TYPE_Q4_0 ? 8 : 16, TG_I32));
    if (mins) {
      tg_tensor *dm = tg_reshape(d, TG_SHAPE(g, 2, nb, 1, 1, ROWS, 1));
      w = tg_add(tg_mul(tg_cast(v, TG_F32), TG_GET(dm, TG_ALLIDX, TG_I(0))), TG_GET(dm, TG_ALLIDX, TG_I(1)));
    } else
      w = tg_mul(tg_cast(v, TG_F32), tg_reshape(d, TG_SHAPE(g, nb, 1, 1, ROWS, 1)));                            /* (g, nb, h, gi, 16, p) */
    w = tg_permute(w, TG_AXES(0, 4, 1, 2, 3, 5));
  }
  w = tg_reshape(w, TG_SHAPE(n, k));
  if (w) tg_keep(w);
  tensor_device_end(dev_prev);
  tg_scope_end();
  return w;
}

tg_tensor *tg_quant_matmul_rows(tg_tensor *x, tg_tensor *scales, tg_tensor *quants, int t, tg_shape w_shape) {
  if (!x || !scales || !quants) return tg_seterr("tg_quant_matmul_rows: NULL argument"), NULL;
  const rows_format *f = format_of(t, w_shape, "tg_quant_matmul_rows");
  if (!f) return NULL;
  int64_t n = w_shape.d[0], k = w_shape.d[1], nb = k / f->block, g = n / ROWS;
  int nd = tg_ndim(x);
  if (nd < 1 || tg_dim(x, nd - 1) != k) return tg_seterr("tg_quant_matmul_rows: x's last dimension must be K = %lld", (long long)k), NULL;
  if (!tg_dtype_is_float(tg_dtype_of(x))) return tg_seterr("tg_quant_matmul_rows: x must be a float tensor, not %s", tg_dtype_name(tg_dtype_of(x))), NULL;
  if (!packed_shapes_ok(scales, quants, f, w_shape, "tg_quant_matmul_rows")) return NULL;
  tg_scope_begin();
  const char *dev_prev = tensor_device_begin(tg_device_of(quants));   /* constants and tables on quants's device */
  scales = scale_planes(scales, f, g, nb);
  tg_tensor *y = rows_any(t, x, scales, quants, nb, g);
  y = tg_reshape(y, qm_with_tail(x, 1, (int64_t[]){ n }));
  if (y) tg_keep(y);
  tensor_device_end(dev_prev);
  tg_scope_end();
  return y;
}

/* The experts' packed groups are read through a take of the router's
 * choices. A take's index is a loaded value whose range the kernel does not
 * know, so the table's rows are gated (an index out of range reads zero),
 * and a gated byte load kept the byte dot products scalar (qwen3moe's gate
 * and up 0.41 ms a layer against the float path's 0.14). The index read
 * modulo E as an unsigned value has a range the index math knows ([0, E);
 * a clamp's where() does not bound it): the gate folds away and the loads
 * are plain vector loads at a loaded offset. */
tg_tensor *tg_quant_matmul_rows_experts(tg_tensor *x, tg_tensor *scales, tg_tensor *quants, int t, tg_shape w_shape, tg_tensor *index) {
  static const char *who = "tg_quant_matmul_rows_experts";
  if (!x || !scales || !quants || !index) return tg_seterr("%s: NULL argument", who), NULL;
  if (w_shape.ndim != 3) return tg_seterr("%s: W must be 3-D (E, N, K), not %d-D", who, w_shape.ndim), NULL;
  if (w_shape.d[0] <= 0 || w_shape.d[0] > UINT32_MAX) return tg_seterr("%s: %lld experts (1 to 2^32 - 1)", who, (long long)w_shape.d[0]), NULL;
  int64_t e = w_shape.d[0], n = w_shape.d[1], k = w_shape.d[2];
  tg_shape flat = TG_SHAPE(e * n, k);
  if (n % ROWS || n > INT64_MAX / e) return tg_seterr("%s: W (%lld, %lld, %lld) needs N a multiple of %d", who, (long long)e, (long long)n, (long long)k, ROWS), NULL;
  const rows_format *f = format_of(t, flat, who);
  if (!f || (!expert_view(scales, quants, f, e, n, k) && !packed_shapes_ok(scales, quants, f, flat, who))) return NULL;
  int ni = tg_ndim(index), nd = tg_ndim(x);
  if (nd != ni + 1 || tg_dim(x, nd - 1) != k)
    return tg_seterr("%s: x must be (index's shape or 1 on each axis, K = %lld): %d dims for an index of %d", who, (long long)k, nd, ni), NULL;
  if (!tg_dtype_is_float(tg_dtype_of(x))) return tg_seterr("%s: x must be a float tensor, not %s", who, tg_dtype_name(tg_dtype_of(x))), NULL;
  if (tg_dtype_is_float(tg_dtype_of(index)) || tg_dtype_of(index) == TG_BOOL) return tg_seterr("%s: index must be an integer tensor", who), NULL;
  int64_t nb = k / f->block, g = n / ROWS;
  tg_scope_begin();
  const char *dev_prev = tensor_device_begin(tg_device_of(quants));
  /* an unsigned value mod E (see above) */
  tg_tensor *ix = tg_cast(tg_mod(tg_cast(index, TG_U32), tensor_const((double)e, TG_U32)), TG_I32);
  tg_tensor *sc = tg_take(tg_reshape(scales, TG_SHAPE(e, g, f->nscales, nb, ROWS)), ix);          /* (..., g, S, nb, 16) */
  tg_tensor *qs = tg_take(tg_reshape(quants, TG_SHAPE(e, g, nb, f->quant_bytes)), ix);            /* (..., g, nb, bytes) */
  tg_tensor *y = rows_any(t, x, sc, qs, nb, g);                                                   /* (..., g, 16) */
  y = tg_reshape(y, qm_lead_with(y, 2, 1, (int64_t[]){ n }));
  if (y) tg_keep(y);
  tensor_device_end(dev_prev);
  tg_scope_end();
  return y;
}
