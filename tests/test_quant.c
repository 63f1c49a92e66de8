/* test_quant.c: ggml quant formats dequantized by tensor ops (tg_quant.h).
 *
 * Exactness: ../../shared/testdata/quants holds, per type, 64 raw blocks and
 * ggml's own float32 dequantization of them (see its README.md); tg must
 * match every value bit for bit (compared as floats, so -0 == +0). */
#include <stdint.h>
#include "test.h"

#define QUANT_DIR "../../shared/testdata/quants"

/* Dequantizes TYPE.blocks.bin with tg_dequantize and compares with
 * TYPE.f32.bin. */
/* TYPE.blocks.bin and TYPE.f32.bin of the shared data; false (both NULL,
 * path names the missing file) when absent. */
static bool read_golden(const char *type, unsigned char **raw, size_t *nraw, float **want, size_t *nf, char *path, size_t np) {
  snprintf(path, np, QUANT_DIR "/%s.blocks.bin", type);
  *raw = test_read_file(path, nraw);
  snprintf(path, np, QUANT_DIR "/%s.f32.bin", type);
  *want = test_read_file(path, nf);
  if (*raw && *want) return true;
  free(*raw), free(*want);
  *raw = NULL, *want = NULL;
  return false;
}

static void check_type(const char *type) {
  char path[256];
  size_t nraw = 0, nf = 0;
  unsigned char *raw;
  float *want;
  if (!read_golden(type, &raw, &nraw, &want, &nf, path, sizeof path)) SKIP("%s not found (the shared quant test data is absent)", path);
  int t = tg_ggml_type_from_name(type);
  int64_t n = (int64_t)(nf / sizeof(float));
  CHECK_EQ_INT(tg_ggml_nbytes(t, n), nraw);
  float *got = calloc((size_t)n, sizeof(float));
  tg_scope_begin();
  tg_tensor *r = tg_from_data(raw, TG_SHAPE((int64_t)nraw), TG_U8);
  tg_tensor *y = tg_dequantize(r, t, TG_SHAPE(n));
  CHECK_OK(y);
  CHECK_MSG(y && tg_data(y, got, (size_t)n * sizeof(float)) == 0, "%s: %s", type, tg_error());
  int bad = 0;
  for (int64_t i = 0; i < n; i++)
    if (!(got[i] == want[i] || (isnan(got[i]) && isnan(want[i])))) {
      if (bad < 5) test_fail(__FILE__, __LINE__, "%s value %lld (block %lld): got %a, ggml %a", type, (long long)i,
                             (long long)(i * 64 / n), got[i], want[i]);
      bad++;
    }
  CHECK_MSG(bad == 0, "%s: %d of %lld values differ", type, bad, (long long)n);
  tg_scope_end();
  free(raw), free(want), free(got);
}

#define QUANT_TEST(T) TEST(quant_exact_##T) { check_type(#T); }
QUANT_TEST(F16)
QUANT_TEST(BF16)
QUANT_TEST(Q4_0)
QUANT_TEST(Q4_1)
QUANT_TEST(Q5_0)
QUANT_TEST(Q5_1)
QUANT_TEST(Q8_0)
QUANT_TEST(Q2_K)
QUANT_TEST(Q3_K)
QUANT_TEST(Q4_K)
QUANT_TEST(Q5_K)
QUANT_TEST(Q6_K)
QUANT_TEST(IQ4_NL)
QUANT_TEST(IQ4_XS)
QUANT_TEST(TQ1_0)
QUANT_TEST(TQ2_0)
QUANT_TEST(MXFP4)
QUANT_TEST(IQ2_XXS)
QUANT_TEST(IQ2_XS)
QUANT_TEST(IQ2_S)
QUANT_TEST(IQ3_XXS)
QUANT_TEST(IQ3_S)
QUANT_TEST(IQ1_S)
QUANT_TEST(IQ1_M)

/* The row-packed forms (tg_quant_pack_rows) against the same golden: the
 * 64 blocks as a matrix of 16 rows (4 blocks each), tg_dequantize_rows
 * equal to ggml's dequantization bit for bit. */
static void check_rows_type(const char *type) {
  char path[256];
  size_t nraw = 0, nf = 0;
  unsigned char *raw;
  float *want;
  if (!read_golden(type, &raw, &nraw, &want, &nf, path, sizeof path)) SKIP("%s not found (the shared quant test data is absent)", path);
  int t = tg_ggml_type_from_name(type);
  const int64_t n = TG_QUANT_PACK_ROWS, k = (int64_t)(nf / sizeof(float)) / n;
  float *got = calloc(nf / sizeof(float), sizeof(float));
  tg_scope_begin();
  tg_tensor *r = tg_from_data(raw, TG_SHAPE((int64_t)nraw), TG_U8), *sc = NULL, *qs = NULL;
  CHECK_MSG(tg_quant_pack_rows(r, t, TG_SHAPE(n, k), &sc, &qs) == 0, "%s: %s", type, tg_error());
  tg_tensor *y = sc && qs ? tg_dequantize_rows(sc, qs, t, TG_SHAPE(n, k)) : NULL;
  CHECK_MSG(y && tg_data(y, got, nf) == 0, "%s: %s", type, tg_error());
  int bad = 0;
  for (int64_t i = 0; y && i < n * k; i++)
    if (got[i] != want[i] && bad++ < 5) test_fail(__FILE__, __LINE__, "%s value %lld: rows %a, ggml %a", type, (long long)i, got[i], want[i]);
  CHECK_MSG(bad == 0, "%s: %d values differ", type, bad);
  tg_scope_end();
  free(raw), free(want), free(got);
}

#define QUANT_ROWS_TEST(T) TEST(quant_rows_exact_##T) { check_rows_type(#T); }
QUANT_ROWS_TEST(Q4_0)
QUANT_ROWS_TEST(Q4_1)
QUANT_ROWS_TEST(Q5_0)
QUANT_ROWS_TEST(Q5_1)
QUANT_ROWS_TEST(Q8_0)
QUANT_ROWS_TEST(Q2_K)
QUANT_ROWS_TEST(Q3_K)
QUANT_ROWS_TEST(Q4_K)
QUANT_ROWS_TEST(Q5_K)
QUANT_ROWS_TEST(Q6_K)
QUANT_ROWS_TEST(IQ4_NL)
QUANT_ROWS_TEST(IQ4_XS)
QUANT_ROWS_TEST(MXFP4)

/* ---------------------------------------------------------------- GGUF */

/* quant_small.gguf (tests/gen/gen_quant.py): every type, written by gguf-py;
 * quantized tensors load as float32 values equal to gguf-py's dequantize. */
TEST(quant_gguf_load) {
  size_t nexp;
  float *want = test_read_file("goldens/quant_small_expected.bin", &nexp);
  CHECK(want != NULL);
  if (!want) return;
  nexp /= sizeof(float);
  tg_scope_begin();
  tg_tensor_list l;
  CHECK_MSG(tg_gguf_load_tensors("goldens/quant_small.gguf", NULL, &l) == 0, "%s", tg_error());
  CHECK_EQ_INT(l.n, 24);
  size_t at = 0;
  for (int i = 0; i < l.n; i++) {
    size_t n = (size_t)tg_numel(l.t[i]);
    tg_dtype want_dt = !strcmp(l.names[i], "f16") ? TG_F16 : TG_F32;
    CHECK_MSG(tg_dtype_of(l.t[i]) == want_dt, "%s: dtype %s", l.names[i], tg_dtype_name(tg_dtype_of(l.t[i])));
    CHECK_MSG(tg_ndim(l.t[i]) == 2, "%s: %d dims", l.names[i], tg_ndim(l.t[i]));
    if (at + n > nexp) break;
    float *got = calloc(n, sizeof(float));
    tg_tensor *f = tg_cast(l.t[i], TG_F32);
    CHECK_MSG(f && tg_data(f, got, n * sizeof(float)) == 0, "%s: %s", l.names[i], tg_error());
    int bad = 0;
    for (size_t k = 0; k < n; k++) bad += got[k] != want[at + k];
    CHECK_MSG(bad == 0, "%s: %d of %zu values differ from gguf-py's (first: %a vs %a)", l.names[i], bad, n, got[0], want[at]);
    free(got);
    at += n;
  }
  CHECK_EQ_INT(at, nexp);
  tg_tensor_list_free(&l);
  tg_scope_end();
  free(want);
}

/* The file's bytes go to the device once: the first product copies them
 * (one kernel) and runs the fused matvec; later ones only the matvec. */
TEST(quant_gguf_bytes_copied_once) {
  tg_scope_begin();
  tg_tensor_list l;
  CHECK_MSG(tg_gguf_load_tensors("goldens/quant_small.gguf", NULL, &l) == 0, "%s", tg_error());
  tg_tensor *w = tg_tensor_list_get(&l, "q4_k");
  CHECK(w != NULL);
  if (w) {
    for (int rep = 0; rep < 3; rep++) {
      tg_tensor *x = tg_contiguous(tg_full(TG_SHAPE(256), rep + 1, TG_F32));
      tg_realize(x);
      int64_t k0 = tg_get_counters().kernels_run;
      tg_tensor *y = tg_matmul(w, x);
      CHECK_MSG(tg_realize(y) == 0, "%s", tg_error());
      CHECK_EQ_INT(tg_get_counters().kernels_run - k0, rep == 0 ? 2 : 1);
    }
  }
  tg_tensor_list_free(&l);
  tg_scope_end();
}

/* ---------------------------------------------------------------- fusion */

/* Random blocks with sane fp16 scales (no inf/NaN); MXFP4's E8M0 exponent
 * (byte 0) near 2^0. */
static unsigned char *random_blocks(int type, int64_t n, const int *scale_at, int nscale, int64_t *nbytes) {
  int64_t nb = tg_ggml_nbytes(type, n);
  unsigned char *p = malloc((size_t)nb);
  uint64_t h = 0x9E3779B97F4A7C15ull;
  for (int64_t i = 0; i < nb; i++) {
    h = h * 6364136223846793005ull + 1442695040888963407ull;
    p[i] = (unsigned char)(h >> 56);
  }
  int64_t bpb = tg_ggml_nbytes(type, 32) > 0 ? tg_ggml_nbytes(type, 32) : tg_ggml_nbytes(type, 256);
  for (int64_t b = 0; b < nb / bpb; b++) {
    if (type == TG_GGML_MXFP4) p[b * bpb] = (unsigned char)(120 + b % 16);
    if (type == TG_GGML_IQ1_M)   /* fp16 0x2C00 + ..., a nibble on top of each of the last 4 words */
      for (int k = 0; k < 4; k++) {
        unsigned char *hi = &p[b * bpb + bpb - 7 + 2 * k];
        *hi = (unsigned char)((*hi & 0x0F) | (((0x2C00 + (b % 64) * 16) >> (4 * k)) & 0xF) << 4);
      }
    for (int s = 0; s < nscale; s++) {
      uint16_t f = (uint16_t)(0x2000 + (b * 37 + s) % 1024);
      p[b * bpb + scale_at[s]] = (unsigned char)f, p[b * bpb + scale_at[s] + 1] = (unsigned char)(f >> 8);
    }
  }
  *nbytes = nb;
  return p;
}

/* W @ x with W dequantized from packed bytes is one kernel reading those
 * bytes, on NULL (the schedule) and CPU; values match a float64 product of
 * the separately dequantized W. */
static void check_fused_matvec(const char *type, const int *scale_at, int nscale) {
  const int64_t rows = 48, cols = 512;
  int t = tg_ggml_type_from_name(type);
  int64_t nbytes;
  unsigned char *raw = random_blocks(t, rows * cols, scale_at, nscale, &nbytes);
  float x[512], y[48], *w = malloc(sizeof(float) * rows * cols);
  for (int i = 0; i < cols; i++) x[i] = (float)((i * 7) % 13 - 6) / 4;
  for (int d = 0; d < 2; d++) {
    const char *dev = d ? "CPU" : "NULL";
    tg_set_default_device(dev);
    tg_scope_begin();
    tg_tensor *r = tg_from_data(raw, TG_SHAPE(nbytes), TG_U8), *xv = tg_from_data(x, TG_SHAPE(cols), TG_F32);
    CHECK_OK(r && tg_realize(r) == 0 && tg_realize(xv) == 0 ? r : NULL);
    int64_t k0 = tg_get_counters().kernels_run;
    tg_tensor *yv = tg_matmul(tg_dequantize(r, t, TG_SHAPE(rows, cols)), xv);
    CHECK_MSG(yv && tg_realize(yv) == 0, "%s: %s", type, tg_error());
    CHECK_MSG(tg_get_counters().kernels_run - k0 == 1, "%s on %s: W @ x ran %lld kernels, want 1", type, dev,
              (long long)(tg_get_counters().kernels_run - k0));
    if (d) {
      CHECK_MSG(tg_data(yv, y, sizeof y) == 0 && tg_data(tg_dequantize(r, t, TG_SHAPE(rows, cols)), w, sizeof(float) * rows * cols) == 0,
                "%s: %s", type, tg_error());
      for (int i = 0; i < rows; i++) {
        double ref = 0, mag = 0;
        for (int k = 0; k < cols; k++) ref += (double)w[i * cols + k] * x[k], mag += fabs((double)w[i * cols + k] * x[k]);
        CHECK_MSG(fabs(y[i] - ref) <= 1e-5 * mag, "%s row %d: %.9g vs %.9g", type, i, y[i], ref);
      }
    }
    tg_scope_end();
  }
  tg_set_default_device("CPU");
  free(raw), free(w);
}

TEST(quant_matvec_one_kernel_Q4_0) { check_fused_matvec("Q4_0", (int[]){ 0 }, 1); }
TEST(quant_matvec_one_kernel_Q8_0) { check_fused_matvec("Q8_0", (int[]){ 0 }, 1); }
TEST(quant_matvec_one_kernel_Q4_K) { check_fused_matvec("Q4_K", (int[]){ 0, 2 }, 2); }
TEST(quant_matvec_one_kernel_Q6_K) { check_fused_matvec("Q6_K", (int[]){ 208 }, 1); }
/* every other type fuses too (the lattice types' grid lookup is tg_take) */
TEST(quant_matvec_one_kernel_other_types) {
  static const struct { const char *type; int at[2], n; } t[] = {
    { "Q4_1", { 0, 2 }, 2 }, { "Q5_0", { 0 }, 1 }, { "Q5_1", { 0, 2 }, 2 }, { "Q2_K", { 80, 82 }, 2 },
    { "Q3_K", { 108 }, 1 }, { "Q5_K", { 0, 2 }, 2 }, { "IQ4_NL", { 0 }, 1 }, { "IQ4_XS", { 0 }, 1 },
    { "TQ1_0", { 52 }, 1 }, { "TQ2_0", { 64 }, 1 }, { "MXFP4", { 0 }, 0 }, { "IQ2_XXS", { 0 }, 1 },
    { "IQ2_XS", { 0 }, 1 }, { "IQ2_S", { 0 }, 1 }, { "IQ3_XXS", { 0 }, 1 }, { "IQ3_S", { 0 }, 1 },
    { "IQ1_S", { 0 }, 1 }, { "IQ1_M", { 0 }, 0 },
  };
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) check_fused_matvec(t[i].type, t[i].at, t[i].n);
}

/* ---------------------------------------------------------------- tg_take */

/* The lookup the IQ grids use: a direct read at a computed index, fused
 * with what surrounds it; out-of-range indices read 0. */
TEST(quant_take_table_lookup) {
  tg_scope_begin();
  float tab[4] = { 10, 20, 30, 40 }, xs[6] = { 1, 2, 3, 4, 5, 6 }, got[6];
  int idx[6] = { 3, 0, 2, 9, -1, 1 };
  tg_tensor *t = tg_from_data(tab, TG_SHAPE(4), TG_F32), *i = tg_from_data(idx, TG_SHAPE(3, 2), TG_I32);
  tg_tensor *x = tg_from_data(xs, TG_SHAPE(3, 2), TG_F32);
  CHECK_OK(tg_realize(t) == 0 && tg_realize(i) == 0 && tg_realize(x) == 0 ? t : NULL);
  int64_t k0 = tg_get_counters().kernels_run;
  tg_tensor *y = tg_add(tg_muls(tg_take(t, tg_adds(i, 0)), 2), x);
  CHECK_MSG(y && tg_data(y, got, sizeof got) == 0, "%s", tg_error());
  CHECK_EQ_INT(tg_get_counters().kernels_run - k0, 1);
  const float want[6] = { 81, 22, 63, 4, 5, 46 };
  for (int k = 0; k < 6; k++) CHECK_MSG(got[k] == want[k], "[%d]: %g != %g", k, got[k], want[k]);
  CHECK(tg_take(tg_reshape(tg_shrink(t, (int64_t[]){ 0 }, (int64_t[]){ 1 }), TG_SHAPE()), i) == NULL && strstr(tg_error(), "0-D"));
  CHECK(tg_take(t, x) == NULL);
  tg_scope_end();
}

/* ---------------------------------------------------------------- errors, plain floats */

/* float16 / bfloat16 as tg dtypes (how GGUF loads them): the framework's own
 * casts to float32 give ggml's values too. */
static void check_plain(const char *type, tg_dtype dt) {
  char path[256];
  size_t nraw = 0, nf = 0;
  unsigned char *raw;
  float *want;
  if (!read_golden(type, &raw, &nraw, &want, &nf, path, sizeof path)) SKIP("%s not found (the shared quant test data is absent)", path);
  size_t n = nf / sizeof(float);
  float *got = calloc(n, sizeof(float));
  tg_scope_begin();
  tg_tensor *y = tg_cast(tg_from_data(raw, TG_SHAPE((int64_t)n), dt), TG_F32);
  CHECK_MSG(y && tg_data(y, got, n * sizeof(float)) == 0, "%s", tg_error());
  int bad = 0;
  for (size_t i = 0; i < n; i++) bad += !(got[i] == want[i] || (isnan(got[i]) && isnan(want[i])));
  CHECK_MSG(bad == 0, "%s: %d of %zu values differ", type, bad, n);
  tg_scope_end();
  free(raw), free(want), free(got);
}
TEST(quant_exact_F16_as_dtype) { check_plain("F16", TG_F16); }
TEST(quant_exact_BF16_as_dtype) { check_plain("BF16", TG_BF16); }

/* float32 through the byte path of tg_dequantize */
TEST(quant_f32_bytes) {
  tg_scope_begin();
  const float v[4] = { 1.5f, -0.0f, 3e-40f, -65504.25f };
  float got[4];
  tg_tensor *y = tg_dequantize(tg_from_data(v, TG_SHAPE(16), TG_U8), TG_GGML_F32, TG_SHAPE(2, 2));
  CHECK_MSG(y && tg_data(y, got, sizeof got) == 0, "%s", tg_error());
  CHECK(memcmp(got, v, sizeof v) == 0);
  tg_scope_end();
}

TEST(quant_errors) {
  tg_scope_begin();
  unsigned char b[68] = { 0 };   /* two Q8_0 blocks */
  tg_tensor *r = tg_from_data(b, TG_SHAPE(68), TG_U8);
  CHECK(tg_dequantize(r, TG_GGML_Q8_0, TG_SHAPE(64)) != NULL);
  CHECK(tg_dequantize(r, TG_GGML_Q8_0, TG_SHAPE(2, 32)) != NULL);
  CHECK(tg_dequantize(r, TG_GGML_Q8_0, TG_SHAPE(32, 2)) == NULL && strstr(tg_error(), "multiple"));
  CHECK(tg_dequantize(r, TG_GGML_Q4_0, TG_SHAPE(64)) == NULL && strstr(tg_error(), "bytes"));
  CHECK(tg_dequantize(r, 9, TG_SHAPE(32)) == NULL && strstr(tg_error(), "Q8_1"));
  CHECK(tg_dequantize(r, 77, TG_SHAPE(32)) == NULL && strstr(tg_error(), "not supported"));
  CHECK(tg_dequantize(tg_cast(r, TG_I8), TG_GGML_Q8_0, TG_SHAPE(64)) == NULL && strstr(tg_error(), "uint8"));
  CHECK(tg_dequantize(NULL, TG_GGML_Q8_0, TG_SHAPE(64)) == NULL);
  CHECK_EQ_INT(tg_ggml_nbytes(TG_GGML_Q4_K, 512), 288);
  CHECK_EQ_INT(tg_ggml_nbytes(TG_GGML_Q4_K, 100), -1);
  CHECK(tg_ggml_type_from_name("iq2_xxs") == TG_GGML_IQ2_XXS && !strcmp(tg_ggml_type_name(TG_GGML_MXFP4), "MXFP4"));
  CHECK(tg_ggml_type_dequantizable(TG_GGML_IQ1_M) && !tg_ggml_type_dequantizable(9));
  tg_scope_end();
}
