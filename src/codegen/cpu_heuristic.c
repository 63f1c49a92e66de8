/* cpu_heuristic.c: the hand-written rules that pick a kernel's opts by
 * default on a CPU (matvec, packed quant blocks, matmul panels, reduces,
 * elementwise, threads), and kernel_heuristic_opts, which picks this or
 * gpu_heuristic.c by the renderer's capabilities. */
#include <stdlib.h>
#include "codegen/codegen.h"
#include "codegen/opts.h"
#include "uop/rewrite.h"
#include "uop/kernel_ir.h"
#include "uop/symbolic.h"
#include "util/util.h"

/* The index expression of every LOAD in the kernel (free .v after use). */
static uop_list load_indices(uop *ast) {
  uop_list l = uop_toposort(ast);
  int n = 0;
  for (int i = 0; i < l.n; i++) if (l.v[i]->op == OP_LOAD) l.v[n++] = l.v[i]->src[0]->src[1];
  l.n = n;
  return l;
}

/* Do the kernel's loads step by 1 (or 0) along r? counts of each. Only the
 * loads inside the reduce loops count when there are any (a bias read once
 * per output is no reason for lanes), and stores never do. */
static void access_along(uop *ast, uop *r, uop *const *axes, int n, int *unit, int *zero, int *other) {
  *unit = *zero = *other = 0;
  uop_list l = load_indices(ast);
  bool has_reduce = false;
  for (int i = 0; i < n; i++) has_reduce |= range_kind(axes[i]) == RANGE_REDUCE;
  for (int i = 0; i < l.n; i++) {
    if (has_reduce) {
      bool inner = false;
      for (int a = 0; a < n && !inner; a++)
        if (range_kind(axes[a]) == RANGE_REDUCE) { int64_t sr = index_stride(l.v[i], axes[a], axes, n); inner = sr != 0; }
      if (!inner) continue;
    }
    int64_t s = index_stride(l.v[i], r, axes, n);
    if (s == 1) (*unit)++;
    else if (s == 0) (*zero)++;
    else (*other)++;
  }
  free(l.v);
}

/* Does every store of the kernel step by one element along r? */
static bool store_steps_by_one(uop *ast, uop *r, uop *const *axes, int n) {
  if (ast->op != OP_SINK || !ast->nsrc) return false;
  for (int i = 0; i < ast->nsrc; i++) {
    uop *st = ast->src[i];
    if (st->op != OP_STORE || index_stride(st->src[0]->src[1], r, axes, n) != 1) return false;
  }
  return true;
}

/* float ALU ops in the kernel (its arithmetic, not its index math) */
static int float_alu_count(uop *ast) {
  uop_list l = uop_toposort(ast);
  int c = 0;
  for (int i = 0; i < l.n; i++) c += uop_is_alu(l.v[i]->op) && dt_is_float(l.v[i]->dtype);
  free(l.v);
  return c;
}

/* Does some load step along r by a constant other than 0 and 1? */
static bool strided_load_along(uop *ast, uop *r, uop *const *axes, int n) {
  uop_list l = load_indices(ast);
  bool found = false;
  for (int i = 0; i < l.n && !found; i++) {
    int64_t st = index_stride(l.v[i], r, axes, n);
    found = st != INT64_MIN && st != 0 && st != 1;
  }
  free(l.v);
  return found;
}

/* How many loads step by 2 along r (pairs of adjacent values: vectorize.c
 * loads them as one wide vector). */
static int pair_loads_along(uop *ast, uop *r, uop *const *axes, int n) {
  uop_list l = load_indices(ast);
  int c = 0;
  for (int i = 0; i < l.n; i++) c += index_stride(l.v[i], r, axes, n) == 2;
  free(l.v);
  return c;
}

/* The largest power of two P (up to 256) that some `x // P` or `x % P`
 * with x depending on r uses: r walks a block structure of that period
 * (packed quantized weights: blocks of 32 or 256 values, nibble halves,
 * sub-blocks). Lanes of r covering whole periods turn those divisions into
 * constants. */
static int64_t index_period(uop *ast, uop *r) {
  uop_list l = uop_toposort(ast);
  ptrmap dep = { 0 };   /* nodes depending on r */
  int64_t best = 0;
  for (int i = 0; i < l.n; i++) {
    uop *u = l.v[i];
    bool d = u == r;
    for (int j = 0; j < u->nsrc && !d; j++) d = pm_get(&dep, u->src[j]) != NULL;
    if (!d) continue;
    pm_put(&dep, u, (void *)1);
    if ((u->op == OP_IDIV || u->op == OP_MOD) && u->src[1]->op == OP_CONST && pm_get(&dep, u->src[0])) {
      int64_t p = u->src[1]->arg.i;
      if (p > best && p <= 256 && (p & (p - 1)) == 0) best = p;
    }
  }
  pm_free(&dep);
  free(l.v);
  return best;
}

/* Does the kernel read packed bytes (uint8: quantized weights)? */
static bool loads_bytes(uop *ast) {
  uop_list l = uop_toposort(ast);
  bool found = false;
  for (int i = 0; i < l.n && !found; i++) found = l.v[i]->op == OP_LOAD && l.v[i]->dtype.scalar == TG_U8;
  free(l.v);
  return found;
}

/* Does the reduce loop hold scalar work that costs (a transcendental or a
 * division: a libm call or a slow instruction) and does not vary along
 * lane axis v? Each vector of v's lanes repeats it (attention's
 * exp(score - max) / sum, once per 16 of the head's values). */
static bool costly_beside_lanes(uop *ast, uop *const *axes, int n, int fr, uop *v) {
  uop_list l = uop_toposort(ast);
  ptrmap on_v = { 0 }, on_red[8] = { { 0 } };
  bool found = false;
  for (int i = 0; i < l.n && !found; i++) {
    uop *u = l.v[i];
    if (!uop_is_costly(u->op)) continue;
    if (kernel_depends_on(u, v, &on_v)) continue;
    for (int r = fr; r < n && r - fr < 8 && !found; r++) found = kernel_depends_on(u, axes[r], &on_red[r - fr]);
  }
  pm_free(&on_v);
  for (int r = 0; r < 8; r++) pm_free(&on_red[r]);
  free(l.v);
  return found;
}

/* Along output axis r, do the packed-byte (uint8) loads stay put (0), all
 * move (1), or some of each (-1)? */
static int byte_loads_along(uop *ast, uop *r, uop *const *axes, int n) {
  uop_list l = uop_toposort(ast);
  int still = 0, moving = 0;
  for (int i = 0; i < l.n; i++) {
    if (l.v[i]->op != OP_LOAD || l.v[i]->dtype.scalar != TG_U8) continue;
    if (index_stride(l.v[i]->src[0]->src[1], r, axes, n) == 0) still++;
    else moving++;
  }
  free(l.v);
  return still && moving ? -1 : moving ? 1 : 0;
}

/* The panel width of a packed operand along output axis v: the stride, along
 * the innermost reduce axis, of a load that steps by 1 along v (tg_matmul's
 * packed b, [n / P][k][P], gives P); 0 when no load looks like that. When v
 * gets exactly P lanes, one tile of v reads one contiguous run of memory
 * over the whole reduce. */
static int64_t panel_stride(uop *ast, uop *const *axes, int n, int fr, int v) {
  if (n <= fr) return 0;
  uop_list l = load_indices(ast);
  int64_t p = 0;
  for (int i = 0; i < l.n && !p; i++) {
    if (index_stride(l.v[i], axes[v], axes, n) != 1) continue;
    int64_t s = index_stride(l.v[i], axes[n - 1], axes, n);
    if (s > 1 && s <= 64) p = s;
  }
  free(l.v);
  return p;
}

static int pick_amount(int64_t size, const int *choices) {
  for (int i = 0; choices[i]; i++) if (size % choices[i] == 0 && size >= choices[i]) return choices[i];
  return 0;
}

/* Does a load that steps by 1 along output axis v stay put along axis a (a
 * convolution's input row, the same for every output channel)? */
static bool row_reused_along(uop *ast, uop *const *axes, int n, int v, int a) {
  uop_list l = load_indices(ast);
  bool found = false;
  for (int i = 0; i < l.n && !found; i++) found = index_stride(l.v[i], axes[v], axes, n) == 1 && index_stride(l.v[i], axes[a], axes, n) == 0;
  free(l.v);
  return found;
}

/* Elements every core would read whole if axis a were the threaded one:
 * over the loads inside the reduce that do not depend on a, the product of
 * the axes they do depend on. */
static double unsplit_reads(uop *ast, uop *const *axes, int n, uop *a) {
  uop_list l = load_indices(ast);
  double total = 0;   /* an estimate: in double, no product of sizes overflows */
  for (int i = 0; i < l.n; i++) {
    if (index_stride(l.v[i], a, axes, n) != 0) continue;
    double e = 1;
    for (int j = 0; j < n; j++) if (index_stride(l.v[i], axes[j], axes, n) != 0) e *= (double)range_max_size(axes[j]);
    total += e;
  }
  free(l.v);
  return total;
}

/* the lanes the UPCASTs chosen so far give output axis a */
static int64_t lanes_on(const kopt *o, int k, int a) {
  int64_t l = 1;
  for (int i = 0; i < k; i++) if (o[i].op == OPT_UPCAST && o[i].axis == a) l *= o[i].arg;
  return l;
}

/* Work below which a kernel stays on one core: waking the other cores and
 * waiting for them costs several microseconds, about what 2^18 vectorized
 * iterations of a multiply-add take (attention over a short context ran
 * faster on one core than on two). Iterations that each do much more
 * (decoding quantized weights: 10 and more ops per value; exponentials)
 * count by their ops (kernel_cost). */
#define THREAD_MIN_WORK (1 << 18)
#define THREAD_MIN_FLOPS (1 << 21)

static int cpu_heuristic_opts(uop *ast, int ncores, kopt *out, int max) {
  uop *axes[64];
  int fr;
  int n = kernel_axes(ast, axes, 64, &fr);
  int k = 0;
  int64_t work = 1;   /* saturates: several reduces' loops multiply past int64 */
  for (int i = 0; i < n; i++) work = tg_mul_sat_i64(work, range_max_size(axes[i]));
  static const int vec[] = { 16, 8, 4, 0 }, tile[] = { 4, 2, 0 };
  bool has_reduce = n > fr;
  int outer = 0;   /* the output axis that ends up outermost */
  if (has_reduce && fr > 0) {
    /* outputs with a reduce (matmul, conv, matvec, row sums):
     * 1. SIMD lanes along an output axis the loads walk with stride 1;
     * 2. register tiles along output axes some load does not depend on (the
     *    loaded value is reused by every lane);
     * 3. without output lanes, partial sums along a unit-stride reduce axis */
    int vaxis = -1, vamt = 0;
    for (int i = fr - 1; i >= 0 && vaxis < 0; i--) {
      int unit, zero, other;
      access_along(ast, axes[i], axes, n, &unit, &zero, &other);
      int64_t size = range_static_size(axes[i]);
      int amt = pick_amount(size, vec);
      /* a convolution's output row that 8 lanes do not divide (20, 6):
       * the whole row as lanes, unless it is shorter than the innermost
       * reduce (then it is a weight gradient's kernel window, below) */
      if (size % 8 && size >= 5 && size <= 32 && n > fr && size >= range_static_size(axes[n - 1])) amt = (int)size;
      if (amt && unit >= 1) { vaxis = i; vamt = amt; }
    }
    int64_t lanes = 1;
    if (vaxis >= 0 && k < max) { out[k++] = (kopt){ OPT_UPCAST, vaxis, vamt }; lanes *= vamt; }
    /* long reductions over big outputs (matmul): two vectors per row of the
     * tile, so each load of the other operand feeds twice the math */
    int64_t red = 1;
    for (int r = fr; r < n; r++) red = tg_mul_sat_i64(red, range_max_size(axes[r]));
    int64_t panel = vaxis >= 0 ? panel_stride(ast, axes, n, fr, vaxis) : 0;
    /* (not when the panel is all the output there is: a per-channel sum over
     * channels-last data would then run on one core) */
    int64_t outputs = 1;
    for (int i = 0; i < fr; i++) outputs = tg_mul_sat_i64(outputs, range_max_size(axes[i]));
    bool panel_threads = ncores < 2 || outputs / (panel ? panel : 1) >= ncores || work < THREAD_MIN_WORK;
    if (panel > vamt && panel % vamt == 0 && panel / vamt <= 4 && range_max_size(axes[vaxis]) % panel == 0 && panel_threads && k < max) {
      out[k++] = (kopt){ OPT_UPCAST, vaxis, (int)(panel / vamt) };   /* lanes = the whole panel */
      lanes *= panel / vamt;
    } else if (vaxis >= 0 && vamt == 16 && red >= 256 && (range_max_size(axes[vaxis]) / 16) % 2 == 0 && range_max_size(axes[vaxis]) >= 128 && k < max) {
      out[k++] = (kopt){ OPT_UPCAST, vaxis, 2 };
      lanes *= 2;
    } else if (vaxis >= 0 && vamt == 16 && range_static_size(axes[vaxis]) % 16 == 0 && range_static_size(axes[vaxis]) / 16 >= 2 && range_static_size(axes[vaxis]) / 16 <= 4 &&
               costly_beside_lanes(ast, axes, n, fr, axes[vaxis]) && k < max) {
      /* all of the (short) lane axis at once: the costly scalar work runs
       * once per iteration, not once per 16 lanes */
      out[k++] = (kopt){ OPT_UPCAST, vaxis, (int)(range_static_size(axes[vaxis]) / 16) };
      lanes *= range_static_size(axes[vaxis]) / 16;
    }
    /* a reduce walking a block structure (quantized weights): unroll whole
     * blocks (at least 32 lanes, at most 128), so a block's scales and bit
     * positions become constants per iteration and are decoded once for its
     * values; skip the register tile (the per-element decoding is the work;
     * sharing the other operand's load saves little). Only for kernels
     * reading packed bytes: float kernels (a conv's backward) have periods
     * too, and want tiles. */
    int pr = -1, pamt = 0;
    if (vaxis < 0 && loads_bytes(ast))
      for (int r = n - 1; r >= fr && pr < 0; r--) {
        int64_t p = index_period(ast, axes[r]);
        int64_t amt = p < 32 ? 32 : p > 128 ? 128 : p;
        if (p >= 8 && range_static_size(axes[r]) % amt == 0) pr = r, pamt = (int)amt;
      }
    /* as 16 inner lanes (consecutive bytes: SIMD when the decoding allows)
     * times the rest of the block (nibble halves, sub-blocks) */
    /* many rows of the other operand (x @ w.T for a prefill chunk of x):
     * 8 of them share each decoded vector of w and 2 rows of w each loaded
     * vector of x, 16 lanes of the block at a time (2x a decode-once copy of
     * w for Q8_0/Q4_0 at 64x4096x768) */
    int xrows = -1, wrows = -1;
    for (int i = 0; i < fr && pr >= 0; i++) {
      int moves = byte_loads_along(ast, axes[i], axes, n);
      if (moves == 0 && xrows < 0 && range_static_size(axes[i]) >= 16 && range_static_size(axes[i]) % 8 == 0) xrows = i;
      else if (moves == 1 && wrows < 0 && range_static_size(axes[i]) % 2 == 0) wrows = i;
    }
    if (xrows >= 0 && wrows >= 0 && k + 2 < max) {
      out[k++] = (kopt){ OPT_UPCAST, xrows, 8 };
      out[k++] = (kopt){ OPT_UPCAST, wrows, 2 };
      out[k++] = (kopt){ OPT_UNROLL, pr - fr, 16 };
      lanes *= 16;
    } else if (pr >= 0 && k + 1 < max) { out[k++] = (kopt){ OPT_UNROLL, pr - fr, 16 }; out[k++] = (kopt){ OPT_UNROLL, pr - fr, pamt / 16 }; }
    /* a convolution's weight gradient: a small kernel-window axis (kw) whose
     * loads step by 1, like the reduce's output column (ow) they add to.
     * All of kw as lanes, with 4 (or 6, 3, 2) of ow unrolled: neighbouring lanes read
     * overlapping input, loaded once; one tile of 8 output channels. */
    int win = -1;
    if (vaxis < 0 && pr < 0 && n > fr) {
      int unit, zero, other, ru, rz, ro;
      access_along(ast, axes[fr - 1], axes, n, &unit, &zero, &other);
      access_along(ast, axes[n - 1], axes, n, &ru, &rz, &ro);
      int64_t ws = range_static_size(axes[fr - 1]);
      int ur = pick_amount(range_static_size(axes[n - 1]), (const int[]){ 4, 6, 3, 2, 0 });
      if (unit >= 1 && ru >= 2 && ws >= 2 && ws <= 7 && ur && k < max) {
        out[k++] = (kopt){ OPT_UPCAST, fr - 1, (int)ws };
        lanes *= ws;
        win = fr - 1;
        for (int i = 0; i < fr - 1; i++) {
          access_along(ast, axes[i], axes, n, &unit, &zero, &other);
          int t = pick_amount(range_static_size(axes[i]), (const int[]){ 8, 4, 2, 0 });
          if (zero >= 1 && t && k < max) { out[k++] = (kopt){ OPT_UPCAST, i, t }; lanes *= t; break; }
        }
        if (k < max) { out[k++] = (kopt){ OPT_UNROLL, n - 1 - fr, ur }; lanes *= ur; }
      }
    }
    /* a whole convolution row as lanes: 4 output channels share each loaded
     * row (up to 160 lanes), then 2 of another axis if they fit */
    bool full_row = vaxis >= 0 && vamt != 16 && vamt != 8 && vamt != 4;
    for (int i = 0; i < fr && full_row && k < max; i++)
      if (i != vaxis && row_reused_along(ast, axes, n, vaxis, i) && range_static_size(axes[i]) % 4 == 0 && lanes * 4 <= 160) {
        out[k++] = (kopt){ OPT_UPCAST, i, 4 };
        lanes *= 4;
        break;
      }
    /* row-packed quantized weights (byte loads walk the lanes): a tile of
     * 8 rows of x, which do not move the bytes, so each decoded vector of
     * weights serves 8 of them (a prefill chunk through
     * tg_quant_matmul_rows: 1.7x a tile of 4 weight row groups for Q6_K) */
    bool byte_tile = false;
    if (vaxis >= 0 && pr < 0 && win < 0 && !full_row && loads_bytes(ast) && byte_loads_along(ast, axes[vaxis], axes, n) == 1)
      for (int i = 0; i < fr && !byte_tile && k < max; i++)
        if (i != vaxis && byte_loads_along(ast, axes[i], axes, n) == 0 && range_static_size(axes[i]) % 8 == 0) {
          out[k++] = (kopt){ OPT_UPCAST, i, 8 };
          lanes *= 8;
          byte_tile = true;
        }
    /* a packed float panel as lanes (sgemm): 8 rows of the other operand, 16
     * vector accumulators of the 32 registers, so each pair of panel loads
     * feeds 16 FMAs (1.1-1.2x a 4-row tile at 1024 and 2048) */
    bool panel_tile = panel && panel == lanes_on(out, k, vaxis) && !loads_bytes(ast);
    for (int i = fr - 1; i >= 0 && pr < 0 && win < 0 && !byte_tile; i--) {
      if (i == vaxis || (full_row && lanes_on(out, k, i) > 1)) continue;
      int unit, zero, other;
      access_along(ast, axes[i], axes, n, &unit, &zero, &other);
      int t = pick_amount(range_static_size(axes[i]), panel_tile ? (const int[]){ 8, 4, 2, 0 } : tile);
      /* a panel of 64 lanes takes a tile of 4 where 8 would not fit (the
       * 64-channel weight gradient: 2.3x) */
      if (panel_tile && t && lanes * t > 256) t = pick_amount(range_static_size(axes[i]), (const int[]){ (int)(256 / lanes), 0 });
      /* a whole kernel-window axis (3, 5, 7) that 2 and 4 do not divide:
       * a convolution's weight gradient with lanes along the output
       * channels, whose output-gradient vector (often recomputed: a ReLU's
       * mask) is then loaded once per window row instead of once per tap
       * (2.9x for 512x32x24x24, 5x5). Not when the shared load is a scalar
       * broadcast: then nothing is saved. */
      bool window_tile = !t && vaxis >= 0 && range_static_size(axes[i]) >= 3 && range_static_size(axes[i]) <= 7 && lanes <= 32 &&
                         row_reused_along(ast, axes, n, vaxis, i);
      if (window_tile) t = (int)range_static_size(axes[i]);
      /* with SIMD lanes, up to two tiles (conv: output rows and channels,
       * so each loaded vector and each broadcast weight is used 4 times) */
      if (full_row) t = range_static_size(axes[i]) % 2 == 0 ? 2 : 0;
      if (zero >= 1 && t && lanes * t <= (full_row ? 160 : panel_tile || window_tile ? 256 : 128) && k < max) { out[k++] = (kopt){ OPT_UPCAST, i, t }; lanes *= t; if (vaxis < 0 ? lanes >= 16 : lanes >= 8 * vamt) break; }
    }
    if (vaxis < 0 && pr < 0 && win < 0) {
      for (int r = n - 1; r >= fr; r--) {
        int unit, zero, other;
        access_along(ast, axes[r], axes, n, &unit, &zero, &other);
        /* the widest that fits next to the register tile (4x4 tiles of
         * dot products: 8 lanes) */
        int amt = 0;
        for (int c = 0; vec[c] && !amt; c++)
          if (range_static_size(axes[r]) % vec[c] == 0 && lanes * vec[c] <= 128) amt = vec[c];
        /* packed bytes read in pairs (tg_quant_matmul's int16 multiply-adds) */
        bool pairs = unit == 0 && loads_bytes(ast) && pair_loads_along(ast, axes[r], axes, n) >= 2;
        if ((unit >= 1 || pairs) && amt && k < max) {
          out[k++] = (kopt){ OPT_UNROLL, r - fr, amt };
          /* the 16 sub-blocks of a K-quant super-block, 4 at a time (their
           * scales' bit positions become constants; 1.5x for Q4_K) */
          if (pairs && r > fr && range_static_size(axes[r - 1]) == 16 && k < max) out[k++] = (kopt){ OPT_UNROLL, r - 1 - fr, 4 };
          /* the two nibble halves of a Q4_0/Q4_1 block: one load of the
           * bytes and one decode of the block's scale serve both */
          if (pairs && r > fr && range_static_size(axes[r - 1]) == 2 && k < max) out[k++] = (kopt){ OPT_UNROLL, r - 1 - fr, 2 };
          break;
        }
      }
    }
    /* a panel read along the lanes axis (packed matmul operand): put its
     * tiles in the outer loop, so one panel stays in cache while the other
     * operand's rows stream past (reading the other operand again per panel
     * costs less than reading every panel again per row tile). Not when the
     * lanes are the whole axis: nothing of it is left to move. */
    if (vaxis > 0 && pr < 0 && k < max && panel && panel == lanes_on(out, k, vaxis) && range_static_size(axes[vaxis]) > panel) {
      out[k++] = (kopt){ OPT_SWAP, 0, vaxis };
      outer = vaxis;
    }
  } else if (has_reduce) {
    /* a full reduction: independent partial sums */
    int amt = pick_amount(range_static_size(axes[fr]), vec);
    if (amt && k < max) out[k++] = (kopt){ OPT_UNROLL, 0, amt };
  } else if (fr > 0 && work >= THREAD_MIN_WORK && !loads_bytes(ast) && store_steps_by_one(ast, axes[fr - 1], axes, n) &&
             (!strided_load_along(ast, axes[fr - 1], axes, n) || float_alu_count(ast) >= 4)) {
    /* elementwise: SIMD lanes along the axis the store walks, so the vector
     * store and any per-row work (index math, a channel's scale) serve a
     * whole vector; clang alone leaves such loops scalar (1.7x for a pooling
     * gradient's re-layout at 512x32x20x20). Only big kernels (small ones,
     * an LLM's per-token work, ran slower with them). Not for a plain transpose (a
     * load striding along the axis, little math): lanes of gathered loads
     * run slower than clang's loop there. */
    int amt = pick_amount(range_static_size(axes[fr - 1]), vec);
    if (amt && k < max) out[k++] = (kopt){ OPT_UPCAST, fr - 1, amt };
  } else if (fr > 0 && loads_bytes(ast)) {
    /* packed blocks decoded into a float copy (an LLM prefill's K-quant
     * weights): like the reduce rule above, lanes over whole periods of the
     * innermost axis, so a block's scales and bit positions decode once per
     * iteration instead of once per value */
    int64_t p = index_period(ast, axes[fr - 1]);
    int64_t amt = p < 32 ? 32 : p > 128 ? 128 : p;
    if (p >= 8 && range_static_size(axes[fr - 1]) % amt == 0 && k + 1 < max) {
      out[k++] = (kopt){ OPT_UPCAST, fr - 1, 16 };
      out[k++] = (kopt){ OPT_UPCAST, fr - 1, (int)(amt / 16) };
    }
  }
  /* threads over the outermost output axis when there is enough work, or
   * over an inner one when that splits much more of what is read (x @ W.T
   * with few rows of x: split W's rows, so each core reads half of W) */
  if (ncores > 1 && fr > 0 && (work >= THREAD_MIN_WORK || kernel_cost(ast) >= THREAD_MIN_FLOPS) && k < max) {
    int64_t s = range_max_size(axes[outer]) / lanes_on(out, k, outer);
    int pos = 0;   /* position of the threaded axis after the opts */
    if (has_reduce) {
      double best = unsplit_reads(ast, axes, n, axes[outer]);
      for (int i = 0; i < fr; i++) {
        int64_t si = range_max_size(axes[i]) / lanes_on(out, k, i);
        double c = unsplit_reads(ast, axes, n, axes[i]);
        if (i != outer && si >= 4 * ncores && c * 2 < best) best = c, s = si, pos = i == 0 ? outer : i;
      }
    }
    if (s >= ncores) out[k++] = (kopt){ OPT_THREAD, pos, ncores };
  }
  return k;
}

int kernel_heuristic_opts(uop *ast, const tg_renderer *ren, int ncores, kopt *out, int max) {
  if (ren->has_local) return gpu_heuristic_opts(ast, ren, out, max);
  return cpu_heuristic_opts(ast, ren->has_threads ? ncores : 1, out, max);
}
