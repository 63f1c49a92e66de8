/* pretokenize.h: BPE pre-tokenizers: the regexes (PCRE2) and the few
 * hand-written splitters (pretok_custom.h) that split text into words
 * before merging, chosen by tokenizer.ggml.pre, and the per-name tokenizer
 * flags llama.cpp attaches to those names. */
#ifndef TG_TOKENIZER_PRETOKENIZE_H
#define TG_TOKENIZER_PRETOKENIZE_H

#include <stddef.h>
#include <stdbool.h>

enum {
  PRE_NO_CLEAN = 1 << 0,       /* detokenize keeps " ," etc. (clean_spaces off) */
  PRE_IGNORE_MERGES = 1 << 1,  /* a word that is a token is taken whole */
  PRE_ADD_BOS = 1 << 2,        /* add_bos defaults to true */
  PRE_NO_BOS_ID = 1 << 3,      /* no default BOS id */
  PRE_ADD_SEP = 1 << 4,        /* add_sep defaults to true */
  /* SentencePiece-style BPE (gemma4, sarvam-moe): */
  PRE_ESCAPE_SPACES = 1 << 5,  /* spaces become U+2581 before BPE, and back in pieces */
  PRE_RAW_UTF8 = 1 << 6,       /* symbols are UTF-8 characters, not GPT-2's byte characters;
                                  a symbol without a token falls back to <0xXX> byte tokens */
  PRE_NEWLINES_WHOLE = 1 << 7, /* a word of only newlines that is a token is taken whole */
  PRE_FORCE_BOS = 1 << 8,      /* add_bos is true even when the file says false */
  PRE_MERGES_OPTIONAL = 1 << 9, /* a file without tokenizer.ggml.merges loads (kimi-k2) */
  PRE_KEEP_CASE = 1 << 10,     /* normalizer.lowercase defaults to false (whitespace) */
};

typedef struct pretok pretok;

/* The pre-tokenizer called name (NULL or "" = llama.cpp's "default").
 * *flags gets the PRE_* flags of that name. NULL + tg_error naming it when
 * tg does not know it. */
pretok *pretok_new(const char *name, unsigned *flags);
void pretok_free(pretok *p);

/* The i-th pre-tokenizer name tg knows, NULL past the last (for tests). */
const char *pretok_name(int i);

/* A word: bytes [start, start+len) of the text. */
typedef struct { size_t start, len; } pretok_span;
/* Splits text (valid UTF-8) into words, every byte in exactly one word, in
 * order: each regex in turn splits each piece into its matches and the gaps
 * between them. *out gets a malloc'd array; returns the count, or -1 with
 * tg_error when PCRE2 fails (a match limit). */
int pretok_split(const pretok *p, const char *text, size_t n, pretok_span **out);

#endif
