/* tokenizer.h: the tokenizer's internals, shared by the files of
 * src/tokenizer/ and the model runner (which loads the tokenizer from the
 * GGUF file it already opened). */
#ifndef TG_TOKENIZER_TOKENIZER_H
#define TG_TOKENIZER_TOKENIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "tg_tokenizer.h"
#include "io/gguf_file.h"
#include "tokenizer/pairmap.h"
#include "tokenizer/pretokenize.h"
#include "tokenizer/strmap.h"
#include "util/util.h"

typedef enum { TOK_SPM, TOK_BPE, TOK_WPM, TOK_UGM, TOK_RWKV, TOK_PLAMO2 } tok_kind;

/* Token attributes (llama.cpp's llama_token_attr bits). */
enum {
  TOK_ATTR_UNKNOWN = 1 << 0, TOK_ATTR_UNUSED = 1 << 1, TOK_ATTR_NORMAL = 1 << 2, TOK_ATTR_CONTROL = 1 << 3,
  TOK_ATTR_USER_DEFINED = 1 << 4, TOK_ATTR_BYTE = 1 << 5, TOK_ATTR_LSTRIP = 1 << 7, TOK_ATTR_RSTRIP = 1 << 8,
};

struct tg_tokenizer {
  tok_kind kind;
  char *model, *pre_name, *name;     /* tokenizer.ggml.model / .pre, general.name */
  int n_vocab;
  char **text;                       /* token texts, NUL-terminated */
  uint32_t *text_len;
  float *score;
  uint16_t *attr;
  int max_token_len;
  strmap ids;                        /* text -> id */
  pairmap pair_ranks;                /* BPE merges of two tokens: id pair -> rank, merged id */
  strmap merges;                     /* the other merges: "left\xFFright" -> rank */
  char *merge_keys;                  /* storage of those keys */
  pretok *pre;                       /* BPE */
  int32_t byte_token[256];           /* byte -> its token (<0xXX> or GPT-2 char), -1 */

  int32_t bos, eos, eot, eom, unk, sep, pad, mask;
  int32_t fim_pre, fim_suf, fim_mid, fim_pad, fim_rep, fim_sep;
  bool add_bos, add_eos, add_sep, add_space_prefix, ignore_merges, clean_spaces;
  bool lowercase, strip_accents;     /* BERT normalizer */
  bool spm_split_words;              /* SPM: no token has "▁" after another character (see spm.c) */
  /* BPE SentencePiece-style (gemma4, sarvam-moe; PRE_* flags of the pre-tokenizer) */
  bool escape_spaces;                /* " " -> "▁" before encoding, back in pieces */
  bool raw_utf8;                     /* no GPT-2 byte map: symbols are characters, byte fallback <0xXX> */
  bool newlines_whole;               /* a word of only "\n" that is a token is taken whole */
  bool dna;                          /* model "hybriddna": <dna>...</dna> as k-mer tokens (dna_kmers.c) */
  VEC(char *) marked_texts;          /* hybriddna: the k-mers' texts with their marker (id map keys) */
  bool drop_spaces;                  /* model "whitespace": whitespace is dropped, the text between
                                        (lowercased when `lowercase`) encoded piece by piece */
  uint8_t *eog;                      /* per id: ends generation */
  struct ugm_model *ugm;             /* model "t5" (ugm.c) */
  struct rwkv_model *rwkv;           /* model "rwkv" (rwkv.c) */
  struct plamo2_model *plamo2;       /* model "plamo2" (plamo2.c) */

  int32_t *specials;                 /* control/user-defined/unknown ids, longest text first */
  int n_specials;
  char **piece;                      /* per id: its piece with special = true */
  uint32_t *piece_len;
  struct token_trie *grammar_trie;   /* the pieces as a trie, built on a grammar's first mask (src/grammar) */
};

/* Builds the tokenizer from f's tokenizer.ggml.* metadata (f stays owned by
 * the caller; nothing points into it afterwards). */
tg_tokenizer *tokenizer_from_gguf(const gguf_file *f);

/* The encoders: append the ids of one fragment of raw text (no specials).
 * SPM (and BPE with escape_spaces) takes text with spaces already escaped
 * to "▁" (tokenize.c). bpe_encode returns -1
 * with tg_error when the pre-tokenizer's regex engine fails. */
typedef VEC(int32_t) ids_vec;
void spm_encode(const tg_tokenizer *t, const char *text, size_t n, ids_vec *out);
int bpe_encode(const tg_tokenizer *t, const char *text, size_t n, ids_vec *out);
/* The merge rank of the byte-encoded texts left + right, or -1. */
int32_t bpe_pair_rank(const tg_tokenizer *t, const char *left, size_t ln, const char *right, size_t rn);
void wpm_encode(const tg_tokenizer *t, const char *text, size_t n, ids_vec *out);
/* hybriddna: bpe_encode outside <dna>...</dna>, k-mers inside; and the
 * k-mer texts without their U+E000 marker (after load_tokens). */
int dna_encode(const tg_tokenizer *t, const char *text, size_t n, ids_vec *out);
void tokenizer_unmark_kmers(tg_tokenizer *t);

/* The unigram, RWKV and PLaMo-2 models, each built from the loaded tokens
 * before special_tokens_detect changes their attributes (llama.cpp builds
 * them there too); -1 with tg_error on a vocabulary they cannot use.
 * ugm_encode normalizes one fragment itself (space prefix included) and
 * fails (-1, tg_error) on a malformed precompiled charsmap. rwkv_check runs
 * once the unknown id is known; rwkv_unescape writes at most n bytes. */
int ugm_build(tg_tokenizer *t, const gguf_file *f);
int ugm_encode(const tg_tokenizer *t, const char *text, size_t n, ids_vec *out);
void ugm_free(struct ugm_model *m);
void rwkv_build(tg_tokenizer *t);
int rwkv_check(const tg_tokenizer *t);
void rwkv_encode(const tg_tokenizer *t, const char *text, size_t n, ids_vec *out);
size_t rwkv_unescape(const char *s, size_t n, char *out);
void rwkv_free(struct rwkv_model *m);
int plamo2_build(tg_tokenizer *t);
void plamo2_encode(const tg_tokenizer *t, const char *text, size_t n, ids_vec *out);
void plamo2_free(struct plamo2_model *m);

/* special_tokens.c, in this order after the tokens and special ids are
 * loaded: roles and attributes from token texts and the end-of-generation
 * set; the list of special tokens, longest first; model-specific strip
 * attributes. */
void special_tokens_detect(tg_tokenizer *t);
void special_tokens_cache(tg_tokenizer *t);
void special_tokens_strip_attrs(tg_tokenizer *t, const gguf_file *f);

/* Builds the piece cache (detokenize.c). */
void tokenizer_build_pieces(tg_tokenizer *t);

#endif
