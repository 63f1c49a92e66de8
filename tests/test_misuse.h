/* test_misuse.h: the table of misuse cases (tests/test_misuse.c, generated
 * by tests/gen/gen_misuse.py) and the fixtures its calls use. */
#ifndef TG_TEST_MISUSE_H
#define TG_TEST_MISUSE_H

#include "test.h"
#include "tg_dist.h"   /* not included by tg.h */
#include "tg_kernel.h"

/* What a case's call returned. */
enum { M_ERROR = 1, M_ACCEPTED, M_UNCHECKED };

/* How strict a case is: an error with a message required; the header
 * allows the argument (it may succeed); a known gap (KNOWN in the
 * generator: accepted or silent for now, counted). None may crash. */
enum { M_STRICT, M_OPTIONAL, M_KNOWN_GAP };

typedef struct {
  const char *name;   /* "tg_reshape(t=NULL)" */
  int (*run)(void);
  int level;          /* M_STRICT ... */
} misuse_case;
extern const misuse_case misuse_cases[];
extern const int misuse_ncases;

/* Ordinary arguments (made on first use, in the child): a (2, 3) float32
 * tensor, an array of three, a zeroed scratch buffer, and the handles of
 * tests/goldens/llm_llama.gguf and friends. */
tg_tensor *fx_tensor(void);
tg_tensor **fx_tensors(void);
extern char fx_bytes[1 << 16];
tg_tokenizer *fx_tokenizer(void);
tg_llm *fx_llm(void);
tg_sampler *fx_sampler(void);
tg_chat_template *fx_template(void);
tg_token_stream *fx_stream(void);
tg_jit *fx_jit(void);
tg_optim *fx_optim(void);
tg_schedule *fx_schedule(void);
int fx_jit_fn(void *ctx, tg_tensor *const *in, int nin, tg_tensor **out, int nout);

#endif
