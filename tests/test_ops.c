/* test_ops.c: every op of tg.h against numpy, through the goldens written by
 * tests/gen/gen_ops.py (tests/goldens/ops_*.bin; format and the reasons for
 * each tolerance are in that script).
 *
 * Each golden case names an op; the dispatch table below maps the name to a
 * C function applying the tg op to the case's inputs with its parameters
 * (axes, keepdim, shape, dtype, scalar, index, ...). A case whose op is not
 * in the table fails, and so does a table entry no golden uses, so the
 * goldens and this file cannot drift apart silently. The result's shape,
 * dtype and values are all checked.
 *
 * Cases that fail because of a known library bug are listed in known_bugs[]
 * with the reason: they run in TEST(ops_known_bugs) (which fails while the bug
 * is there) instead of in their group's test, so one bug does not hide the
 * rest of a group. Remove an entry once its bug is fixed. */
#include <stdint.h>
#include "test.h"
#include "golden_io.h"

/* ---------------------------------------------------------------- known bugs */

typedef struct { const char *label, *why; } known_bug;
static const known_bug known_bugs[] = {
  { NULL, NULL },
};

static const char *known_bug_of(const char *label) {
  for (int i = 0; known_bugs[i].label; i++) if (!strcmp(known_bugs[i].label, label)) return known_bugs[i].why;
  return NULL;
}

/* ---------------------------------------------------------------- parameters */

typedef tg_tensor *(*op_fn)(const golden_case *c, tg_tensor **in);

static tg_axes axes_of(const golden_case *c) {
  if (golden_int(c, "axes_all", 0)) return TG_ALL;
  int64_t v[TG_MAX_DIMS];
  int n = golden_ints(c, "axes", v, TG_MAX_DIMS);
  tg_axes a = { n < 0 ? 0 : n, { 0 } };
  for (int i = 0; i < a.n; i++) a.a[i] = (int)v[i];
  return a;
}
static tg_shape shape_of(const golden_case *c, const char *key) {
  int64_t v[TG_MAX_DIMS];
  int n = golden_ints(c, key, v, TG_MAX_DIMS);
  tg_shape s = { n < 0 ? 0 : n, { 0 } };
  for (int i = 0; i < s.ndim; i++) s.d[i] = v[i];
  return s;
}
static bool keepdim_of(const golden_case *c) { return golden_int(c, "keepdim", 0) != 0; }
static tg_dtype dtype_of(const golden_case *c) { return (tg_dtype)golden_int(c, "dtype", TG_F32); }

/* ---------------------------------------------------------------- ops */

/* creation */
static tg_tensor *op_full(const golden_case *c, tg_tensor **in) { return tg_full(shape_of(c, "shape"), golden_f64(c, "value", 0), dtype_of(c)); }
static tg_tensor *op_zeros(const golden_case *c, tg_tensor **in) { return tg_zeros(shape_of(c, "shape"), dtype_of(c)); }
static tg_tensor *op_ones(const golden_case *c, tg_tensor **in) { return tg_ones(shape_of(c, "shape"), dtype_of(c)); }
static tg_tensor *op_scalar(const golden_case *c, tg_tensor **in) { return tg_scalar(golden_f64(c, "value", 0), dtype_of(c)); }
static tg_tensor *op_full_like(const golden_case *c, tg_tensor **in) { return tg_full_like(in[0], golden_f64(c, "value", 0)); }
static tg_tensor *op_zeros_like(const golden_case *c, tg_tensor **in) { return tg_zeros_like(in[0]); }
static tg_tensor *op_ones_like(const golden_case *c, tg_tensor **in) { return tg_ones_like(in[0]); }
static tg_tensor *op_arange(const golden_case *c, tg_tensor **in) {
  return tg_arange(golden_f64(c, "start", 0), golden_f64(c, "stop", 0), golden_f64(c, "step", 1), dtype_of(c));
}
static tg_tensor *op_eye(const golden_case *c, tg_tensor **in) { return tg_eye(golden_int(c, "n", 0), dtype_of(c)); }

/* elementwise */
#define BINARY(name) static tg_tensor *op_##name(const golden_case *c, tg_tensor **in) { return tg_##name(in[0], in[1]); }
#define UNARY(name) static tg_tensor *op_##name(const golden_case *c, tg_tensor **in) { return tg_##name(in[0]); }
#define SCALAR(name) static tg_tensor *op_##name(const golden_case *c, tg_tensor **in) { return tg_##name(in[0], golden_f64(c, "scalar", 0)); }
BINARY(add) BINARY(sub) BINARY(mul) BINARY(div) BINARY(pow) BINARY(maximum) BINARY(minimum)
BINARY(lt) BINARY(le) BINARY(gt) BINARY(ge) BINARY(eq) BINARY(ne)
BINARY(logical_and) BINARY(logical_or) BINARY(logical_xor)
SCALAR(adds) SCALAR(subs) SCALAR(muls) SCALAR(divs) SCALAR(pows)
UNARY(neg) UNARY(exp) UNARY(log) UNARY(exp2) UNARY(log2) UNARY(sqrt) UNARY(rsqrt) UNARY(reciprocal)
UNARY(sin) UNARY(cos) UNARY(abs) UNARY(relu) UNARY(sigmoid) UNARY(tanh) UNARY(logical_not) UNARY(T)
static tg_tensor *op_where(const golden_case *c, tg_tensor **in) { return tg_where(in[0], in[1], in[2]); }
static tg_tensor *op_cast(const golden_case *c, tg_tensor **in) { return tg_cast(in[0], dtype_of(c)); }
static tg_tensor *op_bitcast(const golden_case *c, tg_tensor **in) { return tg_bitcast(in[0], dtype_of(c)); }

/* movement */
static tg_tensor *op_reshape(const golden_case *c, tg_tensor **in) { return tg_reshape(in[0], shape_of(c, "shape")); }
static tg_tensor *op_expand(const golden_case *c, tg_tensor **in) { return tg_expand(in[0], shape_of(c, "shape")); }
static tg_tensor *op_permute(const golden_case *c, tg_tensor **in) { return tg_permute(in[0], axes_of(c)); }
static tg_tensor *op_flip(const golden_case *c, tg_tensor **in) { return tg_flip(in[0], axes_of(c)); }
static tg_tensor *op_pad(const golden_case *c, tg_tensor **in) {
  int64_t p[2 * TG_MAX_DIMS];
  int n = golden_ints(c, "pads", p, 2 * TG_MAX_DIMS);
  return tg_pad(in[0], p, n / 2, golden_f64(c, "value", 0));
}
static tg_tensor *op_shrink(const golden_case *c, tg_tensor **in) {
  int64_t s[TG_MAX_DIMS], e[TG_MAX_DIMS];
  golden_ints(c, "starts", s, TG_MAX_DIMS);
  golden_ints(c, "ends", e, TG_MAX_DIMS);
  return tg_shrink(in[0], s, e);
}
static tg_tensor *op_transpose(const golden_case *c, tg_tensor **in) {
  return tg_transpose(in[0], (int)golden_int(c, "axis0", 0), (int)golden_int(c, "axis1", 1));
}
static tg_tensor *op_squeeze(const golden_case *c, tg_tensor **in) { return tg_squeeze(in[0], (int)golden_int(c, "axis", TG_NOAXIS)); }
static tg_tensor *op_unsqueeze(const golden_case *c, tg_tensor **in) { return tg_unsqueeze(in[0], (int)golden_int(c, "axis", 0)); }
static tg_tensor *op_flatten(const golden_case *c, tg_tensor **in) {
  return tg_flatten(in[0], (int)golden_int(c, "start", 0), (int)golden_int(c, "end", -1));
}
/* index: 6 ints per entry: kind, start, stop, step, has_start, has_stop */
static tg_tensor *op_getitem(const golden_case *c, tg_tensor **in) {
  int64_t v[6 * 32];
  int n = golden_ints(c, "index", v, 6 * 32);
  tg_index ix[32];
  for (int i = 0; i < n / 6; i++)
    ix[i] = (tg_index){ (tg_index_kind)v[6 * i], v[6 * i + 1], v[6 * i + 2], v[6 * i + 3], v[6 * i + 4] != 0, v[6 * i + 5] != 0 };
  return tg_getitem(in[0], ix, n / 6);
}

/* reductions */
#define REDUCE(name) static tg_tensor *op_##name(const golden_case *c, tg_tensor **in) { return tg_##name(in[0], axes_of(c), keepdim_of(c)); }
REDUCE(sum) REDUCE(max) REDUCE(min) REDUCE(mean) REDUCE(prod)
static tg_tensor *op_argmax(const golden_case *c, tg_tensor **in) { return tg_argmax(in[0], (int)golden_int(c, "axis", TG_NOAXIS), keepdim_of(c)); }
static tg_tensor *op_argmin(const golden_case *c, tg_tensor **in) { return tg_argmin(in[0], (int)golden_int(c, "axis", TG_NOAXIS), keepdim_of(c)); }

/* composite */
BINARY(matmul) BINARY(dot)
static tg_tensor *op_softmax(const golden_case *c, tg_tensor **in) { return tg_softmax(in[0], (int)golden_int(c, "axis", -1)); }
static tg_tensor *op_log_softmax(const golden_case *c, tg_tensor **in) { return tg_log_softmax(in[0], (int)golden_int(c, "axis", -1)); }

/* composed chains (the graph is built lazily and realized once, except
 * where a step says otherwise) */
static tg_tensor *op_linear_relu(const golden_case *c, tg_tensor **in) { return tg_relu(tg_add(tg_matmul(in[0], in[1]), in[2])); }
static tg_tensor *op_add_sum1(const golden_case *c, tg_tensor **in) { return tg_sum(tg_add(in[0], in[1]), TG_AXES(1), false); }
static tg_tensor *op_softmax_of_realized(const golden_case *c, tg_tensor **in) {
  tg_tensor *y = tg_add(in[0], in[1]);
  if (tg_realize(y) < 0) return NULL;
  return tg_softmax(y, -1);
}
static tg_tensor *op_where_chain(const golden_case *c, tg_tensor **in) {
  return tg_where(tg_gt(in[0], tg_scalar(0, TG_F32)), tg_muls(in[0], 2), tg_subs(in[1], 1));
}
static tg_tensor *op_sum_of_slice(const golden_case *c, tg_tensor **in) {
  return tg_sum(TG_GET(in[0], TG_SLICE(1, 4, 1), TG_STEP(2)), TG_AXES(0), false);
}
static tg_tensor *op_flip_add(const golden_case *c, tg_tensor **in) { return tg_add(tg_flip(in[0], TG_AXES(0)), in[0]); }
static tg_tensor *op_getitem_of_computed(const golden_case *c, tg_tensor **in) { return TG_GET(tg_adds(in[0], 1), TG_STEP(-1), TG_I(1)); }
static tg_tensor *op_double_reduce(const golden_case *c, tg_tensor **in) { return tg_max(tg_sum(in[0], TG_AXES(1), false), TG_AXES(0), false); }
static tg_tensor *op_reduce_reshape_add(const golden_case *c, tg_tensor **in) {
  return tg_adds(tg_reshape(tg_sum(in[0], TG_AXES(1), false), TG_SHAPE(-1, 1)), 1);
}
static tg_tensor *op_outer_sum(const golden_case *c, tg_tensor **in) { return tg_sum(tg_mul(in[0], in[1]), TG_AXES(0), false); }
static tg_tensor *op_matmul_T(const golden_case *c, tg_tensor **in) { return tg_matmul(in[0], tg_T(in[1])); }
static tg_tensor *op_layernorm(const golden_case *c, tg_tensor **in) {
  tg_tensor *d = tg_sub(in[0], tg_mean(in[0], TG_AXES(-1), true));
  tg_tensor *var = tg_mean(tg_mul(d, d), TG_AXES(-1), true);
  return tg_div(d, tg_sqrt(tg_adds(var, 1e-5)));
}
static tg_tensor *op_pad_then_sum(const golden_case *c, tg_tensor **in) {
  int64_t p[4] = { 1, 1, 1, 1 };
  return tg_sum(tg_pad(in[0], p, 2, 2.0), TG_ALL, false);
}
static tg_tensor *op_exp_sum_log(const golden_case *c, tg_tensor **in) { return tg_log(tg_sum(tg_exp(in[0]), TG_AXES(1), false)); }
static tg_tensor *op_int_chain(const golden_case *c, tg_tensor **in) { return tg_max(tg_adds(tg_muls(in[0], 3), 1), TG_AXES(1), false); }

/* float identities that hold only for ints */
static tg_tensor *op_self_sub(const golden_case *c, tg_tensor **in) { return tg_sub(in[0], in[0]); }
static tg_tensor *op_self_div(const golden_case *c, tg_tensor **in) { return tg_div(in[0], in[0]); }
static tg_tensor *op_mul_zero(const golden_case *c, tg_tensor **in) { return tg_muls(in[0], 0); }
static tg_tensor *op_self_eq(const golden_case *c, tg_tensor **in) { return tg_eq(in[0], in[0]); }
static tg_tensor *op_self_ne(const golden_case *c, tg_tensor **in) { return tg_ne(in[0], in[0]); }
static tg_tensor *op_self_max(const golden_case *c, tg_tensor **in) { return tg_maximum(in[0], in[0]); }

/* views: ops over movement ops and movement ops over computed tensors */
static tg_tensor *op_sum_permuted(const golden_case *c, tg_tensor **in) {
  return tg_sum(tg_permute(in[0], TG_AXES(2, 0, 1)), TG_AXES(0, 2), false);
}
static tg_tensor *op_sum_expanded(const golden_case *c, tg_tensor **in) { return tg_sum(tg_expand(in[0], TG_SHAPE(3, 4)), TG_AXES(1), false); }
static tg_tensor *op_sum_padded(const golden_case *c, tg_tensor **in) {
  int64_t p[4] = { 1, 2, 0, 1 };
  return tg_sum(tg_pad(in[0], p, 2, 1.5), TG_AXES(0), false);
}
static tg_tensor *op_pad_of_sum(const golden_case *c, tg_tensor **in) {
  int64_t p[2] = { 2, 1 };
  return tg_pad(tg_sum(in[0], TG_AXES(1), false), p, 1, 5.0);
}
static tg_tensor *op_reshape_of_shrink(const golden_case *c, tg_tensor **in) {
  return tg_reshape(TG_GET(in[0], TG_ALLIDX, TG_SLICE(1, 3, 1)), TG_SHAPE(-1));
}
static tg_tensor *op_flip_reshape_permute(const golden_case *c, tg_tensor **in) {
  return tg_flip(tg_reshape(tg_permute(in[0], TG_AXES(1, 0, 2)), TG_SHAPE(6, -1)), TG_ALL);
}
static tg_tensor *op_expand_reshape(const golden_case *c, tg_tensor **in) { return tg_reshape(tg_expand(in[0], TG_SHAPE(3, 4)), TG_SHAPE(12)); }
static tg_tensor *op_matmul_TT(const golden_case *c, tg_tensor **in) { return tg_matmul(tg_T(in[0]), tg_T(in[1])); }
/* half/bfloat16 operands cast to float32 first (a float32 result) */
static tg_tensor *op_matmul_f32acc(const golden_case *c, tg_tensor **in) { return tg_matmul(tg_cast(in[0], TG_F32), tg_cast(in[1], TG_F32)); }
static tg_tensor *op_argmax_permuted(const golden_case *c, tg_tensor **in) { return tg_argmax(tg_permute(in[0], TG_AXES(2, 0, 1)), 1, false); }
static tg_tensor *op_getitem_permuted(const golden_case *c, tg_tensor **in) {
  return TG_GET(tg_permute(in[0], TG_AXES(2, 0, 1)), TG_STEP(2), TG_STEP(-1));
}
static tg_tensor *op_max_of_flipped_slice(const golden_case *c, tg_tensor **in) {
  return tg_max(TG_GET(tg_flip(in[0], TG_AXES(0)), TG_FROM(1), TG_STEP(2)), TG_AXES(0, 2), false);
}
static tg_tensor *op_add_views(const golden_case *c, tg_tensor **in) { return tg_add(tg_T(in[0]), tg_T(tg_flip(in[0], TG_AXES(0)))); }
static tg_tensor *op_contiguous_of_view(const golden_case *c, tg_tensor **in) {
  return tg_muls(tg_contiguous(TG_GET(in[0], TG_FROM(1), TG_STEP(-2))), 2);
}

/* ---------------------------------------------------------------- dispatch */

typedef struct { const char *name; op_fn fn; } dispatch_entry;
#define E(n) { #n, op_##n }
static const dispatch_entry dispatch[] = {
  E(full), E(zeros), E(ones), E(scalar), E(full_like), E(zeros_like), E(ones_like), E(arange), E(eye),
  E(add), E(sub), E(mul), E(div), E(pow), E(maximum), E(minimum),
  E(lt), E(le), E(gt), E(ge), E(eq), E(ne), E(logical_and), E(logical_or), E(logical_xor), E(logical_not),
  E(adds), E(subs), E(muls), E(divs), E(pows),
  E(neg), E(exp), E(log), E(exp2), E(log2), E(sqrt), E(rsqrt), E(reciprocal), E(sin), E(cos), E(abs),
  E(relu), E(sigmoid), E(tanh), E(where), E(cast), E(bitcast),
  E(reshape), E(permute), E(expand), E(pad), E(shrink), E(flip), E(transpose), E(T), E(squeeze), E(unsqueeze),
  E(flatten), E(getitem),
  E(sum), E(max), E(min), E(mean), E(prod), E(argmax), E(argmin),
  E(matmul), E(dot), E(softmax), E(log_softmax),
  E(linear_relu), E(add_sum1), E(softmax_of_realized), E(where_chain), E(sum_of_slice), E(flip_add),
  E(getitem_of_computed), E(double_reduce), E(reduce_reshape_add), E(outer_sum), E(matmul_T), E(layernorm),
  E(pad_then_sum), E(exp_sum_log), E(int_chain),
  E(self_sub), E(self_div), E(mul_zero), E(self_eq), E(self_ne), E(self_max),
  E(sum_permuted), E(sum_expanded), E(sum_padded), E(pad_of_sum), E(reshape_of_shrink), E(flip_reshape_permute),
  E(expand_reshape), E(matmul_TT), E(matmul_f32acc), E(argmax_permuted), E(getitem_permuted), E(max_of_flipped_slice), E(add_views),
  E(contiguous_of_view),
};
#undef E
#define NDISPATCH ((int)(sizeof dispatch / sizeof dispatch[0]))

static const dispatch_entry *find_op(const char *name) {
  for (int i = 0; i < NDISPATCH; i++) if (!strcmp(dispatch[i].name, name)) return &dispatch[i];
  return NULL;
}

static const char *const groups[] = { "create", "elementwise", "cast", "movement", "reduce", "matmul", "softmax", "chain", "views", "matmul_tc" };
static const golden_set goldens = { "goldens/ops_%s.bin", groups, (int)(sizeof groups / sizeof groups[0]) };

/* Runs one case; true when it passed. */
static bool run_case(const golden_case *c) {
  const dispatch_entry *d = find_op(c->op);
  if (!d) { test_fail(__FILE__, __LINE__, "%s: op '%s' has no dispatch entry in test_ops.c", c->label, c->op); return false; }
  if (c->nout != 1) { test_fail(__FILE__, __LINE__, "%s: %d expected outputs; the runner handles 1", c->label, c->nout); return false; }
  int before = test_failures;
  tg_scope_begin();
  tg_clear_error();
  tg_tensor *in[16] = { 0 };
  bool ok = true;
  for (int i = 0; i < c->nin && i < 16; i++) {
    in[i] = golden_tensor(&c->in[i]);
    if (!in[i]) { test_fail(__FILE__, __LINE__, "%s: input %d: %s", c->label, i, tg_error()); ok = false; }
  }
  if (ok) {
    tg_tensor *r = d->fn(c, in);
    ok = golden_check(r, &c->out[0], c, c->label);
  }
  tg_scope_end();
  return ok && test_failures == before;
}

/* run_case in a child process: a known bug may corrupt memory (a kernel
 * writing out of bounds) or crash, and must not take the other tests down. */

/* Runs the cases of goldens/ops_<group>.bin: the known-bug ones when
 * known_only, the others otherwise. */
static void run_group(const char *group, bool known_only, int *ran) {
  golden_run_group(&goldens, group, run_case, known_bug_of, known_only, ran);
}

TEST(ops_create) { run_group("create", false, NULL); }
TEST(ops_elementwise) { run_group("elementwise", false, NULL); }
TEST(ops_cast) { run_group("cast", false, NULL); }
TEST(ops_movement) { run_group("movement", false, NULL); }
TEST(ops_reduce) { run_group("reduce", false, NULL); }
TEST(ops_matmul) { run_group("matmul", false, NULL); }
TEST(ops_softmax) { run_group("softmax", false, NULL); }
TEST(ops_chain) { run_group("chain", false, NULL); }
TEST(ops_views) { run_group("views", false, NULL); }
/* shapes tensor cores tile (the CUDA pass runs them on tensor cores, the
 * nvrtc pass compiles those kernels, test tc_cl_emulated runs them through
 * the CL emulation) */
TEST(ops_matmul_tc) { run_group("matmul_tc", false, NULL); }

/* The cases listed in known_bugs[]: fails while any of them still fails. */
TEST(ops_known_bugs) {
  int listed = 0;
  while (known_bugs[listed].label) listed++;
  golden_run_known_bugs(&goldens, run_case, known_bug_of, listed);
}

/* Every golden op has a dispatch entry and every entry is used; every case
 * has one output. */
static void one_output(const golden_case *c, const char *path, void *ctx) {
  (void)ctx;
  CHECK_MSG(c->nout == 1, "%s: case %s has %d outputs", path, c->label, c->nout);
}
TEST(ops_dispatch_covers_goldens) {
  int total = golden_check_dispatch(&goldens, dispatch, sizeof dispatch[0], NDISPATCH, one_output, NULL);
  printf("  %d golden cases, %d dispatch entries\n", total, NDISPATCH);
}

/* The reader rejects a truncated file instead of reading past its end. */
TEST(ops_golden_reader_rejects_truncated) {
  size_t n = 0;
  unsigned char *buf = test_read_file("goldens/ops_chain.bin", &n);
  if (!buf) SKIP("goldens/ops_chain.bin missing");
  char path[] = "/tmp/tg-golden-XXXXXX";
  int fd = mkstemp(path);
  CHECK(fd >= 0);
  if (fd >= 0) {
    FILE *f = fdopen(fd, "wb");
    fwrite(buf, 1, n - 7, f);
    fclose(f);
    const char *err = NULL;
    golden_file *g = golden_load(path, &err);
    CHECK(g == NULL);
    CHECK(err && strstr(err, "truncated"));
    golden_free(g);
    remove(path);
  }
  free(buf);
}
