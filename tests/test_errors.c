/* test_errors.c: every class of error returns NULL (or a negative number),
 * leaves a helpful message in tg_error() naming the call and the problem, and
 * never crashes (run this file under `make test SAN=1` too). */
#include <stdint.h>
#include <string.h>
#include "test.h"

/* expr must fail (NULL) with an error containing both words (case-insensitive;
 * NULL for none). */
#define EXPECT_NULL(expr, w1, w2) do { \
  tg_clear_error(); \
  tg_tensor *r_ = (expr); \
  CHECK_MSG(r_ == NULL, "%s: expected NULL, got a tensor", #expr); \
  check_words(__FILE__, __LINE__, #expr, w1, w2); \
} while (0)
/* expr (an int) must be negative, with an error containing both words. */
#define EXPECT_NEG(expr, w1, w2) do { \
  tg_clear_error(); \
  long long rc_ = (long long)(expr); \
  CHECK_MSG(rc_ < 0, "%s: expected a negative result, got %lld", #expr, rc_); \
  check_words(__FILE__, __LINE__, #expr, w1, w2); \
} while (0)

static void check_words(const char *file, int line, const char *expr, const char *w1, const char *w2) {
  const char *e = tg_error();
  if (!e || !*e) { test_fail(file, line, "%s: tg_error() is empty", expr); return; }
  if (w1 && !strcasestr(e, w1)) test_fail(file, line, "%s: error \"%s\" does not mention \"%s\"", expr, e, w1);
  if (w2 && !strcasestr(e, w2)) test_fail(file, line, "%s: error \"%s\" does not mention \"%s\"", expr, e, w2);
}

static tg_tensor *mat(int64_t r, int64_t c) {
  static float d[64];
  for (int i = 0; i < 64; i++) d[i] = (float)i;
  return tg_from_data(d, TG_SHAPE(r, c), TG_F32);
}

/* ---------------------------------------------------------------- shapes */

TEST(errors_broadcast) {
  float x[4] = { 1, 2, 3, 4 };
  tg_tensor *a = tg_from_data(x, TG_SHAPE(3), TG_F32), *b = tg_from_data(x, TG_SHAPE(4), TG_F32);
  EXPECT_NULL(tg_add(a, b), "broadcast", "tg_add");
  EXPECT_NULL(tg_mul(b, a), "broadcast", "(4)");
  EXPECT_NULL(tg_lt(a, b), "broadcast", NULL);
  EXPECT_NULL(tg_maximum(a, b), "broadcast", NULL);
  EXPECT_NULL(tg_logical_and(a, b), "broadcast", NULL);
  EXPECT_NULL(tg_where(tg_gt(a, a), a, b), "broadcast", "tg_where");
  EXPECT_NULL(tg_where(tg_gt(b, b), a, a), "broadcast", NULL);
  EXPECT_NULL(tg_add(mat(2, 3), mat(3, 2)), "broadcast", NULL);
  /* still fine afterwards */
  CHECK_OK(tg_add(a, a));
}

TEST(errors_reshape) {
  tg_tensor *a = mat(2, 3);
  EXPECT_NULL(tg_reshape(a, TG_SHAPE(4, 2)), "reshape", "6");
  EXPECT_NULL(tg_reshape(a, TG_SHAPE(-1, -1)), "-1", NULL);
  EXPECT_NULL(tg_reshape(a, TG_SHAPE(4, -1)), "reshape", NULL);
  EXPECT_NULL(tg_reshape(a, TG_SHAPE(-2, 3)), "negative", NULL);
  EXPECT_NULL(tg_reshape(a, TG_SHAPE(0, -1)), "reshape", NULL);
  tg_shape big = { TG_MAX_DIMS + 1, { 0 } };
  EXPECT_NULL(tg_reshape(a, big), "dimensions", NULL);
  tg_shape neg = { -1, { 0 } };
  EXPECT_NULL(tg_reshape(a, neg), "dimensions", NULL);
  CHECK_OK(tg_reshape(a, TG_SHAPE(3, -1)));
}

TEST(errors_axes) {
  tg_tensor *a = mat(2, 3);
  EXPECT_NULL(tg_sum(a, TG_AXES(5), false), "axis", "tg_sum");
  EXPECT_NULL(tg_sum(a, TG_AXES(-3), false), "axis", NULL);
  EXPECT_NULL(tg_max(a, TG_AXES(2), true), "axis", NULL);
  EXPECT_NULL(tg_mean(a, TG_AXES(0, 9), false), "axis", NULL);
  EXPECT_NULL(tg_prod(a, TG_AXES(-100), false), "axis", NULL);
  EXPECT_NULL(tg_sum(a, TG_AXES(0, 0), false), "repeated", NULL);
  EXPECT_NULL(tg_min(a, TG_AXES(1, -1), false), "repeated", NULL);
  EXPECT_NULL(tg_argmax(a, 2, false), "axis", "tg_argmax");
  EXPECT_NULL(tg_argmin(a, -3, false), "axis", NULL);
  EXPECT_NULL(tg_softmax(a, 2), "axis", "softmax");
  EXPECT_NULL(tg_log_softmax(a, -3), "axis", NULL);
  EXPECT_NULL(tg_flip(a, TG_AXES(2)), "axis", NULL);
  EXPECT_NULL(tg_flip(a, TG_AXES(0, -2)), "repeated", NULL);
  EXPECT_NULL(tg_transpose(a, 0, 2), "axis", NULL);
  EXPECT_NULL(tg_squeeze(a, 2), "axis", NULL);
  EXPECT_NULL(tg_unsqueeze(a, 4), "axis", NULL);
  EXPECT_NULL(tg_unsqueeze(a, -4), "axis", NULL);
  EXPECT_NULL(tg_flatten(a, 1, 0), "axis", NULL);
  EXPECT_NULL(tg_flatten(a, 0, 3), "axis", NULL);
  EXPECT_NULL(tg_T(tg_reshape(a, TG_SHAPE(6))), "dimension", NULL);
  CHECK_EQ_INT(tg_dim(a, 2), -1);
  CHECK_EQ_INT(tg_dim(a, -1), 3);
  /* reducing an empty axis with max has no identity */
  float d[1] = { 0 };
  tg_tensor *e = tg_from_data(d, TG_SHAPE(0, 3), TG_F32);
  EXPECT_NULL(tg_max(e, TG_AXES(0), false), "empty", NULL);
  EXPECT_NULL(tg_argmax(e, 0, false), "empty", NULL);
}

TEST(errors_permute_expand_pad_shrink) {
  tg_tensor *a = mat(2, 3);
  EXPECT_NULL(tg_permute(a, TG_AXES(0)), "axes", "tg_permute");
  EXPECT_NULL(tg_permute(a, TG_AXES(0, 1, 2)), "axes", NULL);
  EXPECT_NULL(tg_permute(a, TG_AXES(1, 1)), "repeated", NULL);
  EXPECT_NULL(tg_permute(a, TG_AXES(0, 2)), "axis", NULL);
  EXPECT_NULL(tg_expand(a, TG_SHAPE(2, 4)), "expand", NULL);
  EXPECT_NULL(tg_expand(a, TG_SHAPE(3)), "expand", NULL);
  EXPECT_NULL(tg_expand(a, TG_SHAPE(3, 3, 3)), "expand", NULL);
  EXPECT_NULL(tg_expand(a, TG_SHAPE(2, -2)), "expand", NULL);
  CHECK_OK(tg_expand(a, TG_SHAPE(4, -1, 3)));
  int64_t p1[2] = { 1, 1 }, p2[4] = { -3, 0, 0, 0 }, p3[4] = { 0, 0, -2, -2 };
  EXPECT_NULL(tg_pad(a, p1, 1, 0), "pad", NULL);
  EXPECT_NULL(tg_pad(a, p2, 2, 0), "negative", NULL);
  EXPECT_NULL(tg_pad(a, p3, 2, 0), "negative", NULL);
  int64_t s0[2] = { 0, 0 }, e0[2] = { 3, 3 }, s1[2] = { 1, 2 }, e1[2] = { 2, 1 }, s2[2] = { -1, 0 }, e2[2] = { 1, 1 };
  EXPECT_NULL(tg_shrink(a, s0, e0), "axis", "tg_shrink");
  EXPECT_NULL(tg_shrink(a, s1, e1), "axis", NULL);
  EXPECT_NULL(tg_shrink(a, s2, e2), "axis", NULL);
}

TEST(errors_matmul) {
  tg_tensor *a = mat(2, 3), *b = mat(4, 2), *v = tg_reshape(mat(1, 4), TG_SHAPE(4));
  EXPECT_NULL(tg_matmul(a, b), "inner", "3");
  EXPECT_NULL(tg_dot(a, v), "inner", NULL);
  EXPECT_NULL(tg_matmul(v, tg_reshape(mat(1, 3), TG_SHAPE(3))), "inner", NULL);
  EXPECT_NULL(tg_matmul(tg_scalar(2, TG_F32), a), "dimension", "matmul");
  EXPECT_NULL(tg_matmul(a, tg_scalar(2, TG_F32)), "dimension", NULL);
  tg_tensor *b3 = tg_reshape(mat(2, 12), TG_SHAPE(2, 3, 4)), *c3 = tg_reshape(mat(3, 8), TG_SHAPE(3, 4, 2));
  EXPECT_NULL(tg_matmul(b3, c3), "broadcast", NULL);   /* batch 2 vs 3 */
}

/* ---------------------------------------------------------------- indexing */

TEST(errors_getitem) {
  tg_tensor *a = mat(2, 3);
  EXPECT_NULL(TG_GET(a, TG_I(2)), "range", "tg_getitem");
  EXPECT_NULL(TG_GET(a, TG_I(-3)), "range", NULL);
  EXPECT_NULL(TG_GET(a, TG_ALLIDX, TG_I(3)), "range", NULL);
  EXPECT_NULL(TG_GET(a, TG_STEP(0)), "step", NULL);
  EXPECT_NULL(TG_GET(a, TG_ALLIDX, TG_SLICE(0, 2, 0)), "step", NULL);
  EXPECT_NULL(TG_GET(a, TG_I(0), TG_I(0), TG_I(0)), "indices", NULL);
  EXPECT_NULL(TG_GET(a, TG_ELLIPSIS, TG_I(0), TG_ELLIPSIS), "ellipsis", NULL);
  tg_index bad = { (tg_index_kind)7, 0, 0, 1, false, false };
  EXPECT_NULL(tg_getitem(a, &bad, 1), "index", NULL);
  /* 17 new axes make more than TG_MAX_DIMS dimensions */
  tg_index many[TG_MAX_DIMS + 1];
  for (int i = 0; i <= TG_MAX_DIMS; i++) many[i] = TG_NEWAXIS;
  EXPECT_NULL(tg_getitem(a, many, TG_MAX_DIMS + 1), "dimensions", NULL);
  /* scalars: no index at all works, any int index is too many */
  tg_tensor *s = tg_scalar(3, TG_F32);
  CHECK_OK(tg_getitem(s, NULL, 0));
  EXPECT_NULL(TG_GET(s, TG_I(0)), "indices", NULL);
}

/* ---------------------------------------------------------------- dtypes */

TEST(errors_dtype_values) {
  tg_tensor *a = mat(2, 3);
  float d[4] = { 0 };
  EXPECT_NULL(tg_cast(a, (tg_dtype)99), "dtype", "tg_cast");
  EXPECT_NULL(tg_cast(a, (tg_dtype)-1), "dtype", NULL);
  EXPECT_NULL(tg_bitcast(a, TG_DTYPE_COUNT), "dtype", NULL);
  EXPECT_NULL(tg_zeros(TG_SHAPE(2), (tg_dtype)99), "dtype", NULL);
  EXPECT_NULL(tg_full(TG_SHAPE(2), 1, (tg_dtype)15), "dtype", NULL);
  EXPECT_NULL(tg_from_data(d, TG_SHAPE(2), (tg_dtype)200), "dtype", NULL);
  EXPECT_NULL(tg_empty(TG_SHAPE(2), (tg_dtype)-5), "dtype", NULL);
  EXPECT_NULL(tg_arange(0, 4, 1, (tg_dtype)99), "dtype", NULL);
  EXPECT_NULL(tg_eye(3, (tg_dtype)99), "dtype", NULL);
  EXPECT_NULL(tg_rand(TG_SHAPE(2), (tg_dtype)99), "dtype", NULL);
}

TEST(errors_bitcast) {
  tg_tensor *a = mat(2, 3);
  EXPECT_NULL(tg_bitcast(a, TG_F16), "bytes", "tg_bitcast");
  EXPECT_NULL(tg_bitcast(a, TG_F64), "bytes", NULL);
  EXPECT_NULL(tg_bitcast(a, TG_U8), "bytes", NULL);
  EXPECT_NULL(tg_bitcast(tg_cast(a, TG_BOOL), TG_U8), "bool", NULL);
  CHECK_OK(tg_bitcast(a, TG_U32));
  CHECK_OK(tg_bitcast(tg_cast(a, TG_I8), TG_U8));
}

TEST(errors_arange_overflow) {
  EXPECT_NULL(tg_arange(0, 129, 1, TG_I8), "overflow", "int8");
  EXPECT_NULL(tg_arange(-129, 0, 1, TG_I8), "overflow", NULL);
  EXPECT_NULL(tg_arange(0, 257, 1, TG_U8), "overflow", NULL);
  EXPECT_NULL(tg_arange(-1, 3, 1, TG_U16), "overflow", NULL);
  EXPECT_NULL(tg_arange(0, 3, 1, TG_BOOL), "overflow", NULL);
  EXPECT_NULL(tg_arange(0, 1, 0, TG_F32), "step", NULL);
  EXPECT_NULL(tg_arange(0, NAN, 1, TG_F32), "finite", NULL);
  EXPECT_NULL(tg_arange(0, 3, 0.5, TG_I32), "integer", NULL);
  tg_clear_error();
  tg_tensor *ok = tg_arange(0, 128, 1, TG_I8);
  CHECK_OK(ok);
  int8_t v[128];
  CHECK(ok && tg_data(ok, v, sizeof v) == 0);
  for (int i = 0; ok && i < 128; i++) CHECK_MSG(v[i] == i, "arange int8 [%d] = %d", i, v[i]);
  tg_tensor *down = tg_arange(127, -129, -1, TG_I8);   /* 127 .. -128 */
  CHECK_OK(down);
  int8_t w[256];
  CHECK(down && tg_numel(down) == 256 && tg_data(down, w, sizeof w) == 0);
  for (int i = 0; down && i < 256; i++) CHECK_MSG(w[i] == 127 - i, "arange int8 down [%d] = %d", i, w[i]);
  CHECK_OK(tg_arange(0, 256, 1, TG_U8));
}

/* ---------------------------------------------------------------- creation */

TEST(errors_creation) {
  EXPECT_NULL(tg_full(TG_SHAPE(2, -1), 1, TG_F32), "negative", NULL);
  EXPECT_NULL(tg_zeros(TG_SHAPE(-3), TG_F32), "negative", NULL);
  EXPECT_NULL(tg_rand(TG_SHAPE(-3), TG_F32), "negative", NULL);
  EXPECT_NULL(tg_eye(-1, TG_F32), "negative", NULL);
  EXPECT_NULL(tg_from_data(NULL, TG_SHAPE(2), TG_F32), "NULL", "tg_from_data");
  tg_shape big = { TG_MAX_DIMS + 1, { 0 } };
  EXPECT_NULL(tg_zeros(big, TG_F32), "dimensions", NULL);
}

/* ---------------------------------------------------------------- NULL inputs */

TEST(errors_null_inputs) {
  tg_tensor *a = mat(2, 3);
  int64_t p[4] = { 0 }, s[2] = { 0 }, e[2] = { 1, 1 };
  tg_clear_error();
  CHECK(tg_add(NULL, a) == NULL);
  CHECK_MSG(strstr(tg_error(), "NULL") != NULL, "error for a NULL input: \"%s\"", tg_error());
  tg_tensor *n = NULL;
  CHECK(tg_add(a, n) == NULL && tg_sub(n, a) == NULL && tg_mul(n, n) == NULL && tg_div(a, n) == NULL);
  CHECK(tg_pow(n, a) == NULL && tg_maximum(a, n) == NULL && tg_minimum(n, a) == NULL);
  CHECK(tg_adds(n, 1) == NULL && tg_subs(n, 1) == NULL && tg_muls(n, 1) == NULL && tg_divs(n, 1) == NULL && tg_pows(n, 2) == NULL);
  CHECK(tg_neg(n) == NULL && tg_exp(n) == NULL && tg_log(n) == NULL && tg_exp2(n) == NULL && tg_log2(n) == NULL);
  CHECK(tg_sqrt(n) == NULL && tg_rsqrt(n) == NULL && tg_reciprocal(n) == NULL && tg_sin(n) == NULL && tg_cos(n) == NULL);
  CHECK(tg_abs(n) == NULL && tg_relu(n) == NULL && tg_sigmoid(n) == NULL && tg_tanh(n) == NULL);
  CHECK(tg_lt(n, a) == NULL && tg_le(a, n) == NULL && tg_gt(n, a) == NULL && tg_ge(a, n) == NULL && tg_eq(n, a) == NULL && tg_ne(a, n) == NULL);
  CHECK(tg_logical_and(n, a) == NULL && tg_logical_or(a, n) == NULL && tg_logical_xor(n, n) == NULL && tg_logical_not(n) == NULL);
  CHECK(tg_where(n, a, a) == NULL && tg_where(a, n, a) == NULL && tg_where(a, a, n) == NULL);
  CHECK(tg_cast(n, TG_F16) == NULL && tg_bitcast(n, TG_I32) == NULL);
  CHECK(tg_reshape(n, TG_SHAPE(6)) == NULL && tg_permute(n, TG_AXES(1, 0)) == NULL && tg_expand(n, TG_SHAPE(2, 3)) == NULL);
  CHECK(tg_pad(n, p, 2, 0) == NULL && tg_shrink(n, s, e) == NULL && tg_flip(n, TG_ALL) == NULL && tg_transpose(n, 0, 1) == NULL);
  CHECK(tg_T(n) == NULL && tg_squeeze(n, TG_NOAXIS) == NULL && tg_unsqueeze(n, 0) == NULL && tg_flatten(n, 0, -1) == NULL);
  CHECK(TG_GET(n, TG_I(0)) == NULL);
  CHECK(tg_sum(n, TG_ALL, false) == NULL && tg_prod(n, TG_ALL, false) == NULL && tg_max(n, TG_ALL, false) == NULL);
  CHECK(tg_min(n, TG_ALL, false) == NULL && tg_mean(n, TG_ALL, false) == NULL && tg_argmax(n, 0, false) == NULL && tg_argmin(n, TG_NOAXIS, true) == NULL);
  CHECK(tg_matmul(n, a) == NULL && tg_dot(a, n) == NULL && tg_softmax(n, 0) == NULL && tg_log_softmax(n, -1) == NULL);
  CHECK(tg_contiguous(n) == NULL && tg_assign(n, a) == NULL && tg_assign(a, n) == NULL && tg_to(n, "CPU") == NULL);
  CHECK(tg_full_like(n, 1) == NULL && tg_zeros_like(n) == NULL && tg_ones_like(n) == NULL);
  float out[6];
  CHECK(tg_realize(n) < 0);
  tg_tensor *two[2] = { a, NULL };
  CHECK(tg_realize_all(two, 2) < 0);
  CHECK(tg_data(n, out, sizeof out) < 0);
  CHECK(isnan(tg_item(n)));
  CHECK_EQ_INT(tg_numel(n), -1);
  CHECK_EQ_INT(tg_ndim(n), -1);
  CHECK_EQ_INT(tg_dim(n, 0), -1);
  CHECK_EQ_INT(tg_shape_of(n).ndim, -1);
  CHECK(tg_device_of(n) == NULL);
  CHECK(tg_keep(n) == NULL);
  tg_free(n);
  /* NULL output pointer */
  EXPECT_NEG(tg_data(a, NULL, 24), "NULL", NULL);
}

/* The first error survives a chain of ops on its NULL result, so a block of
 * ops can be checked once at its end. */
TEST(errors_first_error_kept) {
  float x[4] = { 1, 2, 3, 4 };
  tg_tensor *a = tg_from_data(x, TG_SHAPE(3), TG_F32), *b = tg_from_data(x, TG_SHAPE(4), TG_F32);
  tg_clear_error();
  tg_tensor *r = tg_softmax(tg_exp(tg_sum(tg_add(a, b), TG_ALL, false)), 0);
  CHECK(r == NULL);
  CHECK_MSG(strstr(tg_error(), "broadcast") != NULL, "error after a chain: \"%s\"", tg_error());
  float out[1];
  CHECK(tg_data(r, out, sizeof out) < 0);
  CHECK_MSG(strstr(tg_error(), "broadcast") != NULL, "error after tg_data: \"%s\"", tg_error());
}

/* ---------------------------------------------------------------- data, item */

TEST(errors_data_and_item) {
  tg_tensor *a = mat(2, 3);
  float out[6];
  EXPECT_NEG(tg_data(a, out, 20), "small", "tg_data");
  EXPECT_NEG(tg_data(a, out, 0), "small", NULL);
  tg_clear_error();
  CHECK(tg_data(a, out, sizeof out) == 0);
  tg_clear_error();
  CHECK(isnan(tg_item(a)));
  check_words(__FILE__, __LINE__, "tg_item(2x3)", "elements", "tg_item");
  tg_clear_error();
  CHECK(isnan(tg_item(tg_zeros(TG_SHAPE(0), TG_F32))));
  check_words(__FILE__, __LINE__, "tg_item(empty)", "elements", NULL);
  CHECK_NEAR(tg_item(tg_reshape(TG_GET(a, TG_I(1), TG_I(2)), TG_SHAPE(1, 1))), 5.0, 0);
}

/* ---------------------------------------------------------------- assign */

TEST(errors_assign) {
  tg_tensor *a = mat(2, 3);
  int32_t iv[6] = { 0 };
  tg_tensor *ai = tg_from_data(iv, TG_SHAPE(2, 3), TG_I32);
  EXPECT_NULL(tg_assign(a, ai), "dtype", "tg_assign");
  EXPECT_NULL(tg_assign(a, tg_cast(ai, TG_F16)), "dtype", NULL);
  tg_tensor *computed = tg_adds(a, 1);
  EXPECT_NULL(tg_assign(computed, tg_ones(TG_SHAPE(2, 3), TG_F32)), "realize", NULL);
  EXPECT_NULL(tg_assign(tg_zeros(TG_SHAPE(2, 3), TG_F32), a), "realize", NULL);
  EXPECT_NULL(tg_assign(tg_expand(tg_reshape(TG_GET(a, TG_I(0)), TG_SHAPE(1, 3)), TG_SHAPE(4, 3)), tg_zeros(TG_SHAPE(4, 3), TG_F32)),
              "target", NULL);
  EXPECT_NULL(tg_assign(a, mat(3, 2)), "expand", NULL);
  EXPECT_NULL(tg_assign(a, mat(2, 4)), "expand", NULL);
  /* a failed assign leaves the target as it was */
  float out[6];
  tg_clear_error();
  CHECK(tg_data(a, out, sizeof out) == 0);
  for (int i = 0; i < 6; i++) CHECK(out[i] == (float)i);
}

/* ---------------------------------------------------------------- devices */

TEST(errors_devices) {
  CHECK(!strcmp(tg_default_device(), "CPU"));
  EXPECT_NEG(tg_set_default_device("TPU"), "TPU", NULL);
  CHECK(!strcmp(tg_default_device(), "CPU"));
  EXPECT_NEG(tg_set_default_device(""), NULL, NULL);
  tg_clear_error();
  CHECK(tg_set_default_device(NULL) < 0);
  CHECK(!strcmp(tg_default_device(), "CPU"));
  tg_tensor *a = mat(2, 3);
  EXPECT_NULL(tg_to(a, "TPU"), "TPU", NULL);
  /* a tensor on NULL next to one on CPU */
  CHECK(tg_set_default_device("NULL") == 0);
  tg_tensor *b = mat(2, 3);
  CHECK(tg_set_default_device("CPU") == 0);
  CHECK(b && !strcmp(tg_device_of(b), "NULL"));
  EXPECT_NULL(tg_add(a, b), "device", "tg_add");
  EXPECT_NULL(tg_mul(b, a), "device", NULL);
  EXPECT_NULL(tg_where(tg_gt(a, a), b, b), "device", NULL);
  EXPECT_NULL(tg_where(tg_gt(a, a), a, b), "device", NULL);
  EXPECT_NULL(tg_logical_or(a, b), "device", NULL);
  EXPECT_NULL(tg_matmul(a, tg_T(b)), "device", NULL);
  EXPECT_NULL(tg_assign(a, b), "NULL", "CPU");
  /* tg_to moves it over, and then it works */
  tg_clear_error();
  tg_tensor *b2 = tg_to(b, "CPU");
  CHECK_OK(b2);
  CHECK_OK(tg_add(a, b2));
}

/* ---------------------------------------------------------------- compiler */

/* A missing compiler fails the realize with a clear message, leaves the
 * tensor unrealized, and works again once the compiler is back. */
TEST(errors_missing_compiler) {
  const char *old_cc = getenv("CC"), *old_nc = getenv("TG_NOCACHE");
  char *save_cc = old_cc ? strdup(old_cc) : NULL, *save_nc = old_nc ? strdup(old_nc) : NULL;
  setenv("CC", "/nonexistent/tg-test-cc", 1);
  setenv("TG_NOCACHE", "1", 1);
  float x[7 * 11];
  for (int i = 0; i < 7 * 11; i++) x[i] = (float)i * 0.5f;
  tg_tensor *a = tg_from_data(x, TG_SHAPE(7, 11), TG_F32);
  /* a graph (and kernel shape) used nowhere else, so no cache can serve it */
  tg_tensor *r = tg_exp2(tg_adds(tg_muls(TG_GET(a, TG_STEP(-3), TG_SLICE(1, 10, 4)), 0.125), -0.375));
  CHECK_OK(r);
  int64_t k0 = tg_get_counters().kernels_run;
  EXPECT_NEG(tg_realize(r), "compiler", "/nonexistent/tg-test-cc");
  CHECK_EQ_INT(tg_get_counters().kernels_run, k0);
  float out[9];
  EXPECT_NEG(tg_data(r, out, sizeof out), "compiler", NULL);
  if (save_cc) setenv("CC", save_cc, 1); else unsetenv("CC");
  if (save_nc) setenv("TG_NOCACHE", save_nc, 1); else unsetenv("TG_NOCACHE");
  free(save_cc); free(save_nc);
  tg_clear_error();
  CHECK_MSG(tg_data(r, out, sizeof out) == 0, "after restoring CC: %s", tg_error());
  /* rows 6, 3, 0; columns 1, 5, 9 */
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++) CHECK_NEAR(out[i * 3 + j], exp2(x[(6 - 3 * i) * 11 + 1 + 4 * j] * 0.125 - 0.375), 1e-6);
}

/* ---------------------------------------------------------------- [2.9] overflow and misuse */

#define T40 ((int64_t)1 << 40)

/* Shapes whose element count passes int64 (or tg's 2^59 bound) are refused
 * where they come in, naming the op and the shape, so nothing downstream
 * (numel, reductions, the scheduler) multiplies them. */
TEST(errors_shape_overflow) {
  EXPECT_NULL(tg_empty(TG_SHAPE(T40, T40), TG_F32), "tg_empty", "(1099511627776,1099511627776)");
  EXPECT_NULL(tg_zeros(TG_SHAPE(T40, T40, 0), TG_F32), "2^59", NULL);   /* 0 elements, but its partial products overflow */
  EXPECT_NULL(tg_full(TG_SHAPE(INT64_MAX, 2), 1, TG_F32), "tg_full", "2^59");
  EXPECT_NULL(tg_rand(TG_SHAPE(T40, T40), TG_F32), "tg_rand", "2^59");
  EXPECT_NULL(tg_randn(TG_SHAPE(T40, T40), TG_F32), "tg_randn", NULL);
  EXPECT_NULL(tg_randint(TG_SHAPE(T40, T40), 0, 3, TG_I32), "tg_randint", NULL);
  EXPECT_NULL(tg_eye(T40, TG_F32), "tg_eye", "2^59");
  tg_tensor *a = tg_zeros(TG_SHAPE(4), TG_F32);
  EXPECT_NULL(tg_reshape(a, TG_SHAPE(T40, T40)), "tg_reshape", "(1099511627776,1099511627776)");
  EXPECT_NULL(tg_reshape(a, TG_SHAPE(T40, T40, 0)), "tg_reshape", "2^59");
  EXPECT_NULL(tg_reshape(a, TG_SHAPE(-1, T40, T40)), "tg_reshape", "2^59");
  tg_tensor *one = tg_zeros(TG_SHAPE(1, 1), TG_F32);
  EXPECT_NULL(tg_expand(one, TG_SHAPE(T40, T40)), "tg_expand", "2^59");
  int64_t huge[2] = { INT64_MAX, 5 };
  EXPECT_NULL(tg_pad(a, huge, 1, 0), "tg_pad", "2^59");
  int64_t neg[2] = { INT64_MIN, 0 };
  EXPECT_NULL(tg_pad(a, neg, 1, 0), "tg_pad", NULL);
  tg_tensor *wide = tg_zeros(TG_SHAPE(T40 / 4, 4), TG_F32);
  int64_t grow[4] = { 0, 0, T40, 0 };
  EXPECT_NULL(tg_pad(wide, grow, 2, 0), "tg_pad", "2^59");
  /* broadcasting (2^40, 1) against (1, 2^40) */
  tg_tensor *col = tg_zeros(TG_SHAPE(T40, 1), TG_F32), *row = tg_zeros(TG_SHAPE(1, T40), TG_F32);
  EXPECT_NULL(tg_add(col, row), "tg_add", "2^59");
  EXPECT_NULL(tg_repeat(tg_zeros(TG_SHAPE(T40), TG_F32), TG_SHAPE(T40)), "tg_repeat", "2^59");
  EXPECT_NULL(tg_repeat_interleave(tg_zeros(TG_SHAPE(T40), TG_F32), T40, 0), "tg_repeat_interleave", "2^59");
  tg_tensor *half = tg_zeros(TG_SHAPE((int64_t)1 << 58), TG_U8), *three[3] = { half, half, half };
  EXPECT_NULL(tg_cat(three, 3, 0), "tg_cat", "2^59");
  tg_tensor *raw = tg_zeros(TG_SHAPE(18), TG_U8);
  EXPECT_NULL(tg_dequantize(raw, 2, TG_SHAPE(T40, T40)), "tg_dequantize", "2^59");   /* wrapped to 0 values before */
  CHECK_OK(tg_dequantize(raw, 2, TG_SHAPE(32)));
  /* tg_arange: a count past int64 (step 1e-30, stop inf) is refused before any cast */
  EXPECT_NULL(tg_arange(0, 1, 1e-30, TG_F32), "tg_arange", "too many");
  EXPECT_NULL(tg_arange(0, INFINITY, 1, TG_F32), "tg_arange", "too many");
  EXPECT_NULL(tg_arange(0, 1e300, 1e-300, TG_F64), "tg_arange", NULL);
  EXPECT_NULL(tg_arange(1e19, 1.1e19, 1e17, TG_U64), "tg_arange", "int64");   /* start past int64: a UB cast before */
  tg_clear_error();
  tg_tensor *single = tg_arange(5, 6, 1e300, TG_I32);   /* one value; the huge step plays no part */
  int32_t sv = 0;
  CHECK_OK(single);
  CHECK(single && tg_data(single, &sv, sizeof sv) == 0 && sv == 5);
  /* still fine: the largest shapes under the bound, and zero-size tensors */
  CHECK_OK(tg_reshape(tg_zeros(TG_SHAPE(1, 1), TG_F32), TG_SHAPE(1, 1, 1, 1)));
  CHECK_OK(tg_expand(one, TG_SHAPE((int64_t)1 << 29, (int64_t)1 << 30)));
  CHECK_OK(tg_zeros(TG_SHAPE(0, 1 << 20, 1 << 20), TG_F32));
}

/* Sizes that ops compute from their arguments (a dilated kernel, a
 * transposed conv's output, groups of a rearrange or unflatten, an unpool
 * plane, unfold's tiling, roll's total shift) are checked as they are
 * computed: an error naming the op, never a wrapped value. */
TEST(errors_shape_overflow_ops) {
  tg_tensor *x = tg_zeros(TG_SHAPE(1, 1, 8), TG_F32), *wk = tg_zeros(TG_SHAPE(1, 1, T40), TG_F32);
  EXPECT_NULL(tg_conv(x, wk, NULL, &(tg_conv_opts){ .dilation = { 1 << 30 } }), "tg_conv", "2^59");
  tg_tensor *xl = tg_zeros(TG_SHAPE(1, 1, T40), TG_F32), *w3 = tg_zeros(TG_SHAPE(1, 1, 3), TG_F32);
  EXPECT_NULL(tg_conv_transpose(xl, w3, NULL, &(tg_conv_transpose_opts){ .stride = { 1 << 30 } }), "tg_conv_transpose", "2^59");
  EXPECT_NULL(tg_conv_transpose(x, wk, NULL, &(tg_conv_transpose_opts){ .dilation = { 1 << 30 } }), "tg_conv_transpose", "2^59");
  tg_tensor *a = tg_zeros(TG_SHAPE(4), TG_F32);
  EXPECT_NULL(tg_rearrange(a, "(a b c) -> a b c", "a=1099511627776 b=1099511627776 c=0"), "tg_rearrange", "2^59");
  EXPECT_NULL(tg_unflatten(a, 0, TG_SHAPE(T40, T40, 0)), "tg_unflatten", "2^59");
  tg_tensor *px = tg_zeros(TG_SHAPE(1, 1, 2, 2), TG_F32), *pi = tg_zeros(TG_SHAPE(1, 1, 2, 2), TG_I64);
  EXPECT_NULL(tg_max_unpool2d(px, pi, NULL, (int64_t[2]){ T40, T40 }), "tg_max_unpool2d", "2^59");
  EXPECT_NULL(tg_max_unpool2d(tg_zeros(TG_SHAPE(1, 1, 2, T40), TG_F32), tg_zeros(TG_SHAPE(1, 1, 2, T40), TG_I64),
                              &(tg_pool_opts){ .kernel = { 2, 2 }, .stride = { 2, 1 << 30 } }, NULL), "tg_max_unpool2d", "2^59");
  EXPECT_NULL(tg_unfold(tg_zeros(TG_SHAPE(T40), TG_F32), 0, T40 / 2, 1), "tg_unfold", "2^59");
  EXPECT_NULL(tg_diag(tg_zeros(TG_SHAPE(T40), TG_F32), 0), "tg_diag", "2^59");   /* n * n wrapped before */
  EXPECT_NULL(tg_diag(a, INT64_MIN), "tg_diag", "2^59");
  tg_clear_error();
  tg_tensor *none = tg_diagonal(tg_zeros(TG_SHAPE(3, 3), TG_F32), INT64_MIN, 0, 1);   /* -offset was UB */
  CHECK_OK(none);
  CHECK(none && tg_numel(none) == 0);
  tg_clear_error();
  CHECK_MSG(tg_split_size(tg_zeros(TG_SHAPE(5), TG_F32), INT64_MAX, 0, NULL, 0) == 1, "%s", tg_error());   /* one piece */
  EXPECT_NEG(tg_ggml_nbytes(TG_GGML_F32, INT64_MAX), "tg_ggml_nbytes", "int64");
  EXPECT_NEG(tg_ggml_nbytes(TG_GGML_Q4_0, 33), "tg_ggml_nbytes", "blocks");
  /* a lazy matmul whose work m * k * n passes int64: the panel-packing test
   * multiplied it, and the packed product's failure read rs.d[-3] */
  tg_tensor *ma = tg_zeros(TG_SHAPE((int64_t)1 << 25, (int64_t)1 << 25), TG_F32);
  EXPECT_NULL(tg_matmul(ma, tg_zeros(TG_SHAPE((int64_t)1 << 25, (int64_t)1 << 25), TG_F32)), "2^59", NULL);
  /* scans and sorts: comparison windows of numel * (axis or block) values */
  tg_tensor *big = tg_zeros(TG_SHAPE((int64_t)1 << 56), TG_F32);
  EXPECT_NULL(tg_cumsum(big, 0), "tg_cumsum", "2^59");
  EXPECT_NULL(tg_sort(tg_zeros(TG_SHAPE(T40), TG_F32), 0, false, NULL), "tg_sort", "2^59");
  EXPECT_NULL(tg_topk(tg_zeros(TG_SHAPE(T40), TG_F32), 2, 0, true, true, NULL), "tg_topk", "2^59");
  tg_tensor *cmi = NULL;
  EXPECT_NULL(tg_cummax(tg_zeros(TG_SHAPE(T40), TG_F32), 0, &cmi), "tg_cummax", "2^59");
  tg_clear_error();
  CHECK_OK(tg_cummax(tg_zeros(TG_SHAPE(T40), TG_F32), 0, NULL));   /* blocked: 2^40 * 512 fits */
  EXPECT_NULL(tg_pad_mode(a, (int64_t[2]){ INT64_MAX, INT64_MAX }, 2, TG_PAD_CONSTANT, 0), "tg_pad_mode", "2^59");
  EXPECT_NULL(tg_pad_mode(a, (int64_t[2]){ INT64_MIN, 0 }, 2, TG_PAD_REFLECT, 0), "tg_pad_mode", "2^59");
  EXPECT_NULL(tg_pad_mode(a, (int64_t[2]){ 0, INT64_MIN }, 2, TG_PAD_CIRCULAR, 0), "tg_pad_mode", "2^59");
  /* a step past the axis: one window (o * step overflowed before) */
  tg_clear_error();
  tg_tensor *one = tg_unfold(tg_arange(0, 10, 1, TG_F32), 0, 3, INT64_MAX);
  float got[3] = { -1, -1, -1 };
  CHECK_OK(one);
  CHECK(one && tg_numel(one) == 3 && tg_data(one, got, sizeof got) == 0 && got[0] == 0 && got[2] == 2);
  /* shifts that add past int64 on a repeated axis: reduced as they add up (INT64_MAX % 10 = 7, twice: 4) */
  tg_tensor *r = tg_roll(tg_arange(0, 10, 1, TG_F32), (int64_t[2]){ INT64_MAX, INT64_MAX }, TG_AXES(0, 0));
  float rv[10] = { -1 };
  CHECK_OK(r);
  CHECK_MSG(r && tg_data(r, rv, sizeof rv) == 0 && rv[0] == 6 && rv[4] == 0, "roll: %g %g", rv[0], rv[4]);
}

/* getitem steps of any size, INT64_MIN included (-step overflowed): one element */
TEST(errors_getitem_extreme_steps) {
  float d[10];
  for (int i = 0; i < 10; i++) d[i] = (float)i;
  tg_tensor *a = tg_from_data(d, TG_SHAPE(10), TG_F32);
  struct { int64_t start, stop, step; bool has_start, has_stop; float want0; int64_t n; } cases[] = {
    { 0, 0, INT64_MIN, false, false, 9, 1 },
    { 0, 0, INT64_MAX, false, false, 0, 1 },
    { 3, 0, INT64_MAX, true, false, 3, 1 },
    { 7, 2, INT64_MIN, true, true, 7, 1 },
    { INT64_MIN, INT64_MAX, 3, true, true, 0, 4 },
    { INT64_MAX, INT64_MIN, -4, true, true, 9, 3 },
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    tg_index ix = { TG_IDX_SLICE, cases[i].start, cases[i].stop, cases[i].step, cases[i].has_start, cases[i].has_stop };
    tg_tensor *r = tg_getitem(a, &ix, 1);
    CHECK_MSG(r != NULL, "case %zu: %s", i, tg_error());
    if (!r) continue;
    CHECK_MSG(tg_numel(r) == cases[i].n, "case %zu: %lld elements", i, (long long)tg_numel(r));
    float got[10] = { -1 };
    CHECK(tg_data(r, got, sizeof(float) * (size_t)tg_numel(r)) == 0);
    CHECK_MSG(got[0] == cases[i].want0, "case %zu: first %g, want %g", i, got[0], cases[i].want0);
  }
  EXPECT_NULL(TG_GET(a, TG_I(INT64_MIN)), "range", NULL);
  EXPECT_NULL(tg_getitem(a, NULL, 1), "tg_getitem", "NULL");
}

/* NULL arguments, out-of-range enums and counts: errors, not crashes */
TEST(errors_api_misuse) {
  tg_tensor *a = tg_zeros(TG_SHAPE(4), TG_F32);
  EXPECT_NEG(tg_realize_all(NULL, 3), "tg_realize_all", "NULL");
  EXPECT_NEG(tg_realize_all(&a, -1), "tg_realize_all", NULL);
  tg_tensor *with_null[2] = { a, NULL };
  EXPECT_NEG(tg_realize_all(with_null, 2), "NULL", NULL);
  CHECK(tg_realize_all(NULL, 0) == 0);
  int64_t e[1] = { 2 };
  EXPECT_NULL(tg_shrink(a, NULL, e), "tg_shrink", "NULL");
  EXPECT_NULL(tg_shrink(a, e, NULL), "tg_shrink", "NULL");
  EXPECT_NULL(tg_pad(a, NULL, 1, 0), "tg_pad", "NULL");
  /* dtypes */
  tg_clear_error();
  CHECK(!strcmp(tg_dtype_name((tg_dtype)99), "?") && strstr(tg_error(), "unknown dtype 99"));
  tg_clear_error();
  CHECK(tg_dtype_size((tg_dtype)-1) == 0 && strstr(tg_error(), "unknown dtype"));
  tg_clear_error();
  tg_dtype p = tg_dtype_promote((tg_dtype)99, TG_I32);
  CHECK(p == TG_I32 && strstr(tg_error(), "unknown dtype 99"));
  CHECK((int)tg_dtype_promote((tg_dtype)99, (tg_dtype)99) < TG_DTYPE_COUNT);
  EXPECT_NULL(tg_cast(a, (tg_dtype)99), "tg_cast", "99");
  /* tokenizer, chat, model, sampler */
  tg_clear_error();
  CHECK(!tg_tokenizer_load(NULL) && strstr(tg_error(), "NULL path"));
  EXPECT_NEG(tg_tokenize(NULL, "a", 1, true, false, NULL), "tg_tokenize", NULL);
  tg_clear_error();
  CHECK(!tg_detokenize(NULL, NULL, 3, false, false, NULL) && strstr(tg_error(), "tg_detokenize"));
  tg_clear_error();
  CHECK(!tg_chat_apply(NULL, NULL, 1, true, false) && strstr(tg_error(), "no template"));
  tg_clear_error();
  CHECK(!tg_chat_apply_json(NULL, "[]", NULL, NULL, true, false) && strstr(tg_error(), "no template"));
  tg_clear_error();
  CHECK(!tg_llm_load(NULL, NULL) && strstr(tg_error(), "NULL path"));
  tg_clear_error();
  CHECK(!tg_llm_load("goldens/llm_llama.gguf", &(tg_llm_opts){ .n_ctx = -5 }) && strstr(tg_error(), "n_ctx -5"));
  EXPECT_NEG(tg_llm_eval(NULL, NULL, 1, NULL), "tg_llm_eval", NULL);
  tg_llm *m = tg_llm_load("goldens/llm_llama.gguf", &(tg_llm_opts){ .n_ctx = 8 });
  CHECK_OK(m);
  if (m) {
    EXPECT_NEG(tg_llm_eval(m, NULL, 3, NULL), "tg_llm_eval", "NULL");
    CHECK_EQ_INT(tg_llm_n_past(m), 0);
    tg_llm_free(m);
  }
  tg_clear_error();
  CHECK(!tg_sampler_new(&(tg_sampling){ .temperature = NAN, .top_p = 1 }) && strstr(tg_error(), "temperature"));
  tg_clear_error();
  CHECK(!tg_sampler_new(&(tg_sampling){ .temperature = INFINITY, .top_p = 1 }) && strstr(tg_error(), "temperature"));
  tg_clear_error();
  CHECK(!tg_sampler_new(&(tg_sampling){ .temperature = 1, .top_p = -3 }) && strstr(tg_error(), "top_p"));
  tg_clear_error();
  CHECK(!tg_sampler_new(&(tg_sampling){ .temperature = 1, .top_p = NAN }) && strstr(tg_error(), "top_p"));
  tg_clear_error();
  CHECK(!tg_sampler_new(&(tg_sampling){ .temperature = 1, .top_p = 1, .min_p = 2 }) && strstr(tg_error(), "min_p"));
  tg_clear_error();
  CHECK(!tg_sampler_new(&(tg_sampling){ .temperature = 1, .top_p = 1, .top_k = -1 }) && strstr(tg_error(), "top_k"));
  EXPECT_NEG(tg_sampler_sample(NULL, NULL, 5), "tg_sampler_sample", NULL);
  tg_sampler *s = tg_sampler_new(NULL);
  CHECK_OK(s);
  float l[2] = { 1, 2 };
  EXPECT_NEG(tg_sampler_sample(s, NULL, 2), "tg_sampler_sample", "NULL");
  EXPECT_NEG(tg_sampler_sample(s, l, 0), "tg_sampler_sample", NULL);
  tg_sampler_free(s);
}

/* Kernels over the largest shapes tg allows, scheduled and "run" on the NULL
 * device (no memory): loop spaces whose sizes multiply past int64 (a softmax
 * fuses two reduces over the same 2^39 axis; two row sums side by side) must
 * schedule, optimize and estimate their cost without overflowing
 * (cpu_heuristic_opts multiplied them), and the memory counter must not
 * wrap on buffers whose bytes add up past int64. */
TEST(errors_huge_kernels) {
  char before[64];
  snprintf(before, sizeof before, "%s", tg_default_device());
  CHECK(tg_set_default_device("NULL") == 0);
  int64_t rows = (int64_t)1 << 20, cols = (int64_t)1 << 39;
  tg_tensor *x = tg_empty(TG_SHAPE(rows, cols), TG_F32), *y = tg_empty(TG_SHAPE(rows, cols), TG_F32);
  CHECK_OK(x);
  CHECK_OK(y);
  tg_tensor *sm = tg_softmax(x, 1);
  CHECK_OK(sm);
  CHECK_MSG(sm && tg_realize(sm) == 0, "softmax: %s", tg_error());
  tg_tensor *two = tg_add(tg_sum(x, TG_AXES(1), false), tg_sum(y, TG_AXES(1), false));
  CHECK_OK(two);
  CHECK_MSG(two && tg_realize(two) == 0, "two sums: %s", tg_error());
  tg_tensor *all = tg_add(tg_sum(x, TG_AXES(0, 1), false), tg_sum(y, TG_AXES(0, 1), false));
  CHECK_OK(all);
  CHECK_MSG(all && tg_realize(all) == 0, "two totals: %s", tg_error());
  tg_tensor *ln = tg_layernorm(x, TG_SHAPE(cols), NULL, NULL, 1e-5);   /* mean, then variance: nested reduces */
  CHECK_OK(ln);
  CHECK_MSG(ln && tg_realize(ln) == 0, "layernorm: %s", tg_error());
  tg_tensor *sd = tg_std(x, TG_AXES(1), false, 1);
  CHECK_OK(sd);
  CHECK_MSG(sd && tg_realize(sd) == 0, "std: %s", tg_error());
  /* a symbolic axis at its maximum: the estimates count it whole */
  CHECK_OK(tg_variable("ovf_n", 1, cols));
  tg_tensor *xs = tg_shrink_var(x, 1, "ovf_n");
  CHECK_OK(xs);
  CHECK(tg_bind("ovf_n", 7) == 0);
  tg_tensor *ss = xs ? tg_softmax(xs, 1) : NULL;
  CHECK_OK(ss);
  CHECK_MSG(ss && tg_realize(ss) == 0, "symbolic softmax: %s", tg_error());
  /* the buffers held add up past int64 bytes: the counter saturates (it wrapped before) */
  CHECK(tg_get_counters().mem_used > 0);
  CHECK(tg_set_default_device(before) == 0);
}
