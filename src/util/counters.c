/* counters.c: process-wide totals (kernels run and compiled, flops, bytes). */
#include <pthread.h>
#include "util/counters.h"

static tg_counters totals;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

void counters_add_run(double flops, double bytes, double seconds) {
  pthread_mutex_lock(&lock);
  totals.kernels_run++; totals.flops += flops; totals.bytes += bytes; totals.kernel_seconds += seconds;
  pthread_mutex_unlock(&lock);
}
void counters_add_runs(int64_t n, double flops, double bytes, double seconds) {
  pthread_mutex_lock(&lock);
  totals.kernels_run += n; totals.flops += flops; totals.bytes += bytes; totals.kernel_seconds += seconds;
  pthread_mutex_unlock(&lock);
}
void counters_add_compile(bool cached) {
  pthread_mutex_lock(&lock);
  if (cached) totals.kernels_cached++; else totals.kernels_compiled++;
  pthread_mutex_unlock(&lock);
}
void counters_add_schedule(void) {
  pthread_mutex_lock(&lock);
  totals.schedules++;
  pthread_mutex_unlock(&lock);
}
void counters_mem(int64_t delta) {
  pthread_mutex_lock(&lock);
  totals.mem_used += delta;
  if (totals.mem_used > totals.mem_peak) totals.mem_peak = totals.mem_used;
  pthread_mutex_unlock(&lock);
}
tg_counters tg_get_counters(void) {
  pthread_mutex_lock(&lock);
  tg_counters c = totals;
  pthread_mutex_unlock(&lock);
  return c;
}
void tg_reset_counters(void) {
  pthread_mutex_lock(&lock);
  tg_counters z = { 0 };
  z.mem_used = z.mem_peak = totals.mem_used;   /* memory stays held */
  totals = z;
  pthread_mutex_unlock(&lock);
}
