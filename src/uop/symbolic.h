/* symbolic.h: value ranges of integer nodes and the symbolic rule set that
 * folds constants and simplifies index arithmetic. */
#ifndef TG_SYMBOLIC_H
#define TG_SYMBOLIC_H

#include "uop/rewrite.h"

/* Smallest and largest value an int/bool node can take, from CONST, RANGE
 * (0..size-1), DEFINE_VAR (src[0], src[1]: CONST min, max) and interval
 * arithmetic; the dtype's limits when unknown or when the arithmetic could
 * wrap (INT64_MIN..INT64_MAX for floats). Cached in the node, computed
 * iteratively. u64 nodes other than constants below 2^63 report
 * 0..INT64_MAX. A RANGE whose size may be 0 has an unknown range. */
int64_t uop_vmin(uop *u);
int64_t uop_vmax(uop *u);

/* Computes op on constant operands as the target would, in dtype dt (ints
 * wrap, floats round to dt; IDIV/MOD truncate like C and division by zero of
 * ints gives 0; comparisons give 0/1; THREEFRY is threefry2x32 of uint64
 * counter and key, exact through the integer path). BITCAST gives 0. */
double exec_alu(uop_op op, dtype_t dt, const double *srcs, int n);

/* The symbolic rules: constant folding, identities (x+0, x*1, x*0 for ints,
 * x//1, x%1), (x*c)//c, (x//a)//b, x%c and x//c with known ranges, divmod of
 * sums with multiples of c, comparisons decided by ranges, WHERE with a
 * constant condition, combining constants (x+c1)+c2. */
const tg_matcher *symbolic_matcher(void);
/* graph_rewrite(u, symbolic_matcher(), NULL), after a small pre-pass that
 * recombines (x//c)*c + x%c while the graph is as written. */
uop *uop_simplify(uop *u);

/* d(index)/d(r) for an index affine in the ranges axes[0..n) (the others
 * held at 0); INT64_MIN when it is not affine in them. */
int64_t index_stride(uop *index, uop *r, uop *const *axes, int n);
/* Between these, uop_simplify remembers its results (per thread, nested
 * pairs allowed): for a phase that simplifies the same expressions many
 * times, such as scheduling and preparing one realize. */
void uop_simplify_memo_begin(void);
void uop_simplify_memo_end(void);

#endif
