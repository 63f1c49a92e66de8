/* counters.c: process-wide totals (kernels run and compiled, flops, bytes). */
#include <pthread.h>
#include "util/counters.h"

static tg_counters totals;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
/* Memory held, exactly: buffers of the NULL device (no memory behind them)
 * can add up past int64; tg_get_counters reports INT64_MAX then. */
static __int128 mem_used, mem_peak;

static int64_t clamp_i64(__int128 v) { return v > INT64_MAX ? INT64_MAX : v < INT64_MIN ? INT64_MIN : (int64_t)v; }

_Thread_local int64_t counters_work_done;

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
void counters_add_render(bool cached) {
  pthread_mutex_lock(&lock);
  if (cached) totals.programs_cached++; else totals.kernels_rendered++;
  pthread_mutex_unlock(&lock);
}
void counters_add_schedule(void) {
  pthread_mutex_lock(&lock);
  totals.schedules++;
  pthread_mutex_unlock(&lock);
}
void counters_mem(int64_t delta) {
  pthread_mutex_lock(&lock);
  mem_used += delta;
  if (mem_used > mem_peak) mem_peak = mem_used;
  pthread_mutex_unlock(&lock);
}
tg_counters tg_get_counters(void) {
  pthread_mutex_lock(&lock);
  tg_counters c = totals;
  c.mem_used = clamp_i64(mem_used);
  c.mem_peak = clamp_i64(mem_peak);
  pthread_mutex_unlock(&lock);
  return c;
}
void tg_reset_counters(void) {
  pthread_mutex_lock(&lock);
  tg_counters z = { 0 };
  totals = z;
  mem_peak = mem_used;   /* memory stays held */
  pthread_mutex_unlock(&lock);
}
