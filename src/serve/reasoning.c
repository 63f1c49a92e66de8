/* reasoning.c: the reasoning block at the start of a reply (see
 * chat_msg.h). The tag pairs are those llama.cpp's chat parsers know:
 * DeepSeek R1, QwQ, Qwen3, Granite, MiniMax, Kimi: <think>; Command R7B:
 * <|START_THINKING|>; Magistral: [THINK]; Seed-OSS: <seed:think>;
 * Apertus: <|inner_prefix|>. */
#include <string.h>
#include "serve/chat_msg.h"

static const char *const tags[][2] = {
  { "<think>", "</think>" },
  { "<|START_THINKING|>", "<|END_THINKING|>" },
  { "[THINK]", "[/THINK]" },
  { "<seed:think>", "</seed:think>" },
  { "<|inner_prefix|>", "<|inner_suffix|>" },
};
#define N_TAGS (int)(sizeof tags / sizeof *tags)

static bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

static const char *find(const char *p, const char *end, const char *lit) {
  size_t n = strlen(lit);
  for (; (size_t)(end - p) >= n; p++)
    if (*p == *lit && memcmp(p, lit, n) == 0) return p;
  return NULL;
}

/* Appends [p, e) trimmed of white space at both ends. */
static void put_trimmed(strbuf *b, const char *p, const char *e) {
  while (p < e && is_ws(*p)) p++;
  while (e > p && is_ws(e[-1])) e--;
  sb_append(b, p, (size_t)(e - p));
}

/* The reasoning of an open block starting at p; tag is the pair's index,
 * or -1 when the prompt opened the block (any closing tag ends it). */
static size_t open_block(const char *text, const char *p, const char *end, int tag, bool final, strbuf *reasoning) {
  const char *close = NULL;
  size_t close_len = 0;
  for (int i = 0; i < N_TAGS; i++) {
    if (tag >= 0 && i != tag) continue;
    const char *c = find(p, end, tags[i][1]);
    if (c && (!close || c < close)) { close = c; close_len = strlen(tags[i][1]); }
  }
  if (close) {
    put_trimmed(reasoning, p, close);
    return (size_t)(close + close_len - text);
  }
  if (final) { put_trimmed(reasoning, p, end); return (size_t)(end - text); }
  /* hold back what may be the start of the closing tag */
  size_t hold = 0;
  for (int i = 0; i < N_TAGS; i++) {
    if (tag >= 0 && i != tag) continue;
    size_t n = strlen(tags[i][1]), have = (size_t)(end - p);
    for (size_t k = n - 1 < have ? n - 1 : have; k > hold; k--)
      if (memcmp(end - k, tags[i][1], k) == 0) { hold = k; break; }
  }
  put_trimmed(reasoning, p, end - hold);   /* the trailing white space waits too */
  return (size_t)-1;
}

size_t serve_reasoning_split(const char *text, size_t len, bool open, bool final, strbuf *reasoning) {
  const char *end = text + len, *p = text;
  if (open) return open_block(text, p, end, -1, final, reasoning);
  while (p < end && is_ws(*p)) p++;
  for (int i = 0; i < N_TAGS; i++) {
    size_t n = strlen(tags[i][0]), have = (size_t)(end - p);
    if (have >= n && memcmp(p, tags[i][0], n) == 0) return open_block(text, p + n, end, i, final, reasoning);
    if (!final && have < n && memcmp(p, tags[i][0], have) == 0) return (size_t)-1;   /* may become the tag */
  }
  return 0;
}

bool serve_reasoning_opened(const char *prompt) {
  size_t n = strlen(prompt);
  while (n && is_ws(prompt[n - 1])) n--;
  for (int i = 0; i < N_TAGS; i++) {
    size_t k = strlen(tags[i][0]);
    if (n >= k && memcmp(prompt + n - k, tags[i][0], k) == 0) return true;
  }
  return false;
}

int serve_reasoning_format_parse(const char *name) {
  static const char *const names[] = { "auto", "none", "deepseek", "deepseek-legacy" };
  for (int i = 0; i < 4; i++)
    if (!strcmp(name, names[i])) return i;
  return -1;
}
