/* special_tokens.c: what llama.cpp infers about special tokens beyond the
 * metadata: roles (EOT, EOM, FIM) and the control attribute from well-known
 * token texts, unused control tokens, the end-of-generation set, the
 * longest-first list special-token parsing walks, and per-model strip
 * attributes. */
#include <string.h>
#include "tokenizer/tokenizer.h"
#include "util/util.h"

/* The ids of list's texts (NULL-ended) in the vocabulary, looked up by
 * text (a scan of a 150k vocabulary per list costs milliseconds at every
 * load): calls fn(t, id) for each that is there; returns the lowest id, or
 * -1. */
static int32_t ids_of(tg_tokenizer *t, const char *const *list, void (*fn)(tg_tokenizer *, int32_t)) {
  int32_t lowest = -1;
  for (; *list; list++) {
    int32_t id = strmap_get(&t->ids, *list, strlen(*list));
    if (id < 0) continue;
    if (fn) fn(t, id);
    if (lowest < 0 || id < lowest) lowest = id;
  }
  return lowest;
}

static void mark_control(tg_tokenizer *t, int32_t id) { t->attr[id] |= TOK_ATTR_CONTROL; }
static void mark_eog(tg_tokenizer *t, int32_t id) { t->eog[id] = 1; mark_control(t, id); }
static void mark_user_defined(tg_tokenizer *t, int32_t id) { t->attr[id] = TOK_ATTR_USER_DEFINED; }

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
  for (size_t k = 0; k < sizeof finds / sizeof finds[0]; k++) {
    if (*finds[k].id >= 0) continue;
    int32_t id = ids_of(t, finds[k].texts, NULL);   /* the first in the vocabulary, as a scan would find it */
    if (id >= 0) *finds[k].id = id, mark_control(t, id);
  }
  /* control tokens named "unused..." are unused */
  for (int i = 0; i < t->n_vocab; i++)
    if ((t->attr[i] & TOK_ATTR_CONTROL) && strstr(t->text[i], "unused")) t->attr[i] |= TOK_ATTR_UNUSED;

  t->eog = tg_xcalloc((size_t)t->n_vocab, 1);
  int32_t fixed[] = { t->fim_pad, t->fim_rep, t->fim_sep, t->eos, t->eot, t->eom };
  for (size_t k = 0; k < sizeof fixed / sizeof fixed[0]; k++)
    if (fixed[k] >= 0) t->eog[fixed[k]] = 1;
  ids_of(t, eog_texts, mark_eog);
  ids_of(t, harmony_user, mark_user_defined);   /* gpt-oss: these are always rendered */

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
