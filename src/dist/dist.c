/* dist.c: the world of ranks behind include/tg_dist.h. It picks the
 * transport (MPI when mpirun started the process or TG_DIST=mpi, else the
 * world of one), checks every call's arguments before any rank waits on a
 * collective, splits element counts past INT_MAX (MPI counts are ints) into
 * pieces, finishes a mean (a sum divided by the world's size) and watches
 * each collective (dist_watchdog.c). Tensors reach it as host memory: a
 * CPU device's buffer directly, a CUDA device's through NCCL where every
 * rank has it (dist_nccl.c), any other through a host copy. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include "dist/dist.h"
#include "dist/dist_nccl.h"
#include "engine/realize.h"
#include "runtime/buffer.h"
#include "tensor/tensor.h"
#include "util/util.h"
#include "util/settings.h"

#define PIECE (1 << 28)   /* elements per MPI call: well inside an int count */

static dist_backend *world;

/* "fn: " before the error the backend set (copied first: tg_seterr writes
 * the buffer tg_error reads) */
static int fail_in(const char *fn) {
  char why[1024];
  snprintf(why, sizeof why, "%s", tg_error());
  return tg_seterr("%s: %s", fn, why);
}
static int world_rank, world_size = 1;

int tg_dist_init(void) {
  if (world) return 0;
  const char *force = setting_str(SET_TG_DIST);
  bool use_mpi = dist_launched_by_mpi() || (force && !strcmp(force, "mpi"));
  dist_backend *b = use_mpi ? dist_mpi_backend() : dist_single_backend();
  if (!b) return fail_in("tg_dist_init");
  int rank = 0, size = 1;
  if (b->init(&rank, &size) != 0) return fail_in("tg_dist_init");
  if (size < 1 || rank < 0 || rank >= size) return tg_seterr("tg_dist_init: the launcher gave rank %d of %d", rank, size);
  world = b; world_rank = rank; world_size = size;
  return 0;
}

int tg_dist_rank(void) { return world_rank; }
int tg_dist_size(void) { return world_size; }
const char *tg_dist_backend(void) { return world ? world->description : "none (tg_dist_init not called)"; }

int tg_dist_finalize(void) {
  if (!world) return 0;
  dist_nccl_unload();   /* its communicators before MPI goes */
  int rc = world->finalize();
  world = NULL; world_rank = 0; world_size = 1;
  return rc;
}

static int need_world(const char *op) {
  return world ? 0 : tg_seterr("%s: call tg_dist_init first", op);
}

int tg_dist_barrier(void) {
  if (need_world("tg_dist_barrier") < 0) return -1;
  dist_watch_begin("barrier", world_rank, world_size);
  int rc = world->barrier();
  dist_watch_end();
  return rc < 0 ? fail_in("tg_dist_barrier") : 0;
}

static void finish_mean(void *buf, int64_t count, tg_dtype dt, int size) {
  if (dt == TG_F32) { float *p = buf, d = (float)size; for (int64_t i = 0; i < count; i++) p[i] /= d; }
  else { double *p = buf, d = (double)size; for (int64_t i = 0; i < count; i++) p[i] /= d; }
}

/* An allreduce's arguments, checked before any rank waits; what it is, for the watchdog. */
static int check_allreduce(const void *buf, int64_t count, tg_dtype dt, tg_dist_op op, char *what, size_t wn) {
  const char *fn = "tg_dist_allreduce";
  if (need_world(fn) < 0) return -1;
  if (op != TG_DIST_SUM && op != TG_DIST_MEAN && op != TG_DIST_MAX) return tg_seterr("%s: unknown op %d (TG_DIST_SUM, TG_DIST_MEAN, TG_DIST_MAX)", fn, (int)op);
  if (dt != TG_F32 && dt != TG_F64 && dt != TG_I32 && dt != TG_I64)
    return tg_seterr("%s: dtype %s is not supported (float32, float64, int32, int64)", fn, (int)dt >= 0 && dt < TG_DTYPE_COUNT ? tg_dtype_name(dt) : "?");
  if (op == TG_DIST_MEAN && dt != TG_F32 && dt != TG_F64) return tg_seterr("%s: the mean of %s is not defined here (float32, float64)", fn, tg_dtype_name(dt));
  if (count < 0) return tg_seterr("%s: negative count %lld", fn, (long long)count);
  if (count && !buf) return tg_seterr("%s: no buffer", fn);
  snprintf(what, wn, "allreduce of %lld %s (%s)", (long long)count, tg_dtype_name(dt), op == TG_DIST_MAX ? "max" : op == TG_DIST_MEAN ? "mean" : "sum");
  return 0;
}

int tg_dist_allreduce_host(void *buf, int64_t count, tg_dtype dt, tg_dist_op op) {
  const char *fn = "tg_dist_allreduce";
  char what[160];
  if (check_allreduce(buf, count, dt, op, what, sizeof what) < 0) return -1;
  size_t item = (size_t)tg_dtype_size(dt);
  dist_watch_begin(what, world_rank, world_size);
  int rc = 0;
  for (int64_t off = 0; off < count && rc == 0; off += PIECE) {
    int n = (int)(count - off < PIECE ? count - off : PIECE);
    rc = world->allreduce((char *)buf + (size_t)off * item, n, dt, op == TG_DIST_MAX ? DIST_MAX : DIST_SUM);
  }
  dist_watch_end();
  if (rc < 0) return fail_in(fn);
  if (op == TG_DIST_MEAN && world_size > 1) finish_mean(buf, count, dt, world_size);
  return 0;
}

/* A broadcast's arguments, checked before any rank waits; what it is, for the watchdog. */
static int check_broadcast(const void *buf, size_t nbytes, int root, char *what, size_t wn) {
  const char *fn = "tg_dist_broadcast";
  if (need_world(fn) < 0) return -1;
  if (root < 0 || root >= world_size) return tg_seterr("%s: root %d is not a rank of this world of %d", fn, root, world_size);
  if (nbytes && !buf) return tg_seterr("%s: no buffer", fn);
  snprintf(what, wn, "broadcast of %zu bytes from rank %d", nbytes, root);
  return 0;
}

int tg_dist_broadcast_host(void *buf, size_t nbytes, int root) {
  const char *fn = "tg_dist_broadcast";
  char what[160];
  if (check_broadcast(buf, nbytes, root, what, sizeof what) < 0) return -1;
  dist_watch_begin(what, world_rank, world_size);
  int rc = 0;
  for (size_t off = 0; off < nbytes && rc == 0; off += PIECE) {
    int n = (int)(nbytes - off < PIECE ? nbytes - off : PIECE);
    rc = world->broadcast((char *)buf + off, n, root);
  }
  dist_watch_end();
  return rc < 0 ? fail_in(fn) : 0;
}

/* send or receive nbytes, in pieces as the collectives */
static int point_to_point(const char *fn, void *buf, size_t nbytes, int peer, bool sending) {
  if (need_world(fn) < 0) return -1;
  if (peer < 0 || peer >= world_size || peer == world_rank)
    return tg_seterr("%s: rank %d is not another rank of this world (rank %d of %d)", fn, peer, world_rank, world_size);
  if (nbytes && !buf) return tg_seterr("%s: no buffer", fn);
  char what[160];
  snprintf(what, sizeof what, "%s of %zu bytes %s rank %d", sending ? "send" : "receive", nbytes, sending ? "to" : "from", peer);
  dist_watch_begin(what, world_rank, world_size);
  int rc = 0;
  for (size_t off = 0; off < nbytes && rc == 0; off += PIECE) {
    int n = (int)(nbytes - off < PIECE ? nbytes - off : PIECE);
    rc = sending ? world->send((char *)buf + off, n, peer) : world->recv((char *)buf + off, n, peer);
  }
  dist_watch_end();
  return rc < 0 ? fail_in(fn) : 0;
}

int tg_dist_send_host(const void *buf, size_t nbytes, int dest) { return point_to_point("tg_dist_send", (void *)buf, nbytes, dest, true); }
int tg_dist_recv_host(void *buf, size_t nbytes, int src) { return point_to_point("tg_dist_recv", buf, nbytes, src, false); }

/* ---------------------------------------------------------------- tensors */

/* The realized memory of t; NULL + error when t is not one contiguous buffer. */
static tg_buffer *tensor_memory(tg_tensor *t, const char *fn) {
  if (!t) { tensor_null_arg(fn, "t"); return NULL; }
  if (tg_realize(t) < 0) return NULL;
  tg_buffer *b = uop_contiguous_buffer(t->u);
  if (!b) TG_FAIL("%s: the tensor is a view, not contiguous memory: use the form that returns a tensor, or tg_contiguous and tg_realize first", fn);
  if (buffer_alloc(b) < 0) return NULL;
  return b;
}

typedef int (*host_op)(void *buf, int64_t count, tg_dtype dt, int arg);
static int host_allreduce(void *buf, int64_t count, tg_dtype dt, int op) { return tg_dist_allreduce_host(buf, count, dt, (tg_dist_op)op); }
static int host_broadcast(void *buf, int64_t count, tg_dtype dt, int root) { return tg_dist_broadcast_host(buf, (size_t)count * (size_t)tg_dtype_size(dt), root); }

/* The same on a CUDA device's memory through NCCL (dist_nccl.c) */
static int nccl_allreduce(tg_device *d, void *buf, int64_t count, tg_dtype dt, int op) {
  char what[160];
  if (check_allreduce(buf, count, dt, (tg_dist_op)op, what, sizeof what) < 0) return -1;
  dist_watch_begin(what, world_rank, world_size);
  int rc = dist_nccl_allreduce(d, buf, count, dt, (tg_dist_op)op);
  dist_watch_end();
  return rc < 0 ? fail_in("tg_dist_allreduce") : 0;
}
static int nccl_broadcast(tg_device *d, void *buf, int64_t count, tg_dtype dt, int root) {
  size_t nbytes = (size_t)count * (size_t)tg_dtype_size(dt);
  char what[160];
  if (check_broadcast(buf, nbytes, root, what, sizeof what) < 0) return -1;
  dist_watch_begin(what, world_rank, world_size);
  int rc = dist_nccl_broadcast(d, buf, nbytes, root);
  dist_watch_end();
  return rc < 0 ? fail_in("tg_dist_broadcast") : 0;
}
typedef int (*device_op)(tg_device *d, void *buf, int64_t count, tg_dtype dt, int arg);

/* Runs f on t's memory: in place on a host device, or on a CUDA device
 * through NCCL (g) where every rank can, else through a host copy. */
static int on_memory(tg_tensor *t, host_op f, device_op g, int arg, const char *fn) {
  tg_buffer *b = tensor_memory(t, fn);
  if (!b) return -1;
  int64_t n = tg_numel(t);
  tg_dtype dt = tg_dtype_of(t);
  if (b->dev->host_memory) return f(b->ptr, n, dt, arg);
  if (world && dist_nccl_use(b->dev, world_rank, world_size)) return g(b->dev, b->ptr, n, dt, arg);
  size_t nbytes = (size_t)n * (size_t)tg_dtype_size(dt);
  void *tmp = malloc(nbytes ? nbytes : 1);
  if (!tmp) return tg_seterr("%s: out of memory for a %zu-byte host copy", fn, nbytes);
  int rc = buffer_copyout(b, tmp, nbytes);
  if (rc == 0) rc = f(tmp, n, dt, arg);
  if (rc == 0) rc = buffer_copyin(b, tmp, nbytes);
  free(tmp);
  return rc;
}

/* A fresh tensor with t's values, on t's device, that no other tensor reads. */
static tg_tensor *fresh_copy(tg_tensor *t, const char *fn) {
  if (!t) { tensor_null_arg(fn, "t"); return NULL; }
  size_t nbytes = (size_t)tg_numel(t) * (size_t)tg_dtype_size(tg_dtype_of(t));
  void *tmp = malloc(nbytes ? nbytes : 1);
  if (!tmp) TG_FAIL("%s: out of memory for a %zu-byte host copy", fn, nbytes);
  tg_tensor *r = NULL;
  if (tg_data(t, tmp, nbytes) == 0) {
    const char *prev = tensor_device_begin(t->device);
    r = tg_from_data(tmp, tg_shape_of(t), tg_dtype_of(t));
    tensor_device_end(prev);
  }
  free(tmp);
  return r;
}

int tg_dist_allreduce_inplace(tg_tensor *t, tg_dist_op op) { return on_memory(t, host_allreduce, nccl_allreduce, (int)op, "tg_dist_allreduce_inplace"); }
int tg_dist_broadcast_inplace(tg_tensor *t, int root) { return on_memory(t, host_broadcast, nccl_broadcast, root, "tg_dist_broadcast_inplace"); }

tg_tensor *tg_dist_allreduce(tg_tensor *t, tg_dist_op op) {
  tg_tensor *r = fresh_copy(t, "tg_dist_allreduce");
  return r && tg_dist_allreduce_inplace(r, op) == 0 ? r : NULL;
}

tg_tensor *tg_dist_broadcast(tg_tensor *t, int root) {
  tg_tensor *r = fresh_copy(t, "tg_dist_broadcast");
  return r && tg_dist_broadcast_inplace(r, root) == 0 ? r : NULL;
}
