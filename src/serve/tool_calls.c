/* tool_calls.c: finding tool calls in a model's reply, in the formats
 * models are trained to write (see chat_msg.h; the formats and their
 * detection follow llama.cpp's common/chat.cpp). The text is scanned for
 * the format's openers; each opener starts a region that is either a
 * well-formed call (it goes to calls) or not (its text stays content:
 * malformed output is never an error); while a region is undecided, the
 * calls in it so far come from tool_calls_open.c. */
#include "serve/tool_calls_scan.h"
#include "tg.h"

/* ---- calls */

void serve_chat_msg_add_call(serve_chat_msg *m, char *id, char *name, char *arguments) {
  if (m->n_calls == m->cap_calls) {
    m->cap_calls = m->cap_calls ? 2 * m->cap_calls : 4;
    m->calls = tg_xrealloc(m->calls, (size_t)m->cap_calls * sizeof *m->calls);
  }
  m->calls[m->n_calls++] = (serve_tool_call){ id, name, arguments };
}

/* Drops the calls of a region that turned out malformed. */
static void drop_calls(serve_chat_msg *m, int n) { serve_chat_msg_keep_calls(m, n); }

/* The first member of o named a or b. */
static const cJSON *first_of(const cJSON *o, const char *a, const char *b) {
  const cJSON *c;
  cJSON_ArrayForEach(c, o)
    if (c->string && (!strcmp(c->string, a) || !strcmp(c->string, b))) return c;
  return NULL;
}

/* {"name": .., "arguments"|"parameters": {..} or "..."} (optionally
 * "type": "function", an "id", or the OpenAI shape {"function": {..}}).
 * need_args: an object without arguments is not a call (a bare object in
 * the text may be any JSON). Where an object has both, the first of
 * "arguments" and "parameters" counts, and "function" only before any
 * "name": a stream then reads the call as it is written. */
bool serve_tc_add_json_call(serve_chat_msg *out, const cJSON *o, bool need_args) {
  if (!cJSON_IsObject(o)) return false;
  const cJSON *fn = first_of(o, "function", "name");
  const cJSON *src = cJSON_IsObject(fn) && !strcmp(fn->string, "function") ? fn : o;
  const cJSON *name = cJSON_GetObjectItemCaseSensitive(src, "name");
  if (!cJSON_IsString(name) || !*name->valuestring) return false;
  const cJSON *args = first_of(src, "arguments", "parameters");
  if (!args && need_args) return false;
  char *a;
  if (!args) a = tg_xstrdup("{}");
  else if (cJSON_IsObject(args)) a = print_json(args);
  else if (cJSON_IsString(args)) {   /* already JSON text: it must be an object */
    cJSON *parsed = cJSON_Parse(args->valuestring);
    bool obj = cJSON_IsObject(parsed);
    a = obj ? print_json(parsed) : NULL;
    cJSON_Delete(parsed);
    if (!obj) return false;
  } else return false;
  const cJSON *id = cJSON_GetObjectItemCaseSensitive(o, "id");
  serve_chat_msg_add_call(out, cJSON_IsString(id) && *id->valuestring ? tg_xstrdup(id->valuestring) : NULL,
                          tg_xstrdup(name->valuestring), a);
  return true;
}

/* A call object or an array of them filling [p, end). */
static bool json_calls(const char *p, const char *end, serve_chat_msg *out) {
  cJSON *v = json_whole(p, end);
  if (!v) return false;
  int n0 = out->n_calls;
  bool ok = true;
  if (cJSON_IsArray(v)) {
    const cJSON *c;
    cJSON_ArrayForEach(c, v) ok = ok && serve_tc_add_json_call(out, c, false);
    ok = ok && cJSON_GetArraySize(v) > 0;
  } else ok = serve_tc_add_json_call(out, v, false);
  cJSON_Delete(v);
  if (!ok) drop_calls(out, n0);
  return ok;
}

/* The JSON Schema type of a tool's parameter ("string", "integer", ...),
 * or NULL when the tools do not say. */
static const char *param_type(const cJSON *tools, const char *fn, const char *param) {
  const cJSON *t;
  cJSON_ArrayForEach(t, tools) {
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(t, "function");
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(f, "name");
    if (!cJSON_IsString(name) || strcmp(name->valuestring, fn) != 0) continue;
    const cJSON *props = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(f, "parameters"), "properties");
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(props, param), "type");
    if (cJSON_IsArray(type)) type = cJSON_GetArrayItem(type, 0);
    return cJSON_IsString(type) ? type->valuestring : NULL;
  }
  return NULL;
}

bool serve_tc_string_param(const cJSON *tools, const char *fn, const char *param) {
  const char *type = param_type(tools, fn, param);
  return type && !strcmp(type, "string");
}

/* A Qwen3-Coder value [v, close) (close: its </parameter>): the value sits
 * on its own lines; it is JSON unless the schema says string (or it does
 * not parse). */
cJSON *serve_tc_xml_value(const cJSON *tools, const char *fn, const char *key, const char *v, const char *close) {
  const char *ve = close;
  if (v < ve && *v == '\n') v++;
  if (ve > v && ve[-1] == '\n') ve--;
  cJSON *val = serve_tc_string_param(tools, fn, key) ? NULL : json_whole(v, ve);
  if (!val) {
    char *s = dup_n(v, (size_t)(ve - v));
    val = cJSON_CreateString(s);
    free(s);
  }
  return val;
}

/* Qwen3-Coder's parameters, <parameter=P>\nvalue\n</parameter> repeated,
 * filling [p, end), into a JSON object: a value is JSON unless the schema
 * says string (or it does not parse). */
static char *xml_params(const cJSON *tools, const char *fn, const char *p, const char *end) {
  cJSON *args = cJSON_CreateObject();
  for (p = skip_ws(p, end); p < end; p = skip_ws(p, end)) {
    if (!starts(p, end, "<parameter=")) goto bad;
    const char *name = p + strlen("<parameter="), *gt = memchr(name, '>', (size_t)(end - name));
    if (!gt || !good_name(name, (size_t)(gt - name))) goto bad;
    const char *close = find(gt + 1, end, "</parameter>");
    if (!close) goto bad;
    char *key = dup_n(name, (size_t)(gt - name));
    if (cJSON_GetObjectItemCaseSensitive(args, key)) { free(key); goto bad; }
    cJSON_AddItemToObject(args, key, serve_tc_xml_value(tools, fn, key, gt + 1, close));
    free(key);
    p = close + strlen("</parameter>");
  }
  char *s = print_json(args);
  cJSON_Delete(args);
  return s;
bad:
  cJSON_Delete(args);
  return NULL;
}

/* A function body: a JSON object of arguments, or XML parameters. */
bool serve_tc_add_function(serve_chat_msg *out, const cJSON *tools, const char *name, size_t name_len, const char *p,
                         const char *end) {
  char *fn = dup_n(name, name_len);
  char *args = NULL;
  const char *q = skip_ws(p, end);
  if (q < end && *q == '{') {
    cJSON *v = json_whole(q, end);
    if (cJSON_IsObject(v)) args = print_json(v);
    cJSON_Delete(v);
  } else args = xml_params(tools, fn, p, end);
  if (!args) { free(fn); return false; }
  serve_chat_msg_add_call(out, NULL, fn, args);
  return true;
}

/* ---- regions: each returns 1 (calls added, *rend past the region), 0
 * (malformed: [opener, *rend) is content) or -1 (undecided: the text may
 * still grow into or out of a call) */

static const opener hermes_openers[] = {
  { "<tool_call>", R_TOOL_CALL, "</tool_call>" },   { "<function=", R_FUNCTION_EQ, "</function>" },
  { "<function name=\"", R_FUNCTION_NAME, "</function>" },
  { "<function_call>", R_WRAPPER, "</function_call>" }, { "<tools>", R_WRAPPER, "</tools>" },
  { "<tool>", R_WRAPPER, "</tool>" },               { "<response>", R_WRAPPER, "</response>" },
  { "<json>", R_WRAPPER, "</json>" },               { "<JSON>", R_WRAPPER, "</JSON>" },
  { "<xml>", R_WRAPPER, "</xml>" },                 { "```json", R_FENCE, "```" },
  { "```xml", R_FENCE, "```" },                     { NULL, 0, NULL },
};
static const opener qwen3_coder_openers[] = {
  { "<tool_call>", R_TOOL_CALL, "</tool_call>" }, { "<function=", R_FUNCTION_EQ, "</function>" }, { NULL, 0, NULL },
};
static const opener llama3_openers[] = { { "<|python_tag|>", R_PYTHON_TAG, NULL }, { NULL, 0, NULL } };
static const opener mistral_openers[] = { { "[TOOL_CALLS]", R_MISTRAL, NULL }, { NULL, 0, NULL } };

static const opener *openers_of(serve_tool_format f) {
  switch (f) {
  case SERVE_TOOLS_QWEN3_CODER: return qwen3_coder_openers;
  case SERVE_TOOLS_LLAMA3: return llama3_openers;
  case SERVE_TOOLS_MISTRAL: return mistral_openers;
  default: return hermes_openers;
  }
}

/* The region's inside ends at close; without it the region is undecided
 * until the text is final, and then runs to the end. */
static int inside(const char *p, const char *end, const char *close, bool final, const char **in_end, const char **rend) {
  const char *c = find(p, end, close);
  if (c) { *in_end = c; *rend = c + strlen(close); return 1; }
  if (!final) return -1;
  *in_end = *rend = end;
  return 1;
}

/* <function=NAME>body</function>, then an optional </tool_call> (Qwen3-Coder
 * without its opening tag). */
static int function_eq(const cJSON *tools, const char *p, const char *end, bool final, const char **rend,
                       serve_chat_msg *out) {
  const char *name = p;
  while (p < end && *p != '>' && *p != '<' && *p != '\n') p++;
  if (p == end) { *rend = end; return final ? 0 : -1; }
  if (*p != '>' || !good_name(name, (size_t)(p - name))) { *rend = p; return 0; }
  const char *in_end;
  if (inside(p + 1, end, "</function>", final, &in_end, rend) < 0) return -1;
  if (!serve_tc_add_function(out, tools, name, (size_t)(p - name), p + 1, in_end)) return 0;
  const char *q = skip_ws(*rend, end);
  if (starts(q, end, "</tool_call>")) *rend = q + strlen("</tool_call>");
  else if (!final && prefix_of(q, end, "</tool_call>")) { drop_calls(out, out->n_calls - 1); return -1; }
  return 1;
}

/* <tool_call>: a JSON call (or array), or <function=..> blocks. */
static int tool_call(const cJSON *tools, const char *p, const char *end, bool final, const char **rend,
                     serve_chat_msg *out) {
  const char *in_end;
  if (inside(p, end, "</tool_call>", final, &in_end, rend) < 0) return -1;
  const char *q = skip_ws(p, in_end);
  if (q < in_end && (*q == '{' || *q == '[')) return json_calls(q, in_end, out);
  int n0 = out->n_calls;
  while (q < in_end && starts(q, in_end, "<function=")) {
    const char *fend;
    if (function_eq(tools, q + strlen("<function="), in_end, true, &fend, out) != 1) break;
    q = skip_ws(fend, in_end);
  }
  if (q == in_end && out->n_calls > n0) return 1;
  drop_calls(out, n0);
  return 0;
}

/* <|python_tag|> to the end: a JSON call, NAME.call(k=v, ...), or code
 * for the built-in "python" tool. */
static int python_tag(const char *p, const char *end, bool final, const char **rend, serve_chat_msg *out) {
  if (!final) return -1;
  *rend = end;
  p = skip_ws(p, end);
  end = rskip_ws(p, end);
  if (p < end && *p == '{') return json_calls(p, end, out);
  const char *call = find(p, end, ".call(");
  const char *n = p;
  while (n < end && (*n == '_' || (*n >= 'a' && *n <= 'z') || (*n >= 'A' && *n <= 'Z') || (*n >= '0' && *n <= '9'))) n++;
  if (call && call == n && n > p && end[-1] == ')') {
    cJSON *args = cJSON_CreateObject();
    const char *q = skip_ws(call + strlen(".call("), end - 1);
    bool ok = true;
    while (ok && q < end - 1) {
      const char *k = q;
      while (q < end && *q != '=' && !is_ws(*q)) q++;
      const char *ke = q;
      q = skip_ws(q, end);
      if (q == end || *q != '=' || ke == k) { ok = false; break; }
      const char *ve;
      cJSON *v = json_at(q + 1, end - 1, &ve);
      if (!v) { ok = false; break; }
      char *key = dup_n(k, (size_t)(ke - k));
      cJSON_AddItemToObject(args, key, v);
      free(key);
      q = skip_ws(ve, end - 1);
      if (q < end - 1) { if (*q != ',') ok = false; else q = skip_ws(q + 1, end - 1); }
    }
    if (ok) serve_chat_msg_add_call(out, NULL, dup_n(p, (size_t)(n - p)), print_json(args));
    cJSON_Delete(args);
    return ok;
  }
  if (p == end) return 0;
  cJSON *args = cJSON_CreateObject();
  char *code = dup_n(p, (size_t)(end - p));
  cJSON_AddStringToObject(args, "code", code);
  free(code);
  serve_chat_msg_add_call(out, NULL, tg_xstrdup("python"), print_json(args));
  cJSON_Delete(args);
  return 1;
}

/* [TOOL_CALLS] then a JSON array of calls, or NAME[ARGS]{...}. */
static int mistral(const char *p, const char *end, bool final, const char **rend, serve_chat_msg *out) {
  const char *q = skip_ws(p, end);
  *rend = end;
  if (q == end) return final ? 0 : -1;
  if (*q == '[') {
    const char *je;
    cJSON *v = json_at(q, end, &je);
    if (!v) return final ? 0 : -1;
    cJSON_Delete(v);
    *rend = je;
    return json_calls(q, je, out);
  }
  const char *args = find(q, end, "[ARGS]");
  if (!args) return final ? 0 : -1;
  for (const char *c = q; c < args; c++)
    if (is_ws(*c) || *c == '[' || *c == '{') { *rend = c; return 0; }
  if (!good_name(q, (size_t)(args - q))) { *rend = args; return 0; }
  const char *a = skip_ws(args + strlen("[ARGS]"), end), *je;
  cJSON *v = a < end && *a == '{' ? json_at(a, end, &je) : NULL;
  if (!v) return final || (a < end && *a != '{') ? 0 : -1;
  serve_chat_msg_add_call(out, NULL, dup_n(q, (size_t)(args - q)), print_json(v));
  cJSON_Delete(v);
  *rend = je;
  return 1;
}

static int region(const opener *o, const cJSON *tools, const char *p, const char *end, bool final, const char **rend,
                  serve_chat_msg *out) {
  const char *in_end;
  switch (o->kind) {
  case R_TOOL_CALL: return tool_call(tools, p, end, final, rend, out);
  case R_FUNCTION_EQ: return function_eq(tools, p, end, final, rend, out);
  case R_PYTHON_TAG: return python_tag(p, end, final, rend, out);
  case R_MISTRAL: return mistral(p, end, final, rend, out);
  case R_FUNCTION_NAME: {
    const char *q = memchr(p, '"', (size_t)(end - p));
    if (!q || q + 1 >= end) { *rend = end; return final ? 0 : -1; }
    if (q[1] != '>' || !good_name(p, (size_t)(q - p))) { *rend = q; return 0; }
    if (inside(q + 2, end, o->close, final, &in_end, rend) < 0) return -1;
    return serve_tc_add_function(out, tools, p, (size_t)(q - p), q + 2, in_end);
  }
  case R_WRAPPER:
    if (inside(p, end, o->close, final, &in_end, rend) < 0) return -1;
    return json_calls(p, in_end, out);
  case R_FENCE: {
    if (inside(p, end, o->close, final, &in_end, rend) < 0) return -1;
    const char *q = skip_ws(p, in_end), *e = rskip_ws(q, in_end);
    if (q < e && *q == '<') {   /* a wrapper inside the fence: <response>..</response> */
      const char *gt = memchr(q, '>', (size_t)(e - q)), *lt = e;
      while (lt > q && lt[-1] != '<') lt--;
      if (!gt || lt <= gt + 1 || lt >= e || lt[0] != '/') return 0;
      q = gt + 1;
      e = lt - 1;
    }
    return json_calls(q, e, out);
  }
  }
  return 0;
}

/* A leading bare JSON call (Llama 3.x, and Hermes models that drop the
 * tags). Undecided while the text is a plausible start of one. */
static bool plausible_call_start(const char *p, const char *end) {
  p = skip_ws(p + 1, end);                        /* past '{' */
  if (p == end) return true;
  if (*p != '"') return false;
  p++;
  static const char *const keys[] = { "name\"", "type\"", "function\"" };
  for (int i = 0; i < 3; i++)
    if (prefix_of(p, end, keys[i]) || starts(p, end, keys[i])) return true;
  return false;
}

/* Only a plausible start can be a call, whole or not: cJSON reads more
 * than the literal keys (a NUL inside "name\0", control bytes as white
 * space), and a prefix must decide as the whole does. Text that is not
 * is scanned inside, as its incomplete prefixes were. */
static int bare_json(const char *p, const char *end, bool final, const char **rend, serve_chat_msg *out) {
  *rend = p + 1;
  if (!plausible_call_start(p, end)) return 0;
  const char *je;
  cJSON *v = json_at(p, end, &je);
  if (!v) return final ? 0 : -1;
  *rend = je;
  bool ok = serve_tc_add_json_call(out, v, true);
  cJSON_Delete(v);
  return ok;
}

void serve_tool_calls_parse(serve_tool_format f, const cJSON *tools, const char *text, size_t len, bool final,
                            serve_chat_msg *out) {
  const opener *ops = openers_of(f);
  const char *end = text + len, *seg = text, *p = text;
  if (f == SERVE_TOOLS_HERMES || f == SERVE_TOOLS_LLAMA3) {
    const char *q = skip_ws(p, end);
    if (q < end && *q == '{') {
      const char *rend;
      int r = bare_json(q, end, final, &rend, out);
      if (r < 0) { serve_tc_open_json_call(q, end, false, out); return; }
      p = rend;
      if (r == 1) seg = rend;
    }
  }
  while (p < end) {
    const opener *first = NULL;
    const char *at = NULL;
    for (const opener *o = ops; o->open; o++) {
      const char *h = find(p, end, o->open);
      if (h && (!at || h < at)) { at = h; first = o; }
    }
    if (!first) {
      size_t hold = 0;
      for (const opener *o = ops; !final && o->open; o++) {
        size_t k = partial_suffix(p, end, o->open);
        if (k > hold) hold = k;
      }
      sb_append(&out->content, seg, (size_t)(end - hold - seg));
      return;
    }
    sb_append(&out->content, seg, (size_t)(at - seg));
    const char *rend = end;
    int n0 = out->n_calls;
    int r = region(first, tools, at + strlen(first->open), end, final, &rend, out);
    if (r < 0) {
      drop_calls(out, n0);
      serve_tc_open_region(first, tools, at + strlen(first->open), end, out);
      return;
    }
    if (r == 0) { drop_calls(out, n0); seg = at; }
    else seg = rend;
    p = rend > at ? rend : at + 1;
  }
  sb_append(&out->content, seg, (size_t)(end - seg));
}

/* ---- formats */

serve_tool_format serve_tool_format_detect(const char *src) {
  if (!src) return SERVE_TOOLS_HERMES;
  if (strstr(src, "<tool_call>") && strstr(src, "<function=") && strstr(src, "<parameter=")) return SERVE_TOOLS_QWEN3_CODER;
  if (strstr(src, "<tool_call>")) return SERVE_TOOLS_HERMES;
  if (strstr(src, "<|start_header_id|>ipython<|end_header_id|>") || strstr(src, "<|python_tag|>")) return SERVE_TOOLS_LLAMA3;
  if (strstr(src, "[TOOL_CALLS]")) return SERVE_TOOLS_MISTRAL;
  return SERVE_TOOLS_HERMES;
}

const char *serve_tool_format_name(serve_tool_format f) {
  static const char *const names[] = { "hermes", "qwen3-coder", "llama3", "mistral" };
  return (unsigned)f < 4 ? names[f] : "hermes";
}

char *serve_tool_call_prefix(serve_tool_format f, const char *name) {
  strbuf b = { 0 };
  sb_puts(&b, "");
  char *quoted = NULL;
  if (name) {
    cJSON *s = cJSON_CreateString(name);
    quoted = cJSON_PrintUnformatted(s);
    cJSON_Delete(s);
  }
  switch (f) {
  case SERVE_TOOLS_HERMES:
    sb_puts(&b, "<tool_call>\n{\"name\": ");
    if (quoted) sb_printf(&b, "%s, \"arguments\": ", quoted);
    break;
  case SERVE_TOOLS_QWEN3_CODER:
    sb_puts(&b, "<tool_call>\n<function=");
    if (name) sb_printf(&b, "%s>\n", name);
    break;
  case SERVE_TOOLS_LLAMA3:
    sb_puts(&b, "{\"name\": ");
    if (quoted) sb_printf(&b, "%s, \"parameters\": ", quoted);
    break;
  case SERVE_TOOLS_MISTRAL:
    sb_puts(&b, "[TOOL_CALLS][{\"name\": ");
    if (quoted) sb_printf(&b, "%s, \"arguments\": ", quoted);
    break;
  }
  free(quoted);
  return b.s;
}

char *serve_tool_call_grammar(serve_tool_format f, const cJSON *tools, const char *name) {
  static const char *const closes[] = { [SERVE_TOOLS_HERMES] = "\"}\\n</tool_call>\"", [SERVE_TOOLS_LLAMA3] = "\"}\"",
                                        [SERVE_TOOLS_MISTRAL] = "\"}]\"" };
  if (f == SERVE_TOOLS_QWEN3_CODER || !name) return NULL;   /* XML values: no JSON grammar */
  const cJSON *params = NULL, *t;
  cJSON_ArrayForEach(t, tools) {
    const cJSON *fn = cJSON_GetObjectItemCaseSensitive(t, "function");
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(fn, "name");
    if (cJSON_IsString(n) && !strcmp(n->valuestring, name)) params = cJSON_GetObjectItemCaseSensitive(fn, "parameters");
  }
  char *schema = params ? cJSON_PrintUnformatted(params) : tg_xstrdup("{\"type\": \"object\"}");
  char *g = schema ? tg_json_schema_to_gbnf(schema, strlen(schema)) : NULL;
  free(schema);
  /* its root becomes the arguments' rule; a schema that refers back to its
   * root ("$ref": "#") is left unconstrained */
  if (!g || strncmp(g, "root ::= ", 9) != 0 || strstr(g + 9, "root")) { free(g); return NULL; }
  strbuf b = { 0 };
  sb_printf(&b, "root ::= tool-args %s\ntool-args ::= %s", closes[f], g + 9);
  free(g);
  return b.s;
}
