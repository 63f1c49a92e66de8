/* ops.c: the operations endpoints next to the OpenAI API, with
 * llama-server's shapes: GET /health (slot states), GET /metrics
 * (Prometheus), POST /tokenize, /detokenize, /apply-template, and the
 * OpenAI /v1/embeddings. */
#include <stdio.h>
#include <string.h>
#include "serve/request.h"
#include "serve/server.h"
#include "tg.h"
#include "util/util.h"

#define MAX_EMBED_INPUTS 2048   /* OpenAI's cap on inputs per request */

static enum MHD_Result send_error(struct MHD_Connection *c, int status, const char *code, const char *param,
                                  const char *msg) {
  serve_error e;
  serve_error_set(&e, status, code, param, "%s", msg);
  return serve_send_error(c, &e);
}

static char *print_free(cJSON *o) {
  char *s = cJSON_PrintUnformatted(o);
  cJSON_Delete(o);
  if (!s) { fprintf(stderr, "tg serve: out of memory printing JSON\n"); abort(); }
  return s;
}

/* The body as an object with only the given fields; NULL after sending the 400. */
static cJSON *body_object(struct MHD_Connection *c, const char *body, size_t len, const char *const *fields,
                          const char *what, enum MHD_Result *sent) {
  serve_error e;
  cJSON *o = serve_json_parse_strict(body, len, &e);
  const char *u = o ? serve_json_unknown_field(o, fields) : NULL;
  if (u) {
    serve_error_set(&e, 400, "unknown_parameter", u, "unknown field '%.60s' in %s (docs/serve.md lists the fields)", u, what);
    cJSON_Delete(o);
    o = NULL;
  }
  if (!o) *sent = serve_send_error(c, &e);
  return o;
}

static bool get_flag(const cJSON *o, const char *name, bool dflt, bool *ok) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
  if (!v || cJSON_IsNull(v)) return dflt;
  if (!cJSON_IsBool(v)) *ok = false;
  return cJSON_IsTrue(v);
}

/* Token ids of a JSON array of integers in the vocabulary's range; -1 if not one. */
static int token_array(const cJSON *a, int **out) {
  if (!cJSON_IsArray(a)) return -1;
  int n = cJSON_GetArraySize(a), i = 0;
  *out = tg_xmalloc((size_t)(n ? n : 1) * sizeof(int));
  const cJSON *t;
  cJSON_ArrayForEach(t, a) {
    if (!cJSON_IsNumber(t) || t->valuedouble != (double)(int)t->valuedouble || t->valuedouble < 0) {
      free(*out);
      *out = NULL;
      return -1;
    }
    (*out)[i++] = (int)t->valuedouble;
  }
  return n;
}

/* ---- health and metrics */

enum MHD_Result serve_handle_health(serve_server *s, struct MHD_Connection *c) {
  serve_queue *q = &s->queue;
  cJSON *o = cJSON_CreateObject(), *slots = cJSON_CreateArray();
  pthread_mutex_lock(&q->mu);
  int deferred = serve_queue_waiting_locked(q), busy = serve_queue_busy_locked(q);
  bool stopping = q->stopping;
  for (int i = 0; i < q->n_slots; i++) {
    const serve_job *j = q->slot_job[i];
    cJSON *slot = cJSON_CreateObject();
    cJSON_AddNumberToObject(slot, "id", i);
    cJSON_AddStringToObject(slot, "state", j ? "processing" : "idle");
    cJSON_AddNumberToObject(slot, "n_ctx", s->be->n_ctx);
    if (j) {
      cJSON_AddNumberToObject(slot, "n_prompt_tokens", j->n_prompt);
      cJSON_AddNumberToObject(slot, "n_cached_tokens", j->n_cached);
      cJSON_AddNumberToObject(slot, "n_text_bytes", (double)j->out.text.n);
    }
    cJSON_AddItemToArray(slots, slot);
  }
  pthread_mutex_unlock(&q->mu);
  cJSON_AddStringToObject(o, "status", stopping ? "stopping" : "ok");
  cJSON_AddNumberToObject(o, "slots_idle", q->n_slots - busy);
  cJSON_AddNumberToObject(o, "slots_processing", busy);
  cJSON_AddNumberToObject(o, "requests_deferred", deferred);
  cJSON_AddItemToObject(o, "slots", slots);
  return serve_send_json(c, stopping ? 503 : MHD_HTTP_OK, print_free(o));
}

enum MHD_Result serve_handle_metrics(serve_server *s, struct MHD_Connection *c) {
  serve_queue *q = &s->queue;
  pthread_mutex_lock(&q->mu);
  char *text = serve_metrics_text(&q->metrics, q->n_slots, serve_queue_busy_locked(q), serve_queue_waiting_locked(q), s->be->n_ctx);
  pthread_mutex_unlock(&q->mu);
  struct MHD_Response *r = MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
  serve_add_common_headers(r, "text/plain; version=0.0.4");
  enum MHD_Result ok = MHD_queue_response(c, MHD_HTTP_OK, r);
  MHD_destroy_response(r);
  return ok;
}

/* ---- tokenizer and template */

enum MHD_Result serve_handle_tokenize(serve_server *s, struct MHD_Connection *c, const char *body, size_t len) {
  static const char *const fields[] = { "content", "add_special", "parse_special", "with_pieces", NULL, "model", NULL };
  enum MHD_Result sent = MHD_NO;
  cJSON *o = body_object(c, body, len, fields, "a tokenize request", &sent);
  if (!o) return sent;
  const cJSON *content = cJSON_GetObjectItemCaseSensitive(o, "content");
  bool ok = true;
  bool add_special = get_flag(o, "add_special", false, &ok), parse_special = get_flag(o, "parse_special", true, &ok);
  bool pieces = get_flag(o, "with_pieces", false, &ok);
  if (!cJSON_IsString(content) || !ok) {
    cJSON_Delete(o);
    return send_error(c, 400, "invalid_value", cJSON_IsString(content) ? NULL : "content",
                      "a tokenize request is {\"content\": string, \"add_special\": bool, \"parse_special\": bool, \"with_pieces\": bool}");
  }
  int *toks = NULL;
  int n = s->be->tokenize_text(s->be->ctx, content->valuestring, add_special, parse_special, &toks);
  cJSON_Delete(o);
  if (n < 0) { free(toks); return send_error(c, 400, "invalid_value", "content", tg_error()); }
  cJSON *r = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(r, "tokens");
  for (int i = 0; i < n; i++) {
    if (!pieces || !s->be->detokenize) { cJSON_AddItemToArray(arr, cJSON_CreateNumber(toks[i])); continue; }
    cJSON *t = cJSON_CreateObject();
    cJSON_AddNumberToObject(t, "id", toks[i]);
    char *piece = s->be->detokenize(s->be->ctx, &toks[i], 1);
    cJSON_AddStringToObject(t, "piece", piece ? piece : "");
    free(piece);
    cJSON_AddItemToArray(arr, t);
  }
  free(toks);
  return serve_send_json(c, MHD_HTTP_OK, print_free(r));
}

enum MHD_Result serve_handle_detokenize(serve_server *s, struct MHD_Connection *c, const char *body, size_t len) {
  static const char *const fields[] = { "tokens", NULL, "model", NULL };
  if (!s->be->detokenize) return send_error(c, 501, "not_implemented", NULL, "this backend cannot detokenize");
  enum MHD_Result sent = MHD_NO;
  cJSON *o = body_object(c, body, len, fields, "a detokenize request", &sent);
  if (!o) return sent;
  int *toks = NULL;
  int n = token_array(cJSON_GetObjectItemCaseSensitive(o, "tokens"), &toks);
  cJSON_Delete(o);
  if (n < 0) return send_error(c, 400, "invalid_value", "tokens", "'tokens' must be an array of token ids");
  char *text = s->be->detokenize(s->be->ctx, toks, n);
  free(toks);
  if (!text) return send_error(c, 400, "invalid_value", "tokens", tg_error());
  cJSON *r = cJSON_CreateObject();
  cJSON_AddStringToObject(r, "content", text);
  free(text);
  return serve_send_json(c, MHD_HTTP_OK, print_free(r));
}

/* The prompt a chat request would run (llama-server's /apply-template):
 * the same body as /v1/chat/completions. */
enum MHD_Result serve_handle_apply_template(serve_server *s, struct MHD_Connection *c, const char *body, size_t len) {
  serve_request req;
  serve_error err;
  if (serve_request_parse(&req, true, body, len, &err)) return serve_send_error(c, &err);
  serve_chat_syntax syn;
  char *prefill = NULL;
  char *prompt = serve_chat_prompt(s->be, s->queue.tool_format, &req, &syn, &prefill);
  serve_request_free(&req);
  free(prefill);
  if (!prompt) return send_error(c, 400, "invalid_prompt", "messages", tg_error());
  cJSON *r = cJSON_CreateObject();
  cJSON_AddStringToObject(r, "prompt", prompt);
  free(prompt);
  return serve_send_json(c, MHD_HTTP_OK, print_free(r));
}

/* ---- embeddings */

static void base64(strbuf *b, const unsigned char *p, size_t n) {
  static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  for (size_t i = 0; i < n; i += 3) {
    unsigned v = (unsigned)p[i] << 16 | (i + 1 < n ? (unsigned)p[i + 1] << 8 : 0) | (i + 2 < n ? p[i + 2] : 0);
    char out[4] = { tab[v >> 18 & 63], tab[v >> 12 & 63], i + 1 < n ? tab[v >> 6 & 63] : '=', i + 2 < n ? tab[v & 63] : '=' };
    sb_append(b, out, 4);
  }
}

/* input: a string, an array of strings, an array of token ids, or an array
 * of arrays of ids; each becomes one token list. -1 after filling e. */
static int embed_inputs(serve_server *s, const cJSON *in, int ***toks, int **ns, serve_error *e) {
  const char *what = "must be a string, an array of strings, an array of token ids or an array of such arrays";
  bool one = cJSON_IsString(in) || (cJSON_IsArray(in) && cJSON_IsNumber(cJSON_GetArrayItem(in, 0)));
  int n = one ? 1 : cJSON_IsArray(in) ? cJSON_GetArraySize(in) : 0;
  if (!in) return serve_error_set(e, 400, "missing_field", "input", "'input' is required");
  if (n == 0) return serve_error_set(e, 400, "invalid_value", "input", "'input' %s, and not empty", what);
  if (n > MAX_EMBED_INPUTS) return serve_error_set(e, 400, "invalid_value", "input", "'input' holds more than %d inputs", MAX_EMBED_INPUTS);
  *toks = tg_xcalloc((size_t)n, sizeof **toks);
  *ns = tg_xcalloc((size_t)n, sizeof **ns);
  for (int i = 0; i < n; i++) {
    const cJSON *x = one ? in : cJSON_GetArrayItem(in, i);
    int k = cJSON_IsString(x) ? s->be->tokenize_text(s->be->ctx, x->valuestring, true, true, &(*toks)[i])
                              : token_array(x, &(*toks)[i]);
    char param[32];
    snprintf(param, sizeof param, one ? "input" : "input[%d]", i);
    if (k < 0 && cJSON_IsString(x)) serve_error_set(e, 400, "invalid_value", param, "cannot tokenize '%s': %s", param, tg_error());
    else if (k < 0) serve_error_set(e, 400, "invalid_value", param, "'%s' %s", param, what);
    else if (k == 0) serve_error_set(e, 400, "invalid_value", param, "'%s' is empty", param);
    else if (k > s->be->n_ctx)
      serve_error_set(e, 400, "context_length_exceeded", param, "'%s' is %d tokens, more than the model's context of %d", param, k, s->be->n_ctx);
    else { (*ns)[i] = k; continue; }
    for (int j = 0; j <= i; j++) free((*toks)[j]);
    free(*toks);
    free(*ns);
    return -1;
  }
  return n;
}

enum MHD_Result serve_handle_embeddings(serve_server *s, struct MHD_Connection *c, const char *body, size_t len) {
  static const char *const fields[] = { "input", "model", "encoding_format", "dimensions", NULL, "user", NULL };
  if (!s->be->embed || s->be->n_embd <= 0) return send_error(c, 501, "not_implemented", NULL, "this model gives no embeddings");
  enum MHD_Result sent = MHD_NO;
  cJSON *o = body_object(c, body, len, fields, "an embeddings request", &sent);
  if (!o) return sent;
  serve_error err;
  const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(o, "encoding_format"), *dims = cJSON_GetObjectItemCaseSensitive(o, "dimensions");
  bool b64 = cJSON_IsString(fmt) && !strcmp(fmt->valuestring, "base64");
  int **toks = NULL, *ns = NULL, n = -1;
  if (fmt && !cJSON_IsNull(fmt) && !(cJSON_IsString(fmt) && (b64 || !strcmp(fmt->valuestring, "float"))))
    serve_error_set(&err, 400, "invalid_value", "encoding_format", "'encoding_format' must be \"float\" or \"base64\"");
  else if (dims && !cJSON_IsNull(dims) && !(cJSON_IsNumber(dims) && dims->valuedouble == s->be->n_embd))
    serve_error_set(&err, 400, "invalid_value", "dimensions", "'dimensions' must be the model's %d (no truncation)", s->be->n_embd);
  else n = embed_inputs(s, cJSON_GetObjectItemCaseSensitive(o, "input"), &toks, &ns, &err);
  cJSON_Delete(o);
  if (n < 0) return serve_send_error(c, &err);

  serve_queue *q = &s->queue;
  serve_job *j = serve_job_submit_embed(q, toks, ns, n);
  pthread_mutex_lock(&q->mu);
  if (!serve_wait_done(s, c, j)) {
    pthread_mutex_unlock(&q->mu);
    serve_job_release(q, j);
    return MHD_NO;
  }
  if (j->failed) {
    err = j->err;
    pthread_mutex_unlock(&q->mu);
    serve_job_release(q, j);
    return serve_send_error(c, &err);
  }
  pthread_mutex_unlock(&q->mu);   /* a done job no longer changes */
  cJSON *r = cJSON_CreateObject(), *data = cJSON_AddArrayToObject(r, "data");
  cJSON_AddStringToObject(r, "object", "list");
  int d = s->be->n_embd, total = 0;
  for (int i = 0; i < n; i++) {
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "object", "embedding");
    cJSON_AddNumberToObject(e, "index", i);
    const float *v = j->embeddings + (size_t)i * (size_t)d;
    if (b64) {
      strbuf b = { 0 };
      base64(&b, (const unsigned char *)v, (size_t)d * sizeof(float));   /* float32, little-endian as the host (x86, ARM) */
      cJSON_AddStringToObject(e, "embedding", b.s);
      sb_free(&b);
    } else {
      cJSON *arr = cJSON_AddArrayToObject(e, "embedding");
      for (int k = 0; k < d; k++) cJSON_AddItemToArray(arr, cJSON_CreateNumber(v[k]));
    }
    cJSON_AddItemToArray(data, e);
    total += j->emb_n[i];
  }
  serve_job_release(q, j);
  cJSON_AddStringToObject(r, "model", s->be->model_id);
  cJSON *u = cJSON_AddObjectToObject(r, "usage");
  cJSON_AddNumberToObject(u, "prompt_tokens", total);
  cJSON_AddNumberToObject(u, "total_tokens", total);
  return serve_send_json(c, MHD_HTTP_OK, print_free(r));
}
