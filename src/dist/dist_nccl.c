/* dist_nccl.c: collectives of CUDA buffers across ranks through NCCL
 * (libnccl.so.2 from the CUDA toolkit or NVIDIA's packages, opened with
 * dlopen on first use; tg builds without it). A rank's CUDA tensor is
 * reduced in place on its GPU (ncclAllReduce on the default stream, then
 * a wait), without the host copies the MPI path needs. MPI still makes
 * the world: rank 0's NCCL id goes to every rank by an MPI broadcast, and
 * each GPU gets one communicator over the world at its first collective.
 *
 * Every rank must run the same collectives, so whether a device's
 * collectives use NCCL is decided by all ranks together (an MPI sum of
 * who can), once per device; a rank without libnccl (or TG_NCCL=0) makes
 * the whole world use host memory for that device. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include "dist/dist.h"
#include "dist/dist_nccl.h"
#include "runtime/cuda.h"
#include "util/util.h"
#include "util/settings.h"

#define MAX_COMMS 16

static struct {
  void *lib;
  nccl_get_version_fn GetVersion;
  nccl_get_unique_id_fn GetUniqueId;
  nccl_comm_init_rank_fn CommInitRank;
  nccl_comm_destroy_fn CommDestroy;
  nccl_all_reduce_fn AllReduce;
  nccl_broadcast_fn Broadcast;
  nccl_get_error_string_fn GetErrorString;
  char version[32];
} nccl;

typedef enum { COMM_UNDECIDED, COMM_NCCL, COMM_HOST } comm_state;
static struct { comm_state state; nccl_comm comm; } comms[MAX_COMMS];   /* per GPU ordinal */
static pthread_mutex_t nccl_lock = PTHREAD_MUTEX_INITIALIZER;

static int nccl_fail(const char *call, nccl_result r) {
  const char *s = nccl.GetErrorString ? nccl.GetErrorString(r) : NULL;
  return tg_seterr("NCCL: %s failed: %s (code %d)", call, s ? s : "no message", (int)r);
}

int dist_nccl_load(void) {
  if (nccl.lib) return 0;
  const char *path = setting_str_or(SET_TG_NCCL_LIB, "libnccl.so.2");
  void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!lib) return tg_seterr("NCCL: cannot load %s (NVIDIA's NCCL, with the CUDA toolkit; TG_NCCL_LIB names another file): %s", path, dlerror());
  struct { const char *name; void **slot; } fns[] = {
    { "ncclGetVersion", (void **)&nccl.GetVersion }, { "ncclGetUniqueId", (void **)&nccl.GetUniqueId },
    { "ncclCommInitRank", (void **)&nccl.CommInitRank }, { "ncclCommDestroy", (void **)&nccl.CommDestroy },
    { "ncclAllReduce", (void **)&nccl.AllReduce }, { "ncclBroadcast", (void **)&nccl.Broadcast },
    { "ncclGetErrorString", (void **)&nccl.GetErrorString },
  };
  for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++) {
    void *p = dlsym(lib, fns[i].name);
    if (!p) {
      memset(&nccl, 0, sizeof nccl);   /* (mapped still: dist_nccl_unload) */
      return tg_seterr("NCCL: %s has no %s", path, fns[i].name);
    }
    memcpy(fns[i].slot, &p, sizeof p);   /* POSIX: a dlsym result converts to a function pointer */
  }
  int v = 0;
  nccl.lib = lib;
  if (nccl.GetVersion(&v) != 0 || v < 21000) {   /* 2.10: ncclAvg */
    dist_nccl_unload();
    return tg_seterr("NCCL: %s is version %d; tg needs 2.10 or later (ncclAvg)", path, v);
  }
  snprintf(nccl.version, sizeof nccl.version, "NCCL %d.%d.%d", v / 10000, v / 100 % 100, v % 100);
  return 0;
}

const char *dist_nccl_version(void) { return nccl.lib ? nccl.version : NULL; }

/* The library stays mapped: NCCL's own threads (the bootstrap's, made by
 * ncclGetUniqueId) may outlive its communicators. */
void dist_nccl_unload(void) {
  for (int i = 0; i < MAX_COMMS; i++)
    if (comms[i].comm && nccl.CommDestroy) nccl.CommDestroy(comms[i].comm);
  memset(comms, 0, sizeof comms);
  memset(&nccl, 0, sizeof nccl);
}

/* Slot key's communicator over the world: rank 0's id to every rank,
 * then every rank joins (ncclCommInitRank waits for all of them). */
static int make_comm(int key, int rank, int size) {
  nccl_id id;
  memset(&id, 0, sizeof id);
  nccl_result r = rank == 0 ? nccl.GetUniqueId(&id) : 0;
  /* the broadcast runs on every rank even when rank 0 failed: it sends
   * the zeros, and the ranks fail below instead of waiting */
  if (tg_dist_broadcast_host(&id, sizeof id, 0) < 0) return -1;
  if (r != 0) return nccl_fail("ncclGetUniqueId", r);
  nccl_id zero;
  memset(&zero, 0, sizeof zero);
  if (!memcmp(&id, &zero, sizeof id)) return tg_seterr("NCCL: rank 0 could not make an id for the communicator");
  char what[96];
  snprintf(what, sizeof what, "NCCL communicator of %d ranks", size);
  dist_watch_begin(what, rank, size);
  r = nccl.CommInitRank(&comms[key].comm, size, id, rank);
  dist_watch_end();
  if (r != 0) { comms[key].comm = NULL; return nccl_fail("ncclCommInitRank", r); }
  return 0;
}

/* Whether every rank can (an MPI sum of the ranks that can) */
static bool all_can(bool can, int size) {
  int32_t n = can;
  return tg_dist_allreduce_host(&n, 1, TG_I32, TG_DIST_SUM) == 0 && n == size;
}

int dist_nccl_comm_init(int key, int rank, int size) {
  if (key < 0 || key >= MAX_COMMS) return tg_seterr("NCCL: communicator slot %d (0 to %d)", key, MAX_COMMS - 1);
  pthread_mutex_lock(&nccl_lock);
  int rc = dist_nccl_load() < 0 ? -1 : comms[key].comm ? 0 : make_comm(key, rank, size);
  if (rc == 0) comms[key].state = COMM_NCCL;
  pthread_mutex_unlock(&nccl_lock);
  return rc;
}

bool dist_nccl_use(tg_device *d, int rank, int size) {
  if (size <= 1 || !d || d->host_memory) return false;
  int key = cuda_device_enter(d);
  if (key < 0 || key >= MAX_COMMS) { tg_clear_error(); return false; }
  pthread_mutex_lock(&nccl_lock);
  if (comms[key].state == COMM_UNDECIDED) {
    /* every rank together: can each load NCCL, then make the communicator */
    bool loaded = setting_int(SET_TG_NCCL) != 0 && dist_nccl_load() == 0;
    if (!loaded && setting_int(SET_DEBUG) >= 1) fprintf(stderr, "tg: %s: collectives through host memory: %s\n", d->name, tg_error());
    bool ok = all_can(loaded, size);
    if (ok) {
      int rc = make_comm(key, rank, size);
      if (rc < 0 && setting_int(SET_DEBUG) >= 1) fprintf(stderr, "tg: %s: collectives through host memory: %s\n", d->name, tg_error());
      ok = all_can(rc == 0, size);
      if (!ok && comms[key].comm) nccl.CommDestroy(comms[key].comm), comms[key].comm = NULL;
    }
    comms[key].state = ok ? COMM_NCCL : COMM_HOST;
    tg_clear_error();
  }
  bool use = comms[key].state == COMM_NCCL;
  pthread_mutex_unlock(&nccl_lock);
  return use;
}

static int nccl_type_of(tg_dtype dt) {
  switch (dt) {
  case TG_F32: return TG_NCCL_FLOAT32;
  case TG_F64: return TG_NCCL_FLOAT64;
  case TG_I32: return TG_NCCL_INT32;
  case TG_I64: return TG_NCCL_INT64;
  default: return -1;
  }
}

int dist_nccl_allreduce_raw(int key, void *ptr, int64_t count, tg_dtype dt, tg_dist_op op) {
  int type = nccl_type_of(dt);
  if (key < 0 || key >= MAX_COMMS || !comms[key].comm) return tg_seterr("NCCL: no communicator in slot %d", key);
  if (type < 0) return tg_seterr("NCCL: no NCCL type for %s", tg_dtype_name(dt));
  int nop = op == TG_DIST_MAX ? TG_NCCL_MAX : op == TG_DIST_MEAN ? TG_NCCL_AVG : TG_NCCL_SUM;
  nccl_result r = nccl.AllReduce(ptr, ptr, (size_t)count, type, nop, comms[key].comm, NULL);
  return r ? nccl_fail("ncclAllReduce", r) : 0;
}

int dist_nccl_broadcast_raw(int key, void *ptr, size_t nbytes, int root) {
  if (key < 0 || key >= MAX_COMMS || !comms[key].comm) return tg_seterr("NCCL: no communicator in slot %d", key);
  nccl_result r = nccl.Broadcast(ptr, ptr, nbytes, TG_NCCL_UINT8, root, comms[key].comm, NULL);
  return r ? nccl_fail("ncclBroadcast", r) : 0;
}

/* On d's GPU, its context current: the call queued on the default
 * stream, then the wait for it (the device's synchronize) */
int dist_nccl_allreduce(tg_device *d, void *ptr, int64_t count, tg_dtype dt, tg_dist_op op) {
  int key = cuda_device_enter(d);
  if (key < 0) return -1;
  int rc = dist_nccl_allreduce_raw(key, ptr, count, dt, op);
  return rc == 0 ? d->synchronize(d) : rc;
}

int dist_nccl_broadcast(tg_device *d, void *ptr, size_t nbytes, int root) {
  int key = cuda_device_enter(d);
  if (key < 0) return -1;
  int rc = dist_nccl_broadcast_raw(key, ptr, nbytes, root);
  return rc == 0 ? d->synchronize(d) : rc;
}
