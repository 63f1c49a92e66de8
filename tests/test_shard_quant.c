/* test_shard_quant.c: row-packed quantized matrices (tg_quant_pack_rows)
 * sharded as tensor parallel cuts them (src/llm/llm_tp.c): by rows (the
 * scales and quants on their 16-row groups, x replicated) and by columns
 * (the quants on their blocks, the scales viewed as (N/16, S, K/B, 16) on
 * the blocks of each plane, x on its last axis). Over 2 and 4 CPU
 * devices, tg_quant_matmul_rows gives one device's product (rows: the
 * same numbers; columns: within float rounding, the block sums added in
 * parts and then allreduced) and tg_dequantize_rows one device's values
 * exactly, for every row-packed type; the matvec of a column split moves
 * only the partial products between devices, never the weights. */
#include "test.h"
#include "io/ggml_types.h"
#include "quant/quantize.h"
#include "tg_dist.h"

static const char *DEV4[] = { "CPU", "CPU:1", "CPU:2", "CPU:3" };

/* got against want (floats), within tol relative to want's largest. */
static void check_close(tg_tensor *got, tg_tensor *want, double tol, const char *what) {
  int64_t n = tg_numel(want);
  CHECK_MSG(got && tg_numel(got) == n, "%s: %s", what, got ? "sizes differ" : tg_error());
  if (!got || tg_numel(got) != n) return;
  float *g = malloc(sizeof(float) * (size_t)n), *w = malloc(sizeof(float) * (size_t)n);
  CHECK_OK(tg_data(got, g, sizeof(float) * (size_t)n) == 0);
  CHECK_OK(tg_data(want, w, sizeof(float) * (size_t)n) == 0);
  double big = 0, diff = 0;
  for (int64_t i = 0; i < n; i++) { big = fmax(big, fabs(w[i])); diff = fmax(diff, fabs(g[i] - w[i])); }
  CHECK_MSG(big > 0 && diff <= tol * big, "%s: differs by %g (largest %g)", what, diff, big);
  free(g); free(w);
}

/* The largest copy between devices in realizing t (its bytes read and
 * written). */
static int64_t biggest_copy(tg_tensor *t) {
  static tg_schedule_entry e[256];
  int n = tg_schedule_list(&t, 1, e, 256);
  int64_t big = 0;
  for (int i = 0; i < n && i < 256; i++) if (e[i].copy && e[i].bytes > big) big = e[i].bytes;
  return n < 0 ? -1 : big;
}

/* W (N, K) of type t, its row-packed form split over nd devices on axis
 * (0 rows, 1 columns), against one device. */
static void check_split(int t, int nd, int axis) {
  const int block = ggml_type_info((uint32_t)t)->block_size;
  const int64_t N = 64, K = 4 * (int64_t)block, M = 3;
  char what[64];
  snprintf(what, sizeof what, "%s over %d by %s", tg_ggml_type_name(t), nd, axis ? "columns" : "rows");
  tg_scope_begin();
  float *wf = malloc(sizeof(float) * (size_t)(N * K)), *xf = malloc(sizeof(float) * (size_t)(M * K));
  for (int64_t i = 0; i < N * K; i++) wf[i] = (float)sin(0.37 * (double)i) * (float)(1 + i % 7) * 0.1f;
  for (int64_t i = 0; i < M * K; i++) xf[i] = (float)cos(0.11 * (double)i + 1) * (float)(1 + i % 5);
  int64_t nbytes = tg_ggml_nbytes(t, N * K);
  unsigned char *raw = malloc((size_t)nbytes);
  CHECK(quant_rows((uint32_t)t, wf, raw, N, K) == nbytes);
  tg_tensor *sc, *q, *x = tg_from_data(xf, TG_SHAPE(M, K), TG_F32);
  CHECK_OK(tg_quant_pack_rows(tg_from_data(raw, TG_SHAPE(nbytes), TG_U8), t, TG_SHAPE(N, K), &sc, &q) == 0);
  if (sc && q) {
    tg_tensor *want = tg_quant_matmul_rows(x, sc, q, t, TG_SHAPE(N, K)), *wv = tg_dequantize_rows(sc, q, t, TG_SHAPE(N, K));
    int64_t g = tg_dim(q, 0), nb = tg_dim(q, 1);
    tg_tensor *planes = tg_reshape(sc, TG_SHAPE(g, tg_dim(sc, 1) / nb, nb, TG_QUANT_PACK_ROWS));
    tg_tensor *ss = tg_shard(planes, DEV4, nd, axis ? 2 : 0), *qs = tg_shard(q, DEV4, nd, axis);
    tg_tensor *xs = tg_shard(x, DEV4, nd, axis ? 1 : -1);
    CHECK_OK(tg_realize(ss) == 0 && tg_realize(qs) == 0 && tg_realize(xs) == 0);
    tg_tensor *y = tg_quant_matmul_rows(xs, ss, qs, t, TG_SHAPE(N, K));
    CHECK_MSG(y && tg_shard_axis(y) == (axis ? -1 : 1), "%s: product sharded on %d", what, y ? tg_shard_axis(y) : -9);
    /* columns: the (M, N) partial products move, nothing of W; rows: at
     * most a 16-entry table (IQ4_NL's levels), made on the first device */
    int64_t moved = biggest_copy(y), most = axis ? 2 * (int64_t)sizeof(float) * M * N : 2 * 16 * (int64_t)sizeof(int32_t);
    CHECK_MSG(moved >= 0 && moved <= most, "%s: a copy of %lld bytes", what, (long long)moved);
    check_close(y, want, axis ? 1e-5 : 1e-6, what);
    tg_tensor *v = tg_dequantize_rows(ss, qs, t, TG_SHAPE(N, K));
    CHECK_MSG(v && tg_shard_axis(v) == axis, "%s: values sharded on %d", what, v ? tg_shard_axis(v) : -9);
    check_close(v, wv, 0, what);
  }
  free(wf); free(xf); free(raw);
  tg_scope_end();
}

static const int types[] = { TG_GGML_Q4_0, TG_GGML_Q4_1, TG_GGML_Q5_0, TG_GGML_Q5_1, TG_GGML_Q8_0, TG_GGML_Q2_K, TG_GGML_Q3_K,
                             TG_GGML_Q4_K, TG_GGML_Q5_K, TG_GGML_Q6_K, TG_GGML_IQ4_NL, TG_GGML_IQ4_XS, TG_GGML_MXFP4 };

/* Every type by columns; by rows the two-scale blocks of either size and a
 * type with a table (the rows' split needs no more than that: whole
 * 16-row groups, each part a smaller matrix of the same form). */
TEST(shard_quant_rows_two_devices) {
  for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) check_split(types[i], 2, 1);
  check_split(TG_GGML_Q4_1, 2, 0); check_split(TG_GGML_Q4_K, 2, 0); check_split(TG_GGML_IQ4_XS, 2, 0);
}

/* 4 devices: a part of the columns is one block of each plane */
TEST(shard_quant_rows_four_devices) {
  setenv("TG_CPU_DEVICES", "4", 1);
  check_split(TG_GGML_Q5_1, 4, 1); check_split(TG_GGML_Q2_K, 4, 1); check_split(TG_GGML_Q4_K, 4, 1); check_split(TG_GGML_Q4_K, 4, 0);
  unsetenv("TG_CPU_DEVICES");
}

/* The scales in either shape, and no other */
TEST(shard_quant_rows_scale_shapes) {
  tg_scope_begin();
  unsigned char raw[16 * 144] = { 0 };   /* 16 rows of one Q4_K block */
  tg_tensor *sc, *q, *x = tg_ones(TG_SHAPE(1, 256), TG_F32);
  CHECK_OK(tg_quant_pack_rows(tg_from_data(raw, TG_SHAPE(sizeof raw), TG_U8), TG_GGML_Q4_K, TG_SHAPE(16, 256), &sc, &q) == 0);
  CHECK_EQ_INT(tg_ndim(sc), 3);
  CHECK_OK(tg_quant_matmul_rows(x, tg_reshape(sc, TG_SHAPE(1, 2, 1, 16)), q, TG_GGML_Q4_K, TG_SHAPE(16, 256)) != NULL);
  CHECK(tg_quant_matmul_rows(x, tg_reshape(sc, TG_SHAPE(1, 1, 2, 16)), q, TG_GGML_Q4_K, TG_SHAPE(16, 256)) == NULL);
  CHECK_MSG(strstr(tg_error(), "not tg_quant_pack_rows's"), "%s", tg_error());
  CHECK(tg_dequantize_rows(tg_reshape(sc, TG_SHAPE(2, 16)), q, TG_GGML_Q4_K, TG_SHAPE(16, 256)) == NULL);
  tg_scope_end();
}

/* Experts W (E, N, K) of type t, packed as the (E * N, K) matrix, split
 * over 2 devices as tensor parallel splits them (src/llm/llm_tp.c): by
 * rows (axis 1: every expert's 16-row groups, the packed tensors viewed
 * per expert as (E, N/16, ...)) or by columns (axis 2: the packed
 * matrix's blocks, the scales plane by plane, x on its last axis).
 * tg_quant_matmul_rows_experts of the chosen experts gives one device's
 * product (rows: the same numbers; columns: within float rounding, the
 * parts' block sums allreduced) moving nothing of W, and
 * tg_dequantize_rows one device's values exactly. */
static void check_experts_split(int t, int axis) {
  const int block = ggml_type_info((uint32_t)t)->block_size;
  const int64_t E = 3, N = 32, K = 2 * (int64_t)block, M = 2, R = TG_QUANT_PACK_ROWS;
  char what[64];
  snprintf(what, sizeof what, "%s experts by %s", tg_ggml_type_name(t), axis == 1 ? "rows" : "columns");
  tg_scope_begin();
  float *wf = malloc(sizeof(float) * (size_t)(E * N * K)), *xf = malloc(sizeof(float) * (size_t)(M * 2 * K));
  for (int64_t i = 0; i < E * N * K; i++) wf[i] = (float)sin(0.29 * (double)i) * (float)(1 + i % 5) * 0.1f;
  for (int64_t i = 0; i < M * 2 * K; i++) xf[i] = (float)cos(0.13 * (double)i + 2) * (float)(1 + i % 3);
  int64_t nbytes = tg_ggml_nbytes(t, E * N * K);
  unsigned char *raw = malloc((size_t)nbytes);
  CHECK(quant_rows((uint32_t)t, wf, raw, E * N, K) == nbytes);
  int32_t chosen[] = { 2, 0, 1, 2 };
  tg_tensor *sc, *q, *x = tg_from_data(xf, TG_SHAPE(M, 2, K), TG_F32), *idx = tg_from_data(chosen, TG_SHAPE(M, 2), TG_I32);
  CHECK_OK(tg_quant_pack_rows(tg_from_data(raw, TG_SHAPE(nbytes), TG_U8), t, TG_SHAPE(E * N, K), &sc, &q) == 0);
  if (sc && q) {
    tg_shape ws = TG_SHAPE(E, N, K);
    tg_tensor *want = tg_quant_matmul_rows_experts(x, sc, q, t, ws, idx), *wv = tg_dequantize_rows(sc, q, t, ws);
    int64_t g = tg_dim(q, 0), nb = tg_dim(q, 1);
    const char *const *devs = DEV4;
    tg_tensor *ss, *qs, *xs;
    if (axis == 1) {
      ss = tg_shard(tg_reshape(sc, TG_SHAPE(E, g / E, tg_dim(sc, 1), R)), devs, 2, 1);
      qs = tg_shard(tg_reshape(q, TG_SHAPE(E, g / E, nb, tg_dim(q, 2))), devs, 2, 1);
      xs = tg_shard(x, devs, 2, -1);
    } else {
      ss = tg_shard(tg_reshape(sc, TG_SHAPE(g, tg_dim(sc, 1) / nb, nb, R)), devs, 2, 2);
      qs = tg_shard(q, devs, 2, 1);
      xs = tg_shard(x, devs, 2, 2);
    }
    tg_tensor *is = tg_shard(idx, devs, 2, -1);
    CHECK_OK(tg_realize(ss) == 0 && tg_realize(qs) == 0 && tg_realize(xs) == 0 && tg_realize(is) == 0);
    tg_tensor *y = tg_quant_matmul_rows_experts(xs, ss, qs, t, ws, is);
    CHECK_MSG(y && tg_shard_axis(y) == (axis == 1 ? 2 : -1), "%s: product sharded on %d: %s", what, y ? tg_shard_axis(y) : -9, y ? "" : tg_error());
    int64_t moved = y ? biggest_copy(y) : -1, most = axis == 1 ? 2 * 16 * (int64_t)sizeof(int32_t) : 2 * (int64_t)sizeof(float) * M * 2 * N;
    CHECK_MSG(moved >= 0 && moved <= most, "%s: a copy of %lld bytes", what, (long long)moved);
    check_close(y, want, axis == 1 ? 1e-6 : 1e-5, what);
    tg_tensor *v = tg_dequantize_rows(ss, qs, t, ws);
    CHECK_MSG(v && tg_shard_axis(v) == axis, "%s: values sharded on %d", what, v ? tg_shard_axis(v) : -9);
    check_close(v, wv, 0, what);
  }
  free(wf); free(xf); free(raw);
  tg_scope_end();
}

TEST(shard_quant_experts) {
  static const int et[] = { TG_GGML_Q8_0, TG_GGML_Q4_1, TG_GGML_Q4_K, TG_GGML_MXFP4, TG_GGML_Q6_K, TG_GGML_Q2_K, TG_GGML_Q3_K, TG_GGML_IQ4_XS };
  for (size_t i = 0; i < sizeof et / sizeof et[0]; i++) { check_experts_split(et[i], 1); check_experts_split(et[i], 2); }
  /* a per-expert view of the wrong size is refused */
  tg_scope_begin();
  unsigned char raw[2 * 16 * 34] = { 0 };   /* 2 experts of 16 rows of one Q8_0 block */
  tg_tensor *sc, *q, *x = tg_ones(TG_SHAPE(1, 32), TG_F32), *idx = tg_zeros(TG_SHAPE(1), TG_I32);
  CHECK_OK(tg_quant_pack_rows(tg_from_data(raw, TG_SHAPE(sizeof raw), TG_U8), TG_GGML_Q8_0, TG_SHAPE(32, 32), &sc, &q) == 0);
  CHECK_OK(tg_quant_matmul_rows_experts(x, tg_reshape(sc, TG_SHAPE(2, 1, 1, 16)), tg_reshape(q, TG_SHAPE(2, 1, 1, tg_dim(q, 2))), TG_GGML_Q8_0,
                                        TG_SHAPE(2, 16, 32), idx) != NULL);
  CHECK(tg_quant_matmul_rows_experts(x, tg_reshape(sc, TG_SHAPE(1, 2, 1, 16)), tg_reshape(q, TG_SHAPE(1, 2, 1, tg_dim(q, 2))), TG_GGML_Q8_0,
                                     TG_SHAPE(2, 16, 32), idx) == NULL);
  CHECK_MSG(strstr(tg_error(), "not tg_quant_pack_rows's"), "%s", tg_error());
  tg_scope_end();
}
