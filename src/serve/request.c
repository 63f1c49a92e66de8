/* request.c: parsing and validating OpenAI request bodies (see request.h).
 * The JSON is strict (nothing after the value, no NUL, no key twice).
 * Fields: those tg reads, those of OpenAI's API that tg does not use
 * (ignored, since OpenAI clients send them), and nothing else: an unknown
 * field is a 400 naming it, so a misspelt "temprature" is not silently
 * dropped. The tables below are the whole policy. */
#include "serve/request.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "util/util.h"

#define MAX_STOP 16

/* The fields of a request body, per endpoint: first those tg reads, then
 * (after NULL) OpenAI's that it accepts and ignores (platform.openai.com/
 * docs/api-reference: chat/create, completions/create). */
static const char *const chat_fields[] = {
  "messages", "model", "response_format", "grammar", "max_tokens", "max_completion_tokens", "temperature", "top_p", "top_k", "min_p", "seed", "n",
  "stop", "stream", "stream_options",
  "tools", "tool_choice", "parallel_tool_calls", "reasoning_format", "chat_template_kwargs", "add_generation_prompt",
  "continue_final_message", NULL,
  "audio", "frequency_penalty", "function_call", "functions", "logit_bias", "logprobs", "metadata", "modalities",
  "prediction", "presence_penalty", "prompt_cache_key", "reasoning_effort",
  "safety_identifier", "service_tier", "store", "top_logprobs", "user", "verbosity",
  "web_search_options", NULL,
};
static const char *const text_fields[] = {
  "prompt", "model", "response_format", "grammar", "max_tokens", "max_completion_tokens", "temperature", "top_p", "top_k", "min_p", "seed", "n",
  "stop", "stream", "stream_options", NULL,
  "best_of", "echo", "frequency_penalty", "logit_bias", "logprobs", "presence_penalty", "suffix", "user", NULL,
};
/* a message's fields (tool_calls, tool_call_id, name: passed to templates) */
static const char *const message_fields[] = {
  "role", "content", "name", "tool_calls", "tool_call_id", NULL, "refusal", "audio", "function_call", NULL,
};
static const char *const stream_option_fields[] = { "include_usage", NULL, "include_obfuscation", NULL };

/* Whether name is in fields (both NULL-ended halves of a list above). */
static bool known_field(const char *const *fields, const char *name) {
  for (int nulls = 0; nulls < 2; fields++)
    if (!*fields) nulls++;
    else if (!strcmp(*fields, name)) return true;
  return false;
}

/* The first member of object o that is not in fields, or NULL. */
static const char *unknown_field(const cJSON *o, const char *const *fields) {
  for (const cJSON *c = o->child; c; c = c->next)
    if (!known_field(fields, c->string ? c->string : "")) return c->string ? c->string : "";
  return NULL;
}

static int unknown(serve_error *e, const char *where, const char *name, const char *what) {
  char param[200];
  snprintf(param, sizeof param, "%s%s%.60s", where, *where ? "." : "", name);
  return serve_error_set(e, 400, "unknown_parameter", param, "unknown field '%s' in %s (docs/serve.md lists the fields)", param, what);
}

static int bad(serve_error *e, const char *param, const char *what) {
  return serve_error_set(e, 400, "invalid_value", param, "'%s' %s", param, what);
}

/* An optional field: NULL when absent or null. */
static const cJSON *field(const cJSON *o, const char *name) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
  return v && !cJSON_IsNull(v) ? v : NULL;
}

static bool is_int(const cJSON *v) {
  return cJSON_IsNumber(v) && v->valuedouble == floor(v->valuedouble) && fabs(v->valuedouble) < 9007199254740992.0;
}

/* Reads an optional number into *out; lo/hi bound it (inclusive). */
static int get_number(const cJSON *o, const char *name, double lo, double hi, bool integer, double *out,
                      serve_error *e) {
  const cJSON *v = field(o, name);
  if (!v) return 0;
  if (integer ? !is_int(v) : !cJSON_IsNumber(v)) return bad(e, name, integer ? "must be an integer" : "must be a number");
  if (v->valuedouble < lo || v->valuedouble > hi) {
    char what[96];
    if (hi == INFINITY) snprintf(what, sizeof what, "must be at least %g", lo);
    else snprintf(what, sizeof what, "must be between %g and %g", lo, hi);
    return bad(e, name, what);
  }
  *out = v->valuedouble;
  return 0;
}

static int get_bool(const cJSON *o, const char *name, bool *out, serve_error *e) {
  const cJSON *v = field(o, name);
  if (!v) return 0;
  if (!cJSON_IsBool(v)) return bad(e, name, "must be true or false");
  *out = cJSON_IsTrue(v);
  return 0;
}

static int parse_sampling(serve_request *r, const cJSON *o, serve_error *e) {
  double temp = 1, top_p = 1, min_p = 0, top_k = 0, max_tokens = -1, seed = 0;
  if (get_number(o, "temperature", 0, 2, false, &temp, e) || get_number(o, "top_p", 0, 1, false, &top_p, e) ||
      get_number(o, "min_p", 0, 1, false, &min_p, e) || get_number(o, "top_k", 0, INFINITY, true, &top_k, e) ||
      get_number(o, "max_tokens", 1, INFINITY, true, &max_tokens, e) ||
      get_number(o, "max_completion_tokens", 1, INFINITY, true, &max_tokens, e) ||   /* the newer name wins */
      get_number(o, "seed", -INFINITY, INFINITY, true, &seed, e))
    return -1;
  const cJSON *n = field(o, "n");
  if (n && !(is_int(n) && n->valuedouble == 1)) return bad(e, "n", "must be 1: one choice per request");
  r->sampling = (serve_sampling){ .temperature = (float)temp, .top_p = (float)top_p, .min_p = (float)min_p,
                                  .top_k = (int)fmin(top_k, 1 << 30), .seed = (uint64_t)(int64_t)seed,
                                  .has_seed = field(o, "seed") != NULL };
  r->max_tokens = (int)fmin(max_tokens, 1 << 30);   /* the server holds it to the context */
  r->max_tokens_param = field(o, "max_completion_tokens") ? "max_completion_tokens" : "max_tokens";
  return 0;
}

static int parse_stream(serve_request *r, const cJSON *o, serve_error *e) {
  if (get_bool(o, "stream", &r->stream, e)) return -1;
  const cJSON *so = field(o, "stream_options");
  if (!so) return 0;
  if (!cJSON_IsObject(so)) return bad(e, "stream_options", "must be an object");
  const char *u = unknown_field(so, stream_option_fields);
  if (u) return unknown(e, "stream_options", u, "stream_options");
  if (get_bool(so, "include_usage", &r->include_usage, e)) {
    snprintf(e->param, sizeof e->param, "stream_options.include_usage");
    return -1;
  }
  return 0;
}

static int parse_stop(serve_request *r, const cJSON *o, serve_error *e) {
  const cJSON *v = field(o, "stop");
  if (!v) return 0;
  if (cJSON_IsString(v)) {
    if (!*v->valuestring) return 0;
    r->stop = tg_xmalloc(sizeof(char *));
    r->stop[r->n_stop++] = tg_xstrdup(v->valuestring);
    return 0;
  }
  if (!cJSON_IsArray(v)) return bad(e, "stop", "must be a string or an array of strings");
  if (cJSON_GetArraySize(v) > MAX_STOP) return bad(e, "stop", "may hold at most 16 strings");
  r->stop = tg_xcalloc((size_t)cJSON_GetArraySize(v) + 1, sizeof(char *));
  const cJSON *s;
  cJSON_ArrayForEach(s, v) {
    if (!cJSON_IsString(s)) return bad(e, "stop", "must be a string or an array of strings");
    if (*s->valuestring) r->stop[r->n_stop++] = tg_xstrdup(s->valuestring);
  }
  return 0;
}

/* A message's content as one string: a string, null (""), or an array of
 * {"type": "text", "text": ...} parts joined together. */
static int flatten_content(const cJSON *c, int i, strbuf *out, serve_error *e) {
  char param[96];
  snprintf(param, sizeof param, "messages[%d].content", i);
  if (!c || cJSON_IsNull(c)) return 0;
  if (cJSON_IsString(c)) { sb_puts(out, c->valuestring); return 0; }
  if (!cJSON_IsArray(c)) return bad(e, param, "must be a string or an array of content parts");
  const cJSON *part;
  cJSON_ArrayForEach(part, c) {
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(part, "type");
    const cJSON *text = cJSON_GetObjectItemCaseSensitive(part, "text");
    if (!cJSON_IsString(type) || strcmp(type->valuestring, "text") != 0 || !cJSON_IsString(text))
      return serve_error_set(e, 400, "invalid_value", param, "'%s': only text parts ({\"type\": \"text\", \"text\": ...}) are supported", param);
    sb_puts(out, text->valuestring);
  }
  return 0;
}

static int parse_messages(serve_request *r, const cJSON *o, serve_error *e) {
  static const char *roles[] = { "system", "developer", "user", "assistant", "tool" };
  const cJSON *msgs = cJSON_GetObjectItemCaseSensitive(o, "messages");
  if (!msgs) return serve_error_set(e, 400, "missing_field", "messages", "'messages' is required");
  if (!cJSON_IsArray(msgs) || cJSON_GetArraySize(msgs) == 0) return bad(e, "messages", "must be a non-empty array");
  r->messages = cJSON_CreateArray();
  const cJSON *m;
  const char *last_role = NULL;
  int i = 0;
  cJSON_ArrayForEach(m, msgs) {
    char param[96];
    snprintf(param, sizeof param, "messages[%d]", i);
    if (!cJSON_IsObject(m)) return bad(e, param, "must be an object");
    const char *u = unknown_field(m, message_fields);
    if (u) return unknown(e, param, u, "a message");
    const cJSON *role = cJSON_GetObjectItemCaseSensitive(m, "role");
    snprintf(param, sizeof param, "messages[%d].role", i);
    if (!cJSON_IsString(role)) return serve_error_set(e, 400, "missing_field", param, "'%s' is required", param);
    size_t k = 0;
    while (k < sizeof roles / sizeof *roles && strcmp(roles[k], role->valuestring) != 0) k++;
    if (k == sizeof roles / sizeof *roles)
      return bad(e, param, "must be one of system, developer, user, assistant, tool");
    /* content may be null only for an assistant turn (one that called tools) */
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(m, "content");
    if (!c && strcmp(role->valuestring, "assistant") != 0) {
      snprintf(param, sizeof param, "messages[%d].content", i);
      return serve_error_set(e, 400, "missing_field", param, "'%s' is required", param);
    }
    strbuf content = { 0 };
    sb_puts(&content, "");
    if (flatten_content(cJSON_GetObjectItemCaseSensitive(m, "content"), i, &content, e)) { sb_free(&content); return -1; }
    cJSON *flat = cJSON_CreateObject();
    cJSON_AddStringToObject(flat, "role", roles[k]);
    cJSON_AddStringToObject(flat, "content", content.s);
    cJSON_AddItemToArray(r->messages, flat);
    sb_free(&content);
    if (serve_message_tool_fields(m, i, flat, e)) return -1;
    last_role = roles[k];
    i++;
  }
  r->continue_final = strcmp(last_role, "assistant") == 0;
  return 0;
}

/* A prompt string, an array holding one string, or an array of token ids. */
static int parse_prompt(serve_request *r, const cJSON *o, serve_error *e) {
  const cJSON *p = cJSON_GetObjectItemCaseSensitive(o, "prompt");
  if (!p) return serve_error_set(e, 400, "missing_field", "prompt", "'prompt' is required");
  if (cJSON_IsArray(p) && cJSON_GetArraySize(p) == 1 && cJSON_IsString(cJSON_GetArrayItem(p, 0))) p = cJSON_GetArrayItem(p, 0);
  if (cJSON_IsString(p)) { r->prompt = tg_xstrdup(p->valuestring); return 0; }
  const char *what = "must be a string or an array of token ids";
  if (!cJSON_IsArray(p) || cJSON_GetArraySize(p) == 0) return bad(e, "prompt", what);
  r->prompt_tokens = tg_xmalloc((size_t)cJSON_GetArraySize(p) * sizeof(int));
  const cJSON *t;
  cJSON_ArrayForEach(t, p) {
    if (!is_int(t) || t->valuedouble < 0 || t->valuedouble > 2147483647.0) return bad(e, "prompt", what);
    r->prompt_tokens[r->n_prompt_tokens++] = (int)t->valuedouble;
  }
  return 0;
}

static int cmp_names(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Whether some object in v (at any depth) has a key twice; its name goes to
 * out. Sorting the names keeps a body of many keys O(n log n). */
static bool find_duplicate_key(const cJSON *v, char *out, size_t cap) {
  if (!cJSON_IsObject(v) && !cJSON_IsArray(v)) return false;
  if (cJSON_IsObject(v)) {
    size_t n = 0, k = 0;
    for (const cJSON *c = v->child; c; c = c->next) n++;
    if (n > 1) {
      const char **names = tg_xmalloc(n * sizeof *names);
      for (const cJSON *c = v->child; c; c = c->next) names[k++] = c->string ? c->string : "";
      qsort(names, n, sizeof *names, cmp_names);
      bool dup = false;
      for (size_t i = 1; i < n && !dup; i++)
        if (!strcmp(names[i - 1], names[i])) { dup = true; snprintf(out, cap, "%s", names[i]); }
      free(names);
      if (dup) return true;
    }
  }
  for (const cJSON *c = v->child; c; c = c->next)
    if (find_duplicate_key(c, out, cap)) return true;
  return false;
}

cJSON *serve_json_parse_strict(const char *body, size_t len, serve_error *e) {
  /* strict JSON: one value, nothing after it but white space, no NUL byte
   * (cJSON would stop at it), no key twice in an object */
  const char *nul = len ? memchr(body, 0, len) : NULL;
  if (nul) {
    serve_error_set(e, 400, "invalid_json", NULL, "the request body holds a NUL byte (at byte %zu)", (size_t)(nul - body));
    return NULL;
  }
  const char *end = NULL;
  cJSON *root = cJSON_ParseWithLengthOpts(body, len, &end, false);
  if (!root) {
    serve_error_set(e, 400, "invalid_json", NULL, "the request body is not valid JSON");
    return NULL;
  }
  while (end < body + len && (*end == ' ' || *end == '\t' || *end == '\n' || *end == '\r')) end++;
  char dup[160];
  if (end < body + len)
    serve_error_set(e, 400, "invalid_json", NULL, "the request body has bytes after its JSON value (from byte %zu)", (size_t)(end - body));
  else if (find_duplicate_key(root, dup, sizeof dup))
    serve_error_set(e, 400, "invalid_json", NULL, "the request body has the key '%s' twice in one object", dup);
  else if (!cJSON_IsObject(root)) serve_error_set(e, 400, "invalid_json", NULL, "the request body must be a JSON object");
  else return root;
  cJSON_Delete(root);
  return NULL;
}

const char *serve_json_unknown_field(const cJSON *o, const char *const *fields) { return unknown_field(o, fields); }

int serve_request_parse(serve_request *r, bool chat, const char *body, size_t len, serve_error *e) {
  memset(r, 0, sizeof *r);
  r->chat = chat;
  cJSON *root = serve_json_parse_strict(body, len, e);
  if (!root) return -1;
  int rc = -1;
  const char *unknown_name;
  if ((unknown_name = unknown_field(root, chat ? chat_fields : text_fields)))
    unknown(e, "", unknown_name, chat ? "a chat completion request" : "a completion request");
  else if (!parse_sampling(r, root, e) && !parse_stream(r, root, e) && !parse_stop(r, root, e) &&
           !serve_request_parse_grammar(r, root, e))
    rc = !chat ? parse_prompt(r, root, e) : (parse_messages(r, root, e) || serve_request_parse_tools(r, root, e)) ? -1 : 0;
  cJSON_Delete(root);
  if (rc) serve_request_free(r);
  return rc;
}

void serve_request_free(serve_request *r) {
  cJSON_Delete(r->messages);
  free(r->prompt);
  free(r->prompt_tokens);
  for (int i = 0; i < r->n_stop; i++) free(r->stop[i]);
  free(r->stop);
  free(r->grammar);
  cJSON_Delete(r->tools);
  free(r->tool_name);
  cJSON_Delete(r->template_kwargs);
  memset(r, 0, sizeof *r);
}
