/* bench.h: small helpers shared by the benchmarks in bench/.
 *
 * Every benchmark prints result lines of exactly this form (one per case):
 *
 *   bench NAME key=value key=value ... ratio=X
 *
 * or, when a reference is not available on this machine,
 *
 *   bench NAME skipped reason=...
 *
 * and exits non-zero (after a line starting "bench FAIL") when tg computes a
 * wrong answer or reports an error, so `make bench` fails loudly.
 *
 * ratio is always "above 1: tg is faster" (tg throughput / reference
 * throughput, or reference time / tg time). */
#ifndef TG_BENCH_H
#define TG_BENCH_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>
#include "tg.h"

static inline double bench_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Lets spinning worker threads (tg's pool, OpenMP, OpenBLAS) go to sleep
 * before the next contender is timed. */
static inline void bench_settle(double seconds) {
  struct timespec ts = { (time_t)seconds, (long)((seconds - (double)(time_t)seconds) * 1e9) };
  nanosleep(&ts, NULL);
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

/* Makes s one key=value token: blanks become '_'. */
static inline char *bench_token(char *s) {
  for (char *p = s; *p; p++)
    if (*p == ' ' || *p == '\t' || *p == '\n') *p = '_';
  return s;
}

/* "bench NAME skipped reason=..." (the reason has no spaces: '_' instead). */
__attribute__((format(printf, 2, 3)))
static inline void bench_skip(const char *name, const char *fmt, ...) {
  char reason[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(reason, sizeof reason, fmt, ap);
  va_end(ap);
  printf("bench %s skipped reason=%s\n", name, bench_token(reason));
  fflush(stdout);
}

/* 64-byte aligned, zeroed and touched (no page faults inside timed loops). */
static inline void *bench_alloc(size_t nbytes) {
  void *p = NULL;
  if (posix_memalign(&p, 64, nbytes + 64) != 0) { fprintf(stderr, "bench: out of memory\n"); exit(1); }
  memset(p, 0, nbytes + 64);
  return p;
}
static inline float *bench_alloc_f32(size_t n) { return bench_alloc(n * sizeof(float)); }

/* Number of timed repetitions: BENCH_REPS overrides the default. */
static inline int bench_reps(int dflt) {
  const char *e = getenv("BENCH_REPS");
  int r = e && *e ? atoi(e) : dflt;
  return r > 0 ? r : dflt;
}

/* The kernel optimizer in effect, for the opts= key: "beamN" when BEAM=N is
 * set in the environment, else "heuristic" ("noopt" with NOOPT=1, "manual"
 * with TG_OPTS). */
static inline const char *bench_opts_label(void) {
  static char buf[32];
  const char *b = getenv("BEAM"), *o = getenv("TG_OPTS"), *n = getenv("NOOPT");
  if (o && *o) return "manual";
  if (b && atoi(b) > 0) { snprintf(buf, sizeof buf, "beam%d", atoi(b)); return buf; }
  if (n && atoi(n) > 0) return "noopt";
  return "heuristic";
}

/* The threads tg's pool uses (TG_THREADS, else the CPUs this process may run
 * on): the references get as many. */
static inline int bench_threads(void) {
  const char *e = getenv("TG_THREADS");
  if (e && atoi(e) > 0) return atoi(e);
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? (int)n : 1;
}

/* "" with the heuristic, "_beamN" under BEAM=N: line names stay unique when
 * a bench runs once with each. */
static inline const char *bench_name_suffix(void) {
  static char buf[32];
  const char *b = getenv("BEAM");
  if (b && atoi(b) > 0 && !(getenv("TG_OPTS") && *getenv("TG_OPTS"))) {
    snprintf(buf, sizeof buf, "_beam%d", atoi(b));
    return buf;
  }
  return "";
}

/* A multiple of 1/8 in [-1, 1] from an index: products of two are multiples
 * of 1/64, so sums of up to 2^18 such products are exact in float32 and every
 * correct summation order gives the same bits. */
static inline float bench_eighths(uint64_t i, uint64_t salt) {
  uint64_t h = (i + salt) * 0x9E3779B97F4A7C15ull;
  h ^= h >> 29;
  return (float)((int)(h % 17) - 8) / 8.0f;
}

/* ---------------------------------------------------------------- tg runs */

typedef struct { double kernel_s, wall_s; int64_t kernels, compiled; } bench_tg_run;

static inline bench_tg_run bench_tg_diff(tg_counters c0, tg_counters c1, double wall) {
  bench_tg_run r = { c1.kernel_seconds - c0.kernel_seconds, wall, c1.kernels_run - c0.kernels_run,
                     c1.kernels_compiled + c1.kernels_cached - c0.kernels_compiled - c0.kernels_cached };
  return r;
}

/* Realizes t, timing it: kernel time from the counters, wall time around it. */
static inline bench_tg_run bench_tg_realize(tg_tensor *t, const char *name) {
  if (!t) bench_fail(name, "building the expression failed");
  tg_counters c0 = tg_get_counters();
  double t0 = bench_now();
  if (tg_realize(t) < 0) bench_fail(name, "tg_realize failed");
  double wall = bench_now() - t0;
  return bench_tg_diff(c0, tg_get_counters(), wall);
}

/* ---------------------------------------------------------------- devices */

/* BENCH_DEVICES_ONLY=1: only the lines of GPU and OpenCL devices (the CPU
 * lines are left out; tools/gpu_check.sh uses it on a lent GPU). */
static inline bool bench_devices_only(void) {
  const char *e = getenv("BENCH_DEVICES_ONLY");
  return e && atoi(e) > 0;
}

/* Whether device name (e.g. "CUDA:1") is one of BENCH_DEVICES (a comma list
 * of names or backends, "CUDA" taking every CUDA device); all when unset. */
static inline bool bench_device_wanted(const char *name) {
  const char *w = getenv("BENCH_DEVICES");
  if (!w || !*w) return true;
  size_t base = strcspn(name, ":");
  for (const char *p = w; *p;) {
    size_t len = strcspn(p, ",");
    if ((len == strlen(name) && !strncasecmp(p, name, len)) || (len == base && !strncasecmp(p, name, len))) return true;
    p += len;
    if (*p == ',') p++;
  }
  return false;
}

/* The devices with work groups (GPUs, OpenCL) that are present, by name
 * into names[max][32]; count. Absent ones (CL, CUDA) get a skip line for
 * `what`, and so do present ones that BENCH_DEVICES leaves out. */
static inline int bench_gpu_devices(const char *what, char names[][32], int max) {
  tg_device_info info[32];
  const char *absent = NULL;
  int n = tg_devices(info, 32, &absent), k = 0;
  for (int i = 0; i < n && i < 32 && k < max; i++) {
    if (info[i].max_local <= 0) continue;
    if (bench_device_wanted(info[i].name)) snprintf(names[k++], 32, "%.31s", info[i].name);
    else printf("bench %s_%s skipped reason=not_in_BENCH_DEVICES\n", what, info[i].name);
  }
  for (const char *p = absent; p && *p;) {
    const char *e = strchr(p, '\n');
    int len = e ? (int)(e - p) : (int)strlen(p);
    const char *colon = memchr(p, ':', (size_t)len);
    if (colon) printf("bench %s_%.*s skipped reason=device_absent\n", what, (int)(colon - p), p);
    p = e ? e + 1 : p + len;
  }
  return k;
}

#endif
