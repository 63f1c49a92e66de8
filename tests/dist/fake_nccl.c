/* fake_nccl.c: a stand-in for libnccl.so.2 (built as tests/libfake_nccl.so)
 * that records the calls tg makes, so tests/test_dist.c checks them
 * without a GPU (TG_NCCL_LIB names it). Its signatures are libnccl's
 * (src/dist/dist_nccl.h, itself checked against nccl.h). A count of 13 or
 * a root of 7 fails with ncclInvalidArgument (4). */
#include <stdint.h>
#include <string.h>
#include "fake_nccl.h"

fake_nccl_log_t fake_nccl_log;
static int comm_object;   /* what the fake's communicators point at */

nccl_result ncclGetVersion(int *v) { *v = 21809; return 0; }
nccl_result ncclGetUniqueId(nccl_id *id) {
  memset(id, 0, sizeof *id);
  memcpy(id->internal, "fake nccl id", 12);
  return 0;
}
nccl_result ncclCommInitRank(nccl_comm *comm, int nranks, nccl_id id, int rank) {
  fake_nccl_log.calls++;
  fake_nccl_log.nranks = nranks, fake_nccl_log.rank = rank;
  memcpy(fake_nccl_log.id, id.internal, sizeof id.internal);
  *comm = fake_nccl_log.made = (nccl_comm)(void *)&comm_object;
  return 0;
}
nccl_result ncclCommDestroy(nccl_comm comm) { fake_nccl_log.destroyed += comm == fake_nccl_log.made; return 0; }
nccl_result ncclAllReduce(const void *send, void *recv, size_t count, nccl_type type, nccl_op op, nccl_comm comm, nccl_stream stream) {
  fake_nccl_log.calls++;
  fake_nccl_log.send = send, fake_nccl_log.recv = recv, fake_nccl_log.count = count, fake_nccl_log.type = type, fake_nccl_log.op = op;
  fake_nccl_log.comm = comm, fake_nccl_log.stream = stream, fake_nccl_log.root = -1;
  return count == 13 ? 4 : 0;
}
nccl_result ncclBroadcast(const void *send, void *recv, size_t count, nccl_type type, int root, nccl_comm comm, nccl_stream stream) {
  fake_nccl_log.calls++;
  fake_nccl_log.send = send, fake_nccl_log.recv = recv, fake_nccl_log.count = count, fake_nccl_log.type = type, fake_nccl_log.op = -1;
  fake_nccl_log.comm = comm, fake_nccl_log.stream = stream, fake_nccl_log.root = root;
  return root == 7 ? 4 : 0;
}
const char *ncclGetErrorString(nccl_result r) { return r == 4 ? "invalid argument (fake)" : "fake error"; }
