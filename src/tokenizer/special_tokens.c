/* special_tokens.c: what llama.cpp infers about special tokens beyond the
 * metadata: roles (EOT, EOM, FIM) and the control attribute from well-known
 * token texts, unused control tokens, the end-of-generation set, the
 * longest-first list special-token parsing walks, and per-model strip
 * attributes. */
#include <string.h>
#include "tokenizer/tokenizer.h"
#include "util/util.h"

/* The first bytes the texts of lists (NULL-ended) start with: a token
 * whose first byte is none of them (nearly all of a 150k vocabulary) is
 * turned away without comparing it with each text. */
static void first_bytes(bool *first, const char *const *const *lists) {
  for (; *lists; lists++)
    for (const char *const *t = *lists; *t; t++) first[(unsigned char)(*t)[0]] = true;
}

static bool text_in(const char *s, const char *const *list) {
  for (; *list; list++)
    if (!strcmp(s, *list)) return true;
  return false;
}

static void mark_control(tg_tokenizer *t, int id) { t->attr[id] |= TOK_ATTR_CONTROL; }

/* Finds special tokens by their text where the metadata does not say, as
 * llama.cpp does, and builds the end-of-generation set. */
void special_tokens_detect(tg_tokenizer *t) {
  static const char *const eot_texts[] = { "<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>",
    "<|end_of_text|>", "<EOT>", "_<EOT>", "[EOT]", "<｜end▁of▁sentence｜>", "<end_of_utterance>", NULL };
  static const char *const eom_texts[] = { "<|eom_id|>", NULL };
  static const char *const fim_pre_texts[] = { "<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<｜fim▁begin｜>",
    "<PRE>", "▁<PRE>", "<|code_prefix|>", "<|prefix|>", NULL };
  static const char *const fim_suf_texts[] = { "<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>", "<｜fim▁hole｜>",
    "<SUF>", "▁<SUF>", "<|code_suffix|>", "<|suffix|>", NULL };
  static const char *const fim_mid_texts[] = { "<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<｜fim▁end｜>",
    "<MID>", "▁<MID>", "<|code_middle|>", "<|middle|>", NULL };
  static const char *const fim_pad_texts[] = { "<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]", NULL };
  static const char *const fim_rep_texts[] = { "<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>", NULL };
  static const char *const fim_sep_texts[] = { "<|file_sep|>", NULL };
  static const char *const eog_texts[] = { "<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>",
    "<|flush|>", "<|calls|>", "<end_of_turn>", "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]",
    "[EOS]", "<|end_of_text|>", "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>",
    "<｜end▁of▁sentence｜>", "[e~[", NULL };
  struct { int32_t *id; const char *const *texts; } finds[] = {
    { &t->eot, eot_texts }, { &t->eom, eom_texts }, { &t->fim_pre, fim_pre_texts }, { &t->fim_suf, fim_suf_texts },
    { &t->fim_mid, fim_mid_texts }, { &t->fim_pad, fim_pad_texts },
    { &t->fim_rep, fim_rep_texts }, { &t->fim_sep, fim_sep_texts },
  };
  static const char *const harmony_user[] = { "<|channel|>", "<|message|>", "<|start|>", "<|constrain|>", NULL };
  bool first[256] = { false };
  first_bytes(first, (const char *const *const[]){ eot_texts, eom_texts, fim_pre_texts, fim_suf_texts, fim_mid_texts, fim_pad_texts,
                                                   fim_rep_texts, fim_sep_texts, eog_texts, harmony_user, NULL });
  for (size_t k = 0; k < sizeof finds / sizeof finds[0]; k++) {
    if (*finds[k].id >= 0) continue;
    for (int i = 0; i < t->n_vocab; i++)
      if (first[(unsigned char)t->text[i][0]] && text_in(t->text[i], finds[k].texts)) { *finds[k].id = i; mark_control(t, i); break; }
  }
  /* control tokens named "unused..." are unused */
  for (int i = 0; i < t->n_vocab; i++)
    if ((t->attr[i] & TOK_ATTR_CONTROL) && strstr(t->text[i], "unused")) t->attr[i] |= TOK_ATTR_UNUSED;

  t->eog = tg_xcalloc((size_t)t->n_vocab, 1);
  int32_t fixed[] = { t->fim_pad, t->fim_rep, t->fim_sep, t->eos, t->eot, t->eom };
  for (size_t k = 0; k < sizeof fixed / sizeof fixed[0]; k++)
    if (fixed[k] >= 0) t->eog[fixed[k]] = 1;
  for (int i = 0; i < t->n_vocab; i++)
    if (first[(unsigned char)t->text[i][0]] && text_in(t->text[i], eog_texts)) { t->eog[i] = 1; mark_control(t, i); }
  /* gpt-oss: these are always rendered */
  for (int i = 0; i < t->n_vocab; i++)
    if (first[(unsigned char)t->text[i][0]] && text_in(t->text[i], harmony_user)) t->attr[i] = TOK_ATTR_USER_DEFINED;

  /* o200k_harmony / solar-open: <|end|> is not an end of generation when
   * <|return|> and <|call|> (or <|calls|> and <|flush|>) are; gemma4 and
   * paddleocr: </s> is not when <|tool_response> is */
  int32_t ret = strmap_get(&t->ids, "<|return|>", 10), call = strmap_get(&t->ids, "<|call|>", 8);
  int32_t calls = strmap_get(&t->ids, "<|calls|>", 9), flush = strmap_get(&t->ids, "<|flush|>", 9);
  int32_t end = strmap_get(&t->ids, "<|end|>", 7);
  bool has_call = (call >= 0 && t->eog[call]) || (calls >= 0 && t->eog[calls]);
  bool has_ret = ret >= 0 && t->eog[ret], has_flush = flush >= 0 && t->eog[flush];
  if (end >= 0 && t->eog[end] && ((has_ret && has_call) || (has_call && has_flush))) {
    t->eog[end] = 0;
    t->attr[end] = TOK_ATTR_USER_DEFINED;
  }
  int32_t tool = strmap_get(&t->ids, "<|tool_response>", 16), s_end = strmap_get(&t->ids, "</s>", 4);
  if (tool >= 0 && t->eog[tool] && s_end >= 0 && t->eog[s_end]) {
    t->eog[s_end] = 0;
    t->attr[s_end] = TOK_ATTR_NORMAL;
  }
}

static int by_len_desc(const void *a, const void *b, void *ctx) {
  const tg_tokenizer *t = ctx;
  int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  uint32_t lx = t->text_len[x], ly = t->text_len[y];
  if (lx != ly) return lx > ly ? -1 : 1;
  return x < y ? -1 : x > y;
}

void special_tokens_cache(tg_tokenizer *t) {
  t->specials = tg_xmalloc((size_t)t->n_vocab * sizeof *t->specials);
  for (int i = 0; i < t->n_vocab; i++)
    if (t->attr[i] & (TOK_ATTR_CONTROL | TOK_ATTR_USER_DEFINED | TOK_ATTR_UNKNOWN)) t->specials[t->n_specials++] = i;
  /* longest first, so a special containing another wins; ties by id */
  qsort_r(t->specials, (size_t)t->n_specials, sizeof *t->specials, by_len_desc, t);
}

static bool contains_any(const char *s, const char *const *subs) {
  if (!s) return false;
  for (; *subs; subs++)
    if (strstr(s, *subs)) return true;
  return false;
}

/* llama.cpp's per-model strip attributes (the GGUF has no per-token ones). */
void special_tokens_strip_attrs(tg_tokenizer *t, const gguf_file *f) {
  char *arch = gguf_get_str(f, "general.architecture");
  char lname[256] = "";
  if (t->name) {
    size_t i = 0;
    for (; t->name[i] && i + 1 < sizeof lname; i++)
      lname[i] = (char)(t->name[i] >= 'A' && t->name[i] <= 'Z' ? t->name[i] + 32 : t->name[i]);
    lname[i] = 0;
  }
  static const char *const jina[] = { "jina-v2-de", "jina-v2-es", "jina-v2-code", NULL };
  static const char *const arches[] = { "nomic-bert-moe", "jina-bert-v3", NULL };
  static const char *const phi3[] = { "phi-3", "phi3", NULL }, *const mbert[] = { "modern-bert", NULL };
  int32_t id;
  if (contains_any(t->pre_name, jina) || contains_any(arch, arches)) {
    if ((id = strmap_get(&t->ids, "<mask>", 6)) >= 0) t->attr[id] |= TOK_ATTR_LSTRIP;
  } else if (contains_any(lname, phi3)) {
    for (int i = 0; i < t->n_specials; i++) t->attr[t->specials[i]] |= TOK_ATTR_RSTRIP;
    if ((id = strmap_get(&t->ids, "</s>", 4)) >= 0) t->attr[id] |= TOK_ATTR_RSTRIP;
    static const char *const keep[] = { "<unk>", "<s>", "<|endoftext|>" };
    for (int k = 0; k < 3; k++)
      if ((id = strmap_get(&t->ids, keep[k], strlen(keep[k]))) >= 0) t->attr[id] &= (uint16_t)~TOK_ATTR_RSTRIP;
  } else if (contains_any(lname, mbert)) {
    if ((id = strmap_get(&t->ids, "[MASK]", 6)) >= 0) t->attr[id] |= TOK_ATTR_LSTRIP;
  }
  free(arch);
}
