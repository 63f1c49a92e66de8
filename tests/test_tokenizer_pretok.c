/* test_tokenizer_pretok.c: every tokenizer.ggml.pre name llama.cpp accepts
 * (and the "whitespace" tokenizer model) against llama.cpp's own ids and
 * detokenized text, from tests/goldens/tok_pretok.txt, which
 * tests/gen/gen_tok_pretok.py writes (the format is at the top of that
 * script). Each variant's vocabulary is rebuilt from a base GGUF with its
 * model and pre set, exactly as the generator gave it to llama.cpp. */
#include <stdint.h>
#include <unistd.h>
#include "test.h"
#include "tok_golden.h"
#include "io/gguf_file.h"
#include "io/gguf_writer.h"
#include "tokenizer/tokenizer.h"

typedef VEC(int32_t) id_list;

typedef struct {
  tok_bytes detok;
  bool detok_is_text;
  id_list ids;
} golden_case;         /* llama.cpp's results for one test string */

typedef struct {
  char label[272], base[64], model[64], pre[64], opts[64];
  int vocab[5];           /* n_vocab bos eos add_bos add_eos */
  int same;               /* index of the variant whose cases apply, or -1 */
  VEC(golden_case) cases;
} golden_variant;
typedef struct {
  VEC(tok_bytes) strings;
  VEC(golden_variant) v;
} goldens;

/* The variant's file: base's metadata with model and pre set, the merges
 * dropped (nomerges) or normalizer.lowercase true added (lowercase). */
static tg_tokenizer *load_variant(const char *base, const char *model, const char *pre, const char *opts) {
  char path[256], tmp[64];
  snprintf(path, sizeof path, "goldens/%s.gguf", base);
  gguf_file *f = gguf_open(path);
  CHECK_OK(f);
  if (!f) return NULL;
  gguf_writer *w = gguf_writer_new();
  for (int i = 0; i < f->n_kv; i++) {
    const char *k = f->kv[i].key;
    if (!strcmp(k, "tokenizer.ggml.model")) gguf_w_set_str(w, k, model);
    else if (!strcmp(k, "tokenizer.ggml.pre")) gguf_w_set_str(w, k, pre);
    else if (!strcmp(k, "tokenizer.ggml.merges") && strstr(opts, "nomerges")) continue;
    else gguf_w_copy_kv(w, &f->kv[i]);
  }
  if (strstr(opts, "lowercase")) gguf_w_set_bool(w, "tokenizer.ggml.normalizer.lowercase", true);
  snprintf(tmp, sizeof tmp, "/tmp/tg_tok_pretok_%d.gguf", (int)getpid());
  tg_tokenizer *t = NULL;
  if (gguf_writer_write(w, tmp, NULL, NULL) == 0) t = tg_tokenizer_load(tmp);
  CHECK_MSG(t, "%s %s %s %s: %s", base, model, pre, opts, tg_error());
  remove(tmp);
  gguf_writer_free(w);
  gguf_close(f);
  return t;
}

typedef struct { int n, ids_ok, detok_ok, shown; } tally;

/* text: the test string; c: llama.cpp's results for it */
static void check_case(const tg_tokenizer *t, const tok_bytes *text, const golden_case *c, const char *label,
                       tally *ty) {
  int32_t *ids;
  int n = tg_tokenize(t, text->v ? text->v : "", (size_t)text->n, true, true, &ids);
  bool same = n == c->ids.n;
  for (int k = 0; same && k < n; k++) same = ids[k] == c->ids.v[k];
  ty->n++;
  if (same) ty->ids_ok++;
  else {
    CHECK_MSG(false, "%s: tokenize gives %d ids, llama.cpp %d", label, n, c->ids.n);
    if (ty->shown++ < 4) {
      tok_show("text", text->v, (size_t)text->n);
      printf("    got: ");
      for (int k = 0; k < n && k < 40; k++) printf(" %d", ids[k]);
      printf("\n    want:");
      for (int k = 0; k < c->ids.n && k < 40; k++) printf(" %d", c->ids.v[k]);
      printf("\n");
    }
  }
  free(ids);
  size_t dn;
  char *d = tg_detokenize(t, c->ids.v, c->ids.n, false, false, &dn);
  CHECK_OK(d);
  const tok_bytes *want = c->detok_is_text ? text : &c->detok;
  if (d && dn == (size_t)want->n && !memcmp(d, want->v ? want->v : "", dn)) ty->detok_ok++;
  else if (d) {
    CHECK_MSG(false, "%s: detokenize differs", label);
    if (ty->shown++ < 4) {
      tok_show("text", text->v, (size_t)text->n);
      tok_show("got", d, dn);
      tok_show("want", want->v, (size_t)want->n);
    }
  }
  free(d);
}

/* Reads the golden file into g; false on a malformed line. */
static bool read_goldens(char *data, goldens *g) {
  for (char *line = strtok(data, "\n"); line; line = strtok(NULL, "\n")) {
    char a[4096];
    int v[5];
    golden_variant *cur = g->v.n ? &g->v.v[g->v.n - 1] : NULL;
    if (line[0] == '#') continue;
    if (!cur && sscanf(line, "string %4095s", a) == 1) {
      VEC_PUSH(g->strings, ((tok_bytes){ 0 }));
      if (!tok_unhex(a, &g->strings.v[g->strings.n - 1])) return false;
    } else if (!strncmp(line, "variant ", 8)) {
      golden_variant gv = { .same = -1 };
      if (sscanf(line, "variant %63s %63s %63s %63[^\n]", gv.base, gv.model, gv.pre, gv.opts) < 3) return false;
      snprintf(gv.label, sizeof gv.label, "%s/%s/%s%s%s", gv.base, gv.model, gv.pre, *gv.opts ? "/" : "", gv.opts);
      for (char *p = gv.label; *p; p++)
        if (*p == ' ') *p = '/';
      VEC_PUSH(g->v, gv);
    } else if (cur && sscanf(line, "vocab %d bos %d eos %d add_bos %d add_eos %d", &v[0], &v[1], &v[2], &v[3], &v[4]) == 5) {
      memcpy(cur->vocab, v, sizeof v);
    } else if (cur && sscanf(line, "same %4095s", a) == 1) {
      for (int i = 0; i < g->v.n - 1 && cur->same < 0; i++)
        if (!strcmp(g->v.v[i].label, a)) cur->same = i;
      if (cur->same < 0) return false;
    } else if (cur && !strncmp(line, "ids", 3) && cur->cases.n < g->strings.n) {
      VEC_PUSH(cur->cases, ((golden_case){ 0 }));
      golden_case *gc = &cur->cases.v[cur->cases.n - 1];
      for (char *p = line + 3, *end; (v[0] = (int)strtol(p, &end, 10)), end != p; p = end) VEC_PUSH(gc->ids, v[0]);
    } else if (cur && cur->cases.n && sscanf(line, "detok %4095s", a) == 1) {
      golden_case *gc = &cur->cases.v[cur->cases.n - 1];
      gc->detok_is_text = !strcmp(a, "=");
      if (!gc->detok_is_text && !tok_unhex(a, &gc->detok)) return false;
    } else {
      printf("    bad line '%.60s'\n", line);
      return false;
    }
  }
  for (int i = 0; i < g->v.n; i++)   /* every variant has a result per string */
    if (g->v.v[i].same < 0 && g->v.v[i].cases.n != g->strings.n) return false;
  return true;
}

TEST(tok_pretok_llamacpp) {
  size_t len;
  char *data = test_read_file("goldens/tok_pretok.txt", &len);
  CHECK_MSG(data, "cannot read goldens/tok_pretok.txt");
  if (!data) return;
  data = realloc(data, len + 1);
  data[len] = 0;
  goldens g = { 0 };
  CHECK(read_goldens(data, &g));
  int n_ok = 0, n_cases = 0;
  for (int i = 0; i < g.v.n; i++) {
    const golden_variant *gv = &g.v.v[i];
    tg_tokenizer *t = load_variant(gv->base, gv->model, gv->pre, gv->opts);
    if (!t) continue;
    CHECK_EQ_INT(tg_tokenizer_n_vocab(t), gv->vocab[0]);
    CHECK_MSG(tg_tokenizer_bos(t) == gv->vocab[1] && tg_tokenizer_eos(t) == gv->vocab[2] &&
              tg_tokenizer_add_bos(t) == gv->vocab[3] && t->add_eos == gv->vocab[4],
              "%s: bos %d eos %d add_bos %d add_eos %d, llama.cpp %d %d %d %d", gv->label, tg_tokenizer_bos(t),
              tg_tokenizer_eos(t), tg_tokenizer_add_bos(t), t->add_eos, gv->vocab[1], gv->vocab[2], gv->vocab[3],
              gv->vocab[4]);
    const golden_variant *src = gv->same >= 0 ? &g.v.v[gv->same] : gv;
    tally ty = { 0 };
    for (int k = 0; k < src->cases.n; k++) check_case(t, &g.strings.v[k], &src->cases.v[k], gv->label, &ty);
    n_cases += ty.n;
    n_ok += ty.n > 0 && ty.ids_ok == ty.n && ty.detok_ok == ty.n;
    if (ty.ids_ok != ty.n || ty.detok_ok != ty.n)
      printf("  %s: %d/%d tokenizations, %d/%d detokenizations match\n", gv->label, ty.ids_ok, ty.n, ty.detok_ok, ty.n);
    tg_tokenizer_free(t);
  }
  printf("  %d/%d variants give llama.cpp's ids and text for all %d strings (%d cases)\n", n_ok, g.v.n, g.strings.n,
         n_cases);
  CHECK(g.v.n > 90 && g.strings.n > 80);
  for (int i = 0; i < g.v.n; i++) {
    for (int k = 0; k < g.v.v[i].cases.n; k++) {
      VEC_FREE(g.v.v[i].cases.v[k].detok);
      VEC_FREE(g.v.v[i].cases.v[k].ids);
    }
    VEC_FREE(g.v.v[i].cases);
  }
  VEC_FREE(g.v);
  for (int i = 0; i < g.strings.n; i++) VEC_FREE(g.strings.v[i]);
  VEC_FREE(g.strings);
  free(data);
}
