/* tg_tokenizer.h: text <-> token ids with the tokenizer stored in a GGUF
 * file's tokenizer.ggml.* metadata, matching llama.cpp token for token.
 * Included by tg.h. See docs/tokenizer.md.
 *
 * Supported tokenizer.ggml.model values: "llama" (SentencePiece BPE with
 * scores and <0xXX> byte fallback), "gpt2" (byte-level BPE with merges and a
 * pre-tokenizer chosen by tokenizer.ggml.pre) and "bert" (WordPiece).
 *
 * A tokenizer is immutable after loading: any number of threads may use one
 * at once. Errors return -1 or NULL with tg_error() saying what went wrong. */
#ifndef TG_TOKENIZER_H
#define TG_TOKENIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tg_api.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tg_tokenizer tg_tokenizer;

/* Loads the tokenizer of a GGUF file (a model, or a vocab-only file). NULL
 * with tg_error() naming the file and the problem (no tokens array, an unknown
 * model or pre-tokenizer name, a malformed merge, ...). */
TG_API tg_tokenizer *tg_tokenizer_load(const char *gguf_path);
TG_API void tg_tokenizer_free(tg_tokenizer *tok);

/* Tokenizes len bytes of text (need not be NUL-terminated nor valid UTF-8:
 * invalid bytes are treated like llama.cpp does). add_special adds BOS/EOS
 * (and BERT's [CLS]/[SEP]) as the model's add_bos_token/add_eos_token say;
 * parse_special turns the text of control tokens (e.g. "<|im_end|>") into
 * those tokens; user-defined tokens are always matched. *ids gets a malloc'd
 * array (free it; non-NULL even when the count is 0). Returns the count, or
 * -1 with tg_error(). */
TG_API int tg_tokenize(const tg_tokenizer *tok, const char *text, size_t len, bool add_special, bool parse_special,
                int32_t **ids);

/* The bytes token id stands for (SPM "▁" becomes a space, byte tokens their
 * byte, byte-level BPE is unmapped). Control and unknown tokens give "" unless
 * special is true (then their text). Writes at most cap bytes to buf (no NUL)
 * and returns the piece's length; when it is longer than cap, returns minus
 * its length and writes nothing. An id out of range is an empty piece (0,
 * with tg_error() set). */
TG_API int tg_token_to_piece(const tg_tokenizer *tok, int32_t id, bool special, char *buf, int cap);

/* The text of the whole sequence as llama.cpp's detokenize gives it: pieces
 * joined, the space SPM added in front of the first word removed, and for
 * tokenizers that clean up spaces (gpt-2 style) " ," -> "," and similar.
 * remove_special drops a leading BOS / trailing EOS when the model adds them;
 * special renders control tokens' text. A malloc'd NUL-terminated string
 * (*len, when given, gets its length: it may contain NUL bytes), or NULL with
 * tg_error() for an id out of range. */
TG_API char *tg_detokenize(const tg_tokenizer *tok, const int32_t *ids, int n, bool remove_special, bool special,
                    size_t *len);

/* Streaming decoder for generation: push one token at a time and print the
 * bytes returned. Bytes of a UTF-8 character split across tokens (e.g. byte
 * tokens <0xE2><0x9C><0x85>) are held back until it is complete; a sequence
 * that can never complete is released as is. No leading space is stripped
 * (the stream continues a prompt). */
typedef struct tg_token_stream tg_token_stream;
TG_API tg_token_stream *tg_token_stream_new(const tg_tokenizer *tok, bool special);
/* The bytes now ready (pointer valid until the next call on the stream; not
 * NUL-terminated unless you count *len), or NULL with tg_error() for an id out
 * of range. */
TG_API const char *tg_token_stream_push(tg_token_stream *s, int32_t id, size_t *len);
/* Releases whatever is held back (an incomplete character at the end). */
TG_API const char *tg_token_stream_flush(tg_token_stream *s, size_t *len);
TG_API void tg_token_stream_free(tg_token_stream *s);

/* Vocabulary facts. Special ids are -1 when the model has none. Given a NULL
 * tok these return -1 (false, NULL) with an error. */
TG_API int tg_tokenizer_n_vocab(const tg_tokenizer *tok);
TG_API int32_t tg_tokenizer_bos(const tg_tokenizer *tok);
TG_API int32_t tg_tokenizer_eos(const tg_tokenizer *tok);
TG_API int32_t tg_tokenizer_eot(const tg_tokenizer *tok);
TG_API bool tg_tokenizer_add_bos(const tg_tokenizer *tok);   /* tg_tokenize(add_special) adds BOS */
/* End of generation: EOS, EOT, EOM and the tokens llama.cpp stops at by
 * their text (<|im_end|>, <|eot_id|>, <end_of_turn>, <|end|>, ...). */
TG_API bool tg_tokenizer_is_eog(const tg_tokenizer *tok, int32_t id);
/* The id of the token whose text is exactly text (e.g. "<|im_end|>"), or -1
 * (no error set when there is none). */
TG_API int32_t tg_tokenizer_find(const tg_tokenizer *tok, const char *text);
/* The token's text as stored in the vocabulary (NUL-terminated), or NULL
 * for an id out of range. */
TG_API const char *tg_tokenizer_token_text(const tg_tokenizer *tok, int32_t id);

#ifdef __cplusplus
}
#endif
#endif
