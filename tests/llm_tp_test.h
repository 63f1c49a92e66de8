/* llm_tp_test.h: what the tensor-parallel tests share (test_llm_tp.c). */
#ifndef TG_TESTS_LLM_TP_TEST_H
#define TG_TESTS_LLM_TP_TEST_H
#include "llm/llm.h"

/* The biggest copy between devices in the schedule of one decode step of
 * m (bytes, read and written counted), or -1 when it did not schedule;
 * *entries gets the schedule's length. */
int64_t tp_decode_biggest_copy(tg_llm *m, int *entries);

/* The file at path on CPU:0,CPU:1 against one device (f32 KV caches),
 * from a 7-token prompt through `steps` greedy tokens (both go on with one
 * device's): the logits within atol, and the same best token wherever one
 * device's leads its runner-up by more than 2 atol. Returns how many steps
 * compared their tokens. */
int tp_same_as_one(const char *path, int steps, double atol, const char *what);
/* The same for two loaded models (one device's and tensor parallel's) from
 * prompt, the logits within rtol and atol. */
int tp_models_same(tg_llm *one, tg_llm *tp, const int32_t *prompt, int n, int steps, double rtol, double atol, const char *what);

#endif
