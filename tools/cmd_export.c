/* cmd_export.c: `tg export -m MODEL.gguf -o OUT.c [-c N] [--cache-type T]`:
 * writes the model's one-token decode step as one C file (and OUT.bin with
 * its weights and KV cache), which compiles with `cc -O2 -c OUT.c` alone. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tg.h"
#include "commands.h"

static int export_usage(void) {
  fprintf(stderr, "usage: tg export -m MODEL.gguf -o OUT.c [-c N] [--cache-type f16|bf16|f32|q8_0]\n"
                  "  writes OUT.c (the decode step: OUT_init, OUT_run, OUT_free) and OUT.bin\n"
                  "  (weights and KV cache); see docs/llm.md \"Export\"\n");
  return 2;
}

int cmd_export(int argc, char **argv) {
  const char *model = NULL, *out = NULL, *cache = NULL;
  int n_ctx = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    bool has = i + 1 < argc;
    if ((!strcmp(a, "-m") || !strcmp(a, "--model")) && has) model = argv[++i];
    else if ((!strcmp(a, "-o") || !strcmp(a, "--output")) && has) out = argv[++i];
    else if ((!strcmp(a, "-c") || !strcmp(a, "--ctx-size")) && has) {
      char *end;
      long v = strtol(argv[++i], &end, 10);
      if (*end || v < 1 || v > (1 << 24)) { fprintf(stderr, "tg export: bad context size '%s'\n", argv[i]); return 2; }
      n_ctx = (int)v;
    } else if (!strcmp(a, "--cache-type") && has) cache = argv[++i];
    else return export_usage();
  }
  if (!model || !out) return export_usage();
  tg_llm_opts o = { 0 };
  o.n_ctx = n_ctx;
  o.cache_type = cache;
  tg_llm *m = tg_llm_load(model, &o);
  if (!m) { fprintf(stderr, "tg export: %s\n", tg_error()); return 1; }
  int rc = tg_llm_export(m, out);
  if (rc < 0) fprintf(stderr, "tg export: %s\n", tg_error());
  else printf("wrote %s (and its .bin): compile with cc -O2 -c %s\n", out, out);
  tg_llm_free(m);
  return rc < 0 ? 1 : 0;
}
