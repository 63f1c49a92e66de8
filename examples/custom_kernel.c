/* custom_kernel.c: a fused quantize-with-amax kernel written with tg's
 * kernel builder, the seeds' fp8 case (fp8_quantize.h has the kernel and
 * its gradient), checked against the same computation in plain tg ops:
 * y, inv_scale and the gradient of sum(float(y) * w) by x must be equal,
 * bit for bit. Run: make examples && build/examples/custom_kernel [DEVICE] */
#include <stdio.h>
#include <string.h>
#include "fp8_quantize.h"

enum { R = 64, C = 48, N = R * C };

/* y, inv_scale and dx (of loss = sum(float(y) * w)) of either version */
static int run(bool custom, const float *xs, const float *ws, uint8_t *y, float *inv, float *dx) {
  int rc = -1;
  tg_scope_begin();
  tg_tensor *x = tg_requires_grad(tg_from_data(xs, TG_SHAPE(R, C), TG_F32), true);
  tg_tensor *w = tg_from_data(ws, TG_SHAPE(R, C), TG_F32), *q, *s;
  if (custom) { if (quantize_fp8(x, &q, &s) < 0) goto out; }
  else quantize_fp8_plain(x, &q, &s);
  tg_tensor *loss = tg_sum(tg_mul(tg_cast(q, TG_F32), w), TG_ALL, false);
  if (tg_backward(loss) < 0) goto out;
  if (tg_data(q, y, N) < 0 || tg_data(s, inv, sizeof(float)) < 0 || tg_data(tg_grad(x), dx, N * sizeof(float)) < 0) goto out;
  rc = 0;
out:
  tg_scope_end();
  return rc;
}

int main(int argc, char **argv) {
  if (argc > 1 && tg_set_default_device(argv[1]) < 0) { fprintf(stderr, "tg: %s\n", tg_error()); return 1; }
  static float xs[N], ws[N], inv[2], dx[2][N];
  static uint8_t y[2][N];
  uint32_t h = 12345;
  for (int i = 0; i < N; i++) {
    h = h * 1664525u + 1013904223u;
    xs[i] = ((float)(h >> 8) / 16777216.0f - 0.5f) * 6.0f;   /* in [-3, 3) */
    ws[i] = (float)(i % 7) - 3.0f;
  }
  for (int v = 0; v < 2; v++)
    if (run(v == 0, xs, ws, y[v], &inv[v], dx[v]) < 0) { fprintf(stderr, "tg: %s\n", tg_error()); return 1; }
  int bad_y = 0, bad_dx = 0;
  for (int i = 0; i < N; i++) { bad_y += y[0][i] != y[1][i]; bad_dx += memcmp(&dx[0][i], &dx[1][i], sizeof(float)) != 0; }
  bool same_scale = !memcmp(&inv[0], &inv[1], sizeof(float));
  printf("quantize_fp8_amax on %s: %d values, inv_scale %.9g (plain ops %.9g)\n", tg_default_device(), N, inv[0], inv[1]);
  printf("  y (fp8e4m3): %d of %d differ from plain ops; x[0] = %g -> %g\n", bad_y, N, xs[0], tg_fp8e4m3_to_f32(y[0][0]) * inv[0]);
  printf("  dx (straight-through, a second custom kernel): %d of %d differ from plain ops' tg_backward\n", bad_dx, N);
  if (bad_y || bad_dx || !same_scale) { printf("MISMATCH\n"); return 1; }
  printf("custom kernel and plain ops agree exactly\n");
  return 0;
}
