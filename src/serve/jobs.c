/* jobs.c: the FIFO of generation jobs and the worker thread that runs them
 * against the backend (see jobs.h). */
#include "serve/jobs.h"
#include <stdio.h>
#include <time.h>
#include "tg.h"
#include "util/util.h"

static void job_free(serve_job *j) {
  serve_request_free(&j->req);
  serve_text_free(&j->out);
  free(j);
}

/* Drops one reference; call with q->mu held. */
static void unref_locked(serve_job *j) {
  if (--j->refs == 0) job_free(j);
}

/* Ends a job with an error; call with q->mu held. */
static void fail_locked(serve_queue *q, serve_job *j) {
  j->failed = true;
  j->phase = JOB_DONE;
  pthread_cond_broadcast(&q->progress);
}

typedef struct { serve_queue *q; serve_job *j; } emit_ctx;

/* The backend's emit callback (on the worker thread): false stops generating. */
static bool emit_piece(void *u, const char *piece, size_t len) {
  emit_ctx *c = u;
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

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Tokenizes the prompt; -1 with j->err filled. Runs unlocked on the worker. */
static int tokenize(serve_queue *q, serve_job *j, int **toks) {
  const serve_backend *be = q->be;
  const serve_request *r = &j->req;
  int n;
  if (r->chat) n = be->tokenize_chat(be->ctx, r->messages, r->continue_final, toks);
  else if (r->prompt) n = be->tokenize_text(be->ctx, r->prompt, toks);
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

static void run_job(serve_queue *q, serve_job *j) {
  const serve_backend *be = q->be;
  double t0 = now_s();
  int *toks = NULL;
  int n = tokenize(q, j, &toks);
  pthread_mutex_lock(&q->mu);
  if (n < 0 || j->cancelled) {   /* a client that left while its prompt was tokenized needs nothing more */
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
  emit_ctx ec = { q, j };
  int rc = be->generate(be->ctx, toks, n, &j->req.sampling, max, emit_piece, &ec, &n_out, &eos);
  free(toks);

  pthread_mutex_lock(&q->mu);
  j->n_out = n_out;
  j->finish = eos || j->out.stopped ? "stop" : "length";
  serve_text_finish(&j->out);
  if (rc < 0) serve_error_set(&j->err, 500, "generation_failed", NULL, "generation failed: %s", tg_error());
  if (!q->quiet)
    fprintf(stderr, "tg serve: %s: %d prompt + %d generated tokens in %.2f s (%s)\n",
            j->req.chat ? "chat" : "completion", n, n_out, now_s() - t0,
            rc < 0 ? "failed" : j->cancelled ? "client left" : j->finish);
  if (rc < 0) fail_locked(q, j);
  j->phase = JOB_DONE;
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
      pthread_mutex_unlock(&q->mu);
      run_job(q, j);
      pthread_mutex_lock(&q->mu);
    }
    unref_locked(j);
  }
  pthread_mutex_unlock(&q->mu);
  return NULL;
}

int serve_queue_start(serve_queue *q, const serve_backend *be, bool quiet) {
  memset(q, 0, sizeof *q);
  q->be = be;
  q->quiet = quiet;
  pthread_mutex_init(&q->mu, NULL);
  pthread_cond_init(&q->work, NULL);
  pthread_cond_init(&q->progress, NULL);
  if (pthread_create(&q->worker, NULL, worker, q) != 0) {
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

serve_job *serve_job_submit(serve_queue *q, serve_request *req) {
  serve_job *j = tg_xcalloc(1, sizeof *j);
  j->req = *req;
  memset(req, 0, sizeof *req);
  j->out.stop = j->req.stop;
  j->out.n_stop = j->req.n_stop;
  j->refs = 2;   /* the HTTP thread and the worker */
  pthread_mutex_lock(&q->mu);
  if (q->stopping) {
    serve_error_set(&j->err, 503, "server_shutting_down", NULL, "the server is shutting down");
    j->failed = true;
    j->phase = JOB_DONE;
    j->refs = 1;
  } else {
    if (q->tail) q->tail->next = j;
    else q->head = j;
    q->tail = j;
    pthread_cond_signal(&q->work);
  }
  pthread_mutex_unlock(&q->mu);
  return j;
}

void serve_job_release(serve_queue *q, serve_job *j) {
  pthread_mutex_lock(&q->mu);
  if (j->phase != JOB_DONE) j->cancelled = true;
  unref_locked(j);
  pthread_mutex_unlock(&q->mu);
}
