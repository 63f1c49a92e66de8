/* test_custom_kernel.c: tg_custom_kernel and the tg_k_* builder
 * (tg_kernel.h). Values are checked against plain tg ops computing the
 * same thing, with small integer data so that every sum is exact in any
 * order (an exact property: equal results), and the seeds' fp8 case
 * against numpy/ml_dtypes (tests/gen/gen_custom_kernel.py). The names start
 * with custom_kernel_ so the suite runs them again on CL (and NVRTC, CUDA)
 * when present (main.c). */
#include <stdint.h>
#include "test.h"
#include "golden_io.h"
#include "util/util.h"
#include "runtime/device.h"
#include "tg_kernel.h"
#include "tg_movement.h"
#include "tg_math.h"
#include "../examples/fp8_quantize.h"

/* small integers in [-3, 3], a fixed sequence per seed */
static tg_tensor *ints_tensor(tg_shape s, uint32_t seed) {
  int64_t n = 1;
  for (int i = 0; i < s.ndim; i++) n *= s.d[i];
  float *v = malloc(sizeof(float) * (size_t)n);
  for (int64_t i = 0; i < n; i++) { seed = seed * 1664525u + 1013904223u; v[i] = (float)((int)(seed >> 24) % 7 - 3); }
  tg_tensor *t = tg_from_data(v, s, TG_F32);
  free(v);
  return t;
}

/* every element of a and b equal (same shape and dtype) */
static bool same(tg_tensor *a, tg_tensor *b, const char *what) {
  tg_shape sa = tg_shape_of(a), sb = tg_shape_of(b);
  if (!a || !b || sa.ndim != sb.ndim || memcmp(sa.d, sb.d, sizeof(int64_t) * (size_t)sa.ndim) || tg_dtype_of(a) != tg_dtype_of(b)) {
    test_fail(__FILE__, __LINE__, "%s: shapes or dtypes differ (%s)", what, tg_error() ? tg_error() : "");
    return false;
  }
  tg_tensor *eq = tg_cast(tg_eq(a, b), TG_F32);
  double n = tg_item(tg_sum(eq, TG_ALL, false)), want = (double)tg_numel(a);
  CHECK_MSG(n == want, "%s: %g of %g elements equal", what, n, want);
  return n == want;
}

static tg_kv *at2(tg_kb *kb, tg_kv *buf, tg_kv *i, tg_kv *j) { tg_kv *ix[2] = { i, j }; return tg_k_index(kb, buf, ix, 2); }
static tg_kv *ld2(tg_kb *kb, tg_kv *buf, tg_kv *i, tg_kv *j) { return tg_k_load(kb, at2(kb, buf, i, j)); }

/* ---- kernels */

/* out[i,j] = x[i,j] * 2 + y[i,j] */
static int axpy_build(void *ctx, tg_kb *kb) {
  tg_kv *x = tg_k_input(kb, 0), *y = tg_k_input(kb, 1), *o = tg_k_output(kb, 0);
  tg_shape s = tg_k_shape(kb, o);
  tg_kv *i = tg_k_range(kb, s.d[0]), *j = tg_k_range(kb, s.d[1]);
  tg_kv *v = tg_k_add(kb, tg_k_mul(kb, ld2(kb, x, i, j), tg_k_const(kb, TG_F32, 2)), ld2(kb, y, i, j));
  return tg_k_store(kb, at2(kb, o, i, j), v);
}

/* out0[i] = min(a[i], b[i]), out1[i] = (a & b) ^ (a | b) (int32) */
static int int_ops_build(void *ctx, tg_kb *kb) {
  tg_kv *i = tg_k_range(kb, tg_k_shape(kb, tg_k_input(kb, 0)).d[0]);
  tg_kv *a = tg_k_load(kb, tg_k_index(kb, tg_k_input(kb, 0), &i, 1)), *b = tg_k_load(kb, tg_k_index(kb, tg_k_input(kb, 1), &i, 1));
  tg_k_store(kb, tg_k_index(kb, tg_k_output(kb, 1), &i, 1), tg_k_xor(kb, tg_k_and(kb, a, b), tg_k_or(kb, a, b)));
  return tg_k_store(kb, tg_k_index(kb, tg_k_output(kb, 0), &i, 1), tg_k_min(kb, a, b));
}

/* out[i,j] = i * C + j, as float32 (no inputs) */
static int arange_build(void *ctx, tg_kb *kb) {
  tg_kv *o = tg_k_output(kb, 0);
  tg_shape s = tg_k_shape(kb, o);
  tg_kv *i = tg_k_range(kb, s.d[0]), *j = tg_k_range(kb, s.d[1]);
  tg_kv *v = tg_k_add(kb, tg_k_mul(kb, i, tg_k_int(kb, s.d[1])), j);
  return tg_k_store(kb, at2(kb, o, i, j), tg_k_cast(kb, v, TG_F32));
}

/* out0[i] = sum_j x[i,j], out1[i] = max_j x[i,j], out2[0] = sum of all */
static int row_stats_build(void *ctx, tg_kb *kb) {
  tg_kv *x = tg_k_input(kb, 0);
  tg_shape s = tg_k_shape(kb, x);
  tg_kv *i = tg_k_range(kb, s.d[0]), *j = tg_k_reduce_range(kb, s.d[1]);
  tg_kv *xij = ld2(kb, x, i, j);
  tg_k_store(kb, tg_k_index(kb, tg_k_output(kb, 0), &i, 1), tg_k_reduce(kb, TG_K_SUM, xij, &j, 1));
  tg_k_store(kb, tg_k_index(kb, tg_k_output(kb, 1), &i, 1), tg_k_reduce(kb, TG_K_MAX, xij, &j, 1));
  tg_kv *r[2] = { tg_k_reduce_range(kb, s.d[0]), tg_k_reduce_range(kb, s.d[1]) };
  tg_kv *zero = tg_k_int(kb, 0);
  return tg_k_store(kb, tg_k_index(kb, tg_k_output(kb, 2), &zero, 1), tg_k_reduce(kb, TG_K_SUM, ld2(kb, x, r[0], r[1]), r, 2));
}

/* out0 = a + b (float32), out1 = int32(a * b) */
static int add_mul_build(void *ctx, tg_kb *kb) {
  tg_kv *a = tg_k_input(kb, 0), *b = tg_k_input(kb, 1);
  tg_kv *i = tg_k_range(kb, tg_k_shape(kb, a).d[0]);
  tg_kv *x = tg_k_load(kb, tg_k_index(kb, a, &i, 1)), *y = tg_k_load(kb, tg_k_index(kb, b, &i, 1));
  tg_k_store(kb, tg_k_index(kb, tg_k_output(kb, 0), &i, 1), tg_k_add(kb, x, y));
  return tg_k_store(kb, tg_k_index(kb, tg_k_output(kb, 1), &i, 1), tg_k_cast(kb, tg_k_mul(kb, x, y), TG_I32));
}

/* out[i] = table[clamp(idx[i], 0, n-1)]: an index loaded from memory */
static int gather_build(void *ctx, tg_kb *kb) {
  tg_kv *table = tg_k_input(kb, 0), *idx = tg_k_input(kb, 1);
  int64_t n = tg_k_shape(kb, table).d[0];
  tg_kv *i = tg_k_range(kb, tg_k_shape(kb, idx).d[0]);
  tg_kv *k = tg_k_cast(kb, tg_k_load(kb, tg_k_index(kb, idx, &i, 1)), TG_I64);
  if (!ctx) k = tg_k_min(kb, tg_k_max(kb, k, tg_k_int(kb, 0)), tg_k_int(kb, n - 1));   /* ctx non-NULL: unclamped */
  return tg_k_store(kb, tg_k_index(kb, tg_k_output(kb, 0), &i, 1), tg_k_load(kb, tg_k_index(kb, table, &k, 1)));
}

/* C[i,j] = sum_k A[i,k] B[k,j] */
static int matmul_build(void *ctx, tg_kb *kb) {
  tg_kv *a = tg_k_input(kb, 0), *b = tg_k_input(kb, 1), *c = tg_k_output(kb, 0);
  tg_shape sa = tg_k_shape(kb, a), sb = tg_k_shape(kb, b);
  tg_kv *i = tg_k_range(kb, sa.d[0]), *j = tg_k_range(kb, sb.d[1]), *k = tg_k_reduce_range(kb, sa.d[1]);
  tg_kv *v = tg_k_reduce(kb, TG_K_SUM, tg_k_mul(kb, ld2(kb, a, i, k), ld2(kb, b, k, j)), &k, 1);
  return tg_k_store(kb, at2(kb, c, i, j), v);
}

static int matmul_grad(void *ctx, tg_tensor *const *in, int nin, tg_tensor *const *out, tg_tensor *const *gout, int nout, tg_tensor **gin);

/* a @ b as a custom kernel; ctx: 1 for the gradient as custom kernels too */
static tg_tensor *custom_matmul(tg_tensor *a, tg_tensor *b, void *ctx) {
  tg_kernel_out o = { TG_SHAPE(tg_shape_of(a).d[0], tg_shape_of(b).d[1]), TG_F32 };
  tg_tensor *in[2] = { a, b }, *c = NULL;
  tg_custom_kernel("custom_matmul", &o, 1, in, 2, matmul_build, matmul_grad, ctx, &c);
  return c;
}

static int matmul_grad(void *ctx, tg_tensor *const *in, int nin, tg_tensor *const *out, tg_tensor *const *gout, int nout, tg_tensor **gin) {
  tg_tensor *at = tg_transpose(in[0], 0, 1), *bt = tg_transpose(in[1], 0, 1);
  gin[0] = ctx ? custom_matmul(gout[0], bt, NULL) : tg_matmul(gout[0], bt);
  gin[1] = ctx ? custom_matmul(at, gout[0], NULL) : tg_matmul(at, gout[0]);
  return gin[0] && gin[1] ? 0 : -1;
}

/* out = in + 1, any shape */
static int add_one_build(void *ctx, tg_kb *kb) {
  tg_kv *x = tg_k_input(kb, 0);
  tg_shape s = tg_k_shape(kb, x);
  int64_t n = 1;
  for (int a = 0; a < s.ndim; a++) n *= s.d[a];
  tg_kv *i = tg_k_range(kb, n);
  tg_kv *v = tg_k_add(kb, tg_k_load(kb, tg_k_index(kb, x, &i, 1)), tg_k_const(kb, TG_F32, 1));
  return tg_k_store(kb, tg_k_index(kb, tg_k_output(kb, 0), &i, 1), v);
}
static tg_tensor *add_one(tg_tensor *x) {
  tg_kernel_out o = { tg_shape_of(x), TG_F32 };
  tg_tensor *y = NULL;
  tg_custom_kernel("add_one", &o, 1, &x, 1, add_one_build, NULL, NULL, &y);
  return y;
}

/* ---- values */

TEST(custom_kernel_elementwise) {
  tg_tensor *x = ints_tensor(TG_SHAPE(5, 7), 1), *y = ints_tensor(TG_SHAPE(5, 7), 2), *in[2] = { x, y }, *o = NULL;
  tg_kernel_out spec = { TG_SHAPE(5, 7), TG_F32 };
  CHECK_OK(tg_custom_kernel("axpy", &spec, 1, in, 2, axpy_build, NULL, NULL, &o) == 0);
  same(o, tg_add(tg_muls(x, 2), y), "axpy");
  tg_tensor *r = NULL;
  CHECK_OK(tg_custom_kernel("arange", &spec, 1, NULL, 0, arange_build, NULL, NULL, &r) == 0);
  same(r, tg_reshape(tg_arange(0, 35, 1, TG_F32), TG_SHAPE(5, 7)), "arange");
  CHECK(r && !strcmp(tg_device_of(r), tg_default_device()));
  /* integer min, the dtype's extremes included */
  int32_t av[4] = { INT32_MIN, 5, -7, INT32_MAX }, bv[4] = { 3, INT32_MIN, -7, INT32_MAX - 1 };
  tg_tensor *ab[2] = { tg_from_data(av, TG_SHAPE(4), TG_I32), tg_from_data(bv, TG_SHAPE(4), TG_I32) }, *m[2] = { 0 };
  tg_kernel_out ms[2] = { { TG_SHAPE(4), TG_I32 }, { TG_SHAPE(4), TG_I32 } };
  CHECK_OK(tg_custom_kernel("int_ops", ms, 2, ab, 2, int_ops_build, NULL, NULL, m) == 0);
  same(m[0], tg_minimum(ab[0], ab[1]), "int32 min");
  same(m[1], tg_bitwise_xor(tg_bitwise_and(ab[0], ab[1]), tg_bitwise_or(ab[0], ab[1])), "int32 and, or, xor");
}

TEST(custom_kernel_reduce_and_outputs) {
  tg_tensor *x = ints_tensor(TG_SHAPE(9, 33), 3), *o[3] = { 0 };
  tg_kernel_out spec[3] = { { TG_SHAPE(9), TG_F32 }, { TG_SHAPE(9), TG_F32 }, { TG_SHAPE(1), TG_F32 } };
  CHECK_OK(tg_custom_kernel("row_stats", spec, 3, &x, 1, row_stats_build, NULL, NULL, o) == 0);
  same(o[0], tg_sum(x, TG_AXES(1), false), "row sums");
  same(o[1], tg_max(x, TG_AXES(1), false), "row maxima");
  same(o[2], tg_reshape(tg_sum(x, TG_ALL, false), TG_SHAPE(1)), "total");
  /* two outputs of different dtypes */
  tg_tensor *a = ints_tensor(TG_SHAPE(100), 4), *b = ints_tensor(TG_SHAPE(100), 5), *in[2] = { a, b }, *r[2] = { 0 };
  tg_kernel_out s2[2] = { { TG_SHAPE(100), TG_F32 }, { TG_SHAPE(100), TG_I32 } };
  CHECK_OK(tg_custom_kernel("add_mul", s2, 2, in, 2, add_mul_build, NULL, NULL, r) == 0);
  same(r[0], tg_add(a, b), "a + b");
  same(r[1], tg_cast(tg_mul(a, b), TG_I32), "int32(a * b)");
}

TEST(custom_kernel_gather_clamped_index) {
  float tab[6] = { 10, 11, 12, 13, 14, 15 };
  int32_t ix[5] = { 2, -4, 5, 9, 0 };
  float want[5] = { 12, 10, 15, 15, 10 };
  tg_tensor *in[2] = { tg_from_data(tab, TG_SHAPE(6), TG_F32), tg_from_data(ix, TG_SHAPE(5), TG_I32) }, *o = NULL;
  tg_kernel_out spec = { TG_SHAPE(5), TG_F32 };
  CHECK_OK(tg_custom_kernel("gather", &spec, 1, in, 2, gather_build, NULL, NULL, &o) == 0);
  float got[5] = { 0 };
  CHECK_OK(tg_data(o, got, sizeof got) == 0);
  for (int i = 0; i < 5; i++) CHECK_EQ_INT(got[i], want[i]);
  /* unclamped, the loaded index's range is unknown: refused */
  CHECK_FAILS(tg_custom_kernel("gather", &spec, 1, in, 2, gather_build, NULL, (void *)1, &o), "tg_custom_kernel gather", "input 0", "clamp it");
}

/* lazy inputs are stored first, the kernel runs after their producers and
 * before its consumers, a kernel may feed a kernel, and nothing fuses into it */
TEST(custom_kernel_ordering_and_lazy_inputs) {
  tg_tensor *a = ints_tensor(TG_SHAPE(6, 4), 6);
  tg_tensor *x = tg_transpose(tg_adds(a, 1), 0, 1);            /* lazy, and a view */
  tg_tensor *k1 = add_one(x);
  tg_tensor *k2 = add_one(tg_muls(k1, 2));
  tg_tensor *loss = tg_sum(tg_mul(k2, k1), TG_AXES(0), false);
  tg_tensor *p1 = tg_adds(x, 1), *p2 = tg_adds(tg_muls(p1, 2), 1);
  same(loss, tg_sum(tg_mul(p2, p1), TG_AXES(0), false), "chain of kernels");
  /* the same kernel twice in one realize, and again later (cached program) */
  tg_tensor *y = ints_tensor(TG_SHAPE(24), 7);
  same(tg_add(add_one(y), add_one(y)), tg_muls(tg_adds(y, 1), 2), "two calls");
  same(add_one(y), tg_adds(y, 1), "again");
}

/* out = add_one(x) * 2 + 1: a step for the JIT and a function body */
static int step(void *ctx, tg_tensor *const *in, int nin, tg_tensor **out, int nout) {
  out[0] = tg_adds(tg_muls(add_one(in[0]), 2), 1);
  return out[0] ? 0 : -1;
}

/* a JIT replays the kernel on new inputs; a function body may use one */
TEST(custom_kernel_in_jit_and_functions) {
  tg_jit *j = tg_jit_new(step, NULL);
  tg_function *f = tg_function_new("uses_kernel", step, NULL, 1, 1);
  for (int call = 0; call < 4; call++) {
    tg_scope_begin();
    tg_tensor *x = ints_tensor(TG_SHAPE(3, 10), 20 + (uint32_t)call), *o = NULL, *fo = NULL;
    CHECK_MSG(tg_jit_call(j, &x, 1, &o, 1) == 0, "jit call %d: %s", call, tg_error());
    CHECK_MSG(tg_function_call(f, &x, &fo) == 0, "function call %d: %s", call, tg_error());
    tg_tensor *want = tg_adds(tg_muls(tg_adds(x, 1), 2), 1);
    same(o, want, "jit");
    same(fo, want, "function");
    tg_scope_end();
  }
  tg_jit_free(j);
  tg_function_free(f);
}

/* gradients through tg_backward equal plain matmul's (exact with small ints) */
TEST(custom_kernel_gradient) {
  for (int custom_grad = 0; custom_grad < 2; custom_grad++) {
    tg_scope_begin();
    /* the same values twice, in distinct tensors */
    tg_tensor *a = tg_requires_grad(ints_tensor(TG_SHAPE(4, 8), 8), true), *b = tg_requires_grad(ints_tensor(TG_SHAPE(8, 5), 9), true);
    tg_tensor *w = ints_tensor(TG_SHAPE(4, 5), 10);
    tg_tensor *c = custom_matmul(a, b, custom_grad ? (void *)1 : NULL);
    CHECK_OK(c);
    CHECK_OK(tg_backward(tg_sum(tg_mul(c, w), TG_ALL, false)) == 0);
    tg_tensor *ra = tg_requires_grad(ints_tensor(TG_SHAPE(4, 8), 8), true), *rb = tg_requires_grad(ints_tensor(TG_SHAPE(8, 5), 9), true);
    tg_tensor *rc = tg_matmul(ra, rb);
    CHECK_OK(tg_backward(tg_sum(tg_mul(rc, w), TG_ALL, false)) == 0);
    same(c, rc, "forward");
    same(tg_grad(a), tg_grad(ra), custom_grad ? "da (custom kernel backward)" : "da");
    same(tg_grad(b), tg_grad(rb), custom_grad ? "db (custom kernel backward)" : "db");
    tg_scope_end();
  }
}

/* a kernel without a gradient function gives its inputs none; no crash */
TEST(custom_kernel_without_gradient) {
  tg_tensor *x = tg_requires_grad(ints_tensor(TG_SHAPE(8), 11), true), *other = tg_requires_grad(ints_tensor(TG_SHAPE(8), 12), true);
  tg_tensor *loss = tg_sum(tg_add(add_one(x), other), TG_ALL, false);
  CHECK_OK(tg_backward(loss) == 0);
  CHECK(tg_grad(other) != NULL);
  tg_tensor *gx = tg_grad(x);
  if (gx) CHECK(tg_item(tg_sum(tg_abs(gx), TG_ALL, false)) == 0);
}

/* ---- the seeds' fp8 case (examples/fp8_quantize.h) against numpy/ml_dtypes */

TEST(custom_kernel_fp8_quantize_golden) {
  const char *err = NULL;
  golden_file *g = golden_load("goldens/custom_kernel_fp8.bin", &err);
  if (!g) { test_fail(__FILE__, __LINE__, "%s", err); return; }
  for (int ci = 0; ci < g->ncases; ci++) {
    const golden_case *c = &g->cases[ci];
    tg_scope_begin();
    tg_tensor *x = golden_tensor(&c->in[0]), *y = NULL, *inv = NULL;
    if (!strcmp(c->op, "quantize_fp8")) {
      CHECK_OK(quantize_fp8(x, &y, &inv) == 0);
      golden_check(y, &c->out[0], c, c->label);
      golden_check(inv, &c->out[1], c, c->label);
    } else {
      tg_tensor *xg = tg_requires_grad(x, true), *w = golden_tensor(&c->in[1]);
      CHECK_OK(quantize_fp8(xg, &y, &inv) == 0);
      CHECK_OK(tg_backward(tg_sum(tg_mul(tg_cast(y, TG_F32), w), TG_ALL, false)) == 0);
      golden_check(tg_grad(xg), &c->out[0], c, c->label);
      /* and the plain-ops version of the seeds agrees with the golden too */
      tg_tensor *xp = tg_requires_grad(golden_tensor(&c->in[0]), true), *yp, *ip;
      quantize_fp8_plain(xp, &yp, &ip);
      CHECK_OK(tg_backward(tg_sum(tg_mul(tg_cast(yp, TG_F32), w), TG_ALL, false)) == 0);
      golden_check(tg_grad(xp), &c->out[0], c, c->label);
    }
    tg_scope_end();
  }
  golden_free(g);
}

/* one kernel where the amax runs once before the loops (the CPU); on a
 * device with work groups the amax is a kernel of its own, so no group
 * computes it again */
TEST(custom_kernel_fp8_kernels_per_device) {
  tg_device_info dev[16];
  int nd = tg_devices(dev, 16, NULL), max_local = -1;
  for (int i = 0; i < nd && i < 16; i++) if (!strcmp(dev[i].name, tg_default_device())) max_local = dev[i].max_local;
  CHECK(max_local >= 0);
  tg_tensor *x = ints_tensor(TG_SHAPE(4096), 14), *y = NULL, *inv = NULL;
  CHECK_OK(tg_realize(x) == 0);
  CHECK_OK(quantize_fp8(x, &y, &inv) == 0);
  tg_tensor *both[2] = { y, inv };
  tg_schedule_entry e[8];
  int n = tg_schedule_list(both, 2, e, 8);
  CHECK_EQ_INT(n, max_local > 0 ? 2 : 1);
  if (n == 2) CHECK(!strcmp(e[0].name, "quantize_fp8_amax_reduce") && !strcmp(e[1].name, "quantize_fp8_amax"));
  /* and the values on this device */
  tg_tensor *yp, *ip;
  quantize_fp8_plain(x, &yp, &ip);
  same(y, yp, "y");
  same(inv, ip, "inv_scale");
}

/* ---- errors name the kernel, never crash */

enum { E_STORE_OOB, E_LOAD_OOB, E_DTYPE, E_MISSING, E_COVER, E_REDUCE_LEAK, E_LOOP_REDUCED, E_READ_OUTPUT, E_WRITE_INPUT,
       E_OPERANDS, E_WHERE, E_NESTED, E_AXES, E_FLOAT_INDEX, E_BAD_INPUT, E_FAILS, E_COUNT };

static int bad_build(void *ctx, tg_kb *kb) {
  int kind = *(const int *)ctx;
  tg_kv *x = tg_k_input(kb, 0), *o = tg_k_output(kb, 0), *one = tg_k_int(kb, 1);   /* x, o: float32 (16) */
  tg_kv *i = tg_k_range(kb, 16), *r = tg_k_reduce_range(kb, 16);
  tg_kv *xi = tg_k_load(kb, tg_k_index(kb, x, &i, 1)), *oi = tg_k_index(kb, o, &i, 1);
  switch (kind) {
  case E_STORE_OOB: { tg_kv *j = tg_k_range(kb, 17); return tg_k_store(kb, tg_k_index(kb, o, &j, 1), xi); }
  case E_LOAD_OOB: { tg_kv *j = tg_k_add(kb, i, one); return tg_k_store(kb, oi, tg_k_load(kb, tg_k_index(kb, x, &j, 1))); }
  case E_DTYPE: return tg_k_store(kb, oi, tg_k_cast(kb, xi, TG_F16));
  case E_MISSING: return tg_k_store(kb, oi, xi);   /* output 1 never stored */
  case E_COVER: { tg_kv *j = tg_k_range(kb, 8); return tg_k_store(kb, tg_k_index(kb, o, &j, 1), tg_k_const(kb, TG_F32, 1)); }
  case E_REDUCE_LEAK: return tg_k_store(kb, oi, tg_k_load(kb, tg_k_index(kb, x, &r, 1)));
  case E_LOOP_REDUCED: return tg_k_store(kb, oi, tg_k_reduce(kb, TG_K_SUM, xi, &i, 1));
  case E_READ_OUTPUT: return tg_k_store(kb, oi, tg_k_load(kb, oi));
  case E_WRITE_INPUT: return tg_k_store(kb, tg_k_index(kb, x, &i, 1), xi);
  case E_OPERANDS: return tg_k_store(kb, oi, tg_k_add(kb, xi, one));
  case E_WHERE: return tg_k_store(kb, oi, tg_k_where(kb, xi, xi, xi));
  case E_NESTED: {
    tg_kv *xr = tg_k_load(kb, tg_k_index(kb, x, &r, 1));
    return tg_k_store(kb, oi, tg_k_reduce(kb, TG_K_SUM, tg_k_add(kb, tg_k_reduce(kb, TG_K_SUM, xr, &r, 1), xr), &r, 1));
  }
  case E_AXES: { tg_kv *ix[2] = { i, i }; return tg_k_store(kb, tg_k_index(kb, o, ix, 2), xi); }
  case E_FLOAT_INDEX: return tg_k_store(kb, tg_k_index(kb, o, &xi, 1), xi);
  case E_BAD_INPUT: return tg_k_store(kb, oi, tg_k_load(kb, tg_k_index(kb, tg_k_input(kb, 5), &i, 1)));
  default: tg_seterr("my own reason"); return -1;
  }
}

TEST(custom_kernel_errors) {
  static const char *const want[E_COUNT] = {
    "output 0, axis 0: the index runs over [0, 16], outside [0, 15]",
    "input 0, axis 0: the index runs over [1, 16]",
    "output 0 is float32, the value float16",
    "output 1 is never stored",
    "the stores to output 0 run 8 times, it has 16 elements",
    "uses reduce loop 1 outside a tg_k_reduce",
    "is a loop (tg_k_range), not a reduce loop",
    "output 0 is write-only",
    "input 0 is read-only",
    "operands are float32 and int64",
    "the condition is float32, not bool",
    "is reduced already inside the value",
    "output 0 has 1 axes, 2 indices given",
    "index 0 is float32 (indices are integers)",
    "5 is not one of its 1 inputs",
    "the build function failed: my own reason",
  };
  tg_tensor *x = ints_tensor(TG_SHAPE(16), 13), *o[2];
  tg_kernel_out spec[2] = { { TG_SHAPE(16), TG_F32 }, { TG_SHAPE(4), TG_F32 } };
  for (int k = 0; k < E_COUNT; k++) {
    tg_clear_error();
    int rc = tg_custom_kernel("bad kernel", spec, k == E_MISSING ? 2 : 1, &x, 1, bad_build, NULL, &k, o);
    CHECK_MSG(rc < 0, "case %d: expected an error", k);
    CHECK_MSG(strstr(tg_error(), "tg_custom_kernel bad_kernel: ") && strstr(tg_error(), want[k]), "case %d: \"%s\" lacks \"%s\"", k, tg_error(), want[k]);
    CHECK(o[0] == NULL);
  }
  /* bad arguments */
  tg_tensor *in2[2] = { x, NULL };
  CHECK_FAILS(tg_custom_kernel("k", spec, 1, &x, 1, NULL, NULL, NULL, o), "tg_custom_kernel k: build is NULL");
  CHECK_FAILS(tg_custom_kernel("k", spec, 0, &x, 1, add_one_build, NULL, NULL, o), "0 outputs");
  CHECK_FAILS(tg_custom_kernel("k", spec, 1, in2, 2, add_one_build, NULL, NULL, o), "input 1 is NULL");
  CHECK_FAILS(tg_custom_kernel("k", spec, 1, &x, -1, add_one_build, NULL, NULL, o), "-1 inputs");
  tg_kernel_out bad[3] = { { TG_SHAPE(16), (tg_dtype)99 }, { TG_SHAPE(0, 3), TG_F32 }, { { .ndim = 17 }, TG_F32 } };
  CHECK_FAILS(tg_custom_kernel("k", &bad[0], 1, &x, 1, add_one_build, NULL, NULL, o), "99 is not a dtype");
  CHECK_FAILS(tg_custom_kernel("k", &bad[1], 1, &x, 1, add_one_build, NULL, NULL, o), "shape (0,3)");
  CHECK_FAILS(tg_custom_kernel("k", &bad[2], 1, &x, 1, add_one_build, NULL, NULL, o), "17 axes");
  tg_tensor *on_null[2] = { x, tg_to(x, "NULL") };
  CHECK_FAILS(tg_custom_kernel("k", spec, 1, on_null, 2, add_one_build, NULL, NULL, o), "input 1 is on NULL, input 0 on");
  /* builder calls outside a build, and given NULL */
  CHECK(tg_k_add(NULL, NULL, NULL) == NULL && strstr(tg_error(), "kb is NULL"));
  CHECK(tg_k_store(NULL, NULL, NULL) < 0);
  CHECK(tg_k_shape(NULL, NULL).ndim == -1);
}

/* outputs given as tensors the kernel fills: empty ones, and a row of a
 * realized cache (the other rows keep their values) */
TEST(custom_kernel_into_targets) {
  tg_tensor *x = ints_tensor(TG_SHAPE(12), 1), *y = ints_tensor(TG_SHAPE(12), 2), *in[2] = { x, y };
  tg_tensor *t[2] = { tg_empty(TG_SHAPE(12), TG_F32), tg_empty(TG_SHAPE(12), TG_I32) };
  CHECK_OK(tg_custom_kernel_into("add_mul", t, 2, in, 2, add_mul_build, NULL, NULL) == 0);
  same(t[0], tg_add(x, y), "into empty: x + y");
  same(t[1], tg_cast(tg_mul(x, y), TG_I32), "into empty: int(x * y)");
  tg_tensor *cache = tg_contiguous(tg_zeros(TG_SHAPE(3, 12), TG_F32));
  CHECK(tg_realize(cache) == 0);
  tg_tensor *row = tg_reshape(tg_shrink(cache, (int64_t[]){ 1, 0 }, (int64_t[]){ 2, 12 }), TG_SHAPE(12));
  CHECK_OK(tg_custom_kernel_into("add_one", &row, 1, &x, 1, add_one_build, NULL, NULL) == 0);
  float xv[12], cv[36];
  CHECK(tg_data(x, xv, sizeof xv) == 0);
  CHECK(tg_data(cache, cv, sizeof cv) == 0);
  for (int r = 0; r < 3; r++)
    for (int i = 0; i < 12; i++) CHECK_NEAR(cv[r * 12 + i], r == 1 ? xv[i] + 1 : 0, 0);
  /* misuse: no target changes */
  tg_tensor *lazy = tg_add(x, x), *none[1] = { NULL }, *twice[2] = { t[0], t[0] };
  CHECK_FAILS(tg_custom_kernel_into("add_one", &lazy, 1, &x, 1, add_one_build, NULL, NULL), "add_one", "target 0 is not memory");
  CHECK_FAILS(tg_custom_kernel_into("add_one", none, 1, &x, 1, add_one_build, NULL, NULL), "target 0 is NULL");
  CHECK_FAILS(tg_custom_kernel_into("add_mul", twice, 2, in, 2, add_mul_build, NULL, NULL), "targets 0 and 1 are one tensor");
  CHECK_FAILS(tg_custom_kernel_into("add_one", t, 0, &x, 1, add_one_build, NULL, NULL), "0 outputs");
  CHECK_FAILS(tg_custom_kernel_into("add_one", NULL, 1, &x, 1, add_one_build, NULL, NULL), "targets is NULL");
  tg_tensor *small = tg_empty(TG_SHAPE(5), TG_F32);
  CHECK_FAILS(tg_custom_kernel_into("add_one", &small, 1, &x, 1, add_one_build, NULL, NULL), "add_one");
  same(t[0], tg_add(x, y), "a failed call left its target");
}

/* kernels launched while t is realized */
static int64_t kernels_to_realize(tg_tensor *t) {
  int64_t k0 = tg_get_counters().kernels_run;
  CHECK(tg_realize(t) == 0);
  return tg_get_counters().kernels_run - k0;
}

/* add_one into a target: one kernel, no copy after it, where the kernel can
 * write the target's memory (a whole buffer anywhere; a contiguous range
 * of one where buffers are host memory); the copy stays where it must (a
 * strided target, a kernel reading the memory it would write). Values
 * against plain ops. */
TEST(custom_kernel_into_no_copy) {
  bool host = device_get(tg_default_device())->host_memory;
  tg_tensor *x = ints_tensor(TG_SHAPE(12), 5);
  CHECK(tg_realize(x) == 0);
  /* a whole buffer */
  tg_tensor *e = tg_empty(TG_SHAPE(12), TG_F32);
  CHECK_OK(tg_custom_kernel_into("add_one", &e, 1, &x, 1, add_one_build, NULL, NULL) == 0);
  CHECK_EQ_INT(kernels_to_realize(e), 1);
  same(e, tg_adds(x, 1), "into a whole buffer");
  /* a row of a cache, twice (the second over the first's result) */
  tg_tensor *cache = tg_contiguous(tg_zeros(TG_SHAPE(3, 12), TG_F32));
  CHECK(tg_realize(cache) == 0);
  tg_tensor *row = tg_reshape(tg_shrink(cache, (int64_t[]){ 1, 0 }, (int64_t[]){ 2, 12 }), TG_SHAPE(12));
  CHECK_OK(tg_custom_kernel_into("add_one", &row, 1, &x, 1, add_one_build, NULL, NULL) == 0);
  CHECK_EQ_INT(kernels_to_realize(cache), host ? 1 : 2);
  tg_tensor *z = tg_zeros(TG_SHAPE(1, 12), TG_F32), *x1 = tg_reshape(tg_adds(x, 1), TG_SHAPE(1, 12));
  same(cache, tg_cat((tg_tensor *[]){ z, x1, z }, 3, 0), "into a row");
  tg_tensor *row2 = tg_reshape(tg_shrink(cache, (int64_t[]){ 2, 0 }, (int64_t[]){ 3, 12 }), TG_SHAPE(12));
  CHECK_OK(tg_custom_kernel_into("add_one", &row2, 1, &e, 1, add_one_build, NULL, NULL) == 0);
  CHECK_EQ_INT(kernels_to_realize(row2), host ? 1 : 2);
  same(cache, tg_cat((tg_tensor *[]){ z, x1, tg_reshape(tg_adds(x, 2), TG_SHAPE(1, 12)) }, 3, 0), "into a second row");
  /* reading the memory it writes (e from e): the copy stays */
  CHECK_OK(tg_custom_kernel_into("add_one", &e, 1, &e, 1, add_one_build, NULL, NULL) == 0);
  CHECK_EQ_INT(kernels_to_realize(e), 2);
  same(e, tg_adds(x, 2), "into its own input");
  /* a column: strided, the copy stays */
  tg_tensor *m = tg_contiguous(tg_zeros(TG_SHAPE(12, 2), TG_F32));
  CHECK(tg_realize(m) == 0);
  tg_tensor *col = tg_reshape(tg_shrink(m, (int64_t[]){ 0, 1 }, (int64_t[]){ 12, 2 }), TG_SHAPE(12));
  CHECK_OK(tg_custom_kernel_into("add_one", &col, 1, &x, 1, add_one_build, NULL, NULL) == 0);
  CHECK_EQ_INT(kernels_to_realize(m), 2);
  same(m, tg_stack((tg_tensor *[]){ tg_zeros(TG_SHAPE(12), TG_F32), tg_adds(x, 1) }, 2, 1), "into a column");
}

/* a JIT step writing add_one(x) into a whole buffer and a row of a cache
 * (ctx: those two tensors), out = 2 * the buffer */
static int into_step(void *ctx, tg_tensor *const *in, int nin, tg_tensor **out, int nout) {
  tg_tensor **t = ctx;
  if (tg_custom_kernel_into("add_one", &t[0], 1, in, 1, add_one_build, NULL, NULL) < 0) return -1;
  tg_tensor *row = tg_reshape(tg_shrink(t[1], (int64_t[]){ 1, 0 }, (int64_t[]){ 2, 12 }), TG_SHAPE(12));
  if (tg_custom_kernel_into("add_one", &row, 1, in, 1, add_one_build, NULL, NULL) < 0) return -1;
  out[0] = tg_muls(t[0], 2);
  return out[0] ? 0 : -1;
}

/* the same under the JIT: captured once, replayed with new inputs */
TEST(custom_kernel_into_in_jit) {
  tg_tensor *t[2] = { tg_contiguous(tg_zeros(TG_SHAPE(12), TG_F32)), tg_contiguous(tg_zeros(TG_SHAPE(3, 12), TG_F32)) };
  CHECK(tg_realize(t[0]) == 0 && tg_realize(t[1]) == 0);
  tg_jit *j = tg_jit_new(into_step, t);
  for (int call = 0; call < 4; call++) {
    tg_scope_begin();
    tg_tensor *x = ints_tensor(TG_SHAPE(12), 40 + (uint32_t)call), *o = NULL;
    CHECK(tg_realize(x) == 0);
    CHECK_MSG(tg_jit_call(j, &x, 1, &o, 1) == 0, "jit call %d: %s", call, tg_error());
    tg_tensor *x1 = tg_adds(x, 1);
    same(o, tg_muls(x1, 2), "jit output");
    same(t[0], x1, "jit: into a whole buffer");
    tg_tensor *z = tg_zeros(TG_SHAPE(1, 12), TG_F32);
    same(t[1], tg_cat((tg_tensor *[]){ z, tg_reshape(x1, TG_SHAPE(1, 12)), z }, 3, 0), "jit: into a row");
    tg_scope_end();
  }
  tg_jit_free(j);
}

/* add_one with the kernel's own opts (ctx: the spec) */
static int add_one_opts_build(void *ctx, tg_kb *kb) {
  if (tg_k_opts(kb, ctx) < 0) return -1;
  return add_one_build(NULL, kb);
}

TEST(custom_kernel_own_opts) {
  tg_tensor *x = ints_tensor(TG_SHAPE(16), 3), *y = NULL;
  tg_kernel_out o = { TG_SHAPE(16), TG_F32 };
  CHECK_OK(tg_custom_kernel("add_one_up4", &o, 1, &x, 1, add_one_opts_build, NULL, "UPCAST:0:4", &y) == 0);
  same(y, tg_adds(x, 1), "UPCAST:0:4");
  /* the opts are the kernel's: one that does not fit fails its realize */
  tg_tensor *z = NULL;
  CHECK_OK(tg_custom_kernel("add_one_up5", &o, 1, &x, 1, add_one_opts_build, NULL, "UPCAST:0:5", &z) == 0);
  CHECK_FAILS(tg_realize(z), "UPCAST");
  CHECK_FAILS(tg_custom_kernel("add_one_bad", &o, 1, &x, 1, add_one_opts_build, NULL, "BOGUS:1", &z), "add_one_bad", "tg_k_opts");
  CHECK_FAILS(tg_custom_kernel("add_one_null", &o, 1, &x, 1, add_one_opts_build, NULL, NULL, &z), "add_one_null", "opts is NULL");
  CHECK_FAILS(tg_k_opts(NULL, "UPCAST:0:4"), "kb is NULL");
}

/* over the valid rows of k (axis 0 symbolic): colsum[d] = sum_{i<t} k[i][d],
 * twice[i][d] = 2 k[i][d] for i < t */
static int sym_rows_build(void *ctx, tg_kb *kb) {
  tg_kv *k = tg_k_input(kb, 0);
  tg_kv *t = tg_k_dim(kb, k, 0);
  int64_t d = tg_k_shape(kb, k).d[1];
  if (ctx) t = tg_k_add(kb, t, tg_k_int(kb, 0));   /* ctx: a computed end, refused */
  tg_kv *j = tg_k_range(kb, d), *r = tg_k_reduce_range_to(kb, t);
  tg_kv *sum = tg_k_reduce(kb, TG_K_SUM, ld2(kb, k, r, j), &r, 1);
  tg_k_store(kb, tg_k_index(kb, tg_k_output(kb, 0), &j, 1), sum);
  tg_kv *i = tg_k_range_to(kb, t);
  return tg_k_store(kb, at2(kb, tg_k_output(kb, 1), i, j), tg_k_mul(kb, ld2(kb, k, i, j), tg_k_const(kb, TG_F32, 2)));
}

TEST(custom_kernel_symbolic_input) {
  enum { TM = 9, DD = 5 };
  CHECK_OK(tg_variable("ck_t", 1, TM));
  tg_tensor *kfull = ints_tensor(TG_SHAPE(TM, DD), 4);
  float kv[TM * DD];
  CHECK(tg_data(kfull, kv, sizeof kv) == 0);
  tg_kernel_out outs[2] = { { TG_SHAPE(DD), TG_F32 }, { TG_SHAPE(TM, DD), TG_F32 } };
  tg_counters c0 = { 0 };
  const int ts[3] = { 4, TM, 1 };
  for (int r = 0; r < 3; r++) {
    CHECK(tg_bind("ck_t", ts[r]) == 0);
    if (r == 1) c0 = tg_get_counters();
    tg_tensor *k = tg_shrink_var(kfull, 0, "ck_t"), *o[2] = { 0 };
    CHECK_OK(tg_custom_kernel("sym_rows", outs, 2, &k, 1, sym_rows_build, NULL, NULL, o) == 0);
    float cs[DD], tw[TM * DD];
    CHECK(tg_data(o[0], cs, sizeof cs) == 0);
    CHECK(tg_data(o[1], tw, sizeof tw) == 0);
    for (int d = 0; d < DD; d++) {
      float want = 0;
      for (int i = 0; i < ts[r]; i++) want += kv[i * DD + d];
      CHECK_NEAR(cs[d], want, 0);
    }
    for (int i = 0; i < ts[r] * DD; i++) CHECK_NEAR(tw[i], 2 * kv[i], 0);
  }
  tg_counters c1 = tg_get_counters();   /* one program for every value */
  CHECK_EQ_INT(c1.kernels_compiled + c1.kernels_cached, c0.kernels_compiled + c0.kernels_cached);
  tg_tensor *k = tg_shrink_var(kfull, 0, "ck_t"), *o[2];
  CHECK_FAILS(tg_custom_kernel("sym_rows", outs, 2, &k, 1, sym_rows_build, NULL, "computed", o), "sym_rows", "not to a computed value");
}
