/* tg_kernel.h: custom kernels (docs/custom_kernels.md), tinygrad's
 * Tensor.custom_kernel. You write a kernel's body with a small builder of
 * UOps (loops, reduce loops, loads, stores, math, reductions); tg turns it
 * into an ordinary kernel AST, so the same kernel is optimized and rendered
 * for every device (C on the CPU, OpenCL C, CUDA C). The outputs are lazy
 * tensors: the kernel runs when they are realized, after the kernels that
 * compute its inputs, as one kernel of its own (never fused with others).
 *
 *   static int add_one(void *ctx, tg_kb *kb) {        // out[i] = x[i] + 1
 *     tg_kv *x = tg_k_input(kb, 0), *y = tg_k_output(kb, 0);
 *     tg_kv *i = tg_k_range(kb, tg_k_shape(kb, x).d[0]);
 *     tg_kv *v = tg_k_load(kb, tg_k_index(kb, x, &i, 1));
 *     return tg_k_store(kb, tg_k_index(kb, y, &i, 1), tg_k_add(kb, v, tg_k_const(kb, TG_F32, 1)));
 *   }
 *   tg_kernel_out spec = { TG_SHAPE(16), TG_F32 };
 *   tg_tensor *y;
 *   tg_custom_kernel("add_one", &spec, 1, &x, 1, add_one, NULL, NULL, &y);
 *
 * Values (tg_kv) are borrowed handles, valid while the build function runs.
 * Every builder call given NULL returns NULL (or -1), and the first error a
 * build makes is what tg_custom_kernel reports, naming the kernel: so a
 * build function may check only its last call. */
#ifndef TG_KERNEL_H
#define TG_KERNEL_H

#include "tg.h"

#ifndef TG_API
#define TG_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tg_kb tg_kb;   /* a kernel being built */
typedef struct tg_kv tg_kv;   /* a value in it: a buffer, a range, an index, a number */

/* An output of a custom kernel: its shape and dtype. */
typedef struct { tg_shape shape; tg_dtype dtype; } tg_kernel_out;

/* Writes the kernel's body with the tg_k_* calls; 0, or nonzero for a
 * failure (set a message with the builder's errors or your own). */
typedef int (*tg_kernel_build_fn)(void *ctx, tg_kb *kb);

/* The backward of a custom kernel: given its inputs in[0..nin), its
 * outputs out[0..nout) (the forward's, lazy) and the gradient of one output
 * (grad_out[k]; the others NULL), writes the inputs' gradients into
 * grad_in[0..nin) (NULL: none), as lazy tensors built with plain ops or
 * another custom kernel. 0, or nonzero for a failure. */
typedef int (*tg_kernel_grad_fn)(void *ctx, tg_tensor *const *in, int nin, tg_tensor *const *out,
                                 tg_tensor *const *grad_out, int nout, tg_tensor **grad_in);

/* A custom kernel named name (letters, digits and '_' in the program's
 * name; others become '_') with nout outputs of the shapes and dtypes outs[]
 * and nin input tensors in[] (on one device; the kernel runs there, or on
 * the default device when nin is 0). build is called once, now, to write
 * the body; the checks of the tg_k_* calls run then, and a body that fails
 * them is an error naming the kernel. out[0..nout) get lazy tensors in the
 * current scope. grad (NULL: none) is the backward, called lazily by
 * tg_backward / tg_gradient; ctx goes to build and grad, so it must stay
 * valid while a gradient may be built. Differentiating a kernel that has no
 * grad gives its inputs no gradient (and says so on stderr). 0, or -1 with
 * tg_error(). */
TG_API int tg_custom_kernel(const char *name, const tg_kernel_out *outs, int nout, tg_tensor *const *in, int nin,
                            tg_kernel_build_fn build, tg_kernel_grad_fn grad, void *ctx, tg_tensor **out);

/* As tg_custom_kernel, with outputs given as tensors the kernel fills
 * (tinygrad's custom_kernel over Tensor.empty outputs): output k has the
 * shape and dtype of targets[k], a realized tensor or a view of one
 * (tg_empty, a slice of a cache), and its value is written there as
 * tg_assign would (lazily; realizing targets[k] runs the kernel, readers of
 * the old contents first). Targets must be on the kernel's device and have
 * no symbolic axis. Gradients reach the inputs through grad as for
 * tg_custom_kernel. 0, or -1 with tg_error() and no target changed. */
TG_API int tg_custom_kernel_into(const char *name, tg_tensor *const *targets, int nout, tg_tensor *const *in, int nin,
                                 tg_kernel_build_fn build, tg_kernel_grad_fn grad, void *ctx);

/* ---- buffers: the kernel's parameters */

/* Input i (read-only) or output i (write-only), as a buffer of its
 * tensor's shape and dtype. */
TG_API tg_kv *tg_k_input(tg_kb *kb, int i);
TG_API tg_kv *tg_k_output(tg_kb *kb, int i);
/* A buffer's shape and dtype (TG_SHAPE() and -1 for NULL or a non-buffer). */
TG_API tg_shape tg_k_shape(tg_kb *kb, tg_kv *buf);
TG_API int tg_k_dtype(tg_kb *kb, tg_kv *v);

/* The kernel's own optimizations (docs/kernel_opts.md: "UPCAST:0:4,THREAD:0:2"),
 * applied instead of the heuristic's or BEAM's; TG_OPTS or
 * tg_set_kernel_opts naming this kernel still wins. The spelling is
 * checked now; an opt that does not fit the kernel fails its realize with
 * a message saying why. 0 or -1. */
TG_API int tg_k_opts(tg_kb *kb, const char *opts);

/* ---- loops */

/* A loop over 0..size-1 (size >= 1): the kernel runs its stores once per
 * value of every loop they use. Loops nest in the order they are made. */
TG_API tg_kv *tg_k_range(tg_kb *kb, int64_t size);
/* A reduce loop over 0..size-1: usable only inside the value a tg_k_reduce
 * over it sums (or maxes). */
TG_API tg_kv *tg_k_reduce_range(tg_kb *kb, int64_t size);
/* Symbolic inputs: an input may have axes whose length is a bound variable
 * (tg_shrink_var, e.g. a KV cache's first pos+1 rows). Its buffer is the
 * axis's maximum (tg_k_shape); tg_k_dim gives axis's length as an int64
 * value: the variable for a symbolic axis, a constant otherwise. Loops
 * tg_k_range_to and tg_k_reduce_range_to run to such a length (or to a
 * tg_k_int constant >= 1): the kernel is compiled once and loops to the
 * value bound when it runs. Index checks use the variable's maximum. */
TG_API tg_kv *tg_k_dim(tg_kb *kb, tg_kv *buf, int axis);
TG_API tg_kv *tg_k_range_to(tg_kb *kb, tg_kv *n);
TG_API tg_kv *tg_k_reduce_range_to(tg_kb *kb, tg_kv *n);

/* ---- memory */

/* Element idx of buf: n == its number of axes (row-major), or n == 1 (a flat
 * index into it). Indices are integer values; their range (worked out from
 * the loops: a loop of size s runs 0..s-1) must lie inside the buffer, axis
 * by axis, or the kernel is refused: clamp a computed index with
 * tg_k_max/tg_k_min. */
TG_API tg_kv *tg_k_index(tg_kb *kb, tg_kv *buf, tg_kv *const *idx, int n);
/* The value at an index of an input. */
TG_API tg_kv *tg_k_load(tg_kb *kb, tg_kv *index);
/* Writes value (of the output's dtype: tg_k_cast it) at an index of an
 * output. Every output needs stores whose loops cover as many elements as
 * it has. 0 or -1. */
TG_API int tg_k_store(tg_kb *kb, tg_kv *index, tg_kv *value);

/* ---- numbers and math. Operands of a binary op have one dtype (cast
 * first); comparisons give bool. Loop indices and tg_k_int are int64. */

TG_API tg_kv *tg_k_const(tg_kb *kb, tg_dtype dt, double v);
TG_API tg_kv *tg_k_int(tg_kb *kb, int64_t v);
TG_API tg_kv *tg_k_cast(tg_kb *kb, tg_kv *a, tg_dtype dt);
TG_API tg_kv *tg_k_add(tg_kb *kb, tg_kv *a, tg_kv *b);
TG_API tg_kv *tg_k_sub(tg_kb *kb, tg_kv *a, tg_kv *b);
TG_API tg_kv *tg_k_mul(tg_kb *kb, tg_kv *a, tg_kv *b);
/* Floats: a / b. Integers: a / b rounded toward zero (C's). */
TG_API tg_kv *tg_k_div(tg_kb *kb, tg_kv *a, tg_kv *b);
TG_API tg_kv *tg_k_mod(tg_kb *kb, tg_kv *a, tg_kv *b);
TG_API tg_kv *tg_k_max(tg_kb *kb, tg_kv *a, tg_kv *b);
TG_API tg_kv *tg_k_min(tg_kb *kb, tg_kv *a, tg_kv *b);
TG_API tg_kv *tg_k_lt(tg_kb *kb, tg_kv *a, tg_kv *b);
TG_API tg_kv *tg_k_eq(tg_kb *kb, tg_kv *a, tg_kv *b);
TG_API tg_kv *tg_k_ne(tg_kb *kb, tg_kv *a, tg_kv *b);
/* Bitwise on integers, logical on bools. */
TG_API tg_kv *tg_k_and(tg_kb *kb, tg_kv *a, tg_kv *b);
TG_API tg_kv *tg_k_or(tg_kb *kb, tg_kv *a, tg_kv *b);
TG_API tg_kv *tg_k_xor(tg_kb *kb, tg_kv *a, tg_kv *b);
/* cond ? a : b (cond bool; a and b of one dtype). */
TG_API tg_kv *tg_k_where(tg_kb *kb, tg_kv *cond, tg_kv *a, tg_kv *b);
TG_API tg_kv *tg_k_neg(tg_kb *kb, tg_kv *a);
/* Float only. */
TG_API tg_kv *tg_k_exp2(tg_kb *kb, tg_kv *a);
TG_API tg_kv *tg_k_log2(tg_kb *kb, tg_kv *a);
TG_API tg_kv *tg_k_sqrt(tg_kb *kb, tg_kv *a);
TG_API tg_kv *tg_k_sin(tg_kb *kb, tg_kv *a);
TG_API tg_kv *tg_k_recip(tg_kb *kb, tg_kv *a);

/* ---- reductions */

typedef enum { TG_K_SUM, TG_K_MAX } tg_k_reduce_op;
/* The sum (or max) of value over the reduce loops ranges[0..n), each made
 * by tg_k_reduce_range and not reduced again inside value. */
TG_API tg_kv *tg_k_reduce(tg_kb *kb, tg_k_reduce_op op, tg_kv *value, tg_kv *const *ranges, int n);

#ifdef __cplusplus
}
#endif
#endif
