/* dist_mpi.c: the MPI transport, Open MPI opened with dlopen.
 *
 * MPI fixes its C API but not its binary interface: MPI_Comm, MPI_Datatype,
 * MPI_Op and MPI_Errhandler are whatever an implementation makes them, and
 * MPI_COMM_WORLD, MPI_FLOAT, MPI_SUM ... are macros. In Open MPI (4.x, 5.x)
 * each handle is a pointer to a predefined object the library exports
 * (mpi.h: `#define MPI_COMM_WORLD ((MPI_Comm)&ompi_mpi_comm_world)`), and
 * MPI_IN_PLACE is (void *)1; so here every handle is a void * found with
 * dlsym, as other dlopen users of Open MPI do. MPICH and its family (Intel
 * MPI, MVAPICH) use integer handles instead; a libmpi without Open MPI's
 * objects is refused with an error saying so.
 *
 * libmpi goes in with RTLD_GLOBAL: Open MPI loads its own components
 * (shared memory, TCP, ...) with dlopen, and they look for libmpi's symbols
 * in the global scope. */
#include <dlfcn.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include "dist/dist.h"
#include "util/util.h"
#include "util/settings.h"

#define OMPI_IN_PLACE ((void *)1)
#define DEFAULT_LIB "libmpi.so.40"
#define INSTALL_HINT "Open MPI; Debian: apt-get install openmpi-bin libopenmpi-dev; TG_MPI_LIB names another file"

typedef void *mpi_handle;
static struct {
  void *lib;
  int (*Initialized)(int *flag);
  int (*Init)(int *argc, char ***argv);
  int (*Finalized)(int *flag);
  int (*Finalize)(void);
  int (*Comm_rank)(mpi_handle comm, int *rank);
  int (*Comm_size)(mpi_handle comm, int *size);
  int (*Comm_set_errhandler)(mpi_handle comm, mpi_handle errhandler);
  int (*Allreduce)(const void *send, void *recv, int count, mpi_handle type, mpi_handle op, mpi_handle comm);
  int (*Bcast)(void *buf, int count, mpi_handle type, int root, mpi_handle comm);
  int (*Barrier)(mpi_handle comm);
  int (*Send)(const void *buf, int count, mpi_handle type, int dest, int tag, mpi_handle comm);
  int (*Recv)(void *buf, int count, mpi_handle type, int src, int tag, mpi_handle comm, void *status);
  int (*Error_string)(int code, char *s, int *len);
  int (*Get_library_version)(char *s, int *len);
  mpi_handle comm_world, errors_return, op_sum, op_max;
  mpi_handle t_byte, t_float, t_double, t_int, t_int64;
} mpi;

/* "MPI_Allreduce failed: MPI_ERR_TRUNCATE: message truncated" */
static int mpi_fail(const char *call, int code) {
  char s[1024] = "";
  int len = 0;
  if (mpi.Error_string && mpi.Error_string(code, s, &len) == 0 && len > 0 && len < (int)sizeof s) s[len] = 0;
  else snprintf(s, sizeof s, "error code %d", code);
  return tg_seterr("MPI: %s failed: %s", call, s);
}

static int load_symbols(const char *path) {
  struct { const char *name; void **slot; } fns[] = {
    { "MPI_Initialized", (void **)&mpi.Initialized }, { "MPI_Init", (void **)&mpi.Init },
    { "MPI_Finalized", (void **)&mpi.Finalized }, { "MPI_Finalize", (void **)&mpi.Finalize },
    { "MPI_Comm_rank", (void **)&mpi.Comm_rank }, { "MPI_Comm_size", (void **)&mpi.Comm_size },
    { "MPI_Comm_set_errhandler", (void **)&mpi.Comm_set_errhandler },
    { "MPI_Allreduce", (void **)&mpi.Allreduce }, { "MPI_Bcast", (void **)&mpi.Bcast },
    { "MPI_Barrier", (void **)&mpi.Barrier }, { "MPI_Error_string", (void **)&mpi.Error_string },
    { "MPI_Send", (void **)&mpi.Send }, { "MPI_Recv", (void **)&mpi.Recv },
    { "MPI_Get_library_version", (void **)&mpi.Get_library_version },
  };
  for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++) {
    void *p = dlsym(mpi.lib, fns[i].name);
    if (!p) return tg_seterr("MPI: %s has no %s: not an MPI-3 library (" INSTALL_HINT ")", path, fns[i].name);
    memcpy(fns[i].slot, &p, sizeof p);   /* POSIX: a dlsym result converts to a function pointer */
  }
  struct { const char *name; mpi_handle *slot; } objs[] = {
    { "ompi_mpi_comm_world", &mpi.comm_world }, { "ompi_mpi_errors_return", &mpi.errors_return },
    { "ompi_mpi_op_sum", &mpi.op_sum }, { "ompi_mpi_op_max", &mpi.op_max },
    { "ompi_mpi_byte", &mpi.t_byte }, { "ompi_mpi_float", &mpi.t_float }, { "ompi_mpi_double", &mpi.t_double },
    { "ompi_mpi_int", &mpi.t_int }, { "ompi_mpi_long_long_int", &mpi.t_int64 },
  };
  for (size_t i = 0; i < sizeof objs / sizeof objs[0]; i++) {
    *objs[i].slot = dlsym(mpi.lib, objs[i].name);
    if (!*objs[i].slot)
      return tg_seterr("MPI: %s is not Open MPI (no %s); tg supports Open MPI's binary interface only "
                       "(MPICH, Intel MPI and MVAPICH use integer handles) (" INSTALL_HINT ")", path, objs[i].name);
  }
  return 0;
}

static dist_backend backend;

static int mpi_init(int *rank, int *size) {
  int flag = 0, rc;
  if (mpi.Finalized(&flag) == 0 && flag) return tg_seterr("MPI: this process finalized its world; MPI cannot start again in it");
  if ((rc = mpi.Initialized(&flag)) != 0) return mpi_fail("MPI_Initialized", rc);
  if (!flag && (rc = mpi.Init(NULL, NULL)) != 0) return mpi_fail("MPI_Init", rc);
  /* errors come back as codes, so they become tg errors instead of aborts */
  if ((rc = mpi.Comm_set_errhandler(mpi.comm_world, mpi.errors_return)) != 0) return mpi_fail("MPI_Comm_set_errhandler", rc);
  if ((rc = mpi.Comm_rank(mpi.comm_world, rank)) != 0) return mpi_fail("MPI_Comm_rank", rc);
  if ((rc = mpi.Comm_size(mpi.comm_world, size)) != 0) return mpi_fail("MPI_Comm_size", rc);
  char v[8192] = "";
  int len = 0;
  if (mpi.Get_library_version(v, &len) == 0) {
    v[len > 0 && len < (int)sizeof v ? len : 0] = 0;
    v[strcspn(v, ",\n")] = 0;   /* "Open MPI v4.1.4, package: ..." -> "Open MPI v4.1.4" */
  }
  snprintf(backend.description, sizeof backend.description, "%s", *v ? v : "Open MPI");
  return 0;
}

static mpi_handle mpi_type(tg_dtype dt) {
  switch (dt) {
  case TG_F32: return mpi.t_float;
  case TG_F64: return mpi.t_double;
  case TG_I32: return mpi.t_int;
  case TG_I64: return mpi.t_int64;
  default: return NULL;
  }
}

static int mpi_allreduce(void *buf, int count, tg_dtype dt, dist_reduce op) {
  mpi_handle t = mpi_type(dt);
  if (!t) return tg_seterr("MPI: no MPI type for %s", tg_dtype_name(dt));
  int rc = mpi.Allreduce(OMPI_IN_PLACE, buf, count, t, op == DIST_MAX ? mpi.op_max : mpi.op_sum, mpi.comm_world);
  return rc ? mpi_fail("MPI_Allreduce", rc) : 0;
}

static int mpi_broadcast(void *buf, int nbytes, int root) {
  int rc = mpi.Bcast(buf, nbytes, mpi.t_byte, root, mpi.comm_world);
  return rc ? mpi_fail("MPI_Bcast", rc) : 0;
}

/* tag 0: a pair's messages match in the order they were sent (MPI's
 * non-overtaking rule); MPI_STATUS_IGNORE is NULL in Open MPI */
static int mpi_send(const void *buf, int nbytes, int dest) {
  int rc = mpi.Send(buf, nbytes, mpi.t_byte, dest, 0, mpi.comm_world);
  return rc ? mpi_fail("MPI_Send", rc) : 0;
}

static int mpi_recv(void *buf, int nbytes, int src) {
  int rc = mpi.Recv(buf, nbytes, mpi.t_byte, src, 0, mpi.comm_world, NULL);
  return rc ? mpi_fail("MPI_Recv", rc) : 0;
}

static int mpi_barrier(void) {
  int rc = mpi.Barrier(mpi.comm_world);
  return rc ? mpi_fail("MPI_Barrier", rc) : 0;
}

static int mpi_finalize(void) {
  int flag = 0, rc;
  if (mpi.Finalized(&flag) == 0 && flag) return 0;
  rc = mpi.Finalize();
  return rc ? mpi_fail("MPI_Finalize", rc) : 0;
}

static dist_backend backend = {
  .name = "mpi",
  .init = mpi_init,
  .allreduce = mpi_allreduce,
  .broadcast = mpi_broadcast,
  .send = mpi_send,
  .recv = mpi_recv,
  .barrier = mpi_barrier,
  .finalize = mpi_finalize,
};

dist_backend *dist_mpi_backend(void) {
  if (mpi.lib) return &backend;
  const char *path = setting_str_or(SET_TG_MPI_LIB, DEFAULT_LIB);
  void *lib = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
  if (!lib) TG_FAIL("MPI: cannot load %s (" INSTALL_HINT "): %s", path, dlerror());
  mpi.lib = lib;
  if (load_symbols(path) != 0) {
    dlclose(lib);
    memset(&mpi, 0, sizeof mpi);
    return NULL;
  }
  return &backend;
}

int dist_launched_by_mpi(void) {
  static const setting_id vars[] = { SET_OMPI_COMM_WORLD_SIZE, SET_PMIX_RANK, SET_PMI_SIZE, SET_PMI_RANK };
  for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
    const char *v = setting_str(vars[i]);
    if (v && *v) return 1;
  }
  return 0;
}
