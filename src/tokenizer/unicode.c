/* unicode.c: see unicode.h. */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "tokenizer/unicode.h"
#include <locale.h>
#include <pcre2.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <wctype.h>
#include "util/util.h"

uint32_t utf8_decode(const char *str, size_t n, size_t *adv) {
  const unsigned char *s = (const unsigned char *)str;
  *adv = 1;
  if (s[0] < 0x80) return s[0];
  int len = (s[0] & 0x40) == 0 ? 0 : (s[0] & 0x20) == 0 ? 2 : (s[0] & 0x10) == 0 ? 3 : (s[0] & 0x08) == 0 ? 4 : 0;
  if (len == 0 || (size_t)len > n) return UCP_REPLACEMENT;
  for (int i = 1; i < len; i++)
    if ((s[i] & 0xC0) != 0x80) return UCP_REPLACEMENT;
  uint32_t cp = len == 2 ? s[0] & 0x1Fu : len == 3 ? s[0] & 0x0Fu : s[0] & 0x07u;
  for (int i = 1; i < len; i++) cp = (cp << 6) | (s[i] & 0x3Fu);
  *adv = (size_t)len;
  return cp;
}

int utf8_encode(uint32_t cp, char *out) {
  unsigned char *o = (unsigned char *)out;
  if (cp < 0x80) { o[0] = (unsigned char)cp; return 1; }
  if (cp < 0x800) { o[0] = (unsigned char)(0xC0 | (cp >> 6)); o[1] = (unsigned char)(0x80 | (cp & 0x3F)); return 2; }
  if (cp < 0x10000) {
    o[0] = (unsigned char)(0xE0 | (cp >> 12)); o[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
    o[2] = (unsigned char)(0x80 | (cp & 0x3F));
    return 3;
  }
  o[0] = (unsigned char)(0xF0 | ((cp >> 18) & 0x07)); o[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
  o[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F)); o[3] = (unsigned char)(0x80 | (cp & 0x3F));
  return 4;
}

char *utf8_sanitize(const char *s, size_t n, size_t *out_n) {
  char *out = tg_xmalloc(n * 3 + 1), *o = out;   /* worst case: every byte -> U+FFFD */
  for (size_t i = 0; i < n;) {
    size_t adv;
    uint32_t cp = utf8_decode(s + i, n - i, &adv);
    /* re-encoding canonicalizes overlong forms, as llama.cpp's decode/encode does */
    if ((cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) cp = UCP_REPLACEMENT;
    o += utf8_encode(cp, o);
    i += adv;
  }
  *o = 0;
  *out_n = (size_t)(o - out);
  return out;
}

size_t utf8_complete_prefix(const char *str, size_t n) {
  const unsigned char *s = (const unsigned char *)str;
  /* look back at most 3 bytes for a lead byte whose sequence runs past n */
  for (size_t back = 1; back <= 3 && back <= n; back++) {
    unsigned char c = s[n - back];
    if ((c & 0xC0) == 0x80) continue;           /* continuation: keep looking */
    if (c < 0xC0) return n;                      /* ASCII: complete */
    size_t need = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
    if (c >= 0xF8) return n;                     /* never valid: release */
    return need > back ? n - back : n;
  }
  return n;
}

/* GPT-2's table: bytes printable in Latin-1 stand for themselves; the other
 * 68 (0x00-0x20, 0x7F-0xA0, 0xAD) map in order to U+0100.. */
static bool gpt2_self(unsigned b) { return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE); }

int gpt2_byte_to_utf8(unsigned char b, char *out) {
  uint32_t cp = gpt2_self(b) ? b : b <= 0x20 ? 256u + b : b == 0xAD ? 256u + 67 : 256u + 33 + (b - 0x7Fu);
  return utf8_encode(cp, out);
}

int gpt2_cp_to_byte(uint32_t cp) {
  if (cp < 256) return gpt2_self(cp) ? (int)cp : -1;
  if (cp <= 256 + 32) return (int)(cp - 256);
  if (cp <= 256 + 66) return (int)(cp - 256 - 33 + 0x7F);
  if (cp == 256 + 67) return 0xAD;
  return -1;
}

/* ---- classes: one PCRE2 match per code point, memoized for the BMP and the
 * first supplementary plane (racing threads store the same value) */
const char UCP_SPACE_CLASS[] = "\\t\\n\\x0B\\f\\r \\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}"
                               "\\x{202F}\\x{205F}\\x{3000}";

bool ucp_is_space(uint32_t cp) {
  return (cp >= 0x09 && cp <= 0x0D) || cp == 0x20 || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
         (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F ||
         cp == 0x3000;
}

static pcre2_code *class_re;
static pthread_once_t class_once = PTHREAD_ONCE_INIT;
static void class_init(void) {
  int err;
  PCRE2_SIZE off;
  class_re = pcre2_compile((PCRE2_SPTR) "(\\p{L})|(\\p{N})|(\\p{P})|(\\p{S})|(\\p{M})|([\\p{Cc}\\p{Cf}\\p{Co}\\p{Cs}])",
                           PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_UCP | PCRE2_ANCHORED, &err, &off, NULL);
}

#define CLASS_MEMO 0x20000
static _Atomic uint8_t class_memo[CLASS_MEMO];   /* flags | 0x80 once known */

static unsigned class_compute(uint32_t cp) {
  pthread_once(&class_once, class_init);
  unsigned fl = ucp_is_space(cp) ? UCP_SPACE : 0;
  if (!class_re || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return fl;
  char buf[4];
  int n = utf8_encode(cp, buf);
  pcre2_match_data *md = pcre2_match_data_create_from_pattern(class_re, NULL);
  int rc = pcre2_match(class_re, (PCRE2_SPTR)buf, (PCRE2_SIZE)n, 0, 0, md, NULL);
  if (rc > 1) {
    static const unsigned bit[] = { UCP_LETTER, UCP_NUMBER, UCP_PUNCT, UCP_SYMBOL, UCP_MARK, UCP_CONTROL };
    PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
    for (int g = 1; g < rc; g++)
      if (ov[2 * g] != PCRE2_UNSET) fl |= bit[g - 1];
  }
  pcre2_match_data_free(md);
  return fl;
}

unsigned ucp_class(uint32_t cp) {
  if (cp >= CLASS_MEMO) return class_compute(cp);
  uint8_t m = atomic_load_explicit(&class_memo[cp], memory_order_relaxed);
  if (m & 0x80) return m & 0x7F;
  unsigned fl = class_compute(cp);
  atomic_store_explicit(&class_memo[cp], (uint8_t)(fl | 0x80), memory_order_relaxed);
  return fl;
}

static locale_t utf8_locale;
static pthread_once_t locale_once = PTHREAD_ONCE_INIT;
static void locale_init(void) {
  utf8_locale = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0);
  if (!utf8_locale) utf8_locale = newlocale(LC_CTYPE_MASK, "C.utf8", (locale_t)0);
}

uint32_t ucp_tolower(uint32_t cp) {
  if (cp < 0x80) return cp >= 'A' && cp <= 'Z' ? cp + 32 : cp;
  pthread_once(&locale_once, locale_init);
  if (!utf8_locale) return cp;
  return (uint32_t)towlower_l((wint_t)cp, utf8_locale);
}

uint32_t ucp_nfd_first(uint32_t cp) {
  if (cp < 0xC0) return cp;
  if (cp >= 0xAC00 && cp <= 0xD7A3) return 0x1100 + (cp - 0xAC00) / 588;   /* Hangul: leading jamo */
  int lo = 0, hi = tg_nfd_first_n - 1;
  while (lo <= hi) {
    int mid = (lo + hi) / 2;
    if (tg_nfd_first[mid][0] == cp) return tg_nfd_first[mid][1];
    if (tg_nfd_first[mid][0] < cp) lo = mid + 1; else hi = mid - 1;
  }
  return cp;
}
