/* text_filter.c: stop strings and held-back text for streaming (see text_filter.h). */
#include "serve/text_filter.h"

/* Length of s[0:n] without a UTF-8 character cut off at its end. */
static size_t utf8_complete(const char *s, size_t n) {
  for (size_t back = 1; back <= 4 && back <= n; back++) {
    unsigned char c = (unsigned char)s[n - back];
    if ((c & 0xC0) == 0x80) continue;                /* continuation byte: keep looking for the lead */
    size_t need = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 1;
    return need > back ? n - back : n;
  }
  return n;   /* only continuation bytes: malformed, nothing to wait for */
}

bool serve_text_push(serve_text *t, const char *piece, size_t len) {
  if (t->stopped) return false;
  sb_append(&t->text, piece, len);
  const char *s = t->text.s;
  size_t n = t->text.n;
  /* Every stop string starts at or after `safe` (text before it was checked):
   * the earliest full match ends the text. */
  size_t match = n;
  for (int i = 0; i < t->n_stop; i++) {
    size_t sl = strlen(t->stop[i]);
    if (!sl) continue;
    const char *m = memmem(s + t->safe, n - t->safe, t->stop[i], sl);
    if (m && (size_t)(m - s) < match) match = (size_t)(m - s);
  }
  if (match < n) {
    t->text.n = match;
    t->text.s[match] = 0;
    t->safe = utf8_complete(s, match);
    t->stopped = true;
    return false;
  }
  /* Hold back the earliest tail that is a proper prefix of a stop string. */
  size_t hold = n;
  for (size_t q = t->safe; q < n && hold == n; q++)
    for (int i = 0; i < t->n_stop; i++) {
      size_t sl = strlen(t->stop[i]);
      if (sl > n - q && memcmp(s + q, t->stop[i], n - q) == 0) { hold = q; break; }
    }
  t->safe = utf8_complete(s, hold);
  return true;
}

void serve_text_finish(serve_text *t) {
  if (!t->text.s) sb_append(&t->text, "", 0);
  size_t whole = utf8_complete(t->text.s, t->text.n);
  if (whole < t->text.n) {
    t->text.n = whole;
    sb_append(&t->text, "\xEF\xBF\xBD", 3);
  }
  t->safe = t->text.n;
}

void serve_text_free(serve_text *t) { sb_free(&t->text); }
