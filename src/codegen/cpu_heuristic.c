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

/* float ALU ops in the kernel (its arithmetic, not its index math); a
 * float32 exp2 counts as the 16 or so its libm call costs per value, which
 * lanes replace by a vector polynomial (tg_exp2_vK: a prefill chunk's
 * SiLU and softmax, 64 x 2048 values, in a third of the time) */
static int float_alu_count(uop *ast) {
  uop_list l = uop_toposort(ast);
  int c = 0;
  for (int i = 0; i < l.n; i++)
    if (uop_is_alu(l.v[i]->op) && dt_is_float(l.v[i]->dtype)) c += l.v[i]->op == OP_EXP2 && l.v[i]->dtype.scalar == TG_F32 ? KERNEL_COST_TRANSCENDENTAL : 1;
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

/* Is an index data the kernel loaded (a table lookup: IQ4's levels at the
 * weights' nibbles)? It moves with the loads it reads, not with the axes. */
static bool index_reads_data(uop *ix) {
  uop_list l = uop_toposort(ix);
  bool found = false;
  for (int i = 0; i < l.n && !found; i++) found = l.v[i]->op == OP_LOAD;
  free(l.v);
  return found;
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
 * move (1), or some of each (-1)? Lookups at loaded data (index_reads_data)
 * do not count. */
static int byte_loads_along(uop *ast, uop *r, uop *const *axes, int n) {
  uop_list l = uop_toposort(ast);
  int still = 0, moving = 0;
  for (int i = 0; i < l.n; i++) {
    if (l.v[i]->op != OP_LOAD || l.v[i]->dtype.scalar != TG_U8 || index_reads_data(l.v[i]->src[0]->src[1])) continue;
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

/* About how many cache lines the kernel's loads touch: a load whose
 * elements lie 64 bytes or more apart along every axis it moves with (one
 * scale out of each 210-byte block of a file's Q6_K rows, packing them)
 * touches a line per element, a contiguous one a line per 64 bytes. */
static double lines_read(uop *ast, uop *const *axes, int n) {
  uop_list l = uop_toposort(ast);
  double total = 0;   /* an estimate: in double, no product of sizes overflows */
  for (int i = 0; i < l.n; i++) {
    uop *ld = l.v[i];
    if (ld->op != OP_LOAD) continue;
    double e = 1;
    int64_t step = INT64_MAX;
    for (int j = 0; j < n; j++) {
      int64_t st = index_stride(ld->src[0]->src[1], axes[j], axes, n);
      if (st == 0) continue;
      e *= (double)range_max_size(axes[j]);
      if (st == INT64_MIN) continue;   /* not affine (bits picked by the axis, a gather): no stride */
      st = st < 0 ? -st : st;
      if (st < step) step = st;
    }
    /* no affine axis: counted as contiguous */
    double bytes = (double)(step == INT64_MAX ? 1 : step) * (double)tg_dtype_size((tg_dtype)ld->dtype.scalar);
    total += e * (bytes >= 64 ? 1 : bytes / 64);
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

/* ------------------------------------------------------------ thresholds */

/* Every size and lane limit the strategies below read, in one table (so a
 * BEAM run that finds better opts for a shape class can retune one line). */
static const struct {
  int64_t thread_min_work;     /* work below which a kernel stays on one core: waking the other
                                  cores and waiting for them costs several microseconds, about
                                  what 2^18 vectorized multiply-adds take (attention over a short
                                  context ran faster on one core than on two) */
  int64_t thread_min_flops;    /* ... or its ops (kernel_cost), for iterations that each do much
                                  more (decoding quantized weights: 10 and more ops per value; a
                                  prefill chunk's softmax exponentials, 2^20 ops: 140 us on one
                                  core, 73 on two) */
  int64_t thread_min_lines;    /* ... or the cache lines its loads touch (lines_read): loads
                                  spread over memory wait on it, and two cores wait in
                                  parallel (packing a Q6_K output matrix's scales: 96,000
                                  values, each its own line) */
  int row_lanes_min, row_lanes_max;   /* a conv output row 8 lanes do not divide (20, 6): all of it as lanes */
  int panel_max_vectors;       /* a packed panel as lanes: at most 4 vectors wide */
  int64_t two_vectors_min_reduce, two_vectors_min_axis;   /* two vectors per tile row: long reduces, outputs of 64
                                                              lanes or more (attention's probabilities times a
                                                              64-wide value head over the cache: 8 accumulators
                                                              instead of 4, a prefill chunk at depth 4096 1.27x) */
  int block_min_period, block_min_lanes, block_max_lanes; /* quantized blocks unrolled whole: 32..128 lanes */
  int xrows_min;               /* rows of x sharing each decoded vector of w: at least 16 */
  int window_min, window_max;  /* a conv weight gradient's kernel window as lanes: 2..7 */
  int full_row_max_lanes;      /* a whole conv row's lanes times its channel tiles */
  int tile_max_lanes, wide_tile_max_lanes;   /* register tiles; those of a panel or kernel window */
  int unroll_max_lanes;        /* partial sums beside the register tile (4x4 dot products: 8 lanes) */
  int lanes_min_float_ops;     /* float ops per value that make a small elementwise kernel worth lanes */
  int byte_move_max_lanes;     /* bytes moved in small groups: lanes up to one 64-byte vector */
} LIM = {
  .thread_min_work = 1 << 18, .thread_min_flops = 1 << 20, .thread_min_lines = 1 << 14,
  .row_lanes_min = 5, .row_lanes_max = 32,
  .panel_max_vectors = 4,
  .two_vectors_min_reduce = 256, .two_vectors_min_axis = 64,
  .block_min_period = 8, .block_min_lanes = 32, .block_max_lanes = 128,
  .xrows_min = 16,
  .window_min = 2, .window_max = 7,
  .full_row_max_lanes = 160,
  .tile_max_lanes = 128, .wide_tile_max_lanes = 256,
  .unroll_max_lanes = 128,
  .lanes_min_float_ops = 16,
  .byte_move_max_lanes = 64,
};

static const int vec[] = { 16, 8, 4, 0 }, tile[] = { 4, 2, 0 };

/* ------------------------------------------------------------ strategies */

/* What the strategies have decided so far for one kernel. */
typedef struct {
  uop *ast;
  uop *axes[64];
  int n, fr;             /* axes; the first reduce axis */
  int ncores;
  int64_t work;          /* all loops' trip counts multiplied (saturating) */
  kopt *out;
  int k, max;
  int64_t lanes;         /* lanes chosen so far */
  int vaxis, vamt;       /* the SIMD lane axis and its width (-1, 0: none) */
  int64_t panel;         /* the packed panel width along vaxis (0: none) */
  int pr, pamt;          /* a reduce axis unrolled by whole quantized blocks (-1: none) */
  int win;               /* a weight gradient's kernel-window axis as lanes (-1: none) */
  bool full_row, byte_tile;
  int outer;             /* the output axis that ends up outermost */
} cpu_plan;

#define AX(p, i) range_static_size((p)->axes[i])

/* Lanes over whole quantized blocks of index period per: the period,
 * clamped to the table's 32..128. */
static int64_t block_lanes(int64_t per) {
  return per < LIM.block_min_lanes ? LIM.block_min_lanes : per > LIM.block_max_lanes ? LIM.block_max_lanes : per;
}

/* 1. SIMD lanes along an output axis the loads walk with stride 1. */
static void simd_lanes(cpu_plan *p) {
  for (int i = p->fr - 1; i >= 0 && p->vaxis < 0; i--) {
    int unit, zero, other;
    access_along(p->ast, p->axes[i], p->axes, p->n, &unit, &zero, &other);
    int64_t size = AX(p, i);
    int amt = pick_amount(size, vec);
    /* a convolution's output row that 8 lanes do not divide (20, 6): the
     * whole row as lanes, unless it is shorter than the innermost reduce
     * (then it is a weight gradient's kernel window, below) */
    if (size % 8 && size >= LIM.row_lanes_min && size <= LIM.row_lanes_max && p->n > p->fr && size >= AX(p, p->n - 1)) amt = (int)size;
    if (amt && unit >= 1) { p->vaxis = i; p->vamt = amt; }
  }
  if (p->vaxis >= 0 && p->k < p->max) { p->out[p->k++] = (kopt){ OPT_UPCAST, p->vaxis, p->vamt }; p->lanes *= p->vamt; }
}

/* 2. More of the lane axis: a packed panel whole; two vectors per tile row
 * for long reductions over big outputs (matmul: each load of the other
 * operand feeds twice the math); or all of a short lane axis when costly
 * scalar work sits beside the lanes (it then runs once per iteration). */
static void wider_lanes(cpu_plan *p) {
  int64_t red = 1;
  for (int r = p->fr; r < p->n; r++) red = tg_mul_sat_i64(red, range_max_size(p->axes[r]));
  p->panel = p->vaxis >= 0 ? panel_stride(p->ast, p->axes, p->n, p->fr, p->vaxis) : 0;
  /* (not when the panel is all the output there is: a per-channel sum over
   * channels-last data would then run on one core) */
  int64_t outputs = 1;
  for (int i = 0; i < p->fr; i++) outputs = tg_mul_sat_i64(outputs, range_max_size(p->axes[i]));
  bool panel_threads = p->ncores < 2 || outputs / (p->panel ? p->panel : 1) >= p->ncores || p->work < LIM.thread_min_work;
  int v = p->vaxis, vamt = p->vamt;
  if (p->panel > vamt && p->panel % vamt == 0 && p->panel / vamt <= LIM.panel_max_vectors && range_max_size(p->axes[v]) % p->panel == 0 &&
      panel_threads && p->k < p->max) {
    p->out[p->k++] = (kopt){ OPT_UPCAST, v, (int)(p->panel / vamt) };   /* lanes = the whole panel */
    p->lanes *= p->panel / vamt;
  } else if (v >= 0 && vamt == 16 && red >= LIM.two_vectors_min_reduce && (range_max_size(p->axes[v]) / 16) % 2 == 0 &&
             range_max_size(p->axes[v]) >= LIM.two_vectors_min_axis && p->k < p->max) {
    p->out[p->k++] = (kopt){ OPT_UPCAST, v, 2 };
    p->lanes *= 2;
  } else if (v >= 0 && vamt == 16 && AX(p, v) % 16 == 0 && AX(p, v) / 16 >= 2 && AX(p, v) / 16 <= 4 &&
             costly_beside_lanes(p->ast, p->axes, p->n, p->fr, p->axes[v]) && p->k < p->max) {
    p->out[p->k++] = (kopt){ OPT_UPCAST, v, (int)(AX(p, v) / 16) };
    p->lanes *= AX(p, v) / 16;
  }
}

/* 3. Packed quantized blocks: a reduce walking a block structure unrolls
 * whole blocks (at least 32 lanes, at most 128), so a block's scales and bit
 * positions become constants per iteration and are decoded once for its
 * values; no register tile (the per-element decoding is the work). Only for
 * kernels reading packed bytes: float kernels (a conv's backward) have
 * periods too, and want tiles. As 16 inner lanes (consecutive bytes: SIMD
 * when the decoding allows) times the rest of the block. With many rows of
 * the other operand (x @ w.T for a prefill chunk of x): 8 of them share
 * each decoded vector of w and 2 rows of w each loaded vector of x, 16
 * lanes of the block at a time (2x a decode-once copy of w for Q8_0/Q4_0 at
 * 64x4096x768). */
static void quant_blocks(cpu_plan *p) {
  if (p->vaxis < 0 && loads_bytes(p->ast))
    for (int r = p->n - 1; r >= p->fr && p->pr < 0; r--) {
      int64_t per = index_period(p->ast, p->axes[r]);
      int64_t amt = block_lanes(per);
      if (per >= LIM.block_min_period && AX(p, r) % amt == 0) p->pr = r, p->pamt = (int)amt;
    }
  int xrows = -1, wrows = -1;
  for (int i = 0; i < p->fr && p->pr >= 0; i++) {
    int moves = byte_loads_along(p->ast, p->axes[i], p->axes, p->n);
    if (moves == 0 && xrows < 0 && AX(p, i) >= LIM.xrows_min && AX(p, i) % 8 == 0) xrows = i;
    else if (moves == 1 && wrows < 0 && AX(p, i) % 2 == 0) wrows = i;
  }
  int u = p->pr - p->fr;
  if (xrows >= 0 && wrows >= 0 && p->k + 2 < p->max) {
    p->out[p->k++] = (kopt){ OPT_UPCAST, xrows, 8 };
    p->out[p->k++] = (kopt){ OPT_UPCAST, wrows, 2 };
    p->out[p->k++] = (kopt){ OPT_UNROLL, u, 16 };
    p->lanes *= 16;
  } else if (p->pr >= 0 && p->k + 1 < p->max) {
    p->out[p->k++] = (kopt){ OPT_UNROLL, u, 16 };
    p->out[p->k++] = (kopt){ OPT_UNROLL, u, p->pamt / 16 };
  }
}

/* 4. A convolution's weight gradient: a small kernel-window axis (kw) whose
 * loads step by 1, like the reduce's output column (ow) they add to. All of
 * kw as lanes, with 4 (or 6, 3, 2) of ow unrolled: neighbouring lanes read
 * overlapping input, loaded once; one tile of 8 output channels. */
static void conv_weight_gradient(cpu_plan *p) {
  if (p->vaxis >= 0 || p->pr >= 0 || p->n <= p->fr) return;
  int unit, zero, other, ru, rz, ro, fr = p->fr, n = p->n;
  access_along(p->ast, p->axes[fr - 1], p->axes, n, &unit, &zero, &other);
  access_along(p->ast, p->axes[n - 1], p->axes, n, &ru, &rz, &ro);
  int64_t ws = AX(p, fr - 1);
  int ur = pick_amount(AX(p, n - 1), (const int[]){ 4, 6, 3, 2, 0 });
  if (!(unit >= 1 && ru >= 2 && ws >= LIM.window_min && ws <= LIM.window_max && ur && p->k < p->max)) return;
  p->out[p->k++] = (kopt){ OPT_UPCAST, fr - 1, (int)ws };
  p->lanes *= ws;
  p->win = fr - 1;
  for (int i = 0; i < fr - 1; i++) {
    access_along(p->ast, p->axes[i], p->axes, n, &unit, &zero, &other);
    int t = pick_amount(AX(p, i), (const int[]){ 8, 4, 2, 0 });
    if (zero >= 1 && t && p->k < p->max) { p->out[p->k++] = (kopt){ OPT_UPCAST, i, t }; p->lanes *= t; break; }
  }
  if (p->k < p->max) { p->out[p->k++] = (kopt){ OPT_UNROLL, n - 1 - fr, ur }; p->lanes *= ur; }
}

/* 5. A whole convolution row as lanes: 4 output channels share each loaded
 * row (up to 160 lanes). */
static void conv_row_channels(cpu_plan *p) {
  p->full_row = p->vaxis >= 0 && p->vamt != 16 && p->vamt != 8 && p->vamt != 4;
  for (int i = 0; i < p->fr && p->full_row && p->k < p->max; i++)
    if (i != p->vaxis && row_reused_along(p->ast, p->axes, p->n, p->vaxis, i) && AX(p, i) % 4 == 0 && p->lanes * 4 <= LIM.full_row_max_lanes) {
      p->out[p->k++] = (kopt){ OPT_UPCAST, i, 4 };
      p->lanes *= 4;
      break;
    }
}

/* 6. Row-packed quantized weights (byte loads walk the lanes): a tile of 8
 * rows of x, which do not move the bytes, so each decoded vector of weights
 * serves 8 of them (a prefill chunk through tg_quant_matmul_rows: 1.7x a
 * tile of 4 weight row groups for Q6_K). */
static void packed_rows_tile(cpu_plan *p) {
  if (!(p->vaxis >= 0 && p->pr < 0 && p->win < 0 && !p->full_row && loads_bytes(p->ast) &&
        byte_loads_along(p->ast, p->axes[p->vaxis], p->axes, p->n) == 1)) return;
  for (int i = 0; i < p->fr && !p->byte_tile && p->k < p->max; i++)
    if (i != p->vaxis && byte_loads_along(p->ast, p->axes[i], p->axes, p->n) == 0 && AX(p, i) % 8 == 0) {
      p->out[p->k++] = (kopt){ OPT_UPCAST, i, 8 };
      p->lanes *= 8;
      p->byte_tile = true;
    }
}

/* A matrix-vector product's one output axis (LLM decoding: the weight rows,
 * the vector shared by all): no register tile over it. Its rows stream from
 * memory once, and a tile of 4 rows reads 4 places of each page in turn,
 * which the hardware prefetchers follow badly: on a 2-core AMD EPYC (Zen 4)
 * an F16 matvec over 245 MB read 11-15 GB/s tiled, 20-34 GB/s one row after
 * the other (software prefetch got the tile to 15-17). The tile's gain,
 * loading the vector once per 4 rows, is an L1 hit saved. */
static bool matvec_rows(const cpu_plan *p) {
  return p->fr == 1 && p->vaxis < 0 && !loads_bytes(p->ast);
}

/* 7. Register tiles along output axes some load does not depend on (the
 * loaded value is reused by every lane). A packed float panel as lanes
 * (sgemm): 8 rows of the other operand, 16 vector accumulators of the 32
 * registers, so each pair of panel loads feeds 16 FMAs (1.1-1.2x a 4-row
 * tile at 1024 and 2048). */
static void register_tiles(cpu_plan *p) {
  if (p->pr >= 0 || p->win >= 0 || p->byte_tile) return;
  if (matvec_rows(p)) return;
  bool panel_tile = p->panel && p->panel == lanes_on(p->out, p->k, p->vaxis) && !loads_bytes(p->ast);
  for (int i = p->fr - 1; i >= 0; i--) {
    if (i == p->vaxis || (p->full_row && lanes_on(p->out, p->k, i) > 1)) continue;
    /* a panel's tile runs over rows of the other operand, which reuse each
     * loaded panel vector (not over more panels: one load per multiply-add,
     * and a float32 panel set per row tile that no longer stays in L2) */
    if (panel_tile && !row_reused_along(p->ast, p->axes, p->n, p->vaxis, i)) continue;
    int unit, zero, other;
    access_along(p->ast, p->axes[i], p->axes, p->n, &unit, &zero, &other);
    int t = pick_amount(AX(p, i), panel_tile ? (const int[]){ 8, 4, 2, 0 } : tile);
    /* a panel of 64 lanes takes a tile of 4 where 8 would not fit (the
     * 64-channel weight gradient: 2.3x) */
    if (panel_tile && t && p->lanes * t > LIM.wide_tile_max_lanes) t = pick_amount(AX(p, i), (const int[]){ (int)(LIM.wide_tile_max_lanes / p->lanes), 0 });
    /* a whole kernel-window axis (3, 5, 7) that 2 and 4 do not divide: a
     * convolution's weight gradient with lanes along the output channels,
     * whose output-gradient vector (often recomputed: a ReLU's mask) is then
     * loaded once per window row instead of once per tap (2.9x for
     * 512x32x24x24, 5x5). Not when the shared load is a scalar broadcast:
     * then nothing is saved. */
    bool window_tile = !t && p->vaxis >= 0 && AX(p, i) >= 3 && AX(p, i) <= LIM.window_max && p->lanes <= 32 &&
                       row_reused_along(p->ast, p->axes, p->n, p->vaxis, i);
    if (window_tile) t = (int)AX(p, i);
    /* with SIMD lanes, up to two tiles (conv: output rows and channels, so
     * each loaded vector and each broadcast weight is used 4 times) */
    if (p->full_row) t = AX(p, i) % 2 == 0 ? 2 : 0;
    int limit = p->full_row ? LIM.full_row_max_lanes : panel_tile || window_tile ? LIM.wide_tile_max_lanes : LIM.tile_max_lanes;
    if (zero >= 1 && t && p->lanes * t <= limit && p->k < p->max) {
      p->out[p->k++] = (kopt){ OPT_UPCAST, i, t };
      p->lanes *= t;
      if (p->vaxis < 0 ? p->lanes >= 16 : p->lanes >= 8 * p->vamt) break;
    }
  }
}

/* 7b. A matrix-vector product over packed panels (an LLM's float weights
 * decoding one token: one output axis, a whole panel as its lanes): 4
 * panels at once, so 8 vector accumulators hide the multiply-add latency
 * that one panel's 2 wait on (F16 4096x768 on one Xeon: 1.15x, and 1.15x
 * the same matrix's rows one after the other). */
static void panel_matvec_tile(cpu_plan *p) {
  if (!(p->fr == 1 && p->vaxis == 0 && p->panel && p->panel == lanes_on(p->out, p->k, 0) && !loads_bytes(p->ast) && p->k < p->max)) return;
  if (AX(p, 0) % (p->panel * 4) == 0 && p->lanes * 4 <= LIM.tile_max_lanes) {
    p->out[p->k++] = (kopt){ OPT_UPCAST, 0, 4 };
    p->lanes *= 4;
  }
}

/* 8. Without output lanes, partial sums along a unit-stride reduce axis:
 * the widest that fits next to the register tile. */
static void reduce_partial_sums(cpu_plan *p) {
  if (p->vaxis >= 0 || p->pr >= 0 || p->win >= 0) return;
  for (int r = p->n - 1; r >= p->fr; r--) {
    int unit, zero, other;
    access_along(p->ast, p->axes[r], p->axes, p->n, &unit, &zero, &other);
    int amt = 0;
    for (int c = 0; vec[c] && !amt; c++)
      if (AX(p, r) % vec[c] == 0 && p->lanes * vec[c] <= LIM.unroll_max_lanes) amt = vec[c];
    /* packed bytes read in pairs (tg_quant_matmul's int16 multiply-adds) */
    bool pairs = unit == 0 && loads_bytes(p->ast) && pair_loads_along(p->ast, p->axes[r], p->axes, p->n) >= 2;
    if ((unit >= 1 || pairs) && amt && p->k < p->max) {
      p->out[p->k++] = (kopt){ OPT_UNROLL, r - p->fr, amt };
      /* the 16 sub-blocks of a K-quant super-block, 4 at a time (their
       * scales' bit positions become constants; 1.5x for Q4_K) */
      if (pairs && r > p->fr && AX(p, r - 1) == 16 && p->k < p->max) p->out[p->k++] = (kopt){ OPT_UNROLL, r - 1 - p->fr, 4 };
      /* the two nibble halves of a Q4_0/Q4_1 block: one load of the bytes
       * and one decode of the block's scale serve both */
      if (pairs && r > p->fr && AX(p, r - 1) == 2 && p->k < p->max) p->out[p->k++] = (kopt){ OPT_UNROLL, r - 1 - p->fr, 2 };
      break;
    }
  }
}

/* 9. A panel read along the lanes axis (packed matmul operand): its tiles
 * in the outer loop, so one panel stays in cache while the other operand's
 * rows stream past (reading the other operand again per panel costs less
 * than reading every panel again per row tile). Not when the lanes are the
 * whole axis: nothing of it is left to move. */
static void panel_outer(cpu_plan *p) {
  if (p->vaxis > 0 && p->pr < 0 && p->k < p->max && p->panel && p->panel == lanes_on(p->out, p->k, p->vaxis) && AX(p, p->vaxis) > p->panel) {
    p->out[p->k++] = (kopt){ OPT_SWAP, 0, p->vaxis };
    p->outer = p->vaxis;
  }
}

/* Elementwise: SIMD lanes along the axis the store walks, so the vector
 * store and any per-row work (index math, a channel's scale) serve a whole
 * vector; clang alone leaves such loops scalar (1.7x for a pooling
 * gradient's re-layout at 512x32x20x20). Only big kernels (small ones, an
 * LLM's per-token work, ran slower with them), or small ones with much math
 * per value (an LLM's activations normed and quantized to int8 for the next
 * matvec: 768 values in 1.5 us instead of 11.7). Not for a plain transpose (a
 * load striding along the axis, little math): lanes of gathered loads run
 * slower than clang's loop there. */
static bool elementwise_lanes(cpu_plan *p) {
  int fr = p->fr, n = p->n;
  bool big = p->work >= LIM.thread_min_work || float_alu_count(p->ast) >= LIM.lanes_min_float_ops;
  if (!(fr > 0 && big && !loads_bytes(p->ast) && store_steps_by_one(p->ast, p->axes[fr - 1], p->axes, n) &&
        (!strided_load_along(p->ast, p->axes[fr - 1], p->axes, n) || float_alu_count(p->ast) >= 4))) return false;
  int amt = pick_amount(AX(p, fr - 1), vec);
  if (amt && p->k < p->max) p->out[p->k++] = (kopt){ OPT_UPCAST, fr - 1, amt };
  return true;
}

/* Packed blocks decoded into a float copy (an LLM prefill's K-quant
 * weights): like quant_blocks, lanes over whole periods of the innermost
 * axis, so a block's scales and bit positions decode once per iteration
 * instead of once per value. */
static void packed_decode_lanes(cpu_plan *p) {
  int fr = p->fr;
  if (!(fr > 0 && loads_bytes(p->ast))) return;
  int64_t per = index_period(p->ast, p->axes[fr - 1]);
  int64_t amt = block_lanes(per);
  if (per >= LIM.block_min_period && AX(p, fr - 1) % amt == 0 && p->k + 1 < p->max) {
    p->out[p->k++] = (kopt){ OPT_UPCAST, fr - 1, 16 };
    p->out[p->k++] = (kopt){ OPT_UPCAST, fr - 1, (int)(amt / 16) };
  }
}

/* Does every store step by `by` along r, and store bytes? */
static bool byte_stores_step_by(uop *ast, uop *r, uop *const *axes, int n, int64_t by) {
  if (ast->op != OP_SINK || !ast->nsrc) return false;
  for (int i = 0; i < ast->nsrc; i++) {
    uop *st = ast->src[i];
    if (st->op != OP_STORE || tg_dtype_size((tg_dtype)st->src[1]->dtype.scalar) != 1 || index_stride(st->src[0]->src[1], r, axes, n) != by) return false;
  }
  return true;
}

/* Bytes moved in groups of a few (an LLM loader packing quantized rows:
 * each 4-byte group of a row goes beside the same group of 15 other rows):
 * the innermost output axis as lanes when the stores and a load step by 1
 * along it, and then the axis outside it as far as the stores go on
 * contiguously, to a vector of at most 64 bytes: one 4-byte load per
 * group, one wide store, instead of a loop per byte (2-2.5x). */
static bool has_gated_load(uop *ast) {
  uop_list l = uop_toposort(ast);
  bool found = false;
  for (int i = 0; i < l.n && !found; i++) found = l.v[i]->op == OP_LOAD && l.v[i]->src[0]->nsrc > 2;
  free(l.v);
  return found;
}

static bool byte_move_lanes(cpu_plan *p) {
  int fr = p->fr, n = p->n;
  /* (gated loads, a stacked matrix's parts, stay scalar: unrolled, not vectors) */
  if (!(fr > 0 && loads_bytes(p->ast) && p->work >= LIM.thread_min_work && p->k + 1 < p->max && !has_gated_load(p->ast))) return false;
  int64_t inner = AX(p, fr - 1);
  int unit, zero, other;
  access_along(p->ast, p->axes[fr - 1], p->axes, n, &unit, &zero, &other);
  if (!(unit >= 1 && inner >= 2 && inner < LIM.byte_move_max_lanes && !(inner & (inner - 1)) &&
        byte_stores_step_by(p->ast, p->axes[fr - 1], p->axes, n, 1))) return false;
  p->out[p->k++] = (kopt){ OPT_UPCAST, fr - 1, (int)inner };
  if (fr >= 2 && byte_stores_step_by(p->ast, p->axes[fr - 2], p->axes, n, inner)) {
    int64_t amt = LIM.byte_move_max_lanes / inner;
    while (amt > 1 && AX(p, fr - 2) % amt) amt /= 2;
    if (amt > 1) p->out[p->k++] = (kopt){ OPT_UPCAST, fr - 2, (int)amt };
  }
  return true;
}

/* Threads over the outermost output axis when there is enough work, or
 * over an inner one when that splits much more of what is read (x @ W.T
 * with few rows of x: split W's rows, so each core reads half of W). */
static void threads(cpu_plan *p) {
  int ncores = p->ncores, fr = p->fr;
  if (!(ncores > 1 && fr > 0 && p->k < p->max &&
        (p->work >= LIM.thread_min_work || kernel_cost(p->ast) >= LIM.thread_min_flops || lines_read(p->ast, p->axes, p->n) >= (double)LIM.thread_min_lines)))
    return;
  int64_t s = range_max_size(p->axes[p->outer]) / lanes_on(p->out, p->k, p->outer);
  int pos = 0;   /* position of the threaded axis after the opts */
  if (p->n > fr) {
    double best = unsplit_reads(p->ast, p->axes, p->n, p->axes[p->outer]);
    for (int i = 0; i < fr; i++) {
      int64_t si = range_max_size(p->axes[i]) / lanes_on(p->out, p->k, i);
      double c = unsplit_reads(p->ast, p->axes, p->n, p->axes[i]);
      if (i != p->outer && si >= 4 * ncores && c * 2 < best) best = c, s = si, pos = i == 0 ? p->outer : i;
    }
  }
  if (s >= ncores) p->out[p->k++] = (kopt){ OPT_THREAD, pos, ncores };
}

static int cpu_heuristic_opts(uop *ast, int ncores, kopt *out, int max) {
  cpu_plan p = { .ast = ast, .ncores = ncores, .out = out, .max = max, .lanes = 1, .work = 1, .vaxis = -1, .pr = -1, .win = -1 };
  p.n = kernel_axes(ast, p.axes, 64, &p.fr);
  for (int i = 0; i < p.n; i++) p.work = tg_mul_sat_i64(p.work, range_max_size(p.axes[i]));   /* saturates: several reduces' loops multiply past int64 */
  bool has_reduce = p.n > p.fr;
  if (has_reduce && p.fr > 0) {
    /* outputs with a reduce (matmul, conv, matvec, row sums) */
    simd_lanes(&p);
    wider_lanes(&p);
    quant_blocks(&p);
    conv_weight_gradient(&p);
    conv_row_channels(&p);
    packed_rows_tile(&p);
    register_tiles(&p);
    panel_matvec_tile(&p);
    reduce_partial_sums(&p);
    panel_outer(&p);
  } else if (has_reduce) {
    /* a full reduction: independent partial sums */
    int amt = pick_amount(AX(&p, p.fr), vec);
    if (amt && p.k < max) out[p.k++] = (kopt){ OPT_UNROLL, 0, amt };
  } else if (!elementwise_lanes(&p) && !byte_move_lanes(&p)) {
    packed_decode_lanes(&p);
  }
  threads(&p);
  return p.k;
}

int kernel_heuristic_opts(uop *ast, const tg_renderer *ren, int ncores, kopt *out, int max) {
  if (ren->has_local) return gpu_heuristic_opts(ast, ren, out, max);
  return cpu_heuristic_opts(ast, ren->has_threads ? ncores : 1, out, max);
}
