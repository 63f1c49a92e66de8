/* jobs.c: the FIFO of generation jobs and the worker thread that runs them
 * against the backend (see jobs.h). */
#include "serve/jobs.h"
#include <math.h>
#include <stdio.h>
#include <time.h>
#include "tg.h"
#include "util/util.h"

static void job_free(serve_job *j) {
  serve_request_free(&j->req);
  serve_text_free(&j->out);
  free(j->prefill);
  for (int i = 0; i < j->n_inputs; i++) free(j->emb_tokens[i]);
  free(j->emb_tokens);
  free(j->emb_n);
  free(j->embeddings);
  free(j);
}

void serve_job_unref_locked(serve_job *j) {
  if (--j->refs == 0) job_free(j);
}
#define unref_locked serve_job_unref_locked

void serve_job_fail_locked(serve_queue *q, serve_job *j) {
  j->failed = true;
  j->phase = JOB_DONE;
  pthread_cond_broadcast(&q->progress);
}
#define fail_locked serve_job_fail_locked

double serve_now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

typedef struct { serve_queue *q; serve_job *j; double t_first; } emit_ctx;

/* The backend's emit callback (on the worker thread): false stops generating. */
static bool emit_piece(void *u, const char *piece, size_t len) {
  emit_ctx *c = u;
  if (!c->t_first) c->t_first = serve_now_s();
  pthread_mutex_lock(&c->q->mu);
  bool go = !c->j->cancelled && !c->q->stopping;
  if (go) {
    size_t before = c->j->out.safe;
    go = serve_text_push(&c->j->out, piece, len);
    if (c->j->out.safe != before || !go) pthread_cond_broadcast(&c->q->progress);
  }
  pthread_mutex_unlock(&c->q->mu);
  return go;
}

char *serve_chat_prompt(const serve_backend *be, serve_tool_format fmt, const serve_request *r, serve_chat_syntax *syn,
                        char **prefill) {
  bool tools = r->tools && r->tool_choice != SERVE_TOOL_NONE;   /* "none": as if there were no tools */
  *prefill = NULL;
  char *prompt = be->render_chat(be->ctx, r->messages, tools ? r->tools : NULL, r->template_kwargs,
                                 r->add_generation_prompt, r->continue_final);
  if (!prompt) return NULL;
  *syn = (serve_chat_syntax){ .parse_tools = tools, .tool_format = fmt, .tools = r->tools,
                              .reasoning = (serve_reasoning_format)r->reasoning_format,
                              .thinking_open = r->add_generation_prompt && serve_reasoning_opened(prompt) };
  if (tools && r->add_generation_prompt && (r->tool_choice == SERVE_TOOL_REQUIRED || r->tool_choice == SERVE_TOOL_FUNCTION)) {
    char *call = serve_tool_call_prefix(fmt, r->tool_choice == SERVE_TOOL_FUNCTION ? r->tool_name : NULL);
    strbuf b = { 0 };
    /* a forced call skips the reasoning the template opened */
    sb_printf(&b, "%s%s", syn->thinking_open ? "</think>\n\n" : "", call);
    free(call);
    *prefill = b.s;
    b = (strbuf){ 0 };
    sb_printf(&b, "%s%s", prompt, *prefill);
    free(prompt);
    prompt = b.s;
  }
  return prompt;
}

int serve_job_tokenize(serve_queue *q, serve_job *j, int **toks) {
  const serve_backend *be = q->be;
  const serve_request *r = &j->req;
  int n;
  if (r->chat) {
    char *prompt = serve_chat_prompt(be, q->tool_format, r, &j->syntax, &j->prefill);
    /* a named function's arguments follow its schema (unless the request
     * brought its own grammar); the HTTP thread does not read these */
    if (prompt && j->prefill && r->tool_choice == SERVE_TOOL_FUNCTION && !r->grammar) {
      j->req.grammar = serve_tool_call_grammar(q->tool_format, r->tools, r->tool_name);
      j->req.sampling.grammar = j->req.grammar;
    }
    n = prompt ? be->tokenize_text(be->ctx, prompt, true, true, toks) : -1;
    free(prompt);
  } else if (r->prompt) n = be->tokenize_text(be->ctx, r->prompt, true, true, toks);
  else {
    n = r->n_prompt_tokens;
    *toks = tg_xmalloc((size_t)n * sizeof(int));
    memcpy(*toks, r->prompt_tokens, (size_t)n * sizeof(int));
  }
  const char *field = r->chat ? "messages" : "prompt";
  if (n < 0) return serve_error_set(&j->err, 400, "invalid_prompt", field, "cannot build the prompt: %s", tg_error());
  if (n == 0) return serve_error_set(&j->err, 400, "invalid_prompt", field, "the prompt is empty");
  if (n + 1 > be->n_ctx)
    return serve_error_set(&j->err, 400, "context_length_exceeded", field,
                           "the prompt is %d tokens, and with at least 1 generated token it exceeds the "
                           "model's context of %d tokens", n, be->n_ctx);
  return n;
}

void serve_job_end_locked(serve_queue *q, serve_job *j, int n_out, bool eos, const char *error) {
  double t_end = serve_now_s();
  if (!j->t_first) j->t_first = t_end;
  serve_metrics_add(&q->metrics, j->n_prompt - j->n_cached, n_out, j->t_first - j->t_started, t_end - j->t_first);
  if (error) q->metrics.failed_requests++;
  j->n_out = n_out;
  j->finish = eos || j->out.stopped ? "stop" : "length";
  serve_text_finish(&j->out);
  if (error) serve_error_set(&j->err, 500, "generation_failed", NULL, "generation failed: %s", error);
  if (!q->quiet)
    fprintf(stderr, "tg serve: %s: %d prompt (%d cached) + %d generated tokens in %.2f s, first text after %.2f s (%s)\n",
            j->req.chat ? "chat" : "completion", j->n_prompt, j->n_cached, n_out, t_end - j->t_queued,
            j->t_first - j->t_queued, error ? "failed" : j->cancelled ? "client left" : j->finish);
  if (error) fail_locked(q, j);
  j->phase = JOB_DONE;
  pthread_cond_broadcast(&q->progress);
}

static void run_job(serve_queue *q, serve_job *j) {
  const serve_backend *be = q->be;
  int *toks = NULL;
  int n = serve_job_tokenize(q, j, &toks);
  pthread_mutex_lock(&q->mu);
  if (n < 0 || j->cancelled) {   /* a client that left while its prompt was tokenized needs nothing more */
    if (n < 0) q->metrics.failed_requests++;
    fail_locked(q, j);
    pthread_mutex_unlock(&q->mu);
    free(toks);
    return;
  }
  j->n_prompt = n;
  j->phase = JOB_STARTED;
  pthread_cond_broadcast(&q->progress);
  pthread_mutex_unlock(&q->mu);

  int room = be->n_ctx - n, max = j->req.max_tokens < 0 || j->req.max_tokens > room ? room : j->req.max_tokens;
  int n_out = 0;
  bool eos = false;
  emit_ctx ec = { q, j, 0 };
  j->t_started = serve_now_s();
  int rc = be->generate(be->ctx, toks, n, &j->req.sampling, max, emit_piece, &ec, &n_out, &eos);
  free(toks);

  pthread_mutex_lock(&q->mu);
  j->t_first = ec.t_first;
  serve_job_end_locked(q, j, n_out, eos, rc < 0 ? tg_error() : NULL);
  pthread_mutex_unlock(&q->mu);
}

/* An embeddings job: each input through the backend, then L2-normalized
 * (as llama-server's /v1/embeddings, and OpenAI's vectors, are). */
void serve_job_run_embed(serve_queue *q, serve_job *j, int slot) {
  const serve_backend *be = q->be;
  int d = be->n_embd, rc = 0;
  float *out = tg_xcalloc((size_t)j->n_inputs * (size_t)d, sizeof(float));
  double t0 = serve_now_s();
  int n_tokens = 0;
  for (int i = 0; i < j->n_inputs && rc == 0; i++) {
    pthread_mutex_lock(&q->mu);
    bool stop = j->cancelled || q->stopping;
    pthread_mutex_unlock(&q->mu);
    if (stop) { rc = -1; tg_seterr("cancelled"); break; }
    float *v = out + (size_t)i * (size_t)d;
    rc = slot >= 0 ? be->slot_embed(be->ctx, slot, j->emb_tokens[i], j->emb_n[i], v) : be->embed(be->ctx, j->emb_tokens[i], j->emb_n[i], v);
    n_tokens += j->emb_n[i];
    double ss = 0;
    for (int k = 0; k < d; k++) ss += (double)v[k] * v[k];
    float inv = ss > 0 ? (float)(1 / sqrt(ss)) : 0;
    for (int k = 0; k < d; k++) v[k] *= inv;
  }
  pthread_mutex_lock(&q->mu);
  serve_metrics_add(&q->metrics, n_tokens, 0, serve_now_s() - t0, 0);
  j->n_prompt = n_tokens;
  if (rc < 0) {
    free(out);
    q->metrics.failed_requests++;
    serve_error_set(&j->err, 500, "embedding_failed", NULL, "embedding failed: %s", tg_error());
    fail_locked(q, j);
  } else {
    j->embeddings = out;
    j->phase = JOB_DONE;
  }
  pthread_cond_broadcast(&q->progress);
  pthread_mutex_unlock(&q->mu);
}

static void *worker(void *arg) {
  serve_queue *q = arg;
  pthread_mutex_lock(&q->mu);
  for (;;) {
    while (!q->head && !q->stopping) pthread_cond_wait(&q->work, &q->mu);
    if (q->stopping) break;
    serve_job *j = q->head;
    q->head = j->next;
    if (!q->head) q->tail = NULL;
    if (!j->cancelled) {
      q->slot_job[0] = j;
      pthread_mutex_unlock(&q->mu);
      if (j->n_inputs) serve_job_run_embed(q, j, -1);
      else run_job(q, j);
      pthread_mutex_lock(&q->mu);
      q->slot_job[0] = NULL;
    }
    unref_locked(j);
  }
  pthread_mutex_unlock(&q->mu);
  return NULL;
}

bool serve_backend_has_slots(const serve_backend *be) {
  return be->n_slots > 1 && be->n_slots <= SERVE_MAX_SLOTS && be->slot_cached && be->slot_begin && be->slot_step &&
         be->slot_end && (!be->embed || be->slot_embed);
}

int serve_queue_busy_locked(const serve_queue *q) {
  int n = 0;
  for (int s = 0; s < q->n_slots; s++) n += q->slot_job[s] != NULL;
  return n;
}

int serve_queue_start(serve_queue *q, const serve_backend *be, bool quiet, int max_queue) {
  memset(q, 0, sizeof *q);
  q->be = be;
  q->n_slots = serve_backend_has_slots(be) ? be->n_slots : 1;
  q->max_queue = max_queue > 0 ? max_queue : SERVE_DEFAULT_MAX_QUEUE;
  q->tool_format = serve_tool_format_detect(be->chat_template);
  q->quiet = quiet;
  pthread_mutex_init(&q->mu, NULL);
  pthread_cond_init(&q->work, NULL);
  pthread_cond_init(&q->progress, NULL);
  if (pthread_create(&q->worker, NULL, q->n_slots > 1 ? serve_slot_worker : worker, q) != 0) {
    serve_queue_destroy(q);
    return tg_seterr("serve: cannot start the generation thread");
  }
  return 0;
}

void serve_queue_stop(serve_queue *q) {
  pthread_mutex_lock(&q->mu);
  q->stopping = true;
  while (q->head) {
    serve_job *j = q->head;
    q->head = j->next;
    serve_error_set(&j->err, 503, "server_shutting_down", NULL, "the server is shutting down");
    fail_locked(q, j);
    unref_locked(j);
  }
  q->tail = NULL;
  pthread_cond_broadcast(&q->work);
  pthread_cond_broadcast(&q->progress);
  pthread_mutex_unlock(&q->mu);
  pthread_join(q->worker, NULL);
}

void serve_queue_destroy(serve_queue *q) {
  pthread_mutex_destroy(&q->mu);
  pthread_cond_destroy(&q->work);
  pthread_cond_destroy(&q->progress);
}

/* Puts a new job (refs 2) at the queue's end, or fails it when stopping. */
static serve_job *enqueue(serve_queue *q, serve_job *j) {
  j->refs = 2;   /* the HTTP thread and the worker */
  pthread_mutex_lock(&q->mu);
  j->t_queued = serve_now_s();
  if (q->stopping || serve_queue_waiting_locked(q) >= q->max_queue) {
    if (q->stopping) serve_error_set(&j->err, 503, "server_shutting_down", NULL, "the server is shutting down");
    else {
      serve_error_set(&j->err, 503, "server_busy", NULL, "the server is busy: %d requests are waiting for a slot; try again later",
                      q->max_queue);
      q->metrics.rejected_requests++;
    }
    j->failed = true;
    j->phase = JOB_DONE;
    j->refs = 1;
  } else {
    if (j->n_inputs) q->metrics.embedding_requests++;
    else if (j->req.chat) q->metrics.chat_requests++;
    else q->metrics.completion_requests++;
    if (q->tail) q->tail->next = j;
    else q->head = j;
    q->tail = j;
    pthread_cond_signal(&q->work);
  }
  pthread_mutex_unlock(&q->mu);
  return j;
}

serve_job *serve_job_submit(serve_queue *q, serve_request *req) {
  serve_job *j = tg_xcalloc(1, sizeof *j);
  j->req = *req;
  memset(req, 0, sizeof *req);
  j->out.stop = j->req.stop;
  j->out.n_stop = j->req.n_stop;
  return enqueue(q, j);
}

serve_job *serve_job_submit_embed(serve_queue *q, int **tokens, int *n_tokens, int n) {
  serve_job *j = tg_xcalloc(1, sizeof *j);
  j->emb_tokens = tokens;
  j->emb_n = n_tokens;
  j->n_inputs = n;
  return enqueue(q, j);
}

int serve_queue_waiting_locked(const serve_queue *q) {
  int n = 0;
  for (const serve_job *j = q->head; j; j = j->next) n += !j->cancelled;
  return n;
}

void serve_job_release(serve_queue *q, serve_job *j) {
  pthread_mutex_lock(&q->mu);
  if (j->phase != JOB_DONE) j->cancelled = true;
  unref_locked(j);
  pthread_mutex_unlock(&q->mu);
}
