/* gpu_heuristic.c: default opts for kernels on a GPU dialect, in the
 * spirit of tinygrad's hand_coded_optimizations:
 *   reduce to few outputs (matvec, row sums): GROUP the reduce so a work
 *     group of threads shares each output, then LOCAL over outputs;
 *   everything else: LOCAL on the innermost output axis (neighbouring
 *     threads touch neighbouring memory), then on the next one, up to a
 *     work group of GPU_GROUP threads.
 * Thresholds live in the table below. */
#include "codegen/opts.h"
#include "schedule/schedule.h"

static const struct {
  int group_threads;       /* threads of a work group the heuristic aims for */
  int64_t matvec_reduce;   /* a reduce at least this long ... */
  int64_t matvec_outputs;  /* ... over at most this many outputs is grouped */
  int reduce_group;        /* threads sharing one output's reduce */
} gpu_policy = { 128, 256, 1 << 16, 64 };

static int64_t static_size(const uop *r) { return range_is_symbolic(r) ? 1 : range_max_size(r); }

/* the largest power of two <= cap that divides n (1 when none) */
static int pow2_divisor(int64_t n, int cap) {
  int a = 1;
  while (a * 2 <= cap && n % (a * 2) == 0) a *= 2;
  return a;
}

int gpu_heuristic_opts(uop *ast, const tg_renderer *ren, kopt *out, int max) {
  uop *axes[64];
  int fr, k = 0;
  int n = kernel_axes(ast, axes, 64, &fr);
  int budget = gpu_policy.group_threads < ren->max_local ? gpu_policy.group_threads : ren->max_local;
  int64_t outputs = 1, red = 1;
  for (int i = 0; i < fr; i++) outputs *= static_size(axes[i]);
  for (int i = fr; i < n; i++) red *= static_size(axes[i]);
  if (n > fr && red >= gpu_policy.matvec_reduce && outputs <= gpu_policy.matvec_outputs) {
    /* the longest reduce axis, grouped */
    int best = -1;
    for (int i = fr; i < n; i++)
      if (pow2_divisor(static_size(axes[i]), gpu_policy.reduce_group) >= 8 && (best < 0 || static_size(axes[i]) > static_size(axes[best]))) best = i;
    if (best >= 0 && k < max) {
      int amt = pow2_divisor(static_size(axes[best]), gpu_policy.reduce_group < budget ? gpu_policy.reduce_group : budget);
      out[k++] = (kopt){ OPT_GROUP, best - fr, amt };
      budget /= amt;
    }
  }
  /* output threads, innermost axes first */
  for (int i = fr - 1; i >= 0 && budget >= 2 && k < max; i--) {
    int amt = pow2_divisor(static_size(axes[i]), budget);
    if (amt < 2) continue;
    out[k++] = (kopt){ OPT_LOCAL, i, amt };
    budget /= amt;
  }
  return k;
}
