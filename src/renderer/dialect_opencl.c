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

static void cl_open_kernel(rctx *c, strbuf *src, const char *name, const kernel_args *a) {
  sb_printf(src, "__kernel void %s(", name);
  render_gpu_params(c, src, a, "__global", "restrict");
  sb_puts(src, ") {\n");
}

static char *cl_special(int kind, int dim) { return rfmt("get_%s_id(%d)", kind ? "local" : "group", dim); }

static char *cl_bitcast(rctx *c, uop *u, const char *x) { return rfmt("as_%s(%s)", rctype(c, u->dtype), x); }

const render_dialect dialect_opencl = {
  .name = "opencl",
  .scalar_type = { [TG_BOOL] = "bool", [TG_I8] = "char", [TG_U8] = "uchar", [TG_I16] = "short", [TG_U16] = "ushort",
    [TG_I32] = "int", [TG_U32] = "uint", [TG_I64] = "long", [TG_U64] = "ulong",
    [TG_F16] = "ushort", [TG_BF16] = "ushort", [TG_FP8E4M3] = "uchar", [TG_FP8E5M2] = "uchar", [TG_F32] = "float", [TG_F64] = "double" },
  .buffer_elem = { [TG_BOOL] = "uchar", [TG_I8] = "char", [TG_U8] = "uchar", [TG_I16] = "short", [TG_U16] = "ushort",
    [TG_I32] = "int", [TG_U32] = "uint", [TG_I64] = "long", [TG_U64] = "ulong",
    [TG_F16] = "ushort", [TG_BF16] = "ushort", [TG_FP8E4M3] = "uchar", [TG_FP8E5M2] = "uchar", [TG_F32] = "float", [TG_F64] = "double" },
  .i64_suffix = "L", .u64_suffix = "UL",
  .f32_math_suffix = false,
  .fn_qual = "static inline",
  .local_qual = "__local",
  .barrier = "barrier(CLK_LOCAL_MEM_FENCE);",
  .var_fmt = "var%d",
  .open_kernel = cl_open_kernel,
  .special = cl_special,
  .bitcast = cl_bitcast,
  .prelude = cl_prelude,
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
