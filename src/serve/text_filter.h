/* text_filter.h: the generated text of one request, cut at its stop strings.
 * Pieces arrive from the backend; `safe` marks how much of the text can be
 * shown to the client now: text that could still turn out to be the start of
 * a stop string, or that ends inside a UTF-8 character, is held back until
 * the next piece decides it. */
#ifndef TG_SERVE_TEXT_FILTER_H
#define TG_SERVE_TEXT_FILTER_H

#include <stdbool.h>
#include "util/util.h"

typedef struct {
  char **stop;      /* borrowed; empty strings are ignored */
  int n_stop;
  strbuf text;      /* all text so far (NUL-terminated), ending before a matched stop string */
  size_t safe;      /* text.s[0:safe] is final: no stop string starts before it, whole UTF-8 chars */
  bool stopped;     /* a stop string matched */
} serve_text;

/* Appends a piece. Returns false once a stop string has matched (generation
 * should end); the text is then final up to the match. */
bool serve_text_push(serve_text *t, const char *piece, size_t len);
/* Generation ended: releases held-back text (a UTF-8 character left
 * unfinished becomes U+FFFD). */
void serve_text_finish(serve_text *t);
void serve_text_free(serve_text *t);

#endif
