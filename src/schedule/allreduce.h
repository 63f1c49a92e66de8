/* allreduce.h: ALLREDUCE(p_0, ..., p_n-1) with arg (op, i) is op (ADD or
 * MAX) over the partial values p_j, p_j on device j, delivered on device i
 * (tensor/shard_lower.c makes them). Before scheduling, allreduce_expand
 * replaces them with copies between devices (schedule items like any
 * kernel) and elementwise ops:
 *  - naive: every device copies every other part and folds them all, in
 *    the same order everywhere (every device gets the same bits);
 *  - ring: the flat value in n chunks; a reduce-scatter passes each chunk
 *    around the ring, adding each device's share, then an all-gather passes
 *    each reduced chunk on to the others (2(n-1)/n of the data moves per
 *    device instead of n-1 times all of it).
 * Allreduces that do not feed one another are bucketed: one flat value per
 * device (the parts side by side), one allreduce, and slices back (a
 * training step's gradient allreduces are one group of kernels). */
#ifndef TG_ALLREDUCE_H
#define TG_ALLREDUCE_H

#include "runtime/device.h"
#include "uop/uop.h"
#include "util/util.h"

typedef enum { ALLREDUCE_NAIVE, ALLREDUCE_RING } allreduce_kind;

/* tinygrad's choice: ring when TG_RING >= 2, or when TG_RING >= 1 (the
 * default) on more than 2 devices and more than TG_RING_ALLREDUCE_THRESHOLD
 * (256000) elements; naive otherwise. TG_RING=0 never rings. */
allreduce_kind allreduce_choose(int ndev, int64_t numel);

/* The device a (plain) node's value lives on. */
typedef tg_device *(*allreduce_device_fn)(void *ctx, uop *u);

/* roots with every ALLREDUCE replaced: a malloc'd array of n (borrowed)
 * nodes, or NULL with tg_error. rebuilt (may be NULL) gets what each node
 * above an allreduce became (graph_substitute_memo's memo). */
uop **allreduce_expand(uop *const *roots, int n, allreduce_device_fn device_of, void *ctx, ptrmap *rebuilt);

#endif
