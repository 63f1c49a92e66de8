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
#include <unistd.h>
#include "test.h"
#include "run_parallel.h"
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

char *test_track_rewrites(int level, void (*fn)(void *ctx), void *ctx) {
  char path[] = "/tmp/tg_track_XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0) return NULL;
  const char *old = getenv("TRACK_REWRITES");
  char *saved = old ? strdup(old) : NULL, lv[16];
  snprintf(lv, sizeof lv, "%d", level);
  fflush(stderr);
  int err = dup(2);
  dup2(fd, 2);
  setenv("TRACK_REWRITES", lv, 1);
  fn(ctx);
  fflush(stderr);
  dup2(err, 2);
  close(err);
  close(fd);
  if (saved) setenv("TRACK_REWRITES", saved, 1); else unsetenv("TRACK_REWRITES");
  free(saved);
  size_t n = 0;
  char *raw = test_read_file(path, &n), *text = raw ? malloc(n + 1) : NULL;
  unlink(path);
  if (text) { memcpy(text, raw, n); text[n] = 0; }
  free(raw);
  return text;
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
static void heuristic_dump_end(void) {
  if (!heuristic_dump) return;
  engine_set_kernel_observer(NULL, NULL);
  fclose(heuristic_dump);
  heuristic_dump = NULL;
}
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

static int run_case(const test_case *c, const char *shown, bool nvrtc) {
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
  int status = test_failures ? ITEM_FAILED : test_skipped ? ITEM_SKIPPED : ITEM_PASSED;
  printf("%s %s%s\n", status == ITEM_FAILED ? "FAIL" : status == ITEM_SKIPPED ? "skip" : "ok  ", shown, took);
  fflush(stdout);
  return status;
}

/* ---- the passes and the work items */

static const struct { test_pass p; const char *key; } passes[] = {
  { { "CL", "CL", false }, "cl" },
  { { "nvrtc", NULL, true }, "nvrtc" },
  { { "CUDA", "CUDA", false }, "cuda" },
};
enum { NPASSES = sizeof passes / sizeof passes[0] };

/* whether each pass runs: 1 yes, 0 its target is absent (why says so), -1
 * not asked for (TG_TEST_PASSES, or the plain pass already ran there) */
typedef struct { int run[NPASSES]; char why[NPASSES][256]; } pass_plan;

static void plan_passes(pass_plan *pl) {
  const char *why[NPASSES] = { NULL, NULL, NULL };
  bool present[NPASSES] = { opencl_count(&why[0]) > 0, cuda_nvrtc_available(&why[1]), cuda_count(&why[2]) > 0 };
  const char *base_device = tg_default_device();
  for (int p = 0; p < NPASSES; p++) {
    bool same = base_device && passes[p].p.device && !strcmp(base_device, passes[p].p.device);
    pl->run[p] = !pass_wanted(passes[p].key) || same ? -1 : present[p] ? 1 : 0;
    snprintf(pl->why[p], sizeof pl->why[p], "%s", why[p] ? why[p] : "absent");
  }
}

/* in a forked child, so that the parent starts no device before it forks
 * the workers (a fork of a process with OpenCL's threads cannot use it) */
static int plan_passes_apart(pass_plan *pl) {
  int fd[2];
  if (pipe(fd) < 0) return -1;
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    close(fd[0]);
    pass_plan mine;
    plan_passes(&mine);
    ssize_t w = write(fd[1], &mine, sizeof mine);
    _exit(w == (ssize_t)sizeof mine ? 0 : 1);
  }
  close(fd[1]);
  size_t got = 0;
  while (pid > 0 && got < sizeof *pl) {
    ssize_t r = read(fd[0], (char *)pl + got, sizeof *pl - got);
    if (r <= 0) break;
    got += (size_t)r;
  }
  close(fd[0]);
  if (pid > 0) waitpid(pid, NULL, 0);
  return got == sizeof *pl ? 0 : -1;
}

typedef struct { int test, pass; } work_item;   /* pass -1: the plain pass */
static work_item *items;
static char item_shown[256];

static const char *item_name(int i) {
  if (items[i].pass < 0) return cases[items[i].test].name;
  snprintf(item_shown, sizeof item_shown, "%s/%s", passes[items[i].pass].p.name, cases[items[i].test].name);
  return item_shown;
}

/* the pass this process is in: its default device and kernel observer */
static int current_pass = -1;
static const char *base_device;
static int enter_pass(int p) {
  if (p == current_pass) return 0;
  if (current_pass >= 0) { engine_set_kernel_observer(NULL, NULL); tg_set_default_device(base_device); }
  current_pass = -1;
  if (p < 0) return 0;
  if (passes[p].p.device && tg_set_default_device(passes[p].p.device) < 0) return -1;
  if (passes[p].p.nvrtc) engine_set_kernel_observer(nvrtc_observe, NULL);
  current_pass = p;
  return 0;
}

static int run_item(int i, int *nvrtc_compiled) {
  const char *shown = item_name(i);
  *nvrtc_compiled = 0;
  if (enter_pass(items[i].pass) < 0) {   /* the pass's device would not become the default */
    printf("FAIL %s: %s\n", shown, tg_error());
    return ITEM_FAILED;
  }
  int before = nvrtc_kernels;
  int status = run_case(&cases[items[i].test], shown, items[i].pass >= 0 && passes[items[i].pass].p.nvrtc);
  *nvrtc_compiled = nvrtc_kernels - before;
  return status;
}

/* TG_TEST_JOBS: how many tests run at once (default: the cores, at most 4) */
static int test_jobs(void) {
  const char *e = getenv("TG_TEST_JOBS");
  if (e && *e) return atoi(e) > 0 ? atoi(e) : 1;
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n < 1 ? 1 : n > 4 ? 4 : (int)n;
}

int main(int argc, char **argv) {
  const char *filter = argc > 1 ? argv[1] : NULL;
  qsort(cases, (size_t)ncases, sizeof cases[0], by_name);
  int counts[3] = { 0, 0, 0 }, nvrtc_compiled = 0, jobs = test_jobs();
  const char *dump = getenv("TG_TEST_HEURISTIC_DUMP");
  if (dump && *dump) jobs = 1;   /* one process writes the dump */
  pass_plan plan;
  if (jobs == 1 || plan_passes_apart(&plan) < 0) { jobs = 1; plan_passes(&plan); }
  base_device = tg_default_device();

  /* the plain pass, then each pass that runs; absent ones print why */
  items = calloc((size_t)ncases * (NPASSES + 1) + 1, sizeof *items);
  int n = 0, nplain = 0;
  for (int p = -1; p < NPASSES; p++) {
    if (p >= 0 && plan.run[p] == 0) {
      printf("skip %s/ (golden tests on %s): %s\n", passes[p].p.name, passes[p].p.name, plan.why[p]);
      counts[ITEM_SKIPPED]++;
    }
    if (p >= 0 && plan.run[p] != 1) continue;
    for (int i = 0; i < ncases; i++) {
      if ((filter && !strstr(cases[i].name, filter)) || (p >= 0 && !is_golden(cases[i].name))) continue;
      items[n++] = (work_item){ i, p };
      nplain += p < 0;
    }
  }
  fflush(stdout);
  if (jobs > 1 && n > 1) {
    if (run_items_parallel(n, jobs < n ? jobs : n, run_item, item_name, counts, &nvrtc_compiled) < 0) jobs = 1;
  } else {
    jobs = 1;
  }
  if (jobs == 1) {
    if (dump && *dump && (heuristic_dump = fopen(dump, "w"))) engine_set_kernel_observer(heuristic_observe, NULL);
    for (int i = 0; i < n; i++) {
      if (i == nplain) heuristic_dump_end();   /* the dump covers the plain pass */
      int k = 0;
      counts[run_item(i, &k)]++;
      nvrtc_compiled += k;
    }
    heuristic_dump_end();
    enter_pass(-1);
  }
  if (plan.run[1] == 1) printf("     nvrtc: %d kernels compiled as CUDA C\n", nvrtc_compiled);
  free(items);
  printf("%d passed, %d failed, %d skipped\n", counts[ITEM_PASSED], counts[ITEM_FAILED], counts[ITEM_SKIPPED]);
  return counts[ITEM_FAILED] ? 1 : 0;
}
