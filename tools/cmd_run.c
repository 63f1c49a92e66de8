/* cmd_run.c: `tg run -m MODEL.gguf -p PROMPT [-n N] [--temp T] [--seed S]`
 * prints the model's continuation of PROMPT (BOS added as the model's
 * metadata says, like llama.cpp), streaming it as it is generated.
 * --grammar / --grammar-file / --json-schema / --json-schema-file (as
 * llama.cpp's) constrain it (structured output, docs/llm.md). Under
 * mpirun, --split layers splits the model's layers over the ranks
 * (pipeline parallel, docs/distributed.md); rank 0 prints. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "commands.h"
#include "llm_args.h"
#include "tg_dist.h"
#include "util/util.h"

/* A whole file, malloc'd and NUL-terminated, or NULL. */
static char *read_all(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  strbuf b = { 0 };
  char buf[4096];
  size_t n;
  sb_puts(&b, "");
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) sb_append(&b, buf, n);
  fclose(f);
  return b.s;
}

static tg_grammar *load_grammar(const char *kind, const char *arg) {
  bool file = strstr(kind, "-file") != NULL, schema = strstr(kind, "json-schema") != NULL;
  char *text = file ? read_all(arg) : strdup(arg);
  if (!text) { fprintf(stderr, "tg run: %s %s: cannot read the file\n", kind, arg); return NULL; }
  tg_grammar *g = schema ? tg_grammar_from_json_schema(text, strlen(text)) : tg_grammar_new(text, strlen(text));
  if (!g) fprintf(stderr, "tg run: %s: %s\n", kind, tg_error());
  free(text);
  return g;
}

static bool print_piece(void *u, const char *text, size_t len) {
  (void)u;
  fwrite(text, 1, len, stdout);
  fflush(stdout);
  return true;
}

int cmd_run(int argc, char **argv) {
  llm_args a;
  llm_args_init(&a);
  const char *prompt = NULL, *grammar_kind = NULL, *grammar_arg = NULL;
  bool stats = false, split = false;
  for (int i = 1; i < argc; i++) {
    int r = llm_args_parse(&a, argc, argv, &i, "tg run");
    if (r < 0) return 2;
    if (r > 0) continue;
    if (!strcmp(argv[i], "-p") && i + 1 < argc) prompt = argv[++i];
    else if (!strcmp(argv[i], "--stats")) stats = true;
    else if (!strcmp(argv[i], "--split") && i + 1 < argc) {
      if (strcmp(argv[++i], "layers")) { fprintf(stderr, "tg run: --split %s: only 'layers' (pipeline parallel over mpirun's ranks)\n", argv[i]); return 2; }
      split = true;
    }
    else if ((!strcmp(argv[i], "--grammar") || !strcmp(argv[i], "--grammar-file") || !strcmp(argv[i], "--json-schema") ||
              !strcmp(argv[i], "--json-schema-file") || !strcmp(argv[i], "-j")) && i + 1 < argc) {
      if (grammar_kind) { fprintf(stderr, "tg run: give one grammar or schema option, not both\n"); return 2; }
      grammar_kind = !strcmp(argv[i], "-j") ? "--json-schema" : argv[i];
      grammar_arg = argv[++i];
    } else {
      fprintf(stderr, "tg run: unknown argument '%s'\nusage: tg run -m MODEL.gguf -p PROMPT [options]\n%s"
                      "  --stats          print the load time, token counts and speeds to stderr\n"
                      "  --split layers   under mpirun: each rank holds and runs its share of the layers\n"
                      "  --grammar GBNF, --grammar-file FILE            constrain the output to a grammar\n"
                      "  -j, --json-schema SCHEMA, --json-schema-file FILE   ... to JSON valid for a schema\n", argv[i], llm_args_help);
      return 2;
    }
  }
  if (!prompt) { fprintf(stderr, "tg run: no prompt: pass -p TEXT\n"); return 2; }
  tg_grammar *g = grammar_kind ? load_grammar(grammar_kind, grammar_arg) : NULL;
  if (grammar_kind && !g) return 1;
  tg_llm *m;
  tg_tokenizer *tok;
  double t_load = tg_now_seconds();
  if (split && !llm_args_split_start(&a, "tg run")) { tg_grammar_free(g); return 1; }
  bool speaks = tg_dist_rank() == 0;   /* split over ranks: rank 0 prints the text */
  if (!llm_args_load(&a, "tg run", &m, &tok)) {
    tg_grammar_free(g);
    tg_dist_finalize();
    return 1;
  }
  t_load = tg_now_seconds() - t_load;
  int32_t *ids = NULL;
  int n = tg_tokenize(tok, prompt, strlen(prompt), true, false, &ids);
  int rc = 1;
  if (n < 0) fprintf(stderr, "tg run: %s\n", tg_error());
  else if (n == 0) fprintf(stderr, "tg run: the prompt has no tokens\n");
  else {
    tg_sampler *s = tg_sampler_new(&a.sampling);
    if (g) tg_sampler_set_grammar(s, g, tok);
    tg_gen_stats st;
    int max = a.n_predict < 0 ? tg_llm_config_of(m)->n_ctx : a.n_predict;
    if (tg_llm_generate(m, tok, ids, n, max, s, NULL, 0, speaks ? print_piece : NULL, NULL, &st) < 0) fprintf(stderr, "\ntg run: %s\n", tg_error());
    else {
      rc = 0;
      if (speaks) printf("\n");
      if (stats && speaks)
        fprintf(stderr, "load: %.2f s; prompt: %d tokens, %.1f tok/s; generated: %d tokens, %.1f tok/s%s\n", t_load, st.n_prompt,
                st.n_prompt / (st.prompt_seconds > 0 ? st.prompt_seconds : 1e-9), st.n_generated,
                st.n_generated / (st.gen_seconds > 0 ? st.gen_seconds : 1e-9), st.hit_ctx ? " (context full)" : "");
    }
    tg_sampler_free(s);
  }
  free(ids);
  tg_grammar_free(g);
  tg_dist_finalize();
  cmd_exit_now(rc);
  tg_llm_free(m);
  tg_tokenizer_free(tok);
  return rc;
}
