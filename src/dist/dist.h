/* dist.h: the transport under tg_dist (include/tg_dist.h). A backend moves
 * host memory between the ranks of a world; dist.c holds the world, checks
 * arguments, splits counts that do not fit an int, finishes a mean and
 * watches every collective for a rank that never comes. Backends: MPI
 * (dist_mpi.c) and the world of one (dist_single.c), which tests also use
 * as a fake. */
#ifndef TG_DIST_INTERNAL_H
#define TG_DIST_INTERNAL_H

#include <stddef.h>
#include "tg.h"
#include "tg_dist.h"

typedef enum { DIST_SUM, DIST_MAX } dist_reduce;

typedef struct dist_backend {
  const char *name;
  /* Joins the world; *rank and *size from the launcher. 0 or -1 + tg_error. */
  int (*init)(int *rank, int *size);
  /* In place over count elements of dt (count <= INT_MAX). 0 or -1. */
  int (*allreduce)(void *buf, int count, tg_dtype dt, dist_reduce op);
  int (*broadcast)(void *buf, int nbytes, int root);
  /* nbytes to / from another rank (a world of one has none). */
  int (*send)(const void *buf, int nbytes, int dest);
  int (*recv)(void *buf, int nbytes, int src);
  int (*barrier)(void);
  int (*finalize)(void);
  char description[128];
} dist_backend;

/* Open MPI through dlopen; NULL + tg_error when it cannot be loaded. */
dist_backend *dist_mpi_backend(void);
/* A world of one: every collective leaves the data as it is. */
dist_backend *dist_single_backend(void);
/* Whether this process was started by an MPI launcher (mpirun, srun). */
int dist_launched_by_mpi(void);

/* Watches collectives: dist_watch_begin before one starts (what it is),
 * dist_watch_end after. One that runs past TG_DIST_TIMEOUT seconds ends
 * the process (exit status 70) with a message; a blocked MPI call cannot
 * be cancelled. */
void dist_watch_begin(const char *what, int rank, int size);
void dist_watch_end(void);

#endif
