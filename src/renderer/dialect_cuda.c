/* dialect_cuda.c: CUDA C for NVRTC. extern "C" __global__ kernels with
 * __restrict__ buffers, 64-bit variables as scalar arguments,
 * blockIdx/threadIdx for SPECIALs and __syncthreads(). NVRTC brings no
 * C headers, so the prelude defines INFINITY, NAN and the fixed-width
 * integer names itself; small floats stay bit patterns with the exact
 * conversion helpers the CPU uses. */
#include "renderer/cstyle.h"

static void cuda_prelude(rctx *c, strbuf *src) {
  sb_puts(src, "#define INFINITY __int_as_float(0x7f800000)\n#define NAN __int_as_float(0x7fffffff)\n"
               "typedef unsigned char uint8_t; typedef unsigned short uint16_t; typedef unsigned int uint32_t; typedef unsigned long long uint64_t;\n"
               "template <class T, class F> __device__ static inline T tg_bitcast(F f) { T t; memcpy(&t, &f, sizeof t); return t; }\n");
  if (c->need_fpconv) {
    sb_puts(src, "#define TG_CVT_FN __device__ static inline\n#define TG_CVT_HAVE_BITS\n"
                 "TG_CVT_FN uint64_t tg_cvt__bits64(double x) { return (uint64_t)__double_as_longlong(x); }\n"
                 "TG_CVT_FN uint32_t tg_cvt__bits32(float x) { return __float_as_uint(x); }\n"
                 "TG_CVT_FN float tg_cvt__f32bits(uint32_t u) { return __uint_as_float(u); }\n");
    sb_puts(src, tg_kernel_prelude_fpconv);
  }
  if (c->need_threefry) render_threefry(src, "__device__ static inline", "unsigned int", "unsigned long long");
}

/* mma.sync's fragments: a0..a7 of A and b0..b3 of B (bit patterns) in
 * pairs per 32-bit register, the lower element in the low half. */
static void cuda_wmma_helper(rctx *c, strbuf *src, const tg_tensor_core *tc) {
  const char *in = tc->in == TG_BF16 ? "bf16" : "f16";
  sb_printf(src, "__device__ static inline void tg_wmma_%s(float *c", tc->helper);
  for (int e = 0; e < tc->na; e++) sb_printf(src, ", unsigned short a%d", e);
  for (int e = 0; e < tc->nb; e++) sb_printf(src, ", unsigned short b%d", e);
  sb_puts(src, ") {\n  const unsigned int ");
  for (int r = 0; r < tc->na / 2; r++) sb_printf(src, "%sA%d = a%d | ((unsigned int)a%d << 16)", r ? ", " : "", r, 2 * r, 2 * r + 1);
  for (int r = 0; r < tc->nb / 2; r++) sb_printf(src, ", B%d = b%d | ((unsigned int)b%d << 16)", r, 2 * r, 2 * r + 1);
  sb_printf(src, ";\n  asm volatile(\"mma.sync.aligned.m%dn%dk%d.row.col.f32.%s.%s.f32 {%%0,%%1,%%2,%%3}, {%%4,%%5,%%6,%%7}, {%%8,%%9}, {%%0,%%1,%%2,%%3};\"\n",
             tc->m, tc->n, tc->k, in, in);
  sb_puts(src, "    : \"+f\"(c[0]), \"+f\"(c[1]), \"+f\"(c[2]), \"+f\"(c[3]) : \"r\"(A0), \"r\"(A1), \"r\"(A2), \"r\"(A3), \"r\"(B0), \"r\"(B1));\n}\n");
}

static void cuda_open_kernel(rctx *c, strbuf *src, const char *name, const kernel_args *a) {
  sb_printf(src, "extern \"C\" __global__ void __launch_bounds__(%d) %s(", c->r->max_local, name);
  render_gpu_params(c, src, a, "", "__restrict__");
  sb_puts(src, ") {\n");
}

static char *cuda_special(int kind, int dim) { return rfmt("%s.%c", kind ? "threadIdx" : "blockIdx", "xyz"[dim]); }

static char *cuda_bitcast(rctx *c, const rw_match *m) { return rfmt("tg_bitcast<%s>(%s)", rctype(c, m->root->dtype), rname(c, m->root->src[0])); }

static const render_rule cuda_rules[] = {
  { "(BITCAST x)", .fn = cuda_bitcast },
};
static const render_table cuda_code = RENDER_TABLE(cuda_rules);

const render_dialect dialect_cuda = {
  .name = "cuda",
  .scalar_type = { [TG_BOOL] = "bool", [TG_I8] = "signed char", [TG_U8] = "unsigned char", [TG_I16] = "short", [TG_U16] = "unsigned short",
    [TG_I32] = "int", [TG_U32] = "unsigned int", [TG_I64] = "long long", [TG_U64] = "unsigned long long",
    [TG_F16] = "unsigned short", [TG_BF16] = "unsigned short", [TG_FP8E4M3] = "unsigned char", [TG_FP8E5M2] = "unsigned char",
    [TG_F32] = "float", [TG_F64] = "double" },
  .buffer_elem = { [TG_BOOL] = "bool", [TG_I8] = "signed char", [TG_U8] = "unsigned char", [TG_I16] = "short", [TG_U16] = "unsigned short",
    [TG_I32] = "int", [TG_U32] = "unsigned int", [TG_I64] = "long long", [TG_U64] = "unsigned long long",
    [TG_F16] = "unsigned short", [TG_BF16] = "unsigned short", [TG_FP8E4M3] = "unsigned char", [TG_FP8E5M2] = "unsigned char",
    [TG_F32] = "float", [TG_F64] = "double" },
  .i64_suffix = "LL", .u64_suffix = "ULL",
  .fn_qual = "__device__ static inline",
  .local_qual = "__shared__",
  .barrier = "__syncthreads();",
  .var_fmt = "var%d",
  .open_kernel = cuda_open_kernel,
  .special = cuda_special,
  .code = { &cuda_code, &cstyle_libm_f32 },
  .prelude = cuda_prelude,
  .wmma_helper = cuda_wmma_helper,
};

/* PTX ISA, "Matrix Fragments for mma.m16n8k16 with floating point type" */
#define MMA_M16N8K16(helper, in) \
  { helper, 16, 8, 16, in, TG_F32, 8, 4, 4, \
    { 0, 0, 8, 8, 0, 0, 8, 8 }, { 0, 1, 0, 1, 8, 9, 8, 9 }, { 0, 1, 8, 9 }, { 0, 0, 8, 8 }, { 0, 1, 0, 1 } }
const tg_tensor_core tensor_cores_mma_m16n8k16[2] = { MMA_M16N8K16("m16n8k16_f16", TG_F16), MMA_M16N8K16("m16n8k16_bf16", TG_BF16) };

/* Every NVIDIA GPU since Kepler; the CUDA device reads its own limits
 * (and drops the tensor cores below sm_80). */
const tg_renderer renderer_cuda = {
  .name = "cuda",
  .dialect = &dialect_cuda,
  .tensor_cores = tensor_cores_mma_m16n8k16,
  .n_tensor_cores = 2,
  .has_local = true,
  .local_mem = 48 << 10,
  .max_local = 1024,
  .global_max = { INT32_MAX, 65535, 65535 },
  .local_max = { 1024, 1024, 64 },
};
