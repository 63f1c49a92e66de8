/* serve_slots.h: tg serve's parallel slots (serve_backend's slot
 * functions) over a chat_session whose model holds one sequence per slot. */
#ifndef TG_TOOLS_SERVE_SLOTS_H
#define TG_TOOLS_SERVE_SLOTS_H

#include "chat_session.h"
#include "serve/serve.h"

typedef struct serve_slots {
  chat_session *s;
  int n;
  struct serve_slot *slot;
  float *logits;             /* n rows of n_vocab */
} serve_slots;

int serve_slots_init(serve_slots *ss, chat_session *s, int n);
void serve_slots_free(serve_slots *ss);
/* Runs every batch size the slots will use once (1, 2, 4, ... n rows), so
 * that the first requests do not wait for its kernels to compile; the
 * caches are left empty. 0 or -1 + tg_error. */
int serve_slots_warmup(serve_slots *ss);
/* The serve_backend slot functions; ctx is the serve_slots. */
int serve_slots_cached(void *ctx, int slot, const int *prompt, int n);
int serve_slots_begin(void *ctx, int slot, const int *prompt, int n, const serve_sampling *p, int max_tokens, int *n_cached);
int serve_slots_step(void *ctx, const int *slots, int n, serve_slot_event *ev);
void serve_slots_end(void *ctx, int slot);
int serve_slots_embed(void *ctx, int slot, const int *tokens, int n, float *out);

#endif
