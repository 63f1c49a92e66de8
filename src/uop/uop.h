/* uop.h: the UOp IR. A UOp is an immutable node (op, dtype, src[], arg).
 *
 * Hash-consed: uop_new returns the existing node when an equal one is alive,
 * so equality is pointer equality. Reference counted: a parent holds its
 * sources, tensors and caches hold what they keep.
 *
 * Ownership made simple with pools: uop_new returns a *borrowed* pointer that
 * the innermost pool (uop_pool_push/pop) keeps alive. Code that builds graphs
 * opens a pool, builds freely, uop_retain's what it keeps, and pops the pool.
 */
#ifndef TG_UOP_H
#define TG_UOP_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include "dtype/dtype.h"
#include "uop/ops.h"

typedef enum { ARG_NONE, ARG_INT, ARG_FLOAT, ARG_INTS, ARG_STR, ARG_PTR } uop_argkind;

typedef struct {
  uint8_t kind;
  int n;                 /* ARG_INTS: number of values */
  union {
    int64_t i;           /* ARG_INT (also bool consts) */
    double f;            /* ARG_FLOAT (compared by bits) */
    const int64_t *v;    /* ARG_INTS: owned copy inside the node */
    const char *s;       /* ARG_STR: owned copy inside the node */
    void *p;             /* ARG_PTR: e.g. the tg_buffer of a BUFFER node */
  };
} uop_arg;

typedef struct uop uop;
struct uop {
  uop_op op;
  dtype_t dtype;
  int nsrc;
  uop **src;
  uop_arg arg;
  /* Derived, filled at creation: the tensor shape (ndim -1 for kernel-level
   * nodes that have none). */
  int ndim;
  int64_t *shape;
  /* Derived at creation (dims.c): symbolic axes. dim_var[i] is the
   * DEFINE_VAR axis i runs to (its shape entry is the variable's max), NULL
   * for a static axis; dim_var itself is NULL when no axis is symbolic.
   * dim_bcast has bit i set when axis i repeats one value (expanded from
   * size 1), so it lines up with a symbolic axis. dim_err says why the axes
   * of the sources do not line up (the tensor layer reports it). */
  uop **dim_var;
  uint64_t dim_bcast;
  const char *dim_err;
  bool dim_err_own;
  /* Set (release) once shape and dims are filled in: another thread that
   * finds the node in the hash-cons table meanwhile waits for it. */
  bool ready;
  /* Derived at creation: the leaves below other than constants (nodes
   * without sources: buffers, aranges, variables; the node itself when it is
   * one) as a 64-bit summary, one bit each picked by its hash, and whether an AFTER is below (or is the node). A graph can hold
   * node k only if k's leaf bits are a subset of its own: the pass after a
   * realize (tensors_substitute) skips the live tensors it cannot touch. */
  uint64_t leaves;
  bool has_after;
  /* Derived lazily: value range for integer/bool nodes (symbolic.c). */
  bool range_known;
  int64_t vmin, vmax;
  /* Bookkeeping */
  uint64_t hash;
  int refcnt;
  uint64_t id;           /* creation order; stable printing */
};

/* ---- arguments */
static inline uop_arg arg_none(void) { uop_arg a = { ARG_NONE, 0, { 0 } }; return a; }
static inline uop_arg arg_int(int64_t i) { uop_arg a = { ARG_INT, 0, { .i = i } }; return a; }
static inline uop_arg arg_float(double f) { uop_arg a = { ARG_FLOAT, 0, { .f = f } }; return a; }
static inline uop_arg arg_ints(const int64_t *v, int n) { uop_arg a = { ARG_INTS, n, { .v = v } }; return a; }
static inline uop_arg arg_str(const char *s) { uop_arg a = { ARG_STR, 0, { .s = s } }; return a; }
static inline uop_arg arg_ptr(void *p) { uop_arg a = { ARG_PTR, 0, { .p = p } }; return a; }

/* Whether two arguments are equal as hash-consing compares them. */
bool uop_arg_equal(const uop_arg *a, const uop_arg *b);

/* ---- construction (borrowed results; see pools above) */
uop *uop_new(uop_op op, dtype_t dt, uop *const *src, int nsrc, uop_arg arg);
uop *uop0(uop_op op, dtype_t dt, uop_arg arg);
uop *uop1(uop_op op, dtype_t dt, uop *a, uop_arg arg);
uop *uop2(uop_op op, dtype_t dt, uop *a, uop *b, uop_arg arg);
uop *uop3(uop_op op, dtype_t dt, uop *a, uop *b, uop *c, uop_arg arg);
/* Same op, dtype and arg as u, new sources (returns u when they are equal). */
uop *uop_replace_src(uop *u, uop *const *src, int nsrc);

/* Constants: the value is cast to dt first (ints wrap, floats round). */
uop *uop_const(dtype_t dt, double v);
uop *uop_const_int(dtype_t dt, int64_t v);
bool uop_is_const(const uop *u, double v);     /* a CONST equal to v */
double uop_const_value(const uop *u);           /* CONST as double */

/* ALU helpers. Binary ops take a's dtype; comparisons give bool. */
uop *uop_alu(uop_op op, uop *a, uop *b);
uop *uop_alu1(uop_op op, uop *a);
uop *uop_where(uop *c, uop *a, uop *b);
uop *uop_cast(uop *a, dtype_t dt);
/* Index arithmetic: a op b with b an int constant. */
uop *uop_addi(uop *a, int64_t b);
uop *uop_muli(uop *a, int64_t b);

/* ---- lifetime */
void uop_retain(uop *u);
void uop_release(uop *u);
void uop_pool_push(void);
void uop_pool_pop(void);
/* Keeps u alive until the innermost pool pops (a reference that pool owns). */
void uop_pool_keep(uop *u);
/* Live node count (for tests of hash-consing and leaks). */
int64_t uop_live_count(void);

/* ---- classification */
bool uop_is_alu(uop_op op);
bool uop_is_unary(uop_op op);
bool uop_is_binary(uop_op op);
bool uop_is_commutative(uop_op op);
bool uop_is_comparison(uop_op op);
bool uop_is_movement(uop_op op);
/* Square roots, exponentials, logarithms, sines and divisions: ALU ops that
 * cost a library call or a slow instruction, not one cycle. */
bool uop_is_costly(uop_op op);
const char *uop_op_name(uop_op op);
/* Op by name ("ADD"), -1 when unknown. */
int uop_op_from_name(const char *name, int len);

/* ---- traversal */
/* All nodes reachable from root, children before parents. Caller frees .v. */
typedef struct { uop **v; int n, cap; } uop_list;
uop_list uop_toposort(uop *root);
/* The same, with the sources of each node given by srcs (e.g. to follow
 * extra edges): it sets *out to the sources and returns their count. */
typedef int (*uop_srcs_fn)(void *ctx, uop *u, uop *const **out);
uop_list uop_toposort_by(uop *root, uop_srcs_fn srcs, void *ctx);

/* ---- printing: one numbered line per node, children first. */
void uop_print(FILE *f, uop *root);
char *uop_to_string(uop *root);   /* malloc'd */
/* "1.0", "3", "(2,3)" or "" */
void uop_arg_str(const uop *u, char *buf, int n);

#endif
