/* server.c: the HTTP side of `tg serve`: libmicrohttpd with one thread per
 * connection, routing, request bodies, and replies, streamed (SSE) or whole.
 * Completion requests become jobs on the generation queue (jobs.h); their
 * connection threads wait on the job, checking now and then that the client
 * is still there, so a client that leaves frees the worker promptly. */
#include "serve/serve.h"
#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <sys/socket.h>
#include <time.h>
#include "serve/jobs.h"
#include "serve/reply.h"
#include "serve/request.h"
#include "util/util.h"

#define DEFAULT_MAX_BODY (8u << 20)
#define CLIENT_CHECK_MS 50      /* how often a waiting connection looks at its socket */

struct serve_server {
  struct MHD_Daemon *daemon;
  serve_queue queue;
  const serve_backend *be;
  size_t max_body;
  int port;
  long started;
  pthread_mutex_t id_mu;
  uint64_t id_state;
};

/* Per-request state kept between the access handler's calls. */
typedef struct {
  strbuf body;
  bool too_large;
} request_ctx;

/* ---- replies */

static void add_common_headers(struct MHD_Response *r, const char *content_type) {
  if (content_type) MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
  MHD_add_response_header(r, "Access-Control-Allow-Origin", "*");
}

/* Sends a malloc'd string (taking it) with the given status. */
static enum MHD_Result send_owned(struct MHD_Connection *c, int status, char *body, const char *content_type) {
  struct MHD_Response *r = MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_FREE);
  add_common_headers(r, content_type);
  enum MHD_Result ok = MHD_queue_response(c, (unsigned)status, r);
  MHD_destroy_response(r);
  return ok;
}

static enum MHD_Result send_json(struct MHD_Connection *c, int status, char *json) {
  return send_owned(c, status, json, "application/json");
}

static enum MHD_Result send_error(struct MHD_Connection *c, const serve_error *e) {
  return send_json(c, e->status, serve_error_json(e));
}

static enum MHD_Result send_new_error(struct MHD_Connection *c, int status, const char *code, const char *fmt,
                                      const char *arg) {
  serve_error e;
  serve_error_set(&e, status, code, NULL, fmt, arg);
  return send_error(c, &e);
}

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
static bool wait_job(serve_server *s, struct MHD_Connection *c, serve_job *j, wait_for what, size_t seen) {
  struct timespec next;
  clock_gettime(CLOCK_REALTIME, &next);
  while (!ready(j, what, seen)) {
    if (s->queue.stopping) return false;
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

/* ---- completions */

static void new_id(serve_server *s, bool chat, char *out, size_t n) {
  pthread_mutex_lock(&s->id_mu);
  s->id_state = tg_hash_mix(s->id_state, 1);
  uint64_t v = s->id_state;
  pthread_mutex_unlock(&s->id_mu);
  snprintf(out, n, "%s-%016llx", chat ? "chatcmpl" : "cmpl", (unsigned long long)v);
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
  if (!wait_job(st->srv, st->conn, st->job, WAIT_TEXT, st->seen)) {
    pthread_mutex_unlock(&q->mu);
    return false;
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
  pthread_mutex_unlock(&q->mu);

  if (new_len) sse(&st->pending, serve_reply_chunk(m, NULL, piece, new_len, NULL, usage));
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
  add_common_headers(r, "text/event-stream");
  MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
  enum MHD_Result ok = MHD_queue_response(c, MHD_HTTP_OK, r);
  MHD_destroy_response(r);   /* MHD keeps it (and st) until the connection is done */
  return ok;
}

static enum MHD_Result handle_completion(serve_server *s, struct MHD_Connection *c, request_ctx *rq, bool chat) {
  serve_request req;
  serve_error err;
  if (serve_request_parse(&req, chat, rq->body.s ? rq->body.s : "", rq->body.n, &err)) return send_error(c, &err);
  bool stream = req.stream;
  serve_job *j = serve_job_submit(&s->queue, &req);
  char id[40];
  new_id(s, chat, id, sizeof id);
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
    return send_error(c, &err);
  }
  if (stream) {
    pthread_mutex_unlock(&q->mu);
    return start_stream(s, c, j, &m);   /* the stream now holds the job */
  }
  char *json = serve_reply_full(&m, j->out.text.s, j->finish, j->n_prompt, j->n_out);
  pthread_mutex_unlock(&q->mu);
  serve_job_release(q, j);
  return send_json(c, MHD_HTTP_OK, json);
}

/* ---- routing */

typedef enum { ROUTE_MODELS, ROUTE_MODEL, ROUTE_HEALTH, ROUTE_CHAT, ROUTE_COMPLETIONS } route_kind;
/* A path ending in '/' takes one more segment (the model id). */
static const struct { const char *path, *method; route_kind kind; } routes[] = {
  { "/v1/models", "GET", ROUTE_MODELS },            { "/models", "GET", ROUTE_MODELS },
  { "/v1/models/", "GET", ROUTE_MODEL },            { "/models/", "GET", ROUTE_MODEL },
  { "/health", "GET", ROUTE_HEALTH },               { "/v1/health", "GET", ROUTE_HEALTH },
  { "/v1/chat/completions", "POST", ROUTE_CHAT },   { "/chat/completions", "POST", ROUTE_CHAT },
  { "/v1/completions", "POST", ROUTE_COMPLETIONS }, { "/completions", "POST", ROUTE_COMPLETIONS },
};
#define N_ROUTES (int)(sizeof routes / sizeof *routes)

static int find_route(const char *url) {
  for (int i = 0; i < N_ROUTES; i++) {
    size_t n = strlen(routes[i].path);
    if (routes[i].path[n - 1] == '/' ? strncmp(routes[i].path, url, n) == 0 && url[n] : strcmp(routes[i].path, url) == 0)
      return i;
  }
  return -1;
}

/* OPTIONS (a browser's CORS preflight) or a method the path does not take. */
static enum MHD_Result send_allow(struct MHD_Connection *c, int route, bool preflight, const char *method) {
  char allow[32];
  snprintf(allow, sizeof allow, "%s, OPTIONS", routes[route].method);
  struct MHD_Response *r;
  if (preflight) {
    r = MHD_create_response_from_buffer(0, "", MHD_RESPMEM_PERSISTENT);
    add_common_headers(r, NULL);
    MHD_add_response_header(r, "Access-Control-Allow-Methods", allow);
    MHD_add_response_header(r, "Access-Control-Allow-Headers", "Content-Type, Authorization");
    MHD_add_response_header(r, "Access-Control-Max-Age", "86400");
  } else {
    serve_error e;
    serve_error_set(&e, 405, "method_not_allowed", NULL, "%s does not take %s", routes[route].path, method);
    char *json = serve_error_json(&e);
    r = MHD_create_response_from_buffer(strlen(json), json, MHD_RESPMEM_MUST_FREE);
    add_common_headers(r, "application/json");
  }
  MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, allow);
  enum MHD_Result ok = MHD_queue_response(c, preflight ? MHD_HTTP_NO_CONTENT : MHD_HTTP_METHOD_NOT_ALLOWED, r);
  MHD_destroy_response(r);
  return ok;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                  const char *version, const char *upload, size_t *upload_size, void **con_cls) {
  serve_server *s = cls;
  request_ctx *rq = *con_cls;
  if (!rq) {   /* first call: headers only */
    rq = *con_cls = tg_xcalloc(1, sizeof *rq);
    const char *len = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (len && strtoull(len, NULL, 10) > s->max_body) rq->too_large = true;
    if (!rq->too_large) return MHD_YES;
  }
  if (*upload_size) {   /* a piece of the body */
    if (!rq->too_large && rq->body.n + *upload_size <= s->max_body) {
      sb_append(&rq->body, upload, *upload_size);
    } else rq->too_large = true;
    *upload_size = 0;
    return MHD_YES;
  }
  int route = find_route(url);
  if (route < 0) return send_new_error(c, 404, "not_found", "no such endpoint: %s", url);
  if (strcmp(method, "OPTIONS") == 0) return send_allow(c, route, true, method);
  if (strcmp(method, routes[route].method) != 0 && !(strcmp(method, "HEAD") == 0 && strcmp(routes[route].method, "GET") == 0))
    return send_allow(c, route, false, method);
  if (rq->too_large) {
    char cap[32];
    snprintf(cap, sizeof cap, "%zu", s->max_body);
    return send_new_error(c, MHD_HTTP_CONTENT_TOO_LARGE, "request_too_large", "the request body is over the %s byte limit", cap);
  }
  switch (routes[route].kind) {
  case ROUTE_MODELS: return send_json(c, MHD_HTTP_OK, serve_reply_models(s->be->model_id, s->started, s->be->n_ctx));
  case ROUTE_MODEL:
    if (strcmp(url + strlen(routes[route].path), s->be->model_id) != 0)
      return send_new_error(c, 404, "model_not_found", "no such model: %s", url + strlen(routes[route].path));
    return send_json(c, MHD_HTTP_OK, serve_reply_model(s->be->model_id, s->started, s->be->n_ctx));
  case ROUTE_HEALTH: return send_json(c, MHD_HTTP_OK, tg_xstrdup("{\"status\":\"ok\"}"));
  case ROUTE_CHAT: return handle_completion(s, c, rq, true);
  case ROUTE_COMPLETIONS: return handle_completion(s, c, rq, false);
  }
  return MHD_NO;
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode code) {
  request_ctx *rq = *con_cls;
  if (!rq) return;
  sb_free(&rq->body);
  free(rq);
  *con_cls = NULL;
}

/* ---- start and stop */

static bool backend_complete(const serve_backend *be) {
  return be && be->tokenize_chat && be->tokenize_text && be->generate && be->model_id && be->n_ctx > 0;
}

serve_server *serve_start(const serve_options *opt, const serve_backend *be) {
  if (!backend_complete(be)) TG_FAIL("serve: the backend lacks a function, a model id or a context length");
  const char *host = opt && opt->host ? opt->host : "127.0.0.1";
  int port = opt ? opt->port : 0;
  if (port < 0 || port > 65535) TG_FAIL("serve: port %d is out of range", port);

  struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE }, *ai;
  char port_s[8];
  snprintf(port_s, sizeof port_s, "%d", port);
  int gai = getaddrinfo(host, port_s, &hints, &ai);
  if (gai) TG_FAIL("serve: cannot resolve host '%s': %s", host, gai_strerror(gai));

  serve_server *s = tg_xcalloc(1, sizeof *s);
  s->be = be;
  s->max_body = opt && opt->max_body ? opt->max_body : DEFAULT_MAX_BODY;
  s->started = (long)time(NULL);
  s->id_state = (uint64_t)s->started ^ (uint64_t)(uintptr_t)s;
  pthread_mutex_init(&s->id_mu, NULL);
  if (serve_queue_start(&s->queue, be, opt && opt->quiet)) {
    freeaddrinfo(ai);
    pthread_mutex_destroy(&s->id_mu);
    free(s);
    return NULL;
  }
  unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_AUTO_INTERNAL_THREAD;
  if (ai->ai_family == AF_INET6) flags |= MHD_USE_IPv6;
  s->daemon = MHD_start_daemon(flags, (uint16_t)port, NULL, NULL, on_request, s,
                               MHD_OPTION_SOCK_ADDR, ai->ai_addr,
                               MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
                               MHD_OPTION_CONNECTION_LIMIT, 256u,
                               MHD_OPTION_END);
  int err = errno;
  freeaddrinfo(ai);
  if (!s->daemon) {
    serve_queue_stop(&s->queue);
    serve_queue_destroy(&s->queue);
    pthread_mutex_destroy(&s->id_mu);
    free(s);
    TG_FAIL("serve: cannot listen on %s:%d (%s)", host, port, strerror(err));
  }
  const union MHD_DaemonInfo *di = MHD_get_daemon_info(s->daemon, MHD_DAEMON_INFO_BIND_PORT);
  s->port = di ? di->port : port;
  return s;
}

int serve_port(const serve_server *s) { return s->port; }

void serve_stop(serve_server *s) {
  if (!s) return;
  serve_queue_stop(&s->queue);     /* waiting connections see `stopping` and give up */
  MHD_stop_daemon(s->daemon);      /* joins the connection threads */
  serve_queue_destroy(&s->queue);
  pthread_mutex_destroy(&s->id_mu);
  free(s);
}

int serve_run(const serve_options *opt, const serve_backend *be) {
  /* Block the signals before any thread starts, so all threads inherit the
   * mask and sigwait here is the one place they arrive. */
  sigset_t sigs, old;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGINT);
  sigaddset(&sigs, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &sigs, &old);
  serve_server *s = serve_start(opt, be);
  if (!s) {
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return -1;
  }
  const char *host = opt && opt->host ? opt->host : "127.0.0.1";
  bool v6 = strchr(host, ':') != NULL;
  fprintf(stderr, "tg serve: %s (context %d) on http://%s%s%s:%d/v1 (Ctrl-C stops)\n", be->model_id, be->n_ctx,
          v6 ? "[" : "", host, v6 ? "]" : "", serve_port(s));
  int sig = 0;
  sigwait(&sigs, &sig);
  fprintf(stderr, "tg serve: stopping\n");
  serve_stop(s);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  return 0;
}
