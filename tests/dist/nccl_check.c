/* nccl_check.c: src/dist/dist_nccl.h against NVIDIA's nccl.h. Compiled (not
 * run) by tests/test_dist.c's dist_nccl_header_matches where nccl.h and
 * cuda_runtime.h are present: with nccl.h first, dist_nccl.h's types are
 * nccl.h's, so each assignment below checks tg's pointer type for that
 * function (parameters, order, return), and the assertions tg's copies of
 * nccl.h's constants. */
#include <nccl.h>
#include "dist/dist_nccl.h"

#define SAME(a, b) ((int)(a) == (int)(b))
_Static_assert(TG_NCCL_ID_BYTES == NCCL_UNIQUE_ID_BYTES, "the id's size");
_Static_assert(sizeof(nccl_id) == TG_NCCL_ID_BYTES, "the id's size");
_Static_assert(SAME(TG_NCCL_UINT8, ncclUint8) && SAME(TG_NCCL_INT32, ncclInt32) && SAME(TG_NCCL_INT64, ncclInt64), "integer types");
_Static_assert(SAME(TG_NCCL_FLOAT32, ncclFloat32) && SAME(TG_NCCL_FLOAT64, ncclFloat64), "float types");
_Static_assert(SAME(TG_NCCL_SUM, ncclSum) && SAME(TG_NCCL_MAX, ncclMax) && SAME(TG_NCCL_AVG, ncclAvg), "reductions");
_Static_assert(ncclSuccess == 0, "success is 0");

nccl_get_version_fn check_version = ncclGetVersion;
nccl_get_unique_id_fn check_unique_id = ncclGetUniqueId;
nccl_comm_init_rank_fn check_init = ncclCommInitRank;
nccl_comm_destroy_fn check_destroy = ncclCommDestroy;
nccl_all_reduce_fn check_all_reduce = ncclAllReduce;
nccl_broadcast_fn check_broadcast = ncclBroadcast;
nccl_get_error_string_fn check_error_string = ncclGetErrorString;
