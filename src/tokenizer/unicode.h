/* unicode.h: the Unicode the tokenizers need beyond PCRE2's regexes: UTF-8
 * decoding as llama.cpp does it (an invalid byte becomes U+FFFD), GPT-2's
 * byte <-> printable-character map, character classes (via PCRE2 properties),
 * lowercase (the C library's C.UTF-8 locale) and the base character of a
 * canonical decomposition (for BERT accent stripping). */
#ifndef TG_TOKENIZER_UNICODE_H
#define TG_TOKENIZER_UNICODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define UCP_REPLACEMENT 0xFFFDu

/* Bytes of the UTF-8 sequence a lead byte starts, from its top four bits
 * (1 for continuation bytes), as llama.cpp counts them. */
static inline int utf8_seq_len(unsigned char lead) {
  static const unsigned char n[16] = { 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4 };
  return n[lead >> 4];
}
/* Decodes the code point at s (n bytes left, n >= 1); *adv gets the bytes
 * used. A malformed sequence gives U+FFFD and *adv = 1. */
uint32_t utf8_decode(const char *s, size_t n, size_t *adv);
/* Encodes cp into out (room for 4); returns the length. */
int utf8_encode(uint32_t cp, char *out);
/* A malloc'd copy of s with every sequence PCRE2 would reject (malformed,
 * overlong, surrogate, beyond U+10FFFF) replaced by U+FFFD; *out_n gets its
 * length. */
char *utf8_sanitize(const char *s, size_t n, size_t *out_n);
/* Length of the longest prefix of s[0..n) that does not end inside an
 * incomplete UTF-8 sequence that later bytes could still complete. */
size_t utf8_complete_prefix(const char *s, size_t n);

/* GPT-2 byte-level BPE: the printable character standing for byte b (UTF-8,
 * 1 or 2 bytes, written to out; returns the length), and back: the byte cp
 * stands for, or -1. */
int gpt2_byte_to_utf8(unsigned char b, char *out);
int gpt2_cp_to_byte(uint32_t cp);

/* Character classes (general categories as PCRE2 knows them; whitespace is
 * llama.cpp's set, which also has U+0085 and U+00A0..). */
enum {
  UCP_LETTER = 1 << 0, UCP_NUMBER = 1 << 1, UCP_PUNCT = 1 << 2, UCP_SYMBOL = 1 << 3,
  UCP_MARK = 1 << 4, UCP_CONTROL = 1 << 5,  /* Cc Cf Co Cs */
  UCP_SPACE = 1 << 6,
};
unsigned ucp_class(uint32_t cp);
bool ucp_is_space(uint32_t cp);
/* The whitespace set above as the inside of a PCRE2 character class. */
extern const char UCP_SPACE_CLASS[];
uint32_t ucp_tolower(uint32_t cp);
/* The first code point of cp's canonical decomposition (cp when none). */
uint32_t ucp_nfd_first(uint32_t cp);

/* generated table (unicode_nfd.c) */
extern const uint32_t tg_nfd_first[][2];
extern const int tg_nfd_first_n;

#endif
