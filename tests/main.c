/* main.c: runs every registered test and prints the summary line.
 *
 * Device passes: after the plain run (on the CPU), the tests that compute
 * against committed goldens run again for each other target that is
 * present, named "PASS/test":
 *   CL/     on the CL device (PoCL on machines without a GPU);
 *   nvrtc/  on the CPU, while every kernel they run is also rendered as
 *           CUDA C and compiled by NVRTC (a compile error fails the test);
 *   CUDA/   on a CUDA GPU.
 * An absent target prints one skip line saying why. TG_TEST_PASSES=none
 * (or a comma list: cl,nvrtc,cuda) chooses the passes. */
#include <pthread.h>
#include <stdarg.h>
#include <sys/wait.h>
#include <time.h>
#include "test.h"
#include "codegen/codegen.h"
#include "codegen/opts.h"
#include "engine/realize.h"
#include "runtime/backends.h"
#include "runtime/cuda.h"

typedef struct { const char *name; test_fn fn; } test_case;
static test_case cases[2048];
static int ncases;
int test_failures;
bool test_skipped;

void test_register(const char *name, test_fn fn) {
  if (ncases < (int)(sizeof cases / sizeof cases[0])) cases[ncases++] = (test_case){ name, fn };
}

void test_fail(const char *file, int line, const char *fmt, ...) {
  if (test_failures++ > 20) return;   /* do not flood */
  va_list ap;
  va_start(ap, fmt);
  printf("  FAIL %s:%d: ", file, line);
  vprintf(fmt, ap);
  printf("\n");
  va_end(ap);
}

void *test_read_file(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long sz = ftell(f);
  fseek(f, 0, SEEK_SET);
  void *p = malloc(sz > 0 ? (size_t)sz : 1);
  if (fread(p, 1, (size_t)sz, f) != (size_t)sz) { free(p); fclose(f); return NULL; }
  fclose(f);
  if (n) *n = (size_t)sz;
  return p;
}

bool test_close_f32(const float *got, const float *want, size_t n, double rtol, double atol, const char *what) {
  int bad = 0;
  for (size_t i = 0; i < n; i++) {
    double g = got[i], w = want[i];
    bool ok = (isnan(g) && isnan(w)) || g == w || fabs(g - w) <= atol + rtol * fabs(w);
    if (!ok && bad++ < 5) test_fail(__FILE__, __LINE__, "%s[%zu]: got %.9g want %.9g", what, i, g, w);
  }
  return bad == 0;
}

uint8_t *test_random_blocks(uint64_t seed, int64_t nblocks, int bpb, int scale_at, int64_t *nbytes) {
  *nbytes = nblocks * bpb;
  uint8_t *p = malloc((size_t)*nbytes);
  uint64_t h = 0x9E3779B97F4A7C15ull ^ seed;
  for (int64_t i = 0; i < *nbytes; i++) { h = h * 6364136223846793005ull + 1442695040888963407ull; p[i] = (uint8_t)(h >> 56); }
  for (int64_t b = 0; b < nblocks; b++) {
    uint16_t f = (uint16_t)(0x1C00 + (b * 37) % 1024) | (uint16_t)(b % 5 == 0 ? 0x8000 : 0);
    p[b * bpb + scale_at] = (uint8_t)f, p[b * bpb + scale_at + 1] = (uint8_t)(f >> 8);
  }
  return p;
}

const char *test_build_dir(void) {
  static char dir[1024];
  const char *bin = getenv("TG_BIN");
  if (!bin || strlen(bin) >= sizeof dir) return NULL;
  snprintf(dir, sizeof dir, "%s", bin);
  char *slash = strrchr(dir, '/');
  if (!slash) return ".";
  *slash = 0;
  return dir;
}

int test_run_capture(const char *cmd, char *out, size_t n) {
  char full[8192];
  snprintf(full, sizeof full, "%s 2>&1", cmd);
  FILE *p = popen(full, "r");
  if (!p) return -1;
  size_t k = 0;
  out[0] = 0;
  for (int c; (c = fgetc(p)) != EOF;) if (k + 1 < n) { out[k++] = (char)c; out[k] = 0; }
  int st = pclose(p);
  return st == -1 ? -1 : WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static int by_name(const void *a, const void *b) {
  return strcmp(((const test_case *)a)->name, ((const test_case *)b)->name);
}

/* the tests whose results are checked against goldens, by name prefix */
static const char *const golden_prefixes[] = { "ops_", "custom_kernel_", "math_", "movement_", "nn_golden", "autograd_", "layers_golden", "layers_optim", "random_", "dtype_encode", "llm_stories260k" };

static bool is_golden(const char *name) {
  for (size_t i = 0; i < sizeof golden_prefixes / sizeof golden_prefixes[0]; i++)
    if (!strncmp(name, golden_prefixes[i], strlen(golden_prefixes[i]))) return true;
  return false;
}

/* ---- the nvrtc pass: every kernel a test runs, rendered for CUDA */
#define NVRTC_ARCH 80
typedef struct { char *src, *name, *err; } nvrtc_job;
static VEC(nvrtc_job) nvrtc_jobs;
static ptrmap nvrtc_seen;   /* AST -> 1, retained: each kernel once per run */
static int nvrtc_kernels;

static void nvrtc_observe(uop *ast, const char *name, void *ctx) {
  if (pm_get(&nvrtc_seen, ast)) return;
  uop_retain(ast);
  pm_put(&nvrtc_seen, ast, (void *)1);
  const tg_renderer *ren = renderer_by_name("cuda");
  kopt o[32];
  int n = kernel_heuristic_opts(ast, ren, 1, o, 32);
  kernel_program kp;
  char msg[600];
  if (codegen_program(ast, name, ren, o, n, true, &kp) < 0) {
    snprintf(msg, sizeof msg, "%s", tg_error());
    VEC_PUSH(nvrtc_jobs, ((nvrtc_job){ NULL, tg_xstrdup(name), tg_xstrdup(msg) }));
    return;
  }
  VEC_PUSH(nvrtc_jobs, ((nvrtc_job){ kp.src, tg_xstrdup(name), NULL }));
}

static void *nvrtc_worker(void *arg) {
  int *next = arg;
  for (;;) {
    int i = __atomic_fetch_add(next, 1, __ATOMIC_SEQ_CST);
    if (i >= nvrtc_jobs.n) return NULL;
    nvrtc_job *j = &nvrtc_jobs.v[i];
    if (j->err || !j->src) continue;
    if (cuda_check_source(j->src, j->name, NVRTC_ARCH) < 0) j->err = tg_xstrdup(tg_error());
  }
}

/* compiles what the test rendered (two threads) and fails it on errors */
static void nvrtc_finish_test(void) {
  int next = 0;
  pthread_t th[2];
  for (int i = 0; i < 2; i++) pthread_create(&th[i], NULL, nvrtc_worker, &next);
  for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
  for (int i = 0; i < nvrtc_jobs.n; i++) {
    nvrtc_job *j = &nvrtc_jobs.v[i];
    if (j->err) test_fail(__FILE__, __LINE__, "kernel %s as CUDA C: %s", j->name, j->err);
    nvrtc_kernels++;
    free(j->src); free(j->name); free(j->err);
  }
  nvrtc_jobs.n = 0;
}

/* TG_TEST_HEURISTIC_DUMP=FILE: the CPU heuristic's opts for every kernel
 * the plain pass runs (2 and 16 cores), one line each, so a change to the
 * heuristic's code can be checked to pick the same opts (sort and diff). */
static FILE *heuristic_dump;
static void heuristic_observe(uop *ast, const char *name, void *ctx) {
  const tg_renderer *ren = renderer_by_name("c");
  static const int cores_tried[] = { 2, 16 };
  for (int c = 0; c < 2; c++) {
    int cores = cores_tried[c];
    kopt o[32];
    char buf[512];
    int n = kernel_heuristic_opts(ast, ren, cores, o, 32);
    kopts_format(o, n, buf, sizeof buf);
    fprintf(heuristic_dump, "%s cores=%d %s\n", name, cores, buf);
  }
}

typedef struct {
  const char *name;       /* the prefix of the tests' names */
  const char *device;     /* the default device for the pass, or NULL */
  bool nvrtc;             /* render and compile every kernel as CUDA C too */
} test_pass;

static bool pass_wanted(const char *key) {
  const char *w = getenv("TG_TEST_PASSES");
  if (!w || !*w || !strcmp(w, "all")) return true;
  const char *p = strstr(w, key);
  return p && (p == w || p[-1] == ',') && (p[strlen(key)] == 0 || p[strlen(key)] == ',');
}

static void run_case(const test_case *c, const char *shown, int *passed, int *failed, int *skipped, bool nvrtc) {
  test_failures = 0; test_skipped = false;
  tg_clear_error();
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  tg_scope_begin();
  c->fn();
  tg_scope_end();
  if (nvrtc) nvrtc_finish_test();
  clock_gettime(CLOCK_MONOTONIC, &t1);
  /* the slow ones show their time, so the suite's budget can be watched */
  double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
  char took[32] = "";
  if (secs >= 1.0) snprintf(took, sizeof took, " (%.1f s)", secs);
  if (test_failures) { (*failed)++; printf("FAIL %s%s\n", shown, took); }
  else if (test_skipped) { (*skipped)++; printf("skip %s%s\n", shown, took); }
  else { (*passed)++; printf("ok   %s%s\n", shown, took); }
  fflush(stdout);
}

int main(int argc, char **argv) {
  const char *filter = argc > 1 ? argv[1] : NULL;
  qsort(cases, (size_t)ncases, sizeof cases[0], by_name);
  int passed = 0, failed = 0, skipped = 0;
  const char *dump = getenv("TG_TEST_HEURISTIC_DUMP");
  if (dump && *dump && (heuristic_dump = fopen(dump, "w"))) engine_set_kernel_observer(heuristic_observe, NULL);
  for (int i = 0; i < ncases; i++) {
    if (filter && !strstr(cases[i].name, filter)) continue;
    run_case(&cases[i], cases[i].name, &passed, &failed, &skipped, false);
  }
  if (heuristic_dump) {
    engine_set_kernel_observer(NULL, NULL);
    fclose(heuristic_dump);
    heuristic_dump = NULL;
  }
  const char *why_cl = NULL, *why_cuda = NULL, *why_nvrtc = NULL;
  bool have_cl = opencl_count(&why_cl) > 0, have_cuda = cuda_count(&why_cuda) > 0, have_nvrtc = cuda_nvrtc_available(&why_nvrtc);
  const struct { test_pass p; bool present; const char *why; const char *key; } passes[] = {
    { { "CL", "CL", false }, have_cl, why_cl, "cl" },
    { { "nvrtc", NULL, true }, have_nvrtc, why_nvrtc, "nvrtc" },
    { { "CUDA", "CUDA", false }, have_cuda, why_cuda, "cuda" },
  };
  const char *base_device = tg_default_device();
  for (size_t p = 0; p < sizeof passes / sizeof passes[0]; p++) {
    if (!pass_wanted(passes[p].key) || (base_device && passes[p].p.device && !strcmp(base_device, passes[p].p.device))) continue;
    char shown[256];
    if (!passes[p].present) {
      printf("skip %s/ (golden tests on %s): %s\n", passes[p].p.name, passes[p].p.name, passes[p].why ? passes[p].why : "absent");
      skipped++;
      continue;
    }
    if (passes[p].p.device && tg_set_default_device(passes[p].p.device) < 0) { printf("FAIL %s/: %s\n", passes[p].p.name, tg_error()); failed++; continue; }
    if (passes[p].p.nvrtc) engine_set_kernel_observer(nvrtc_observe, NULL);
    for (int i = 0; i < ncases; i++) {
      if (!is_golden(cases[i].name) || (filter && !strstr(cases[i].name, filter))) continue;
      snprintf(shown, sizeof shown, "%s/%s", passes[p].p.name, cases[i].name);
      run_case(&cases[i], shown, &passed, &failed, &skipped, passes[p].p.nvrtc);
    }
    engine_set_kernel_observer(NULL, NULL);
    if (passes[p].p.nvrtc) printf("     nvrtc: %d kernels compiled as CUDA C\n", nvrtc_kernels);
    tg_set_default_device(base_device);
  }
  printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
  return failed ? 1 : 0;
}
