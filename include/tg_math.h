/* tg_math.h: part of the public API of tg (elementwise math beyond the basics, reductions, scans, sorting).
 * Included by tg.h; see tg.h for the conventions: lazy tensors, NULL plus
 * tg_error() on failure, ops given NULL return NULL, axes may be negative. */
#ifndef TG_MATH_H
#define TG_MATH_H
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
