/* shard.h: sharded tensors (tinygrad's MULTI). A sharded tensor's node is
 * MULTI(part_0, ..., part_n-1) with arg = the axis the parts split (-1: every
 * part is the whole value, replicated); part i is a graph on device i. The
 * tensor layer builds ordinary ops over MULTI nodes (its shape is the whole
 * tensor's); before scheduling, shard_lower turns that graph into one graph
 * per device, with ALLREDUCE nodes where a reduction crosses the parts
 * (schedule/allreduce.c expands those into copies and adds). */
#ifndef TG_SHARD_H
#define TG_SHARD_H

#include "engine/linear.h"
#include "tensor/tensor.h"

#define SHARD_MAX_DEVICES 16

/* The interned name of a device tuple ("CPU,CPU:1"): what a sharded
 * tensor's device is, so that tensors on the same devices compare equal. */
const char *shard_devices_name(const char *const *devices, int n);
/* Whether name is such a tuple; its first device (name itself when not). */
bool shard_is_multi_name(const char *name);
const char *shard_first_device(const char *name);
/* t replicated (tg_shard axis -1) on the devices of the tuple name. */
tg_tensor *shard_replicate_on(tg_tensor *t, const char *name);
/* Whether any MULTI node was ever made (realize skips the walk when not). */
bool shard_used(void);

/* Whether t's graph reads no memory (constants, aranges, random counters):
 * such a tensor can join an op on any device. */
bool tensor_reads_no_memory(const tg_tensor *t);
/* The device of an op over a and b: theirs when they agree; the sharded
 * one's when the other reads no memory; else NULL and an error that names
 * both. */
const char *tensor_join_device(const tg_tensor *a, const tg_tensor *b, const char *op);

/* Lowers roots (tensor-graph nodes, possibly over MULTI nodes) to graphs per
 * device, schedules and runs them; becomes gets each root's replacement
 * (MULTI of the parts' buffers for a sharded root). 0, or -1 with tg_error. */
int shard_realize(uop *const *roots, int n, const char *default_device, ptrmap *becomes);
/* The same kept as a linear (tg_schedule_new) instead of run: becomes
 * says what the roots are once it has run. */
int shard_linearize(uop *const *roots, int n, const char *default_device, ptrmap *becomes, linear *lin);

/* The axis u's value is sharded on after lowering: -1 replicated, -2 plain. */
int shard_axis_of(uop *u);
/* Whether any root's graph has a MULTI node. */
bool shard_graph_has_multi(uop *const *roots, int n);

/* The graphs shard_realize would schedule for roots (parts in order, the
 * allreduces expanded): malloc'd, *nout of them; NULL with tg_error. */
uop **shard_lower_roots(uop *const *roots, int n, int *nout);

/* tg_data of a sharded tensor: gathered on its first device. */
int shard_data(tg_tensor *t, void *out, size_t nbytes);

#endif
