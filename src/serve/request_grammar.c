/* request_grammar.c: a request's structured-output fields, as one GBNF
 * text for the backend's sampler (serve_sampling.grammar):
 *   "grammar": GBNF, as llama-server takes it;
 *   "response_format": OpenAI's {"type": "text"} (no constraint),
 *     {"type": "json_object"} (any JSON object; llama-server's "schema"
 *     member narrows it), {"type": "json_schema", "json_schema": {"name",
 *     "description", "schema", "strict"}}.
 * The grammar is compiled here once, so a bad grammar or an unsupported
 * schema is a 400 that names the field and says what and where. */
#include <string.h>
#include "serve/request.h"
#include "tg.h"
#include "util/util.h"

static int bad(serve_error *e, const char *param, const char *msg) {
  return serve_error_set(e, 400, "invalid_value", param, "'%s' %s", param, msg);
}

/* The first member of o that is not in the NULL-ended names, or NULL. */
static const char *stray(const cJSON *o, const char *const *names) {
  for (const cJSON *c = o->child; c; c = c->next) {
    const char *const *n = names;
    while (*n && strcmp(*n, c->string ? c->string : "")) n++;
    if (!*n) return c->string ? c->string : "";
  }
  return NULL;
}

static int unknown(serve_error *e, const char *where, const char *name) {
  char param[160];
  snprintf(param, sizeof param, "%s.%.100s", where, name);
  return serve_error_set(e, 400, "unknown_parameter", param, "unknown field '%s' (docs/serve.md lists the fields)", param);
}

/* The GBNF of schema s (from field param), or NULL with *e filled. */
static char *schema_gbnf(const cJSON *s, const char *param, serve_error *e) {
  if (!cJSON_IsObject(s) && !cJSON_IsBool(s)) { bad(e, param, "must be a JSON schema (an object)"); return NULL; }
  char *text = cJSON_PrintUnformatted(s);
  char *gbnf = text ? tg_json_schema_to_gbnf(text, strlen(text)) : NULL;
  if (!gbnf) serve_error_set(e, 400, "invalid_value", param, "'%s': %s", param, text ? tg_error() : "cannot be printed");
  free(text);
  return gbnf;
}

static char *response_format_gbnf(const cJSON *rf, serve_error *e, bool *none) {
  static const char *const fields[] = { "type", "json_schema", "schema", NULL };
  static const char *const schema_fields[] = { "name", "description", "schema", "strict", NULL };
  *none = false;
  if (!cJSON_IsObject(rf)) { bad(e, "response_format", "must be an object"); return NULL; }
  const char *u = stray(rf, fields);
  if (u) { unknown(e, "response_format", u); return NULL; }
  const cJSON *type = cJSON_GetObjectItemCaseSensitive(rf, "type");
  if (!cJSON_IsString(type)) { bad(e, "response_format.type", "must be \"text\", \"json_object\" or \"json_schema\""); return NULL; }
  const cJSON *schema = cJSON_GetObjectItemCaseSensitive(rf, "schema");
  if (!strcmp(type->valuestring, "text")) { *none = true; return NULL; }
  if (!strcmp(type->valuestring, "json_object")) {
    if (schema) return schema_gbnf(schema, "response_format.schema", e);
    return tg_json_schema_to_gbnf("{\"type\": \"object\"}", 18);
  }
  if (strcmp(type->valuestring, "json_schema") != 0) {
    bad(e, "response_format.type", "must be \"text\", \"json_object\" or \"json_schema\"");
    return NULL;
  }
  const cJSON *js = cJSON_GetObjectItemCaseSensitive(rf, "json_schema");
  if (!js && schema) return schema_gbnf(schema, "response_format.schema", e);
  if (!cJSON_IsObject(js)) { bad(e, "response_format.json_schema", "must be an object holding \"schema\""); return NULL; }
  u = stray(js, schema_fields);
  if (u) { unknown(e, "response_format.json_schema", u); return NULL; }
  schema = cJSON_GetObjectItemCaseSensitive(js, "schema");
  if (!schema) {
    serve_error_set(e, 400, "missing_field", "response_format.json_schema.schema", "'response_format.json_schema.schema' is required");
    return NULL;
  }
  return schema_gbnf(schema, "response_format.json_schema.schema", e);
}

int serve_request_parse_grammar(serve_request *r, const cJSON *o, serve_error *e) {
  const cJSON *gr = cJSON_GetObjectItemCaseSensitive(o, "grammar");
  const cJSON *rf = cJSON_GetObjectItemCaseSensitive(o, "response_format");
  if (gr && cJSON_IsNull(gr)) gr = NULL;
  if (rf && cJSON_IsNull(rf)) rf = NULL;
  char *gbnf = NULL;
  const char *param = "grammar";
  if (gr) {
    if (!cJSON_IsString(gr)) return bad(e, "grammar", "must be a string (GBNF)");
    if (!*gr->valuestring) gr = NULL;
  }
  if (rf) {
    bool none;
    gbnf = response_format_gbnf(rf, e, &none);
    if (!gbnf && !none) return -1;
    if (gbnf && gr) {
      free(gbnf);
      return serve_error_set(e, 400, "invalid_value", "grammar", "give either 'grammar' or a JSON 'response_format', not both");
    }
    param = "response_format";
  }
  if (gr) gbnf = tg_xstrdup(gr->valuestring);
  if (!gbnf) return 0;
  tg_grammar *g = tg_grammar_new(gbnf, strlen(gbnf));
  if (!g) {
    free(gbnf);
    return serve_error_set(e, 400, "invalid_value", param, "'%s': %s", param, tg_error());
  }
  tg_grammar_free(g);
  r->grammar = gbnf;
  r->sampling.grammar = r->grammar;
  return 0;
}
