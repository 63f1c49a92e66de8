/* gpu_heuristic.c: default opts for kernels on a GPU dialect, in the
 * spirit of tinygrad's hand_coded_optimizations:
 *   a matmul of f16/bf16 on a GPU with tensor cores: TC, then a register
 *     tile of several WMMAs per warp (UPCAST) and several warps per group
 *     (LOCAL) over the tile axes;
 *   reduce to few outputs (matvec, row sums): GROUP the reduce so a work
 *     group of threads shares each output, then LOCAL over outputs;
 *   everything else: LOCAL on the innermost output axis (neighbouring
 *     threads touch neighbouring memory), then on the next one, up to a
 *     work group of GPU_GROUP threads.
 * Thresholds live in the table below. */
#include "codegen/opts.h"
#include "uop/kernel_ir.h"
#include "util/util.h"

static const struct {
  int group_threads;       /* threads of a work group the heuristic aims for */
  int64_t matvec_reduce;   /* a reduce at least this long ... */
  int64_t matvec_outputs;  /* ... over at most this many outputs is grouped */
  int reduce_group;        /* threads sharing one output's reduce */
  int tc_upcast;           /* WMMA tiles per warp along each tile axis (at most) */
  int tc_warps;            /* warps per group along each tile axis (at most) */
} gpu_policy = { 128, 256, 1 << 16, 64, 4, 2 };

/* the largest power of two <= cap that divides n (1 when none) */
static int pow2_divisor(int64_t n, int cap) {
  int a = 1;
  while (a * 2 <= cap && n % (a * 2) == 0) a *= 2;
  return a;
}

/* TC and its tiles, or 0 when the kernel is no tensor-core matmul */
static int tc_opts(uop *ast, const tg_renderer *ren, kopt *out, int max) {
  uop *trial = ast, *before[64], *after[64];
  if (max < 5 || !kernel_tc_fits(ast, ren) || kernel_apply_tc(&trial, (kopt){ OPT_TC, -1, 0 }, ren) < 0) return 0;
  int fr0, fr;
  kernel_axes(ast, before, 64, &fr0);
  kernel_axes(trial, after, 64, &fr);
  int k = 0;
  out[k++] = (kopt){ OPT_TC, -1, 0 };
  /* the tile axes are the output axes the TC split (their sizes shrank);
   * the last axis first, so an axis an UPCAST uses up shifts no index
   * still to come */
  for (int i = (fr < fr0 ? fr : fr0) - 1; i >= 0; i--) {
    int64_t sz = range_static_size(after[i]);
    if (sz == range_static_size(before[i])) continue;
    int up = pow2_divisor(sz, gpu_policy.tc_upcast);
    if (up >= 2) out[k++] = (kopt){ OPT_UPCAST, i, up };
    int warps = pow2_divisor(sz / up, gpu_policy.tc_warps);
    if (warps >= 2) out[k++] = (kopt){ OPT_LOCAL, i, warps };
  }
  return k;
}

int gpu_heuristic_opts(uop *ast, const tg_renderer *ren, kopt *out, int max) {
  uop *axes[64];
  int fr, k = 0;
  if (ren->n_tensor_cores && (k = tc_opts(ast, ren, out, max)) > 0) return k;
  int n = kernel_axes(ast, axes, 64, &fr);
  int budget = gpu_policy.group_threads < ren->max_local ? gpu_policy.group_threads : ren->max_local;
  int64_t outputs = 1, red = 1;
  for (int i = 0; i < fr; i++) outputs = tg_mul_sat_i64(outputs, range_static_size(axes[i]));
  for (int i = fr; i < n; i++) red = tg_mul_sat_i64(red, range_static_size(axes[i]));   /* several reduces: past int64 */
  if (n > fr && red >= gpu_policy.matvec_reduce && outputs <= gpu_policy.matvec_outputs) {
    /* the longest reduce axis, grouped */
    int best = -1;
    for (int i = fr; i < n; i++)
      if (pow2_divisor(range_static_size(axes[i]), gpu_policy.reduce_group) >= 8 && (best < 0 || range_static_size(axes[i]) > range_static_size(axes[best]))) best = i;
    if (best >= 0 && k < max) {
      int amt = pow2_divisor(range_static_size(axes[best]), gpu_policy.reduce_group < budget ? gpu_policy.reduce_group : budget);
      out[k++] = (kopt){ OPT_GROUP, best - fr, amt };
      budget /= amt;
    }
  }
  /* output threads, innermost axes first */
  for (int i = fr - 1; i >= 0 && budget >= 2 && k < max; i--) {
    int amt = pow2_divisor(range_static_size(axes[i]), budget);
    if (amt < 2) continue;
    out[k++] = (kopt){ OPT_LOCAL, i, amt };
    budget /= amt;
  }
  return k;
}
