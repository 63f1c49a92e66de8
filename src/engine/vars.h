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

/* Values given for some variables (a run's own), taken before the bound
 * ones. */
typedef struct { const char *const *names; const int64_t *values; int n; } var_values;
/* Checks given: each name declared, each value in its range, no name twice.
 * who names the caller in the error. 0 or -1 + tg_error. */
int vars_check_given(const char *who, const var_values *given);
/* As vars_values, a name in given (NULL: none) taking its value from there. */
int vars_values_given(const char *const *names, int n, int64_t *values, const var_values *given);

#endif
