/* dialect_opencl.c: OpenCL C 1.2 for the CL device. One kernel per
 * program with __global buffers (bools as bytes), 64-bit variables as
 * scalar arguments, get_group_id/get_local_id for SPECIALs and
 * barrier(CLK_LOCAL_MEM_FENCE). half, bfloat16 and fp8 stay bit patterns
 * with the same exact conversion helpers as on the CPU; doubles come from
 * cl_khr_fp64 (PoCL and every GPU driver tg targets have it). */
#include "renderer/cstyle.h"

static void cl_prelude(rctx *c, strbuf *src) {
  sb_puts(src, "#ifdef cl_khr_fp64\n#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n#endif\n");
  if (c->need_fpconv) {
    sb_puts(src, "typedef uchar uint8_t; typedef ushort uint16_t; typedef uint uint32_t; typedef ulong uint64_t;\n"
                 "#define TG_CVT_FN static inline\n#define TG_CVT_HAVE_BITS\n"
                 "TG_CVT_FN uint64_t tg_cvt__bits64(double x) { return as_ulong(x); }\n"
                 "TG_CVT_FN uint32_t tg_cvt__bits32(float x) { return as_uint(x); }\n"
                 "TG_CVT_FN float tg_cvt__f32bits(uint32_t u) { return as_float(u); }\n");
    sb_puts(src, tg_kernel_prelude_fpconv);
  }
  if (c->need_threefry) render_threefry(src, "static inline", "uint", "ulong");
}

/* Tensor cores emulated through local memory (TG_CL_EMULATE_TC=1 on a CL
 * device): each lane writes its fragments of A and B where the layout puts
 * them in its warp's slice of the scratch, and after a barrier adds its
 * elements of A*B into acc. Slow, but it runs the exact index arithmetic
 * of the CUDA kernels on any OpenCL device (tinygrad: EMULATE). Inlined
 * by force: PoCL (3.x, pthread) raced on a barrier inside a called
 * function when two work groups ran at once. */
#define CL_WMMA_SCRATCH (16 * 16 + 16 * 8)
static void cl_wmma_helper(rctx *c, strbuf *src, const tg_tensor_core *tc) {
  const char *cvt = tc->in == TG_BF16 ? "tg_cvt_bf16_f32" : "tg_cvt_f16_f32";
  sb_printf(src, "static inline __attribute__((always_inline)) void tg_wmma_%s(float *acc", tc->helper);
  for (int e = 0; e < tc->na; e++) sb_printf(src, ", ushort a%d", e);
  for (int e = 0; e < tc->nb; e++) sb_printf(src, ", ushort b%d", e);
  sb_puts(src, ", __local float *scratch) {\n"
               "  uint lin = get_local_id(0) + get_local_size(0) * (get_local_id(1) + get_local_size(1) * get_local_id(2));\n");
  sb_printf(src, "  __local float *A = scratch + (lin / 32) * %d, *B = A + %d;\n", tc->m * tc->k + tc->k * tc->n, tc->m * tc->k);
  sb_puts(src, "  int g = (lin % 32) / 4, t2 = (lin % 4) * 2;\n");
  for (int e = 0; e < tc->na; e++) sb_printf(src, "  A[(g + %d) * %d + t2 + %d] = %s(a%d);\n", tc->a_row[e], tc->k, tc->a_col[e], cvt, e);
  for (int e = 0; e < tc->nb; e++) sb_printf(src, "  B[(t2 + %d) * %d + g] = %s(b%d);\n", tc->b_k[e], tc->n, cvt, e);
  sb_puts(src, "  barrier(CLK_LOCAL_MEM_FENCE);\n");
  for (int e = 0; e < tc->nc; e++)
    sb_printf(src, "  for (int k = 0; k < %d; k++) acc[%d] += A[(g + %d) * %d + k] * B[k * %d + t2 + %d];\n", tc->k, e, tc->c_row[e], tc->k, tc->n, tc->c_col[e]);
  sb_puts(src, "  barrier(CLK_LOCAL_MEM_FENCE);\n}\n");
}

static void cl_open_kernel(rctx *c, strbuf *src, const char *name, const kernel_args *a) {
  sb_printf(src, "__kernel void %s(", name);
  render_gpu_params(c, src, a, "__global", "restrict");
  sb_puts(src, ") {\n");
}

static char *cl_special(int kind, int dim) { return rfmt("get_%s_id(%d)", kind ? "local" : "group", dim); }

static char *cl_bitcast(rctx *c, const rw_match *m) { return rfmt("as_%s(%s)", rctype(c, m->root->dtype), rname(c, m->root->src[0])); }

/* libm's names are overloads in OpenCL C: the core's rules spell them */
static const render_rule cl_rules[] = {
  { "(BITCAST x)", .fn = cl_bitcast },
};
static const render_table cl_code = RENDER_TABLE(cl_rules);

const render_dialect dialect_opencl = {
  .name = "opencl",
  .scalar_type = { [TG_BOOL] = "bool", [TG_I8] = "char", [TG_U8] = "uchar", [TG_I16] = "short", [TG_U16] = "ushort",
    [TG_I32] = "int", [TG_U32] = "uint", [TG_I64] = "long", [TG_U64] = "ulong",
    [TG_F16] = "ushort", [TG_BF16] = "ushort", [TG_FP8E4M3] = "uchar", [TG_FP8E5M2] = "uchar", [TG_F32] = "float", [TG_F64] = "double" },
  .buffer_elem = { [TG_BOOL] = "uchar", [TG_I8] = "char", [TG_U8] = "uchar", [TG_I16] = "short", [TG_U16] = "ushort",
    [TG_I32] = "int", [TG_U32] = "uint", [TG_I64] = "long", [TG_U64] = "ulong",
    [TG_F16] = "ushort", [TG_BF16] = "ushort", [TG_FP8E4M3] = "uchar", [TG_FP8E5M2] = "uchar", [TG_F32] = "float", [TG_F64] = "double" },
  .i64_suffix = "L", .u64_suffix = "UL",
  .fn_qual = "static inline",
  .local_qual = "__local",
  .barrier = "barrier(CLK_LOCAL_MEM_FENCE);",
  .var_fmt = "var%d",
  .open_kernel = cl_open_kernel,
  .special = cl_special,
  .code = { &cl_code },
  .prelude = cl_prelude,
  .wmma_helper = cl_wmma_helper,
  .wmma_scratch = CL_WMMA_SCRATCH,
};

/* The limits here are OpenCL's minimums; the CL device replaces them with
 * what the driver reports. */
const tg_renderer renderer_opencl = {
  .name = "opencl",
  .dialect = &dialect_opencl,
  .has_local = true,
  .local_mem = 16 << 10,
  .max_local = 256,
  .global_max = { INT32_MAX, INT32_MAX, INT32_MAX },
  .local_max = { 256, 256, 256 },
};
