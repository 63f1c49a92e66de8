/* dist_nccl.h: NCCL's entry points as tg calls them (dist_nccl.c), declared
 * without nccl.h: tg builds with neither the CUDA toolkit nor NCCL, and
 * opens libnccl with dlopen. tests/dist/nccl_check.c compiles this header
 * after the real nccl.h (NCCL_MAJOR defined): the types below are then
 * nccl.h's own, so assigning each NCCL function to its pointer type here
 * checks its parameters, and static assertions check the constants. */
#ifndef TG_DIST_NCCL_H
#define TG_DIST_NCCL_H

#include <stdbool.h>
#include <stddef.h>
#include "tg.h"
#include "tg_dist.h"

#define TG_NCCL_ID_BYTES 128
#ifdef NCCL_MAJOR
typedef ncclResult_t nccl_result;
typedef ncclUniqueId nccl_id;
typedef ncclComm_t nccl_comm;
typedef cudaStream_t nccl_stream;
typedef ncclDataType_t nccl_type;
typedef ncclRedOp_t nccl_op;
#else
typedef int nccl_result;                                   /* ncclSuccess 0 */
typedef struct { char internal[TG_NCCL_ID_BYTES]; } nccl_id;
typedef struct ncclComm *nccl_comm;
typedef struct CUstream_st *nccl_stream;                   /* NULL: the default stream */
typedef int nccl_type, nccl_op;
#endif

/* nccl.h's values */
enum { TG_NCCL_UINT8 = 1, TG_NCCL_INT32 = 2, TG_NCCL_INT64 = 4, TG_NCCL_FLOAT32 = 7, TG_NCCL_FLOAT64 = 8 };
enum { TG_NCCL_SUM = 0, TG_NCCL_MAX = 2, TG_NCCL_AVG = 4 };   /* ncclAvg: NCCL 2.10 */

typedef nccl_result (*nccl_get_version_fn)(int *version);
typedef nccl_result (*nccl_get_unique_id_fn)(nccl_id *id);
typedef nccl_result (*nccl_comm_init_rank_fn)(nccl_comm *comm, int nranks, nccl_id id, int rank);
typedef nccl_result (*nccl_comm_destroy_fn)(nccl_comm comm);
typedef nccl_result (*nccl_all_reduce_fn)(const void *send, void *recv, size_t count, nccl_type type, nccl_op op, nccl_comm comm, nccl_stream stream);
typedef nccl_result (*nccl_broadcast_fn)(const void *send, void *recv, size_t count, nccl_type type, int root, nccl_comm comm, nccl_stream stream);
typedef const char *(*nccl_get_error_string_fn)(nccl_result result);

#ifndef NCCL_MAJOR
typedef struct tg_device tg_device;

/* Loads libnccl (TG_NCCL_LIB, else libnccl.so.2) once: 0, or -1 + tg_error
 * saying what is missing. dist_nccl_version: "NCCL 2.28.9" once loaded. */
int dist_nccl_load(void);
const char *dist_nccl_version(void);
/* Whether collectives of d's buffers go through NCCL: d a CUDA device, a
 * world of more than one rank, TG_NCCL not 0, and every rank able to (its
 * libnccl loads and makes a communicator): decided by every rank together
 * at d's first collective, then kept. Else they go through host memory. */
bool dist_nccl_use(tg_device *d, int rank, int size);
/* In place on d's memory at ptr (dist_nccl_use said yes): count elements
 * of dt (float32, float64, int32, int64; mean: ncclAvg), nbytes from root.
 * Waits for the result. 0 or -1 + tg_error. */
int dist_nccl_allreduce(tg_device *d, void *ptr, int64_t count, tg_dtype dt, tg_dist_op op);
int dist_nccl_broadcast(tg_device *d, void *ptr, size_t nbytes, int root);

/* For tests, without a GPU: the communicator of slot `key` (0-15) made as
 * for a device (rank 0's id broadcast), and the calls above on a raw
 * pointer and the default stream; dist_nccl_unload destroys the
 * communicators and forgets the library (a test's TG_NCCL_LIB then loads
 * another; the old one stays mapped for NCCL's threads). */
int dist_nccl_comm_init(int key, int rank, int size);
int dist_nccl_allreduce_raw(int key, void *ptr, int64_t count, tg_dtype dt, tg_dist_op op);
int dist_nccl_broadcast_raw(int key, void *ptr, size_t nbytes, int root);
void dist_nccl_unload(void);
#endif

#endif
