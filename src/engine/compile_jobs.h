/* compile_jobs.h: compiling many kernel sources at once. The compiler is a
 * separate process, so jobs run on their own threads (up to twice the cores)
 * and the device's compile is thread-safe. */
#ifndef TG_COMPILE_JOBS_H
#define TG_COMPILE_JOBS_H

#include "codegen/codegen.h"
#include "runtime/device.h"

typedef struct {
  tg_device *dev;
  const kernel_program *kp;  /* in: the source, and how to launch it */
  const char *name;          /* in */
  tg_program *prog;          /* out: NULL on failure; else with kp's cores,
                              * grid and buffer count */
  char err[4096];            /* out: the error on failure (log and source lines) */
  double seconds;            /* out: wall time of this compile */
} compile_job;

void compile_jobs_run(compile_job *jobs, int n);

#endif
