/* realize.h: from tensor-graph roots to computed buffers. */
#ifndef TG_REALIZE_H
#define TG_REALIZE_H

#include "uop/uop.h"
#include "util/util.h"

/* Schedules, compiles and runs what the roots need. On success fills
 * `becomes` with each realized node -> its buffer-backed replacement
 * (RESHAPE(BUFFER) or a view of the assigned buffer; borrowed from the
 * caller's pool) and returns 0; on failure returns -1 with tg_error set. */
int engine_realize(uop *const *roots, int n, const char *default_device, ptrmap *becomes);

/* The buffer behind a realized, contiguous tensor node (RESHAPE(BUFFER) or
 * BUFFER), or NULL. */
struct tg_buffer *uop_contiguous_buffer(const uop *u);

#endif
