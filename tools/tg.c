/* tg.c: the `tg` command. Subcommands grow with the project (chat, serve,
 * bench, gguf, ...); this first version checks the install end to end. */
#include <stdio.h>
#include <string.h>
#include "tg.h"

static int usage(void) {
  fprintf(stderr,
          "usage: tg <command>\n"
          "commands:\n"
          "  version        print the version\n"
          "  selftest       build a small graph, compile it and check the result\n"
          "environment: DEBUG=2 prints each kernel run, DEBUG=4 its source; TG_DEVICE=NULL runs nothing\n");
  return 2;
}

static int selftest(void) {
  tg_scope_begin();
  float a[6] = { 1, 2, 3, 4, 5, 6 }, b[3] = { 10, 20, 30 }, out[2];
  tg_tensor *x = tg_from_data(a, TG_SHAPE(2, 3), TG_F32);
  tg_tensor *y = tg_from_data(b, TG_SHAPE(3), TG_F32);
  tg_tensor *s = tg_sum(tg_mul(tg_add(x, y), x), TG_AXES(1), false);   /* ((x+y)*x).sum(1) */
  int rc = tg_data(s, out, sizeof out);
  tg_scope_end();
  if (rc < 0) { fprintf(stderr, "tg selftest: %s\n", tg_error()); return 1; }
  float want0 = 11 * 1 + 22 * 2 + 33 * 3, want1 = 14 * 4 + 25 * 5 + 36 * 6;
  if (out[0] != want0 || out[1] != want1) {
    fprintf(stderr, "tg selftest: got %g %g, want %g %g\n", out[0], out[1], want0, want1);
    return 1;
  }
  printf("selftest ok: ((x+y)*x).sum(1) = [%g, %g]\n", out[0], out[1]);
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 2) return usage();
  if (!strcmp(argv[1], "version")) { printf("tg 0.1.0\n"); return 0; }
  if (!strcmp(argv[1], "selftest")) return selftest();
  fprintf(stderr, "tg: unknown command '%s'\n", argv[1]);
  return usage();
}
