/* tg.h: the public C API of tg, tinygrad's design in C.
 *
 * Tensors are lazy: every op builds a graph of UOps and returns at once.
 * Work happens when data is asked for (tg_data, tg_item) or tg_realize runs:
 * the graph is scheduled into fused kernels, rendered as C, compiled (and
 * cached on disk), and run.
 *
 * Lifetime: every tensor belongs to the innermost open scope
 * (tg_scope_begin/tg_scope_end); tg_scope_end frees the tensors created in it
 * except those moved out with tg_keep. Tensors made with no scope open live
 * until tg_free. Scopes are per thread: each thread opens and ends its own,
 * and threads may build, realize and free their own graphs at once; a
 * tensor may be passed to, used in and freed by another thread.
 *
 * Errors never abort. A call that fails returns NULL (or a negative number),
 * and tg_error() says what went wrong and where. Ops given NULL return NULL,
 * so a block of ops can be checked once at its end.
 */
#ifndef TG_H
#define TG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tg_api.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- dtypes */

/* Scalar element types, in tinygrad's promotion priority order. */
typedef enum {
  TG_BOOL,
  TG_I8, TG_U8, TG_I16, TG_U16, TG_I32, TG_U32, TG_I64, TG_U64,
  TG_FP8E4M3, TG_FP8E5M2,
  TG_F16, TG_BF16, TG_F32, TG_F64,
  TG_DTYPE_COUNT
} tg_dtype;

TG_API const char *tg_dtype_name(tg_dtype dt);     /* "float32", "bfloat16", ... */
/* The dtype a name means, as tinygrad and numpy spell it (docs/dtypes.md has
 * the table): tg's names, tinygrad's aliases ("half", "float", "uint", ...),
 * numpy's names and codes ("single", "f4", "<i8", "?"), "bf16", "f16",
 * torch's "float8_e4m3fn"; case-insensitive (except numpy's one-letter
 * codes), with an optional "dtypes.", "np." or "torch." prefix. Where
 * tinygrad and numpy differ, tinygrad's meaning wins ("int" is int32,
 * "float" float32). Returns a tg_dtype, or -1 with an error for a name it
 * does not know. */
TG_API int tg_dtype_from_name(const char *name);
/* The float dtype that ops choose when they turn ints into floats (true
 * division, transcendental functions, a non-integral scalar next to an int
 * tensor, softmax), like tinygrad's dtypes.default_float: the environment
 * variable DEFAULT_FLOAT (a name for tg_dtype_from_name; float32 when unset)
 * until tg_set_default_float. Pass it where a constructor needs a float
 * dtype: tg_rand(shape, tg_default_float()). Setting a non-float: -1. */
TG_API tg_dtype tg_default_float(void);
TG_API int tg_set_default_float(tg_dtype dt);
/* The float dtype sums accumulate in at least (tinygrad's SUM_DTYPE; the
 * environment variable SUM_DTYPE, float32 when unset): a float sum
 * accumulates in promote(its dtype, this) and returns that dtype, except
 * half, bfloat16 and fp8 sums, which return their own dtype. SUM_DTYPE=half
 * makes half sums accumulate in half; float64 makes float32 sums accumulate
 * in, and return, float64. Setting a non-float: -1. */
TG_API tg_dtype tg_sum_acc_float(void);
TG_API int tg_set_sum_acc_float(tg_dtype dt);
TG_API int tg_dtype_size(tg_dtype dt);             /* bytes per element */
TG_API bool tg_dtype_is_float(tg_dtype dt);
TG_API bool tg_dtype_is_int(tg_dtype dt);          /* signed or unsigned integer */
TG_API bool tg_dtype_is_unsigned(tg_dtype dt);
/* Least upper bound in tinygrad's (JAX-style) promotion lattice. */
TG_API tg_dtype tg_dtype_promote(tg_dtype a, tg_dtype b);
/* True when every value of `from` is exactly representable in `to`. */
TG_API bool tg_dtype_can_safe_cast(tg_dtype from, tg_dtype to);

/* Exact conversions, round to nearest even. fp8 follows NVIDIA cuda_fp8
 * (saturating to finite): e4m3 saturates to +-448, NaN is 0x7F/0xFF;
 * e5m2 saturates finite values to +-57344 and keeps inf and NaN. */
TG_API uint16_t tg_f32_to_f16(float f);
TG_API float tg_f16_to_f32(uint16_t h);
TG_API uint16_t tg_f32_to_bf16(float f);
TG_API float tg_bf16_to_f32(uint16_t h);
TG_API uint8_t tg_f32_to_fp8e4m3(float f);
TG_API float tg_fp8e4m3_to_f32(uint8_t x);
TG_API uint8_t tg_f32_to_fp8e5m2(float f);
TG_API float tg_fp8e5m2_to_f32(uint8_t x);

/* ---------------------------------------------------------------- errors */

/* The last error of this thread ("" when none). */
TG_API const char *tg_error(void);
TG_API void tg_clear_error(void);

/* ---------------------------------------------------------------- shapes */

#define TG_MAX_DIMS 16

typedef struct { int ndim; int64_t d[TG_MAX_DIMS]; } tg_shape;
/* TG_SHAPE(2, 3) is the shape (2, 3); TG_SHAPE() is a scalar. */
#define TG_SHAPE(...) ((tg_shape){ sizeof((int64_t[]){0, ##__VA_ARGS__}) / sizeof(int64_t) - 1, { __VA_ARGS__ } })

typedef struct { int n; int a[TG_MAX_DIMS]; } tg_axes;
/* TG_AXES(0, -1) lists axes (negative counts from the end); TG_ALL is every axis. */
#define TG_AXES(...) ((tg_axes){ sizeof((int[]){0, ##__VA_ARGS__}) / sizeof(int) - 1, { __VA_ARGS__ } })
#define TG_ALL ((tg_axes){ -1, { 0 } })

/* ---------------------------------------------------------------- tensors */

typedef struct tg_tensor tg_tensor;

/* Scopes own tensors; see the lifetime note at the top. */
TG_API void tg_scope_begin(void);
TG_API void tg_scope_end(void);
TG_API tg_tensor *tg_keep(tg_tensor *t);   /* move t to the enclosing scope; returns t (NULL for NULL) */
TG_API void tg_free(tg_tensor *t);         /* free now (NULL is fine) */
/* Freed tensors' memory is kept (up to TG_ALLOC_CACHE_MB) for the next
 * buffer of the same size; this gives it back to the system, after a
 * one-time phase (loading a model) whose sizes will not come back. */
TG_API void tg_release_cached_memory(void);

/* Devices, by name (case-insensitive): "CPU" (default), "NULL" (schedules,
 * runs nothing), "DISK" (memory-mapped files), "CL" / "CL:1" ... (OpenCL,
 * libOpenCL loaded at run time), "CUDA" / "CUDA:1" ... (the CUDA driver and
 * NVRTC, loaded at run time). The default comes from the environment
 * variable TG_DEVICE when set. An unknown or absent device is an error that
 * lists the present ones. docs/devices.md has the details. */
TG_API int tg_set_default_device(const char *name);
TG_API const char *tg_default_device(void);
TG_API const char *tg_device_of(const tg_tensor *t);   /* NULL when t is NULL */
TG_API tg_tensor *tg_to(tg_tensor *t, const char *device);   /* copy to a device */

/* What tg_devices reports about one present device. */
typedef struct {
  char name[32];              /* "CPU", "CL:1" ... (what tg_to takes) */
  char description[128];      /* the hardware or driver, as it names itself */
  char renderer[16];          /* the dialect of its kernels: "c", "opencl", "cuda" */
  int64_t memory;             /* bytes of device memory (0 when unknown) */
  int64_t local_memory;       /* bytes of local memory per work group (0: none) */
  int max_local;              /* threads per work group (0: no work groups) */
  bool threads;               /* kernels split over CPU cores */
} tg_device_info;
/* Fills up to max entries with the devices present, in registry order, and
 * returns how many there are (which may exceed max; out may be NULL to only
 * count), or -1 for a negative max. Backends whose
 * library or hardware is missing are left out; *absent (when not NULL) gets
 * a line per such backend saying why (owned by tg, valid until the next
 * call). */
TG_API int tg_devices(tg_device_info *out, int max, const char **absent);

/* Inspection. Given a NULL tensor, tg_shape_of has ndim -1 and tg_ndim,
 * tg_dim and tg_numel return -1; the error says so unless the failure that
 * made the NULL already set one. */
TG_API tg_shape tg_shape_of(const tg_tensor *t);
TG_API int tg_ndim(const tg_tensor *t);
TG_API int64_t tg_dim(const tg_tensor *t, int axis);   /* -1 on a bad axis */
TG_API int64_t tg_numel(const tg_tensor *t);
TG_API tg_dtype tg_dtype_of(const tg_tensor *t);
/* Prints the tensor's UOp graph (for debugging). */
TG_API void tg_print_graph(const tg_tensor *t);

/* ---- creation */
TG_API tg_tensor *tg_from_data(const void *data, tg_shape shape, tg_dtype dt); /* copies */
TG_API tg_tensor *tg_empty(tg_shape shape, tg_dtype dt);
TG_API tg_tensor *tg_full(tg_shape shape, double value, tg_dtype dt);
TG_API tg_tensor *tg_zeros(tg_shape shape, tg_dtype dt);
TG_API tg_tensor *tg_ones(tg_shape shape, tg_dtype dt);
TG_API tg_tensor *tg_scalar(double value, tg_dtype dt);
/* start, start+step, ... < stop. Fails when a value does not fit dt. */
TG_API tg_tensor *tg_arange(double start, double stop, double step, tg_dtype dt);
TG_API tg_tensor *tg_eye(int64_t n, tg_dtype dt);
TG_API tg_tensor *tg_full_like(const tg_tensor *t, double value);
TG_API tg_tensor *tg_zeros_like(const tg_tensor *t);
TG_API tg_tensor *tg_ones_like(const tg_tensor *t);
/* A tensor of t's shape (symbolic axes at their maximum), dtype and device
 * whose memory is not initialized (tinygrad's empty_like). */
TG_API tg_tensor *tg_empty_like(const tg_tensor *t);

/* Random numbers from a counter-based generator (threefry2x32): the same seed
 * gives the same numbers on every run. */
TG_API void tg_manual_seed(uint64_t seed);
TG_API tg_tensor *tg_rand(tg_shape shape, tg_dtype dt);    /* uniform [0, 1) */
TG_API tg_tensor *tg_randn(tg_shape shape, tg_dtype dt);   /* standard normal */
/* The same draws with t's shape, dtype (a float) and device (tinygrad's
 * rand_like / randn_like). */
TG_API tg_tensor *tg_rand_like(const tg_tensor *t);
TG_API tg_tensor *tg_randn_like(const tg_tensor *t);
/* threefry2x32 (20 rounds) of each counter x under key, both uint64 tensors
 * (broadcasting): the low 32 bits of x and key are the first words, the
 * result packs the two output words as (hi << 32) | lo (tinygrad's
 * Tensor.threefry). With constant inputs it folds to a constant when the
 * graph is built into kernels. */
TG_API tg_tensor *tg_threefry(tg_tensor *x, tg_tensor *key);

/* ---- elementwise (broadcasting, tinygrad's dtype promotion) */
TG_API tg_tensor *tg_add(tg_tensor *a, tg_tensor *b);
TG_API tg_tensor *tg_sub(tg_tensor *a, tg_tensor *b);
TG_API tg_tensor *tg_mul(tg_tensor *a, tg_tensor *b);
TG_API tg_tensor *tg_div(tg_tensor *a, tg_tensor *b);   /* true division: ints become float */
TG_API tg_tensor *tg_pow(tg_tensor *a, tg_tensor *b);
TG_API tg_tensor *tg_maximum(tg_tensor *a, tg_tensor *b);
TG_API tg_tensor *tg_minimum(tg_tensor *a, tg_tensor *b);
/* With a scalar on the right: the scalar takes the tensor's dtype class. */
TG_API tg_tensor *tg_adds(tg_tensor *a, double b);
TG_API tg_tensor *tg_subs(tg_tensor *a, double b);
TG_API tg_tensor *tg_muls(tg_tensor *a, double b);
TG_API tg_tensor *tg_divs(tg_tensor *a, double b);
TG_API tg_tensor *tg_pows(tg_tensor *a, double b);

TG_API tg_tensor *tg_neg(tg_tensor *a);
TG_API tg_tensor *tg_exp(tg_tensor *a);
TG_API tg_tensor *tg_log(tg_tensor *a);
TG_API tg_tensor *tg_exp2(tg_tensor *a);
TG_API tg_tensor *tg_log2(tg_tensor *a);
TG_API tg_tensor *tg_sqrt(tg_tensor *a);
TG_API tg_tensor *tg_rsqrt(tg_tensor *a);
TG_API tg_tensor *tg_reciprocal(tg_tensor *a);
TG_API tg_tensor *tg_sin(tg_tensor *a);
TG_API tg_tensor *tg_cos(tg_tensor *a);
TG_API tg_tensor *tg_abs(tg_tensor *a);
TG_API tg_tensor *tg_relu(tg_tensor *a);
TG_API tg_tensor *tg_sigmoid(tg_tensor *a);
TG_API tg_tensor *tg_tanh(tg_tensor *a);

/* Comparisons return bool tensors. */
TG_API tg_tensor *tg_lt(tg_tensor *a, tg_tensor *b);
TG_API tg_tensor *tg_le(tg_tensor *a, tg_tensor *b);
TG_API tg_tensor *tg_gt(tg_tensor *a, tg_tensor *b);
TG_API tg_tensor *tg_ge(tg_tensor *a, tg_tensor *b);
TG_API tg_tensor *tg_eq(tg_tensor *a, tg_tensor *b);
TG_API tg_tensor *tg_ne(tg_tensor *a, tg_tensor *b);
/* Logical ops on bool tensors (other dtypes are compared with zero). */
TG_API tg_tensor *tg_logical_and(tg_tensor *a, tg_tensor *b);
TG_API tg_tensor *tg_logical_or(tg_tensor *a, tg_tensor *b);
TG_API tg_tensor *tg_logical_xor(tg_tensor *a, tg_tensor *b);
TG_API tg_tensor *tg_logical_not(tg_tensor *a);
/* cond ? a : b, broadcasting all three. */
TG_API tg_tensor *tg_where(tg_tensor *cond, tg_tensor *a, tg_tensor *b);

TG_API tg_tensor *tg_cast(tg_tensor *a, tg_dtype dt);
/* Reinterpret the bits of each element; both dtypes must have one size. */
TG_API tg_tensor *tg_bitcast(tg_tensor *a, tg_dtype dt);

/* ---- movement (never a kernel by itself) */
/* One entry may be -1, inferred from the others. */
TG_API tg_tensor *tg_reshape(tg_tensor *a, tg_shape shape);
TG_API tg_tensor *tg_permute(tg_tensor *a, tg_axes order);
TG_API tg_tensor *tg_expand(tg_tensor *a, tg_shape shape);   /* -1 keeps a dim */
/* pads[2*i], pads[2*i+1]: before and after axis i, filled with value. */
TG_API tg_tensor *tg_pad(tg_tensor *a, const int64_t *pads, int npairs, double value);
/* Keep [starts[i], ends[i]) of each axis. */
TG_API tg_tensor *tg_shrink(tg_tensor *a, const int64_t *starts, const int64_t *ends);
TG_API tg_tensor *tg_flip(tg_tensor *a, tg_axes axes);
TG_API tg_tensor *tg_transpose(tg_tensor *a, int axis0, int axis1);
TG_API tg_tensor *tg_T(tg_tensor *a);                        /* swap the last two axes */
TG_API tg_tensor *tg_squeeze(tg_tensor *a, int axis);        /* axis = TG_NOAXIS: every size-1 axis */
TG_API tg_tensor *tg_unsqueeze(tg_tensor *a, int axis);
TG_API tg_tensor *tg_flatten(tg_tensor *a, int start_axis, int end_axis);
#define TG_NOAXIS (-1000)

/* Indexing like Python's a[...]: integers, slices with steps, None, "...". */
typedef enum { TG_IDX_INT, TG_IDX_SLICE, TG_IDX_NEWAXIS, TG_IDX_ELLIPSIS } tg_index_kind;
typedef struct {
  tg_index_kind kind;
  int64_t start, stop, step;      /* for INT: start is the index */
  bool has_start, has_stop;       /* a missing bound means the whole side */
} tg_index;
#define TG_I(i) ((tg_index){ TG_IDX_INT, (i), 0, 1, true, false })
#define TG_SLICE(a, b, s) ((tg_index){ TG_IDX_SLICE, (a), (b), (s), true, true })
#define TG_FROM(a) ((tg_index){ TG_IDX_SLICE, (a), 0, 1, true, false })
#define TG_UPTO(b) ((tg_index){ TG_IDX_SLICE, 0, (b), 1, false, true })
#define TG_STEP(s) ((tg_index){ TG_IDX_SLICE, 0, 0, (s), false, false })
#define TG_ALLIDX ((tg_index){ TG_IDX_SLICE, 0, 0, 1, false, false })
#define TG_NEWAXIS ((tg_index){ TG_IDX_NEWAXIS, 0, 0, 1, false, false })
#define TG_ELLIPSIS ((tg_index){ TG_IDX_ELLIPSIS, 0, 0, 1, false, false })
TG_API tg_tensor *tg_getitem(tg_tensor *a, const tg_index *idx, int n);
#define TG_GET(a, ...) tg_getitem((a), (tg_index[]){ __VA_ARGS__ }, sizeof((tg_index[]){ __VA_ARGS__ }) / sizeof(tg_index))

/* ---- reductions: axes may be negative; TG_ALL reduces everything */
TG_API tg_tensor *tg_sum(tg_tensor *a, tg_axes axes, bool keepdim);
TG_API tg_tensor *tg_prod(tg_tensor *a, tg_axes axes, bool keepdim);
TG_API tg_tensor *tg_max(tg_tensor *a, tg_axes axes, bool keepdim);
TG_API tg_tensor *tg_min(tg_tensor *a, tg_axes axes, bool keepdim);
TG_API tg_tensor *tg_mean(tg_tensor *a, tg_axes axes, bool keepdim);
/* With an accumulate dtype (tinygrad's sum(dtype=), numpy's sum(dtype=)): a
 * is cast to dt, reduced in dt, and the result is dt (ints wrap in dt:
 * tg_sum_dtype of uint8 with TG_U8 is the sum modulo 256). dt may be any
 * dtype but bool; tg_mean_dtype's must be a float (torch's mean(dtype=)). */
TG_API tg_tensor *tg_sum_dtype(tg_tensor *a, tg_axes axes, bool keepdim, tg_dtype dt);
TG_API tg_tensor *tg_prod_dtype(tg_tensor *a, tg_axes axes, bool keepdim, tg_dtype dt);
TG_API tg_tensor *tg_mean_dtype(tg_tensor *a, tg_axes axes, bool keepdim, tg_dtype dt);
/* Index of the first maximum along axis (TG_NOAXIS: of the flattened tensor). */
TG_API tg_tensor *tg_argmax(tg_tensor *a, int axis, bool keepdim);
TG_API tg_tensor *tg_argmin(tg_tensor *a, int axis, bool keepdim);

/* ---- composite */
/* Matrix product with numpy's rules: 1-D operands, batched and broadcast. */
TG_API tg_tensor *tg_matmul(tg_tensor *a, tg_tensor *b);
TG_API tg_tensor *tg_dot(tg_tensor *a, tg_tensor *b);
/* With an accumulate dtype (tinygrad's matmul(dtype=), numpy's
 * matmul(dtype=)): both operands are cast to dt, multiplied and summed in
 * dt, and the result is dt (int8 operands with TG_I32 give the exact int32
 * product; tinygrad multiplies in the operands' dtype first). Not bool. */
TG_API tg_tensor *tg_matmul_dtype(tg_tensor *a, tg_tensor *b, tg_dtype dt);
TG_API tg_tensor *tg_dot_dtype(tg_tensor *a, tg_tensor *b, tg_dtype dt);
TG_API tg_tensor *tg_softmax(tg_tensor *a, int axis);
TG_API tg_tensor *tg_log_softmax(tg_tensor *a, int axis);

/* ---- realization */
/* Materialize into memory (a copy, always a kernel, unless already contiguous). */
TG_API tg_tensor *tg_contiguous(tg_tensor *a);
/* Write value into target's memory in place; returns target. Shapes must match
 * (value broadcasts) and dtypes must match. target may be a view (a slice) of
 * a realized tensor. */
TG_API tg_tensor *tg_assign(tg_tensor *target, tg_tensor *value);
/* Compute now. Returns 0 or a negative error. */
TG_API int tg_realize(tg_tensor *t);
/* Compute several tensors in one schedule. */
TG_API int tg_realize_all(tg_tensor **ts, int n);
/* Copy the data, contiguous, into out (nbytes must be at least numel*size). */
TG_API int tg_data(tg_tensor *t, void *out, size_t nbytes);
/* The single value of a one-element tensor, as a double (NaN on error). */
TG_API double tg_item(tg_tensor *t);

/* ---------------------------------------------------------------- autograd */

/* Marks t as a leaf whose gradient tg_backward computes; returns t. */
TG_API tg_tensor *tg_requires_grad(tg_tensor *t, bool on);
TG_API bool tg_get_requires_grad(const tg_tensor *t);
/* Backpropagates from loss (one element) into every tensor that requires
 * grad and that loss depends on; gradients accumulate (sum) into tg_grad
 * across calls until tg_zero_grad. 0 or a negative error. */
TG_API int tg_backward(tg_tensor *loss);
/* The accumulated gradient of t (lazy), owned by t; NULL when none (no
 * error set) or when t is NULL (an error). */
TG_API tg_tensor *tg_grad(const tg_tensor *t);
TG_API void tg_zero_grad(tg_tensor *t);
/* Gradients of loss (one element) with respect to wrt[0..n), into out[]
 * (new tensors in the current scope), without touching tg_grad. */
TG_API int tg_gradient(tg_tensor *loss, tg_tensor *const *wrt, int n, tg_tensor **out);
/* The same values, cut off from gradient flow. */
TG_API tg_tensor *tg_detach(tg_tensor *t);
/* While on, results of ops carry no gradient (like torch.no_grad()). */
TG_API void tg_set_no_grad(bool on);
TG_API bool tg_no_grad(void);

/* ---------------------------------------------------------------- more ops */
#include "tg_math.h"       /* elementwise math, reductions, scans, sort */
#include "tg_movement.h"   /* joining, splitting, indexing, gather/scatter */
#include "tg_nn.h"         /* convolution, pooling, norms, attention, losses, random */
#include "tg_io.h"         /* safetensors, .npy, GGUF, file-backed (DISK) tensors */
#include "tg_quant.h"      /* ggml quantized formats dequantized by tensor ops */
#include "tg_layers.h"     /* layers, state dicts, optimizers, lr schedules */
#include "tg_tokenizer.h"  /* tokenizers from GGUF metadata: encode, decode, streaming */
#include "tg_llm.h"        /* language models from GGUF, sampling */
#include "tg_chat.h"        /* chat templates: Jinja rendering and built-in presets */

/* ---------------------------------------------------------------- variables */

/* A symbolic integer (an int32 scalar tensor) whose value is bound at run
 * time, like an LLM's position: kernels that use it are compiled once for
 * the whole range [min, max] and read the bound value when they run (in and
 * out of the JIT; a JIT replay uses the values bound at that call). Names
 * are C identifiers; a name can be declared again only with the same range. */
TG_API tg_tensor *tg_variable(const char *name, int64_t min, int64_t max);
/* Binds name to value for the kernels run from now on. Fails for an unknown
 * name or a value outside the variable's range. */
TG_API int tg_bind(const char *name, int64_t value);

/* Symbolic dimensions (docs/symbolic.md): a view of t whose axis runs over
 * [0, var) for the value var is bound to when kernels run, e.g. the first
 * pos+1 rows of a KV cache. var must be declared (tg_variable) with
 * 0 <= min and max <= t's size on that axis. Kernels over such an axis are
 * compiled once for the whole range and loop to the bound value: reductions
 * see exactly [0, var) (tg_mean divides by the bound count), and a result
 * stored to memory holds its valid part [0, var); the rest of the axis is
 * not written (tg_data returns the full size, the tail unspecified).
 * tg_shape_of and tg_dim report the axis's maximum size. Elementwise ops
 * line up a symbolic axis with the same variable or with a size-1 axis
 * (broadcast); against another variable or a static size > 1 they fail,
 * and so do reshapes that split or merge it, and pad, shrink or flip of it.
 * Gradients flow through it: the source's gradient is 0 past var. */
TG_API tg_tensor *tg_shrink_var(tg_tensor *t, int axis, const char *var);
/* The variable axis runs to, or NULL for a static axis (or a bad axis; no
 * error set), or NULL with an error when t is NULL. */
TG_API const char *tg_dim_var(const tg_tensor *t, int axis);
TG_API bool tg_dim_is_symbolic(const tg_tensor *t, int axis);

/* ---------------------------------------------------------------- JIT */

/* A step function: builds outputs from inputs with tensor ops (lazily).
 * Return 0, or a negative number on failure. Assigns it makes (an optimizer
 * update, a cache write) are realized with its outputs. */
typedef int (*tg_jit_fn)(void *ctx, tg_tensor *const *in, int nin, tg_tensor **out, int nout);
typedef struct tg_jit tg_jit;

/* A JIT around fn. The first call runs fn normally; the second runs it and
 * captures the kernels it launches; later calls replay those kernels on the
 * new inputs' memory without calling fn, scheduling or compiling. Outputs
 * are fresh tensors (in the current scope) every call. Inputs must keep
 * their shapes, dtypes and devices from call to call, and no two inputs may
 * share memory. Intermediate buffers of the replay share memory where their
 * lifetimes allow (see tg_jit_stats). fn must be deterministic in what it
 * builds: random numbers, for example, are replayed as captured. */
TG_API tg_jit *tg_jit_new(tg_jit_fn fn, void *ctx);
TG_API void tg_jit_free(tg_jit *j);
TG_API int tg_jit_call(tg_jit *j, tg_tensor *const *in, int nin, tg_tensor **out, int nout);
typedef struct {
  int calls;               /* calls so far */
  int kernels;             /* captured kernels replayed per call */
  int64_t intermediate_bytes;   /* bytes of intermediates before planning */
  int64_t planned_bytes;        /* bytes after sharing memory between them */
  int pruned;              /* kernels dropped by pruning */
} tg_jit_info;
TG_API tg_jit_info tg_jit_stats(const tg_jit *j);
/* Pruning (off by default; set it before the second call): kernels whose
 * results cannot change between calls (they read no input, no symbolic
 * variable, nothing that changes, and write an intermediate: e.g. weights
 * transformed inside the step) run once, in the capture, and the replay
 * skips them. */
TG_API void tg_jit_set_prune(tg_jit *j, bool on);
/* Reused outputs (off by default): replays write the same output memory
 * every call instead of fresh buffers, so an output tensor of an earlier
 * call changes when the JIT runs again. Saves an allocation per output. */
TG_API void tg_jit_set_reuse_outputs(tg_jit *j, bool on);
/* Capture from the first call (off by default; set it before the first
 * call): the first call captures and the second replays. Only for a step
 * whose first call does no one-time work, since a replay repeats all that
 * the captured call launched: every weight and state tensor it reads must
 * be realized before (a zeroed state made inside the first call would be
 * zeroed again at every replay). Saves building and scheduling the step
 * a second time. */
TG_API void tg_jit_set_capture_first(tg_jit *j, bool on);
/* Writes a captured step (call the JIT twice first) as one dependency-free
 * C11 file at path (docs/jit.md): its kernels, its memory plan and
 * PREFIX_init(side_file) / PREFIX_run(inputs, outputs, vars) / PREFIX_free(),
 * PREFIX being the file's base name ("model.c": model_run). Fixed memory
 * (weights, state such as a KV cache, as it is now) goes to the side file,
 * path with ".c" replaced by ".bin". Only steps whose kernels all run on the
 * CPU can be exported; others fail saying which kernel runs where. */
TG_API int tg_jit_export(const tg_jit *j, const char *path);

/* ---------------------------------------------------------------- functions */

/* A function of tensors (docs/functions.md): fn (the JIT's step type) is
 * called once per input signature (shapes, dtypes, devices) on stand-in
 * parameters to build a body; every call with that signature is a CALL of
 * the body, so N identical layers build, schedule and compile one layer.
 * The body may read only its inputs: memory read inside that is not an
 * input (weights captured from outside) is an error naming it, unless
 * allowed with tg_function_allow_implicit (such a body is then specific to
 * that memory). Bodies cannot realize their parameters (tg_data inside fn
 * fails) nor assign. Gradients flow through calls: a call's gradient is a
 * call of the body's gradient body, built once per output and set of
 * inputs that need a gradient; or of the function given by
 * tg_function_set_grad. Tensors built by calls stay valid after
 * tg_function_free: the CALL nodes in their graphs keep the bodies alive.
 * An input with a symbolic axis (tg_shrink_var) is in the signature by its
 * variable, not its value: one body serves every value bound to it. */
typedef struct tg_function tg_function;
TG_API tg_function *tg_function_new(const char *name, tg_jit_fn fn, void *ctx, int nin, int nout);
TG_API void tg_function_free(tg_function *f);
/* Calls f on in[0..nin) into out[0..nout) (new lazy tensors in the current
 * scope). A new signature builds a new body (not an error). 0 or -1. */
TG_API int tg_function_call(tg_function *f, tg_tensor *const *in, tg_tensor **out);
TG_API void tg_function_allow_implicit(tg_function *f, bool on);
/* A user gradient (set before the first call): given the call's inputs and
 * the gradients of its outputs (grad_out[i] NULL for an output the loss does
 * not depend on), writes the inputs' gradients into grad_in[0..nin) (NULL:
 * none). Built lazily with tensor ops, like fn. 0 or negative. */
typedef int (*tg_function_grad_fn)(void *ctx, tg_tensor *const *in, int nin, tg_tensor *const *grad_out, int nout, tg_tensor **grad_in);
TG_API void tg_function_set_grad(tg_function *f, tg_function_grad_fn grad, void *ctx);
typedef struct {
  int calls;          /* calls so far */
  int bodies;         /* bodies built (one per signature) */
  int grad_bodies;    /* gradient bodies built */
  int body_kernels;   /* kernels of its bodies, together (a body not scheduled yet is scheduled for the count) */
} tg_function_info;
TG_API tg_function_info tg_function_stats(const tg_function *f);

/* ---------------------------------------------------------------- schedules */

/* What realizing ts together would run, without running it: one entry per
 * kernel or copy between devices, in run order (a function call's kernels
 * in the place of the call). Nothing is computed or allocated, and ts keep
 * their lazy graphs. */
typedef struct {
  char name[96];          /* as DEBUG=2 prints it */
  const char *device;
  bool copy;              /* a copy between devices (name "copy A->B") */
  int nbufs;              /* the buffers it reads and writes, output first */
  int64_t bytes;          /* their sizes together */
  int64_t buf_ids[8];     /* the first 8 buffers' ids: equal ids, the same memory */
} tg_schedule_entry;
/* Fills out[0..min(count, max)) and returns the count, or -1. */
TG_API int tg_schedule_list(tg_tensor *const *ts, int n, tg_schedule_entry *out, int max);

/* A schedule kept as a program (tinygrad's LINEAR of CALLs, docs/jit.md):
 * the kernels and copies that realizing ts together runs, scheduled and
 * compiled once by tg_schedule_new (nothing runs), then run as often as
 * wanted with tg_schedule_run, each time with the variable values given
 * there. Its buffers are fixed: a run reads its inputs' memory as it is
 * then (a tg_assign to an input between runs is seen) and writes the same
 * output memory. At the first run, ts (and every live tensor sharing
 * their graph) become views of that memory, so they show what the last
 * run wrote. Not for sharded tensors. NULL + tg_error on failure. */
typedef struct tg_schedule tg_schedule;
TG_API tg_schedule *tg_schedule_new(tg_tensor *const *ts, int n);
TG_API void tg_schedule_free(tg_schedule *s);
/* Its calls (kernels and copies), in run order; -1 for NULL. */
TG_API int tg_schedule_count(const tg_schedule *s);
/* Call i, as tg_schedule_list describes it (buffer ids as there): 0 or -1. */
TG_API int tg_schedule_call(const tg_schedule *s, int i, tg_schedule_entry *out);
/* The symbolic variables its kernels read, sorted by name, into
 * names[0..min(count, max)); returns the count, or -1. */
TG_API int tg_schedule_vars(const tg_schedule *s, const char **names, int max);
/* Runs every call in order. names[i] takes values[i] for this run (and
 * only: the tg_bind values stay as they were); a variable not given uses
 * its tg_bind value. An undeclared name, a value outside the variable's range,
 * a name given twice or a variable the kernels read that is neither given
 * nor bound fails before anything runs. 0 or -1. */
TG_API int tg_schedule_run(tg_schedule *s, const char *const *names, const int64_t *values, int n);
/* The linear a replay runs (its captured calls, pruned ones left out), as
 * tg_schedule_list describes each: fills out[0..min(count, max)) and
 * returns the count (0 before the capture), or -1. */
TG_API int tg_jit_entries(const tg_jit *j, tg_schedule_entry *out, int max);

/* ---------------------------------------------------------------- kernels */

/* Kernel optimizations applied to every kernel compiled from now on, by
 * name, instead of the built-in heuristic: "UPCAST:1:16,UNROLL:0:4,THREAD:0:2"
 * (see docs/kernel_opts.md). An opt that does not fit a kernel makes its
 * realize fail with a message saying why. NULL or "" restores the heuristic.
 * "NAME=OPTS;NAME2=OPTS2" gives opts to the kernels of those names only
 * (names as DEBUG=2 prints them); the others keep the heuristic.
 * The environment variable TG_OPTS does the same; NOOPT=1 turns the
 * heuristic off. Returns 0, or -1 for a malformed spec. */
TG_API int tg_set_kernel_opts(const char *spec);

/* ---------------------------------------------------------------- viz */

/* VIZ: a trace of every rewrite pass (each rule that fired, the node before
 * and after), each kernel's AST, opts, linearized program and source, and a
 * profile (kernel runs with device time, copies, buffer allocations,
 * schedule/compile/run spans, markers), read afterwards with `tg viz`
 * (docs/viz.md). VIZ=-1 (or VIZ=1) in the environment records the whole
 * run to $TG_VIZ_DIR (default ./tg-viz); these calls record a part of it.
 * tg_viz_begin(dir) starts a trace file dir/trace-PID-N.jsonl (dir NULL:
 * $TG_VIZ_DIR or ./tg-viz, created if missing); 0, or -1 (cannot create
 * it, or a trace is already being recorded). tg_viz_end finishes it: 0, or
 * -1 when none is open or writing failed. Not recording costs nothing. */
TG_API int tg_viz_begin(const char *dir);
TG_API int tg_viz_end(void);
/* The path of the trace being recorded, or of the last one; NULL if none. */
TG_API const char *tg_viz_file(void);
/* A named point in the profile (`tg viz --interval A B` shows what ran
 * between two); nothing when not recording. */
TG_API void tg_profile_marker(const char *name);

/* ---------------------------------------------------------------- counters */

/* Totals since start (or the last reset): kernels launched, compiled, ... */
typedef struct {
  int64_t kernels_run;       /* kernel launches */
  int64_t kernels_compiled;  /* compiles that ran the compiler */
  int64_t kernels_cached;    /* compiles served by the disk cache */
  int64_t schedules;         /* schedules built */
  double flops, bytes;       /* estimated */
  double kernel_seconds;     /* wall time spent inside kernels */
  int64_t mem_used;          /* bytes of device memory held by buffers now */
  int64_t mem_peak;          /* the most mem_used has been (since a reset) */
  int64_t kernels_rendered;  /* kernels optimized and rendered (codegen ran) */
  int64_t programs_cached;   /* rendered kernels read from the disk cache instead */
} tg_counters;
TG_API tg_counters tg_get_counters(void);
TG_API void tg_reset_counters(void);

#ifdef __cplusplus
}
#endif
#endif
