/* tok_golden.c: see tok_golden.h. */
#include "tok_golden.h"
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "test.h"
#include "tokenizer/tokenizer.h"

bool tok_unhex(const char *s, tok_bytes *out) {
  out->n = 0;
  if (!strcmp(s, "-")) return true;
  size_t n = strlen(s);
  if (n % 2) return false;
  for (size_t i = 0; i < n; i += 2) {
    unsigned v;
    if (sscanf(s + i, "%2x", &v) != 1) return false;
    VEC_PUSH(*out, (char)v);
  }
  return true;
}

void tok_show(const char *what, const char *s, size_t n) {
  printf("    %s: '", what);
  for (size_t i = 0; i < n && i < 200; i++) printf(s[i] >= 32 && s[i] < 127 ? "%c" : "\\x%02x", (unsigned char)s[i]);
  printf("'\n");
}

typedef struct {
  tg_tokenizer *tok;
  tok_bytes *piece[2];      /* per id: llama.cpp's token_to_piece, special false / true */
  int n_vocab;
  tok_bytes text;           /* the current case */
  bool add_special, parse_special;
  int32_t want[512];
  int n_want;
  int n_ids_ok, n_cases, n_detok_ok, n_detok;
} golden_state;

/* The pieces of ids joined (the streaming decoder's total output). */
static void joined_pieces(const golden_state *g, const int32_t *ids, int n, bool special, tok_bytes *out) {
  out->n = 0;
  for (int i = 0; i < n; i++)
    for (int k = 0; k < g->piece[special][ids[i]].n; k++) VEC_PUSH(*out, g->piece[special][ids[i]].v[k]);
}

/* Streams the expected ids: after each token, what was released so far is
 * a prefix of the joined pieces, and after the flush all of it. */
static void check_stream(golden_state *g, bool special, const char *name) {
  tok_bytes all = { 0 }, got = { 0 };
  joined_pieces(g, g->want, g->n_want, special, &all);
  tg_token_stream *s = tg_token_stream_new(g->tok, special);
  bool ok = true;
  for (int i = 0; i <= g->n_want && ok; i++) {
    size_t n;
    const char *p = i < g->n_want ? tg_token_stream_push(s, g->want[i], &n) : tg_token_stream_flush(s, &n);
    for (size_t k = 0; k < n; k++) VEC_PUSH(got, p[k]);
    ok = got.n <= all.n && !memcmp(got.v ? got.v : "", all.v ? all.v : "", (size_t)got.n);
    CHECK_MSG(ok, "%s: stream (special %d) diverges after token %d", name, special, i);
  }
  CHECK_MSG(!ok || got.n == all.n, "%s: stream (special %d) released %d of %d bytes", name, special, got.n, all.n);
  tg_token_stream_free(s);
  VEC_FREE(all);
  VEC_FREE(got);
}

static void check_case(golden_state *g, const char *name) {
  int32_t *ids;
  int n = tg_tokenize(g->tok, g->text.v ? g->text.v : "", (size_t)g->text.n, g->add_special, g->parse_special, &ids);
  bool same = n == g->n_want;
  for (int k = 0; same && k < n; k++) same = ids[k] == g->want[k];
  g->n_cases++;
  if (same) g->n_ids_ok++;
  else {
    CHECK_MSG(false, "%s: tokenize (add_special %d, parse_special %d): got %d ids, want %d", name, g->add_special,
              g->parse_special, n, g->n_want);
    tok_show("text", g->text.v, (size_t)g->text.n);
    printf("    got:");
    for (int k = 0; k < n && k < 40; k++) printf(" %d", ids[k]);
    printf("\n    want:");
    for (int k = 0; k < g->n_want && k < 40; k++) printf(" %d", g->want[k]);
    printf("\n");
  }
  free(ids);
  check_stream(g, false, name);
  check_stream(g, true, name);
}

static void check_detok(golden_state *g, bool remove_special, bool unparse, const tok_bytes *want, const char *name) {
  size_t n;
  char *s = tg_detokenize(g->tok, g->want, g->n_want, remove_special, unparse, &n);
  CHECK_OK(s);
  bool same = s && n == (size_t)want->n && !memcmp(s, want->v ? want->v : "", n);
  g->n_detok++;
  if (same) g->n_detok_ok++;
  else if (s) {
    CHECK_MSG(false, "%s: detokenize (remove_special %d, special %d) differs", name, remove_special, unparse);
    tok_show("text", g->text.v, (size_t)g->text.n);
    tok_show("got", s, n);
    tok_show("want", want->v, (size_t)want->n);
  }
  free(s);
}

void tok_check_golden(const char *name) {
  char path[256];
  snprintf(path, sizeof path, "goldens/%s.gguf", name);
  golden_state g = { 0 };
  g.tok = tg_tokenizer_load(path);
  CHECK_OK(g.tok);
  snprintf(path, sizeof path, "goldens/%s.txt", name);
  size_t len;
  char *data = test_read_file(path, &len);
  CHECK_MSG(data, "cannot read %s", path);
  if (!g.tok || !data) { tg_tokenizer_free(g.tok); free(data); return; }
  data = realloc(data, len + 1);
  data[len] = 0;
  tok_bytes tmp = { 0 };
  int n_pieces_ok = 0;
  for (char *line = strtok(data, "\n"); line; line = strtok(NULL, "\n")) {
    char hex1[4096], hex2[4096];
    int a, b, c, d, e;
    if (line[0] == '#') continue;
    if (sscanf(line, "vocab %d bos %d eos %d add_bos %d add_eos %d", &a, &b, &c, &d, &e) == 5) {
      g.n_vocab = a;
      CHECK_EQ_INT(tg_tokenizer_n_vocab(g.tok), a);
      CHECK_EQ_INT(tg_tokenizer_bos(g.tok), b);
      CHECK_EQ_INT(tg_tokenizer_eos(g.tok), c);
      CHECK_EQ_INT(tg_tokenizer_add_bos(g.tok), d);
      CHECK_EQ_INT(g.tok->add_eos, e);
      g.piece[0] = calloc((size_t)a, sizeof(tok_bytes));
      g.piece[1] = calloc((size_t)a, sizeof(tok_bytes));
    } else if (!strncmp(line, "eog", 3)) {
      uint8_t *eog = calloc((size_t)g.n_vocab, 1);
      for (char *p = line + 3, *end; (a = (int)strtol(p, &end, 10)), end != p; p = end)
        if (a >= 0 && a < g.n_vocab) eog[a] = 1;
      for (int i = 0; i < g.n_vocab; i++)
        CHECK_MSG(tg_tokenizer_is_eog(g.tok, i) == eog[i], "%s: token %d '%s' is_eog %d, llama.cpp %d", name, i,
                  tg_tokenizer_token_text(g.tok, i), tg_tokenizer_is_eog(g.tok, i), eog[i]);
      free(eog);
    } else if (sscanf(line, "piece %d %4095s %4095s", &a, hex1, hex2) == 3 && a >= 0 && a < g.n_vocab) {
      CHECK(tok_unhex(hex1, &g.piece[0][a]) && tok_unhex(hex2, &g.piece[1][a]));
      bool ok = true;
      for (int sp = 0; sp < 2; sp++) {
        char buf[256];
        int n = tg_token_to_piece(g.tok, a, sp, buf, sizeof buf);
        bool same = n == g.piece[sp][a].n && !memcmp(buf, g.piece[sp][a].v ? g.piece[sp][a].v : "", (size_t)n);
        CHECK_MSG(same, "%s: token_to_piece(%d '%s', special %d) differs", name, a, tg_tokenizer_token_text(g.tok, a), sp);
        ok = ok && same;
      }
      n_pieces_ok += ok;
    } else if (sscanf(line, "case %d %d %4095s", &a, &b, hex1) == 3) {
      g.add_special = a;
      g.parse_special = b;
      CHECK(tok_unhex(hex1, &g.text));
    } else if (!strncmp(line, "ids", 3)) {
      g.n_want = 0;
      for (char *p = line + 3, *end; (a = (int)strtol(p, &end, 10)), end != p && g.n_want < 512; p = end)
        g.want[g.n_want++] = a;
      check_case(&g, name);
    } else if (sscanf(line, "detok %d %d %4095s", &a, &b, hex1) == 3) {
      CHECK(tok_unhex(hex1, &tmp));
      check_detok(&g, a, b, &tmp, name);
    } else {
      CHECK_MSG(false, "%s: bad line '%.60s'", path, line);
    }
  }
  printf("  %s: %d/%d pieces, %d/%d tokenizations, %d/%d detokenizations match llama.cpp\n", name, n_pieces_ok,
         g.n_vocab, g.n_ids_ok, g.n_cases, g.n_detok_ok, g.n_detok);
  CHECK(g.n_cases > 100);
  for (int sp = 0; sp < 2; sp++) {
    for (int i = 0; g.piece[sp] && i < g.n_vocab; i++) VEC_FREE(g.piece[sp][i]);
    free(g.piece[sp]);
  }
  VEC_FREE(g.text);
  VEC_FREE(tmp);
  free(data);
  tg_tokenizer_free(g.tok);
}

void tok_check_roundtrip(const char *const *files, int nfiles, const char *const *alphabet, int n, uint64_t seed) {
  for (int f = 0; f < nfiles; f++) {
    tg_tokenizer *t = tg_tokenizer_load(files[f]);
    CHECK_OK(t);
    for (int r = 0; t && r < 300; r++) {
      char text[512];
      size_t len = 0;
      seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
      for (int k = 0, parts = (int)(seed >> 58); k < parts; k++) {
        seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
        const char *a = alphabet[(seed >> 33) % (uint64_t)n];
        memcpy(text + len, a, strlen(a));
        len += strlen(a);
      }
      int32_t *ids;
      int c = tg_tokenize(t, text, len, false, false, &ids);
      size_t dn;
      char *d = tg_detokenize(t, ids, c, false, false, &dn);
      CHECK_MSG(d && dn == len && !memcmp(d, text, len), "%s: '%.*s' does not round-trip", files[f], (int)len, text);
      free(d);
      free(ids);
    }
    tg_tokenizer_free(t);
  }
}
