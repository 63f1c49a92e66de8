/* test_runtime.c: devices, buffers, the CPU compiler and its caches. */
#include <dirent.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "test.h"
#include "runtime/buffer.h"
#include "runtime/cache_dir.h"
#include "runtime/cpu_compiler.h"
#include "runtime/device.h"
#include "engine/program_cache.h"
#include "util/build_id.h"
#include "engine/realize.h"
#include "schedule/lowered_cache.h"
#include "schedule/schedule_memo.h"
#include "uop/uop.h"

/* ---------------------------------------------------------------- helpers */

/* An environment variable set for the length of a test, then put back. */
typedef struct { const char *name; char *old; } saved_env;

static saved_env env_set(const char *name, const char *value) {
  const char *o = getenv(name);
  saved_env s = { name, o ? strdup(o) : NULL };
  if (value) setenv(name, value, 1); else unsetenv(name);
  return s;
}
static void env_restore(saved_env *s) {
  if (s->old) setenv(s->name, s->old, 1); else unsetenv(s->name);
  free(s->old);
  s->old = NULL;
}

/* Removes a directory tree made by a test (files and one level of dirs). */
static void rm_tree(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return;
  struct dirent *e;
  char path[4096];
  while ((e = readdir(d))) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    struct stat st;
    if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode)) rm_tree(path);
    else unlink(path);
  }
  closedir(d);
  rmdir(dir);
}

/* Files in dir whose names end with ext. */
static int count_files(const char *dir, const char *ext) {
  DIR *d = opendir(dir);
  if (!d) return -1;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    size_t l = strlen(e->d_name), k = strlen(ext);
    if (l > k && !strcmp(e->d_name + l - k, ext)) n++;
  }
  closedir(d);
  return n;
}

/* A kernel source no earlier run has seen, so the caches cannot answer it:
 * out[i] = a[i] * b[i] + c, for i < vars[0]. */
static char *fma_source(const char *name, float c) {
  static int counter;
  char *s = malloc(1024);
  snprintf(s, 1024,
    "/* %ld %ld %d */\n"
    "#include <stdint.h>\n"
    "void %s(void **bufs, const int64_t *vars, int core, int ncores) {\n"
    "  float *out = bufs[0]; const float *a = bufs[1], *b = bufs[2];\n"
    "  int64_t n = vars[0], lo = n * core / ncores, hi = n * (core + 1) / ncores;\n"
    "  for (int64_t i = lo; i < hi; i++) out[i] = a[i] * b[i] + (float)%.9g;\n"
    "}\n", (long)getpid(), (long)time(NULL), __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED), name, c);
  return s;
}

/* Runs the fma kernel on n values and compares with the same loop here
 * (bit-exact: kernels are built with -ffp-contract=off). */
static bool run_fma(struct tg_device *d, tg_program *p, int n, float c) {
  tg_buffer *bo = buffer_new(d, TG_F32, n), *ba = buffer_new(d, TG_F32, n), *bb = buffer_new(d, TG_F32, n);
  float *a = malloc(sizeof(float) * (size_t)n), *b = malloc(sizeof(float) * (size_t)n);
  float *out = malloc(sizeof(float) * (size_t)n);
  for (int i = 0; i < n; i++) { a[i] = 0.1f * (float)i - 3.3f; b[i] = 1.0f / (float)(i + 3); }
  bool ok = bo && ba && bb && buffer_alloc(bo) == 0 && buffer_copyin(ba, a, sizeof(float) * (size_t)n) == 0 &&
            buffer_copyin(bb, b, sizeof(float) * (size_t)n) == 0;
  if (ok) {
    void *bufs[3] = { bo->ptr, ba->ptr, bb->ptr };
    int64_t vars[1] = { n };
    ok = d->launch(d, p, bufs, 3, vars, 1) == 0 && buffer_copyout(bo, out, sizeof(float) * (size_t)n) == 0;
  }
  for (int i = 0; ok && i < n; i++) {
    volatile float prod = a[i] * b[i];   /* rounded once, like the kernel */
    float want = prod + c;
    if (memcmp(&out[i], &want, sizeof want) != 0) {
      test_fail(__FILE__, __LINE__, "fma[%d]: got %.9g want %.9g", i, out[i], want);
      ok = false;
    }
  }
  buffer_release(bo); buffer_release(ba); buffer_release(bb);
  free(a); free(b); free(out);
  return ok;
}

/* A fresh, empty cache directory for this test (restored by cache_end). */
typedef struct { char dir[256]; saved_env env; } test_cache;
static void cache_begin(test_cache *c) {
  snprintf(c->dir, sizeof c->dir, "/tmp/tg-test-cache-XXXXXX");
  if (!mkdtemp(c->dir)) { test_fail(__FILE__, __LINE__, "mkdtemp failed"); c->dir[0] = 0; }
  c->env = env_set("TG_CACHE_DIR", c->dir);
}
static void cache_end(test_cache *c) {
  env_restore(&c->env);
  if (c->dir[0]) rm_tree(c->dir);
}

/* The compiler tg would pick (for tests that wrap it); NULL when none. */
static char *find_compiler(void) {
  static const char *const names[] = { "clang", "gcc", "cc" };
  const char *path = getenv("PATH");
  if (!path) return NULL;
  for (int i = 0; i < 3; i++) {
    const char *p = path;
    for (;;) {
      const char *e = strchr(p, ':');
      size_t len = e ? (size_t)(e - p) : strlen(p);
      char *full = malloc(len + strlen(names[i]) + 2);
      sprintf(full, "%.*s/%s", (int)len, p, names[i]);
      if (len && access(full, X_OK) == 0) return full;
      free(full);
      if (!e) break;
      p = e + 1;
    }
  }
  return NULL;
}

/* ---------------------------------------------------------------- devices */

TEST(runtime_device_lookup) {
  struct tg_device *cpu = device_get("CPU");
  CHECK_OK(cpu);
  CHECK(device_get("cpu") == cpu);
  CHECK(device_get("Cpu") == cpu);
  struct tg_device *nul = device_get("null");
  CHECK_OK(nul);
  CHECK(nul == device_get("NULL"));
  CHECK(nul != cpu);
  if (cpu) { CHECK(!strcmp(cpu->name, "CPU")); CHECK(!strcmp(cpu->renderer->name, "c")); }
  if (nul) CHECK(!strcmp(nul->name, "NULL"));
}

TEST(runtime_unknown_device) {
  tg_clear_error();
  CHECK(device_get("TPU") == NULL);
  CHECK_MSG(strstr(tg_error(), "unknown device 'TPU'") && strstr(tg_error(), "CPU"), "error: %s", tg_error());
  CHECK(device_get(NULL) == NULL);
}

TEST(runtime_null_device) {
  struct tg_device *d = device_get("NULL");
  CHECK_OK(d);
  if (!d) return;
  tg_counters before = tg_get_counters();
  tg_buffer *b = buffer_new(d, TG_F32, 1 << 30);   /* 4 GiB: nothing is really allocated */
  CHECK_OK(b);
  CHECK(buffer_alloc(b) == 0);
  CHECK(b->ptr != NULL);
  float x[4] = { 1, 2, 3, 4 };
  CHECK(buffer_copyin(b, x, sizeof x) == 0);
  CHECK(buffer_copyout(b, x, sizeof x) == 0);
  CHECK(x[3] == 4);   /* copies do nothing */
  /* Not C at all: the NULL device never runs a compiler. */
  tg_program *p = d->compile(d, "this is not C", "k");
  CHECK_OK(p);
  if (p) {
    CHECK(p->fn == NULL);
    CHECK(!strcmp(p->name, "k"));
    void *bufs[1] = { b->ptr };
    CHECK(d->launch(d, p, bufs, 1, NULL, 0) == 0);
    d->program_free(d, p);
  }
  tg_counters after = tg_get_counters();
  CHECK_EQ_INT(after.kernels_compiled, before.kernels_compiled);
  CHECK_EQ_INT(after.kernels_cached, before.kernels_cached);
  buffer_release(b);
}

/* ---------------------------------------------------------------- buffers */

TEST(runtime_buffer_roundtrip) {
  struct tg_device *d = device_get("CPU");
  tg_buffer *b = buffer_new(d, TG_F32, 16);
  CHECK_OK(b);
  if (!b) return;
  CHECK(b->ptr == NULL);   /* buffer_new does not allocate */
  CHECK_EQ_INT(b->nbytes, 64);
  CHECK_EQ_INT(b->refcnt, 1);
  CHECK(buffer_alloc(b) == 0);
  CHECK(b->ptr != NULL);
  CHECK_EQ_INT((uintptr_t)b->ptr % 64, 0);
  void *p = b->ptr;
  CHECK(buffer_alloc(b) == 0 && b->ptr == p);   /* once */
  float in[16], out[16];
  for (int i = 0; i < 16; i++) { in[i] = (float)i * 1.5f - 7; out[i] = -1; }
  CHECK(buffer_copyin(b, in, sizeof in) == 0);
  CHECK(buffer_copyout(b, out, sizeof out) == 0);
  CHECK(!memcmp(in, out, sizeof in));
  /* partial copies are fine */
  float two[2] = { 100, 200 };
  CHECK(buffer_copyin(b, two, sizeof two) == 0);
  CHECK(buffer_copyout(b, out, sizeof out) == 0);
  CHECK(out[0] == 100 && out[1] == 200 && out[2] == in[2]);

  tg_buffer *c = buffer_new(d, TG_F64, 3);
  CHECK_OK(c);
  if (c) { CHECK(c->id > b->id); CHECK_EQ_INT(c->nbytes, 24); }
  buffer_release(c);

  buffer_retain(b);
  CHECK_EQ_INT(b->refcnt, 2);
  buffer_release(b);
  CHECK_EQ_INT(b->refcnt, 1);
  buffer_release(b);
  buffer_release(NULL);
}

TEST(runtime_buffer_errors) {
  struct tg_device *d = device_get("CPU");
  tg_buffer *b = buffer_new(d, TG_I32, 4);
  CHECK_OK(b);
  if (!b) return;
  char big[64] = { 0 };
  tg_clear_error();
  CHECK(buffer_copyout(b, big, 16) == -1);   /* never allocated */
  CHECK_MSG(strstr(tg_error(), "allocated"), "error: %s", tg_error());
  tg_clear_error();
  CHECK(buffer_copyin(b, big, 17) == -1);
  CHECK_MSG(strstr(tg_error(), "17 bytes"), "error: %s", tg_error());
  CHECK(b->ptr == NULL);   /* a failed copy allocates nothing */
  CHECK(buffer_copyin(b, big, 16) == 0);
  tg_clear_error();
  CHECK(buffer_copyout(b, big, 64) == -1);
  CHECK_MSG(strstr(tg_error(), "64 bytes"), "error: %s", tg_error());
  buffer_release(b);

  CHECK(buffer_new(NULL, TG_F32, 4) == NULL);
  CHECK(buffer_new(d, TG_F32, -1) == NULL);
  CHECK(buffer_new(d, (tg_dtype)99, 4) == NULL);
  CHECK(buffer_new(d, TG_F64, INT64_MAX / 2) == NULL);
  CHECK(buffer_alloc(NULL) == -1);
}

TEST(runtime_buffer_zero_size) {
  struct tg_device *d = device_get("CPU");
  tg_buffer *b = buffer_new(d, TG_F32, 0);
  CHECK_OK(b);
  if (!b) return;
  CHECK(buffer_alloc(b) == 0);
  CHECK(b->ptr != NULL);
  CHECK(buffer_copyin(b, NULL, 0) == 0);
  CHECK(buffer_copyout(b, NULL, 0) == 0);
  buffer_release(b);
}

static void *retain_release_many(void *arg) {
  tg_buffer *b = arg;
  for (int i = 0; i < 20000; i++) { buffer_retain(b); buffer_release(b); }
  return NULL;
}

TEST(runtime_buffer_refcount_threads) {
  tg_buffer *b = buffer_new(device_get("CPU"), TG_U8, 100);
  CHECK_OK(b);
  if (!b) return;
  CHECK(buffer_alloc(b) == 0);
  pthread_t th[4];
  for (int i = 0; i < 4; i++) pthread_create(&th[i], NULL, retain_release_many, b);
  for (int i = 0; i < 4; i++) pthread_join(th[i], NULL);
  CHECK_EQ_INT(b->refcnt, 1);
  buffer_release(b);
}

TEST(runtime_buffer_uop_hooks) {
  buffer_init_hooks();
  tg_buffer *b = buffer_new(device_get("CPU"), TG_F32, 16);
  CHECK_OK(b);
  if (!b) return;
  uop_pool_push();
  uop *u = uop0(OP_BUFFER, DT_F32, arg_ptr(b));
  CHECK_EQ_INT(b->refcnt, 2);   /* the node holds the buffer */
  CHECK_EQ_INT(u->ndim, 1);
  if (u->ndim == 1) CHECK_EQ_INT(u->shape[0], 16);
  char s[128], want[128];
  uop_arg_str(u, s, sizeof s);
  snprintf(want, sizeof want, "CPU:buf#%lld float32[16]", (long long)b->id);
  CHECK_MSG(!strcmp(s, want), "describe: '%s' want '%s'", s, want);
  uop_pool_pop();
  CHECK_EQ_INT(b->refcnt, 1);   /* released with the node */
  buffer_release(b);
}

/* ---------------------------------------------------------------- CPU compiler */

TEST(runtime_cpu_compile_and_cache) {
  test_cache tc;
  cache_begin(&tc);
  saved_env nc = env_set("TG_NOCACHE", NULL);
  struct tg_device *d = device_get("CPU");
  char *src = fma_source("fma1", 0.25f);

  tg_counters c0 = tg_get_counters();
  tg_program *p = d->compile(d, src, "fma1");
  CHECK_OK(p);
  if (!p) goto done;
  CHECK(p->fn != NULL);
  CHECK(!strcmp(p->name, "fma1"));
  tg_counters c1 = tg_get_counters();
  CHECK_EQ_INT(c1.kernels_compiled, c0.kernels_compiled + 1);
  CHECK_EQ_INT(c1.kernels_cached, c0.kernels_cached);
  CHECK(run_fma(d, p, 1000, 0.25f));
  CHECK_EQ_INT(count_files(tc.dir, ".so"), 1);
  CHECK_EQ_INT(count_files(tc.dir, ".c"), 0);     /* temp files are gone */
  CHECK_EQ_INT(count_files(tc.dir, ".tmp"), 0);

  /* Again: the in-process map answers, the compiler does not run. */
  tg_program *p2 = d->compile(d, src, "fma1");
  CHECK_OK(p2);
  tg_counters c2 = tg_get_counters();
  CHECK_EQ_INT(c2.kernels_compiled, c1.kernels_compiled);
  CHECK_EQ_INT(c2.kernels_cached, c1.kernels_cached + 1);
  if (p2) { CHECK(p2->fn == p->fn); CHECK(p2->handle == p->handle); d->program_free(d, p2); }

  /* A "new process": the map is empty, the disk cache answers. */
  cpu_forget_loaded();
  tg_program *p3 = d->compile(d, src, "fma1");
  CHECK_OK(p3);
  tg_counters c3 = tg_get_counters();
  CHECK_EQ_INT(c3.kernels_compiled, c2.kernels_compiled);
  CHECK_EQ_INT(c3.kernels_cached, c2.kernels_cached + 1);
  if (p3) { CHECK(run_fma(d, p3, 37, 0.25f)); d->program_free(d, p3); }

  /* TG_NOCACHE=1 compiles anyway. */
  saved_env nc1 = env_set("TG_NOCACHE", "1");
  tg_program *p4 = d->compile(d, src, "fma1");
  CHECK_OK(p4);
  tg_counters c4 = tg_get_counters();
  CHECK_EQ_INT(c4.kernels_compiled, c3.kernels_compiled + 1);
  if (p4) { CHECK(run_fma(d, p4, 5, 0.25f)); d->program_free(d, p4); }
  env_restore(&nc1);
  CHECK_EQ_INT(count_files(tc.dir, ".so"), 1);

  /* Another source is another file. */
  char *src2 = fma_source("fma2", -2.0f);
  tg_program *q = d->compile(d, src2, "fma2");
  CHECK_OK(q);
  if (q) { CHECK(run_fma(d, q, 64, -2.0f)); d->program_free(d, q); }
  CHECK_EQ_INT(count_files(tc.dir, ".so"), 2);
  free(src2);

  /* A zero-length launch touches nothing. */
  int64_t zero = 0;
  void *none[3] = { NULL, NULL, NULL };
  CHECK(d->launch(d, p, none, 3, &zero, 1) == 0);
  d->program_free(d, p);
done:
  free(src);
  env_restore(&nc);
  cache_end(&tc);
}

/* The last file in dir whose name ends with ext (path into out), or false. */
static bool find_file(const char *dir, const char *ext, char *out, size_t n) {
  DIR *d = opendir(dir);
  if (!d) return false;
  bool found = false;
  struct dirent *e;
  while ((e = readdir(d))) {
    size_t l = strlen(e->d_name), k = strlen(ext);
    if (l > k && !strcmp(e->d_name + l - k, ext)) { snprintf(out, n, "%s/%s", dir, e->d_name); found = true; }
  }
  closedir(d);
  return found;
}

/* (exp(a) + 0.75) * 2.5 over a shape no other test uses, realized and read;
 * true when every value is right. */
static bool program_cache_graph(void) {
  float a[63], out[63];
  for (int i = 0; i < 63; i++) a[i] = (float)(i % 9) * 0.125f - 0.5f;
  tg_scope_begin();
  tg_tensor *r = tg_muls(tg_adds(tg_exp(tg_from_data(a, TG_SHAPE(7, 9), TG_F32)), 0.75), 2.5);
  bool ok = tg_data(r, out, sizeof out) == 0;
  for (int i = 0; i < 63 && ok; i++) ok = fabsf(out[i] - (expf(a[i]) + 0.75f) * 2.5f) <= 1e-5f * fabsf(out[i]);
  tg_scope_end();
  return ok;
}

/* A rendered kernel is stored by its AST, so a new process (here: the
 * in-memory programs forgotten) skips optimizing and rendering it; a damaged
 * entry is rendered again and rewritten; TG_NOCACHE=1 does not read it. */
TEST(runtime_program_cache) {
  test_cache tc;
  cache_begin(&tc);
  saved_env nc = env_set("TG_NOCACHE", NULL);
  engine_forget_programs();
  tg_counters c0 = tg_get_counters();
  CHECK(program_cache_graph());
  tg_counters c1 = tg_get_counters();
  CHECK_EQ_INT(c1.kernels_rendered - c0.kernels_rendered, 1);
  CHECK_EQ_INT(c1.programs_cached - c0.programs_cached, 0);
  CHECK_EQ_INT(count_files(tc.dir, ".prog"), 1);

  engine_forget_programs();
  CHECK(program_cache_graph());
  tg_counters c2 = tg_get_counters();
  CHECK_EQ_INT(c2.kernels_rendered - c1.kernels_rendered, 0);
  CHECK_EQ_INT(c2.programs_cached - c1.programs_cached, 1);
  CHECK_EQ_INT(c2.kernels_cached - c1.kernels_cached, 1);   /* the same source: the compile cache answers */

  /* cut in half: not an entry, so rendered anew (and the file made whole) */
  char path[512];
  CHECK(find_file(tc.dir, ".prog", path, sizeof path));
  struct stat st;
  CHECK(stat(path, &st) == 0);
  CHECK(truncate(path, st.st_size / 2) == 0);
  engine_forget_programs();
  CHECK(program_cache_graph());
  tg_counters c3 = tg_get_counters();
  CHECK_EQ_INT(c3.kernels_rendered - c2.kernels_rendered, 1);
  CHECK_EQ_INT(c3.programs_cached - c2.programs_cached, 0);
  struct stat st2;
  CHECK(stat(path, &st2) == 0 && st2.st_size == st.st_size);

  /* another opts setting is another entry */
  saved_env no = env_set("NOOPT", "1");
  engine_forget_programs();
  CHECK(program_cache_graph());
  env_restore(&no);
  tg_counters c4 = tg_get_counters();
  CHECK_EQ_INT(c4.kernels_rendered - c3.kernels_rendered, 1);
  CHECK_EQ_INT(count_files(tc.dir, ".prog"), 2);

  saved_env nc1 = env_set("TG_NOCACHE", "1");
  engine_forget_programs();
  CHECK(program_cache_graph());
  env_restore(&nc1);
  tg_counters c5 = tg_get_counters();
  CHECK_EQ_INT(c5.kernels_rendered - c4.kernels_rendered, 1);
  CHECK_EQ_INT(c5.programs_cached - c4.programs_cached, 0);
  CHECK(strlen(tg_build_identity()) > 8);
  env_restore(&nc);
  engine_forget_programs();   /* nothing cached here outlives the directory */
  cache_end(&tc);
}

/* Lowered kernels are kept on disk by their structure: a new process (the
 * in-memory maps emptied) reads them back and computes the same values; a
 * damaged entry fails its hash and is lowered anew. */
TEST(runtime_lowered_cache) {
  test_cache tc;
  cache_begin(&tc);
  saved_env nc = env_set("TG_NOCACHE", NULL);
  engine_forget_programs();
  lowered_cache_forget();
  CHECK(program_cache_graph());
  int nlow = count_files(tc.dir, ".low");
  CHECK_MSG(nlow >= 1, "%d lowered kernels stored", nlow);
  engine_forget_programs();
  lowered_cache_forget();
  CHECK(program_cache_graph());
  CHECK_EQ_INT(count_files(tc.dir, ".low"), nlow);
  char path[512];
  CHECK(find_file(tc.dir, ".low", path, sizeof path));
  FILE *f = fopen(path, "r+b");
  CHECK(f != NULL);
  if (f) {
    fseek(f, -3, SEEK_END);
    fputc('#', f);
    fclose(f);
  }
  engine_forget_programs();
  lowered_cache_forget();
  CHECK(program_cache_graph());
  env_restore(&nc);
  engine_forget_programs();
  lowered_cache_forget();
  cache_end(&tc);
}

/* ---- whole schedules by structure (schedule/schedule_memo.h) */

/* A layer as a function: relu(x @ w + b), then x is updated in place
 * (x += 1, an assign), and the function's output is summed over a slice
 * of its rows. Every call builds it over new buffers; out gets the sums
 * (rows 1..2 of relu(x @ w + b) for 3x4 x, 4x5 w), checked by C loops. */
static int memo_layer(void *ctx, tg_tensor *const *in, int nin, tg_tensor **out, int nout) {
  (void)ctx; (void)nin; (void)nout;
  out[0] = tg_relu(tg_add(tg_matmul(in[0], in[1]), in[2]));
  return out[0] ? 0 : -1;
}
static bool memo_graph(tg_function *fn, float seed, int *hits) {
  float x[12], w[20], b[5], got[5], x_after[12];
  for (int i = 0; i < 12; i++) x[i] = seed + (float)(i % 5) * 0.25f - 0.5f;
  for (int i = 0; i < 20; i++) w[i] = (float)(i % 7) * 0.125f - 0.375f;
  for (int i = 0; i < 5; i++) b[i] = 0.0625f * (float)i - seed;
  int64_t h0 = schedule_memo_hits();
  tg_scope_begin();
  tg_tensor *xt = tg_from_data(x, TG_SHAPE(3, 4), TG_F32);
  tg_tensor *in[3] = { xt, tg_from_data(w, TG_SHAPE(4, 5), TG_F32), tg_from_data(b, TG_SHAPE(5), TG_F32) }, *y = NULL;
  bool ok = tg_realize(xt) == 0 && tg_function_call(fn, in, &y) == 0;
  tg_tensor *s = ok ? tg_sum(tg_shrink(y, (int64_t[]){ 1, 0 }, (int64_t[]){ 3, 5 }), TG_AXES(0), false) : NULL;
  ok = s && tg_assign(xt, tg_adds(xt, 1.0)) != NULL;
  tg_tensor *all[2] = { s, xt };
  ok = ok && tg_realize_all(all, 2) == 0 && tg_data(s, got, sizeof got) == 0 && tg_data(xt, x_after, sizeof x_after) == 0;
  tg_scope_end();
  for (int j = 0; j < 5 && ok; j++) {
    float want = 0;
    for (int r = 1; r < 3; r++) {
      float v = b[j];
      for (int k = 0; k < 4; k++) v += x[r * 4 + k] * w[k * 5 + j];
      want += v > 0 ? v : 0;
    }
    ok = fabsf(got[j] - want) <= 1e-5f;
  }
  for (int i = 0; i < 12 && ok; i++) ok = x_after[i] == x[i] + 1.0f;
  *hits = (int)(schedule_memo_hits() - h0);
  return ok;
}

/* The same structure over other buffers is one schedule: found in memory
 * the second time, on disk by a new process (here: memory forgotten), and
 * scheduled anew when the file is damaged or TG_NO_SCHEDULE_CACHE is set;
 * the values are right every time. */
TEST(runtime_schedule_memo) {
  test_cache tc;
  cache_begin(&tc);
  saved_env nc = env_set("TG_NOCACHE", NULL), nm = env_set("TG_NO_SCHEDULE_CACHE", NULL);
  schedule_memo_forget();
  tg_function *fn = tg_function_new("memo_layer", memo_layer, NULL, 3, 1);
  int hits = 0;
  CHECK(memo_graph(fn, 0.0f, &hits));
  CHECK_EQ_INT(hits, 0);
  int files = count_files(tc.dir, ".sched");
  CHECK_MSG(files >= 1, "%d schedules stored", files);
  /* (each found schedule is also made anew and compared: a difference aborts) */
  saved_env chk = env_set("TG_SCHEDULE_CACHE_CHECK", "1");
  CHECK(memo_graph(fn, 1.0f, &hits));
  CHECK_MSG(hits >= 1, "%d hits the second time", hits);
  CHECK_EQ_INT(count_files(tc.dir, ".sched"), files);
  schedule_memo_forget();
  CHECK(memo_graph(fn, 2.0f, &hits));
  CHECK_MSG(hits >= 1, "%d hits from disk", hits);
  env_restore(&chk);
  /* damaged entries are not used */
  DIR *d = opendir(tc.dir);
  struct dirent *e;
  while (d && (e = readdir(d))) {
    size_t n = strlen(e->d_name);
    if (n < 6 || strcmp(e->d_name + n - 6, ".sched")) continue;
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", tc.dir, e->d_name);
    FILE *f = fopen(path, "r+b");
    if (f) { fseek(f, -3, SEEK_END); fputc('#', f); fclose(f); }
  }
  if (d) closedir(d);
  schedule_memo_forget();
  CHECK(memo_graph(fn, 3.0f, &hits));
  CHECK_EQ_INT(hits, 0);
  saved_env off = env_set("TG_NO_SCHEDULE_CACHE", "1");
  CHECK(memo_graph(fn, 4.0f, &hits));
  CHECK_EQ_INT(hits, 0);
  env_restore(&off);
  tg_function_free(fn);
  env_restore(&nm);
  env_restore(&nc);
  schedule_memo_forget();
  engine_forget_programs();
  lowered_cache_forget();
  cache_end(&tc);
}

TEST(runtime_cpu_compile_error) {
  test_cache tc;
  cache_begin(&tc);
  struct tg_device *d = device_get("CPU");
  tg_counters c0 = tg_get_counters();
  tg_clear_error();
  tg_program *p = d->compile(d, "void broken_kernel(void **bufs) { int x = ; }\n", "broken_kernel");
  CHECK(p == NULL);
  const char *e = tg_error();
  CHECK_MSG(strstr(e, "compiling kernel 'broken_kernel' failed"), "error: %s", e);
  CHECK_MSG(strstr(e, "error"), "no compiler output in: %s", e);
  tg_counters c1 = tg_get_counters();
  CHECK_EQ_INT(c1.kernels_compiled + c1.kernels_cached, c0.kernels_compiled + c0.kernels_cached);
  CHECK_EQ_INT(count_files(tc.dir, ".so"), 0);
  CHECK_EQ_INT(count_files(tc.dir, ".c"), 0);
  CHECK_EQ_INT(count_files(tc.dir, ".tmp"), 0);

  /* compiles, but has no function of that name */
  char *src = fma_source("present", 1.0f);
  tg_clear_error();
  CHECK(d->compile(d, src, "absent") == NULL);
  CHECK_MSG(strstr(tg_error(), "'absent' not found"), "error: %s", tg_error());
  free(src);

  CHECK(d->compile(d, NULL, "x") == NULL);
  CHECK(d->compile(d, "int x;", NULL) == NULL);
  cache_end(&tc);
}

TEST(runtime_cpu_missing_compiler) {
  test_cache tc;
  cache_begin(&tc);
  struct tg_device *d = device_get("CPU");
  char *src = fma_source("nocc", 1.0f);
  saved_env cc = env_set("CC", "/nonexistent/compiler");
  tg_clear_error();
  tg_program *p = d->compile(d, src, "nocc");
  CHECK(p == NULL);
  CHECK_MSG(strstr(tg_error(), "/nonexistent/compiler") && strstr(tg_error(), "CC"), "error: %s", tg_error());
  env_restore(&cc);
  /* and with the compiler back, the same source compiles */
  p = d->compile(d, src, "nocc");
  CHECK_OK(p);
  if (p) d->program_free(d, p);

  /* No compiler on PATH at all. */
  saved_env cc2 = env_set("CC", NULL), path = env_set("PATH", "/nonexistent-dir");
  char *src2 = fma_source("nocc2", 1.0f);
  tg_clear_error();
  CHECK(d->compile(d, src2, "nocc2") == NULL);
  CHECK_MSG(strstr(tg_error(), "no C compiler found (tried clang, gcc, cc); set CC"), "error: %s", tg_error());
  env_restore(&path);
  env_restore(&cc2);
  free(src2);
  free(src);
  cache_end(&tc);
}

/* $CC may be a path with spaces, or words ("env cc"); no shell runs it. */
TEST(runtime_cpu_compiler_path_with_spaces) {
  char *real = find_compiler();
  if (!real) SKIP("no C compiler on PATH");
  test_cache tc;
  cache_begin(&tc);
  char dir[512], link[600];
  snprintf(dir, sizeof dir, "%s/my tools", tc.dir);
  mkdir(dir, 0755);
  /* keep the driver's name: clang decides its mode by argv[0] */
  const char *base = strrchr(real, '/') + 1;
  snprintf(link, sizeof link, "%s/%s", dir, base);
  CHECK(symlink(real, link) == 0);
  struct tg_device *d = device_get("CPU");
  saved_env cc = env_set("CC", link);
  char *src = fma_source("spaced", 3.0f);
  tg_program *p = d->compile(d, src, "spaced");
  CHECK_OK(p);
  if (p) { CHECK(run_fma(d, p, 10, 3.0f)); d->program_free(d, p); }
  env_restore(&cc);

  char words[700];
  snprintf(words, sizeof words, "/usr/bin/env %s", real);
  if (access("/usr/bin/env", X_OK) == 0) {
    cc = env_set("CC", words);
    tg_program *q = d->compile(d, src, "spaced");
    CHECK_OK(q);
    if (q) { CHECK(run_fma(d, q, 10, 3.0f)); d->program_free(d, q); }
    env_restore(&cc);
  }
  free(src);
  free(real);
  cache_end(&tc);
}

TEST(runtime_cpu_cache_dir_fallback) {
  struct tg_device *d = device_get("CPU");
  /* cannot be created: a path under a file */
  saved_env e = env_set("TG_CACHE_DIR", "/dev/null/tg-cache");
  char *src = fma_source("fallback", 0.5f);
  tg_program *p = d->compile(d, src, "fallback");
  CHECK_OK(p);
  if (p) { CHECK(run_fma(d, p, 20, 0.5f)); d->program_free(d, p); }
  char *dir = cache_dir();
  CHECK_OK(dir);
  if (dir) {
    CHECK_MSG(strncmp(dir, "/dev/null", 9) != 0, "dir %s", dir);
    CHECK_EQ_INT(count_files(dir, ".so"), 1);
    rm_tree(dir);   /* the next fallback makes a new one */
  }
  free(dir);
  free(src);
  env_restore(&e);
}

TEST(runtime_cpu_cache_dir_with_spaces) {
  test_cache tc;
  cache_begin(&tc);
  char dir[512];
  snprintf(dir, sizeof dir, "%s/a dir/with spaces", tc.dir);   /* made by the cache (mkdir -p) */
  saved_env e = env_set("TG_CACHE_DIR", dir);
  struct tg_device *d = device_get("CPU");
  char *src = fma_source("spacedir", 1.5f);
  tg_program *p = d->compile(d, src, "spacedir");
  CHECK_OK(p);
  if (p) { CHECK(run_fma(d, p, 9, 1.5f)); d->program_free(d, p); }
  CHECK_EQ_INT(count_files(dir, ".so"), 1);
  char *path = compile_cache_path("x", "cc", "-O2", ".so");
  CHECK_OK(path);
  if (path) {
    CHECK(!strncmp(path, dir, strlen(dir)));
    const char *name = path + strlen(dir) + 1;
    CHECK_EQ_INT(strlen(name), 32 + 3);
    CHECK_EQ_INT(strspn(name, "0123456789abcdef"), 32);
    /* every input is part of the key */
    char *p2 = compile_cache_path("x", "cc", "-O2", ".so");
    char *p3 = compile_cache_path("y", "cc", "-O2", ".so");
    char *p4 = compile_cache_path("x", "gcc", "-O2", ".so");
    char *p5 = compile_cache_path("x", "cc", "-O3", ".so");
    CHECK(!strcmp(path, p2));
    CHECK(strcmp(path, p3) && strcmp(path, p4) && strcmp(path, p5));
    free(p2); free(p3); free(p4); free(p5);
  }
  free(path);
  free(src);
  env_restore(&e);
  cache_end(&tc);
}

typedef struct { char *src; char name[16]; float c; tg_program *p; } compile_job;

static void *compile_thread(void *arg) {
  compile_job *j = arg;
  struct tg_device *d = device_get("CPU");
  j->p = d->compile(d, j->src, j->name);
  if (!j->p) fprintf(stderr, "  compile in thread failed: %s\n", tg_error());
  return NULL;
}

TEST(runtime_cpu_parallel_compile) {
  test_cache tc;
  cache_begin(&tc);
  enum { NSRC = 4, NTHREAD = 8 };
  char *srcs[NSRC];
  char names[NSRC][16];
  for (int i = 0; i < NSRC; i++) {
    snprintf(names[i], sizeof names[i], "par%d", i);
    srcs[i] = fma_source(names[i], (float)i);
  }
  compile_job jobs[NTHREAD];
  pthread_t th[NTHREAD];
  tg_counters c0 = tg_get_counters();
  for (int t = 0; t < NTHREAD; t++) {   /* each source by two threads at once */
    jobs[t].src = srcs[t % NSRC];
    memcpy(jobs[t].name, names[t % NSRC], sizeof jobs[t].name);
    jobs[t].c = (float)(t % NSRC);
    pthread_create(&th[t], NULL, compile_thread, &jobs[t]);
  }
  for (int t = 0; t < NTHREAD; t++) pthread_join(th[t], NULL);
  tg_counters c1 = tg_get_counters();
  CHECK_EQ_INT((c1.kernels_compiled + c1.kernels_cached) - (c0.kernels_compiled + c0.kernels_cached), NTHREAD);
  struct tg_device *d = device_get("CPU");
  for (int t = 0; t < NTHREAD; t++) {
    CHECK_MSG(jobs[t].p != NULL, "thread %d failed", t);
    if (!jobs[t].p) continue;
    CHECK(run_fma(d, jobs[t].p, 33, jobs[t].c));
    if (t >= NSRC && jobs[t - NSRC].p) CHECK(jobs[t].p->fn == jobs[t - NSRC].p->fn);
  }
  for (int t = 0; t < NTHREAD; t++) if (jobs[t].p) d->program_free(d, jobs[t].p);
  for (int i = 0; i < NSRC; i++) free(srcs[i]);
  CHECK_EQ_INT(count_files(tc.dir, ".so"), NSRC);
  CHECK_EQ_INT(count_files(tc.dir, ".tmp"), 0);
  cache_end(&tc);
}

TEST(runtime_cpu_launch_without_fn) {
  struct tg_device *d = device_get("CPU");
  tg_program p = { .dev = d, .name = "empty" };
  tg_clear_error();
  CHECK(d->launch(d, &p, NULL, 0, NULL, 0) < 0);
  CHECK(strstr(tg_error(), "empty") != NULL);
}
