/* server.c: the HTTP side of `tg serve`: libmicrohttpd with one thread per
 * connection, routing, request bodies, plain replies, and starting and
 * stopping. Completion requests go on to completion.c. */
#include <errno.h>
#include <netdb.h>
#include <signal.h>
#include <stdio.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include "serve/server.h"
#include "util/stop_signal.h"
#include "util/util.h"

#define DEFAULT_MAX_BODY (8u << 20)

/* Per-request state kept between the access handler's calls. */
typedef struct {
  strbuf body;
  bool too_large;
  bool unauthorized;   /* --api-key is set and the request lacks it */
} request_ctx;

/* ---- replies */

void serve_add_common_headers(struct MHD_Response *r, const char *content_type) {
  if (content_type) MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
  MHD_add_response_header(r, "Access-Control-Allow-Origin", "*");
}

/* Sends a malloc'd string (taking it) with the given status. */
static enum MHD_Result send_owned(struct MHD_Connection *c, int status, char *body, const char *content_type) {
  struct MHD_Response *r = MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_FREE);
  serve_add_common_headers(r, content_type);
  enum MHD_Result ok = MHD_queue_response(c, (unsigned)status, r);
  MHD_destroy_response(r);
  return ok;
}

enum MHD_Result serve_send_json(struct MHD_Connection *c, int status, char *json) {
  return send_owned(c, status, json, "application/json");
}

enum MHD_Result serve_send_error(struct MHD_Connection *c, const serve_error *e) {
  return serve_send_json(c, e->status, serve_error_json(e));
}

static enum MHD_Result send_new_error(struct MHD_Connection *c, int status, const char *code, const char *fmt,
                                      const char *arg) {
  serve_error e;
  serve_error_set(&e, status, code, NULL, fmt, arg);
  return serve_send_error(c, &e);
}

/* ---- routing */

typedef enum {
  ROUTE_MODELS, ROUTE_MODEL, ROUTE_HEALTH, ROUTE_CHAT, ROUTE_COMPLETIONS, ROUTE_METRICS, ROUTE_TOKENIZE,
  ROUTE_DETOKENIZE, ROUTE_APPLY_TEMPLATE, ROUTE_EMBEDDINGS,
} route_kind;
/* A path ending in '/' takes one more segment (the model id). Public routes
 * answer without the API key (llama-server's: health and the model list). */
static const struct { const char *path, *method; route_kind kind; bool public; } routes[] = {
  { "/v1/models", "GET", ROUTE_MODELS, true },            { "/models", "GET", ROUTE_MODELS, true },
  { "/v1/models/", "GET", ROUTE_MODEL, true },            { "/models/", "GET", ROUTE_MODEL, true },
  { "/health", "GET", ROUTE_HEALTH, true },               { "/v1/health", "GET", ROUTE_HEALTH, true },
  { "/v1/chat/completions", "POST", ROUTE_CHAT, false },   { "/chat/completions", "POST", ROUTE_CHAT, false },
  { "/v1/completions", "POST", ROUTE_COMPLETIONS, false }, { "/completions", "POST", ROUTE_COMPLETIONS, false },
  { "/metrics", "GET", ROUTE_METRICS, false },            { "/v1/metrics", "GET", ROUTE_METRICS, false },
  { "/tokenize", "POST", ROUTE_TOKENIZE, false },         { "/v1/tokenize", "POST", ROUTE_TOKENIZE, false },
  { "/detokenize", "POST", ROUTE_DETOKENIZE, false },     { "/v1/detokenize", "POST", ROUTE_DETOKENIZE, false },
  { "/apply-template", "POST", ROUTE_APPLY_TEMPLATE, false }, { "/v1/apply-template", "POST", ROUTE_APPLY_TEMPLATE, false },
  { "/v1/embeddings", "POST", ROUTE_EMBEDDINGS, false },  { "/embeddings", "POST", ROUTE_EMBEDDINGS, false },
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
    serve_add_common_headers(r, NULL);
    MHD_add_response_header(r, "Access-Control-Allow-Methods", allow);
    MHD_add_response_header(r, "Access-Control-Allow-Headers", "Content-Type, Authorization, X-Api-Key");
    MHD_add_response_header(r, "Access-Control-Max-Age", "86400");
  } else {
    serve_error e;
    serve_error_set(&e, 405, "method_not_allowed", NULL, "%s does not take %s", routes[route].path, method);
    char *json = serve_error_json(&e);
    r = MHD_create_response_from_buffer(strlen(json), json, MHD_RESPMEM_MUST_FREE);
    serve_add_common_headers(r, "application/json");
  }
  MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, allow);
  enum MHD_Result ok = MHD_queue_response(c, preflight ? MHD_HTTP_NO_CONTENT : MHD_HTTP_METHOD_NOT_ALLOWED, r);
  MHD_destroy_response(r);
  return ok;
}

/* Whether the request carries the API key: "Authorization: Bearer KEY"
 * (what OpenAI clients send) or "X-Api-Key: KEY". Compared in time that
 * does not depend on where the strings differ. */
static bool has_key(serve_server *s, struct MHD_Connection *c) {
  const char *auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
  const char *x = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-Api-Key");
  const char *got = auth && !strncasecmp(auth, "Bearer ", 7) ? auth + 7 : x;
  if (!got) return false;
  size_t n = strlen(s->api_key), m = strlen(got);
  unsigned diff = n != m;
  for (size_t i = 0; i < m; i++) diff |= (unsigned char)got[i] ^ (unsigned char)s->api_key[i % n];
  return diff == 0;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                  const char *version, const char *upload, size_t *upload_size, void **con_cls) {
  serve_server *s = cls;
  request_ctx *rq = *con_cls;
  if (!rq) {   /* first call: headers only */
    rq = *con_cls = tg_xcalloc(1, sizeof *rq);
    int r0 = find_route(url);
    if (s->api_key && r0 >= 0 && !routes[r0].public && strcmp(method, "OPTIONS") != 0 && !has_key(s, c))
      rq->unauthorized = true;   /* answered once the body is in (or dropped) */
    const char *len = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (len && strtoull(len, NULL, 10) > s->max_body) rq->too_large = true;
    if (!rq->too_large) return MHD_YES;
  }
  if (*upload_size) {   /* a piece of the body */
    if (rq->unauthorized) {}   /* dropped unread */
    else if (!rq->too_large && rq->body.n + *upload_size <= s->max_body) {
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
  if (rq->unauthorized) {
    serve_error e;
    serve_error_set(&e, 401, "invalid_api_key", NULL, "Invalid API Key: send it as 'Authorization: Bearer KEY'");
    return serve_send_error(c, &e);
  }
  if (rq->too_large) {
    char cap[32];
    snprintf(cap, sizeof cap, "%zu", s->max_body);
    return send_new_error(c, MHD_HTTP_CONTENT_TOO_LARGE, "request_too_large", "the request body is over the %s byte limit", cap);
  }
  const char *body = rq->body.s ? rq->body.s : "";
  switch (routes[route].kind) {
  case ROUTE_MODELS: return serve_send_json(c, MHD_HTTP_OK, serve_reply_models(s->be->model_id, s->started, s->be->n_ctx));
  case ROUTE_MODEL:
    if (strcmp(url + strlen(routes[route].path), s->be->model_id) != 0)
      return send_new_error(c, 404, "model_not_found", "no such model: %s", url + strlen(routes[route].path));
    return serve_send_json(c, MHD_HTTP_OK, serve_reply_model(s->be->model_id, s->started, s->be->n_ctx));
  case ROUTE_HEALTH: return serve_handle_health(s, c);
  case ROUTE_METRICS: return serve_handle_metrics(s, c);
  case ROUTE_CHAT: return serve_handle_completion(s, c, body, rq->body.n, true);
  case ROUTE_COMPLETIONS: return serve_handle_completion(s, c, body, rq->body.n, false);
  case ROUTE_TOKENIZE: return serve_handle_tokenize(s, c, body, rq->body.n);
  case ROUTE_DETOKENIZE: return serve_handle_detokenize(s, c, body, rq->body.n);
  case ROUTE_APPLY_TEMPLATE: return serve_handle_apply_template(s, c, body, rq->body.n);
  case ROUTE_EMBEDDINGS: return serve_handle_embeddings(s, c, body, rq->body.n);
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
  return be && be->render_chat && be->tokenize_text && be->generate && be->model_id && be->n_ctx > 0;
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
  s->api_key = opt && opt->api_key && *opt->api_key ? tg_xstrdup(opt->api_key) : NULL;
  pthread_mutex_init(&s->id_mu, NULL);
  if (serve_queue_start(&s->queue, be, opt && opt->quiet, opt ? opt->max_queue : 0)) {
    freeaddrinfo(ai);
    pthread_mutex_destroy(&s->id_mu);
    free(s->api_key);
    free(s);
    return NULL;
  }
  unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_AUTO_INTERNAL_THREAD;   /* AUTO: poll(), not select() */
  if (ai->ai_family == AF_INET6) flags |= MHD_USE_IPv6;
  unsigned timeout = opt && opt->timeout_s ? opt->timeout_s : SERVE_DEFAULT_TIMEOUT_S;
  s->timeout_s = timeout;
  unsigned per_ip = opt && opt->max_conns_per_ip ? opt->max_conns_per_ip : SERVE_DEFAULT_CONNS_PER_IP;
  s->daemon = MHD_start_daemon(flags, (uint16_t)port, NULL, NULL, on_request, s,
                               MHD_OPTION_SOCK_ADDR, ai->ai_addr,
                               MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
                               MHD_OPTION_CONNECTION_LIMIT, (unsigned)SERVE_MAX_CONNECTIONS,
                               MHD_OPTION_CONNECTION_TIMEOUT, timeout,
                               MHD_OPTION_PER_IP_CONNECTION_LIMIT, per_ip,
                               MHD_OPTION_END);
  int err = errno;
  freeaddrinfo(ai);
  if (!s->daemon) {
    serve_queue_stop(&s->queue);
    serve_queue_destroy(&s->queue);
    pthread_mutex_destroy(&s->id_mu);
    free(s->api_key);
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
  free(s->api_key);
  free(s);
}

int serve_run(const serve_options *opt, const serve_backend *be) {
  /* the connection and slot threads inherit a mask without Ctrl-C/SIGTERM */
  sigset_t old;
  stop_signals_block(&old);
  serve_server *s = serve_start(opt, be);
  if (!s) {
    stop_signals_restore(&old);
    return -1;
  }
  const char *host = opt && opt->host ? opt->host : "127.0.0.1";
  bool v6 = strchr(host, ':') != NULL;
  fprintf(stderr, "tg serve: %s (context %d) on http://%s%s%s:%d/v1 (Ctrl-C stops)\n", be->model_id, be->n_ctx,
          v6 ? "[" : "", host, v6 ? "]" : "", serve_port(s));
  stop_signals_wait(0, &old);
  fprintf(stderr, "tg serve: stopping\n");
  serve_stop(s);
  return 0;
}
