/* jobs.h: the generation queue. HTTP threads submit jobs; one worker thread
 * owns the backend and runs them in order. A job is shared by its HTTP thread
 * and the worker (two references); all of its fields below `req` are guarded
 * by the queue's mutex, and every change to them is announced on `progress`. */
#ifndef TG_SERVE_JOBS_H
#define TG_SERVE_JOBS_H

#include <pthread.h>
#include "serve/reply.h"
#include "serve/request.h"
#include "serve/serve.h"
#include "serve/text_filter.h"

typedef enum { JOB_QUEUED, JOB_STARTED, JOB_DONE } serve_job_phase;

typedef struct serve_job {
  serve_request req;
  serve_job_phase phase;    /* STARTED: the prompt fits and generation runs */
  bool failed;              /* then err says why (also set when DONE before STARTED) */
  serve_error err;
  int n_prompt, n_out;
  const char *finish;       /* "stop" or "length" once DONE */
  serve_text out;           /* the generated text and how much of it is final */
  bool cancelled;           /* the client left: stop generating */
  int refs;
  struct serve_job *next;
} serve_job;

typedef struct {
  const serve_backend *be;
  bool quiet;
  pthread_mutex_t mu;
  pthread_cond_t work;      /* a job was queued, or stopping */
  pthread_cond_t progress;  /* some job changed (broadcast; waiters check their own) */
  serve_job *head, *tail;
  bool stopping;
  pthread_t worker;
} serve_queue;

/* Starts the worker. 0, or -1 with tg_seterr. */
int serve_queue_start(serve_queue *q, const serve_backend *be, bool quiet);
/* Fails every queued job, stops the running one at its next token, joins
 * the worker. Jobs still referenced by HTTP threads stay valid. */
void serve_queue_stop(serve_queue *q);
void serve_queue_destroy(serve_queue *q);

/* Queues a request (taking ownership of *req). The caller holds one
 * reference, to give back with serve_job_release. */
serve_job *serve_job_submit(serve_queue *q, serve_request *req);
/* Drops the caller's reference; an unfinished job is cancelled first. */
void serve_job_release(serve_queue *q, serve_job *j);

#endif
