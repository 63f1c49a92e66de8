/* llm_tp_test.h: what the tensor-parallel tests share (test_llm_tp.c). */
#ifndef TG_TESTS_LLM_TP_TEST_H
#define TG_TESTS_LLM_TP_TEST_H
#include "llm/llm.h"

/* The biggest copy between devices in the schedule of one decode step of
 * m (bytes, read and written counted), or -1 when it did not schedule;
 * *entries gets the schedule's length. */
int64_t tp_decode_biggest_copy(tg_llm *m, int *entries);

#endif
