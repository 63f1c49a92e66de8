/* tok_golden.h: helpers of the tokenizer tests that read llama.cpp's
 * results from text goldens (test_tokenizer_gemma4.c, test_tokenizer_pretok.c,
 * test_tokenizer_models.c). */
#ifndef TG_TESTS_TOK_GOLDEN_H
#define TG_TESTS_TOK_GOLDEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "util/util.h"

typedef VEC(char) tok_bytes;

/* hex ("-": empty) -> *out (replaced); false when malformed */
bool tok_unhex(const char *hex, tok_bytes *out);
/* Prints "    what: 'text'" with non-printable bytes as \xNN (at most 200). */
void tok_show(const char *what, const char *s, size_t n);

/* Checks goldens/<name>.gguf against goldens/<name>.txt (the format of
 * tests/gen/gen_tok_gemma4.py): special ids and flags, the
 * end-of-generation set, every token's piece, and per test string the ids,
 * detokenize in its four modes and the streaming decoder token by token. */
void tok_check_golden(const char *name);

/* 300 random texts per vocabulary file, each a few pieces of alphabet[0..n)
 * (an LCG from seed), must detokenize to themselves byte for byte (no
 * specials). */
void tok_check_roundtrip(const char *const *files, int nfiles, const char *const *alphabet, int n, uint64_t seed);

#endif
