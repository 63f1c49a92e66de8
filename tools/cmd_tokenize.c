/* cmd_tokenize.c: `tg tokenize -m FILE.gguf [--ids] [--no-bos]
 * [--no-parse-special] [--show-count] (TEXT | -f FILE | --stdin)`, like
 * llama.cpp's llama-tokenize: prints one "id -> 'piece'" line per token, or
 * with --ids the Python-style list. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tg.h"
#include "commands.h"

static int tokenize_usage(void) {
  fprintf(stderr, "usage: tg tokenize -m FILE.gguf [--ids] [--no-bos] [--no-parse-special] [--show-count]\n"
                  "                   (TEXT | -f FILE | --stdin)\n"
                  "  -f FILE, --stdin    read the text from a file / standard input\n"
                  "  --show-count        also print the number of tokens\n"
                  "  --ids               print only the ids, as a list: [1, 2, 3]\n"
                  "  --no-bos            do not add BOS/EOS even where the model does\n"
                  "  --no-parse-special  treat special-token text (e.g. <|im_end|>) as plain text\n");
  return 2;
}

/* The whole of f as a malloc'd string; *n gets its length. */
static char *read_stream(FILE *f, size_t *n) {
  size_t cap = 1 << 16;
  char *b = malloc(cap);
  *n = 0;
  for (size_t got; (got = fread(b + *n, 1, cap - *n, f)) > 0;) {
    *n += got;
    if (*n == cap) b = realloc(b, cap *= 2);
  }
  return b;
}

int cmd_tokenize(int argc, char **argv) {
  const char *model = NULL, *text = NULL, *file = NULL;
  bool ids_only = false, add_special = true, parse_special = true, from_stdin = false, show_count = false;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "-m") || !strcmp(argv[i], "--model")) {
      if (++i >= argc) return tokenize_usage();
      model = argv[i];
    } else if (!strcmp(argv[i], "-f") || !strcmp(argv[i], "--file")) {
      if (++i >= argc) return tokenize_usage();
      file = argv[i];
    } else if (!strcmp(argv[i], "--stdin")) from_stdin = true;
    else if (!strcmp(argv[i], "--show-count")) show_count = true;
    else if (!strcmp(argv[i], "--ids")) ids_only = true;
    else if (!strcmp(argv[i], "--no-bos")) add_special = false;
    else if (!strcmp(argv[i], "--no-parse-special")) parse_special = false;
    else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) return tokenize_usage();
    else if (!text && (argv[i][0] != '-' || !argv[i][1])) text = argv[i];
    else {
      fprintf(stderr, "tg tokenize: unexpected argument '%s'\n", argv[i]);
      return tokenize_usage();
    }
  }
  if (!model || (!!text + !!file + from_stdin) != 1) return tokenize_usage();
  size_t len = text ? strlen(text) : 0;
  char *buf = NULL;
  if (file || from_stdin) {
    FILE *f = file ? fopen(file, "rb") : stdin;
    if (!f) {
      perror(file);
      return 1;
    }
    buf = read_stream(f, &len);
    if (file) fclose(f);
    text = buf;
  }
  tg_tokenizer *tok = tg_tokenizer_load(model);
  if (!tok) {
    fprintf(stderr, "tg tokenize: %s\n", tg_error());
    free(buf);
    return 1;
  }
  int32_t *ids;
  int n = tg_tokenize(tok, text, len, add_special, parse_special, &ids);
  free(buf);
  if (n < 0) {
    fprintf(stderr, "tg tokenize: %s\n", tg_error());
    tg_tokenizer_free(tok);
    return 1;
  }
  if (ids_only) {
    printf("[");
    for (int i = 0; i < n; i++) printf("%s%d", i ? ", " : "", ids[i]);
    printf("]\n");
  } else {
    for (int i = 0; i < n; i++) {
      char buf[256];
      int len = tg_token_to_piece(tok, ids[i], true, buf, sizeof buf);
      char *p = buf;
      if (len < 0) {   /* a piece longer than buf */
        p = malloc((size_t)-len);
        len = tg_token_to_piece(tok, ids[i], true, p, -len);
      }
      printf("%6d -> '%.*s'\n", ids[i], len, p);
      if (p != buf) free(p);
    }
  }
  if (show_count) printf("Total number of tokens: %d\n", n);
  free(ids);
  tg_tokenizer_free(tok);
  return 0;
}
