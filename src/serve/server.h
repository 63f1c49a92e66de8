/* server.h: what the two halves of the HTTP server share: server.c (the
 * daemon, routing, request bodies) and completion.c (completion requests:
 * queueing, waiting, whole and streamed replies). Internal to src/serve. */
#ifndef TG_SERVE_SERVER_H
#define TG_SERVE_SERVER_H

#include <microhttpd.h>
#include <pthread.h>
#include "serve/jobs.h"
#include "serve/reply.h"
#include "serve/serve.h"

struct serve_server {
  struct MHD_Daemon *daemon;
  serve_queue queue;        /* the generation worker and its jobs */
  const serve_backend *be;
  size_t max_body;          /* request body cap in bytes */
  int port;
  long started;             /* the models' "created" time */
  pthread_mutex_t id_mu;    /* guards id_state, the source of reply ids */
  uint64_t id_state;
  char *api_key;            /* required of clients when set (serve_options.api_key) */
  unsigned timeout_s;       /* a connection idle this long is closed */
};

/* Replies: every one carries the CORS header. send_* take ownership of the
 * malloc'd body. */
void serve_add_common_headers(struct MHD_Response *r, const char *content_type);
enum MHD_Result serve_send_json(struct MHD_Connection *c, int status, char *json);
enum MHD_Result serve_send_error(struct MHD_Connection *c, const serve_error *e);

/* Waits until the job is done, with q->mu held; false when the client
 * left or the server is stopping (completion.c). */
bool serve_wait_done(serve_server *s, struct MHD_Connection *c, serve_job *j);
/* A reply id: "chatcmpl-…", "cmpl-…" (completion.c). */
void serve_new_id(serve_server *s, const char *prefix, char *out, size_t n);

/* ops.c: GET /health (with the slots' state), GET /metrics, POST
 * /tokenize, /detokenize, /apply-template and /v1/embeddings. */
enum MHD_Result serve_handle_health(serve_server *s, struct MHD_Connection *c);
enum MHD_Result serve_handle_metrics(serve_server *s, struct MHD_Connection *c);
enum MHD_Result serve_handle_tokenize(serve_server *s, struct MHD_Connection *c, const char *body, size_t len);
enum MHD_Result serve_handle_detokenize(serve_server *s, struct MHD_Connection *c, const char *body, size_t len);
enum MHD_Result serve_handle_apply_template(serve_server *s, struct MHD_Connection *c, const char *body, size_t len);
enum MHD_Result serve_handle_embeddings(serve_server *s, struct MHD_Connection *c, const char *body, size_t len);

/* POST /v1/chat/completions (chat) or /v1/completions with its whole body. */
enum MHD_Result serve_handle_completion(serve_server *s, struct MHD_Connection *c, const char *body, size_t len,
                                        bool chat);

#endif
