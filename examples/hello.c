/* hello.c: the smallest tg program. Build and run:
 *   make build/examples/hello && ./build/examples/hello */
#include <stdio.h>
#include "tg.h"

int main(void) {
  float a[3] = { 1, 2, 3 }, b[3] = { 10, 20, 30 }, out[3];
  tg_tensor *x = tg_from_data(a, TG_SHAPE(3), TG_F32);
  tg_tensor *y = tg_from_data(b, TG_SHAPE(3), TG_F32);
  tg_tensor *z = tg_add(x, y);                  /* lazy: nothing runs yet */
  if (tg_data(z, out, sizeof out) < 0) {        /* compiles and runs one kernel */
    fprintf(stderr, "tg: %s\n", tg_error());
    return 1;
  }
  printf("[%g, %g, %g]\n", out[0], out[1], out[2]);   /* [11, 22, 33] */
  return 0;
}
