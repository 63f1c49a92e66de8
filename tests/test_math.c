/* test_math.c: the ops of include/tg_math.h against PyTorch, through the
 * goldens written by tests/gen/gen_torch_math.py (tests/goldens/
 * torch_math_*.bin; how each expected value was computed, and the reasons
 * for the tolerances, are in that script), plus error cases.
 *
 * Each golden case names an op; the dispatch table maps the name to a C
 * function applying the tg op to the case's inputs with its parameters. A
 * case whose op has no entry fails, and so does an entry no golden uses.
 * Ops with two results (sort, cummax, var_mean, ...) give the second
 * through `extra` when the case expects two outputs.
 *
 * Backward cases (parameter backward=1): the inputs are [x (, y ...), w];
 * the test marks the inputs listed in `wrt` as requiring grad, computes
 * out = op(...), runs tg_backward(sum(out * w)) and compares out and
 * tg_grad of each wrt input with the expected outputs [out, dx (, dy ...)]. */
#include <stdint.h>
#include "test.h"
#include "golden_io.h"

/* ---------------------------------------------------------------- parameters */

typedef tg_tensor *(*math_fn)(const golden_case *c, tg_tensor **in, tg_tensor **extra);

static tg_axes axes_of(const golden_case *c) {
  if (golden_int(c, "axes_all", 0)) return TG_ALL;
  int64_t v[TG_MAX_DIMS];
  int n = golden_ints(c, "axes", v, TG_MAX_DIMS);
  tg_axes a = { n < 0 ? 0 : n, { 0 } };
  for (int i = 0; i < a.n; i++) a.a[i] = (int)v[i];
  return a;
}
static bool kd(const golden_case *c) { return golden_int(c, "keepdim", 0) != 0; }
static int axis(const golden_case *c) { return (int)golden_int(c, "axis", 0); }
static double P(const golden_case *c, const char *k) { return golden_f64(c, k, NAN); }

/* ---------------------------------------------------------------- ops */

#define UN(name) static tg_tensor *op_##name(const golden_case *c, tg_tensor **in, tg_tensor **x) { return tg_##name(in[0]); }
#define BIN(name) static tg_tensor *op_##name(const golden_case *c, tg_tensor **in, tg_tensor **x) { return tg_##name(in[0], in[1]); }
UN(tan) UN(asin) UN(acos) UN(atan) UN(sinh) UN(cosh) UN(asinh) UN(acosh) UN(atanh)
UN(log10) UN(log1p) UN(expm1) UN(erf)
UN(trunc) UN(floor) UN(ceil) UN(round) UN(sign) UN(square)
UN(isnan) UN(isinf) UN(isfinite)
UN(relu6) UN(selu) UN(gelu) UN(quick_gelu) UN(silu) UN(swish) UN(mish) UN(softsign) UN(logsigmoid) UN(hardsigmoid) UN(hardswish)
UN(bitwise_not)
BIN(logaddexp) BIN(copysign) BIN(floordiv) BIN(mod) BIN(fmod)
BIN(bitwise_and) BIN(bitwise_or) BIN(bitwise_xor) BIN(lshift) BIN(rshift)
static tg_tensor *op_hardtanh(const golden_case *c, tg_tensor **in, tg_tensor **x) { return tg_hardtanh(in[0], P(c, "lo"), P(c, "hi")); }
static tg_tensor *op_leaky_relu(const golden_case *c, tg_tensor **in, tg_tensor **x) { return tg_leaky_relu(in[0], P(c, "slope")); }
static tg_tensor *op_elu(const golden_case *c, tg_tensor **in, tg_tensor **x) { return tg_elu(in[0], P(c, "alpha")); }
static tg_tensor *op_celu(const golden_case *c, tg_tensor **in, tg_tensor **x) { return tg_celu(in[0], P(c, "alpha")); }
static tg_tensor *op_softplus(const golden_case *c, tg_tensor **in, tg_tensor **x) { return tg_softplus(in[0], P(c, "beta"), P(c, "threshold")); }
static tg_tensor *op_lshifts(const golden_case *c, tg_tensor **in, tg_tensor **x) { return tg_lshifts(in[0], golden_int(c, "bits", 0)); }
static tg_tensor *op_rshifts(const golden_case *c, tg_tensor **in, tg_tensor **x) { return tg_rshifts(in[0], golden_int(c, "bits", 0)); }
static tg_tensor *op_clamp(const golden_case *c, tg_tensor **in, tg_tensor **x) { return tg_clamp(in[0], P(c, "lo"), P(c, "hi")); }
static tg_tensor *op_clamp_tensor(const golden_case *c, tg_tensor **in, tg_tensor **x) { return tg_clamp_tensor(in[0], in[1], in[2]); }
static tg_tensor *op_masked_fill(const golden_case *c, tg_tensor **in, tg_tensor **x) { return tg_masked_fill(in[0], in[1], P(c, "value")); }
static tg_tensor *op_lerp(const golden_case *c, tg_tensor **in, tg_tensor **x) { return tg_lerp(in[0], in[1], in[2]); }
static tg_tensor *op_lerps(const golden_case *c, tg_tensor **in, tg_tensor **x) { return tg_lerps(in[0], in[1], P(c, "w")); }
static tg_tensor *op_isclose(const golden_case *c, tg_tensor **in, tg_tensor **x) {
  return tg_isclose(in[0], in[1], P(c, "r_tol"), P(c, "a_tol"), golden_int(c, "equal_nan", 0) != 0);
}

/* reductions */
static tg_tensor *op_var(const golden_case *c, tg_tensor **in, tg_tensor **x) { return tg_var(in[0], axes_of(c), kd(c), P(c, "correction")); }
static tg_tensor *op_std(const golden_case *c, tg_tensor **in, tg_tensor **x) { return tg_std(in[0], axes_of(c), kd(c), P(c, "correction")); }
static tg_tensor *op_var_mean(const golden_case *c, tg_tensor **in, tg_tensor **x) { return tg_var_mean(in[0], axes_of(c), kd(c), P(c, "correction"), x); }
static tg_tensor *op_std_mean(const golden_case *c, tg_tensor **in, tg_tensor **x) { return tg_std_mean(in[0], axes_of(c), kd(c), P(c, "correction"), x); }
static tg_tensor *op_logsumexp(const golden_case *c, tg_tensor **in, tg_tensor **x) { return tg_logsumexp(in[0], axes_of(c), kd(c)); }
static tg_tensor *op_any(const golden_case *c, tg_tensor **in, tg_tensor **x) { return tg_any(in[0], axes_of(c), kd(c)); }
static tg_tensor *op_all(const golden_case *c, tg_tensor **in, tg_tensor **x) { return tg_all(in[0], axes_of(c), kd(c)); }

/* scans */
static tg_tensor *op_cumsum(const golden_case *c, tg_tensor **in, tg_tensor **x) { return tg_cumsum(in[0], axis(c)); }
static tg_tensor *op_cumprod(const golden_case *c, tg_tensor **in, tg_tensor **x) { return tg_cumprod(in[0], axis(c)); }
static tg_tensor *op_cummax(const golden_case *c, tg_tensor **in, tg_tensor **x) { return tg_cummax(in[0], axis(c), x); }
static tg_tensor *op_cummin(const golden_case *c, tg_tensor **in, tg_tensor **x) { return tg_cummin(in[0], axis(c), x); }
static tg_tensor *op_cummax_values(const golden_case *c, tg_tensor **in, tg_tensor **x) { return tg_cummax(in[0], axis(c), NULL); }
static tg_tensor *op_cummin_values(const golden_case *c, tg_tensor **in, tg_tensor **x) { return tg_cummin(in[0], axis(c), NULL); }
static tg_tensor *op_logcumsumexp(const golden_case *c, tg_tensor **in, tg_tensor **x) { return tg_logcumsumexp(in[0], axis(c)); }

/* sorting */
static bool desc(const golden_case *c) { return golden_int(c, "descending", 0) != 0; }
static tg_tensor *op_sort(const golden_case *c, tg_tensor **in, tg_tensor **x) { return tg_sort(in[0], axis(c), desc(c), x); }
static tg_tensor *op_sort_values(const golden_case *c, tg_tensor **in, tg_tensor **x) { return tg_sort(in[0], axis(c), desc(c), NULL); }
static tg_tensor *op_argsort(const golden_case *c, tg_tensor **in, tg_tensor **x) { return tg_argsort(in[0], axis(c), desc(c)); }
static tg_tensor *op_topk(const golden_case *c, tg_tensor **in, tg_tensor **x) {
  return tg_topk(in[0], golden_int(c, "k", 1), axis(c), golden_int(c, "largest", 1) != 0, true, x);
}
static tg_tensor *op_topk_values(const golden_case *c, tg_tensor **in, tg_tensor **x) {
  return tg_topk(in[0], golden_int(c, "k", 1), axis(c), golden_int(c, "largest", 1) != 0, true, NULL);
}

/* ---------------------------------------------------------------- dispatch */

typedef struct { const char *name; math_fn fn; } dispatch_entry;
#define E(n) { #n, op_##n }
static const dispatch_entry dispatch[] = {
  E(tan), E(asin), E(acos), E(atan), E(sinh), E(cosh), E(asinh), E(acosh), E(atanh),
  E(log10), E(log1p), E(expm1), E(erf),
  E(trunc), E(floor), E(ceil), E(round), E(sign), E(square), E(isnan), E(isinf), E(isfinite),
  E(relu6), E(hardtanh), E(leaky_relu), E(elu), E(celu), E(selu), E(gelu), E(quick_gelu), E(silu), E(swish), E(mish),
  E(softplus), E(softsign), E(logsigmoid), E(hardsigmoid), E(hardswish),
  E(logaddexp), E(copysign), E(floordiv), E(mod), E(fmod),
  E(bitwise_and), E(bitwise_or), E(bitwise_xor), E(bitwise_not), E(lshift), E(rshift), E(lshifts), E(rshifts),
  E(clamp), E(clamp_tensor), E(masked_fill), E(lerp), E(lerps), E(isclose),
  E(var), E(std), E(var_mean), E(std_mean), E(logsumexp), E(any), E(all),
  E(cumsum), E(cumprod), E(cummax), E(cummin), E(cummax_values), E(cummin_values), E(logcumsumexp),
  E(sort), E(sort_values), E(argsort), E(topk), E(topk_values),
};
#undef E
#define NDISPATCH ((int)(sizeof dispatch / sizeof dispatch[0]))

static const dispatch_entry *find_op(const char *name) {
  for (int i = 0; i < NDISPATCH; i++) if (!strcmp(dispatch[i].name, name)) return &dispatch[i];
  return NULL;
}

static const char *const groups[] = { "unary", "binary", "reduce", "scan", "sort", "backward" };
static const golden_set goldens = { "goldens/torch_math_%s.bin", groups, (int)(sizeof groups / sizeof groups[0]) };

/* Forward: the result (and the second result when there are two outputs). */
static bool run_forward(const golden_case *c, const dispatch_entry *d, tg_tensor **in) {
  if (c->nout > 2) { test_fail(__FILE__, __LINE__, "%s: %d outputs; forward cases have 1 or 2", c->label, c->nout); return false; }
  tg_tensor *extra = NULL;
  tg_tensor *r = d->fn(c, in, c->nout == 2 ? &extra : NULL);
  bool ok = golden_check(r, &c->out[0], c, c->label);
  if (c->nout == 2) {
    char what[200];
    snprintf(what, sizeof what, "%s (second output)", c->label);
    ok &= golden_check(r ? extra : NULL, &c->out[1], c, what);
  }
  return ok;
}

/* Backward: out = op(inputs), L = sum(out * w) with w the last input. */
static bool run_backward(const golden_case *c, const dispatch_entry *d, tg_tensor **in) {
  int64_t wrt[16];
  int nw = golden_ints(c, "wrt", wrt, 16);
  if (nw < 1 || c->nout != 1 + nw || c->nin < 2) { test_fail(__FILE__, __LINE__, "%s: malformed backward case", c->label); return false; }
  for (int k = 0; k < nw; k++) {
    if (wrt[k] < 0 || wrt[k] >= c->nin - 1) { test_fail(__FILE__, __LINE__, "%s: bad wrt index %lld", c->label, (long long)wrt[k]); return false; }
    tg_requires_grad(in[wrt[k]], true);
  }
  tg_tensor *out = d->fn(c, in, NULL);
  /* backward before reading out: realizing out replaces its graph by its buffer */
  tg_tensor *loss = tg_sum(tg_mul(out, in[c->nin - 1]), TG_ALL, false);
  if (!loss || tg_backward(loss) < 0) {
    test_fail(__FILE__, __LINE__, "%s: tg_backward failed: %s", c->label, tg_error());
    return false;
  }
  bool ok = golden_check(out, &c->out[0], c, c->label);
  for (int k = 0; k < nw; k++) {
    char what[200];
    snprintf(what, sizeof what, "%s: grad of input %lld", c->label, (long long)wrt[k]);
    tg_tensor *gr = tg_grad(in[wrt[k]]);
    if (!gr) { test_fail(__FILE__, __LINE__, "%s is NULL", what); ok = false; continue; }
    ok &= golden_check(gr, &c->out[1 + k], c, what);
  }
  return ok;
}

static bool run_case(const golden_case *c) {
  const dispatch_entry *d = find_op(c->op);
  if (!d) { test_fail(__FILE__, __LINE__, "%s: op '%s' has no dispatch entry in test_math.c", c->label, c->op); return false; }
  int before = test_failures;
  tg_scope_begin();
  tg_clear_error();
  tg_tensor *in[16] = { 0 };
  bool ok = c->nin <= 16;
  for (int i = 0; ok && i < c->nin; i++) {
    in[i] = golden_tensor(&c->in[i]);
    if (!in[i]) { test_fail(__FILE__, __LINE__, "%s: input %d: %s", c->label, i, tg_error()); ok = false; }
  }
  if (ok) ok = golden_int(c, "backward", 0) ? run_backward(c, d, in) : run_forward(c, d, in);
  tg_scope_end();
  return ok && test_failures == before;
}

static void run_group(const char *group) { golden_run_group(&goldens, group, run_case, NULL, false, NULL); }

TEST(math_unary) { run_group("unary"); }
TEST(math_binary) { run_group("binary"); }
TEST(math_reduce) { run_group("reduce"); }
TEST(math_scan) { run_group("scan"); }
TEST(math_sort) { run_group("sort"); }
TEST(math_backward) { run_group("backward"); }

/* Every golden op has a dispatch entry and every entry is used. */
TEST(math_dispatch_covers_goldens) {
  int total = golden_check_dispatch(&goldens, dispatch, sizeof dispatch[0], NDISPATCH, NULL, NULL);
  printf("  %d golden cases, %d dispatch entries\n", total, NDISPATCH);
}

/* ---------------------------------------------------------------- errors */

/* r must be NULL and tg_error() must contain every needle. */
#define EXPECT_ERR(r, ...) do { \
  tg_clear_error(); \
  tg_tensor *r_ = (r); \
  const char *needles_[] = { __VA_ARGS__ }; \
  CHECK_MSG(r_ == NULL, "%s: expected an error", #r); \
  for (size_t k_ = 0; k_ < sizeof needles_ / sizeof needles_[0]; k_++) \
    CHECK_MSG(strstr(tg_error(), needles_[k_]) != NULL, "%s: error '%s' lacks '%s'", #r, tg_error(), needles_[k_]); \
} while (0)

TEST(math_errors) {
  tg_tensor *f = tg_zeros(TG_SHAPE(2, 3), TG_F32), *i = tg_zeros(TG_SHAPE(2, 3), TG_I32);
  tg_tensor *b = tg_zeros(TG_SHAPE(2, 3), TG_BOOL), *bad = tg_zeros(TG_SHAPE(4), TG_F32);
  tg_tensor *out = NULL;
  EXPECT_ERR(tg_bitwise_and(f, i), "tg_bitwise_and", "float32");
  EXPECT_ERR(tg_bitwise_xor(i, f), "tg_bitwise_xor", "float32");
  EXPECT_ERR(tg_bitwise_not(f), "tg_bitwise_not", "float32");
  EXPECT_ERR(tg_lshift(i, f), "tg_lshift", "float32");
  EXPECT_ERR(tg_rshifts(b, 1), "tg_rshifts", "bool");
  EXPECT_ERR(tg_floordiv(b, b), "tg_floordiv", "bool");
  EXPECT_ERR(tg_mod(f, bad), "tg_mod", "broadcast");
  EXPECT_ERR(tg_logaddexp(f, bad), "tg_logaddexp", "broadcast");
  EXPECT_ERR(tg_clamp(f, NAN, NAN), "tg_clamp", "lo and hi");
  EXPECT_ERR(tg_hardtanh(f, 1, -1), "tg_hardtanh", "lo (1)");
  EXPECT_ERR(tg_celu(f, 0), "tg_celu", "alpha");
  EXPECT_ERR(tg_softplus(f, 0, 20), "tg_softplus", "beta");
  EXPECT_ERR(tg_masked_fill(f, i, 1), "tg_masked_fill", "int32");
  EXPECT_ERR(tg_isclose(f, f, -1, 0, false), "tg_isclose", "rtol");
  EXPECT_ERR(tg_var(f, TG_AXES(2), false, 1), "tg_var", "axis 2");
  EXPECT_ERR(tg_std(f, TG_AXES(0, -2), false, 1), "tg_std", "repeated");
  EXPECT_ERR(tg_logsumexp(f, TG_AXES(-3), false), "tg_logsumexp", "axis -3");
  EXPECT_ERR(tg_any(f, TG_AXES(5), false), "tg_any", "axis 5");
  EXPECT_ERR(tg_var_mean(f, TG_ALL, false, 1, NULL), "tg_var_mean", "NULL");
  EXPECT_ERR(tg_cumsum(f, 2), "tg_cumsum", "axis 2");
  EXPECT_ERR(tg_cumprod(tg_scalar(1, TG_F32), 1), "tg_cumprod", "axis 1", "0-D");
  EXPECT_ERR(tg_cummax(f, -3, &out), "tg_cummax", "axis -3");
  CHECK(out == NULL);
  EXPECT_ERR(tg_logcumsumexp(f, 7), "tg_logcumsumexp", "axis 7");
  EXPECT_ERR(tg_sort(f, 3, false, &out), "tg_sort", "axis 3");
  EXPECT_ERR(tg_argsort(f, -4, true), "tg_argsort", "axis -4");
  EXPECT_ERR(tg_topk(f, 4, 1, true, true, &out), "tg_topk", "k=4", "size 3");
  EXPECT_ERR(tg_topk(f, -1, 1, true, true, NULL), "tg_topk", "k=-1");
  /* NULL inputs give NULL, keeping the first error */
  tg_clear_error();
  CHECK(tg_erf(NULL) == NULL && tg_sort(NULL, 0, false, &out) == NULL && out == NULL);
  CHECK(strstr(tg_error(), "tg_erf") != NULL);
  tg_clear_error();
  CHECK(tg_lerp(f, NULL, f) == NULL);
  CHECK(strstr(tg_error(), "tg_lerp") != NULL);
}

/* Kernel counts stay small: a sort is a rank kernel plus one gather kernel
 * per output, a scan one kernel (two levels more for long axes). */
TEST(math_kernel_counts) {
  tg_tensor *x = tg_rand(TG_SHAPE(4, 50), TG_F32);
  CHECK_OK(x);
  if (!x || tg_realize(x) < 0) return;
  tg_tensor *idx = NULL;
  tg_tensor *v = tg_sort(x, 1, false, &idx);
  CHECK_OK(v);
  tg_reset_counters();
  tg_tensor *both[2] = { v, idx };
  CHECK(tg_realize_all(both, 2) == 0);
  CHECK_MSG(tg_get_counters().kernels_run <= 3, "sort ran %lld kernels", (long long)tg_get_counters().kernels_run);
  tg_reset_counters();
  tg_tensor *cs = tg_cumsum(x, 1);
  CHECK(tg_realize(cs) == 0);
  CHECK_MSG(tg_get_counters().kernels_run == 1, "cumsum ran %lld kernels", (long long)tg_get_counters().kernels_run);
  tg_reset_counters();
  tg_tensor *e = tg_gelu(tg_mish(x));
  CHECK(tg_realize(e) == 0);
  CHECK_MSG(tg_get_counters().kernels_run == 1, "gelu(mish(x)) ran %lld kernels", (long long)tg_get_counters().kernels_run);
}

/* A scan longer than 512 * 256 splits twice (blocks of blocks): exact int
 * running sums and a running max over 140000 elements. */
TEST(math_scan_very_long) {
  int64_t n = 140000;
  tg_tensor *x = tg_ones(TG_SHAPE(n), TG_I32);
  tg_tensor *cs = tg_cumsum(x, 0);
  tg_tensor *cm = tg_cummax(tg_arange(0, (double)n, 1, TG_I32), -1, NULL);
  CHECK_OK(cs); CHECK_OK(cm);
  int32_t *a = malloc(sizeof(int32_t) * (size_t)n), *b = malloc(sizeof(int32_t) * (size_t)n);
  if (cs && cm && tg_data(cs, a, sizeof(int32_t) * (size_t)n) == 0 && tg_data(cm, b, sizeof(int32_t) * (size_t)n) == 0) {
    int bad = 0;
    for (int64_t i = 0; i < n; i++) bad += a[i] != i + 1 || b[i] != i;
    CHECK_MSG(bad == 0, "%d wrong elements (a[n-1] = %d, b[n-1] = %d)", bad, a[n - 1], b[n - 1]);
  } else CHECK_MSG(0, "realize failed: %s", tg_error());
  free(a); free(b);
}
