/* tg_nn.h: part of the public API of tg (neural-network functional ops: convolution, pooling, normalization, attention, losses, and random initializers).
 * Included by tg.h; see tg.h for the conventions: lazy tensors, NULL plus
 * tg_error() on failure, ops given NULL return NULL, axes may be negative. */
#ifndef TG_NN_H
#define TG_NN_H
#ifndef TG_H
#include "tg.h"
#endif
#ifdef __cplusplus
extern "C" {
#endif

#ifdef __cplusplus
}
#endif
#endif
