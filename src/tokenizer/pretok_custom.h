/* pretok_custom.h: the pre-tokenizer steps llama.cpp runs as hand-written
 * code instead of a regex (unicode.cpp's unicode_regex_split_custom_*),
 * where its result differs from what a regex engine would give: Kimi K2's
 * splitter (Han runs apart from other letters) and the digit grouping of
 * afmoe and tiny_aya. */
#ifndef TG_TOKENIZER_PRETOK_CUSTOM_H
#define TG_TOKENIZER_PRETOK_CUSTOM_H

#include <stddef.h>
#include "tokenizer/pretokenize.h"
#include "util/util.h"

typedef enum {
  PRETOK_KIMI_K2,        /* llama.cpp's "\p{Han}+" trigger: the whole Kimi K2 regex */
  PRETOK_DIGIT_GROUPS,   /* "\p{AFMoE_digits}" and tiny_aya's "\d{1,3}(?=(?:\d{3})*\b)" */
} pretok_custom;

typedef VEC(pretok_span) pretok_span_vec;

/* Appends the words of text[start, start+len) (valid UTF-8), which cover it
 * exactly, in order. */
void pretok_custom_split(pretok_custom kind, const char *text, size_t start, size_t len, pretok_span_vec *out);

#endif
