/* test_controls.c: the seeds' smaller controls, against the goldens of
 * tests/gen/gen_controls.py (numpy, torch, tinygrad's own name table and
 * resolve_pool_pads, a Python threefry2x32): accumulate dtypes on
 * reductions and matmul, SUM_DTYPE and DEFAULT_FLOAT, dtypes by name,
 * empty_like, asymmetric pool and conv padding, THREEFRY constant folding;
 * and the bad inputs of each. */
#include <stdlib.h>
#include "test.h"
#include "golden_io.h"
#include "codegen/codegen.h"
#include "engine/realize.h"
#include "renderer/renderer.h"
#include "tensor/tensor.h"
#include "uop/symbolic.h"

static int one(tg_tensor *r, tg_tensor **out) { out[0] = r; return r ? 1 : -1; }
static tg_axes axes_of(const golden_case *c) {
  int64_t v[TG_MAX_DIMS];
  int n = golden_ints(c, "axes", v, TG_MAX_DIMS);
  if (n <= 0) return TG_ALL;
  tg_axes a = { n, { 0 } };
  for (int i = 0; i < n; i++) a.a[i] = (int)v[i];
  return a;
}
static tg_dtype dtype_param(const golden_case *c, const char *key) { return (tg_dtype)golden_int(c, key, TG_F32); }

/* ---------------------------------------------------------------- ops */

static int op_sum_dtype(const golden_case *c, tg_tensor **in, int nin, tg_tensor **out) {
  return one(tg_sum_dtype(in[0], axes_of(c), golden_flag(c, "keepdim"), dtype_param(c, "dtype")), out);
}
static int op_prod_dtype(const golden_case *c, tg_tensor **in, int nin, tg_tensor **out) {
  return one(tg_prod_dtype(in[0], axes_of(c), golden_flag(c, "keepdim"), dtype_param(c, "dtype")), out);
}
static int op_mean_dtype(const golden_case *c, tg_tensor **in, int nin, tg_tensor **out) {
  return one(tg_mean_dtype(in[0], axes_of(c), golden_flag(c, "keepdim"), dtype_param(c, "dtype")), out);
}
static int op_matmul_dtype(const golden_case *c, tg_tensor **in, int nin, tg_tensor **out) {
  /* 1-D operands go through tg_dot_dtype, the others through tg_matmul_dtype */
  tg_dtype dt = dtype_param(c, "dtype");
  return one(tg_ndim(in[1]) == 1 ? tg_dot_dtype(in[0], in[1], dt) : tg_matmul_dtype(in[0], in[1], dt), out);
}
/* tg_sum under SUM_DTYPE = acc, realized before the setting goes back */
static int op_sum_acc_float(const golden_case *c, tg_tensor **in, int nin, tg_tensor **out) {
  tg_dtype prev = tg_sum_acc_float();
  CHECK(tg_set_sum_acc_float(dtype_param(c, "acc")) == 0);
  tg_tensor *r = tg_sum(in[0], TG_AXES(1), false);
  if (r && tg_realize(r) < 0) r = NULL;
  tg_set_sum_acc_float(prev);
  return one(r, out);
}
/* int ops under DEFAULT_FLOAT = dtype */
static int op_default_float(const golden_case *c, tg_tensor **in, int nin, tg_tensor **out) {
  tg_dtype prev = tg_default_float();
  CHECK(tg_set_default_float(dtype_param(c, "dtype")) == 0);
  int64_t fn = golden_int(c, "fn", 0);
  tg_tensor *r = fn == 0 ? tg_div(in[0], in[1]) : fn == 1 ? tg_sqrt(in[0]) : tg_adds(in[0], 0.5);
  if (r && tg_realize(r) < 0) r = NULL;
  tg_set_default_float(prev);
  return one(r, out);
}

static bool pool_opts(const golden_case *c, tg_pool_opts *o) {
  memset(o, 0, sizeof *o);
  golden_ints32(c, "kernel", o->kernel, 3);
  golden_ints32(c, "stride", o->stride, 3);
  golden_ints32(c, "dilation", o->dilation, 3);
  o->ceil_mode = golden_flag(c, "ceil_mode");
  o->exclude_pad = golden_flag(c, "exclude_pad");
  int tpad[6];
  int n = golden_ints32(c, "tpad", tpad, 6);
  return tg_resolve_pool_pads(tpad, n, 2, o->pads) == 0;
}
static int op_avg_pool2d(const golden_case *c, tg_tensor **in, int nin, tg_tensor **out) {
  tg_pool_opts o;
  if (!pool_opts(c, &o)) return -1;
  return one(tg_avg_pool2d(in[0], &o), out);
}
static int op_max_pool2d(const golden_case *c, tg_tensor **in, int nin, tg_tensor **out) {
  tg_pool_opts o;
  if (!pool_opts(c, &o)) return -1;
  bool want = golden_flag(c, "indices");
  out[0] = tg_max_pool2d(in[0], &o, want ? &out[1] : NULL);
  if (!out[0] || (want && !out[1])) return -1;
  return want ? 2 : 1;
}
static int op_conv2d(const golden_case *c, tg_tensor **in, int nin, tg_tensor **out) {
  tg_conv_opts o;
  memset(&o, 0, sizeof o);
  golden_ints32(c, "stride", o.stride, 3);
  int tpad[6];
  int n = golden_ints32(c, "tpad", tpad, 6);
  if (tg_resolve_pool_pads(tpad, n, 2, o.padding) < 0) return -1;
  return one(tg_conv2d(in[0], in[1], NULL, &o), out);
}
static int op_conv_transpose2d(const golden_case *c, tg_tensor **in, int nin, tg_tensor **out) {
  tg_conv_transpose_opts o;
  memset(&o, 0, sizeof o);
  golden_ints32(c, "stride", o.stride, 3);
  golden_ints32(c, "output_padding", o.output_padding, 3);
  golden_ints32(c, "dilation", o.dilation, 3);
  int tpad[6];
  int n = golden_ints32(c, "tpad", tpad, 6);
  if (tg_resolve_pool_pads(tpad, n, 2, o.pads) < 0) return -1;
  return one(tg_conv_transpose2d(in[0], in[1], NULL, &o), out);
}
static int op_resolve(const golden_case *c, tg_tensor **in, int nin, tg_tensor **out) {
  int tpad[6], pairs[6];
  int n = golden_ints32(c, "tpad", tpad, 6), nd = (int)golden_int(c, "ndims", 0);
  if (tg_resolve_pool_pads(tpad, n, nd, pairs) < 0) return -1;
  int32_t v[6];
  for (int i = 0; i < 2 * nd; i++) v[i] = pairs[i];
  return one(tg_from_data(v, TG_SHAPE(2 * nd), TG_I32), out);
}
static int op_name(const golden_case *c, tg_tensor **in, int nin, tg_tensor **out) {
  int64_t chars[64];
  int n = golden_ints(c, "name", chars, 63);
  char name[64];
  for (int i = 0; i < n; i++) name[i] = (char)chars[i];
  name[n < 0 ? 0 : n] = 0;
  int32_t dt = tg_dtype_from_name(name);
  if (dt < 0) return -1;
  return one(tg_from_data(&dt, TG_SHAPE(1), TG_I32), out);
}
/* The uint64 constant v as a tensor (exact: tg_full takes a double). */
static tg_tensor *u64_const(uint64_t v) {
  uop_pool_push();
  tg_tensor *t = tensor_wrap(uop_const_int(DT_U64, (int64_t)v), tg_default_device());
  uop_pool_pop();
  return t;
}
/* threefry three ways: of the input buffers, of per-element constants
 * (folded), and rewritten on the UOps; all must give the golden */
static int op_threefry(const golden_case *c, tg_tensor **in, int nin, tg_tensor **out) {
  int64_t n = c->in[0].numel;
  const uint64_t *x = c->in[0].data, *k = c->in[1].data;
  uint64_t *folded = malloc((size_t)n * 8);
  bool ok = true;
  for (int64_t i = 0; ok && i < n; i++) {
    tg_tensor *r = tg_threefry(u64_const(x[i]), u64_const(k[i]));
    ok = r && tg_data(r, &folded[i], 8) == 0;
    uop *f = uop_simplify(uop_alu(OP_THREEFRY, uop_const_int(DT_U64, (int64_t)x[i]), uop_const_int(DT_U64, (int64_t)k[i])));
    CHECK_MSG(f->op == OP_CONST && (uint64_t)f->arg.i == ((const uint64_t *)c->out[0].data)[i],
              "%s: element %lld: the symbolic rules do not fold THREEFRY to the golden", c->label, (long long)i);
  }
  if (ok) {
    tg_tensor *f = tg_from_data(folded, TG_SHAPE(n), TG_U64);
    golden_check(f, &c->out[0], c, "threefry of constants");
  }
  free(folded);
  return ok ? one(tg_threefry(in[0], in[1]), out) : -1;
}

typedef int (*op_fn)(const golden_case *c, tg_tensor **in, int nin, tg_tensor **out);
typedef struct { const char *name; op_fn fn; } dispatch_entry;
#define E(n) { #n, op_##n }
static const dispatch_entry dispatch[] = {
  E(sum_dtype), E(prod_dtype), E(mean_dtype), E(matmul_dtype), E(sum_acc_float), E(default_float),
  E(avg_pool2d), E(max_pool2d), E(conv2d), E(conv_transpose2d), E(resolve), E(name), E(threefry),
};
#define NDISPATCH ((int)(sizeof dispatch / sizeof dispatch[0]))

static const char *const groups[] = { "acc", "pool", "resolve", "names", "threefry" };
static const golden_set goldens = { "goldens/controls_%s.bin", groups, (int)(sizeof groups / sizeof groups[0]) };

static bool run_case(const golden_case *c) {
  const dispatch_entry *d = NULL;
  for (int i = 0; i < NDISPATCH; i++) if (!strcmp(dispatch[i].name, c->op)) d = &dispatch[i];
  if (!d) { test_fail(__FILE__, __LINE__, "%s: op '%s' has no dispatch entry in test_controls.c", c->label, c->op); return false; }
  int before = test_failures;
  tg_scope_begin();
  tg_clear_error();
  tg_tensor *in[4] = { 0 }, *out[2] = { 0 };
  bool ok = c->nin <= 4 && c->nout <= 2 && golden_inputs(c, in);
  int n = ok ? d->fn(c, in, c->nin, out) : -1;
  if (ok && n < 0) { test_fail(__FILE__, __LINE__, "%s: %s failed: %s", c->label, c->op, tg_error()); ok = false; }
  if (ok && n != c->nout) { test_fail(__FILE__, __LINE__, "%s: %d outputs, expected %d", c->label, n, c->nout); ok = false; }
  if (ok) ok = golden_check_results(c, out, n, in, NULL, 0);
  tg_scope_end();
  return ok && test_failures == before;
}

TEST(controls_golden_acc) { golden_run_group(&goldens, "acc", run_case, NULL, false, NULL); }
TEST(controls_golden_pool) { golden_run_group(&goldens, "pool", run_case, NULL, false, NULL); }
TEST(controls_golden_resolve) { golden_run_group(&goldens, "resolve", run_case, NULL, false, NULL); }
TEST(controls_golden_names) { golden_run_group(&goldens, "names", run_case, NULL, false, NULL); }
TEST(controls_golden_threefry) { golden_run_group(&goldens, "threefry", run_case, NULL, false, NULL); }
TEST(controls_dispatch_covers_goldens) {
  int total = golden_check_dispatch(&goldens, dispatch, sizeof dispatch[0], NDISPATCH, NULL, NULL);
  printf("  %d golden cases, %d dispatch entries\n", total, NDISPATCH);
}

/* ---------------------------------------------------------------- folding in kernels */

typedef struct { char *src; int kernels; } rendered;
static void render_observed(uop *ast, const char *name, void *ctx) {
  rendered *r = ctx;
  r->kernels++;
  kernel_program kp;
  memset(&kp, 0, sizeof kp);
  if (codegen_program(ast, name, &renderer_c, NULL, 0, true, &kp) == 0) {
    size_t a = r->src ? strlen(r->src) : 0, b = strlen(kp.src);
    r->src = realloc(r->src, a + b + 1);
    memcpy(r->src + a, kp.src, b + 1);
  }
  free(kp.src);
}
/* the C source of the kernels that realizing t runs */
static rendered kernels_of(tg_tensor *t) {
  rendered r = { 0 };
  engine_set_kernel_observer(render_observed, &r);
  CHECK(tg_realize(t) == 0);
  engine_set_kernel_observer(NULL, NULL);
  return r;
}

TEST(controls_threefry_of_constants_folds_in_the_kernel) {
  tg_scope_begin();
  /* tg_full constants (a kernel writes the folded value) against buffers */
  tg_tensor *c = tg_threefry(tg_full(TG_SHAPE(4), 3, TG_U64), tg_full(TG_SHAPE(4), 5, TG_U64));
  uint64_t x[4] = { 3, 3, 3, 3 }, k[4] = { 5, 5, 5, 5 };
  tg_tensor *b = tg_threefry(tg_from_data(x, TG_SHAPE(4), TG_U64), tg_from_data(k, TG_SHAPE(4), TG_U64));
  rendered rc = kernels_of(c), rb = kernels_of(b);
  CHECK_MSG(rc.kernels > 0, "the constant case should still run a kernel (it writes the folded values)");
  CHECK_MSG(!rc.src || !strstr(rc.src, "tg_threefry("), "constant threefry not folded:\n%s", rc.src);
  CHECK_MSG(rb.kernels > 0 && rb.src && strstr(rb.src, "tg_threefry("), "the buffer case should call tg_threefry");
  uint64_t vc[4], vb[4];
  CHECK(tg_data(c, vc, sizeof vc) == 0 && tg_data(b, vb, sizeof vb) == 0);
  CHECK(memcmp(vc, vb, sizeof vc) == 0);
  free(rc.src); free(rb.src);
  tg_scope_end();
}

/* ---------------------------------------------------------------- settings */

/* the dtype of the first REDUCE_AXIS in t's graph (TG_DTYPE_COUNT: none) */
static int reduce_dtype(tg_tensor *t) {
  uop_list l = uop_toposort(t->u);
  int dt = TG_DTYPE_COUNT;
  for (int i = 0; i < l.n && dt == TG_DTYPE_COUNT; i++) if (l.v[i]->op == OP_REDUCE_AXIS) dt = l.v[i]->dtype.scalar;
  free(l.v);
  return dt;
}

TEST(controls_sum_dtype_half_accumulates_in_half) {
  tg_scope_begin();
  tg_tensor *x = tg_ones(TG_SHAPE(8), TG_F16);
  tg_dtype prev = tg_sum_acc_float();
  CHECK_EQ_INT(reduce_dtype(tg_sum(x, TG_ALL, false)), TG_F32);   /* default: float32 */
  CHECK(tg_set_sum_acc_float(TG_F16) == 0);
  tg_tensor *s = tg_sum(x, TG_ALL, false);
  CHECK_EQ_INT(reduce_dtype(s), TG_F16);
  CHECK_EQ_INT(tg_dtype_of(s), TG_F16);
  CHECK(tg_item(s) == 8);
  CHECK_EQ_INT(reduce_dtype(tg_sum(tg_ones(TG_SHAPE(8), TG_I8), TG_ALL, false)), TG_I32);   /* ints keep their rule */
  CHECK(tg_set_sum_acc_float(prev) == 0);
  tg_scope_end();
}

/* where DEFAULT_FLOAT reaches: every op that turns ints into floats, but
 * tg_mean (tinygrad's mean hard-codes float32) */
TEST(controls_default_float_dtypes) {
  tg_dtype prev = tg_default_float();
  CHECK(tg_set_default_float(TG_BF16) == 0);
  CHECK_EQ_INT(tg_default_float(), TG_BF16);
  tg_scope_begin();
  tg_tensor *i = tg_arange(0, 6, 1, TG_I32), *u8 = tg_ones(TG_SHAPE(3), TG_U8), *b = tg_ones(TG_SHAPE(3), TG_BOOL);
  CHECK_EQ_INT(tg_dtype_of(tg_div(i, i)), TG_BF16);
  CHECK_EQ_INT(tg_dtype_of(tg_exp(u8)), TG_BF16);
  CHECK_EQ_INT(tg_dtype_of(tg_sigmoid(b)), TG_BF16);
  CHECK_EQ_INT(tg_dtype_of(tg_muls(i, 0.25)), TG_BF16);
  CHECK_EQ_INT(tg_dtype_of(tg_softmax(i, 0)), TG_BF16);
  CHECK_EQ_INT(tg_dtype_of(tg_softmin(i, 0)), TG_BF16);
  CHECK_EQ_INT(tg_dtype_of(tg_var(i, TG_ALL, false, 1)), TG_BF16);
  CHECK_EQ_INT(tg_dtype_of(tg_mean(i, TG_ALL, false)), TG_F32);
  CHECK_EQ_INT(tg_dtype_of(tg_div(tg_ones(TG_SHAPE(2), TG_F64), tg_ones(TG_SHAPE(2), TG_F64))), TG_F64);   /* floats stay */
  CHECK_EQ_INT(tg_dtype_of(tg_muls(i, 2)), TG_I32);   /* integral scalars keep the int */
  float v[6];
  CHECK(tg_data(tg_cast(tg_softmax(i, 0), TG_F32), v, sizeof v) == 0);
  double s = 0;
  for (int k = 0; k < 6; k++) s += v[k];
  CHECK_NEAR(s, 1.0, 2e-2);   /* bfloat16 */
  tg_scope_end();
  CHECK(tg_set_default_float(prev) == 0);
}

TEST(controls_settings_read_the_environment) {
  const char *df = getenv("DEFAULT_FLOAT"), *sd = getenv("SUM_DTYPE");
  setenv("DEFAULT_FLOAT", "half", 1);
  setenv("SUM_DTYPE", "float64", 1);
  dtype_settings_reload();
  CHECK_EQ_INT(tg_default_float(), TG_F16);
  CHECK_EQ_INT(tg_sum_acc_float(), TG_F64);
  tg_scope_begin();
  CHECK_EQ_INT(tg_dtype_of(tg_sqrt(tg_ones(TG_SHAPE(2), TG_I32))), TG_F16);
  CHECK_EQ_INT(tg_dtype_of(tg_sum(tg_ones(TG_SHAPE(2), TG_F32), TG_ALL, false)), TG_F64);
  tg_scope_end();
  setenv("DEFAULT_FLOAT", "int8", 1);     /* not a float: warned, float32 */
  setenv("SUM_DTYPE", "float17", 1);      /* unknown: the same */
  dtype_settings_reload();
  CHECK_EQ_INT(tg_default_float(), TG_F32);
  CHECK_EQ_INT(tg_sum_acc_float(), TG_F32);
  if (df) setenv("DEFAULT_FLOAT", df, 1); else unsetenv("DEFAULT_FLOAT");
  if (sd) setenv("SUM_DTYPE", sd, 1); else unsetenv("SUM_DTYPE");
  dtype_settings_reload();
}

TEST(controls_empty_like) {
  tg_scope_begin();
  tg_tensor *t = tg_transpose(tg_zeros(TG_SHAPE(3, 5), TG_BF16), 0, 1);
  tg_tensor *e = tg_empty_like(t);
  CHECK_OK(e);
  tg_shape s = tg_shape_of(e);
  CHECK(s.ndim == 2 && s.d[0] == 5 && s.d[1] == 3);
  CHECK_EQ_INT(tg_dtype_of(e), TG_BF16);
  CHECK(!strcmp(tg_device_of(e), tg_device_of(t)));
  CHECK(tg_realize(e) == 0);
  /* writable, and its own memory: assigning leaves t alone */
  CHECK_OK(tg_assign(e, tg_full_like(e, 2.5)));
  float v[15];
  CHECK(tg_data(tg_cast(e, TG_F32), v, sizeof v) == 0);
  for (int i = 0; i < 15; i++) CHECK(v[i] == 2.5f);
  CHECK(tg_item(tg_sum(tg_cast(t, TG_F32), TG_ALL, false)) == 0);
  /* the other *_like constructors keep shape and dtype too */
  CHECK_EQ_INT(tg_dtype_of(tg_ones_like(t)), TG_BF16);
  CHECK(tg_item(tg_sum(tg_cast(tg_ones_like(t), TG_F32), TG_ALL, false)) == 15);
  CHECK(tg_item(tg_sum(tg_cast(tg_zeros_like(e), TG_F32), TG_ALL, false)) == 0);
  tg_scope_end();
}

/* ---------------------------------------------------------------- bad input */


TEST(controls_errors_dtype_names) {
  CHECK_FAILS(tg_dtype_from_name("float17"), "unknown dtype name", "\"float17\"", "float16");
  CHECK_FAILS(tg_dtype_from_name(""), "unknown dtype name");
  CHECK_FAILS(tg_dtype_from_name("fp8e4m3fnuz"), "unknown dtype name");   /* tinygrad has it, tg does not */
  CHECK_FAILS(tg_dtype_from_name(">f4"), "big-endian");
  CHECK_FAILS(tg_dtype_from_name("F"), "unknown");   /* numpy's complex code: the one-letter codes are exact */
  CHECK_FAILS(tg_dtype_from_name("float32 "), "unknown");
  CHECK_FAILS(tg_dtype_from_name(NULL), "NULL");
}

TEST(controls_errors_acc_dtypes) {
  tg_scope_begin();
  tg_tensor *x = tg_ones(TG_SHAPE(2, 3), TG_F32), *w = tg_ones(TG_SHAPE(4, 2), TG_F32);
  CHECK_ERR(tg_sum_dtype(x, TG_ALL, false, TG_BOOL), "tg_sum_dtype", "bool");
  CHECK_ERR(tg_prod_dtype(x, TG_ALL, false, (tg_dtype)99), "tg_prod_dtype", "unknown accumulate dtype 99");
  CHECK_ERR(tg_mean_dtype(x, TG_ALL, false, TG_I32), "tg_mean_dtype", "float", "int32");
  CHECK_ERR(tg_sum_dtype(x, TG_AXES(2), false, TG_F64), "tg_sum_dtype", "axis");
  CHECK_ERR(tg_matmul_dtype(x, w, TG_F64), "tg_matmul_dtype", "inner dimensions differ");
  CHECK_ERR(tg_dot_dtype(x, tg_ones(TG_SHAPE(3), TG_F32), (tg_dtype)-1), "tg_dot_dtype", "unknown accumulate dtype");
  CHECK_ERR(tg_sum_dtype(NULL, TG_ALL, false, TG_F32), "tg_sum_dtype");
  tg_dtype df = tg_default_float(), sd = tg_sum_acc_float();
  CHECK_FAILS(tg_set_default_float(TG_I32), "tg_set_default_float", "int32", "not a float");
  CHECK_FAILS(tg_set_sum_acc_float(TG_BOOL), "tg_set_sum_acc_float", "bool");
  CHECK_FAILS(tg_set_default_float((tg_dtype)77), "unknown");
  CHECK(tg_default_float() == df && tg_sum_acc_float() == sd);   /* unchanged */
  tg_scope_end();
}

TEST(controls_errors_pool_pads) {
  int p[6];
  CHECK_FAILS(tg_resolve_pool_pads((int[]){ 1, 2, 3 }, 3, 2, p), "3 padding values for 2 spatial axes");
  CHECK_FAILS(tg_resolve_pool_pads((int[]){ 1 }, 0, 2, p), "0 padding values");
  CHECK_FAILS(tg_resolve_pool_pads((int[]){ 1 }, 1, 4, p), "4 spatial axes");
  CHECK_FAILS(tg_resolve_pool_pads(NULL, 1, 2, p), "padding is NULL");
  tg_scope_begin();
  tg_tensor *x = tg_ones(TG_SHAPE(1, 1, 4, 4), TG_F32);
  tg_pool_opts both = { .kernel = { 2, 2 }, .padding = { 1, 1 }, .pads = { 1, 0, 0, 0 } };
  CHECK_ERR(tg_avg_pool2d(x, &both), "tg_avg_pool2d", "not both");
  /* negative pads that leave the window no room: 4 - 1 - 1 = 2 < 3 */
  tg_pool_opts empty = { .kernel = { 3, 3 }, .pads = { -1, -1, 0, 0 } };
  CHECK_ERR(tg_max_pool2d(x, &empty, NULL), "tg_max_pool2d", "larger than the padded input 2", "pads -1, -1");
  CHECK_ERR(tg_avg_pool2d(x, &empty), "tg_avg_pool2d", "larger than the padded input");
  tg_pool_opts crop = { .kernel = { 1, 1 }, .pads = { 0, 0, -5, 9 } };
  CHECK_ERR(tg_max_pool2d(x, &crop, NULL), "crop more than the size 4 of axis 1");
  tg_pool_opts dil = { .kernel = { 2, 2 }, .dilation = { 3, 3 }, .pads = { 0, 0, 1, -2 } };   /* dilated 4 > 4 - 1 */
  CHECK_ERR(tg_max_pool2d(x, &dil, NULL), "dilated 4", "padded input 3");
  CHECK_ERR(tg_max_unpool2d(x, tg_zeros(TG_SHAPE(1, 1, 4, 4), TG_I32), &both, NULL), "tg_max_unpool2d", "not both");
  tg_tensor *w = tg_ones(TG_SHAPE(1, 1, 3, 3), TG_F32);
  tg_conv_transpose_opts tboth = { .padding = { 1 }, .pads = { 0, 1 } };
  CHECK_ERR(tg_conv_transpose2d(x, w, NULL, &tboth), "tg_conv_transpose2d", "not both");
  tg_conv_transpose_opts tneg = { .pads = { 0, 0, -1, 2 } };
  CHECK_ERR(tg_conv_transpose2d(x, w, NULL, &tneg), "tg_conv_transpose2d", "padding -1", "must not be negative");
  tg_conv_transpose_opts tbig = { .pads = { 3, 3, 0, 0 } };   /* output 6 - 6 = 0 rows */
  CHECK_ERR(tg_conv_transpose2d(x, w, NULL, &tbig), "tg_conv_transpose2d", "output size 0", "padding 3, 3");
  /* max_unpool2d's default size with pads: (in-1)*s - (before + after) + d*(k-1) + 1 */
  tg_pool_opts up = { .kernel = { 2, 2 }, .pads = { 1, 0, 0, 2 } };
  tg_tensor *u = tg_max_unpool2d(tg_ones(TG_SHAPE(1, 1, 3, 3), TG_F32), tg_zeros(TG_SHAPE(1, 1, 3, 3), TG_I32), &up, NULL);
  CHECK_OK(u);
  CHECK(tg_dim(u, 2) == 4 * 1 - 1 + 1 + 1 && tg_dim(u, 3) == 4 - 2 + 1 + 1);
  tg_scope_end();
}

TEST(controls_errors_threefry) {
  tg_scope_begin();
  tg_tensor *u = tg_zeros(TG_SHAPE(3), TG_U64);
  CHECK_ERR(tg_threefry(u, tg_zeros(TG_SHAPE(3), TG_U32)), "tg_threefry", "uint64", "uint32");
  CHECK_ERR(tg_threefry(tg_zeros(TG_SHAPE(3), TG_F32), u), "tg_threefry", "float32");
  CHECK_ERR(tg_threefry(u, tg_zeros(TG_SHAPE(4), TG_U64)), "tg_threefry", "broadcast");
  CHECK_ERR(tg_threefry(NULL, u), "tg_threefry");
  CHECK_ERR(tg_empty_like(NULL), "tg_empty_like", "NULL");
  tg_scope_end();
}

/* rand_like / randn_like are tg_rand / tg_randn of t's shape and dtype:
 * the same numbers for the same seed */
TEST(controls_rand_like) {
  tg_scope_begin();
  tg_tensor *t = tg_zeros(TG_SHAPE(4, 6), TG_F16);
  float a[24], b[24];
  tg_manual_seed(99);
  tg_tensor *r = tg_rand_like(t);
  CHECK_OK(r);
  CHECK_EQ_INT(tg_dtype_of(r), TG_F16);
  CHECK(tg_ndim(r) == 2 && tg_dim(r, 0) == 4 && tg_dim(r, 1) == 6);
  CHECK(!strcmp(tg_device_of(r), tg_device_of(t)));
  CHECK(tg_data(tg_cast(r, TG_F32), a, sizeof a) == 0);
  tg_manual_seed(99);
  CHECK(tg_data(tg_cast(tg_rand(TG_SHAPE(4, 6), TG_F16), TG_F32), b, sizeof b) == 0);
  CHECK(memcmp(a, b, sizeof a) == 0);
  tg_manual_seed(5);
  CHECK(tg_data(tg_cast(tg_randn_like(t), TG_F32), a, sizeof a) == 0);
  tg_manual_seed(5);
  CHECK(tg_data(tg_cast(tg_randn(TG_SHAPE(4, 6), TG_F16), TG_F32), b, sizeof b) == 0);
  CHECK(memcmp(a, b, sizeof a) == 0);
  CHECK_ERR(tg_rand_like(tg_zeros(TG_SHAPE(2), TG_I32)), "tg_rand_like", "float", "int32");
  CHECK_ERR(tg_randn_like(NULL), "tg_randn_like", "NULL");
  tg_scope_end();
}
