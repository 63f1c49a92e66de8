/* slots.c: the worker of a backend with parallel slots (continuous
 * batching, as llama-server's): between steps it gives free slots to the
 * jobs at the queue's head (each to the free slot whose cache shares the
 * longest prefix with its prompt, else the least recently used), then runs
 * one backend step over every slot with a job, then hands each job its new
 * text. A job whose client left, whose stop string matched, or that
 * finished gives its slot back at once. */
#include <stdio.h>
#include "serve/jobs.h"
#include "tg.h"
#include "util/util.h"

/* The free slot for a prompt: the longest cached prefix, then the least
 * recently used; -1 when none is free. Call with mu held (the backend's
 * slot_cached only reads what the worker itself wrote). */
static int pick_slot_locked(serve_queue *q, const int *toks, int n) {
  int best = -1, best_len = -1;
  for (int s = 0; s < q->n_slots; s++) {
    if (q->slot_job[s]) continue;
    int len = toks ? q->be->slot_cached(q->be->ctx, s, toks, n) : 0;
    if (len > best_len || (len == best_len && q->slot_used[s] < q->slot_used[best])) best = s, best_len = len;
  }
  return best;
}

/* Starts the job at the queue's head on a free slot (there is one); mu
 * held, released while the prompt is tokenized and the slot prepared. */
static void admit_locked(serve_queue *q) {
  const serve_backend *be = q->be;
  serve_job *j = q->head;
  q->head = j->next;
  if (!q->head) q->tail = NULL;
  if (j->cancelled) { serve_job_unref_locked(j); return; }
  if (j->n_inputs) {   /* embeddings run at once on a free slot */
    int s = pick_slot_locked(q, NULL, 0);
    q->slot_job[s] = j;
    q->slot_used[s] = ++q->clock;
    pthread_mutex_unlock(&q->mu);
    serve_job_run_embed(q, j, s);
    pthread_mutex_lock(&q->mu);
    q->slot_job[s] = NULL;
    serve_job_unref_locked(j);
    return;
  }
  pthread_mutex_unlock(&q->mu);
  int *toks = NULL;
  int n = serve_job_tokenize(q, j, &toks);
  pthread_mutex_lock(&q->mu);
  if (n < 0 || j->cancelled) {
    if (n < 0) q->metrics.failed_requests++;
    serve_job_fail_locked(q, j);
    serve_job_unref_locked(j);
    free(toks);
    return;
  }
  int s = pick_slot_locked(q, toks, n);
  int room = be->n_ctx - n, max = j->req.max_tokens < 0 || j->req.max_tokens > room ? room : j->req.max_tokens;
  j->n_prompt = n;
  q->slot_job[s] = j;   /* taken: nobody else picks it while the slot is prepared */
  q->slot_used[s] = ++q->clock;
  pthread_mutex_unlock(&q->mu);
  int cached = 0;
  j->t_started = serve_now_s();
  int rc = be->slot_begin(be->ctx, s, toks, n, &j->req.sampling, max, &cached);
  free(toks);
  pthread_mutex_lock(&q->mu);
  if (rc < 0) {
    q->slot_job[s] = NULL;
    q->metrics.failed_requests++;
    serve_error_set(&j->err, 500, "generation_failed", NULL, "cannot start the generation: %s", tg_error());
    serve_job_fail_locked(q, j);
    serve_job_unref_locked(j);
    return;
  }
  j->n_cached = cached;
  q->metrics.cached_tokens += (uint64_t)cached;
  j->phase = JOB_STARTED;
  pthread_cond_broadcast(&q->progress);
}

/* Gives slot s back: its job ends (error NULL: normally); mu held. */
static void release_slot_locked(serve_queue *q, int s, int n_out, bool eos, const char *error) {
  serve_job *j = q->slot_job[s];
  q->slot_job[s] = NULL;
  pthread_mutex_unlock(&q->mu);
  q->be->slot_end(q->be->ctx, s);
  pthread_mutex_lock(&q->mu);
  serve_job_end_locked(q, j, n_out, eos, error);
  serve_job_unref_locked(j);
}

/* What slot s's job does with its step's event; mu held. */
static void take_event_locked(serve_queue *q, int s, const serve_slot_event *ev, const char *step_error) {
  serve_job *j = q->slot_job[s];
  if (step_error || ev->failed) { release_slot_locked(q, s, ev->n_out, false, step_error ? step_error : ev->error); return; }
  bool go = !j->cancelled && !q->stopping;
  if (go && ev->len) {
    if (!j->t_first) j->t_first = serve_now_s();
    size_t before = j->out.safe;
    go = serve_text_push(&j->out, ev->text, ev->len);   /* false: a stop string matched */
    if (j->out.safe != before || !go) pthread_cond_broadcast(&q->progress);
  }
  if (ev->done || !go) release_slot_locked(q, s, ev->n_out, ev->eos, NULL);
}

void *serve_slot_worker(void *arg) {
  serve_queue *q = arg;
  const serve_backend *be = q->be;
  int slots[SERVE_MAX_SLOTS];
  serve_slot_event ev[SERVE_MAX_SLOTS];
  pthread_mutex_lock(&q->mu);
  while (!q->stopping) {
    while (q->head && !q->stopping && serve_queue_busy_locked(q) < q->n_slots) admit_locked(q);
    int n = 0;
    for (int s = 0; s < q->n_slots; s++) {
      serve_job *j = q->slot_job[s];
      if (!j) continue;
      if (j->cancelled) release_slot_locked(q, s, j->n_out, false, NULL);   /* the client left: free it now */
      else slots[n++] = s;
    }
    if (q->stopping) break;
    if (!n) {
      if (!q->head) pthread_cond_wait(&q->work, &q->mu);
      continue;
    }
    pthread_mutex_unlock(&q->mu);
    memset(ev, 0, sizeof ev[0] * (size_t)n);
    int rc = be->slot_step(be->ctx, slots, n, ev);
    char err[256] = "";
    if (rc < 0) snprintf(err, sizeof err, "%s", tg_error());
    pthread_mutex_lock(&q->mu);
    for (int i = 0; i < n; i++) {
      if (!q->slot_job[slots[i]]) continue;
      q->slot_job[slots[i]]->n_out = ev[i].n_out;
      take_event_locked(q, slots[i], &ev[i], rc < 0 ? err : NULL);
    }
  }
  /* stopping: the jobs on slots end where they are */
  for (int s = 0; s < q->n_slots; s++)
    if (q->slot_job[s]) release_slot_locked(q, s, q->slot_job[s]->n_out, false, NULL);
  pthread_mutex_unlock(&q->mu);
  return NULL;
}
