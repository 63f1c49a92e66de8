/* cmd_selftest.c: `tg selftest` builds a small graph, compiles and runs it,
 * and checks the result: the install works end to end. */
#include <stdio.h>
#include "tg.h"
#include "commands.h"

int cmd_selftest(int argc, char **argv) {
  (void)argc; (void)argv;
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
