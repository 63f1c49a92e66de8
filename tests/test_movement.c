/* test_movement.c: the ops of tg_movement.h (joining, splitting, repeating,
 * padding modes, indexing with tensors, gather/scatter) against PyTorch,
 * through the goldens written by tests/gen/gen_torch_movement.py
 * (tests/goldens/torch_movement_*.bin), plus error, setitem and kernel-count
 * tests.
 *
 * Each golden case names an op; the dispatch table maps it to a C function
 * that applies the tg op to the case's inputs and fills the outputs (split,
 * chunk and meshgrid give several). A case whose op has no entry fails, and
 * so does an entry no golden uses. Backward cases (param backward=1) also
 * check the gradients of L = sum_k sum(out_k * w_k) (see the script). */
#include <stdint.h>
#include "test.h"
#include "golden_io.h"

/* ---------------------------------------------------------------- known bugs */

/* Cases failing because of a bug outside tg_movement's code, with the
 * reason; they run in TEST(movement_known_bugs), isolated in a child process. */
typedef struct { const char *label, *why; } known_bug;
static const known_bug known_bugs[] = {
  { NULL, NULL },
};
static const char *known_bug_of(const char *label) {
  for (int i = 0; known_bugs[i].label; i++) if (!strcmp(known_bugs[i].label, label)) return known_bugs[i].why;
  return NULL;
}

/* ---------------------------------------------------------------- parameters */

#define MAXOUT 16
typedef int (*mv_fn)(const golden_case *c, tg_tensor **in, int nin, tg_tensor **out);

static int p_int(const golden_case *c, const char *k, int64_t d) { return (int)golden_int(c, k, d); }
static tg_shape p_shape(const golden_case *c, const char *key) {
  int64_t v[TG_MAX_DIMS];
  int n = golden_ints(c, key, v, TG_MAX_DIMS);
  tg_shape s = { n < 0 ? 0 : n, { 0 } };
  for (int i = 0; i < s.ndim; i++) s.d[i] = v[i];
  return s;
}
/* a string parameter (stored as its bytes); NULL when absent */
static const char *p_str(const golden_case *c, const char *key, char *buf, int n) {
  int64_t v[256];
  int k = golden_ints(c, key, v, 255);
  if (k < 0) return NULL;
  if (k >= n) k = n - 1;
  for (int i = 0; i < k; i++) buf[i] = (char)v[i];
  buf[k] = 0;
  return buf;
}
/* index entries: kind, start, stop, step, has_start, has_stop; kind 4 is a tensor input */
static int p_index(const golden_case *c, tg_tensor **in, tg_aindex *ix, int max) {
  int64_t v[6 * 32];
  int n = golden_ints(c, "index", v, 6 * 32) / 6;
  for (int i = 0; i < n && i < max; i++) {
    if (v[6 * i] == 4) ix[i] = TG_AT(in[v[6 * i + 1]]);
    else ix[i] = TG_AI(((tg_index){ (tg_index_kind)v[6 * i], v[6 * i + 1], v[6 * i + 2], v[6 * i + 3], v[6 * i + 4] != 0, v[6 * i + 5] != 0 }));
  }
  return n;
}

/* ---------------------------------------------------------------- ops */

#define ONE(name, expr) \
  static int op_##name(const golden_case *c, tg_tensor **in, int nin, tg_tensor **out) { \
    (void)c; (void)nin; out[0] = (expr); return out[0] ? 1 : -1; }

ONE(cat, tg_cat(in, nin, p_int(c, "axis", 0)))
ONE(stack, tg_stack(in, nin, p_int(c, "axis", 0)))
static int op_split(const golden_case *c, tg_tensor **in, int nin, tg_tensor **out) {
  int64_t s[64];
  int n = golden_ints(c, "sizes", s, 64);
  return tg_split(in[0], s, n, p_int(c, "axis", 0), out, MAXOUT);
}
static int op_split_size(const golden_case *c, tg_tensor **in, int nin, tg_tensor **out) {
  return tg_split_size(in[0], golden_int(c, "size", 1), p_int(c, "axis", 0), out, MAXOUT);
}
static int op_chunk(const golden_case *c, tg_tensor **in, int nin, tg_tensor **out) {
  return tg_chunk(in[0], p_int(c, "chunks", 1), p_int(c, "axis", 0), out, MAXOUT);
}
static int op_meshgrid(const golden_case *c, tg_tensor **in, int nin, tg_tensor **out) {
  return tg_meshgrid(in, nin, p_int(c, "xy", 0) ? "xy" : "ij", out, MAXOUT);
}
ONE(repeat, tg_repeat(in[0], p_shape(c, "repeats")))
ONE(repeat_interleave, tg_repeat_interleave(in[0], golden_int(c, "repeats", 1), p_int(c, "axis", TG_NOAXIS)))
static int op_roll(const golden_case *c, tg_tensor **in, int nin, tg_tensor **out) {
  int64_t sh[TG_MAX_DIMS], ax[TG_MAX_DIMS];
  golden_ints(c, "shifts", sh, TG_MAX_DIMS);
  int na = golden_ints(c, "axes", ax, TG_MAX_DIMS);
  tg_axes axes = TG_ALL;
  if (na >= 0) { axes.n = na; for (int i = 0; i < na; i++) axes.a[i] = (int)ax[i]; }
  out[0] = tg_roll(in[0], sh, axes);
  return out[0] ? 1 : -1;
}
ONE(unfold, tg_unfold(in[0], p_int(c, "axis", 0), golden_int(c, "size", 1), golden_int(c, "step", 1)))
ONE(unflatten, tg_unflatten(in[0], p_int(c, "axis", 0), p_shape(c, "sizes")))
static int op_rearrange(const golden_case *c, tg_tensor **in, int nin, tg_tensor **out) {
  char pat[256], sz[256];
  out[0] = tg_rearrange(in[0], p_str(c, "pattern", pat, 256), p_str(c, "sizes", sz, 256));
  return out[0] ? 1 : -1;
}
ONE(tril, tg_tril(in[0], golden_int(c, "k", 0)))
ONE(triu, tg_triu(in[0], golden_int(c, "k", 0)))
ONE(diag, tg_diag(in[0], golden_int(c, "k", 0)))
ONE(diagonal, tg_diagonal(in[0], golden_int(c, "offset", 0), p_int(c, "axis1", 0), p_int(c, "axis2", 1)))
ONE(one_hot, tg_one_hot(in[0], golden_int(c, "num_classes", -1)))
static int op_pad_mode(const golden_case *c, tg_tensor **in, int nin, tg_tensor **out) {
  int64_t p[2 * TG_MAX_DIMS];
  int n = golden_ints(c, "pads", p, 2 * TG_MAX_DIMS);
  out[0] = tg_pad_mode(in[0], p, n, (tg_pad_kind)golden_int(c, "mode", 0), golden_f64(c, "value", 0));
  return out[0] ? 1 : -1;
}
static int op_getitem_adv(const golden_case *c, tg_tensor **in, int nin, tg_tensor **out) {
  tg_aindex ix[32];
  int n = p_index(c, in, ix, 32);
  out[0] = tg_getitem_adv(in[0], ix, n);
  return out[0] ? 1 : -1;
}
/* inputs x, value, index tensors; the result is x after the write */
static int op_setitem(const golden_case *c, tg_tensor **in, int nin, tg_tensor **out) {
  tg_aindex ix[32];
  int n = p_index(c, in, ix, 32);
  out[0] = tg_setitem(in[0], ix, n, in[1]);
  return out[0] ? 1 : -1;
}
ONE(index_select, tg_index_select(in[0], p_int(c, "axis", 0), in[1]))
ONE(gather, tg_gather(in[0], p_int(c, "axis", 0), in[1]))
ONE(scatter, tg_scatter(in[0], p_int(c, "axis", 0), in[1], in[2]))
ONE(scatter_value, tg_scatter_value(in[0], p_int(c, "axis", 0), in[1], golden_f64(c, "value", 0)))
ONE(scatter_reduce, tg_scatter_reduce(in[0], p_int(c, "axis", 0), in[1], in[2], (tg_reduce_kind)golden_int(c, "reduce", 0), golden_int(c, "include_self", 1) != 0))
ONE(masked_select, tg_masked_select(in[0], in[1]))

/* ---------------------------------------------------------------- dispatch */

typedef struct { const char *name; mv_fn fn; } dispatch_entry;
#define E(n) { #n, op_##n }
static const dispatch_entry dispatch[] = {
  E(cat), E(stack), E(split), E(split_size), E(chunk), E(meshgrid),
  E(repeat), E(repeat_interleave), E(roll), E(unfold), E(unflatten), E(rearrange),
  E(tril), E(triu), E(diag), E(diagonal), E(one_hot), E(pad_mode),
  E(getitem_adv), E(setitem), E(index_select),
  E(gather), E(scatter), E(scatter_value), E(scatter_reduce), E(masked_select),
};
#undef E
#define NDISPATCH ((int)(sizeof dispatch / sizeof dispatch[0]))

static const dispatch_entry *find_op(const char *name) {
  for (int i = 0; i < NDISPATCH; i++) if (!strcmp(dispatch[i].name, name)) return &dispatch[i];
  return NULL;
}

static const char *const groups[] = { "join", "shape", "tri", "pad", "index", "gather", "backward" };
static const golden_set goldens = { "goldens/torch_movement_%s.bin", groups, (int)(sizeof groups / sizeof groups[0]) };

/* Runs one case; true when it passed. */
static bool run_case(const golden_case *c) {
  const dispatch_entry *d = find_op(c->op);
  if (!d) { test_fail(__FILE__, __LINE__, "%s: op '%s' has no dispatch entry in test_movement.c", c->label, c->op); return false; }
  int before = test_failures;
  bool backward = golden_int(c, "backward", 0) != 0;
  int64_t grad[16];
  int ngrad = backward ? golden_ints(c, "grad", grad, 16) : 0;
  if (ngrad < 0) ngrad = 0;
  int nf = c->nout - ngrad;            /* forward outputs */
  int nin = backward ? c->nin - nf : c->nin;   /* backward: one w per forward output follows the inputs */
  if (nf < 1 || nin < 0 || c->nin > 16) { test_fail(__FILE__, __LINE__, "%s: malformed case (%d inputs, %d outputs)", c->label, c->nin, c->nout); return false; }
  tg_scope_begin();
  tg_clear_error();
  tg_tensor *in[16] = { 0 }, *out[MAXOUT] = { 0 };
  bool ok = golden_inputs(c, in);
  for (int k = 0; ok && k < ngrad; k++) tg_requires_grad(in[grad[k]], true);
  int n = ok ? d->fn(c, in, nin, out) : -1;
  if (ok && n < 0) { test_fail(__FILE__, __LINE__, "%s: %s failed: %s", c->label, c->op, tg_error()); ok = false; }
  if (ok && n != nf) { test_fail(__FILE__, __LINE__, "%s: %d outputs, expected %d", c->label, n, nf); ok = false; }
  if (ok && backward) {
    tg_tensor *loss = NULL;
    for (int k = 0; k < nf; k++) {
      tg_tensor *t = tg_sum(tg_mul(out[k], in[nin + k]), TG_ALL, false);
      loss = loss ? tg_add(loss, t) : t;
    }
    if (tg_backward(loss) < 0) { test_fail(__FILE__, __LINE__, "%s: tg_backward failed: %s", c->label, tg_error()); ok = false; }
  }
  if (ok) ok = golden_check_results(c, out, nf, in, grad, ngrad);
  tg_scope_end();
  return ok && test_failures == before;
}


/* Runs goldens/torch_movement_<group>.bin: the known-bug cases when
 * known_only, the others otherwise. TG_TEST_CASE=substring runs matching
 * labels only; TG_TEST_VERBOSE prints each label. */
static void run_group(const char *group, bool known_only, int *ran) {
  golden_run_group(&goldens, group, run_case, known_bug_of, known_only, ran);
}

TEST(movement_join) { run_group("join", false, NULL); }
TEST(movement_shape) { run_group("shape", false, NULL); }
TEST(movement_tri) { run_group("tri", false, NULL); }
TEST(movement_pad) { run_group("pad", false, NULL); }
TEST(movement_index) { run_group("index", false, NULL); }
TEST(movement_gather) { run_group("gather", false, NULL); }
TEST(movement_backward) { run_group("backward", false, NULL); }

TEST(movement_known_bugs) {
  int listed = 0;
  while (known_bugs[listed].label) listed++;
  golden_run_known_bugs(&goldens, run_case, known_bug_of, listed);
}

/* Every golden op has a dispatch entry and every entry is used. */
static void count_backward(const golden_case *c, const char *path, void *ctx) {
  (void)path;
  *(int *)ctx += golden_int(c, "backward", 0) != 0;
}
TEST(movement_dispatch_covers_goldens) {
  int bw = 0;
  int total = golden_check_dispatch(&goldens, dispatch, sizeof dispatch[0], NDISPATCH, count_backward, &bw);
  CHECK_MSG(total - bw >= 100, "only %d forward cases", total - bw);
  printf("  %d golden cases (%d backward), %d dispatch entries\n", total, bw, NDISPATCH);
}

/* ---------------------------------------------------------------- helpers */

static tg_tensor *arange_f(int64_t n) { return tg_arange(0, (double)n, 1, TG_F32); }
static tg_tensor *realized(tg_tensor *t) { CHECK_OK(t); if (t) CHECK_EQ_INT(tg_realize(t), 0); return t; }
static tg_tensor *ints(const int64_t *v, int64_t n) { return tg_from_data(v, TG_SHAPE(n), TG_I64); }
/* The call failed with a message containing every string given. */
static void check_err(const void *r, const char *want1, const char *want2, int line) {
  if (r) { test_fail(__FILE__, line, "expected a failure (%s)", want1); return; }
  const char *e = tg_error();
  if (!strstr(e, want1) || (want2 && !strstr(e, want2))) test_fail(__FILE__, line, "error \"%s\" lacks \"%s\"%s%s", e, want1, want2 ? " or " : "", want2 ? want2 : "");
  tg_clear_error();
}
#define ERR(expr, w1, w2) check_err((const void *)(expr), (w1), (w2), __LINE__)
static void check_ierr(int rc, const char *want1, const char *want2, int line) {
  if (rc >= 0) { test_fail(__FILE__, line, "expected a failure (%s), got %d", want1, rc); return; }
  check_err(NULL, want1, want2, line);
}
#define IERR(expr, w1, w2) check_ierr((expr), (w1), (w2), __LINE__)

static void check_vals(tg_tensor *t, const float *want, int n, int line) {
  float got[64];
  if (!t) { test_fail(__FILE__, line, "NULL tensor: %s", tg_error()); return; }
  if (tg_numel(t) != n) { test_fail(__FILE__, line, "%lld elements, expected %d", (long long)tg_numel(t), n); return; }
  if (tg_data(tg_cast(t, TG_F32), got, sizeof got) < 0) { test_fail(__FILE__, line, "tg_data: %s", tg_error()); return; }
  for (int i = 0; i < n; i++) if (got[i] != want[i]) { test_fail(__FILE__, line, "[%d]: got %g want %g", i, got[i], want[i]); return; }
}
#define VALS(t, ...) do { const float w_[] = { __VA_ARGS__ }; check_vals((t), w_, (int)(sizeof w_ / sizeof w_[0]), __LINE__); } while (0)

/* ---------------------------------------------------------------- errors */

TEST(movement_errors_join) {
  tg_tensor *a = tg_zeros(TG_SHAPE(2, 3), TG_F32), *b = tg_zeros(TG_SHAPE(2, 4), TG_F32), *s0 = tg_scalar(1, TG_F32);
  tg_tensor *ab[2] = { a, b }, *a0[2] = { a, s0 }, *ss[2] = { s0, s0 }, *out[4];
  ERR(tg_cat(ab, 2, 0), "tg_cat", "(2,4)");
  ERR(tg_cat(a0, 2, 0), "tg_cat", "0-D");
  ERR(tg_cat(ss, 2, 0), "tg_cat", "zero-dimensional");
  ERR(tg_cat(ab, 0, 0), "tg_cat", "at least one");
  ERR(tg_cat(ab, 2, 2), "tg_cat", "axis 2");
  ERR(tg_stack(ab, 2, 0), "tg_stack", "(2,4)");
  ERR(tg_stack(ab, 1, 3), "tg_stack", "axis 3");
  int64_t bad[2] = { 1, 3 }, neg[2] = { -1, 4 };
  IERR(tg_split(a, bad, 2, 1, out, 4), "tg_split", "add up to 4");
  IERR(tg_split(a, neg, 2, 1, out, 4), "tg_split", "negative");
  IERR(tg_split(a, bad, 2, 5, out, 4), "tg_split", "axis 5");
  IERR(tg_split_size(a, 0, 1, out, 4), "tg_split_size", "positive");
  IERR(tg_split_size(a, 1, 1, out, 2), "tg_split_size", "room for 2");
  IERR(tg_chunk(a, 0, 0, out, 4), "tg_chunk", "positive");
  CHECK_EQ_INT(tg_chunk(a, 2, 1, NULL, 0), 2);   /* counting only */
  CHECK_EQ_INT(tg_split_size(tg_zeros(TG_SHAPE(7), TG_F32), 2, 0, NULL, 0), 4);
  IERR(tg_meshgrid(ab, 2, "yx", out, 4), "tg_meshgrid", "\"yx\"");
  IERR(tg_meshgrid(ab, 2, "ij", out, 4), "tg_meshgrid", "2-D");
  tg_tensor *nul[2] = { a, NULL };
  ERR(tg_cat(nul, 2, 0), "tg_cat", "NULL");
  IERR(tg_chunk(NULL, 2, 0, out, 4), "tg_chunk", "NULL");
}

TEST(movement_errors_shape) {
  tg_tensor *a = tg_zeros(TG_SHAPE(2, 3), TG_F32);
  int64_t sh[2] = { 1, 1 };
  ERR(tg_repeat(a, TG_SHAPE(2)), "tg_repeat", "1 repeats for a 2-D");
  ERR(tg_repeat(a, TG_SHAPE(2, -1)), "tg_repeat", "-1");
  ERR(tg_repeat_interleave(a, -2, 0), "tg_repeat_interleave", "-2");
  ERR(tg_repeat_interleave(a, 2, 2), "tg_repeat_interleave", "axis 2");
  ERR(tg_roll(a, sh, TG_AXES(0, 4)), "tg_roll", "axis 4");
  ERR(tg_roll(a, NULL, TG_AXES(0)), "tg_roll", "shifts");
  ERR(tg_unfold(a, 1, 4, 1), "tg_unfold", "size 4");
  ERR(tg_unfold(a, 1, 2, 0), "tg_unfold", "step");
  ERR(tg_unfold(a, 1, -1, 1), "tg_unfold", "size");
  ERR(tg_unflatten(a, 1, TG_SHAPE(2, 2)), "tg_unflatten", "multiply to 4");
  ERR(tg_unflatten(a, 1, TG_SHAPE(-1, -1)), "tg_unflatten", "-1");
  ERR(tg_unflatten(a, 1, TG_SHAPE(-1, 2)), "tg_unflatten", "infer");
  ERR(tg_rearrange(a, "a b", NULL), "tg_rearrange", "->");
  ERR(tg_rearrange(a, "a b -> a b -> a", NULL), "tg_rearrange", "exactly one");
  ERR(tg_rearrange(a, "a b -> a c", NULL), "tg_rearrange", "\"b\"");
  ERR(tg_rearrange(a, "a a -> a a", NULL), "tg_rearrange", "twice");
  ERR(tg_rearrange(a, "a (b -> a b", NULL), "tg_rearrange", "unbalanced");
  ERR(tg_rearrange(a, "a ((b)) -> a b", NULL), "tg_rearrange", "nested");
  ERR(tg_rearrange(a, "a b c -> a b c", NULL), "tg_rearrange", "3 axes");
  ERR(tg_rearrange(a, "a (b c) -> a b c", NULL), "tg_rearrange", "without their sizes");
  ERR(tg_rearrange(a, "a (b c) -> a b c", "b=2"), "tg_rearrange", "does not split");
  ERR(tg_rearrange(a, "a b -> a b", "a=3"), "tg_rearrange", "size 3");
  ERR(tg_rearrange(a, "a b -> a b", "z=3"), "tg_rearrange", "\"z\"");
  ERR(tg_rearrange(a, "a b -> a b", "a 3"), "tg_rearrange", "bad sizes");
  ERR(tg_rearrange(a, "a 2 -> a", NULL), "tg_rearrange", "numeric");
  ERR(tg_rearrange(a, "_a b -> b _a", NULL), "tg_rearrange", "invalid axis name");
  ERR(tg_rearrange(a, "(a ...) -> a ...", NULL), "tg_rearrange", "ellipsis");
  ERR(tg_rearrange(a, "a ... ... -> a", NULL), "tg_rearrange", "more than one ellipsis");
  ERR(tg_rearrange(a, "a b c ... -> a b c ...", NULL), "tg_rearrange", "at least 3");
  ERR(tg_rearrange(a, "a b -> a b!", NULL), "tg_rearrange", "'!'");
  ERR(tg_rearrange(NULL, "a -> a", NULL), "tg_rearrange", "NULL");
}

TEST(movement_errors_tri_pad) {
  tg_tensor *v = tg_zeros(TG_SHAPE(3), TG_F32), *a = tg_zeros(TG_SHAPE(1, 2, 3), TG_F32);
  ERR(tg_tril(v, 0), "tg_tril", "at least 2");
  ERR(tg_triu(v, 0), "tg_triu", "at least 2");
  ERR(tg_diag(a, 0), "tg_diag", "3-D");
  ERR(tg_diagonal(a, 0, 1, -2), "tg_diagonal", "axis 1");
  ERR(tg_diagonal(a, 0, 0, 3), "tg_diagonal", "axis 3");
  ERR(tg_one_hot(v, 3), "tg_one_hot", "integer");
  ERR(tg_one_hot(tg_zeros(TG_SHAPE(2), TG_I32), -5), "tg_one_hot", "-5");
  ERR(tg_one_hot(tg_zeros(TG_SHAPE(0), TG_I32), -1), "tg_one_hot", "empty");
  int64_t p3[3] = { 1, 1, 1 }, big[2] = { 3, 0 }, wrap[2] = { 4, 0 }, neg[2] = { -4, 0 }, p8[8] = { 0 };
  ERR(tg_pad_mode(a, p3, 3, TG_PAD_CONSTANT, 0), "tg_pad_mode", "even");
  ERR(tg_pad_mode(a, p8, 8, TG_PAD_CONSTANT, 0), "tg_pad_mode", "8 pad values");
  ERR(tg_pad_mode(a, big, 2, TG_PAD_REFLECT, 0), "tg_pad_mode", "reflect");
  ERR(tg_pad_mode(a, wrap, 2, TG_PAD_CIRCULAR, 0), "tg_pad_mode", "wraps more than once");
  ERR(tg_pad_mode(a, neg, 2, TG_PAD_CONSTANT, 0), "tg_pad_mode", "(-4, 0)");
  ERR(tg_pad_mode(a, neg, 2, TG_PAD_CIRCULAR, 0), "tg_pad_mode", "circular");
  ERR(tg_pad_mode(tg_zeros(TG_SHAPE(2, 0), TG_F32), big, 2, TG_PAD_REPLICATE, 0), "tg_pad_mode", "empty axis 1");
  ERR(tg_pad_mode(a, big, 2, (tg_pad_kind)9, 0), "tg_pad_mode", "mode 9");
}

TEST(movement_errors_index) {
  tg_tensor *a = tg_zeros(TG_SHAPE(3, 4), TG_F32);
  tg_tensor *fi = tg_zeros(TG_SHAPE(2), TG_F32), *bi = tg_zeros(TG_SHAPE(2), TG_BOOL);
  tg_tensor *i2 = tg_zeros(TG_SHAPE(2), TG_I32), *i3 = tg_zeros(TG_SHAPE(3), TG_I32);
  ERR(TG_GET_ADV(a, TG_AT(fi)), "tg_getitem_adv", "float32");
  ERR(TG_GET_ADV(a, TG_AT(bi)), "tg_getitem_adv", "bool");
  ERR(TG_GET_ADV(a, TG_AT(i2), TG_AT(i3)), "tg_getitem_adv", "(2,) and (3,)");
  ERR(TG_GET_ADV(a, TG_AT(i2), TG_AT(i2), TG_AT(i2)), "tg_getitem_adv", "3 indices for a 2-D");
  ERR(TG_GET_ADV(a, TG_AI(TG_ELLIPSIS), TG_AI(TG_ELLIPSIS)), "tg_getitem_adv", "ellipsis");
  ERR(TG_GET_ADV(tg_zeros(TG_SHAPE(0, 2), TG_F32), TG_AT(i2)), "tg_getitem_adv", "size 0");
  ERR(TG_GET_ADV(a, TG_AI(TG_I(5))), "tg_getitem", "index 5");
  ERR(TG_GET_ADV(a, TG_AT(NULL)), "tg_getitem", NULL);
  ERR(tg_index_select(a, 0, fi), "tg_index_select", "float32");
  ERR(tg_index_select(a, 0, tg_zeros(TG_SHAPE(1, 2), TG_I32)), "tg_index_select", "2-D");
  ERR(tg_index_select(a, 2, i2), "tg_index_select", "axis 2");
  tg_tensor *x = realized(tg_from_data((float[]){ 1, 2, 3 }, TG_SHAPE(3), TG_F32));
  ERR(TG_SET(x, tg_ones(TG_SHAPE(2), TG_F32), TG_AT(fi)), "tg_setitem", "float32");
  ERR(TG_SET(x, tg_ones(TG_SHAPE(2, 2), TG_F32), TG_AI(TG_SLICE(0, 2, 1))), "tg_expand", NULL);
  ERR(TG_SET(x, NULL, TG_AI(TG_I(0))), "tg_setitem", "NULL");
}

TEST(movement_errors_gather) {
  tg_tensor *a = tg_zeros(TG_SHAPE(3, 4), TG_F32);
  tg_tensor *idx = tg_zeros(TG_SHAPE(3, 2), TG_I64), *fidx = tg_zeros(TG_SHAPE(3, 2), TG_F32);
  ERR(tg_gather(a, 1, fidx), "tg_gather", "float32");
  ERR(tg_gather(a, 1, tg_zeros(TG_SHAPE(3), TG_I64)), "tg_gather", "1-D");
  ERR(tg_gather(a, 0, tg_zeros(TG_SHAPE(2, 5), TG_I64)), "tg_gather", "axis 1");
  ERR(tg_gather(a, 2, idx), "tg_gather", "axis 2");
  ERR(tg_gather(tg_zeros(TG_SHAPE(3, 0), TG_F32), 1, idx), "tg_gather", "size 0");
  tg_tensor *src = tg_ones(TG_SHAPE(3, 4), TG_F32);
  ERR(tg_scatter(a, 1, idx, tg_ones(TG_SHAPE(3, 4), TG_I32)), "tg_scatter", "int32");
  ERR(tg_scatter(a, 1, idx, tg_ones(TG_SHAPE(3, 1), TG_F32)), "tg_scatter", "(3,1)");
  ERR(tg_scatter(a, 1, tg_zeros(TG_SHAPE(4, 2), TG_I64), tg_ones(TG_SHAPE(4, 4), TG_F32)), "tg_scatter", "(4,2)");
  ERR(tg_scatter(a, 1, fidx, src), "tg_scatter", "float32");
  ERR(tg_scatter(a, 1, tg_zeros(TG_SHAPE(3), TG_I64), src), "tg_scatter", "same number of dimensions");
  ERR(tg_scatter_value(a, 3, idx, 1.0), "tg_scatter", "axis 3");
  ERR(tg_scatter_reduce(a, 1, idx, src, (tg_reduce_kind)7, true), "tg_scatter_reduce", "7");
  ERR(tg_scatter_reduce(a, 1, idx, NULL, TG_REDUCE_SUM, true), "tg_scatter_reduce", "NULL");
  ERR(tg_masked_select(a, tg_zeros(TG_SHAPE(3, 4), TG_I32)), "tg_masked_select", "bool");
  ERR(tg_masked_select(a, tg_zeros(TG_SHAPE(2, 4), TG_BOOL)), "tg_masked_select", "broadcast");
}

/* ---------------------------------------------------------------- semantics beyond the goldens */

/* Indices out of range at run time read 0, like tinygrad (torch raises). */
TEST(movement_index_out_of_range_reads_zero) {
  tg_tensor *x = tg_adds(arange_f(4), 1);
  int64_t iv[3] = { 7, -9, 1 };
  VALS(TG_GET_ADV(x, TG_AT(ints(iv, 3))), 0, 0, 2);
  int64_t gv[3] = { 5, 0, 3 };
  VALS(tg_gather(x, 0, ints(gv, 3)), 0, 1, 4);
}

/* setitem with repeated indices: the last one wins (tinygrad's rule). */
TEST(movement_setitem_duplicates_last_wins) {
  tg_tensor *x = realized(tg_zeros(TG_SHAPE(4), TG_F32));
  int64_t iv[4] = { 1, 3, 1, -3 };
  CHECK_OK(TG_SET(x, tg_from_data((float[]){ 10, 20, 30, 40 }, TG_SHAPE(4), TG_F32), TG_AT(ints(iv, 4))));
  VALS(x, 0, 40, 0, 20);
  /* scatter: the last (row-major) write along the axis wins */
  int64_t sv[3] = { 2, 2, 0 };
  VALS(tg_scatter(tg_zeros(TG_SHAPE(3), TG_F32), 0, ints(sv, 3), tg_from_data((float[]){ 5, 6, 7 }, TG_SHAPE(3), TG_F32)), 7, 0, 6);
}

/* setitem on a lazy tensor realizes it first; views of the buffer see the
 * write, and tensors computed from it before the write read the new data
 * when realized after it (tinygrad's order). */
TEST(movement_setitem_lazy_and_views) {
  tg_tensor *x = tg_adds(arange_f(6), 1);          /* lazy */
  CHECK_OK(TG_SET(x, tg_scalar(0, TG_F32), TG_AI(TG_SLICE(1, 3, 1))));
  VALS(x, 1, 0, 0, 4, 5, 6);
  tg_tensor *m = realized(tg_reshape(arange_f(6), TG_SHAPE(2, 3)));
  tg_tensor *row = TG_GET(m, TG_I(1));
  int64_t iv[1] = { 2 };
  CHECK_OK(TG_SET(m, tg_scalar(-1, TG_F32), TG_AI(TG_ALLIDX), TG_AT(ints(iv, 1))));
  VALS(m, 0, 1, -1, 3, 4, -1);
  VALS(row, 3, 4, -1);
  /* two setitems in a row, one realize */
  tg_tensor *y = realized(tg_zeros(TG_SHAPE(3), TG_I32));
  CHECK_OK(TG_SET(y, tg_scalar(5, TG_I32), TG_AI(TG_I(0))));
  CHECK_OK(TG_SET(y, tg_scalar(7, TG_I32), TG_AI(TG_I(2))));
  VALS(y, 5, 0, 7);
}

TEST(movement_one_hot_infer_and_ops_compose) {
  int64_t v[3] = { 2, 0, 4 };
  tg_tensor *oh = tg_one_hot(ints(v, 3), -1);
  CHECK_OK(oh);
  if (oh) { CHECK_EQ_INT(tg_dim(oh, 1), 5); CHECK_EQ_INT(tg_dtype_of(oh), TG_I32); }
  VALS(tg_sum(oh, TG_AXES(0), false), 1, 0, 1, 0, 1);
  /* chunk then cat gives the input back */
  tg_tensor *x = tg_reshape(arange_f(10), TG_SHAPE(2, 5)), *parts[4];
  int n = tg_chunk(x, 3, 1, parts, 4);
  CHECK_EQ_INT(n, 3);
  if (n == 3) VALS(tg_cat(parts, n, 1), 0, 1, 2, 3, 4, 5, 6, 7, 8, 9);
  /* rearrange round trip and repeat_interleave of a 0-D */
  tg_tensor *y = tg_rearrange(tg_rearrange(x, "a (b c) -> c b a", "c=1"), "c b a -> a (b c)", NULL);
  VALS(y, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9);
  VALS(tg_repeat_interleave(tg_scalar(3, TG_F32), 2, TG_NOAXIS), 3, 3);
  /* masked_select of nothing and an index_select of a 0-D */
  VALS(tg_index_select(tg_scalar(4, TG_F32), 0, tg_scalar(0, TG_I32)), 4);
}

/* ---------------------------------------------------------------- one kernel */

static void expect_one_kernel(tg_tensor *t, const char *what) {
  if (!t) { test_fail(__FILE__, __LINE__, "%s: %s", what, tg_error()); return; }
  tg_reset_counters();
  CHECK_EQ_INT(tg_realize(t), 0);
  int64_t k = tg_get_counters().kernels_run;
  CHECK_MSG(k == 1, "%s realized in %lld kernels, expected 1", what, (long long)k);
}

TEST(movement_pure_movement_is_one_kernel) {
  tg_tensor *a = realized(tg_rand(TG_SHAPE(4, 5), TG_F32)), *b = realized(tg_rand(TG_SHAPE(4, 3), TG_F32));
  tg_tensor *c = realized(tg_rand(TG_SHAPE(4, 5), TG_F32));
  tg_tensor *abc[3] = { a, b, c }, *ac[2] = { a, c };
  expect_one_kernel(tg_cat(abc, 3, 1), "cat");
  expect_one_kernel(tg_stack(ac, 2, 1), "stack");
  expect_one_kernel(tg_repeat(a, TG_SHAPE(2, 1, 3)), "repeat");
  expect_one_kernel(tg_roll(a, (int64_t[]){ 1, -2 }, TG_AXES(0, 1)), "roll");
  expect_one_kernel(tg_tril(a, 0), "tril");
  expect_one_kernel(tg_triu(a, 1), "triu");
  expect_one_kernel(tg_repeat_interleave(a, 2, 0), "repeat_interleave");
  expect_one_kernel(tg_unfold(a, 1, 2, 1), "unfold");
  expect_one_kernel(tg_diagonal(a, 1, 0, 1), "diagonal");
  expect_one_kernel(tg_diag(tg_reshape(b, TG_SHAPE(-1)), 1), "diag");
  expect_one_kernel(tg_pad_mode(a, (int64_t[]){ 2, 1, 1, 2 }, 4, TG_PAD_REFLECT, 0), "reflect pad");
  expect_one_kernel(tg_pad_mode(a, (int64_t[]){ 2, 1, 1, 2 }, 4, TG_PAD_CIRCULAR, 0), "circular pad");
  expect_one_kernel(tg_rearrange(a, "(h w) c -> c h w", "h=2"), "rearrange");
  int64_t iv[3] = { 3, 0, 1 };
  tg_tensor *idx = realized(ints(iv, 3));
  expect_one_kernel(TG_GET_ADV(a, TG_AT(idx)), "getitem with a tensor");
  expect_one_kernel(tg_gather(a, 0, realized(tg_reshape(tg_expand(tg_reshape(idx, TG_SHAPE(3, 1)), TG_SHAPE(3, 5)), TG_SHAPE(3, 5)))), "gather");
}
