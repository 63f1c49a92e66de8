/* completion.c: completion requests. The body becomes a job on the
 * generation queue; the connection's thread waits for it, checking now and
 * then that the client is still there (so a client that leaves frees the
 * worker promptly), then replies whole or streams server-sent events. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <sys/socket.h>
#include <time.h>
#include "serve/request.h"
#include "serve/server.h"
#include "util/util.h"

#define CLIENT_CHECK_MS 50      /* how often a waiting connection looks at its socket */

/* ---- waiting on a job */

/* A peer that closed its end reads as EOF; one still there would block. */
static bool client_alive(struct MHD_Connection *c) {
  const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
  if (!ci) return true;
  struct pollfd p = { .fd = ci->connect_fd, .events = POLLIN };
  if (poll(&p, 1, 0) <= 0) return true;
  if (p.revents & (POLLERR | POLLHUP | POLLNVAL)) return false;
  char byte;
  ssize_t n = recv(ci->connect_fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  return n > 0 || (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR));
}

typedef enum { WAIT_START, WAIT_TEXT, WAIT_DONE } wait_for;

static bool ready(const serve_job *j, wait_for what, size_t seen) {
  if (j->phase == JOB_DONE) return true;
  if (what == WAIT_START) return j->phase == JOB_STARTED;
  if (what == WAIT_TEXT) return j->out.safe > seen;
  return false;
}

/* Waits, with q->mu held, until the job reaches `what` (WAIT_TEXT: final
 * text beyond `seen`). False when the client left or the server is stopping.
 * Other jobs' progress wakes us too, so the client check goes by the clock. */
static bool wait_job_for(serve_server *s, struct MHD_Connection *c, serve_job *j, wait_for what, size_t seen, double max_s,
                         bool *timed_out) {
  struct timespec next;
  clock_gettime(CLOCK_REALTIME, &next);
  double until = max_s > 0 ? serve_now_s() + max_s : 0;
  while (!ready(j, what, seen)) {
    if (s->queue.stopping) return false;
    if (until && serve_now_s() >= until) {
      *timed_out = true;
      return true;
    }
    next.tv_nsec += CLIENT_CHECK_MS * 1000000L;
    if (next.tv_nsec >= 1000000000L) { next.tv_sec++; next.tv_nsec -= 1000000000L; }
    while (!ready(j, what, seen) && !s->queue.stopping &&
           pthread_cond_timedwait(&s->queue.progress, &s->queue.mu, &next) != ETIMEDOUT) {}
    if (ready(j, what, seen) || s->queue.stopping) continue;
    pthread_mutex_unlock(&s->queue.mu);   /* the socket check needs no lock */
    bool alive = client_alive(c);
    pthread_mutex_lock(&s->queue.mu);
    if (!alive) return false;
  }
  return true;
}

static bool wait_job(serve_server *s, struct MHD_Connection *c, serve_job *j, wait_for what, size_t seen) {
  bool timed_out = false;
  return wait_job_for(s, c, j, what, seen, 0, &timed_out);
}

/* ---- completions */

void serve_new_id(serve_server *s, const char *prefix, char *out, size_t n) {
  pthread_mutex_lock(&s->id_mu);
  s->id_state = tg_hash_mix(s->id_state, 1);
  uint64_t v = s->id_state;
  pthread_mutex_unlock(&s->id_mu);
  snprintf(out, n, "%s-%016llx", prefix, (unsigned long long)v);
}

bool serve_wait_done(serve_server *s, struct MHD_Connection *c, serve_job *j) {
  return wait_job(s, c, j, WAIT_DONE, 0);
}

/* A chat job's reply parsed (prefill + the text so far); final once the
 * job is done. parallel_tool_calls false keeps the first call. */
static void parse_reply(const serve_job *j, const char *text, size_t len, bool final, serve_chat_msg *msg) {
  strbuf b = { 0 };
  sb_puts(&b, j->prefill ? j->prefill : "");
  sb_append(&b, text, len);
  serve_chat_parse(&j->syntax, b.s, b.n, final, msg);
  if (!j->req.parallel_tool_calls && msg->n_calls > 1) serve_chat_msg_keep_calls(msg, 1);
  sb_free(&b);
}

/* "tool_calls" when the model ended its turn with calls. */
static const char *finish_reason(const char *finish, const serve_chat_msg *msg) {
  return msg->n_calls && finish && !strcmp(finish, "stop") ? "tool_calls" : finish;
}

/* A streamed reply: MHD pulls SSE bytes through stream_read. */
typedef struct {
  serve_server *srv;
  struct MHD_Connection *conn;
  serve_job *job;
  char id[40];
  serve_reply_meta meta;
  strbuf pending;       /* SSE bytes not yet handed to MHD */
  size_t off;           /* how much of pending MHD has */
  size_t seen;          /* how much of the job's final text was sent */
  serve_chat_sent sent; /* chat: what of the parsed reply was sent */
  bool sent_role, finished;
} stream_ctx;

static void sse(strbuf *b, char *json) {
  sb_printf(b, "data: %s\n\n", json);
  free(json);
}

/* Appends the next SSE events to st->pending; false when the client left. */
static bool stream_fill(stream_ctx *st) {
  const serve_reply_meta *m = &st->meta;
  bool usage = st->job->req.include_usage;
  if (m->chat && !st->sent_role) {   /* OpenAI's first chunk: the role, no text */
    st->sent_role = true;
    sse(&st->pending, serve_reply_chunk(m, "assistant", "", 0, NULL, usage));
    return true;
  }
  serve_queue *q = &st->srv->queue;
  pthread_mutex_lock(&q->mu);
  bool quiet = false;
  /* a stream with no new text for a third of the idle timeout gets a comment line, so that the timeout does not close it */
  if (!wait_job_for(st->srv, st->conn, st->job, WAIT_TEXT, st->seen, st->srv->timeout_s / 3.0, &quiet)) {
    pthread_mutex_unlock(&q->mu);
    return false;
  }
  if (quiet) {   /* no text for a while (waiting for a slot, a long prompt): an SSE comment keeps the connection alive */
    pthread_mutex_unlock(&q->mu);
    sb_puts(&st->pending, ": waiting\n\n");
    return true;
  }
  serve_job *j = st->job;
  size_t new_len = j->out.safe - st->seen;
  char *piece = tg_xmalloc(new_len + 1);
  memcpy(piece, j->out.text.s + st->seen, new_len);
  st->seen = j->out.safe;
  bool done = j->phase == JOB_DONE, failed = j->failed;
  serve_error err = j->err;
  const char *finish = j->finish;
  int n_prompt = j->n_prompt, n_out = j->n_out;
  st->meta.n_cached = j->n_cached;
  strbuf text = { 0 };   /* chat: all final text so far, parsed below without the lock */
  if (m->chat) sb_append(&text, j->out.text.s ? j->out.text.s : "", st->seen);
  pthread_mutex_unlock(&q->mu);

  if (m->chat) {
    /* the parse of all text so far; send what it has beyond what was sent
     * (the job's prefill and syntax are fixed once it started) */
    serve_chat_msg msg;
    parse_reply(j, text.s, text.n, done && !failed, &msg);
    sb_free(&text);
    serve_chat_delta d;
    serve_chat_sent_next(&st->sent, &msg, &d);
    /* the text first, then each call entry in a chunk of its own (a head,
     * then pieces of the arguments, as OpenAI streams them) */
    if (d.rlen || d.clen) sse(&st->pending, serve_reply_chat_delta(m, d.reasoning, d.rlen, d.content, d.clen, NULL, 0, usage));
    for (int i = 0; i < d.n_calls; i++)
      sse(&st->pending, serve_reply_chat_delta(m, NULL, 0, NULL, 0, &d.calls[i], 1, usage));
    free(d.calls);
    finish = finish_reason(finish, &msg);
    serve_chat_msg_free(&msg);
  } else if (new_len) sse(&st->pending, serve_reply_chunk(m, NULL, piece, new_len, NULL, usage));
  free(piece);
  if (done) {
    if (failed) sse(&st->pending, serve_error_json(&err));   /* the status line is long gone */
    else {
      sse(&st->pending, serve_reply_chunk(m, NULL, "", 0, finish, usage));
      if (usage) sse(&st->pending, serve_reply_usage_chunk(m, n_prompt, n_out));
    }
    sb_puts(&st->pending, "data: [DONE]\n\n");
    st->finished = true;
  }
  return true;
}

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max) {
  stream_ctx *st = cls;
  while (st->off == st->pending.n) {
    if (st->finished) return MHD_CONTENT_READER_END_OF_STREAM;
    st->pending.n = st->off = 0;
    if (!stream_fill(st)) return MHD_CONTENT_READER_END_WITH_ERROR;
  }
  size_t n = st->pending.n - st->off < max ? st->pending.n - st->off : max;
  memcpy(buf, st->pending.s + st->off, n);
  st->off += n;
  return (ssize_t)n;
}

static void stream_free(void *cls) {
  stream_ctx *st = cls;
  serve_job_release(&st->srv->queue, st->job);   /* cancels it if the client left early */
  sb_free(&st->pending);
  serve_chat_sent_free(&st->sent);
  free(st);
}

static enum MHD_Result start_stream(serve_server *s, struct MHD_Connection *c, serve_job *j,
                                    const serve_reply_meta *m) {
  stream_ctx *st = tg_xcalloc(1, sizeof *st);
  st->srv = s;
  st->conn = c;
  st->job = j;
  snprintf(st->id, sizeof st->id, "%s", m->id);
  st->meta = *m;
  st->meta.id = st->id;
  struct MHD_Response *r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16384, stream_read, st, stream_free);
  serve_add_common_headers(r, "text/event-stream");
  MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
  enum MHD_Result ok = MHD_queue_response(c, MHD_HTTP_OK, r);
  MHD_destroy_response(r);   /* MHD keeps it (and st) until the connection is done */
  return ok;
}

enum MHD_Result serve_handle_completion(serve_server *s, struct MHD_Connection *c, const char *body, size_t len,
                                        bool chat) {
  serve_request req;
  serve_error err;
  if (serve_request_parse(&req, chat, body, len, &err)) return serve_send_error(c, &err);
  if (req.max_tokens > s->be->n_ctx) {   /* as OpenAI: more than the model can ever give is a 400 that says the bound */
    serve_error_set(&err, 400, "invalid_value", req.max_tokens_param,
                    "'%s' is %d, more than the model's context of %d tokens (prompt and completion share it)",
                    req.max_tokens_param, req.max_tokens, s->be->n_ctx);
    serve_request_free(&req);
    return serve_send_error(c, &err);
  }
  bool stream = req.stream;
  serve_job *j = serve_job_submit(&s->queue, &req);
  char id[40];
  serve_new_id(s, chat ? "chatcmpl" : "cmpl", id, sizeof id);
  serve_reply_meta m = { .chat = chat, .id = id, .model = s->be->model_id, .created = (long)time(NULL) };

  /* The status line must wait until the prompt is known to fit. */
  serve_queue *q = &s->queue;
  pthread_mutex_lock(&q->mu);
  if (!wait_job(s, c, j, stream ? WAIT_START : WAIT_DONE, 0)) {
    pthread_mutex_unlock(&q->mu);
    serve_job_release(q, j);
    return MHD_NO;   /* client gone: drop the connection */
  }
  if (j->failed) {
    err = j->err;
    pthread_mutex_unlock(&q->mu);
    serve_job_release(q, j);
    return serve_send_error(c, &err);
  }
  if (stream) {
    pthread_mutex_unlock(&q->mu);
    return start_stream(s, c, j, &m);   /* the stream now holds the job */
  }
  char *json;
  m.n_cached = j->n_cached;
  if (chat) {
    serve_chat_msg msg;
    parse_reply(j, j->out.text.s ? j->out.text.s : "", j->out.text.n, true, &msg);
    json = serve_reply_chat(&m, &msg, finish_reason(j->finish, &msg), j->n_prompt, j->n_out);
    serve_chat_msg_free(&msg);
  } else json = serve_reply_full(&m, j->out.text.s, j->finish, j->n_prompt, j->n_out);
  pthread_mutex_unlock(&q->mu);
  serve_job_release(q, j);
  return serve_send_json(c, MHD_HTTP_OK, json);
}

