/* web.c: `tg viz --serve` and VIZ=1's page at exit: a small libmicrohttpd
 * server (the library `tg serve` uses) over one loaded trace. GET / and
 * the page's files (src/viz/web/, compiled in by the Makefile: see
 * web_assets below), and the JSON of web_api.c under /api/. Anything else
 * is a 404; a bad id a 400 or 404; a method other than GET/HEAD a 405. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <time.h>
#include "tg.h"
#include "util/stop_signal.h"
#include "viz/viz.h"

/* The page's files, generated from src/viz/web/ by src/viz/web/embed.sh
 * into $(BUILD)/gen/viz_web_assets.c. */
typedef struct { const char *path, *type; const unsigned char *data; size_t size; } viz_asset;
extern const viz_asset viz_web_assets[];
extern const int viz_web_nassets;

typedef struct {
  viz_trace t;
  bool loaded;
  char error[1024];   /* why the trace did not load (shown by the page) */
} web_state;

static enum MHD_Result reply(struct MHD_Connection *c, unsigned status, const void *data, size_t n, enum MHD_ResponseMemoryMode mode,
                             const char *type) {
  struct MHD_Response *r = MHD_create_response_from_buffer(n, (void *)data, mode);
  MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
  MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
  enum MHD_Result ok = MHD_queue_response(c, status, r);
  MHD_destroy_response(r);
  return ok;
}

static enum MHD_Result reply_json(struct MHD_Connection *c, unsigned status, char *json) {
  return reply(c, status, json, strlen(json), MHD_RESPMEM_MUST_FREE, "application/json");
}

/* {"error": msg, "status": N} */
static enum MHD_Result reply_error(struct MHD_Connection *c, unsigned status, const char *msg) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "error", msg);
  cJSON_AddNumberToObject(o, "status", status);
  char *s = cJSON_PrintUnformatted(o);
  cJSON_Delete(o);
  return reply_json(c, status, s);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method, const char *version,
                                  const char *upload, size_t *upload_size, void **con_cls) {
  web_state *w = cls;
  if (strcmp(method, "GET") && strcmp(method, "HEAD")) {
    struct MHD_Response *r = MHD_create_response_from_buffer(0, "", MHD_RESPMEM_PERSISTENT);
    MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
    enum MHD_Result ok = MHD_queue_response(c, MHD_HTTP_METHOD_NOT_ALLOWED, r);
    MHD_destroy_response(r);
    return ok;
  }
  if (!strcmp(url, "/")) url = "/index.html";
  for (int i = 0; i < viz_web_nassets; i++)
    if (!strcmp(url + 1, viz_web_assets[i].path))
      return reply(c, MHD_HTTP_OK, viz_web_assets[i].data, viz_web_assets[i].size, MHD_RESPMEM_PERSISTENT, viz_web_assets[i].type);
  bool trace = !strcmp(url, "/api/trace"), kernel = !strcmp(url, "/api/kernel"), profile = !strcmp(url, "/api/profile");
  if (!trace && !kernel && !profile) return reply_error(c, MHD_HTTP_NOT_FOUND, "no such page");
  if (!w->loaded) return reply_error(c, MHD_HTTP_INTERNAL_SERVER_ERROR, w->error);
  if (trace) return reply_json(c, MHD_HTTP_OK, viz_api_trace(&w->t));
  if (profile) return reply_json(c, MHD_HTTP_OK, viz_api_profile(&w->t));
  int status = 500;
  char *s = viz_api_kernel(&w->t, MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "id"), &status);
  return s ? reply_json(c, MHD_HTTP_OK, s) : reply_error(c, (unsigned)status, tg_error());
}

int viz_web_serve(const char *path, const viz_web_options *opt, FILE *err) {
  const char *host = opt->host ? opt->host : "127.0.0.1";
  if (opt->port < 0 || opt->port > 65535) return tg_seterr("tg viz: port %d is out of range", opt->port);
  web_state *w = tg_xcalloc(1, sizeof *w);
  w->loaded = viz_trace_load(path, opt->partial, &w->t) == 0;
  if (!w->loaded) {
    snprintf(w->error, sizeof w->error, "%s", tg_error());
    fprintf(err, "%s\n(the page shows this error)\n", w->error);
  }
  struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE }, *ai;
  char port_s[8];
  snprintf(port_s, sizeof port_s, "%d", opt->port);
  int gai = getaddrinfo(host, port_s, &hints, &ai);
  if (gai) {
    if (w->loaded) viz_trace_free(&w->t);
    free(w);
    return tg_seterr("tg viz: cannot resolve host '%s': %s", host, gai_strerror(gai));
  }
  sigset_t old;
  stop_signals_block(&old);   /* the daemon's threads inherit the mask */
  unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_AUTO_INTERNAL_THREAD | (ai->ai_family == AF_INET6 ? MHD_USE_IPv6 : 0);
  struct MHD_Daemon *d = MHD_start_daemon(flags, (uint16_t)opt->port, NULL, NULL, on_request, w, MHD_OPTION_SOCK_ADDR, ai->ai_addr,
                                          MHD_OPTION_CONNECTION_LIMIT, 64u, MHD_OPTION_CONNECTION_TIMEOUT, 30u, MHD_OPTION_END);
  int e = errno;
  freeaddrinfo(ai);
  int rc = 0;
  if (!d) {
    stop_signals_restore(&old);
    rc = tg_seterr("tg viz: cannot listen on %s:%d (%s)", host, opt->port, strerror(e));
  } else {
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    bool v6 = strchr(host, ':') != NULL;
    fprintf(err, "tg viz: serving %s on http://%s%s%s:%d/ (Ctrl-C stops)\n", w->loaded ? w->t.path : path, v6 ? "[" : "", host, v6 ? "]" : "",
            di ? di->port : opt->port);
    fflush(err);
    stop_signals_wait(opt->seconds, &old);
    MHD_stop_daemon(d);
  }
  if (w->loaded) viz_trace_free(&w->t);
  free(w);
  return rc;
}
