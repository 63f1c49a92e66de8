/* serve_slots.c: tg serve's parallel slots over one model holding a
 * sequence per slot (tg_llm_opts.n_seq): each slot's generation state
 * (its prompt still to read, sampler, grammar, text stream), and the step
 * that advances all of them in one forward pass (tg_llm_eval_batch,
 * llama.cpp's unified batch): one token of every generating slot, then
 * pieces of the prompts still being read, oldest first, up to
 * SLOT_STEP_ROWS rows in all (so the others' decoding is not held up for
 * long). The weights stream once per step. A model whose batches take one
 * row per sequence (delta-net layers) reads its prompt pieces on their
 * own (tg_llm_eval), then decodes the rest in one batch. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "serve_slots.h"
#include "llm/llm.h"
#include "util/util.h"

#define SLOT_STEP_ROWS 64   /* rows of one step: decode tokens and prompt pieces */

typedef struct serve_slot {
  bool active, reading;      /* a generation; still reading its prompt */
  int32_t *prompt;
  int n_prompt, fed;         /* prompt tokens; those in the cache */
  int max_tokens, n_gen;
  int32_t next;              /* the sampled token the next decode feeds */
  bool have_next;
  tg_sampler *smp;
  tg_grammar *g;
  tg_token_stream *ts;
  strbuf text;               /* this step's new text */
} serve_slot;

int serve_slots_init(serve_slots *ss, chat_session *s, int n) {
  memset(ss, 0, sizeof *ss);
  ss->s = s;
  ss->n = n;
  ss->slot = tg_xcalloc((size_t)n, sizeof *ss->slot);
  ss->logits = tg_xmalloc(sizeof(float) * (size_t)n * (size_t)tg_llm_config_of(s->model)->n_vocab);
  return 0;
}

static void slot_clear(serve_slot *sl) {
  tg_sampler_free(sl->smp);
  tg_grammar_free(sl->g);
  tg_token_stream_free(sl->ts);
  free(sl->prompt);
  sb_free(&sl->text);
  memset(sl, 0, sizeof *sl);
}

/* One step's rows through one forward pass: tg_llm_eval_batch, or where
 * the model takes one row per sequence or no batches (a tensor-parallel
 * model), tg_llm_decode_batch (every row's logits). */
static int run_rows(tg_llm *m, int per, const int *seqs, const int32_t *toks, int n, const bool *want, float *logits) {
  if (per > 1) return tg_llm_eval_batch(m, seqs, NULL, toks, n, want, logits);
  return tg_llm_decode_batch(m, seqs, toks, n, logits);
}

int serve_slots_warmup(serve_slots *ss) {
  tg_llm *m = ss->s->model;
  int seqs[SLOT_STEP_ROWS];
  int32_t toks[SLOT_STEP_ROWS];
  bool none[SLOT_STEP_ROWS] = { false };   /* no logits but the step's (the shapes of a step) */
  int32_t bos = tg_tokenizer_bos(ss->s->tok);
  int per = tg_llm_batch_seq_rows(m), most = per > 1 ? SLOT_STEP_ROWS : ss->n;
  if (most > tg_llm_config_of(m)->n_ctx) most = tg_llm_config_of(m)->n_ctx;
  /* each step size twice (the JIT captures its kernels on the second
   * call): one row per slot, the rest (a prompt piece) on slot 0 */
  for (int b = 1;; b = b * 2 < most ? b * 2 : most) {
    for (int i = 0; i < b; i++) seqs[i] = i < ss->n - 1 ? i + 1 : 0, toks[i] = bos >= 0 ? bos : 0;
    if (b > per && b - (ss->n - 1) > per) break;   /* more rows than slot 0 may have */
    for (int k = 0; k < 2; k++) {
      if (run_rows(m, per, seqs, toks, b, none, ss->logits) < 0) return -1;
      for (int i = 0; i < ss->n; i++) tg_llm_set_seq(m, i), tg_llm_rewind(m, 0);
    }
    if (b == most) break;
  }
  return tg_llm_set_seq(m, 0);
}

void serve_slots_free(serve_slots *ss) {
  for (int i = 0; i < ss->n; i++) slot_clear(&ss->slot[i]);
  free(ss->slot);
  free(ss->logits);
  memset(ss, 0, sizeof *ss);
}

/* How many leading tokens of prompt sequence `slot` holds (generate.c's
 * rule: at most n - 1). */
static int common_prefix(serve_slots *ss, int slot, const int *prompt, int n) {
  if (tg_llm_set_seq(ss->s->model, slot) < 0) return 0;
  return llm_reusable_prefix(ss->s->model, (const int32_t *)prompt, n);
}

int serve_slots_cached(void *ctx, int slot, const int *prompt, int n) { return common_prefix(ctx, slot, prompt, n); }

int serve_slots_begin(void *ctx, int slot, const int *prompt, int n, const serve_sampling *p, int max_tokens, int *n_cached) {
  serve_slots *ss = ctx;
  serve_slot *sl = &ss->slot[slot];
  slot_clear(sl);
  tg_sampling sp = { .temperature = p->temperature, .top_k = p->top_k, .top_p = p->top_p, .min_p = p->min_p,
                     .seed = p->has_seed ? p->seed : (uint64_t)time(NULL) ^ (uint64_t)clock() ^ (uint64_t)slot };
  sl->smp = tg_sampler_new(&sp);
  sl->g = p->grammar ? tg_grammar_new(p->grammar, strlen(p->grammar)) : NULL;
  if (!sl->smp || (p->grammar && (!sl->g || tg_sampler_set_grammar(sl->smp, sl->g, ss->s->tok) < 0))) {
    slot_clear(sl);
    return -1;
  }
  sl->ts = tg_token_stream_new(ss->s->tok, true);
  int keep = common_prefix(ss, slot, prompt, n);
  tg_llm_rewind(ss->s->model, keep);
  keep = tg_llm_n_past(ss->s->model);   /* less when a ring no longer holds the window before keep */
  sl->prompt = tg_xmalloc(sizeof(int32_t) * (size_t)n);
  for (int i = 0; i < n; i++) sl->prompt[i] = prompt[i];
  sl->n_prompt = n;
  sl->fed = keep;
  sl->max_tokens = max_tokens;
  sl->active = sl->reading = true;
  *n_cached = keep;
  return 0;
}

void serve_slots_end(void *ctx, int slot) { slot_clear(&((serve_slots *)ctx)->slot[slot]); }

int serve_slots_embed(void *ctx, int slot, const int *tokens, int n, float *out) {
  serve_slots *ss = ctx;
  if (tg_llm_set_seq(ss->s->model, slot) < 0) return -1;
  return tg_llm_embed(ss->s->model, (const int32_t *)tokens, n, out);
}

static void fail(serve_slot_event *ev, const char *what) {
  ev->failed = true;
  snprintf(ev->error, sizeof ev->error, "%s: %s", what, tg_error());
}

/* Samples slot's next token from logits: an end token or max_tokens ends
 * it (done), else its text joins the step's and it waits for the next
 * decode. */
static void sample(serve_slots *ss, serve_slot *sl, const float *logits, serve_slot_event *ev) {
  int V = tg_llm_config_of(ss->s->model)->n_vocab;
  int32_t id = tg_sampler_sample(sl->smp, logits, V);
  if (id < 0) { fail(ev, "sampling"); return; }
  if (llm_is_stop(ss->s->tok, id, ss->s->end_ids, ss->s->n_end)) { ev->done = ev->eos = true; ev->n_out = sl->n_gen + 1; return; }
  sl->n_gen++;
  size_t len = 0;
  const char *piece = tg_token_stream_push(sl->ts, id, &len);
  if (!piece) { fail(ev, "detokenizing"); return; }
  sb_append(&sl->text, piece, len);
  ev->n_out = sl->n_gen;
  sl->next = id;
  sl->have_next = true;
  if (sl->n_gen >= sl->max_tokens) ev->done = true;
}

/* A model whose batches take one row per sequence: the prompts' pieces
 * on their own, up to SLOT_STEP_ROWS tokens (one slot at a time, so it
 * finishes soonest). */
static void read_prompts_alone(serve_slots *ss, const int *slots, int n, serve_slot_event *ev) {
  tg_llm *m = ss->s->model;
  int budget = SLOT_STEP_ROWS;
  for (int i = 0; i < n && budget > 0; i++) {
    serve_slot *sl = &ss->slot[slots[i]];
    if (!sl->active || !sl->reading) continue;
    int k = sl->n_prompt - sl->fed < budget ? sl->n_prompt - sl->fed : budget;
    bool last = sl->fed + k == sl->n_prompt;
    if (tg_llm_set_seq(m, slots[i]) < 0 || tg_llm_eval(m, sl->prompt + sl->fed, k, last ? ss->logits : NULL) < 0) {
      fail(&ev[i], "reading the prompt");
      continue;
    }
    sl->fed += k;
    budget -= k;
    if (last) {
      sl->reading = false;
      sample(ss, sl, ss->logits, &ev[i]);
    }
  }
}

/* One step's rows: the slot (index into slots[]) each belongs to; whether
 * it ends the slot's prompt or is a decode token (its logits are read). */
typedef struct {
  int seq[SLOT_STEP_ROWS], owner[SLOT_STEP_ROWS];
  int32_t tok[SLOT_STEP_ROWS];
  bool want[SLOT_STEP_ROWS];
  int n;
} step_rows;

static void add_row(step_rows *r, int seq, int owner, int32_t tok, bool want) {
  r->seq[r->n] = seq, r->owner[r->n] = owner, r->tok[r->n] = tok, r->want[r->n++] = want;
}

int serve_slots_step(void *ctx, const int *slots, int n, serve_slot_event *ev) {
  serve_slots *ss = ctx;
  tg_llm *m = ss->s->model;
  int V = tg_llm_config_of(m)->n_vocab, n_ctx = tg_llm_config_of(m)->n_ctx, per = tg_llm_batch_seq_rows(m);
  for (int i = 0; i < n; i++) ss->slot[slots[i]].text.n = 0;
  if (per <= 1) read_prompts_alone(ss, slots, n, ev);
  step_rows r = { .n = 0 };
  /* one token of each slot that has one to feed */
  for (int i = 0; i < n; i++) {
    serve_slot *sl = &ss->slot[slots[i]];
    if (!sl->have_next || ev[i].done || ev[i].failed) continue;
    tg_llm_set_seq(m, slots[i]);
    if (tg_llm_n_past(m) >= n_ctx) { ev[i].done = true; continue; }   /* a full context */
    add_row(&r, slots[i], i, sl->next, true);
  }
  /* pieces of the prompts still being read, oldest first (slots[] is in
   * slot order), in the rows left */
  for (int i = 0; i < n && per > 1 && r.n < SLOT_STEP_ROWS; i++) {
    serve_slot *sl = &ss->slot[slots[i]];
    if (!sl->active || !sl->reading || ev[i].failed) continue;
    if (sl->n_prompt > n_ctx) { tg_seterr("%d prompt tokens, %d positions", sl->n_prompt, n_ctx); fail(&ev[i], "reading the prompt"); continue; }
    int k = sl->n_prompt - sl->fed, room = SLOT_STEP_ROWS - r.n;
    if (k > room) k = room;
    if (k > per) k = per;
    for (int j = 0; j < k; j++) add_row(&r, slots[i], i, sl->prompt[sl->fed + j], sl->fed + j + 1 == sl->n_prompt);
  }
  if (r.n && run_rows(m, per, r.seq, r.tok, r.n, r.want, ss->logits) < 0) {
    for (int j = 0; j < r.n; j++)
      if (!ev[r.owner[j]].failed) fail(&ev[r.owner[j]], r.want[j] && !ss->slot[r.seq[j]].reading ? "decoding" : "reading the prompt");
    r.n = 0;
  }
  for (int j = 0, row = 0; j < r.n; j++) {
    serve_slot *sl = &ss->slot[r.seq[j]];
    if (sl->reading) sl->fed++;
    if (!r.want[j]) continue;
    sl->reading = sl->have_next = false;
    sample(ss, sl, ss->logits + (size_t)row++ * (size_t)V, &ev[r.owner[j]]);
  }
  for (int i = 0; i < n; i++) {
    serve_slot *sl = &ss->slot[slots[i]];
    if (ev[i].done && !ev[i].failed) {   /* the text the stream still holds */
      size_t len = 0;
      const char *rest = tg_token_stream_flush(sl->ts, &len);
      if (rest && len) sb_append(&sl->text, rest, len);
    }
    if (!ev[i].n_out) ev[i].n_out = sl->n_gen;
    ev[i].text = sl->text.s;
    ev[i].len = sl->text.n;
  }
  return 0;
}
