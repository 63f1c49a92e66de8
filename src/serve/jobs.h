/* jobs.h: the generation queue. HTTP threads submit jobs; one worker thread
 * owns the backend and runs them in order: one at a time, or on the
 * backend's parallel slots (slots.c). A job is shared by its HTTP thread
 * and the worker (two references); all of its fields below `req` are guarded
 * by the queue's mutex, and every change to them is announced on `progress`. */
#ifndef TG_SERVE_JOBS_H
#define TG_SERVE_JOBS_H

#include <pthread.h>
#include "serve/chat_msg.h"
#include "serve/metrics.h"
#include "serve/reply.h"
#include "serve/request.h"
#include "serve/serve.h"
#include "serve/text_filter.h"

typedef enum { JOB_QUEUED, JOB_STARTED, JOB_DONE } serve_job_phase;

typedef struct serve_job {
  serve_request req;
  /* chat: how to read the reply (set by the worker before JOB_STARTED):
   * the text the prompt ended with to force a tool call (tool_choice
   * required or a named function; the reply is parsed as prefill + text),
   * and whether the template opened a reasoning block */
  char *prefill;
  serve_chat_syntax syntax;
  /* an embeddings job (no generation): n_inputs token lists, and their
   * vectors (n_inputs x n_embd, L2-normalized) once DONE */
  int **emb_tokens, *emb_n, n_inputs;
  float *embeddings;
  serve_job_phase phase;    /* STARTED: the prompt fits and generation runs */
  bool failed;              /* then err says why (also set when DONE before STARTED) */
  serve_error err;
  int n_prompt, n_out;
  int n_cached;             /* prompt tokens a slot's cache already held (usage.prompt_tokens_details) */
  double t_queued, t_started, t_first;   /* when it was queued, began, gave its first text (monotonic s) */
  const char *finish;       /* "stop" or "length" once DONE */
  serve_text out;           /* the generated text and how much of it is final */
  bool cancelled;           /* the client left: stop generating */
  int refs;
  struct serve_job *next;
} serve_job;

typedef struct {
  const serve_backend *be;
  serve_tool_format tool_format;   /* read from the backend's chat template */
  bool quiet;
  pthread_mutex_t mu;
  pthread_cond_t work;      /* a job was queued, or stopping */
  pthread_cond_t progress;  /* some job changed (broadcast; waiters check their own) */
  serve_job *head, *tail;
  int n_slots;              /* 1 without the backend's slot functions */
  serve_job *slot_job[SERVE_MAX_SLOTS];   /* the job each slot runs, or NULL */
  unsigned slot_used[SERVE_MAX_SLOTS];    /* when each slot last took a job (least recently used first) */
  unsigned clock;
  int max_queue;            /* waiting jobs beyond this get a 503 */
  serve_metrics metrics;    /* guarded by mu */
  bool stopping;
  pthread_t worker;
} serve_queue;

/* Starts the worker (with the backend's slots when it has them). 0, or
 * -1 with tg_seterr. */
int serve_queue_start(serve_queue *q, const serve_backend *be, bool quiet, int max_queue);
/* Whether be brings every slot function (and more than one slot). */
bool serve_backend_has_slots(const serve_backend *be);
/* Slots running a job; call with mu held. */
int serve_queue_busy_locked(const serve_queue *q);
/* Fails every queued job, stops the running one at its next token, joins
 * the worker. Jobs still referenced by HTTP threads stay valid. */
void serve_queue_stop(serve_queue *q);
void serve_queue_destroy(serve_queue *q);

/* Queues a request (taking ownership of *req). The caller holds one
 * reference, to give back with serve_job_release. */
serve_job *serve_job_submit(serve_queue *q, serve_request *req);
/* Queues an embeddings job over n token lists (taking them and their
 * malloc'd arrays). */
serve_job *serve_job_submit_embed(serve_queue *q, int **tokens, int *n_tokens, int n);
/* A chat request's prompt text: the messages through the backend's
 * template, then, for tool_choice "required" or a named function, the
 * opening of a call in format fmt (*prefill, malloc'd, or NULL), so the
 * model must go on with one. *syn gets how to parse the reply. malloc'd,
 * or NULL with tg_seterr. */
char *serve_chat_prompt(const serve_backend *be, serve_tool_format fmt, const serve_request *r, serve_chat_syntax *syn,
                        char **prefill);
/* Jobs waiting (not cancelled) and whether one runs; call with mu held. */
int serve_queue_waiting_locked(const serve_queue *q);
/* Drops the caller's reference; an unfinished job is cancelled first. */
void serve_job_release(serve_queue *q, serve_job *j);

/* ---- for the workers (jobs.c, slots.c) */
double serve_now_s(void);
/* Drops one reference; call with mu held. */
void serve_job_unref_locked(serve_job *j);
/* Ends a job with the error in j->err; call with mu held. */
void serve_job_fail_locked(serve_queue *q, serve_job *j);
/* The job's prompt tokens (malloc'd *toks); -1 with j->err filled. Runs
 * unlocked on the worker. */
int serve_job_tokenize(serve_queue *q, serve_job *j, int **toks);
/* Ends a started job that generated n_out tokens: its finish reason,
 * metrics and log line; error (NULL: none) fails it with a 500. Call with
 * mu held. */
void serve_job_end_locked(serve_queue *q, serve_job *j, int n_out, bool eos, const char *error);
/* Runs an embeddings job (slot < 0: through be->embed, else on that free
 * slot), unlocked. */
void serve_job_run_embed(serve_queue *q, serve_job *j, int slot);
/* The worker of a backend with slots (slots.c). */
void *serve_slot_worker(void *arg);

#endif
