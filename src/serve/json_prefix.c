/* json_prefix.c: what a JSON text still being written already decides of
 * its compact form (see chat_msg.h). The invariant: for any text t and any
 * continuation u such that t+u holds a whole value that cJSON parses,
 * serve_json_compact_prefix(t) is a prefix of cJSON_PrintUnformatted of
 * that value. Tokens are cut out by a structural scan (cJSON's own rules:
 * every byte up to 0x20 is white space, a string runs to the first
 * unescaped quote) and each complete token is read and printed by cJSON
 * itself, so the pieces are cJSON's bytes; a string still open is printed
 * up to its last whole character (escapes, surrogate pairs, UTF-8), a
 * number or literal only once a delimiter follows it. */
#include <string.h>
#include "serve/chat_msg.h"

static bool is_space(char c) { return (unsigned char)c <= 0x20; }

static const char *skip_space(const char *p, const char *end) {
  while (p < end && is_space(*p)) p++;
  return p;
}

/* A scalar (number, true, false, null) runs to the next delimiter. */
static bool is_delim(char c) { return is_space(c) || c == ',' || c == ']' || c == '}' || c == ':' || c == '[' || c == '{' || c == '"'; }

/* The end of the string whose opening quote is at p, or NULL when the text
 * ends inside it. */
static const char *string_end(const char *p, const char *end) {
  for (p++; p < end; p++) {
    if (*p == '\\') { p++; continue; }
    if (*p == '"') return p + 1;
  }
  return NULL;
}

const char *serve_json_value_end(const char *p, const char *end) {
  p = skip_space(p, end);
  if (p == end) return NULL;
  if (*p == '"') return string_end(p, end);
  if (*p != '{' && *p != '[') {
    while (p < end && !is_delim(*p)) p++;
    return p < end ? p : NULL;
  }
  int depth = 0;
  for (; p < end; p++) {
    if (*p == '"') {
      p = string_end(p, end);
      if (!p) return NULL;
      p--;
    } else if (*p == '{' || *p == '[') depth++;
    else if (*p == '}' || *p == ']') {
      if (--depth == 0) return p + 1;
    }
  }
  return NULL;
}

/* cJSON's compact print of the token [p, e) alone; false when cJSON does
 * not read it as one value. */
static bool print_token(const char *p, const char *e, strbuf *out) {
  const char *je = NULL;
  cJSON *v = cJSON_ParseWithLengthOpts(p, (size_t)(e - p), &je, false);
  bool ok = v && je == e;
  char *s = ok ? cJSON_PrintUnformatted(v) : NULL;
  cJSON_Delete(v);
  if (s) sb_puts(out, s);
  free(s);
  return s != NULL;
}

static int hex4(const char *p) {
  int v = 0;
  for (int i = 0; i < 4; i++) {
    char c = p[i];
    int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
    if (d < 0) return -1;
    v = v * 16 + d;
  }
  return v;
}

/* Bytes a UTF-8 sequence led by c takes (1 for anything else). */
static size_t utf8_len(unsigned char c) { return c >= 0xf0 && c < 0xf8 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1; }

/* Where the decided part of an open string (its quote at p, the text
 * ending at end) stops: before an escape, surrogate pair or UTF-8
 * sequence the text cuts short. */
static const char *string_cut(const char *p, const char *end) {
  const char *cut = p + 1;
  for (const char *q = p + 1; q < end;) {
    if (*q == '\\') {
      if (end - q < 2) break;
      if (q[1] != 'u') { q += 2; cut = q; continue; }
      if (end - q < 6) break;
      int u = hex4(q + 2);
      if (u >= 0xd800 && u < 0xdc00) {   /* a high surrogate reads with the escape after it */
        if (end - q < 12) break;
        q += 12;
      } else q += 6;
      cut = q;
      continue;
    }
    size_t n = utf8_len((unsigned char)*q);
    if ((size_t)(end - q) < n) break;
    q += n;
    cut = q;
  }
  return cut;
}

void serve_json_string_prefix(const char *s, size_t n, strbuf *out) {
  char *tmp = tg_xmalloc(n + 1);
  memcpy(tmp, s, n);
  tmp[n] = 0;
  size_t keep = n;   /* a UTF-8 sequence cut short waits */
  for (size_t back = 1; back <= 3 && back <= n; back++) {
    unsigned char c = (unsigned char)tmp[n - back];
    if (c >= 0xc0) { if (utf8_len(c) > back) keep = n - back; break; }
    if (c < 0x80) break;
  }
  tmp[keep] = 0;
  cJSON *v = cJSON_CreateString(tmp);
  char *p = cJSON_PrintUnformatted(v);
  cJSON_Delete(v);
  free(tmp);
  if (p) sb_append(out, p, strlen(p) - 1);   /* without the closing quote */
  free(p);
}

/* An open string's decided print: the text up to the cut, closed, read by
 * cJSON and printed without its closing quote. */
static void open_string(const char *p, const char *end, strbuf *out) {
  const char *cut = string_cut(p, end);
  size_t n = (size_t)(cut - p);
  char *tmp = tg_xmalloc(n + 2);
  memcpy(tmp, p, n);
  tmp[n] = '"';
  tmp[n + 1] = 0;
  strbuf s = { 0 };
  if (print_token(tmp, tmp + n + 1, &s)) sb_append(out, s.s, s.n - 1);
  sb_free(&s);
  free(tmp);
}

bool serve_json_compact_prefix(const char *p, const char *end, strbuf *out) {
  int depth = 0;
  sb_puts(out, "");
  for (p = skip_space(p, end); p < end; p = skip_space(p, end)) {
    char c = *p;
    if (c == '{' || c == '[' || c == '}' || c == ']' || c == ',' || c == ':') {
      sb_append(out, p, 1);
      p++;
      if (c == '{' || c == '[') depth++;
      else if (c == '}' || c == ']') depth--;
    } else {
      const char *e = serve_json_value_end(p, end);
      if (!e) {
        if (c == '"') open_string(p, end, out);
        return false;
      }
      if (!print_token(p, e, out)) return false;
      p = e;
    }
    if (depth <= 0) return true;
  }
  return false;
}
