/* views.c: movement ops (reshape, transpose, slicing, padding) cost no
 * kernels of their own: they become index arithmetic inside the kernel that
 * reads them. tg_assign writes into an existing tensor, here into a slice.
 *   make build/examples/views && ./build/examples/views */
#include <stdio.h>
#include "tg.h"

static int show(const char *what, tg_tensor *t) {
  float v[64] = { 0 };
  tg_shape s = tg_shape_of(t);
  if (!t || s.ndim != 2 || tg_numel(t) > 64 || tg_data(t, v, sizeof v) < 0) {
    fprintf(stderr, "%s: %s\n", what, tg_error());
    return -1;
  }
  printf("%s, shape (%lld, %lld):\n", what, (long long)s.d[0], (long long)s.d[1]);
  for (int64_t r = 0; r < s.d[0]; r++) {
    printf("  ");
    for (int64_t c = 0; c < s.d[1]; c++) printf("%5g", v[r * s.d[1] + c]);
    printf("\n");
  }
  return 0;
}

int main(void) {
  tg_scope_begin();
  tg_tensor *a = tg_reshape(tg_arange(0, 12, 1, TG_F32), TG_SHAPE(3, 4));   /* 0..11 as 3x4 */
  if (show("a = arange(12).reshape(3, 4)", a) < 0) return 1;

  /* a transpose is a view: the kernel below reads a with swapped strides */
  if (show("a.T + 100", tg_adds(tg_T(a), 100)) < 0) return 1;

  /* Python-style indexing: a[1:, ::2] */
  if (show("a[1:, ::2]", TG_GET(a, TG_FROM(1), TG_STEP(2))) < 0) return 1;

  /* pad one column of -1 on each side */
  int64_t pads[] = { 0, 0, 1, 1 };
  if (show("pad(a, cols 1+1, value -1)", tg_pad(a, pads, 2, -1)) < 0) return 1;

  /* assign into a slice of a realized tensor: the first row becomes 7s.
   * The assign is lazy too; realizing it writes z's memory in place. */
  tg_tensor *z = tg_zeros(TG_SHAPE(3, 4), TG_F32);
  if (tg_realize(z) < 0 || tg_realize(tg_assign(TG_GET(z, TG_I(0)), tg_full(TG_SHAPE(4), 7, TG_F32))) < 0) {
    fprintf(stderr, "%s\n", tg_error());
    return 1;
  }
  if (show("z = zeros(3, 4); z[0] = 7", z) < 0) return 1;

  tg_counters c = tg_get_counters();
  printf("%lld kernels ran for all of this\n", (long long)c.kernels_run);
  tg_scope_end();
  return 0;
}
