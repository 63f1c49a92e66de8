/* dist_watchdog.c: a collective that never ends (a rank died, or hangs)
 * must not hang its peers forever. A blocked MPI call cannot be cancelled,
 * so one thread, started with the first collective, waits on a condition
 * with a deadline: when a collective has run TG_DIST_TIMEOUT seconds
 * (default 300; 0 turns the watch off) it prints what waited, and where,
 * and ends the process with exit status 70 (EX_SOFTWARE); mpirun then ends
 * the other ranks. Collectives run one at a time (the caller's thread), so
 * one slot holds the one being watched; `serial` tells a collective from
 * the next. */
#include <pthread.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>
#include "dist/dist.h"
#include "util/util.h"
#include "util/settings.h"

#define EXIT_TIMEOUT 70

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond;
static bool started, active;
static unsigned long serial;
static struct timespec deadline;
static char what[160];
static int w_rank, w_size, w_timeout;

static void *watch_main(void *arg) {
  pthread_mutex_lock(&lock);
  for (;;) {
    while (!active) pthread_cond_wait(&cond, &lock);
    unsigned long s = serial;
    int rc = 0;
    while (active && serial == s && rc == 0) rc = pthread_cond_timedwait(&cond, &lock, &deadline);
    if (active && serial == s) {
      fprintf(stderr, "tg_dist: rank %d of %d: %s has waited %d s for the other ranks (TG_DIST_TIMEOUT): "
                      "a rank died or hangs; exiting\n", w_rank, w_size, what, w_timeout);
      fflush(stderr);
      _exit(EXIT_TIMEOUT);
    }
  }
  return NULL;
}

static void start_locked(void) {
  pthread_condattr_t a;
  pthread_condattr_init(&a);
  pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
  pthread_cond_init(&cond, &a);
  pthread_condattr_destroy(&a);
  pthread_t th;
  /* without the thread there is no watch, but the collective still runs */
  if (pthread_create(&th, NULL, watch_main, NULL) == 0) { pthread_detach(th); started = true; }
}

void dist_watch_begin(const char *w, int rank, int size) {
  int64_t t = setting_int(SET_TG_DIST_TIMEOUT);
  if (t <= 0 || size <= 1) return;   /* a world of one waits for no one */
  if (t > 1000000000) t = 1000000000;
  pthread_mutex_lock(&lock);
  if (!started) start_locked();
  snprintf(what, sizeof what, "%s", w);
  w_rank = rank; w_size = size; w_timeout = (int)t;
  clock_gettime(CLOCK_MONOTONIC, &deadline);
  deadline.tv_sec += (time_t)t;
  serial++;
  active = true;
  pthread_cond_signal(&cond);
  pthread_mutex_unlock(&lock);
}

void dist_watch_end(void) {
  pthread_mutex_lock(&lock);
  if (active) { active = false; pthread_cond_signal(&cond); }
  pthread_mutex_unlock(&lock);
}
