/* thread_pool.c: the persistent worker pool behind CPU kernel launches.
 *
 * One job at a time: the caller (holding run_lock) writes fn and arg, sets
 * `pending` to the number of participating workers, and publishes the job by
 * storing job_word = generation << 16 | ncores. Workers 1..ncores-1 see the
 * generation change, run fn(arg, core, ncores) and decrement pending; workers
 * with core >= ncores only note the new generation and never touch fn or arg,
 * so a 2-core job on a 64-core pool waits for one worker, not 63. The caller
 * runs core 0 itself and then waits for pending == 0. Because the generation
 * and the core count travel in one atomic word, a worker can never mistake
 * one job's core count for another's; the 48-bit generation never wraps.
 *
 * Waiting, on both sides, is a short spin (spin_us microseconds, with a pause
 * instruction) and then a futex sleep. A sleeper announces itself in its own
 * flag word (seq_cst store, then a seq_cst re-check of the condition); the
 * waker changes the condition (seq_cst) and then checks the flag, so at least
 * one of the two sees the other (Dekker) and no wake-up is lost. The waker
 * only makes the futex system call when the flag says someone sleeps.
 *
 * Lifetime: workers start on the first run that needs them; an atexit handler
 * stops and joins them. A fork()ed child has none of the parent's threads: a
 * pthread_atfork child handler forgets them (the child starts its own if it
 * ever runs a job), so nothing in the child waits for a thread that does not
 * exist. Workers block asynchronous signals (SIGINT, SIGCHLD, ...), which
 * therefore go to the application's threads. */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <linux/futex.h>
#include <sys/syscall.h>
#endif
#include "runtime/thread_pool.h"
#include "util/settings.h"

#define CACHE_LINE 64
#define CORE_BITS 16   /* job_word = generation << CORE_BITS | ncores */

/* ---------------------------------------------------------------- sleeping */

#ifdef __linux__
static void futex_wait(_Atomic uint32_t *addr, uint32_t val) {
  /* Returns at once when *addr != val; EINTR and spurious wake-ups are fine:
   * every caller re-checks its condition. */
  syscall(SYS_futex, (uint32_t *)addr, FUTEX_WAIT_PRIVATE, val, NULL, NULL, 0);
}
static void futex_wake(_Atomic uint32_t *addr) {
  syscall(SYS_futex, (uint32_t *)addr, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}
#else
/* Elsewhere: one mutex and condition variable stand in for the futex. */
static pthread_mutex_t fx_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t fx_cond = PTHREAD_COND_INITIALIZER;
static void futex_wait(_Atomic uint32_t *addr, uint32_t val) {
  pthread_mutex_lock(&fx_lock);
  while (atomic_load(addr) == val) pthread_cond_wait(&fx_cond, &fx_lock);
  pthread_mutex_unlock(&fx_lock);
}
static void futex_wake(_Atomic uint32_t *addr) {
  (void)addr;
  pthread_mutex_lock(&fx_lock);
  pthread_cond_broadcast(&fx_cond);
  pthread_mutex_unlock(&fx_lock);
}
#endif

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__) || defined(__arm__)
  __asm__ __volatile__("yield" ::: "memory");
#endif
}

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---------------------------------------------------------------- state */

typedef struct {
  _Alignas(CACHE_LINE) _Atomic uint32_t sleeping;   /* 1: asleep (or about to be) on this word */
  int core;                                          /* 1..nthreads-1 */
  uint64_t start_gen;                                /* the generation before its first job */
  pthread_t th;
} worker;

/* The job. job_fn/job_arg are plain: written by the caller before the
 * release of job_word, read by participants after acquiring it, and not
 * rewritten before every participant has decremented pending. */
static _Alignas(CACHE_LINE) _Atomic uint64_t job_word;
static tg_pool_fn job_fn;
static void *job_arg;
static _Alignas(CACHE_LINE) _Atomic int pending;            /* participants still running */
static _Alignas(CACHE_LINE) _Atomic uint32_t caller_sleeping;
static _Atomic int stop;                                      /* tells workers to exit */
static _Atomic int spin_us = TG_POOL_SPIN_US;
static _Atomic int cfg_threads;                               /* 0: not read yet */

/* Guarded by run_lock. */
static pthread_mutex_t run_lock = PTHREAD_MUTEX_INITIALIZER;
static worker *workers;
static int nworkers, workers_cap;
static uint64_t generation;

/* ---------------------------------------------------------------- thread count */

static int clamp_threads(long n) { return n < 1 ? 1 : n > TG_POOL_MAX_THREADS ? TG_POOL_MAX_THREADS : (int)n; }

static int read_thread_count(void) {
  const char *e = setting_str(SET_TG_THREADS);
  if (e && *e) {
    char *end;
    errno = 0;
    long v = strtol(e, &end, 10);
    if (errno == 0 && *end == 0 && v >= 1) return clamp_threads(v);
  }
#ifdef CPU_COUNT_S
  for (size_t ncpu = 1024; ncpu <= (1u << 20); ncpu *= 2) {   /* machines with > 1024 CPUs need a bigger set */
    cpu_set_t *set = CPU_ALLOC(ncpu);
    if (!set) break;
    size_t sz = CPU_ALLOC_SIZE(ncpu);
    int rc = sched_getaffinity(0, sz, set), n = rc == 0 ? CPU_COUNT_S(sz, set) : 0;
    CPU_FREE(set);
    if (rc == 0 && n >= 1) return clamp_threads(n);
    if (rc != 0 && errno != EINVAL) break;
  }
#endif
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return clamp_threads(n);
}

int tg_pool_threads(void) {
  int n = atomic_load_explicit(&cfg_threads, memory_order_relaxed);
  if (n > 0) return n;
  n = read_thread_count();
  atomic_store_explicit(&cfg_threads, n, memory_order_relaxed);   /* racing readers store the same value */
  return n;
}

int tg_pool_set_spin_us(int us) { return atomic_exchange(&spin_us, us < 0 ? 0 : us); }

/* ---------------------------------------------------------------- workers */

/* Waits until the generation differs from `seen` (returns the new job word)
 * or the pool stops (returns 0; a real job word always has ncores >= 2). */
static uint64_t worker_wait(worker *w, uint64_t seen) {
  uint64_t deadline = now_ns() + (uint64_t)atomic_load_explicit(&spin_us, memory_order_relaxed) * 1000u;
  for (unsigned i = 1;; i++) {
    uint64_t wd = atomic_load_explicit(&job_word, memory_order_acquire);
    if (wd >> CORE_BITS != seen) return wd;
    if (atomic_load_explicit(&stop, memory_order_relaxed)) return 0;
    if (i % 64 == 0 && now_ns() >= deadline) break;
    cpu_relax();
  }
  for (;;) {
    atomic_store(&w->sleeping, 1);
    uint64_t wd = atomic_load(&job_word);
    bool stopping = atomic_load(&stop);
    if (wd >> CORE_BITS != seen || stopping) {
      atomic_store_explicit(&w->sleeping, 0, memory_order_relaxed);
      atomic_thread_fence(memory_order_acquire);
      return stopping && wd >> CORE_BITS == seen ? 0 : wd;
    }
    futex_wait(&w->sleeping, 1);
    atomic_store_explicit(&w->sleeping, 0, memory_order_relaxed);
  }
}

static void *worker_main(void *p) {
  worker *w = p;
  uint64_t seen = w->start_gen;
  for (;;) {
    uint64_t wd = worker_wait(w, seen);
    if (!wd) return NULL;
    seen = wd >> CORE_BITS;
    int n = (int)(wd & ((1u << CORE_BITS) - 1));
    if (w->core >= n) continue;   /* not part of this job */
    job_fn(job_arg, w->core, n);
    if (atomic_fetch_sub(&pending, 1) == 1 && atomic_load(&caller_sleeping) && atomic_exchange(&caller_sleeping, 0))
      futex_wake(&caller_sleeping);
  }
}

static void wake_worker(worker *w) {
  if (atomic_load(&w->sleeping) && atomic_exchange(&w->sleeping, 0)) futex_wake(&w->sleeping);
}

/* Stops and joins every worker. run_lock held, no job in flight. */
static void stop_workers_locked(void) {
  if (!nworkers) return;
  atomic_store(&stop, 1);
  for (int i = 0; i < nworkers; i++) wake_worker(&workers[i]);
  for (int i = 0; i < nworkers; i++) pthread_join(workers[i].th, NULL);
  nworkers = 0;
  atomic_store(&stop, 0);
}

static void pool_atexit(void) {
  /* A run in flight (another thread's, or exit() called from inside fn):
   * leave the workers alone; the process ends them. */
  if (pthread_mutex_trylock(&run_lock) != 0) return;
  stop_workers_locked();
  free(workers);
  workers = NULL;
  workers_cap = 0;
  pthread_mutex_unlock(&run_lock);
}

static void pool_atfork_child(void) {
  /* The parent's workers do not exist here; the lock may have been held by
   * one of the parent's other threads. */
  pthread_mutex_init(&run_lock, NULL);
  nworkers = 0;
  atomic_store(&stop, 0);
  atomic_store(&pending, 0);
  atomic_store(&caller_sleeping, 0);
}

static pthread_once_t hooks_once = PTHREAD_ONCE_INIT;
static void register_hooks(void) {
  atexit(pool_atexit);
  pthread_atfork(NULL, NULL, pool_atfork_child);
}

/* Starts workers up to `want` (cores 1..want). run_lock held. Stops early
 * when a thread cannot be created; nworkers says how many run. */
static void start_workers_locked(int want) {
  pthread_once(&hooks_once, register_hooks);
  if (want > workers_cap) {
    stop_workers_locked();   /* the array moves: start afresh */
    free(workers);
    workers = NULL;
    void *mem = NULL;
    if (posix_memalign(&mem, CACHE_LINE, (size_t)want * sizeof(worker)) != 0) { workers_cap = 0; return; }
    workers = mem;
    workers_cap = want;
  }
  /* Workers take only synchronous (fault) signals. */
  sigset_t all, old;
  sigfillset(&all);
  static const int sync_signals[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGABRT, SIGSYS };
  for (size_t i = 0; i < sizeof sync_signals / sizeof sync_signals[0]; i++) sigdelset(&all, sync_signals[i]);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  for (int i = nworkers; i < want; i++) {
    worker *w = &workers[i];
    memset(w, 0, sizeof *w);
    w->core = i + 1;
    w->start_gen = generation;
    if (pthread_create(&w->th, NULL, worker_main, w) != 0) break;
    nworkers = i + 1;
  }
  pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* ---------------------------------------------------------------- running */

static void run_serial(tg_pool_fn fn, void *arg, int n) {
  for (int c = 0; c < n; c++) fn(arg, c, n);
}

/* The caller, done with core 0, waits for the workers: it spins like a
 * worker, then yields its CPU in a loop for up to CALLER_YIELD_US more (the
 * workers usually finish their equal shares soon, and a futex wake-up costs
 * tens of microseconds on some machines), and only then sleeps. */
#define CALLER_YIELD_US 1000
static void wait_pending(void) {
  if (atomic_load_explicit(&pending, memory_order_acquire) == 0) return;
  int spin = atomic_load_explicit(&spin_us, memory_order_relaxed);
  uint64_t t0 = now_ns(), deadline = t0 + (uint64_t)spin * 1000u;
  for (unsigned i = 1;; i++) {
    if (atomic_load_explicit(&pending, memory_order_acquire) == 0) return;
    if (i % 64 == 0 && now_ns() >= deadline) break;
    cpu_relax();
  }
  deadline = spin ? t0 + (uint64_t)(spin + CALLER_YIELD_US) * 1000u : 0;
  while (now_ns() < deadline) {
    if (atomic_load_explicit(&pending, memory_order_acquire) == 0) return;
    sched_yield();
  }
  for (;;) {
    atomic_store(&caller_sleeping, 1);
    if (atomic_load(&pending) == 0) break;
    futex_wait(&caller_sleeping, 1);
  }
  atomic_store_explicit(&caller_sleeping, 0, memory_order_relaxed);
  atomic_thread_fence(memory_order_acquire);
}

/* With run_lock held: runs fn on n cores (fewer when threads could not be
 * made), then releases the lock. Returns the cores used. */
static int run_held(tg_pool_fn fn, void *arg, int n, int t) {
  if (nworkers < n - 1) start_workers_locked(t - 1);
  if (nworkers < n - 1) n = nworkers + 1;   /* fewer threads could be made: use those */
  if (n <= 1) {
    pthread_mutex_unlock(&run_lock);
    fn(arg, 0, 1);
    return 1;
  }
  job_fn = fn;
  job_arg = arg;
  atomic_store_explicit(&pending, n - 1, memory_order_relaxed);
  generation++;
  atomic_store(&job_word, generation << CORE_BITS | (uint64_t)n);   /* seq_cst: publishes fn, arg, pending */
  for (int i = 0; i < n - 1; i++) wake_worker(&workers[i]);
  fn(arg, 0, n);
  wait_pending();
  pthread_mutex_unlock(&run_lock);
  return n;
}

void tg_pool_run(tg_pool_fn fn, void *arg, int ncores) {
  int t = tg_pool_threads();
  int n = ncores <= 0 || ncores > t ? t : ncores;
  if (n <= 1) { fn(arg, 0, 1); return; }
  if (pthread_mutex_trylock(&run_lock) != 0) { run_serial(fn, arg, n); return; }
  run_held(fn, arg, n, t);
}

int tg_pool_run_together(tg_pool_fn fn, void *arg, int ncores) {
  int t = tg_pool_threads();
  int n = ncores <= 0 || ncores > t ? t : ncores;
  if (n <= 1) { fn(arg, 0, 1); return 1; }
  if (pthread_mutex_trylock(&run_lock) != 0) return 0;
  return run_held(fn, arg, n, t);
}

void tg_pool_barrier_wait(tg_pool_barrier *b, int n) {
  if (n <= 1) return;
  unsigned gen = __atomic_load_n(&b->gen, __ATOMIC_ACQUIRE);
  if (__atomic_add_fetch(&b->count, 1, __ATOMIC_ACQ_REL) == n) {
    __atomic_store_n(&b->count, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&b->gen, gen + 1, __ATOMIC_RELEASE);
    return;
  }
  for (int spins = 0; __atomic_load_n(&b->gen, __ATOMIC_ACQUIRE) == gen; spins++)
    if (spins > 2000) sched_yield();
}

void tg_pool_reset_for_tests(void) {
  pthread_mutex_lock(&run_lock);
  stop_workers_locked();
  atomic_store(&cfg_threads, 0);
  pthread_mutex_unlock(&run_lock);
}
