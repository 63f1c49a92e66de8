/* tool_calls_scan.h: what the tool-call scanner (tool_calls.c) and its
 * reader of calls still being written (tool_calls_open.c) share: text
 * helpers over [p, end), the openers' region kinds, and the builders that
 * add a call to a message. Internal to src/serve. */
#ifndef TG_SERVE_TOOL_CALLS_SCAN_H
#define TG_SERVE_TOOL_CALLS_SCAN_H

#include <string.h>
#include "serve/chat_msg.h"

/* ---- small text helpers over [p, end) */

static inline bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

static inline const char *skip_ws(const char *p, const char *end) {
  while (p < end && is_ws(*p)) p++;
  return p;
}

static inline const char *rskip_ws(const char *begin, const char *e) {
  while (e > begin && is_ws(e[-1])) e--;
  return e;
}

static inline bool starts(const char *p, const char *end, const char *lit) {
  size_t n = strlen(lit);
  return (size_t)(end - p) >= n && memcmp(p, lit, n) == 0;
}

static inline const char *find(const char *p, const char *end, const char *lit) {
  size_t n = strlen(lit);
  for (; (size_t)(end - p) >= n; p++)
    if (*p == *lit && memcmp(p, lit, n) == 0) return p;
  return NULL;
}

/* Whether [p, end) is a proper prefix of lit (the rest may still come). */
static inline bool prefix_of(const char *p, const char *end, const char *lit) {
  size_t n = (size_t)(end - p);
  return n < strlen(lit) && memcmp(p, lit, n) == 0;
}

/* The longest proper prefix of lit that ends [begin, end): text that may
 * still become lit. */
static inline size_t partial_suffix(const char *begin, const char *end, const char *lit) {
  size_t n = strlen(lit), have = (size_t)(end - begin);
  for (size_t k = n - 1 < have ? n - 1 : have; k > 0; k--)
    if (memcmp(end - k, lit, k) == 0) return k;
  return 0;
}

/* A function name as the tag forms write it: not empty, no control bytes
 * (a NUL would cut it short in C and in JSON). */
static inline bool good_name(const char *p, size_t n) {
  if (!n) return false;
  for (size_t i = 0; i < n; i++)
    if ((unsigned char)p[i] < 0x20) return false;
  return true;
}

static inline char *dup_n(const char *p, size_t n) {
  char *s = tg_xmalloc(n + 1);
  memcpy(s, p, n);
  s[n] = 0;
  return s;
}

/* A JSON value starting at p (white space first allowed); *json_end gets
 * where it ends. NULL when [p, end) does not start with a whole value. */
static inline cJSON *json_at(const char *p, const char *end, const char **json_end) {
  const char *e = NULL;
  cJSON *v = cJSON_ParseWithLengthOpts(p, (size_t)(end - p), &e, false);
  if (v && json_end) *json_end = e;
  return v;
}

/* A JSON value filling [p, end) but for white space, or NULL. */
static inline cJSON *json_whole(const char *p, const char *end) {
  const char *e = NULL;
  cJSON *v = json_at(p, end, &e);
  if (v && skip_ws(e, end) != end) { cJSON_Delete(v); v = NULL; }
  return v;
}

static inline char *print_json(const cJSON *v) {
  char *s = cJSON_PrintUnformatted(v);
  return s ? s : tg_xstrdup("{}");
}

/* ---- regions */

typedef enum { R_TOOL_CALL, R_WRAPPER, R_FENCE, R_FUNCTION_EQ, R_FUNCTION_NAME, R_PYTHON_TAG, R_MISTRAL } region_kind;

typedef struct { const char *open; region_kind kind; const char *close; } opener;

/* ---- adding calls (tool_calls.c) */

/* {"name": .., "arguments"|"parameters": {..} or "..."} (optionally
 * "type": "function", an "id", or the OpenAI shape {"function": {..}}).
 * need_args: an object without arguments is not a call. */
bool serve_tc_add_json_call(serve_chat_msg *out, const cJSON *o, bool need_args);
/* A function body [p, end): a JSON object of arguments, or Qwen3-Coder
 * parameters. */
bool serve_tc_add_function(serve_chat_msg *out, const cJSON *tools, const char *name, size_t name_len, const char *p,
                           const char *end);
/* Whether the tools' schema types function fn's parameter as "string". */
bool serve_tc_string_param(const cJSON *tools, const char *fn, const char *param);
/* A Qwen3-Coder value [v, close) (close: its </parameter>), typed. */
cJSON *serve_tc_xml_value(const cJSON *tools, const char *fn, const char *key, const char *v, const char *close);

/* ---- calls still being written (tool_calls_open.c) */

/* The call object at p ('{'): whole, added as the region's parse would
 * (true); else added once its name and the start of its arguments object
 * were read, with the arguments' decided prefix. id_late: the format
 * writes the id after the arguments, so the call waits until whole. */
bool serve_tc_open_json_call(const char *p, const char *end, bool id_late, serve_chat_msg *out);
/* The calls of an undecided region so far (p: past its opener o). */
void serve_tc_open_region(const opener *o, const cJSON *tools, const char *p, const char *end, serve_chat_msg *out);

#endif
