/* quant.h: building blocks for dequantizing ggml block formats with tensor
 * ops (internal to src/quant/).
 *
 * A quantized tensor arrives as raw bytes viewed as (nblocks, bytes_per_block)
 * U8. Each type's dequantizer slices the fields out of that 2-D view, unpacks
 * bit fields with shifts and masks along new axes, and combines them with the
 * block's scales so that the result is (nblocks, block_size) F32 whose flat
 * order is ggml's element order. Everything is lazy elementwise and movement
 * ops, so the dequantization fuses into whatever consumes it (a matmul reads
 * the packed bytes directly).
 *
 * Integer fields are I32 tensors; float math follows ggml's order of
 * operations exactly (one rounding per float op, as in ggml's C code). */
#ifndef TG_QUANT_QUANT_H
#define TG_QUANT_QUANT_H

#include "tg.h"

/* Bytes [start, start+len) of every block as I32 values 0..255: (nb, len). */
tg_tensor *qt_u8(tg_tensor *blk, int start, int len);
/* The same bytes read as signed (int8_t) values. */
tg_tensor *qt_i8(tg_tensor *blk, int start, int len);
/* Little-endian 16-bit words at [start, start+2*n): (nb, n) I32 0..65535. */
tg_tensor *qt_u16(tg_tensor *blk, int start, int n);
/* The fp16 number at byte off of every block, as (nb, 1) F32 (exact). */
tg_tensor *qt_f16(tg_tensor *blk, int off);
/* fp16 bit patterns (I32 0..65535) to F32, exactly. */
tg_tensor *qt_f16_bits(tg_tensor *bits);

tg_tensor *qt_and(tg_tensor *x, int64_t mask);
tg_tensor *qt_or(tg_tensor *a, tg_tensor *b);
/* Bit fields of `groups` runs of `bytes` bytes at off: field k of byte i of
 * run g is value g*n*bytes + k*bytes + i (the layout ggml uses for nibbles,
 * 2-bit and 1-bit planes). (nb, groups*n*bytes) I32. */
tg_tensor *qt_fields(tg_tensor *blk, int off, int groups, int bytes, int n, int bits);
/* Inserts a new axis of size n before `axis` (counted in the result, may be
 * negative) and fills element k of it with (x >> (k*bits)) & ((1<<bits)-1):
 * the n bit fields of each x, lowest first, in x's (integer) dtype. */
tg_tensor *qt_unpack(tg_tensor *x, int axis, int n, int bits);
/* Inserts a new axis of size n before `axis` repeating x (a broadcast). */
tg_tensor *qt_repeat(tg_tensor *x, int axis, int n);
/* table[idx] for a table of n integers (idx in [0, n)), by tg_take: a
 * direct read at the computed index, so it fuses. I32 result. (A select
 * tree on idx's bits also fuses, but is slower even at 16 entries.) */
tg_tensor *qt_lut(tg_tensor *idx, const int *table, int n);
/* Rows table[idx] of a (n, width) table (a tensor): idx (...) gives
 * (..., width), by tg_take (a direct read, so it fuses). For the IQ
 * lattices (hundreds of rows). */
tg_tensor *qt_gather_rows(tg_tensor *table, tg_tensor *idx);
/* Each of the nsub values of x (nb, nsub) repeated len times, in place:
 * (nb, nsub*len). Spreads per-sub-block fields over their values.
 *
 * Spread raw fields (a load and a shift or two), then decode them per value:
 * the scheduler stores a costly computation that an EXPAND repeats, while
 * the repeated cheap decode is merged back into one by codegen (the values
 * of a sub-block are unrolled together), so the dequantization stays fused
 * into its consumer. */
tg_tensor *qt_spread(tg_tensor *x, int len);
/* (x as F32) with shape kept. */
tg_tensor *qt_f32(tg_tensor *x);

/* The 6-bit scales and mins of Q4_K/Q5_K, packed in 12 bytes at off, each
 * spread over its len values: (nb, 8*len) I32 each. */
void qt_scale_min_k4(tg_tensor *blk, int off, int len, tg_tensor **sc, tg_tensor **mn);

/* The integers of Q4_K (d*sc*q - dmin*m) and Q6_K (d*sc*q): q (nb, 256)
 * and the sub-block scales (and mins) spread over their values, I32. */
void qk_q4_k_ints(tg_tensor *blk, tg_tensor **q, tg_tensor **sc, tg_tensor **m);
void qk_q6_k_ints(tg_tensor *blk, tg_tensor **q, tg_tensor **sc);

/* Shared by the integer matmul paths (quant_matmul.c, quant_rows.c). */
/* [lo, hi) of x's last axis. */
tg_tensor *qm_slice_last(tg_tensor *x, int64_t lo, int64_t hi);
/* x's shape with its last axis replaced by the n sizes in d. */
tg_shape qm_with_tail(const tg_tensor *x, int n, const int64_t *d);
/* x's shape with its last drop axes replaced by the n sizes in d. */
tg_shape qm_lead_with(const tg_tensor *x, int drop, int n, const int64_t *d);
/* quantize_row_q8_0_ref of every 32 values of x (..., K): *q (..., K/32,
 * 32) of qdtype (an integer type: I16 for int16 multiplies, I8 for byte dot
 * products) and *d (..., K/32, 1) F32, the scale rounded to fp16 as ggml
 * stores it. d = amax / 127, id = d ? 1/d : 0, q = roundf(x * id)
 * (-127..127). x's leading axes stay as they are (a symbolic one too). */
void qm_quantize_q8_0(tg_tensor *x, tg_dtype qdtype, tg_tensor **q, tg_tensor **d);
/* quantize_row_q8_1: q8_0's *q and *d, and, when s is not NULL, *s (...,
 * K/32, 1) F32: fp16(d * the block's sum of q), with the unrounded d (what
 * Q4_1's and Q5_1's mins multiply). */
void qm_quantize_q8_1(tg_tensor *x, tg_dtype qdtype, tg_tensor **q, tg_tensor **d, tg_tensor **s);
/* quantize_row_q8_K_ref of every 256 values of x (..., K): *q (..., K/256,
 * 256) of qdtype and *d (..., K/256, 1) F32. max is the first value of
 * largest |x| (sign kept), iscale = -127 / max, q = min(127,
 * nearest_int(iscale * x)) (ggml's nearest_int rounds half to even, like
 * tg_round), d = 1 / iscale; a block of zeros has d = 0, q = 0. */
void qm_quantize_q8_k(tg_tensor *x, tg_dtype qdtype, tg_tensor **q, tg_tensor **d);

/* One dequantizer per type: (nb, bytes) U8 -> (nb, block_size) F32. */
typedef tg_tensor *(*qt_dequant_fn)(tg_tensor *blk);
tg_tensor *dq_q4_0(tg_tensor *blk);
tg_tensor *dq_q4_1(tg_tensor *blk);
tg_tensor *dq_q5_0(tg_tensor *blk);
tg_tensor *dq_q5_1(tg_tensor *blk);
tg_tensor *dq_q8_0(tg_tensor *blk);
tg_tensor *dq_q2_k(tg_tensor *blk);
tg_tensor *dq_q3_k(tg_tensor *blk);
tg_tensor *dq_q4_k(tg_tensor *blk);
tg_tensor *dq_q5_k(tg_tensor *blk);
tg_tensor *dq_q6_k(tg_tensor *blk);
tg_tensor *dq_iq4_nl(tg_tensor *blk);
tg_tensor *dq_iq4_xs(tg_tensor *blk);
tg_tensor *dq_tq1_0(tg_tensor *blk);
tg_tensor *dq_tq2_0(tg_tensor *blk);
tg_tensor *dq_mxfp4(tg_tensor *blk);
tg_tensor *dq_iq2_xxs(tg_tensor *blk);
tg_tensor *dq_iq2_xs(tg_tensor *blk);
tg_tensor *dq_iq2_s(tg_tensor *blk);
tg_tensor *dq_iq3_xxs(tg_tensor *blk);
tg_tensor *dq_iq3_s(tg_tensor *blk);
tg_tensor *dq_iq1_s(tg_tensor *blk);
tg_tensor *dq_iq1_m(tg_tensor *blk);

/* MXFP4 (quant_ternary_fp4.c): its E2M1 values doubled (ggml's kvalues_mxfp4). */
extern const int qt_kvalues_mxfp4[16];
/* ggml_e8m0_to_fp32_half of E8M0 exponent bytes e (I32, 0..255): 2^(e-128)
 * as F32, built from its bits (subnormal for e < 2). */
tg_tensor *qt_e8m0_half(tg_tensor *e);

/* The IQ format tables (iq_grids.c). Grid rows are 8 (4 for the IQ3 grids)
 * bytes, stored as little-endian integers like ggml does. */
extern const int qt_kvalues_iq4nl[16];
extern const uint64_t qt_iq2xxs_grid[256];
extern const uint64_t qt_iq2xs_grid[512];
extern const uint64_t qt_iq2s_grid[1024];
extern const uint32_t qt_iq3xxs_grid[256];
extern const uint32_t qt_iq3s_grid[512];
extern const uint64_t qt_iq1s_grid[2048];

#endif
