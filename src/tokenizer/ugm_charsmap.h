/* ugm_charsmap.h: SentencePiece's precompiled normalization charsmap
 * (tokenizer.ggml.precompiled_charsmap, UGM): a little-endian u32 size of
 * the XOR-compressed compact double array (XCDA) that follows, whose leaves
 * index NUL-terminated replacement strings stored after it. It maps the
 * longest matching prefix of the text to its replacement. */
#ifndef TG_TOKENIZER_UGM_CHARSMAP_H
#define TG_TOKENIZER_UGM_CHARSMAP_H

#include <stddef.h>
#include <stdint.h>
#include "io/gguf_file.h"

typedef struct {
  uint32_t *xcda;          /* the XCDA entries (copied: the GGUF bytes need not be aligned) */
  size_t n_xcda;
  char *repl;              /* the replacement strings */
  size_t n_repl;
} ugm_charsmap;

/* Reads the charsmap from f (none: an empty map). -1 with tg_error when it
 * is not a byte array or its header does not fit. */
int ugm_charsmap_load(ugm_charsmap *m, const gguf_file *f);
void ugm_charsmap_free(ugm_charsmap *m);

/* The longest prefix of s[0..n) the map replaces (stopping at a NUL byte):
 * returns its length (0: none) with the replacement in *repl, *repl_n; -1
 * with tg_error when the walk leaves the array or a replacement is out of
 * range or unterminated (a malformed map). */
int64_t ugm_charsmap_match(const ugm_charsmap *m, const char *s, size_t n, const char **repl, size_t *repl_n);

#endif
