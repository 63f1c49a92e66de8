/* compile_jobs.c: see compile_jobs.h. */
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>
#include "engine/compile_jobs.h"
#include "runtime/thread_pool.h"
#include "util/util.h"

typedef struct { compile_job *jobs; int n; atomic_int next; } job_queue;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void *worker(void *arg) {
  job_queue *q = arg;
  for (;;) {
    int i = atomic_fetch_add(&q->next, 1);
    if (i >= q->n) break;
    compile_job *j = &q->jobs[i];
    double t0 = now_s();
    j->prog = j->dev->compile(j->dev, j->kp->src, j->name);
    j->seconds = now_s() - t0;
    if (!j->prog) { snprintf(j->err, sizeof j->err, "%s", tg_error()); continue; }   /* errors are per thread */
    tg_program *p = j->prog;
    p->max_cores = j->kp->max_cores;
    for (int d = 0; d < 3; d++) p->global[d] = j->kp->global[d], p->local[d] = j->kp->local[d];
    p->nbuf_args = j->kp->nbuf_args;
  }
  return NULL;
}

void compile_jobs_run(compile_job *jobs, int n) {
  if (n <= 0) return;
  job_queue q = { jobs, n, 0 };
  int nthreads = tg_pool_threads() * 2;
  if (nthreads > n) nthreads = n;
  if (nthreads <= 1) { worker(&q); return; }
  pthread_t *t = tg_xmalloc(sizeof(pthread_t) * (size_t)nthreads);
  int started = 0;
  for (int i = 1; i < nthreads; i++) if (pthread_create(&t[started], NULL, worker, &q) == 0) started++;
  worker(&q);
  for (int i = 0; i < started; i++) pthread_join(t[i], NULL);
  free(t);
}
