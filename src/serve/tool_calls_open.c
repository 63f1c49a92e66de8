/* tool_calls_open.c: tool calls still being written (see
 * tool_calls_scan.h), for a parse with final false whose region is undecided:
 * once a call's name is known it is added with the part of its arguments
 * that is decided, a prefix of the arguments the whole call will have
 * (json_prefix.c for JSON, the parameters read so far for XML). A region
 * whose text then breaks the format was sent as a call all the same: what
 * went out was the model's own arguments text, only cut short. */
#include "serve/tool_calls_scan.h"

static const char *skip_json_ws(const char *p, const char *end) {
  while (p < end && (unsigned char)*p <= 0x20) p++;   /* cJSON's white space */
  return p;
}

/* The call object at p ('{'). Whole: added as the region's parse would
 * (true). Else added once "name" and then "arguments" (or "parameters")
 * holding an object were read, with the arguments' decided prefix; an
 * "id" counts when it comes before them. id_late: the format writes the
 * id after the arguments (Mistral), so the call waits until whole. */
bool serve_tc_open_json_call(const char *p, const char *end, bool id_late, serve_chat_msg *out) {
  const char *e = serve_json_value_end(p, end);
  if (e) {
    cJSON *v = json_whole(p, e);
    bool ok = serve_tc_add_json_call(out, v, false);
    cJSON_Delete(v);
    return ok;
  }
  if (id_late) return false;
  char *fields[2] = { NULL, NULL };   /* name, id: the first of each (as cJSON's lookup) */
  bool seen[2] = { false, false };
  for (const char *q = skip_json_ws(p + 1, end); q < end && *q == '"';) {
    const char *ke = serve_json_value_end(q, end);
    cJSON *k = ke ? json_whole(q, ke) : NULL;
    const char *colon = ke ? skip_json_ws(ke, end) : end;
    if (!cJSON_IsString(k) || colon == end || *colon != ':') { cJSON_Delete(k); break; }
    q = skip_json_ws(colon + 1, end);
    const char *key = k->valuestring;
    bool args = !strcmp(key, "arguments") || !strcmp(key, "parameters"), fn = !strcmp(key, "function");
    int f = !strcmp(key, "name") ? 0 : !strcmp(key, "id") ? 1 : -1;
    cJSON_Delete(k);
    if (args && fields[0] && q < end && *q == '{') {
      strbuf a = { 0 };
      serve_json_compact_prefix(q, end, &a);
      serve_chat_msg_add_call(out, fields[1], fields[0], a.s);
      return false;
    }
    const char *ve = args || fn ? NULL : serve_json_value_end(q, end);
    if (!ve) break;
    if (f >= 0 && !seen[f]) {
      seen[f] = true;
      cJSON *v = json_whole(q, ve);
      if (cJSON_IsString(v) && *v->valuestring) fields[f] = tg_xstrdup(v->valuestring);
      cJSON_Delete(v);
    }
    q = skip_json_ws(ve, end);
    if (q == end || *q != ',') break;
    q = skip_json_ws(q + 1, end);
  }
  free(fields[0]);
  free(fields[1]);
  return false;
}

/* A call object or an array of them at p: the whole ones, then the open one. */
static void open_json_calls(const char *p, const char *end, bool id_late, serve_chat_msg *out) {
  p = skip_json_ws(p, end);
  if (p < end && *p == '{') { serve_tc_open_json_call(p, end, id_late, out); return; }
  if (p == end || *p != '[') return;
  for (p = skip_json_ws(p + 1, end); p < end && *p == '{';) {
    const char *e = serve_json_value_end(p, end);
    if (!serve_tc_open_json_call(p, end, id_late, out) || !e) return;
    p = skip_json_ws(e, end);
    if (p == end || *p != ',') return;
    p = skip_json_ws(p + 1, end);
  }
}

/* Qwen3-Coder parameters being written: each whole one as xml_params
 * prints it; of an open one, its key, and of a string value the text so
 * far but for what may be its closing (the newline before </parameter>
 * is not part of it). Other values wait for their </parameter> (they may
 * be JSON or text). Appends to a (which holds "{"). */
static void open_xml_params(const cJSON *tools, const char *fn, const char *p, const char *end, strbuf *a) {
  cJSON *keys = cJSON_CreateObject();
  for (p = skip_ws(p, end); starts(p, end, "<parameter="); p = skip_ws(p, end)) {
    const char *name = p + strlen("<parameter="), *gt = memchr(name, '>', (size_t)(end - name));
    if (!gt || !good_name(name, (size_t)(gt - name))) break;
    char *key = dup_n(name, (size_t)(gt - name));
    if (cJSON_GetObjectItemCaseSensitive(keys, key)) { free(key); break; }
    cJSON_AddItemToObject(keys, key, cJSON_CreateTrue());
    if (a->n > 1) sb_puts(a, ",");
    cJSON *k = cJSON_CreateString(key);
    char *ks = cJSON_PrintUnformatted(k);
    sb_printf(a, "%s:", ks);
    free(ks);
    cJSON_Delete(k);
    const char *v = gt + 1, *close = find(v, end, "</parameter>");
    if (close) {
      cJSON *val = serve_tc_xml_value(tools, fn, key, v, close);
      char *s = print_json(val);
      sb_puts(a, s);
      free(s);
      cJSON_Delete(val);
      free(key);
      p = close + strlen("</parameter>");
      continue;
    }
    if (serve_tc_string_param(tools, fn, key) && v < end) {
      if (*v == '\n') v++;
      size_t hold = partial_suffix(v, end, "\n</parameter>");
      size_t h2 = partial_suffix(v, end, "</parameter>");
      if (h2 > hold) hold = h2;
      serve_json_string_prefix(v, (size_t)(end - hold - v), a);
    }
    free(key);
    break;
  }
  cJSON_Delete(keys);
}

/* A function whose name is known, its body [p, end) being written: a JSON
 * object's decided prefix, or the XML parameters read so far ("" while
 * the body has not begun: either may follow). */
static void open_function(const cJSON *tools, const char *name, size_t name_len, const char *p, const char *end,
                          serve_chat_msg *out) {
  char *fn = dup_n(name, name_len);
  strbuf a = { 0 };
  sb_puts(&a, "");
  const char *q = skip_ws(p, end);
  if (q < end && *q == '{') serve_json_compact_prefix(q, end, &a);
  else if (q < end) {
    sb_puts(&a, "{");
    open_xml_params(tools, fn, p, end, &a);
  }
  serve_chat_msg_add_call(out, NULL, fn, a.s);
}

/* <function=NAME>body being written: returns past its </function> when
 * that came (the call is then whole), else NULL. */
static const char *open_function_eq(const cJSON *tools, const char *p, const char *end, serve_chat_msg *out) {
  const char *name = p;
  while (p < end && *p != '>' && *p != '<' && *p != '\n') p++;
  if (p == end || *p != '>' || !good_name(name, (size_t)(p - name))) return NULL;
  const char *close = find(p + 1, end, "</function>");
  if (!close) {
    open_function(tools, name, (size_t)(p - name), p + 1, end, out);
    return NULL;
  }
  return serve_tc_add_function(out, tools, name, (size_t)(p - name), p + 1, close) ? close + strlen("</function>") : NULL;
}

/* The calls of an undecided region so far (p: past its opener). */
void serve_tc_open_region(const opener *o, const cJSON *tools, const char *p, const char *end, serve_chat_msg *out) {
  const char *q = skip_ws(p, end);
  switch (o->kind) {
  case R_TOOL_CALL:
    if (q < end && (*q == '{' || *q == '[')) open_json_calls(q, end, false, out);
    else
      while (starts(q, end, "<function=") && (q = open_function_eq(tools, q + strlen("<function="), end, out))) q = skip_ws(q, end);
    return;
  case R_FUNCTION_EQ: open_function_eq(tools, p, end, out); return;
  case R_FUNCTION_NAME: {
    const char *quote = memchr(p, '"', (size_t)(end - p));
    if (quote && quote + 1 < end && quote[1] == '>' && good_name(p, (size_t)(quote - p)))
      open_function(tools, p, (size_t)(quote - p), quote + 2, end, out);
    return;
  }
  case R_WRAPPER: open_json_calls(q, end, false, out); return;
  case R_FENCE:
    if (q < end && *q == '<') {   /* a wrapper inside the fence */
      q = memchr(q, '>', (size_t)(end - q));
      if (!q) return;
      q++;
    }
    open_json_calls(q, end, false, out);
    return;
  case R_PYTHON_TAG:   /* NAME.call(..) and code decide their name only at the end */
    if (q < end && *q == '{') serve_tc_open_json_call(q, end, false, out);
    return;
  case R_MISTRAL: {
    if (q < end && *q == '[') { open_json_calls(q, end, true, out); return; }
    const char *args = find(q, end, "[ARGS]");
    if (!args || !good_name(q, (size_t)(args - q))) return;
    for (const char *c = q; c < args; c++)
      if (is_ws(*c) || *c == '[' || *c == '{') return;
    const char *a = skip_ws(args + strlen("[ARGS]"), end);
    strbuf b = { 0 };
    sb_puts(&b, "");
    if (a < end && *a != '{') { sb_free(&b); return; }
    if (a < end) serve_json_compact_prefix(a, end, &b);
    serve_chat_msg_add_call(out, NULL, dup_n(q, (size_t)(args - q)), b.s);
    return;
  }
  }
}

