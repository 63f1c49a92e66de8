/* test_threads.c: the worker pool (runtime/thread_pool.c) and multi-core
 * kernel launches on the CPU device. */
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "test.h"
#include "runtime/buffer.h"
#include "runtime/device.h"
#include "runtime/thread_pool.h"

#if defined(__SANITIZE_THREAD__)
#define UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define UNDER_TSAN 1
#endif
#endif

/* ---------------------------------------------------------------- helpers */

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Sets $TG_THREADS (NULL: unset) and restarts the pool so it is read again;
 * returns the old value (malloc'd or NULL) for pool_env_restore. */
static char *pool_env(const char *value) {
  const char *o = getenv("TG_THREADS");
  char *old = o ? strdup(o) : NULL;
  if (value) setenv("TG_THREADS", value, 1); else unsetenv("TG_THREADS");
  tg_pool_reset_for_tests();
  return old;
}
static void pool_env_restore(char *old) {
  if (old) setenv("TG_THREADS", old, 1); else unsetenv("TG_THREADS");
  free(old);
  tg_pool_reset_for_tests();
}

/* The default pool (TG_THREADS as it is), but at least 2 cores. */
static char *pool_env_at_least_2(void) {
  if (tg_pool_threads() < 2) return pool_env("2");
  const char *cur = getenv("TG_THREADS");
  char *copy = cur ? strdup(cur) : NULL;
  char *old = pool_env(copy);
  free(copy);
  return old;
}

static int cpus_allowed(void) {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? (int)n : 1;
}

/* Records which cores ran: calls[c] counts calls for core c; bad counts calls
 * with a wrong ncores or core. */
#define MAXC 64
typedef struct {
  _Atomic int calls[MAXC];
  _Atomic int bad;
  int want_n;
  pthread_t caller;
  _Atomic int core0_elsewhere;
} core_log;

static void log_core(void *arg, int core, int ncores) {
  core_log *l = arg;
  if (ncores != l->want_n || core < 0 || core >= ncores || core >= MAXC) { atomic_fetch_add(&l->bad, 1); return; }
  atomic_fetch_add(&l->calls[core], 1);
  if (core == 0 && !pthread_equal(pthread_self(), l->caller)) atomic_fetch_add(&l->core0_elsewhere, 1);
}

/* Runs tg_pool_run(ncores) `reps` times; every core 0..want_n-1 must run
 * exactly once per call, core 0 on the calling thread. */
static bool check_cores(int ncores, int want_n, int reps) {
  core_log l;
  memset(&l, 0, sizeof l);
  l.want_n = want_n;
  l.caller = pthread_self();
  for (int r = 0; r < reps; r++) tg_pool_run(log_core, &l, ncores);
  bool ok = atomic_load(&l.bad) == 0 && atomic_load(&l.core0_elsewhere) == 0;
  for (int c = 0; c < MAXC; c++) ok = ok && atomic_load(&l.calls[c]) == (c < want_n ? reps : 0);
  if (!ok) {
    test_fail(__FILE__, __LINE__, "tg_pool_run(ncores=%d) want n=%d x%d: bad %d, core0 elsewhere %d, calls[0..3] %d %d %d %d",
              ncores, want_n, reps, atomic_load(&l.bad), atomic_load(&l.core0_elsewhere), atomic_load(&l.calls[0]),
              atomic_load(&l.calls[1]), atomic_load(&l.calls[2]), atomic_load(&l.calls[3]));
  }
  return ok;
}

/* ---------------------------------------------------------------- the pool */

TEST(threads_pool_core_ids) {
  char *old = pool_env("4");   /* more cores than this machine may have: still correct */
  CHECK_EQ_INT(tg_pool_threads(), 4);
  for (int n = 1; n <= 4; n++) CHECK(check_cores(n, n, 500));
  CHECK(check_cores(0, 4, 100));    /* 0: all */
  CHECK(check_cores(-3, 4, 10));
  CHECK(check_cores(9, 4, 100));    /* clamped to the pool */
  /* alternating sizes: workers left out of a job must not miss the next */
  for (int r = 0; r < 2000; r++) {
    int n = 2 + r % 3;
    if (!check_cores(n, n, 1)) break;
  }
  int prev = tg_pool_set_spin_us(0);   /* every wait sleeps: the futex paths */
  for (int r = 0; r < 500; r++) {
    int n = 2 + r % 3;
    if (!check_cores(n, n, 1)) break;
  }
  tg_pool_set_spin_us(prev);
  pool_env_restore(old);
}

/* All n cores run at the same time: each waits for the others to arrive. */
typedef struct { _Atomic int arrived; _Atomic int timeouts; int round; } barrier_job;

static void barrier_core(void *arg, int core, int ncores) {
  barrier_job *b = arg;
  int target = ncores * (b->round + 1);
  atomic_fetch_add(&b->arrived, 1);
  double t0 = now_s();
  while (atomic_load(&b->arrived) < target) {
    if (now_s() - t0 > 10) { atomic_fetch_add(&b->timeouts, 1); return; }
    sched_yield();
  }
}

TEST(threads_pool_cores_run_together) {
  char *old = pool_env("3");
  barrier_job b;
  memset(&b, 0, sizeof b);
  for (b.round = 0; b.round < 200 && !atomic_load(&b.timeouts); b.round++) tg_pool_run(barrier_core, &b, 3);
  CHECK_EQ_INT(atomic_load(&b.timeouts), 0);
  CHECK_EQ_INT(atomic_load(&b.arrived), 3 * 200);
  pool_env_restore(old);
}

static void add_core(void *arg, int core, int ncores) {
  _Atomic long long *sum = arg;
  atomic_fetch_add_explicit(sum, core + 1, memory_order_relaxed);
}

static void direct_call_loop(void (*volatile f)(void *, int, int), void *arg, int reps) {
  for (int r = 0; r < reps; r++) f(arg, 0, 1);
}

TEST(threads_pool_many_tiny_calls) {
  char *old = pool_env_at_least_2();
  int n = 2;
  enum { REPS = 100000 };
  _Atomic long long sum = 0;
  tg_pool_run(add_core, &sum, n);   /* starts the workers */
  atomic_store(&sum, 0);
  double t0 = now_s();
  for (int r = 0; r < REPS; r++) tg_pool_run(add_core, &sum, n);
  double t_pool = (now_s() - t0) / REPS;
  CHECK_EQ_INT(atomic_load(&sum), (long long)REPS * 3);   /* 1 + 2 per call */

  atomic_store(&sum, 0);
  t0 = now_s();
  direct_call_loop(add_core, &sum, REPS);
  double t_direct = (now_s() - t0) / REPS;
  CHECK_EQ_INT(atomic_load(&sum), (long long)REPS);

  /* with no spinning every hand-off goes through a futex wake-up */
  int prev = tg_pool_set_spin_us(0);
  enum { SLEEPY = 10000 };
  atomic_store(&sum, 0);
  t0 = now_s();
  for (int r = 0; r < SLEEPY; r++) tg_pool_run(add_core, &sum, n);
  double t_sleep = (now_s() - t0) / SLEEPY;
  tg_pool_set_spin_us(prev);
  CHECK_EQ_INT(atomic_load(&sum), (long long)SLEEPY * 3);

  printf("  info: per call: tg_pool_run on %d cores %.3f us (workers spinning), %.3f us (workers asleep); direct call %.4f us; %d CPUs\n",
         n, t_pool * 1e6, t_sleep * 1e6, t_direct * 1e6, cpus_allowed());
  /* generous: sanitizers and busy machines are slow, a broken hand-off is far slower */
  CHECK_MSG(t_pool < 1e-2, "tg_pool_run takes %.1f us per call", t_pool * 1e6);
  pool_env_restore(old);
}

TEST(threads_env) {
  char *old = pool_env(NULL);
  int dflt = tg_pool_threads();
  CHECK_EQ_INT(dflt, cpus_allowed());

  free(pool_env("1"));
  CHECK_EQ_INT(tg_pool_threads(), 1);
  CHECK(check_cores(4, 1, 10));   /* everything on the calling thread, as (0, 1) */
  CHECK(check_cores(0, 1, 10));

  free(pool_env("3"));
  CHECK_EQ_INT(tg_pool_threads(), 3);
  CHECK(check_cores(0, 3, 10));

  /* not a count >= 1: ignored */
  static const char *const bad[] = { "0", "-2", "abc", "2x", "" };
  for (int i = 0; i < 5; i++) {
    free(pool_env(bad[i]));
    CHECK_MSG(tg_pool_threads() == dflt, "TG_THREADS='%s': %d threads", bad[i], tg_pool_threads());
  }
  free(pool_env("100000"));
  CHECK_EQ_INT(tg_pool_threads(), TG_POOL_MAX_THREADS);
  pool_env_restore(old);
}

/* tg_pool_run from inside fn (core 0 or a worker): runs, without deadlock. */
typedef struct { _Atomic long long sum; _Atomic int outer; } nested_job;

static void nested_inner(void *arg, int core, int ncores) {
  nested_job *j = arg;
  atomic_fetch_add(&j->sum, 100 * (core + 1));
}
static void nested_outer(void *arg, int core, int ncores) {
  nested_job *j = arg;
  atomic_fetch_add(&j->outer, 1);
  tg_pool_run(nested_inner, j, 2);   /* the pool is busy: runs cores 0 and 1 here */
}

TEST(threads_pool_nested) {
  char *old = pool_env("2");
  nested_job j;
  memset(&j, 0, sizeof j);
  for (int r = 0; r < 100; r++) tg_pool_run(nested_outer, &j, 2);
  CHECK_EQ_INT(atomic_load(&j.outer), 200);
  CHECK_EQ_INT(atomic_load(&j.sum), 200 * 300);
  pool_env_restore(old);
}

/* Several threads run jobs at once. */
typedef struct { int n, reps; bool ok; } conc_job;

static void *conc_thread(void *arg) {
  conc_job *c = arg;
  core_log l;
  memset(&l, 0, sizeof l);
  l.want_n = c->n;
  l.caller = pthread_self();
  for (int r = 0; r < c->reps; r++) tg_pool_run(log_core, &l, c->n);
  c->ok = atomic_load(&l.bad) == 0 && atomic_load(&l.core0_elsewhere) == 0;
  for (int k = 0; k < MAXC; k++) c->ok = c->ok && atomic_load(&l.calls[k]) == (k < c->n ? c->reps : 0);
  return NULL;
}

TEST(threads_pool_concurrent_callers) {
  char *old = pool_env("3");
  enum { NT = 4 };
  conc_job jobs[NT];
  pthread_t th[NT];
  for (int i = 0; i < NT; i++) {
    jobs[i] = (conc_job){ 2 + i % 2, 5000, false };
    pthread_create(&th[i], NULL, conc_thread, &jobs[i]);
  }
  for (int i = 0; i < NT; i++) pthread_join(th[i], NULL);
  for (int i = 0; i < NT; i++) CHECK_MSG(jobs[i].ok, "thread %d: wrong core calls", i);
  pool_env_restore(old);
}

/* A child process does not inherit the workers: exit() in a child that never
 * used the pool must not wait for them, and a child may use a pool of its own. */
TEST(threads_pool_fork) {
#ifdef UNDER_TSAN
  SKIP("fork of a multi-threaded process under TSan");
#else
  char *old = pool_env("2");
  CHECK(check_cores(2, 2, 10));   /* the parent's workers run */
  for (int use = 0; use < 2; use++) {
    /* The child reports through a pipe: its exit status may be LeakSanitizer's
     * verdict on the whole test process. */
    int fds[2];
    if (pipe(fds) != 0) { test_fail(__FILE__, __LINE__, "pipe failed"); break; }
    fflush(stdout); fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) { test_fail(__FILE__, __LINE__, "fork failed"); close(fds[0]); close(fds[1]); break; }
    if (pid == 0) {
      close(fds[0]);
      bool ok = true;
      if (use) {
        _Atomic long long sum = 0;
        for (int r = 0; r < 1000; r++) tg_pool_run(add_core, &sum, 2);
        ok = atomic_load(&sum) == 3000;
      }
      char c = ok ? 'Y' : 'N';
      if (write(fds[1], &c, 1) != 1) ok = false;
      close(fds[1]);
      exit(ok ? 0 : 1);   /* exit, not _exit: the atexit handler runs */
    }
    close(fds[1]);
    char c = 0;
    ssize_t k = 0;
    struct pollfd pfd = { fds[0], POLLIN, 0 };
    if (poll(&pfd, 1, 20000) == 1) k = read(fds[0], &c, 1);   /* else: hangs, see below */
    close(fds[0]);
    int st = 0;
    double t0 = now_s();
    pid_t w;
    while ((w = waitpid(pid, &st, WNOHANG)) == 0 && now_s() - t0 < 20) usleep(1000);
    if (w == 0) {
      kill(pid, SIGKILL);
      waitpid(pid, &st, 0);
      test_fail(__FILE__, __LINE__, "child (use=%d) hangs in exit", use);
      continue;
    }
    CHECK_MSG(k == 1 && c == 'Y', "child (use=%d): result '%c'", use, k == 1 ? c : '?');
    CHECK_MSG(WIFEXITED(st), "child (use=%d): status %d", use, st);
  }
  CHECK(check_cores(2, 2, 10));   /* and the parent's pool still works */
  pool_env_restore(old);
#endif
}

/* ---------------------------------------------------------------- kernels */

/* Row i of out = a[i, :] . b, rows split by core like generated kernels;
 * who[i] records (core, ncores) of the core that did row i. */
static const char split_src[] =
  "#include <stdint.h>\n"
  "void tg_test_split(void **bufs, const int64_t *vars, int core, int ncores) {\n"
  "  float *out = bufs[0]; const float *a = bufs[1], *b = bufs[2]; int32_t *who = bufs[3];\n"
  "  int64_t rows = vars[0], cols = vars[1];\n"
  "  int64_t lo = rows * core / ncores, hi = rows * (core + 1) / ncores;\n"
  "  for (int64_t i = lo; i < hi; i++) {\n"
  "    float acc = 0.0f;\n"
  "    for (int64_t j = 0; j < cols; j++) acc += a[i * cols + j] * b[j];\n"
  "    out[i] = acc;\n"
  "    who[i] = core * 1000 + ncores;\n"
  "  }\n"
  "}\n";

typedef struct {
  struct tg_device *d;
  int rows, cols;
  tg_buffer *bo, *ba, *bb, *bw;
  float *want;
} split_case;

static bool split_setup(split_case *s, struct tg_device *d, int rows, int cols, float seed) {
  memset(s, 0, sizeof *s);
  s->d = d; s->rows = rows; s->cols = cols;
  s->bo = buffer_new(d, TG_F32, rows);
  s->ba = buffer_new(d, TG_F32, (int64_t)rows * cols);
  s->bb = buffer_new(d, TG_F32, cols);
  s->bw = buffer_new(d, TG_I32, rows);
  float *a = malloc(sizeof(float) * (size_t)rows * (size_t)cols), *b = malloc(sizeof(float) * (size_t)cols);
  s->want = malloc(sizeof(float) * (size_t)rows);
  for (int i = 0; i < rows * cols; i++) a[i] = (float)((i * 7919 + (int)seed) % 1000) * 0.001f - 0.5f;
  for (int j = 0; j < cols; j++) b[j] = 1.0f / (float)(j + 2) + seed;
  for (int i = 0; i < rows; i++) {
    float acc = 0.0f;
    for (int j = 0; j < cols; j++) {
      volatile float prod = a[(size_t)i * (size_t)cols + (size_t)j] * b[j];   /* rounded once, like the kernel */
      acc += prod;
    }
    s->want[i] = acc;
  }
  bool ok = s->bo && s->ba && s->bb && s->bw && buffer_alloc(s->bo) == 0 && buffer_alloc(s->bw) == 0 &&
            buffer_copyin(s->ba, a, sizeof(float) * (size_t)rows * (size_t)cols) == 0 &&
            buffer_copyin(s->bb, b, sizeof(float) * (size_t)cols) == 0;
  free(a); free(b);
  return ok;
}

static void split_teardown(split_case *s) {
  buffer_release(s->bo); buffer_release(s->ba); buffer_release(s->bb); buffer_release(s->bw);
  free(s->want);
}

/* Launches p and checks out (bit-exact) and which core did each row:
 * want_n cores, rows split as lo = rows*c/n. Quiet when `quiet` (threads). */
static bool split_run(split_case *s, tg_program *p, int want_n, bool quiet) {
  size_t rows = (size_t)s->rows;
  memset(s->bo->ptr, 0xff, rows * sizeof(float));
  memset(s->bw->ptr, 0xff, rows * sizeof(int32_t));
  void *bufs[4] = { s->bo->ptr, s->ba->ptr, s->bb->ptr, s->bw->ptr };
  int64_t vars[2] = { s->rows, s->cols };
  if (s->d->launch(s->d, p, bufs, 4, vars, 2) != 0) {
    if (!quiet) test_fail(__FILE__, __LINE__, "launch: %s", tg_error());
    return false;
  }
  const float *out = s->bo->ptr;
  const int32_t *who = s->bw->ptr;
  bool ok = true;
  for (int c = 0; c < want_n; c++) {
    int64_t lo = (int64_t)s->rows * c / want_n, hi = (int64_t)s->rows * (c + 1) / want_n;
    for (int64_t i = lo; i < hi; i++) {
      bool good = memcmp(&out[i], &s->want[i], sizeof(float)) == 0 && who[i] == c * 1000 + want_n;
      if (!good && ok && !quiet)
        test_fail(__FILE__, __LINE__, "max_cores %d, want %d cores: row %lld: got %.9g by %d, want %.9g by %d",
                  p->max_cores, want_n, (long long)i, out[i], who[i], s->want[i], c * 1000 + want_n);
      ok = ok && good;
    }
  }
  return ok;
}

static tg_program *split_program(struct tg_device *d) {
  tg_program *p = d->compile(d, split_src, "tg_test_split");
  if (!p) test_fail(__FILE__, __LINE__, "compile: %s", tg_error());
  return p;
}

TEST(threads_kernel_split) {
  struct tg_device *d = device_get("CPU");
  tg_program *p = split_program(d);
  if (!p) return;
  CHECK_EQ_INT(p->max_cores, 0);   /* compile leaves the default: all cores */
  split_case s;
  CHECK(split_setup(&s, d, 1001, 37, 0.25f));

  static const char *const envs[] = { "1", "2", "3", NULL };
  for (int e = 0; e < 4; e++) {
    char *old = pool_env(envs[e]);
    int t = tg_pool_threads();
    p->max_cores = 1;   /* the calling thread, as (0, 1) */
    CHECK(split_run(&s, p, 1, false));
    p->max_cores = 0;   /* all */
    CHECK(split_run(&s, p, t, false));
    p->max_cores = 2;
    CHECK(split_run(&s, p, t < 2 ? t : 2, false));
    p->max_cores = 64;  /* more than the pool: the pool's */
    CHECK(split_run(&s, p, t, false));
    pool_env_restore(old);
  }
  /* fewer rows than cores: some cores get none */
  char *old = pool_env("3");
  split_case small;
  CHECK(split_setup(&small, d, 2, 5, 1.0f));
  p->max_cores = 0;
  CHECK(split_run(&small, p, 3, false));
  split_teardown(&small);
  pool_env_restore(old);

  split_teardown(&s);
  d->program_free(d, p);
}

typedef struct { tg_program *p; float seed; int reps; int want_n; bool ok; } launch_job;

static void *launch_thread(void *arg) {
  launch_job *j = arg;
  split_case s;
  j->ok = split_setup(&s, device_get("CPU"), 301, 17, j->seed);
  /* Each launch gets the whole pool or, when another thread has it, runs
   * its cores one after another here: the split is the same either way. */
  for (int r = 0; r < j->reps && j->ok; r++) j->ok = split_run(&s, j->p, j->want_n, true);
  split_teardown(&s);
  return NULL;
}

TEST(threads_kernel_concurrent_launches) {
  char *old = pool_env("2");
  struct tg_device *d = device_get("CPU");
  tg_program *p = split_program(d);
  if (!p) { pool_env_restore(old); return; }
  p->max_cores = 0;
  enum { NT = 3 };
  launch_job jobs[NT];
  pthread_t th[NT];
  for (int i = 0; i < NT; i++) {
    jobs[i] = (launch_job){ p, (float)i, 2000, 2, false };
    pthread_create(&th[i], NULL, launch_thread, &jobs[i]);
  }
  for (int i = 0; i < NT; i++) pthread_join(th[i], NULL);
  for (int i = 0; i < NT; i++) CHECK_MSG(jobs[i].ok, "thread %d: wrong kernel results", i);
  d->program_free(d, p);
  pool_env_restore(old);
}

/* What a launch costs: a trivial kernel on 1 core vs on the pool. */
static const char tiny_src[] =
  "#include <stdint.h>\n"
  "void tg_test_tiny(void **bufs, const int64_t *vars, int core, int ncores) {\n"
  "  float *out = bufs[0];\n"
  "  out[core * 16] += 1.0f;\n"
  "}\n";

TEST(threads_kernel_launch_overhead) {
  char *old = pool_env_at_least_2();
  struct tg_device *d = device_get("CPU");
  tg_program *p = d->compile(d, tiny_src, "tg_test_tiny");
  CHECK_OK(p);
  if (!p) { pool_env_restore(old); return; }
  tg_buffer *b = buffer_new(d, TG_F32, 16 * TG_POOL_MAX_THREADS);
  CHECK(b && buffer_alloc(b) == 0);
  memset(b->ptr, 0, 16 * TG_POOL_MAX_THREADS * sizeof(float));
  void *bufs[1] = { b->ptr };
  enum { REPS = 100000 };
  int t = tg_pool_threads();
  double tm[2];
  for (int k = 0; k < 2; k++) {
    p->max_cores = k == 0 ? 1 : 0;
    d->launch(d, p, bufs, 1, NULL, 0);
    double t0 = now_s();
    for (int r = 0; r < REPS; r++) d->launch(d, p, bufs, 1, NULL, 0);
    tm[k] = (now_s() - t0) / REPS;
  }
  const float *o = b->ptr;
  CHECK_EQ_INT((long long)o[0], 2 * REPS + 2);
  for (int c = 1; c < t; c++) CHECK_EQ_INT((long long)o[c * 16], REPS + 1);
  printf("  info: CPU launch of an empty kernel: %.3f us on 1 core, %.3f us on %d cores\n", tm[0] * 1e6, tm[1] * 1e6, t);
  buffer_release(b);
  d->program_free(d, p);
  pool_env_restore(old);
}
