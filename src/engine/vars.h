/* vars.h: the values bound to symbolic variables (DEFINE_VAR), and the
 * order in which a kernel receives them (sorted by name). */
#ifndef TG_VARS_H
#define TG_VARS_H

#include "uop/uop.h"

/* Declares a variable (or checks a redeclaration has the same range). */
int vars_declare(const char *name, int64_t min, int64_t max);
/* The declared range of name; -1 (no error set) when it is not declared. */
int vars_range(const char *name, int64_t *min, int64_t *max);
/* Fills values for names from the current bindings; -1 + tg_error when one
 * is unbound. */
int vars_values(const char *const *names, int n, int64_t *values);

#endif
