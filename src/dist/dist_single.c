/* dist_single.c: the world of one process (no MPI): rank 0 of 1. A sum,
 * mean or maximum over one rank, and a broadcast from it, leave the data as
 * it is. */
#include "dist/dist.h"
#include "util/util.h"

static int single_init(int *rank, int *size) { *rank = 0; *size = 1; return 0; }
static int single_allreduce(void *buf, int count, tg_dtype dt, dist_reduce op) { return 0; }
static int single_broadcast(void *buf, int nbytes, int root) { return 0; }
static int single_p2p(void) { return tg_seterr("a world of one has no other rank"); }
static int single_send(const void *buf, int nbytes, int dest) { return single_p2p(); }
static int single_recv(void *buf, int nbytes, int src) { return single_p2p(); }
static int single_barrier(void) { return 0; }
static int single_finalize(void) { return 0; }

static dist_backend single = {
  .name = "single",
  .init = single_init,
  .allreduce = single_allreduce,
  .broadcast = single_broadcast,
  .send = single_send,
  .recv = single_recv,
  .barrier = single_barrier,
  .finalize = single_finalize,
  .description = "single process",
};

dist_backend *dist_single_backend(void) { return &single; }
