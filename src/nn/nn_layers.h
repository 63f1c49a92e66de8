/* nn_layers.h: helpers shared by the nn layer, state-dict and optimizer files. */
#ifndef TG_NN_LAYERS_INTERNAL_H
#define TG_NN_LAYERS_INTERNAL_H

#include "tg.h"

/* Realizes t (contiguous), sets requires_grad to grad and takes it out of
 * every scope, so it lives until tg_free. Frees t and returns NULL on failure. */
tg_tensor *nn_own(tg_tensor *t, bool grad);
/* "<prefix>.<name>" or "<name>" into sd. */
int nn_state_add(tg_state_dict *sd, const char *prefix, const char *name, tg_tensor *t);
/* What every tg_<layer>_state checks first: the layer and sd are not NULL.
 * 0, or -1 with "fn: ... is NULL". */
int nn_state_args(const char *fn, const void *layer, const tg_state_dict *sd);

#endif
