/* test_nn.c: the neural-network ops of tg_nn.h against PyTorch, through the
 * goldens written by tests/gen/gen_torch_nn.py (tests/goldens/torch_nn_*.bin;
 * parameters, formats and the reasons for each tolerance are in that
 * script), plus error tests per family, a kernel-count check, and property
 * tests of the random ops (which cannot match torch value by value).
 *
 * Each golden case names an op; the dispatch table maps it to a C function
 * applying the tg op to the case's inputs with its parameters. A case whose
 * op is not in the table fails, and so does a table entry no golden uses.
 * Backward cases (param backward=1) take the op's inputs followed by w_up,
 * mark the inputs listed in `grads` as requiring grad, run tg_backward on
 * sum(out * w_up), and compare the forward output and every gradient.
 *
 * Cases failing because of a known library bug are listed in known_bugs[]
 * with the reason; they run (in a child process) in TEST(nn_known_bugs),
 * which fails while any of them still fails. */
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

#define MAXOUT 4
typedef int (*op_fn)(const golden_case *c, tg_tensor **in, int nin, tg_tensor **out);

static int one(tg_tensor *r, tg_tensor **out) { out[0] = r; return r ? 1 : -1; }

/* ---------------------------------------------------------------- ops */

static tg_conv_opts conv_opts(const golden_case *c) {
  tg_conv_opts o = { { 0 }, { 0 }, { 0 }, 0 };
  golden_ints32(c, "stride", o.stride, 3);
  golden_ints32(c, "padding", o.padding, 6);
  golden_ints32(c, "dilation", o.dilation, 3);
  o.groups = (int)golden_int(c, "groups", 1);
  return o;
}
#define CONV(n) \
  static int op_conv##n##d(const golden_case *c, tg_tensor **in, int nin, tg_tensor **out) { \
    tg_conv_opts o = conv_opts(c); \
    return one(tg_conv##n##d(in[0], in[1], golden_flag(c, "bias") ? in[2] : NULL, &o), out); \
  }
CONV(1) CONV(2) CONV(3)

static tg_conv_transpose_opts convt_opts(const golden_case *c) {
  tg_conv_transpose_opts o;
  memset(&o, 0, sizeof o);
  golden_ints32(c, "stride", o.stride, 3);
  golden_ints32(c, "padding", o.padding, 3);
  golden_ints32(c, "output_padding", o.output_padding, 3);
  golden_ints32(c, "dilation", o.dilation, 3);
  o.groups = (int)golden_int(c, "groups", 1);
  return o;
}
#define CONVT(n) \
  static int op_conv_transpose##n##d(const golden_case *c, tg_tensor **in, int nin, tg_tensor **out) { \
    tg_conv_transpose_opts o = convt_opts(c); \
    return one(tg_conv_transpose##n##d(in[0], in[1], golden_flag(c, "bias") ? in[2] : NULL, &o), out); \
  }
CONVT(1) CONVT(2) CONVT(3)

static tg_pool_opts pool_opts(const golden_case *c) {
  tg_pool_opts o;
  memset(&o, 0, sizeof o);
  golden_ints32(c, "kernel", o.kernel, 3);
  golden_ints32(c, "stride", o.stride, 3);
  golden_ints32(c, "padding", o.padding, 3);
  golden_ints32(c, "dilation", o.dilation, 3);
  o.ceil_mode = golden_flag(c, "ceil_mode");
  o.exclude_pad = golden_flag(c, "exclude_pad");
  return o;
}
static int op_avg_pool2d(const golden_case *c, tg_tensor **in, int nin, tg_tensor **out) {
  tg_pool_opts o = pool_opts(c);
  return one(tg_avg_pool2d(in[0], &o), out);
}
static int op_max_pool2d(const golden_case *c, tg_tensor **in, int nin, tg_tensor **out) {
  tg_pool_opts o = pool_opts(c);
  bool want = golden_flag(c, "indices");
  out[0] = tg_max_pool2d(in[0], &o, want ? &out[1] : NULL);
  if (!out[0] || (want && !out[1])) return -1;
  return want ? 2 : 1;
}
static int op_max_unpool2d(const golden_case *c, tg_tensor **in, int nin, tg_tensor **out) {
  tg_pool_opts o = pool_opts(c);
  int64_t os[2];
  bool has = golden_ints(c, "output_size", os, 2) == 2;
  return one(tg_max_unpool2d(in[0], in[1], &o, has ? os : NULL), out);
}
static int op_interpolate(const golden_case *c, tg_tensor **in, int nin, tg_tensor **out) {
  int64_t size[3];
  int n = golden_ints(c, "size", size, 3);
  return one(tg_interpolate(in[0], size, n, (tg_interp_mode)golden_int(c, "mode", 0), golden_flag(c, "align_corners")), out);
}
static int op_einsum(const golden_case *c, tg_tensor **in, int nin, tg_tensor **out) {
  int64_t v[64];
  int n = golden_ints(c, "eq", v, 63);
  char eq[64];
  for (int i = 0; i < n; i++) eq[i] = (char)v[i];
  eq[n < 0 ? 0 : n] = 0;
  return one(tg_einsum(eq, in, nin), out);
}
static int op_linear(const golden_case *c, tg_tensor **in, int nin, tg_tensor **out) {
  return one(tg_linear(in[0], in[1], nin > 2 ? in[2] : NULL), out);
}
static int op_layernorm(const golden_case *c, tg_tensor **in, int nin, tg_tensor **out) {
  int64_t v[TG_MAX_DIMS];
  int n = golden_ints(c, "normalized_shape", v, TG_MAX_DIMS);
  tg_shape ns = { n, { 0 } };
  for (int i = 0; i < n; i++) ns.d[i] = v[i];
  int k = 1;
  tg_tensor *w = golden_flag(c, "weight") ? in[k++] : NULL;
  tg_tensor *b = golden_flag(c, "bias") ? in[k++] : NULL;
  return one(tg_layernorm(in[0], ns, w, b, golden_f64(c, "eps", 1e-5)), out);
}
static int op_batchnorm(const golden_case *c, tg_tensor **in, int nin, tg_tensor **out) {
  int k = 1;
  tg_tensor *m = NULL, *v = NULL;
  if (golden_flag(c, "stats")) { m = in[k++]; v = in[k++]; }
  tg_tensor *w = golden_flag(c, "weight") ? in[k++] : NULL;
  tg_tensor *b = golden_flag(c, "bias") ? in[k++] : NULL;
  return one(tg_batchnorm(in[0], m, v, w, b, golden_f64(c, "eps", 1e-5)), out);
}
static int op_softmin(const golden_case *c, tg_tensor **in, int nin, tg_tensor **out) {
  return one(tg_softmin(in[0], (int)golden_int(c, "axis", -1)), out);
}
static int op_sdpa(const golden_case *c, tg_tensor **in, int nin, tg_tensor **out) {
  tg_sdpa_opts o = { 0 };
  o.is_causal = golden_flag(c, "is_causal");
  o.scale = golden_f64(c, "scale", 0);
  o.enable_gqa = golden_flag(c, "enable_gqa");
  if (golden_int(c, "mask", 0)) o.attn_mask = in[3];
  return one(tg_scaled_dot_product_attention(in[0], in[1], in[2], &o), out);
}
static int op_dropout(const golden_case *c, tg_tensor **in, int nin, tg_tensor **out) {
  return one(tg_dropout(in[0], golden_f64(c, "p", 0), golden_flag(c, "training")), out);
}
static tg_loss_opts loss_opts(const golden_case *c, tg_tensor **in) {
  tg_loss_opts o = { 0 };
  o.reduction = (tg_reduction)golden_int(c, "reduction", 0);
  o.label_smoothing = golden_f64(c, "label_smoothing", 0);
  if (golden_has(c, "ignore_index")) { o.has_ignore_index = true; o.ignore_index = golden_int(c, "ignore_index", -100); }
  int k = 2;
  if (golden_flag(c, "weight")) o.weight = in[k++];
  if (golden_flag(c, "pos_weight")) o.pos_weight = in[k++];
  return o;
}
#define LOSS(name) \
  static int op_##name(const golden_case *c, tg_tensor **in, int nin, tg_tensor **out) { \
    tg_loss_opts o = loss_opts(c, in); \
    return one(tg_##name(in[0], in[1], &o), out); \
  }
LOSS(cross_entropy) LOSS(nll_loss) LOSS(sparse_categorical_crossentropy) LOSS(binary_crossentropy) LOSS(binary_crossentropy_logits)

/* ---------------------------------------------------------------- dispatch */

typedef struct { const char *name; op_fn fn; } dispatch_entry;
#define E(n) { #n, op_##n }
static const dispatch_entry dispatch[] = {
  E(conv1d), E(conv2d), E(conv3d), E(conv_transpose1d), E(conv_transpose2d), E(conv_transpose3d),
  E(avg_pool2d), E(max_pool2d), E(max_unpool2d), E(interpolate),
  E(einsum), E(linear), E(layernorm), E(batchnorm), E(softmin), E(sdpa), E(dropout),
  E(cross_entropy), E(nll_loss), E(sparse_categorical_crossentropy), E(binary_crossentropy), E(binary_crossentropy_logits),
};
#undef E
#define NDISPATCH ((int)(sizeof dispatch / sizeof dispatch[0]))

static const dispatch_entry *find_op(const char *name) {
  for (int i = 0; i < NDISPATCH; i++) if (!strcmp(dispatch[i].name, name)) return &dispatch[i];
  return NULL;
}

static const char *const groups[] = { "conv", "pool", "functional", "loss", "backward" };
static const golden_set goldens = { "goldens/torch_nn_%s.bin", groups, (int)(sizeof groups / sizeof groups[0]) };

/* Runs one case; true when it passed. */
static bool run_case(const golden_case *c) {
  const dispatch_entry *d = find_op(c->op);
  if (!d) { test_fail(__FILE__, __LINE__, "%s: op '%s' has no dispatch entry in test_nn.c", c->label, c->op); return false; }
  int before = test_failures;
  bool backward = golden_flag(c, "backward");
  int64_t grads[16];
  int ngrad = backward ? golden_ints(c, "grads", grads, 16) : 0;
  if (ngrad < 0) ngrad = 0;
  int nf = c->nout - ngrad, nin = backward ? c->nin - 1 : c->nin;
  if (nf < 1 || nf > MAXOUT || nin < 0 || c->nin > 16 || (backward && nf != 1)) {
    test_fail(__FILE__, __LINE__, "%s: malformed case (%d inputs, %d outputs)", c->label, c->nin, c->nout);
    return false;
  }
  tg_scope_begin();
  tg_clear_error();
  tg_tensor *in[16] = { 0 }, *out[MAXOUT] = { 0 };
  bool ok = golden_inputs(c, in);
  for (int k = 0; ok && k < ngrad; k++) tg_requires_grad(in[grads[k]], true);
  int n = ok ? d->fn(c, in, nin, out) : -1;
  if (ok && n < 0) { test_fail(__FILE__, __LINE__, "%s: %s failed: %s", c->label, c->op, tg_error()); ok = false; }
  if (ok && n != nf) { test_fail(__FILE__, __LINE__, "%s: %d outputs, expected %d", c->label, n, nf); ok = false; }
  if (ok && backward && tg_backward(tg_sum(tg_mul(out[0], in[nin]), TG_ALL, false)) < 0) {
    test_fail(__FILE__, __LINE__, "%s: tg_backward failed: %s", c->label, tg_error());
    ok = false;
  }
  if (ok) ok = golden_check_results(c, out, nf, in, grads, ngrad);
  tg_scope_end();
  return ok && test_failures == before;
}


/* Runs goldens/torch_nn_<group>.bin: the known-bug cases when known_only,
 * the others otherwise. TG_TEST_CASE=substring runs matching labels only;
 * TG_TEST_VERBOSE prints each label. */
static void run_group(const char *group, bool known_only, int *ran) {
  golden_run_group(&goldens, group, run_case, known_bug_of, known_only, ran);
}

TEST(nn_golden_conv) { run_group("conv", false, NULL); }
TEST(nn_golden_pool) { run_group("pool", false, NULL); }
TEST(nn_golden_functional) { run_group("functional", false, NULL); }
TEST(nn_golden_loss) { run_group("loss", false, NULL); }
TEST(nn_golden_backward) { run_group("backward", false, NULL); }

TEST(nn_known_bugs) {
  int listed = 0;
  while (known_bugs[listed].label) listed++;
  golden_run_known_bugs(&goldens, run_case, known_bug_of, listed);
}

/* Every golden op has a dispatch entry and every entry is used. */
static void count_forward(const golden_case *c, const char *path, void *ctx) {
  (void)path;
  *(int *)ctx += !golden_flag(c, "backward");
}
TEST(nn_dispatch_covers_goldens) {
  int fwd = 0;
  int total = golden_check_dispatch(&goldens, dispatch, sizeof dispatch[0], NDISPATCH, count_forward, &fwd);
  printf("  %d golden cases (%d forward, %d backward), %d dispatch entries\n", total, fwd, total - fwd, NDISPATCH);
}

/* ---------------------------------------------------------------- errors */

static tg_tensor *zeros(tg_shape s) { return tg_zeros(s, TG_F32); }

TEST(nn_errors_conv) {
  tg_tensor *x = zeros(TG_SHAPE(1, 4, 5, 5));
  CHECK_ERR(tg_conv2d(x, zeros(TG_SHAPE(2, 3, 3, 3)), NULL, NULL), "tg_conv2d", "4 channels", "(2,3,3,3)");
  tg_conv_opts g3 = { .groups = 3 };
  CHECK_ERR(tg_conv2d(x, zeros(TG_SHAPE(6, 1, 3, 3)), NULL, &g3), "tg_conv2d", "groups 3", "4 input channels");
  tg_conv_opts g2 = { .groups = 2 };
  CHECK_ERR(tg_conv2d(x, zeros(TG_SHAPE(3, 2, 3, 3)), NULL, &g2), "groups 2", "3 output channels");
  tg_conv_opts s = { .stride = { -1, 1 } };
  CHECK_ERR(tg_conv2d(x, zeros(TG_SHAPE(2, 4, 3, 3)), NULL, &s), "stride -1");
  tg_conv_opts d = { .dilation = { 1, -2 } };
  CHECK_ERR(tg_conv2d(x, zeros(TG_SHAPE(2, 4, 3, 3)), NULL, &d), "dilation -2");
  CHECK_ERR(tg_conv2d(x, zeros(TG_SHAPE(2, 4, 6, 3)), NULL, NULL), "kernel size 6", "padded input size 5");
  tg_conv_opts crop = { .padding = { -6, 0 } };
  CHECK_ERR(tg_conv2d(x, zeros(TG_SHAPE(2, 4, 1, 1)), NULL, &crop), "padding (-6, 0)", "size 5");
  CHECK_ERR(tg_conv2d(x, zeros(TG_SHAPE(2, 4, 3)), NULL, NULL), "tg_conv2d", "4-D");
  CHECK_ERR(tg_conv2d(x, zeros(TG_SHAPE(2, 4, 3, 3)), zeros(TG_SHAPE(3)), NULL), "bias", "(3)", "(2)");
  CHECK_ERR(tg_conv2d(tg_zeros(TG_SHAPE(1, 4, 5, 5), TG_I32), zeros(TG_SHAPE(2, 4, 3, 3)), NULL, NULL), "input", "float", "int32");
  CHECK_ERR(tg_conv1d(zeros(TG_SHAPE(2, 2, 2, 5, 5)), zeros(TG_SHAPE(2, 2, 3)), NULL, NULL), "tg_conv1d", "3-D");
  CHECK_ERR(tg_conv2d(NULL, zeros(TG_SHAPE(2, 4, 3, 3)), NULL, NULL), "tg_conv2d");
  tg_conv_transpose_opts op = { .stride = { 2, 2 }, .output_padding = { 2, 0 } };
  CHECK_ERR(tg_conv_transpose2d(x, zeros(TG_SHAPE(4, 2, 3, 3)), NULL, &op), "tg_conv_transpose2d", "output_padding 2", "stride 2");
  CHECK_ERR(tg_conv_transpose2d(x, zeros(TG_SHAPE(3, 2, 3, 3)), NULL, NULL), "tg_conv_transpose2d", "4 channels", "3 input channels");
  tg_conv_transpose_opts bigpad = { .padding = { 9, 0 } };
  CHECK_ERR(tg_conv_transpose2d(x, zeros(TG_SHAPE(4, 2, 3, 3)), NULL, &bigpad), "output size", "not positive");
  tg_conv_transpose_opts gt = { .groups = 3 };
  CHECK_ERR(tg_conv_transpose2d(x, zeros(TG_SHAPE(4, 2, 3, 3)), NULL, &gt), "groups 3", "4 input channels");
}

TEST(nn_errors_pool) {
  tg_tensor *x = zeros(TG_SHAPE(1, 2, 5, 5));
  CHECK_ERR(tg_max_pool2d(x, NULL, NULL), "tg_max_pool2d", "kernel");
  tg_pool_opts k0 = { .kernel = { 0, 2 } };
  CHECK_ERR(tg_avg_pool2d(x, &k0), "tg_avg_pool2d", "kernel size 0");
  tg_pool_opts pad = { .kernel = { 2, 2 }, .padding = { 2, 0 } };
  CHECK_ERR(tg_max_pool2d(x, &pad, NULL), "padding 2", "half the kernel size 2");
  tg_pool_opts big = { .kernel = { 6, 2 } };
  CHECK_ERR(tg_max_pool2d(x, &big, NULL), "kernel 6", "larger than the padded input 5");
  tg_pool_opts dil = { .kernel = { 2, 2 }, .dilation = { 2, 2 } };
  CHECK_ERR(tg_avg_pool2d(x, &dil), "tg_avg_pool2d", "dilation 2");
  tg_pool_opts neg = { .kernel = { 2, 2 }, .stride = { -1, 1 } };
  CHECK_ERR(tg_avg_pool2d(x, &neg), "stride -1");
  tg_pool_opts ok = { .kernel = { 2, 2 } };
  CHECK_ERR(tg_max_pool2d(zeros(TG_SHAPE(5, 5)), &ok, NULL), "tg_max_pool2d", "(5,5)");
  CHECK_ERR(tg_avg_pool2d(tg_zeros(TG_SHAPE(1, 1, 4, 4), TG_I32), &ok), "float", "int32");
  tg_tensor *idx = NULL;
  tg_tensor *m = tg_max_pool2d(x, &ok, &idx);
  CHECK_OK(m); CHECK_OK(idx);
  CHECK_ERR(tg_max_unpool2d(m, tg_cast(idx, TG_F32), &ok, NULL), "tg_max_unpool2d", "int dtype");
  CHECK_ERR(tg_max_unpool2d(m, zeros(TG_SHAPE(1, 2, 3, 3)), &ok, NULL), "indices shape (1,2,3,3)", "(1,2,2,2)");
  int32_t bad[8] = { 0, 1, 2, 99, 0, 1, 2, 3 };
  tg_tensor *bi = tg_from_data(bad, TG_SHAPE(1, 2, 2, 2), TG_I32);
  CHECK_ERR(tg_max_unpool2d(m, bi, &ok, NULL), "index 99", "out of range", "4 x 4");
  int64_t sz[2] = { 3, 3 };
  CHECK_ERR(tg_interpolate(x, sz, 1, TG_INTERP_NEAREST, false), "tg_interpolate", "1 sizes");
  CHECK_ERR(tg_interpolate(x, sz, 2, TG_INTERP_LINEAR, false), "linear mode", "3-D");
  CHECK_ERR(tg_interpolate(x, sz, 2, TG_INTERP_NEAREST, true), "align_corners");
  int64_t z[2] = { 0, 3 };
  CHECK_ERR(tg_interpolate(x, z, 2, TG_INTERP_BILINEAR, false), "output size 0");
}

TEST(nn_errors_functional) {
  tg_tensor *a = zeros(TG_SHAPE(2, 3)), *b = zeros(TG_SHAPE(4, 5));
  tg_tensor *ab[2] = { a, b };
  CHECK_ERR(tg_einsum("ij,jk->ik", ab, 2), "tg_einsum", "'j'", "sizes 3 and 4");
  CHECK_ERR(tg_einsum("ij,jk->ik", ab, 1), "tg_einsum", "more terms");
  CHECK_ERR(tg_einsum("ijk,jk->ik", ab, 2), "operand 0", "2 dimensions", "name 3");
  CHECK_ERR(tg_einsum("ij->iz", ab, 1), "'z'", "does not appear");
  CHECK_ERR(tg_einsum("ij->ii", ab, 1), "'i'", "more than once");
  CHECK_ERR(tg_einsum("i#->i", ab, 1), "bad subscript character '#'");
  CHECK_ERR(tg_einsum("ii->i", ab, 1), "'i'", "sizes 2 and 3");
  tg_tensor *c13 = zeros(TG_SHAPE(1, 3));
  CHECK_ERR(tg_einsum("ii->i", &c13, 1), "repeated subscript", "sizes 1 and 3");
  CHECK_ERR(tg_linear(a, zeros(TG_SHAPE(4, 5)), NULL), "tg_linear", "3 features", "(4,5)", "expects 5");
  CHECK_ERR(tg_layernorm(a, TG_SHAPE(2), NULL, NULL, 1e-5), "tg_layernorm", "normalized_shape", "(2,3)");
  CHECK_ERR(tg_layernorm(a, TG_SHAPE(3), zeros(TG_SHAPE(2)), NULL, 1e-5), "weight (2)");
  CHECK_ERR(tg_batchnorm(zeros(TG_SHAPE(4, 3, 2)), zeros(TG_SHAPE(2)), zeros(TG_SHAPE(2)), NULL, NULL, 1e-5), "tg_batchnorm", "mean (2)", "(3)");
  CHECK_ERR(tg_batchnorm(zeros(TG_SHAPE(4, 3, 2)), zeros(TG_SHAPE(3)), NULL, NULL, NULL, 1e-5), "both mean and var");
  tg_tensor *q = zeros(TG_SHAPE(1, 4, 3, 8)), *k = zeros(TG_SHAPE(1, 3, 5, 8));
  tg_sdpa_opts gqa = { .enable_gqa = true };
  CHECK_ERR(tg_scaled_dot_product_attention(q, k, k, &gqa), "enable_gqa", "query heads 4", "key heads 3");
  CHECK_ERR(tg_scaled_dot_product_attention(q, zeros(TG_SHAPE(1, 4, 5, 7)), k, NULL), "embedding");
  tg_sdpa_opts both = { .is_causal = true, .attn_mask = zeros(TG_SHAPE(3, 5)) };
  CHECK_ERR(tg_scaled_dot_product_attention(q, q, q, &both), "is_causal and attn_mask");
  tg_sdpa_opts im = { .attn_mask = tg_zeros(TG_SHAPE(3, 3), TG_I32) };
  CHECK_ERR(tg_scaled_dot_product_attention(q, q, q, &im), "attn_mask must be bool or float");
  CHECK_ERR(tg_dropout(a, 1.5, true), "tg_dropout", "1.5");
  CHECK_ERR(tg_dropout(tg_zeros(TG_SHAPE(2), TG_I32), 0.5, true), "tg_dropout", "float");
}

TEST(nn_errors_loss) {
  tg_tensor *x = zeros(TG_SHAPE(4, 3));
  int64_t t[4] = { 0, 1, 7, 2 };
  tg_tensor *tt = tg_from_data(t, TG_SHAPE(4), TG_I64);
  CHECK_ERR(tg_cross_entropy(x, tt, NULL), "tg_cross_entropy", "target 7", "3 classes");
  CHECK_ERR(tg_nll_loss(x, tt, NULL), "tg_nll_loss", "target 7");
  t[2] = -100;   /* torch's default ignore_index: fine */
  CHECK_OK(tg_cross_entropy(x, tg_from_data(t, TG_SHAPE(4), TG_I64), NULL));
  t[2] = -1;
  CHECK_ERR(tg_cross_entropy(x, tg_from_data(t, TG_SHAPE(4), TG_I64), NULL), "target -1");
  CHECK_ERR(tg_cross_entropy(x, tg_zeros(TG_SHAPE(3), TG_I32), NULL), "target (3)", "(4,3)", "class axis 1");
  CHECK_ERR(tg_cross_entropy(x, zeros(TG_SHAPE(4, 4)), NULL), "probability target (4,4)", "(4,3)");
  CHECK_ERR(tg_cross_entropy(x, tg_zeros(TG_SHAPE(4, 3), TG_BOOL), NULL), "class indices (int) or probabilities (float)", "bool");
  tg_loss_opts w = { .weight = zeros(TG_SHAPE(4)) };
  CHECK_ERR(tg_cross_entropy(x, tg_zeros(TG_SHAPE(4), TG_I32), &w), "weight (4)", "(3)");
  tg_loss_opts ls = { .label_smoothing = 1.5 };
  CHECK_ERR(tg_cross_entropy(x, tg_zeros(TG_SHAPE(4), TG_I32), &ls), "label_smoothing 1.5");
  tg_loss_opts red = { .reduction = (tg_reduction)7 };
  CHECK_ERR(tg_cross_entropy(x, tg_zeros(TG_SHAPE(4), TG_I32), &red), "unknown reduction 7");
  tg_loss_opts ls2 = { .label_smoothing = 0.1 };
  CHECK_ERR(tg_nll_loss(x, tg_zeros(TG_SHAPE(4), TG_I32), &ls2), "tg_nll_loss", "label_smoothing");
  CHECK_ERR(tg_binary_crossentropy(x, zeros(TG_SHAPE(3, 4)), NULL), "tg_binary_crossentropy", "(3,4)", "(4,3)");
  CHECK_ERR(tg_binary_crossentropy_logits(x, tg_zeros(TG_SHAPE(4, 3), TG_I32), NULL), "target", "float");
  CHECK_ERR(tg_sparse_categorical_crossentropy(x, zeros(TG_SHAPE(4)), NULL), "tg_sparse_categorical_crossentropy", "int dtype");
}

TEST(nn_errors_random) {
  CHECK_ERR(tg_randint(TG_SHAPE(3), 5, 5, TG_I32), "tg_randint", "[5, 5)");
  CHECK_ERR(tg_randint(TG_SHAPE(3), 0, 300, TG_I8), "tg_randint", "int8");
  CHECK_ERR(tg_randint(TG_SHAPE(3), 0, 3, TG_F32), "tg_randint", "integer");
  CHECK_ERR(tg_uniform(TG_SHAPE(3), 2, 1, TG_F32), "tg_uniform", "[2, 1)");
  CHECK_ERR(tg_normal(TG_SHAPE(3), 0, -1, TG_F32), "tg_normal", "std -1");
  CHECK_ERR(tg_randperm(-1, TG_I32), "tg_randperm", "-1");
  CHECK_ERR(tg_randperm(300, TG_I8), "tg_randperm", "int8");
  float p[3] = { 0.5f, -0.1f, 0.6f };
  CHECK_ERR(tg_multinomial(tg_from_data(p, TG_SHAPE(3), TG_F32), 1, true), "tg_multinomial", "-0.1");
  p[1] = 0;
  tg_tensor *pt = tg_from_data(p, TG_SHAPE(3), TG_F32);
  CHECK_ERR(tg_multinomial(pt, 3, false), "tg_multinomial", "2 nonzero", "3 samples");
  CHECK_ERR(tg_multinomial(pt, 4, false), "cannot draw 4 samples", "3 categories");
  CHECK_ERR(tg_multinomial(pt, 0, true), "num_samples 0");
  CHECK_ERR(tg_multinomial(zeros(TG_SHAPE(2, 2, 2)), 1, true), "1-D (C) or 2-D");
  CHECK_ERR(tg_kaiming_uniform(TG_SHAPE(3), 0, TG_I32), "tg_kaiming_uniform", "float");
}

/* ---------------------------------------------------------------- kernels */

static int64_t kernels_to_realize(tg_tensor *t) {
  tg_counters a = tg_get_counters();
  if (tg_realize(t) < 0) return -1;
  return tg_get_counters().kernels_run - a.kernels_run;
}

/* A small conv2d + bias + relu forward over realized inputs is one fused
 * kernel (padding, windows and channel groups are index math); a big one
 * stores its padded input first (two kernels), so the conv's loads need no
 * bounds checks and vectorize. */
TEST(nn_conv2d_bias_relu_one_kernel) {
  tg_manual_seed(3);
  tg_tensor *x = tg_contiguous(tg_randn(TG_SHAPE(2, 4, 6, 6), TG_F32));
  tg_tensor *w = tg_contiguous(tg_randn(TG_SHAPE(6, 2, 3, 3), TG_F32));
  tg_tensor *b = tg_contiguous(tg_randn(TG_SHAPE(6), TG_F32));
  tg_tensor *in3[3] = { x, w, b };
  CHECK(tg_realize_all(in3, 3) == 0);
  tg_conv_opts o = { .stride = { 2, 1 }, .padding = { 1, 1, 2, 0 }, .groups = 2 };
  tg_tensor *y = tg_relu(tg_conv2d(x, w, b, &o));
  CHECK_OK(y);
  int64_t k = kernels_to_realize(y);
  CHECK_MSG(k == 1, "conv2d + bias + relu took %lld kernels", (long long)k);
  tg_tensor *xb = tg_contiguous(tg_randn(TG_SHAPE(2, 4, 64, 64), TG_F32));
  CHECK(tg_realize(xb) == 0);
  k = kernels_to_realize(tg_relu(tg_conv2d(xb, w, b, &o)));
  CHECK_MSG(k == 2, "a big conv2d + bias + relu took %lld kernels", (long long)k);
}

/* Kernel counts of the other families, with upper bounds that catch a
 * regression (a reduce stored and reloaded where it fuses today). */
TEST(nn_kernel_counts) {
  tg_manual_seed(4);
  tg_tensor *x = tg_contiguous(tg_randn(TG_SHAPE(2, 3, 6, 6), TG_F32));
  tg_tensor *q = tg_contiguous(tg_randn(TG_SHAPE(1, 2, 4, 8), TG_F32));
  tg_tensor *lg = tg_contiguous(tg_randn(TG_SHAPE(4, 5), TG_F32));
  int64_t tv[4] = { 0, 3, 1, 4 };
  tg_tensor *tgt = tg_from_data(tv, TG_SHAPE(4), TG_I64);
  tg_tensor *in3[3] = { x, q, lg };
  CHECK(tg_realize_all(in3, 3) == 0);
  tg_pool_opts po = { .kernel = { 3, 3 }, .stride = { 2, 2 }, .padding = { 1, 1 } };
  tg_tensor *idx = NULL;
  tg_conv_transpose_opts to = { .stride = { 2, 2 } };
  int64_t sz[2] = { 9, 9 };
  tg_sdpa_opts so = { .is_causal = true };
  struct { const char *name; tg_tensor *t; int64_t max; } cases[] = {
    { "conv_transpose2d", tg_conv_transpose2d(x, tg_ones(TG_SHAPE(3, 2, 3, 3), TG_F32), NULL, &to), 1 },
    { "avg_pool2d", tg_avg_pool2d(x, &po), 1 },
    { "max_pool2d", tg_max_pool2d(x, &po, NULL), 1 },
    { "max_pool2d indices", (tg_max_pool2d(x, &po, &idx), idx), 3 },
    { "interpolate bilinear", tg_interpolate(x, sz, 2, TG_INTERP_BILINEAR, false), 2 },
    { "layernorm", tg_layernorm(x, TG_SHAPE(6), NULL, NULL, 1e-5), 3 },
    { "batchnorm (batch stats)", tg_batchnorm(x, NULL, NULL, NULL, NULL, 1e-5), 3 },
    /* one more than the minimum: the scheduler stores a broadcast computation
     * that reads memory (here the masked scores) once, rather than
     * recomputing it for every element it is broadcast to */
    { "sdpa causal", tg_scaled_dot_product_attention(q, q, q, &so), 5 },
    { "cross_entropy", tg_cross_entropy(lg, tgt, NULL), 4 },
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    CHECK_OK(cases[i].t);
    int64_t k = kernels_to_realize(cases[i].t);
    printf("  %-26s %lld kernel(s)\n", cases[i].name, (long long)k);
    CHECK_MSG(k >= 1 && k <= cases[i].max, "%s: %lld kernels (at most %lld expected)", cases[i].name, (long long)k, (long long)cases[i].max);
  }
}

/* ---------------------------------------------------------------- random */

static float *read_f32(tg_tensor *t, int64_t n) {
  float *v = malloc(sizeof(float) * (size_t)n);
  if (tg_data(t, v, sizeof(float) * (size_t)n) < 0) { test_fail(__FILE__, __LINE__, "tg_data: %s", tg_error()); free(v); return NULL; }
  return v;
}
static int32_t *read_i32(tg_tensor *t, int64_t n) {
  int32_t *v = malloc(sizeof(int32_t) * (size_t)n);
  if (tg_data(t, v, sizeof(int32_t) * (size_t)n) < 0) { test_fail(__FILE__, __LINE__, "tg_data: %s", tg_error()); free(v); return NULL; }
  return v;
}
static void moments(const float *v, int64_t n, double *mean, double *var) {
  double s = 0, s2 = 0;
  for (int64_t i = 0; i < n; i++) { s += v[i]; s2 += (double)v[i] * v[i]; }
  *mean = s / (double)n;
  *var = s2 / (double)n - *mean * *mean;
}

TEST(nn_random_uniform_normal) {
  enum { N = 1 << 15 };
  tg_manual_seed(11);
  float *u = read_f32(tg_uniform(TG_SHAPE(N), -2, 3, TG_F32), N);
  float *z = read_f32(tg_normal(TG_SHAPE(N), 1.5, 0.5, TG_F32), N);
  if (!u || !z) { free(u); free(z); return; }
  double m, v;
  for (int i = 0; i < N; i++) CHECK(u[i] >= -2 && u[i] < 3);
  moments(u, N, &m, &v);
  /* uniform(-2, 3): mean 0.5 (se 1.44/sqrt(N) = 0.008), var 25/12 */
  CHECK_MSG(fabs(m - 0.5) < 0.04, "uniform mean %g", m);
  CHECK_MSG(fabs(v - 25.0 / 12) < 0.08, "uniform var %g", v);
  moments(z, N, &m, &v);
  CHECK_MSG(fabs(m - 1.5) < 0.01, "normal mean %g", m);
  CHECK_MSG(fabs(v - 0.25) < 0.01, "normal var %g", v);
  free(u); free(z);
}

TEST(nn_random_randint) {
  enum { N = 20000 };
  tg_manual_seed(12);
  tg_tensor *r = tg_randint(TG_SHAPE(N), -3, 4, TG_I32);
  CHECK_OK(r);
  CHECK(tg_dtype_of(r) == TG_I32);
  int32_t *v = read_i32(r, N);
  if (!v) return;
  int cnt[7] = { 0 };
  for (int i = 0; i < N; i++) {
    CHECK_MSG(v[i] >= -3 && v[i] < 4, "randint value %d", v[i]);
    if (v[i] >= -3 && v[i] < 4) cnt[v[i] + 3]++;
  }
  /* each of 7 values: N/7 = 2857, sd ~50: within 5 sd */
  for (int i = 0; i < 7; i++) CHECK_MSG(abs(cnt[i] - N / 7) < 250, "value %d drawn %d times", i - 3, cnt[i]);
  free(v);
  /* int64 with a big offset */
  int64_t big[64];
  CHECK(tg_data(tg_randint(TG_SHAPE(64), (int64_t)1 << 40, ((int64_t)1 << 40) + 10, TG_I64), big, sizeof big) == 0);
  for (int i = 0; i < 64; i++) CHECK(big[i] >= (int64_t)1 << 40 && big[i] < ((int64_t)1 << 40) + 10);
}

TEST(nn_random_randperm) {
  for (int n = 1; n <= 50; n += 7) {
    tg_tensor *p = tg_randperm(n, TG_I32);
    CHECK_OK(p);
    int32_t *v = read_i32(p, n);
    if (!v) return;
    bool seen[64] = { 0 };
    for (int i = 0; i < n; i++) {
      CHECK_MSG(v[i] >= 0 && v[i] < n && !seen[v[i]], "randperm(%d): bad or repeated %d", n, v[i]);
      if (v[i] >= 0 && v[i] < n) seen[v[i]] = true;
    }
    free(v);
  }
  /* uniformity (each draw compiles kernels, so few large ones): for a
   * uniform permutation of n, the Spearman correlation of i and p(i) has sd
   * 1/sqrt(n-1) and the number of ascents has mean (n-1)/2 and sd
   * sqrt((n+1)/12); both within 5 sd */
  tg_manual_seed(13);
  enum { NP = 1000 };
  for (int r = 0; r < 3; r++) {
    int32_t *v = read_i32(tg_randperm(NP, TG_I32), NP);
    if (!v) return;
    double sxy = 0, mean = (NP - 1) / 2.0, sxx = 0;
    int asc = 0;
    bool *seen = calloc(NP, 1);
    for (int i = 0; i < NP; i++) {
      CHECK_MSG(v[i] >= 0 && v[i] < NP && !seen[v[i]], "randperm(%d): bad or repeated %d", NP, v[i]);
      if (v[i] >= 0 && v[i] < NP) seen[v[i]] = true;
      sxy += (i - mean) * (v[i] - mean); sxx += (i - mean) * (i - mean);
      if (i && v[i] > v[i - 1]) asc++;
    }
    free(seen);
    double rho = sxy / sxx;
    CHECK_MSG(fabs(rho) < 5 / sqrt(NP - 1.0), "randperm: rank correlation %g", rho);
    CHECK_MSG(fabs(asc - (NP - 1) / 2.0) < 5 * sqrt((NP + 1) / 12.0), "randperm: %d ascents", asc);
    free(v);
  }
  tg_tensor *empty = tg_randperm(0, TG_I64);
  CHECK_OK(empty);
  CHECK(tg_numel(empty) == 0);
}

TEST(nn_random_multinomial) {
  enum { S = 4000 };
  float p[2][4] = { { 1, 2, 3, 4 }, { 0, 0, 5, 5 } };
  tg_manual_seed(14);
  tg_tensor *probs = tg_from_data(p, TG_SHAPE(2, 4), TG_F32);
  tg_tensor *r = tg_multinomial(probs, S, true);
  CHECK_OK(r);
  CHECK(tg_dtype_of(r) == TG_I32 && tg_ndim(r) == 2 && tg_dim(r, 0) == 2 && tg_dim(r, 1) == S);
  int32_t *v = read_i32(r, 2 * S);
  if (!v) return;
  for (int b = 0; b < 2; b++) {
    int cnt[4] = { 0 };
    double tot = 0;
    for (int c = 0; c < 4; c++) tot += p[b][c];
    for (int i = 0; i < S; i++) {
      int k = v[b * S + i];
      CHECK_MSG(k >= 0 && k < 4, "sample %d", k);
      if (k >= 0 && k < 4) cnt[k]++;
    }
    for (int c = 0; c < 4; c++) {
      double want = S * p[b][c] / tot, sd = sqrt(want * (1 - p[b][c] / tot)) + 1;
      CHECK_MSG(fabs(cnt[c] - want) < 5 * sd, "row %d category %d: %d draws, want ~%.0f", b, c, cnt[c], want);
    }
  }
  free(v);
  /* 1-D input gives (num_samples) */
  tg_tensor *one = tg_multinomial(tg_from_data(p[1], TG_SHAPE(4), TG_F32), 5, true);
  CHECK_OK(one);
  CHECK(tg_ndim(one) == 1 && tg_dim(one, 0) == 5);
  /* without replacement, R identical rows in one draw: distinct samples,
   * never a zero-weight category, and the first draw follows the weights */
  enum { R = 1000 };
  float *w = malloc(sizeof(float) * R * 4);
  for (int i = 0; i < R; i++) { w[4 * i] = 1; w[4 * i + 1] = 0; w[4 * i + 2] = 2; w[4 * i + 3] = 5; }
  tg_tensor *nr = tg_multinomial(tg_from_data(w, TG_SHAPE(R, 4), TG_F32), 3, false);
  free(w);
  CHECK_OK(nr);
  int32_t *s = read_i32(nr, R * 3);
  if (!s) return;
  int first[4] = { 0 };
  for (int r2 = 0; r2 < R; r2++) {
    int32_t *q = s + 3 * r2;
    CHECK_MSG(q[0] != q[1] && q[0] != q[2] && q[1] != q[2], "repeated sample %d %d %d", q[0], q[1], q[2]);
    for (int i = 0; i < 3; i++) CHECK_MSG(q[i] != 1 && q[i] >= 0 && q[i] < 4, "sample %d", q[i]);
    if (q[0] >= 0 && q[0] < 4) first[q[0]]++;
    if (test_failures > 3) break;
  }
  free(s);
  double wsum = 8, wv[4] = { 1, 0, 2, 5 };
  for (int c = 0; c < 4; c++) {
    double want = R * wv[c] / wsum, sd = sqrt(want * (1 - wv[c] / wsum)) + 1;
    CHECK_MSG(fabs(first[c] - want) < 5 * sd, "first draw %d: %d times, want ~%.0f", c, first[c], want);
  }
}

TEST(nn_random_initializers) {
  enum { O = 64, I = 32, K = 9 };
  tg_manual_seed(15);
  int64_t n = (int64_t)O * I * K;
  float *ku = read_f32(tg_kaiming_uniform(TG_SHAPE(O, I, 3, 3), sqrt(5.0), TG_F32), n);
  float *kn = read_f32(tg_kaiming_normal(TG_SHAPE(O, I, 3, 3), 0, TG_F32), n);
  float *gu = read_f32(tg_glorot_uniform(TG_SHAPE(O, I * K), TG_F32), n);
  if (!ku || !kn || !gu) { free(ku); free(kn); free(gu); return; }
  double fan_in = I * K;
  double bku = sqrt(3.0) * sqrt(2.0 / 6.0) / sqrt(fan_in);   /* a = sqrt(5) */
  double skn = sqrt(2.0) / sqrt(fan_in);
  double bgu = sqrt(6.0 / (O + I * K));
  double m, v;
  for (int64_t i = 0; i < n; i++) {
    CHECK_MSG(fabs(ku[i]) <= bku * (1 + 1e-6), "kaiming_uniform %g beyond %g", ku[i], bku);
    CHECK_MSG(fabs(gu[i]) <= bgu * (1 + 1e-6), "glorot_uniform %g beyond %g", gu[i], bgu);
    if (test_failures > 3) break;
  }
  moments(ku, n, &m, &v);
  CHECK_MSG(fabs(v / (bku * bku / 3) - 1) < 0.05, "kaiming_uniform var %g, want %g", v, bku * bku / 3);
  moments(kn, n, &m, &v);
  CHECK_MSG(fabs(m) < 0.05 * skn && fabs(v / (skn * skn) - 1) < 0.05, "kaiming_normal mean %g var %g, want var %g", m, v, skn * skn);
  moments(gu, n, &m, &v);
  CHECK_MSG(fabs(v / (bgu * bgu / 3) - 1) < 0.05, "glorot_uniform var %g, want %g", v, bgu * bgu / 3);
  free(ku); free(kn); free(gu);
}

/* The same seed gives the same draws for every random op. */
TEST(nn_random_reproducible_by_seed) {
  float pr[5] = { 1, 2, 3, 4, 5 };
  int32_t a[6][64], b[6][64];
  for (int pass = 0; pass < 2; pass++) {
    int32_t (*dst)[64] = pass ? b : a;
    tg_manual_seed(99);
    tg_scope_begin();
    tg_tensor *probs = tg_from_data(pr, TG_SHAPE(5), TG_F32);
    tg_tensor *t[6] = {
      tg_randint(TG_SHAPE(64), 0, 1000, TG_I32),
      tg_bitcast(tg_uniform(TG_SHAPE(64), -1, 1, TG_F32), TG_I32),
      tg_bitcast(tg_normal(TG_SHAPE(64), 0, 2, TG_F32), TG_I32),
      tg_randperm(64, TG_I32),
      tg_multinomial(probs, 64, true),
      tg_bitcast(tg_dropout(tg_ones(TG_SHAPE(64), TG_F32), 0.5, true), TG_I32),
    };
    for (int i = 0; i < 6; i++) { CHECK_OK(t[i]); CHECK(tg_data(t[i], dst[i], sizeof dst[i]) == 0); }
    tg_scope_end();
  }
  for (int i = 0; i < 6; i++) CHECK_MSG(!memcmp(a[i], b[i], sizeof a[i]), "random op %d differs between runs with one seed", i);
}

TEST(nn_dropout_statistics) {
  enum { N = 20000 };
  tg_manual_seed(16);
  tg_tensor *x = tg_full(TG_SHAPE(N), 2.0, TG_F32);
  float *v = read_f32(tg_dropout(x, 0.3, true), N);
  if (!v) return;
  int zeros_ = 0;
  for (int i = 0; i < N; i++) {
    if (v[i] == 0) zeros_++;
    else CHECK_MSG(fabs(v[i] - 2.0 / 0.7) < 1e-5, "kept value %g, want %g", v[i], 2.0 / 0.7);
    if (test_failures > 3) break;
  }
  /* p = 0.3: 6000 zeros, sd 65 */
  CHECK_MSG(abs(zeros_ - 6000) < 330, "%d zeros of %d", zeros_, N);
  free(v);
  float all[4];
  CHECK(tg_data(tg_dropout(tg_ones(TG_SHAPE(4), TG_F32), 1.0, true), all, sizeof all) == 0);
  for (int i = 0; i < 4; i++) CHECK(all[i] == 0);
  CHECK(tg_data(tg_dropout(tg_ones(TG_SHAPE(4), TG_F32), 0.9, false), all, sizeof all) == 0);
  for (int i = 0; i < 4; i++) CHECK(all[i] == 1);
}

/* Max pooling of ints pads with the dtype's minimum (not 0), keeps the dtype,
 * and gives first-maximum indices. */
TEST(nn_max_pool2d_int_padding) {
  int32_t x[9] = { -5, -7, -1, -9, -3, -8, -2, -6, -4 };
  tg_tensor *t = tg_from_data(x, TG_SHAPE(1, 1, 3, 3), TG_I32);
  tg_pool_opts o = { .kernel = { 2, 2 }, .stride = { 2, 2 }, .padding = { 1, 1 } };
  tg_tensor *idx = NULL;
  tg_tensor *m = tg_max_pool2d(t, &o, &idx);
  CHECK_OK(m); CHECK_OK(idx);
  if (!m || !idx) return;
  CHECK(tg_dtype_of(m) == TG_I32 && tg_dtype_of(idx) == TG_I32);
  int32_t got[4], gi[4];
  CHECK(tg_data(m, got, sizeof got) == 0);
  CHECK(tg_data(idx, gi, sizeof gi) == 0);
  /* windows (rows -1..0, 1..2) x (cols -1..0, 1..2) */
  int32_t want[4] = { -5, -1, -2, -3 }, wi[4] = { 0, 2, 6, 4 };
  for (int i = 0; i < 4; i++) { CHECK_EQ_INT(got[i], want[i]); CHECK_EQ_INT(gi[i], wi[i]); }
}

/* tg_conv infers the spatial rank from the weight: the same as tg_conv2d. */
TEST(nn_conv_generic_matches_conv2d) {
  tg_manual_seed(21);
  tg_tensor *x = tg_randn(TG_SHAPE(1, 2, 5, 5), TG_F32), *w = tg_randn(TG_SHAPE(3, 2, 3, 3), TG_F32);
  tg_conv_opts o = { .stride = { 2, 1 }, .padding = { 1, 0, 0, 1 } };
  float a[3 * 2 * 4], b[3 * 2 * 4];   /* out (1, 3, 2, 4) */
  tg_tensor *ra = tg_conv(x, w, NULL, &o), *rb = tg_conv2d(x, w, NULL, &o);
  CHECK_OK(ra); CHECK_OK(rb);
  CHECK(tg_numel(ra) == 24);
  CHECK(tg_data(ra, a, sizeof a) == 0 && tg_data(rb, b, sizeof b) == 0);
  CHECK(!memcmp(a, b, sizeof a));
}

/* Attention dropout keeps shapes and changes the result; p = 0 does not. */
TEST(nn_sdpa_dropout) {
  tg_manual_seed(22);
  tg_tensor *q = tg_contiguous(tg_randn(TG_SHAPE(2, 4, 8), TG_F32));
  CHECK(tg_realize(q) == 0);
  tg_sdpa_opts d = { .dropout_p = 0.5 };
  float a[64], b[64];
  tg_tensor *r0 = tg_scaled_dot_product_attention(q, q, q, NULL), *r1 = tg_scaled_dot_product_attention(q, q, q, &d);
  CHECK_OK(r0); CHECK_OK(r1);
  CHECK(tg_data(r0, a, sizeof a) == 0 && tg_data(r1, b, sizeof b) == 0);
  CHECK(memcmp(a, b, sizeof a) != 0);
  for (int i = 0; i < 64; i++) CHECK(isfinite(b[i]));
}

/* Naive stride-1 convolution in double, x (bs, cin, in, in), w (cout, cin,
 * k, k): with y, y[b, co, i, j] += x * w; with g (the output's gradient),
 * gx[b, ci, i+p, j+q] += g * w and gw[co, ci, p, q] += g * x. Any of y, g,
 * gx, gw may be NULL (g with gx or gw). */
static void naive_conv2d(const float *x, const float *w, int bs, int cin, int cout, int in, int k, double *y, const double *g,
                         double *gx, double *gw) {
  int o = in - k + 1;
  for (int b = 0; b < bs; b++)
    for (int co = 0; co < cout; co++)
      for (int ci = 0; ci < cin; ci++)
        for (int i = 0; i < o; i++)
          for (int j = 0; j < o; j++)
            for (int p = 0; p < k; p++)
              for (int q = 0; q < k; q++) {
                size_t xi = (((size_t)b * cin + ci) * in + i + p) * in + j + q, wi = (((size_t)co * cin + ci) * k + p) * k + q;
                size_t yi = (((size_t)b * cout + co) * o + i) * o + j;
                if (y) y[yi] += (double)x[xi] * w[wi];
                if (gx) gx[xi] += g[yi] * w[wi];
                if (gw) gw[wi] += g[yi] * x[xi];
              }
}

/* A big convolution whose output rows 16 lanes do not fill (20, 24) runs
 * channels-last with lanes along the output channels, and its gradients
 * too (the weight's with co lanes when the input has one channel): forward
 * and both gradients against naive loops in double. */
static void conv_channel_lanes_case(int bs, int cin, int cout, int in, int k) {
  int o = in - k + 1;
  size_t nx = (size_t)bs * cin * in * in, nw = (size_t)cout * cin * k * k, ny = (size_t)bs * cout * o * o;
  float *x = malloc(nx * 4), *w = malloc(nw * 4), *g = malloc(ny * 4), *y = malloc(ny * 4), *gx = malloc(nx * 4), *gw = malloc(nw * 4);
  for (size_t i = 0; i < nx; i++) x[i] = (float)((i * 7919) % 17) / 8 - 1;
  for (size_t i = 0; i < nw; i++) w[i] = (float)((i * 104729) % 13) / 16 - 0.375f;
  for (size_t i = 0; i < ny; i++) g[i] = (float)((i * 31) % 9) / 8 - 0.5f;
  tg_scope_begin();
  tg_tensor *X = tg_requires_grad(tg_from_data(x, TG_SHAPE(bs, cin, in, in), TG_F32), true);
  tg_tensor *W = tg_requires_grad(tg_from_data(w, TG_SHAPE(cout, cin, k, k), TG_F32), true);
  tg_tensor *Y = tg_conv2d(X, W, NULL, NULL);
  CHECK(tg_data(Y, y, ny * 4) == 0);
  CHECK(tg_backward(tg_sum(tg_mul(Y, tg_from_data(g, TG_SHAPE(bs, cout, o, o), TG_F32)), TG_ALL, false)) == 0);
  CHECK(tg_data(tg_grad(X), gx, nx * 4) == 0);
  CHECK(tg_data(tg_grad(W), gw, nw * 4) == 0);
  tg_scope_end();
  double *wy = calloc(ny, 8), *wgx = calloc(nx, 8), *wgw = calloc(nw, 8), *gd = malloc(ny * 8);
  for (size_t i = 0; i < ny; i++) gd[i] = g[i];
  naive_conv2d(x, w, bs, cin, cout, in, k, wy, gd, wgx, wgw);
  char what[64];
  snprintf(what, sizeof what, "conv %d->%d %dx%d k%d: y", cin, cout, in, in, k);
  for (size_t i = 0; i < ny; i++) CHECK_MSG(fabs(y[i] - wy[i]) <= 1e-4 * (1 + fabs(wy[i])), "%s[%zu] %g vs %g", what, i, y[i], wy[i]);
  for (size_t i = 0; i < nx; i++) CHECK_MSG(fabs(gx[i] - wgx[i]) <= 1e-4 * (1 + fabs(wgx[i])), "%s: dx[%zu] %g vs %g", what, i, gx[i], wgx[i]);
  for (size_t i = 0; i < nw; i++) CHECK_MSG(fabs(gw[i] - wgw[i]) <= 1e-4 * (1 + fabs(wgw[i])), "%s: dw[%zu] %g vs %g", what, i, gw[i], wgw[i]);
  free(x); free(w); free(g); free(y); free(gx); free(gw); free(wy); free(wgx); free(wgw); free(gd);
}

TEST(nn_conv_channel_lanes_and_gradients) {
  conv_channel_lanes_case(10, 16, 32, 22, 3);   /* rows of 20 */
  conv_channel_lanes_case(64, 1, 32, 28, 5);    /* one input channel: the weight gradient's lanes along co */
}

/* A training-mode batch norm over a big channels-last convolution output
 * (its per-channel 1/sqrt(var + eps) and gradient terms are computed once
 * per channel and broadcast; its elementwise results are stored
 * channels-last): loss = sum(R * bn(relu(conv(x, w)))), the gradient of x
 * against backpropagation written out in double. */
TEST(nn_batchnorm_backward_big_channels_last) {
  enum { BS = 10, CI = 16, CO = 32, IN = 32, KK = 3, O = IN - KK + 1 };
  const double eps = 1e-5;
  size_t nx = (size_t)BS * CI * IN * IN, nw = (size_t)CO * CI * KK * KK, ny = (size_t)BS * CO * O * O;
  float *x = malloc(nx * 4), *w = malloc(nw * 4), *r = malloc(ny * 4), *gx = malloc(nx * 4);
  for (size_t i = 0; i < nx; i++) x[i] = (float)((i * 7919) % 23) / 8 - 1.25f;
  for (size_t i = 0; i < nw; i++) w[i] = (float)((i * 104729) % 13) / 16 - 0.375f;
  for (size_t i = 0; i < ny; i++) r[i] = (float)((i * 31) % 11) / 8 - 0.5f;
  tg_scope_begin();
  tg_tensor *X = tg_requires_grad(tg_from_data(x, TG_SHAPE(BS, CI, IN, IN), TG_F32), true);
  tg_tensor *W = tg_from_data(w, TG_SHAPE(CO, CI, KK, KK), TG_F32);
  tg_tensor *bn = tg_batchnorm(tg_relu(tg_conv2d(X, W, NULL, NULL)), NULL, NULL, NULL, NULL, eps);
  CHECK(tg_backward(tg_sum(tg_mul(bn, tg_from_data(r, TG_SHAPE(BS, CO, O, O), TG_F32)), TG_ALL, false)) == 0);
  CHECK(tg_data(tg_grad(X), gx, nx * 4) == 0);
  tg_scope_end();
  /* by hand: y = relu(conv), per channel mean m and var v, z = (y - m) / s
   * with s = sqrt(v + eps); dz = R, dy = (dz - mean(dz) - z mean(dz z)) / s
   * where y > 0, dx = the transposed convolution of dy */
  double *y = calloc(ny, 8), *dy = calloc(ny, 8), *want = calloc(nx, 8);
  naive_conv2d(x, w, BS, CI, CO, IN, KK, y, NULL, NULL, NULL);
  for (size_t i = 0; i < ny; i++) y[i] = y[i] > 0 ? y[i] : 0;
  const double n = (double)BS * O * O;
  for (int co = 0; co < CO; co++) {
    double m = 0, v = 0, mdz = 0, mdzz = 0;
    for (int b = 0; b < BS; b++) for (int e = 0; e < O * O; e++) m += y[((size_t)b * CO + co) * O * O + e];
    m /= n;
    for (int b = 0; b < BS; b++) for (int e = 0; e < O * O; e++) { double d = y[((size_t)b * CO + co) * O * O + e] - m; v += d * d; }
    v /= n;
    double s = sqrt(v + eps);
    for (int b = 0; b < BS; b++)
      for (int e = 0; e < O * O; e++) {
        size_t at = ((size_t)b * CO + co) * O * O + e;
        mdz += r[at]; mdzz += r[at] * (y[at] - m) / s;
      }
    mdz /= n; mdzz /= n;
    for (int b = 0; b < BS; b++)
      for (int e = 0; e < O * O; e++) {
        size_t at = ((size_t)b * CO + co) * O * O + e;
        dy[at] = y[at] > 0 ? (r[at] - mdz - (y[at] - m) / s * mdzz) / s : 0;
      }
  }
  naive_conv2d(x, w, BS, CI, CO, IN, KK, NULL, dy, want, NULL);
  double worst = 0, scale = 0;
  for (size_t i = 0; i < nx; i++) { worst = fmax(worst, fabs(gx[i] - want[i])); scale = fmax(scale, fabs(want[i])); }
  CHECK_MSG(worst <= 1e-3 * scale, "dx: worst difference %g (largest value %g)", worst, scale);
  free(x); free(w); free(r); free(gx); free(y); free(dy); free(want);
}
