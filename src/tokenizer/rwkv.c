/* rwkv.c: RWKV World's tokenizer (tokenizer.ggml.model "rwkv"), as
 * llama.cpp's llm_tokenizer_rwkv: each token is a byte string written in
 * Python's bytes-repr escapes (\t \n \r \xNN, \ before any other byte);
 * encoding takes the longest token at each position of the raw bytes. */
#include "tokenizer/byte_trie.h"
#include "tokenizer/tokenizer.h"
#include "util/util.h"

struct rwkv_model {
  byte_trie tokens;          /* unescaped text -> id (a repeated text: the last id) */
};

size_t rwkv_unescape(const char *s, size_t n, char *out) {
  size_t m = 0;
  bool escaping = false;
  int hex_left = 0;
  uint8_t acc = 0;
  for (size_t i = 0; i < n; i++) {
    signed char c = (signed char)s[i];
    if (hex_left) {   /* llama.cpp's digit rule: lowercase a-f, anything else as c - '0' */
      uint8_t v = (uint8_t)(c >= 'a' ? c - 'a' + 10 : c - '0');
      acc = (uint8_t)((acc << 4) + v);
      if (--hex_left == 0) { out[m++] = (char)acc; acc = 0; }
    } else if (escaping) {
      if (c == 'x') hex_left = 2;
      else out[m++] = c == 't' ? '\t' : c == 'n' ? '\n' : c == 'r' ? '\r' : (char)c;
      escaping = false;
    } else if (c == '\\') {
      escaping = true;
    } else {
      out[m++] = (char)c;
    }
  }
  return m;
}

void rwkv_free(struct rwkv_model *m) {
  if (!m) return;
  byte_trie_free(&m->tokens);
  free(m);
}

void rwkv_build(tg_tokenizer *t) {
  struct rwkv_model *m = t->rwkv = tg_xcalloc(1, sizeof *m);
  byte_trie_init(&m->tokens);
  char *buf = tg_xmalloc((size_t)t->max_token_len + 1);
  for (int id = 0; id < t->n_vocab; id++) {
    size_t n = rwkv_unescape(t->text[id], t->text_len[id], buf);
    byte_trie_insert(&m->tokens, buf, n, id);
  }
  free(buf);
  for (int b = 0; b < 256; b++) {
    int node = byte_trie_child(&m->tokens, 0, (unsigned char)b);
    t->byte_token[b] = node < 0 ? -1 : byte_trie_value(&m->tokens, node);
  }
}

/* llama.cpp pushes the unknown id for a byte that starts no token (-1 when
 * there is none) and never advances past a byte that starts tokens without
 * being one: both refused here. */
int rwkv_check(const tg_tokenizer *t) {
  for (int b = 0; b < 256; b++) {
    int node = byte_trie_child(&t->rwkv->tokens, 0, (unsigned char)b);
    if (node >= 0 && byte_trie_value(&t->rwkv->tokens, node) < 0)
      return tg_seterr("tokenizer: rwkv vocabulary has tokens starting with byte 0x%02X but not that byte alone", b);
    if (node < 0 && t->unk < 0)
      return tg_seterr("tokenizer: rwkv vocabulary has no token for byte 0x%02X and no unknown token", b);
  }
  return 0;
}

void rwkv_encode(const tg_tokenizer *t, const char *s, size_t n, ids_vec *out) {
  const byte_trie *tr = &t->rwkv->tokens;
  for (size_t pos = 0; pos < n;) {
    int node = byte_trie_child(tr, 0, (unsigned char)s[pos]);
    if (node < 0) {
      VEC_PUSH(*out, t->unk);
      pos++;
      continue;
    }
    int32_t id = -1;
    size_t end = pos + 1;
    for (size_t i = pos; node >= 0;) {
      if (byte_trie_value(tr, node) >= 0) { id = byte_trie_value(tr, node); end = i + 1; }
      if (++i >= n) break;
      node = byte_trie_child(tr, node, (unsigned char)s[i]);
    }
    VEC_PUSH(*out, id);
    pos = end;
  }
}
