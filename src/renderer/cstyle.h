/* cstyle.h: what the C-style core (cstyle.c) shares with the dialect tables.
 * The core walks a linearized kernel and writes one statement per node; the
 * expression of an ALU node comes from rules (code_for_op.c: the core's
 * table, after the dialect's own). A dialect says how types, the kernel
 * signature, group and local ids and barriers are spelled, gives its rules
 * (bit casts, libm's names, vector lanes) and adds its preludes.
 * Invariant: the core never names a dialect; everything that differs
 * between C, OpenCL C and CUDA C is a field or a rule here. */
#ifndef TG_CSTYLE_H
#define TG_CSTYLE_H

#include "renderer/renderer.h"
#include "uop/rewrite.h"
#include "util/util.h"

typedef struct rctx rctx;

/* The code of an ALU node: a pattern (rewrite.h's language) and either the
 * expression it becomes, where "{x}" is the code of the node bound to x and
 * other text is kept as it is ("(ADD a b)" -> "({a}+{b})"), or a function
 * that writes it (malloc'd; NULL: the node cannot be rendered). The guard,
 * when set, decides whether the rule applies (ctx is the rctx). name, when
 * set, is the rule's name in TRACK_REWRITES lines (else the pattern). */
typedef struct render_rule {
  const char *pattern;
  const char *code;
  char *(*fn)(rctx *c, const rw_match *m);
  rw_guard guard;
  const char *name;
} render_rule;

/* Rules in the order they are tried (RENDER_TABLE(array) makes one). */
typedef struct render_table {
  const render_rule *rules;
  int n;
} render_table;
#define RENDER_TABLE(r) { .rules = r, .n = RW_NRULES(r) }
#define RENDER_MAX_TABLES 3

/* libm's float32 names (exp2f, truncf, fmodf, ...) for dialects whose libm
 * is C's (C, CUDA C); the core's rules use the overloads (exp2). */
extern const render_table cstyle_libm_f32;

/* The code of ALU node u by the first rule that matches it: scalar nodes
 * by the dialect's tables (code[], in order), then the core's, then C's
 * infix operators; vector nodes (and DOT4) by the dialect's vector_code,
 * then the infix operators on vector_operand's spelling. Malloc'd, or NULL
 * when no rule renders it. (code_for_op.c) */
char *render_code(rctx *c, uop *u);
/* The name of a dialect's render pass ("render c"): VIZ records a kernel's
 * render rules under it. */
const char *render_pass_name(const render_dialect *d);

/* One buffer argument of a kernel (DEFINE_GLOBAL k). */
typedef struct { int index; dtype_t dtype; bool stored; } kernel_buf;

/* A kernel's arguments: buffers in DEFINE_GLOBAL order, then its
 * variables (sorted by name: the order of the engine's vars[]). */
typedef struct {
  kernel_buf bufs[256];
  int nbufs;          /* highest buffer index + 1 */
  bool too_many;      /* a buffer index past 255 */
  int nvars;
} kernel_args;

struct render_dialect {
  const char *name;
  /* value types of scalars, and element types of buffer pointers (GPUs
   * keep bools in bytes: a bool pointer is no kernel argument there) */
  const char *scalar_type[TG_NSCALAR];
  const char *buffer_elem[TG_NSCALAR];
  const char *i64_suffix, *u64_suffix;   /* integer literal suffixes */
  const char *fn_qual;                   /* qualifiers of helper functions in preludes */
  const char *local_qual;                /* declares a local (shared) array */
  const char *barrier;                   /* a work-group barrier statement */
  /* how kernel variable k is named in the body */
  const char *var_fmt;
  /* the kernel's opening line(s): signature and buffer declarations */
  void (*open_kernel)(rctx *c, strbuf *src, const char *name, const kernel_args *a);
  /* the value of a group (kind 0) or local (kind 1) id in dimension dim */
  char *(*special)(int kind, int dim);
  /* the code of ALU nodes: the dialect's rules, tried in order before the
   * core's (at least BITCAST: a scalar's bits as another scalar type of the
   * same size), NULL after the last */
  const render_table *code[RENDER_MAX_TABLES];
  /* the code of vector nodes (SIMD lanes, byte dot products), before C's
   * infix operators, and how those spell an operand {x} of vector node
   * root (malloc'd); NULL for a dialect without vector types */
  const render_table *vector_code;
  char *(*vector_operand)(rctx *c, uop *root, uop *x);
  /* the dialect's prelude: types and helpers the body used */
  void (*prelude)(rctx *c, strbuf *src);
  /* the type name of a vector value (marking it used for the prelude) */
  const char *(*vector_type)(rctx *c, dtype_t d);
  /* tensor cores: writes tg_wmma_<tc->helper>(float *acc, a..., b...
   * [, scratch]) that adds the warp's A*B into acc (cstyle.c calls it once
   * per k step); wmma_scratch > 0: the helper also takes a local array of
   * that many floats per warp (an emulation through local memory) */
  void (*wmma_helper)(rctx *c, strbuf *src, const tg_tensor_core *tc);
  int wmma_scratch;
};

struct rctx {
  const tg_renderer *r;
  const render_dialect *d;
  strbuf body;
  ptrmap names;        /* uop -> char* (owned) */
  int nvars;
  int depth;
  int tracing;         /* TRACK_REWRITES, read once per kernel */
  bool viz;            /* a VIZ pass (render_pass_name) records this kernel's rules */
#define RCTX_TEMPS 16
  char *temp[RCTX_TEMPS];   /* strings rtemp keeps until the node's code is made */
  int ntemp;
  bool need_threefry, need_fpconv;
  /* C dialect: vector types and helpers the body used */
  bool vec_used[TG_NSCALAR][65];
  bool need_vcvt_f16[65];   /* lanes of float16 -> float32 vector conversions */
  bool need_dot4[17];       /* lanes of byte dot products */
  bool need_lut16[65];      /* lanes of 16-byte table lookups */
  bool need_sqrt[65];       /* lanes of float32 square roots */
  bool need_exp2[65];       /* lanes of float32 powers of two */
  bool need_trunc[65];      /* lanes of float32 truncations */
  bool mulacc_reduce;       /* a float multiply-accumulate reduce (may contract to FMA) */
  bool wmma_used[8];        /* tensor cores (renderer table index) the body used */
};

char *rfmt(const char *f, ...) __attribute__((format(printf, 1, 2)));
/* s (malloc'd), kept until render_code has made the current node's code:
 * operand strings a rule's function writes into its code */
const char *rtemp(rctx *c, char *s);
const char *rname(rctx *c, uop *u);
/* the type of a value of dtype d (vectors: the C dialect's vector types) */
const char *rctype(rctx *c, dtype_t d);
/* small floats' tag in helper names (f16, bf16, e4m3, e5m2); NULL for
 * other types */
const char *rsmall_tag(dtype_t d);
/* the mask type of comparisons between vectors of d */
dtype_t rmask_of(dtype_t d);
/* scalar x of dtype d broadcast into vector type vt */
char *rsplat(dtype_t d, const char *vt, const char *x);
/* the prelude text the core pastes for small-float conversions */
extern const char tg_kernel_prelude_fpconv[];
/* the threefry helper, written for any dialect (qualifier, u32 and u64
 * type names) */
void render_threefry(strbuf *src, const char *qual, const char *u32, const char *u64);

extern const render_dialect dialect_c, dialect_opencl, dialect_cuda;

/* A GPU kernel's parameter list: buffer k as data<k> (an unused index as a
 * placeholder, so argument positions match the engine's buffers), then the
 * variables as 64-bit scalars. */
void render_gpu_params(rctx *c, strbuf *src, const kernel_args *a, const char *buf_qual, const char *restrict_kw);
#endif
