/* ugm_charsmap.c: see ugm_charsmap.h. The XCDA layout (Kanda 2018, as
 * darts-clone packs it): per entry, BASE in bits 10-30 (shifted left by 8
 * when bit 9 is set), LCHECK (the byte leading here) in bits 0-7 with bit 31
 * set on value entries, LEAF in bit 8; a leaf's BASE leads to the entry
 * whose low 31 bits index the replacement. */
#include "tokenizer/ugm_charsmap.h"
#include <stdbool.h>
#include <string.h>
#include "util/util.h"

#define CHARSMAP_KEY "tokenizer.ggml.precompiled_charsmap"

int ugm_charsmap_load(ugm_charsmap *m, const gguf_file *f) {
  *m = (ugm_charsmap){ 0 };
  const gguf_kv *kv = gguf_find(f, CHARSMAP_KEY);
  if (!kv) return 0;
  if (kv->type != GGUF_ARRAY || (kv->arr_type != GGUF_U8 && kv->arr_type != GGUF_I8))
    return tg_seterr("tokenizer: %s is not an array of bytes", CHARSMAP_KEY);
  const unsigned char *p = kv->arr_data;
  uint64_t n = kv->arr_n;
  if (n < 4) return tg_seterr("tokenizer: %s of %llu bytes has no size header", CHARSMAP_KEY, (unsigned long long)n);
  uint32_t blob = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
  if ((uint64_t)blob + 4 >= n)
    return tg_seterr("tokenizer: %s: its array of %u bytes does not fit in %llu bytes with the replacements",
                     CHARSMAP_KEY, blob, (unsigned long long)n);
  m->n_xcda = blob / 4;
  m->xcda = tg_xmalloc((m->n_xcda ? m->n_xcda : 1) * sizeof *m->xcda);
  for (size_t i = 0; i < m->n_xcda; i++) {
    const unsigned char *q = p + 4 + 4 * i;
    m->xcda[i] = (uint32_t)q[0] | (uint32_t)q[1] << 8 | (uint32_t)q[2] << 16 | (uint32_t)q[3] << 24;
  }
  m->n_repl = (size_t)(n - 4 - blob);
  m->repl = tg_xmalloc(m->n_repl);
  memcpy(m->repl, p + 4 + blob, m->n_repl);
  return 0;
}

void ugm_charsmap_free(ugm_charsmap *m) {
  free(m->xcda);
  free(m->repl);
  *m = (ugm_charsmap){ 0 };
}

static uint32_t xcda_base(uint32_t e) { return (e >> 10) << ((e & (1u << 9)) >> 6); }
static uint32_t xcda_lcheck(uint32_t e) { return e & ((1u << 31) | 0xFFu); }
static int xcda_oob(const ugm_charsmap *m, size_t i) {
  return tg_seterr("tokenizer: malformed %s: entry %zu beyond its %zu", CHARSMAP_KEY, i, m->n_xcda);
}

int64_t ugm_charsmap_match(const ugm_charsmap *m, const char *s, size_t n, const char **repl, size_t *repl_n) {
  if (!m->n_xcda) return 0;
  size_t best = 0, best_off = 0;
  size_t node = xcda_base(m->xcda[0]);
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (!c) break;
    node ^= c;
    if (node >= m->n_xcda) return xcda_oob(m, node);
    if (xcda_lcheck(m->xcda[node]) != c) break;
    bool leaf = (m->xcda[node] >> 8) & 1;
    node ^= xcda_base(m->xcda[node]);
    if (leaf) {
      if (node >= m->n_xcda) return xcda_oob(m, node);
      best = i + 1;
      best_off = m->xcda[node] & ((1u << 31) - 1);
    }
  }
  if (!best) return 0;
  if (best_off >= m->n_repl)
    return tg_seterr("tokenizer: malformed %s: replacement at %zu beyond its %zu bytes", CHARSMAP_KEY, best_off,
                     m->n_repl);
  const char *r = m->repl + best_off, *end = memchr(r, 0, m->n_repl - best_off);
  if (!end) return tg_seterr("tokenizer: malformed %s: unterminated replacement at %zu", CHARSMAP_KEY, best_off);
  *repl = r;
  *repl_n = (size_t)(end - r);
  return (int64_t)best;
}
