/* tok_golden.h: helpers of the tokenizer tests that read llama.cpp's
 * results from text goldens (test_tokenizer_gemma4.c, test_tokenizer_pretok.c). */
#ifndef TG_TESTS_TOK_GOLDEN_H
#define TG_TESTS_TOK_GOLDEN_H

#include <stdbool.h>
#include <stddef.h>
#include "util/util.h"

typedef VEC(char) tok_bytes;

/* hex ("-": empty) -> *out (replaced); false when malformed */
bool tok_unhex(const char *hex, tok_bytes *out);
/* Prints "    what: 'text'" with non-printable bytes as \xNN (at most 200). */
void tok_show(const char *what, const char *s, size_t n);

#endif
