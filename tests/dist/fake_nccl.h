/* fake_nccl.h: the record the stand-in libnccl (fake_nccl.c) keeps of the
 * calls tg makes, which tests/test_dist_nccl.c reads (dlsym
 * "fake_nccl_log"). */
#ifndef TG_TESTS_FAKE_NCCL_H
#define TG_TESTS_FAKE_NCCL_H

#include "dist/dist_nccl.h"

typedef struct {
  int calls, nranks, rank, type, op, root, destroyed;
  const void *send;
  void *recv;
  size_t count;
  nccl_comm comm, made;
  nccl_stream stream;
  char id[TG_NCCL_ID_BYTES];
} fake_nccl_log_t;

#endif
