/* golden_io.c: the reader and comparer declared in golden_io.h. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "golden_io.h"
#include "test.h"

/* ---------------------------------------------------------------- reading */

typedef struct { const unsigned char *p; size_t n, at; bool bad; } reader;

static bool take(reader *r, void *out, size_t n) {
  if (r->bad || n > r->n - r->at) { r->bad = true; if (out && n) memset(out, 0, n); return false; }
  if (out && n) memcpy(out, r->p + r->at, n);
  r->at += n;
  return true;
}
static uint8_t rd_u8(reader *r) { uint8_t v; take(r, &v, 1); return v; }
static uint16_t rd_u16(reader *r) { uint16_t v; take(r, &v, 2); return v; }
static uint32_t rd_u32(reader *r) { uint32_t v; take(r, &v, 4); return v; }
static double rd_f64(reader *r) { double v; take(r, &v, 8); return v; }

static void rd_str(reader *r, char *out, size_t cap) {
  uint16_t n = rd_u16(r);
  size_t keep = n < cap - 1 ? n : cap - 1;
  if (r->bad || n > r->n - r->at) { r->bad = true; out[0] = 0; return; }
  memcpy(out, r->p + r->at, keep);
  out[keep] = 0;
  r->at += n;
}

static bool rd_array(reader *r, golden_array *a) {
  memset(a, 0, sizeof *a);
  uint8_t dt = rd_u8(r), nd = rd_u8(r);
  if (r->bad || dt >= TG_DTYPE_COUNT || nd > TG_MAX_DIMS) { r->bad = true; return false; }
  a->dtype = (tg_dtype)dt;
  a->ndim = nd;
  a->numel = 1;
  for (int i = 0; i < nd; i++) {
    int64_t s;
    take(r, &s, 8);
    if (s < 0 || s > ((int64_t)1 << 40)) { r->bad = true; return false; }
    a->shape[i] = s;
    a->numel *= s;
  }
  if (r->bad) return false;
  a->nbytes = (size_t)a->numel * (size_t)tg_dtype_size(a->dtype);
  a->data = malloc(a->nbytes ? a->nbytes : 1);   /* malloc: aligned for any type */
  return take(r, a->data, a->nbytes);
}

static void free_case(golden_case *c) {
  for (int i = 0; i < c->nparams; i++) { free(c->params[i].i); free(c->params[i].f); }
  for (int i = 0; i < c->nin; i++) free(c->in[i].data);
  for (int i = 0; i < c->nout; i++) free(c->out[i].data);
  free(c->params); free(c->in); free(c->out);
}

static bool rd_case(reader *r, golden_case *c) {
  memset(c, 0, sizeof *c);
  rd_str(r, c->op, sizeof c->op);
  rd_str(r, c->label, sizeof c->label);
  c->rtol = rd_f64(r);
  c->atol = rd_f64(r);
  uint32_t np_ = rd_u32(r);
  if (r->bad || np_ > 64) { r->bad = true; return false; }
  c->params = calloc(np_ ? np_ : 1, sizeof *c->params);
  for (uint32_t i = 0; i < np_ && !r->bad; i++) {
    golden_param *p = &c->params[c->nparams++];
    rd_str(r, p->key, sizeof p->key);
    p->type = (golden_param_type)rd_u8(r);
    uint32_t n = rd_u32(r);
    if (r->bad || n > 4096 || (p->type != GOLDEN_INTS && p->type != GOLDEN_FLOATS)) { r->bad = true; break; }
    p->n = (int)n;
    if (p->type == GOLDEN_INTS) { p->i = calloc(n ? n : 1, 8); take(r, p->i, 8 * (size_t)n); }
    else { p->f = calloc(n ? n : 1, 8); take(r, p->f, 8 * (size_t)n); }
  }
  uint32_t nin = rd_u32(r);
  if (r->bad || nin > 16) { r->bad = true; return false; }
  c->in = calloc(nin ? nin : 1, sizeof *c->in);
  for (uint32_t i = 0; i < nin && !r->bad; i++) { c->nin++; rd_array(r, &c->in[i]); }
  uint32_t nout = rd_u32(r);
  if (r->bad || nout > 16) { r->bad = true; return false; }
  c->out = calloc(nout ? nout : 1, sizeof *c->out);
  for (uint32_t i = 0; i < nout && !r->bad; i++) { c->nout++; rd_array(r, &c->out[i]); }
  return !r->bad;
}

golden_file *golden_load(const char *path, const char **err) {
  static _Thread_local char msg[512];
  size_t n = 0;
  unsigned char *buf = test_read_file(path, &n);
  if (!buf) {
    snprintf(msg, sizeof msg, "%s missing (run python3 tests/gen/gen_ops.py from the repository root)", path);
    if (err) *err = msg;
    return NULL;
  }
  reader r = { buf, n, 0, false };
  char magic[8];
  take(&r, magic, 8);
  if (r.bad || memcmp(magic, "TGGOLD1", 8) != 0) {
    free(buf);
    snprintf(msg, sizeof msg, "%s: not a golden file (bad magic)", path);
    if (err) *err = msg;
    return NULL;
  }
  uint32_t nc = rd_u32(&r);
  golden_file *g = calloc(1, sizeof *g);
  snprintf(g->path, sizeof g->path, "%s", path);
  g->cases = calloc(nc ? nc : 1, sizeof *g->cases);
  for (uint32_t i = 0; i < nc && !r.bad; i++) {
    if (!rd_case(&r, &g->cases[i])) { free_case(&g->cases[i]); break; }
    g->ncases++;
  }
  bool bad = r.bad || r.at != r.n;
  free(buf);
  if (bad) {
    snprintf(msg, sizeof msg, "%s: malformed or truncated after %d of %u cases", path, g->ncases, nc);
    if (err) *err = msg;
    golden_free(g);
    return NULL;
  }
  return g;
}

void golden_free(golden_file *g) {
  if (!g) return;
  for (int i = 0; i < g->ncases; i++) free_case(&g->cases[i]);
  free(g->cases);
  free(g);
}

/* ---------------------------------------------------------------- params */

const golden_param *golden_param_get(const golden_case *c, const char *key) {
  for (int i = 0; i < c->nparams; i++) if (!strcmp(c->params[i].key, key)) return &c->params[i];
  return NULL;
}
bool golden_has(const golden_case *c, const char *key) { return golden_param_get(c, key) != NULL; }

int64_t golden_int(const golden_case *c, const char *key, int64_t dflt) {
  const golden_param *p = golden_param_get(c, key);
  if (!p || p->n < 1) return dflt;
  return p->type == GOLDEN_INTS ? p->i[0] : (int64_t)p->f[0];
}

double golden_f64(const golden_case *c, const char *key, double dflt) {
  const golden_param *p = golden_param_get(c, key);
  if (!p || p->n < 1) return dflt;
  return p->type == GOLDEN_INTS ? (double)p->i[0] : p->f[0];
}

int golden_ints(const golden_case *c, const char *key, int64_t *out, int max) {
  const golden_param *p = golden_param_get(c, key);
  if (!p) return -1;
  int n = p->n < max ? p->n : max;
  for (int k = 0; k < n; k++) out[k] = p->type == GOLDEN_INTS ? p->i[k] : (int64_t)p->f[k];
  return n;
}

/* ---------------------------------------------------------------- arrays */

tg_shape golden_shape(const golden_array *a) {
  tg_shape s = { a->ndim, { 0 } };
  for (int i = 0; i < a->ndim; i++) s.d[i] = a->shape[i];
  return s;
}

tg_tensor *golden_tensor(const golden_array *a) {
  return tg_from_data(a->data, golden_shape(a), a->dtype);
}

static double load_elem(const void *base, tg_dtype dt, int64_t i) {
  const unsigned char *p = (const unsigned char *)base + (size_t)i * (size_t)tg_dtype_size(dt);
  switch (dt) {
  case TG_BOOL: return *p != 0;
  case TG_I8: { int8_t v; memcpy(&v, p, 1); return v; }
  case TG_U8: return *p;
  case TG_I16: { int16_t v; memcpy(&v, p, 2); return v; }
  case TG_U16: { uint16_t v; memcpy(&v, p, 2); return v; }
  case TG_I32: { int32_t v; memcpy(&v, p, 4); return v; }
  case TG_U32: { uint32_t v; memcpy(&v, p, 4); return v; }
  case TG_I64: { int64_t v; memcpy(&v, p, 8); return (double)v; }
  case TG_U64: { uint64_t v; memcpy(&v, p, 8); return (double)v; }
  case TG_FP8E4M3: return tg_fp8e4m3_to_f32(*p);
  case TG_FP8E5M2: return tg_fp8e5m2_to_f32(*p);
  case TG_F16: { uint16_t v; memcpy(&v, p, 2); return tg_f16_to_f32(v); }
  case TG_BF16: { uint16_t v; memcpy(&v, p, 2); return tg_bf16_to_f32(v); }
  case TG_F32: { float v; memcpy(&v, p, 4); return v; }
  case TG_F64: { double v; memcpy(&v, p, 8); return v; }
  default: return NAN;
  }
}

double golden_value(const golden_array *a, int64_t i) {
  if (i < 0 || i >= a->numel) return NAN;
  return load_elem(a->data, a->dtype, i);
}

/* The exact integer bits of element i (for int and bool dtypes). */
static uint64_t int_bits(const void *base, tg_dtype dt, int64_t i) {
  int sz = tg_dtype_size(dt);
  uint64_t v = 0;
  memcpy(&v, (const unsigned char *)base + (size_t)i * (size_t)sz, (size_t)sz);   /* little-endian host */
  if (dt == TG_BOOL) v = v != 0;
  return v;
}

static void fmt_shape(char *buf, size_t n, const int64_t *s, int nd) {
  size_t k = (size_t)snprintf(buf, n, "(");
  for (int i = 0; i < nd && k < n; i++) k += (size_t)snprintf(buf + k, n - k, i ? ",%" PRId64 : "%" PRId64, s[i]);
  if (k < n) snprintf(buf + k, n - k, ")");
}

/* Multi-index of flat element i, for messages. */
static void fmt_index(char *buf, size_t n, int64_t i, const int64_t *s, int nd) {
  int64_t idx[TG_MAX_DIMS];
  for (int d = nd - 1; d >= 0; d--) { idx[d] = s[d] ? i % s[d] : 0; i = s[d] ? i / s[d] : 0; }
  fmt_shape(buf, n, idx, nd);
  if (nd == 0) snprintf(buf, n, "()");
}

bool golden_compare(tg_tensor *t, const golden_array *want, double rtol, double atol, bool bitexact, const char *what) {
  if (!t) { test_fail(__FILE__, __LINE__, "%s: op returned NULL: %s", what, tg_error()); return false; }
  tg_shape s = tg_shape_of(t);
  bool same = s.ndim == want->ndim;
  for (int i = 0; same && i < s.ndim; i++) same = s.d[i] == want->shape[i];
  if (!same) {
    char a[256], b[256];
    fmt_shape(a, sizeof a, s.d, s.ndim > 0 ? s.ndim : 0);
    fmt_shape(b, sizeof b, want->shape, want->ndim);
    test_fail(__FILE__, __LINE__, "%s: shape %s, want %s", what, a, b);
    return false;
  }
  tg_dtype dt = tg_dtype_of(t);
  if (dt != want->dtype) {
    test_fail(__FILE__, __LINE__, "%s: dtype %s, want %s", what, tg_dtype_name(dt), tg_dtype_name(want->dtype));
    return false;
  }
  void *got = malloc(want->nbytes ? want->nbytes : 1);
  if (tg_data(t, got, want->nbytes) < 0) {
    test_fail(__FILE__, __LINE__, "%s: tg_data failed: %s", what, tg_error());
    free(got);
    return false;
  }
  int bad = 0;
  int64_t nbad = 0;
  bool isf = tg_dtype_is_float(dt);
  int sz = tg_dtype_size(dt);
  for (int64_t i = 0; i < want->numel; i++) {
    bool ok;
    if (bitexact) ok = memcmp((unsigned char *)got + i * sz, (unsigned char *)want->data + i * sz, (size_t)sz) == 0;
    else if (!isf) ok = int_bits(got, dt, i) == int_bits(want->data, dt, i);
    else {
      double g = load_elem(got, dt, i), w = load_elem(want->data, dt, i);
      if (isnan(w) || isnan(g)) ok = isnan(w) && isnan(g);
      else if (isinf(w) || isinf(g)) ok = g == w;
      else ok = g == w || fabs(g - w) <= atol + rtol * fabs(w);
    }
    if (ok) continue;
    nbad++;
    if (bad++ >= 4) continue;
    char ix[256];
    fmt_index(ix, sizeof ix, i, want->shape, want->ndim);
    if (bitexact || !isf) {
      uint64_t g = 0, w = 0;
      memcpy(&g, (unsigned char *)got + i * sz, (size_t)sz);
      memcpy(&w, (unsigned char *)want->data + i * sz, (size_t)sz);
      if (!isf && tg_dtype_is_int(dt) && !tg_dtype_is_unsigned(dt) && sz < 8) {   /* sign-extend for printing */
        uint64_t sign = (uint64_t)1 << (8 * sz - 1);
        g = (g ^ sign) - sign; w = (w ^ sign) - sign;
      }
      test_fail(__FILE__, __LINE__, "%s: %s at %s (flat %" PRId64 "): got %" PRId64 " (0x%" PRIx64 ") want %" PRId64 " (0x%" PRIx64 ")",
                what, tg_dtype_name(dt), ix, i, (int64_t)g, g & ((sz < 8 ? ((uint64_t)1 << (8 * sz)) : 0) - 1),
                (int64_t)w, w & ((sz < 8 ? ((uint64_t)1 << (8 * sz)) : 0) - 1));
    } else {
      double g = load_elem(got, dt, i), w = load_elem(want->data, dt, i);
      test_fail(__FILE__, __LINE__, "%s: %s at %s (flat %" PRId64 "): got %.9g want %.9g (diff %.3g, allowed %.3g)",
                what, tg_dtype_name(dt), ix, i, g, w, fabs(g - w), atol + rtol * fabs(w));
    }
  }
  if (nbad > 4) test_fail(__FILE__, __LINE__, "%s: %" PRId64 " of %" PRId64 " elements differ", what, nbad, want->numel);
  free(got);
  return nbad == 0;
}

bool golden_check(tg_tensor *t, const golden_array *want, const golden_case *c, const char *what) {
  return golden_compare(t, want, c->rtol, c->atol, golden_int(c, "bitexact", 0) != 0, what);
}

/* ---------------------------------------------------------------- runner */

bool golden_inputs(const golden_case *c, tg_tensor **in) {
  bool ok = true;
  for (int i = 0; i < c->nin; i++) {
    in[i] = golden_tensor(&c->in[i]);
    if (!in[i]) { test_fail(__FILE__, __LINE__, "%s: input %d: %s", c->label, i, tg_error()); ok = false; }
  }
  return ok;
}

bool golden_check_results(const golden_case *c, tg_tensor *const *out, int nf, tg_tensor *const *in, const int64_t *grad, int ngrad) {
  bool ok = true;
  for (int k = 0; ok && k < nf; k++) {
    char what[240];
    snprintf(what, sizeof what, "%s[out %d]", c->label, k);
    ok &= golden_check(out[k], &c->out[k], c, what);
  }
  for (int k = 0; ok && k < ngrad; k++) {
    char what[240];
    snprintf(what, sizeof what, "%s[grad of input %d]", c->label, (int)grad[k]);
    tg_tensor *g = tg_grad(in[grad[k]]);
    if (!g) { test_fail(__FILE__, __LINE__, "%s: no gradient", what); ok = false; break; }
    ok &= golden_check(g, &c->out[nf + k], c, what);
  }
  return ok;
}

static bool run_isolated(const golden_case *c, golden_case_fn run) {
  fflush(stdout); fflush(stderr);
  pid_t pid = fork();
  if (pid < 0) return run(c);
  if (pid == 0) _exit(run(c) ? 0 : 1);
  int st = 0;
  if (waitpid(pid, &st, 0) < 0) { test_fail(__FILE__, __LINE__, "%s: waitpid failed", c->label); return false; }
  if (WIFSIGNALED(st)) { test_fail(__FILE__, __LINE__, "%s: crashed with signal %d", c->label, WTERMSIG(st)); return false; }
  if (WEXITSTATUS(st) != 0) { test_fail(__FILE__, __LINE__, "%s: failed (in a child process; see above)", c->label); return false; }
  return true;
}

void golden_run_file(const char *path, golden_case_fn run, golden_known_fn known, bool known_only, int *ran) {
  const char *err = NULL;
  golden_file *g = golden_load(path, &err);
  if (!g) { test_fail(__FILE__, __LINE__, "%s", err); return; }
  int failed = 0, n = 0;
  const char *only = getenv("TG_TEST_CASE");
  bool verbose = getenv("TG_TEST_VERBOSE") != NULL;
  for (int i = 0; i < g->ncases; i++) {
    const golden_case *c = &g->cases[i];
    const char *why = known ? known(c->label) : NULL;
    if ((why != NULL) != known_only) continue;
    if (only && !strstr(c->label, only)) continue;
    if (verbose) { printf("  running %s\n", c->label); fflush(stdout); }
    n++;
    if (!(known_only ? run_isolated(c, run) : run(c))) {
      failed++;
      printf("  case %s (%s) failed%s%s\n", c->label, c->op, why ? ": known bug: " : "", why ? why : "");
    }
  }
  if (!known_only) printf("  %s: %d cases, %d failed\n", path, n, failed);
  if (ran) *ran += n;
  golden_free(g);
}

void golden_run_group(const golden_set *s, const char *group, golden_case_fn run, golden_known_fn known, bool known_only, int *ran) {
  char path[256];
  snprintf(path, sizeof path, s->pattern, group);
  golden_run_file(path, run, known, known_only, ran);
}

void golden_run_known_bugs(const golden_set *s, golden_case_fn run, golden_known_fn known, int listed) {
  int ran = 0;
  for (int i = 0; i < s->ngroups; i++) golden_run_group(s, s->groups[i], run, known, true, &ran);
  CHECK_MSG(ran == listed, "known_bugs[] lists %d cases but %d exist in the goldens", listed, ran);
}

static const char *entry_name(const void *table, size_t entry_size, int i) {
  return *(const char *const *)(const void *)((const char *)table + (size_t)i * entry_size);
}

int golden_check_dispatch(const golden_set *s, const void *table, size_t entry_size, int n, golden_each_fn each, void *ctx) {
  bool *used = calloc((size_t)n + 1, sizeof(bool));
  int total = 0;
  for (int gi = 0; gi < s->ngroups; gi++) {
    char path[256];
    snprintf(path, sizeof path, s->pattern, s->groups[gi]);
    const char *err = NULL;
    golden_file *g = golden_load(path, &err);
    if (!g) { test_fail(__FILE__, __LINE__, "%s", err); continue; }
    CHECK_MSG(g->ncases > 0, "%s has no cases", path);
    for (int i = 0; i < g->ncases; i++) {
      int d = 0;
      while (d < n && strcmp(entry_name(table, entry_size, d), g->cases[i].op)) d++;
      CHECK_MSG(d < n, "%s: case %s: op '%s' has no dispatch entry", path, g->cases[i].label, g->cases[i].op);
      if (d < n) used[d] = true;
      if (each) each(&g->cases[i], path, ctx);
    }
    total += g->ncases;
    golden_free(g);
  }
  for (int i = 0; i < n; i++) CHECK_MSG(used[i], "dispatch entry '%s' is used by no golden case", entry_name(table, entry_size, i));
  free(used);
  return total;
}

int golden_ints32(const golden_case *c, const char *key, int *out, int max) {
  int64_t v[32];
  int n = golden_ints(c, key, v, 32);
  for (int i = 0; i < n && i < max; i++) out[i] = (int)v[i];
  return n;
}
bool golden_flag(const golden_case *c, const char *key) { return golden_int(c, key, 0) != 0; }
