/* bench.h: small helpers shared by the benchmarks in bench/.
 *
 * Every benchmark prints result lines of exactly this form (one per case):
 *
 *   bench NAME key=value key=value ... ratio=X
 *
 * and exits non-zero (after a line starting "bench FAIL") when tg computes a
 * wrong answer or reports an error, so `make bench` fails loudly. */
#ifndef TG_BENCH_H
#define TG_BENCH_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "tg.h"

static inline double bench_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Prints "bench FAIL NAME: message" (and tg_error() when set) and exits 1. */
__attribute__((noreturn, format(printf, 2, 3)))
static inline void bench_fail(const char *name, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fflush(stdout);
  fprintf(stderr, "bench FAIL %s: ", name);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  const char *e = tg_error();
  if (e && *e) fprintf(stderr, " (tg_error: %s)", e);
  fprintf(stderr, "\n");
  printf("bench FAIL %s\n", name);
  exit(1);
}

/* 64-byte aligned, zeroed and touched (no page faults inside timed loops). */
static inline float *bench_alloc_f32(size_t n) {
  void *p = NULL;
  if (posix_memalign(&p, 64, n * sizeof(float) + 64) != 0) { fprintf(stderr, "bench: out of memory\n"); exit(1); }
  float *f = p;
  for (size_t i = 0; i < n; i++) f[i] = 0;
  return f;
}

/* Number of timed repetitions: BENCH_REPS overrides the default. */
static inline int bench_reps(int dflt) {
  const char *e = getenv("BENCH_REPS");
  int r = e && *e ? atoi(e) : dflt;
  return r > 0 ? r : dflt;
}

#endif
