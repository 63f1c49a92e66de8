/* intern.h: strings kept for the life of the process, one copy of each.
 *
 * For names that many records repeat and that must outlive what made them
 * (a linear's kernel names: every call of a function body runs the same
 * kernels, and the JIT's capture keeps them after the schedule is gone).
 * The set only grows: intern what is bounded (kernel names), never data. */
#ifndef TG_INTERN_H
#define TG_INTERN_H

/* The process's copy of s (equal strings give the same pointer); thread-safe. */
const char *tg_intern(const char *s);

#endif
