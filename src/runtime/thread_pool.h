/* thread_pool.h: a persistent pool of worker threads that runs one function
 * on several cores at once (the CPU device's kernel launches). Internal to the
 * runtime; not a public interface.
 *
 * The pool holds tg_pool_threads() - 1 workers; the thread that calls
 * tg_pool_run is core 0 and works too. Workers are created on the first
 * tg_pool_run that needs them, spin briefly on an atomic generation counter
 * after each job (so back-to-back launches cost well under a microsecond of
 * hand-off), then sleep on a futex. Nothing is allocated per call. At exit
 * (atexit) the workers are stopped and joined. */
#ifndef TG_THREAD_POOL_H
#define TG_THREAD_POOL_H

typedef void (*tg_pool_fn)(void *arg, int core, int ncores);

/* How many cores the pool uses (the caller included): $TG_THREADS when it is
 * an integer >= 1, else the number of CPUs this process may run on
 * (sched_getaffinity), else sysconf(_SC_NPROCESSORS_ONLN); at most
 * TG_POOL_MAX_THREADS. Read once, on first use. */
int tg_pool_threads(void);
#define TG_POOL_MAX_THREADS 1024

/* Calls fn(arg, core, n) once for every core = 0..n-1, at the same time on n
 * threads (the calling thread is core 0, workers 1..n-1), and returns when all
 * have returned. n = ncores clamped to [1, tg_pool_threads()]; ncores <= 0
 * means all of them (n is smaller only if the system refuses to create
 * threads). fn must not assume more than n: it gets n as ncores.
 *
 * Thread safety: one run at a time uses the workers. A tg_pool_run that finds
 * the pool busy (another thread's run, or a call from inside fn) does not
 * wait: it calls fn(arg, core, n) for core = 0..n-1 one after another on the
 * calling thread. Results are the same; only the speed differs. */
void tg_pool_run(tg_pool_fn fn, void *arg, int ncores);

/* Like tg_pool_run, but only when the n cores can run fn at the same time
 * (so fn may wait for the others: a barrier between the kernels of a
 * batch). Returns the n fn got (1: it ran on the calling thread alone), or
 * 0 without calling fn when the pool is busy. */
int tg_pool_run_together(tg_pool_fn fn, void *arg, int ncores);

/* A barrier for the n cores of one tg_pool_run_together job: spins, then
 * yields. Zero-initialize it. */
typedef struct { int count; unsigned gen; } tg_pool_barrier;
void tg_pool_barrier_wait(tg_pool_barrier *b, int n);

/* ---- for tests */

/* Stops and joins the workers and forgets the thread count, so the next call
 * reads $TG_THREADS again. Must not race with tg_pool_run. */
void tg_pool_reset_for_tests(void);

/* How long (microseconds) an idle worker, or a caller waiting for workers,
 * spins before it sleeps; returns the previous value. Default
 * TG_POOL_SPIN_US. */
int tg_pool_set_spin_us(int us);
#define TG_POOL_SPIN_US 50

#endif
