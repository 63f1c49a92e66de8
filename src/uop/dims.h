/* dims.h: symbolic axes of tensor-graph nodes. An axis can run to a
 * variable (a DEFINE_VAR bound per call) instead of its full size: the
 * node's shape keeps the variable's max, and dim_var names the variable
 * (see the fields in uop.h). SHRINK_VAR(x, var) with arg = axis makes one;
 * the rules below carry it through the graph. UNSHRINK_VAR(x, var) undoes
 * it (the axis is static again, 0 past the variable): SHRINK_VAR's gradient. */
#ifndef TG_DIMS_H
#define TG_DIMS_H

#include "uop/uop.h"

/* Fills u's dim_var / dim_bcast / dim_err from its sources (uop_new calls it). */
void uop_set_dims(uop *u);

/* The DEFINE_VAR axis i of u runs to, NULL when static. */
static inline uop *uop_dim_var(const uop *u, int i) { return u->dim_var && i >= 0 && i < u->ndim ? u->dim_var[i] : NULL; }
static inline bool uop_has_var_dims(const uop *u) { return u->dim_var != NULL; }
/* The static view v (same shape as like) with like's symbolic axes put back. */
uop *uop_with_dims_of(uop *v, const uop *like);

#endif
