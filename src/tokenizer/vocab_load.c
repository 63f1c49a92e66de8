/* vocab_load.c: a tokenizer from tokenizer.ggml.* GGUF metadata, with
 * llama.cpp's defaults per model type and pre-tokenizer and its special-id
 * fallbacks (special_tokens.c infers the rest from token texts). */
#include <string.h>
#include "grammar/grammar.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"
#include "util/util.h"

#define KEY(k) "tokenizer.ggml." k

void tg_tokenizer_free(tg_tokenizer *t) {
  if (!t) return;
  for (int i = 0; i < t->n_vocab; i++) {
    if (t->text) free(t->text[i]);
    if (t->piece) free(t->piece[i]);
  }
  free(t->text); free(t->text_len); free(t->score); free(t->attr); free(t->eog);
  free(t->piece); free(t->piece_len); free(t->specials); free(t->merge_keys);
  for (int i = 0; i < t->marked_texts.n; i++) free(t->marked_texts.v[i]);
  VEC_FREE(t->marked_texts);
  strmap_free(&t->ids);
  strmap_free(&t->merges);
  pairmap_free(&t->pair_ranks);
  pretok_free(t->pre);
  free(t->model); free(t->pre_name); free(t->name);
  token_trie_free(t->grammar_trie);
  ugm_free(t->ugm);
  rwkv_free(t->rwkv);
  plamo2_free(t->plamo2);
  free(t);
}

tg_tokenizer *tg_tokenizer_load(const char *path) {
  if (!path) TG_FAIL("tg_tokenizer_load: NULL path");
  gguf_file *f = gguf_open(path);
  if (!f) return NULL;
  tg_tokenizer *t = tokenizer_from_gguf(f);
  if (!t) {
    char msg[512];
    snprintf(msg, sizeof msg, "%s", tg_error());
    tg_seterr("%s: %s", path, msg);
  }
  gguf_close(f);
  return t;
}

static tg_tokenizer *fail(tg_tokenizer *t) {
  tg_tokenizer_free(t);
  return NULL;
}

/* Per model type: kind, default special ids and flags (llama.cpp's). */
static int set_model_defaults(tg_tokenizer *t) {
  t->eot = t->eom = t->sep = t->pad = t->mask = -1;
  t->fim_pre = t->fim_suf = t->fim_mid = t->fim_pad = t->fim_rep = t->fim_sep = -1;
  t->lowercase = true;
  if (!strcmp(t->model, "llama")) {
    t->kind = TOK_SPM;
    t->bos = 1; t->eos = 2; t->unk = 0;
    t->add_space_prefix = true; t->add_bos = true;
  } else if (!strcmp(t->model, "bert")) {
    t->kind = TOK_WPM;
    t->bos = 101; t->eos = -1; t->unk = 100; t->sep = 102; t->pad = 0; t->mask = 103;
    t->add_bos = true; t->add_sep = true; t->clean_spaces = true;
  } else if (!strcmp(t->model, "gpt2") || !strcmp(t->model, "whitespace") || !strcmp(t->model, "hybriddna")) {
    /* whitespace (jina-embeddings-v2-base-zh): BPE on the text between
     * whitespace runs, which are dropped (bpe.c); hybriddna: DNA k-mers
     * between <dna> tags (dna_kmers.c) */
    t->kind = TOK_BPE;
    t->bos = t->eos = 11; t->unk = -1;
    t->clean_spaces = true;
    t->drop_spaces = !strcmp(t->model, "whitespace");
    t->dna = !strcmp(t->model, "hybriddna");
  } else if (!strcmp(t->model, "gemma4")) {
    /* BPE with merges over SentencePiece-style text; every special id from
     * the file; the pre-tokenizer is always gemma4's, whatever .pre says */
    t->kind = TOK_BPE;
    t->bos = t->eos = t->unk = -1;
    t->clean_spaces = true;
    free(t->pre_name);
    t->pre_name = tg_xstrdup("gemma4");
  } else if (!strcmp(t->model, "t5")) {
    /* unigram; the space prefix and merged spaces are the normalizer's (ugm.c) */
    t->kind = TOK_UGM;
    t->bos = -1; t->eos = 1; t->unk = 2; t->pad = 0;
    t->add_eos = true;
  } else if (!strcmp(t->model, "rwkv")) {
    t->kind = TOK_RWKV;
    t->bos = t->eos = t->unk = -1;
  } else if (!strcmp(t->model, "plamo2")) {
    t->kind = TOK_PLAMO2;
    t->bos = 1; t->eos = 2; t->unk = 0; t->pad = 3;
  } else {
    return tg_seterr("tokenizer: unsupported tokenizer.ggml.model '%s' (tg knows llama, gpt2, whitespace, hybriddna, gemma4, bert, t5, rwkv, plamo2)", t->model);
  }
  return 0;
}

static int load_tokens(tg_tokenizer *t, const gguf_file *f) {
  const gguf_kv *toks = gguf_find(f, KEY("tokens"));
  if (!toks) return tg_seterr("tokenizer: no tokenizer.ggml.tokens array");
  if (toks->type != GGUF_ARRAY || toks->arr_type != GGUF_STRING)
    return tg_seterr("tokenizer: tokenizer.ggml.tokens is not an array of strings");
  if (toks->arr_n == 0 || toks->arr_n > INT32_MAX) return tg_seterr("tokenizer: tokenizer.ggml.tokens has %llu entries",
                                                                    (unsigned long long)toks->arr_n);
  int n = (int)toks->arr_n;
  const gguf_kv *scores = gguf_find(f, KEY("scores")), *types = gguf_find(f, KEY("token_type"));
  if (scores && (scores->type != GGUF_ARRAY || (scores->arr_type != GGUF_F32 && scores->arr_type != GGUF_I32)))
    return tg_seterr("tokenizer: tokenizer.ggml.scores is not an array of f32 or i32");
  if (scores && scores->arr_n < toks->arr_n)
    return tg_seterr("tokenizer: %llu scores for %d tokens", (unsigned long long)scores->arr_n, n);
  if (types && (types->type != GGUF_ARRAY || types->arr_type != GGUF_I32))
    return tg_seterr("tokenizer: tokenizer.ggml.token_type is not an array of i32");
  if (types && types->arr_n < toks->arr_n)
    return tg_seterr("tokenizer: %llu token types for %d tokens", (unsigned long long)types->arr_n, n);

  t->n_vocab = n;
  t->text = tg_xcalloc((size_t)n, sizeof *t->text);
  t->text_len = tg_xcalloc((size_t)n, sizeof *t->text_len);
  t->score = tg_xcalloc((size_t)n, sizeof *t->score);
  t->attr = tg_xcalloc((size_t)n, sizeof *t->attr);
  strmap_init(&t->ids, (size_t)n);
  enum { AHEAD = 16 };   /* tokens whose slots are being loaded */
  for (int i = 0; i < AHEAD && i < n; i++) strmap_prefetch(&t->ids, toks->strs[i], (size_t)toks->str_lens[i]);
  for (int i = 0; i < n; i++) {
    if (i + AHEAD < n) strmap_prefetch(&t->ids, toks->strs[i + AHEAD], (size_t)toks->str_lens[i + AHEAD]);
    size_t len = (size_t)toks->str_lens[i];
    char *s;
    if (len == 0) {   /* llama.cpp names empty tokens so they stay distinct */
      char buf[32];
      len = (size_t)snprintf(buf, sizeof buf, "[EMPTY_%d]", i);
      s = tg_xstrdup(buf);
    } else {
      s = tg_xmalloc(len + 1);
      memcpy(s, toks->strs[i], len);
      s[len] = 0;
    }
    t->text[i] = s;
    t->text_len[i] = (uint32_t)len;
    int32_t old;
    if (!strmap_put(&t->ids, s, len, i, &old))
      return tg_seterr("tokenizer: duplicate token '%s' (ids %d and %d)", s, old, i);
    if ((int)len > t->max_token_len) t->max_token_len = (int)len;
    t->score[i] = scores ? (float)gguf_arr_f64(scores, (uint64_t)i) : 0.0f;
    uint16_t a = TOK_ATTR_NORMAL;
    if (types) {
      static const uint16_t by_type[7] = { 0, TOK_ATTR_NORMAL, TOK_ATTR_UNKNOWN, TOK_ATTR_CONTROL,
                                           TOK_ATTR_USER_DEFINED, TOK_ATTR_UNUSED, TOK_ATTR_BYTE };
      int64_t ty = gguf_arr_int(types, (uint64_t)i);
      a = ty >= 0 && ty < 7 ? by_type[ty] : 0;
    }
    t->attr[i] = a;
  }
  return 0;
}

/* Merges "first second" (split at the first space after the first byte) ->
 * rank. A merge of two vocabulary tokens goes to the id-pair map with the id
 * of its result; any other to a string map keyed "first\xFFsecond" (0xFF
 * never occurs in UTF-8). A repeated pair keeps its first rank. */
static int load_merges(tg_tokenizer *t, const gguf_file *f, bool optional) {
  const gguf_kv *m = gguf_find(f, KEY("merges"));
  if (!m && optional) return 0;   /* nothing merges: words that are tokens, else bytes */
  if (!m) return tg_seterr("tokenizer: %s tokenizer without tokenizer.ggml.merges", t->model);
  if (m->type != GGUF_ARRAY || m->arr_type != GGUF_STRING)
    return tg_seterr("tokenizer: tokenizer.ggml.merges is not an array of strings");
  if (m->arr_n > INT32_MAX) return tg_seterr("tokenizer: too many merges");
  size_t total = 0, longest = 0;
  for (uint64_t i = 0; i < m->arr_n; i++) {
    total += (size_t)m->str_lens[i];
    if ((size_t)m->str_lens[i] > longest) longest = (size_t)m->str_lens[i];
  }
  t->merge_keys = tg_xmalloc(total + 1);
  pairmap_init(&t->pair_ranks, (size_t)m->arr_n);
  char *k = t->merge_keys, *joined = tg_xmalloc(longest + 1);
  for (uint64_t i = 0; i < m->arr_n; i++) {
    size_t len = (size_t)m->str_lens[i];
    const char *s = m->strs[i];
    const char *sp = len > 1 ? memchr(s + 1, ' ', len - 1) : NULL;
    if (!sp) {
      free(joined);
      return tg_seterr("tokenizer: tokenizer.ggml.merges[%llu] '%.*s' is not two tokens separated by a space",
                       (unsigned long long)i, (int)(len < 64 ? len : 64), s);
    }
    size_t fl = (size_t)(sp - s), sl = len - fl - 1;
    int32_t a = strmap_get(&t->ids, s, fl), b = strmap_get(&t->ids, sp + 1, sl);
    if (a >= 0 && b >= 0) {
      memcpy(joined, s, fl);
      memcpy(joined + fl, sp + 1, sl);
      pairmap_put(&t->pair_ranks, a, b, (int32_t)i, strmap_get(&t->ids, joined, fl + sl));
      continue;
    }
    memcpy(k, s, len);
    k[fl] = (char)0xFF;
    strmap_put(&t->merges, k, len, (int32_t)i, NULL);
    k += len;
  }
  free(joined);
  return 0;
}

/* True when every "▁" inside every token follows another "▁": then no
 * merge can join a character to a following "▁", so SPM may merge the words
 * (runs starting at such a "▁") separately with the same result. */
static bool spm_words_independent(const tg_tokenizer *t) {
  for (int i = 0; i < t->n_vocab; i++) {
    const char *s = t->text[i];
    size_t n = t->text_len[i];
    for (size_t p = 1; p + 3 <= n; p++)
      if (!memcmp(s + p, "\xE2\x96\x81", 3) && (p < 3 || memcmp(s + p - 3, "\xE2\x96\x81", 3))) return false;
  }
  return true;
}

static void set_byte_tokens(tg_tokenizer *t) {
  if (t->kind == TOK_RWKV) return;   /* rwkv_build: the single-byte tokens */
  for (int b = 0; b < 256; b++) {
    char buf[8];
    int32_t id = -1;
    if (t->kind == TOK_SPM || t->kind == TOK_UGM || t->kind == TOK_PLAMO2 || t->raw_utf8) {
      snprintf(buf, sizeof buf, "<0x%02X>", b);
      id = strmap_get(&t->ids, buf, 6);
      if (id < 0 && (t->kind == TOK_SPM || t->kind == TOK_UGM)) { buf[0] = (char)b; id = strmap_get(&t->ids, buf, 1); }
    } else {
      int n = gpt2_byte_to_utf8((unsigned char)b, buf);
      id = strmap_get(&t->ids, buf, (size_t)n);
    }
    t->byte_token[b] = id;
  }
}

static void read_special_id(tg_tokenizer *t, const gguf_file *f, const char *key, int32_t *id) {
  if (*id >= t->n_vocab) *id = -1;    /* a default out of range is disabled */
  int64_t v;
  if (gguf_get_int(f, key, &v) && v >= 0 && v < t->n_vocab) *id = (int32_t)v;
}

tg_tokenizer *tokenizer_from_gguf(const gguf_file *f) {
  tg_tokenizer *t = tg_xcalloc(1, sizeof *t);
  t->model = gguf_get_str(f, KEY("model"));
  if (!t->model) {
    tg_seterr("tokenizer: no tokenizer.ggml.model");
    return fail(t);
  }
  t->pre_name = gguf_get_str(f, KEY("pre"));
  t->name = gguf_get_str(f, "general.name");
  if (set_model_defaults(t) < 0) return fail(t);
  unsigned fl = 0;
  if (t->kind == TOK_BPE) {
    t->pre = pretok_new(t->pre_name, &fl);
    if (!t->pre) return fail(t);
    t->clean_spaces = !(fl & PRE_NO_CLEAN);
    t->ignore_merges = fl & PRE_IGNORE_MERGES;
    t->add_bos = fl & PRE_ADD_BOS;
    t->add_sep = fl & PRE_ADD_SEP;
    if (fl & PRE_NO_BOS_ID) t->bos = -1;
    t->escape_spaces = fl & PRE_ESCAPE_SPACES;
    t->raw_utf8 = fl & PRE_RAW_UTF8;
    t->newlines_whole = fl & PRE_NEWLINES_WHOLE;
    if (fl & PRE_KEEP_CASE) t->lowercase = false;
  }
  gguf_get_bool(f, KEY("add_space_prefix"), &t->add_space_prefix);
  if (load_tokens(t, f) < 0) return fail(t);
  if ((t->kind == TOK_UGM || t->kind == TOK_PLAMO2) && !gguf_find(f, KEY("scores"))) {
    tg_seterr("tokenizer: %s vocabulary without tokenizer.ggml.scores (its pieces' log probabilities)", t->model);
    return fail(t);
  }
  if (t->dna) tokenizer_unmark_kmers(t);
  if (t->kind == TOK_BPE && load_merges(t, f, fl & PRE_MERGES_OPTIONAL) < 0) return fail(t);
  set_byte_tokens(t);
  if (t->kind == TOK_SPM) t->spm_split_words = spm_words_independent(t);
  if (t->kind == TOK_UGM && ugm_build(t, f) < 0) return fail(t);
  if (t->kind == TOK_RWKV) rwkv_build(t);
  if (t->kind == TOK_PLAMO2 && plamo2_build(t) < 0) return fail(t);

  static const struct { const char *key; size_t off; } special_keys[] = {
    { KEY("bos_token_id"), offsetof(tg_tokenizer, bos) }, { KEY("eos_token_id"), offsetof(tg_tokenizer, eos) },
    { KEY("eot_token_id"), offsetof(tg_tokenizer, eot) }, { KEY("eom_token_id"), offsetof(tg_tokenizer, eom) },
    { KEY("unknown_token_id"), offsetof(tg_tokenizer, unk) }, { KEY("seperator_token_id"), offsetof(tg_tokenizer, sep) },
    { KEY("padding_token_id"), offsetof(tg_tokenizer, pad) }, { KEY("mask_token_id"), offsetof(tg_tokenizer, mask) },
    { KEY("fim_pre_token_id"), offsetof(tg_tokenizer, fim_pre) }, { KEY("fim_suf_token_id"), offsetof(tg_tokenizer, fim_suf) },
    { KEY("fim_mid_token_id"), offsetof(tg_tokenizer, fim_mid) }, { KEY("prefix_token_id"), offsetof(tg_tokenizer, fim_pre) },
    { KEY("suffix_token_id"), offsetof(tg_tokenizer, fim_suf) }, { KEY("middle_token_id"), offsetof(tg_tokenizer, fim_mid) },
    { KEY("fim_pad_token_id"), offsetof(tg_tokenizer, fim_pad) }, { KEY("fim_rep_token_id"), offsetof(tg_tokenizer, fim_rep) },
    { KEY("fim_sep_token_id"), offsetof(tg_tokenizer, fim_sep) },
  };
  for (size_t k = 0; k < sizeof special_keys / sizeof special_keys[0]; k++)
    read_special_id(t, f, special_keys[k].key, (int32_t *)((char *)t + special_keys[k].off));

  gguf_get_bool(f, KEY("add_bos_token"), &t->add_bos);
  gguf_get_bool(f, KEY("add_eos_token"), &t->add_eos);
  gguf_get_bool(f, KEY("add_sep_token"), &t->add_sep);
  if (fl & PRE_FORCE_BOS) t->add_bos = true;   /* llama.cpp's Gemma 4 workaround */
  if (t->kind == TOK_UGM && t->unk < 0) {   /* llama.cpp would emit id -1 for an unknown character */
    tg_seterr("tokenizer: t5 vocabulary without an unknown token (tokenizer.ggml.unknown_token_id)");
    return fail(t);
  }
  if (t->kind == TOK_RWKV && rwkv_check(t) < 0) return fail(t);
  bool adds = t->kind != TOK_RWKV && t->kind != TOK_PLAMO2;   /* those two never add BOS/EOS */
  if (adds && t->add_bos && t->bos < 0) { tg_seterr("tokenizer: add_bos_token is true but there is no BOS token"); return fail(t); }
  if (adds && t->add_eos && t->eos < 0) { tg_seterr("tokenizer: add_eos_token is true but there is no EOS token"); return fail(t); }
  if (t->add_sep && t->sep < 0) { tg_seterr("tokenizer: add_sep_token is true but there is no SEP token"); return fail(t); }
  gguf_get_bool(f, KEY("normalizer.lowercase"), &t->lowercase);
  t->strip_accents = t->lowercase;
  gguf_get_bool(f, KEY("normalizer.strip_accents"), &t->strip_accents);

  special_tokens_detect(t);
  special_tokens_cache(t);
  special_tokens_strip_attrs(t, f);
  tokenizer_build_pieces(t);
  return t;
}
