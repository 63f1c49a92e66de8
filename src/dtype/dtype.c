/* dtype.c: dtype properties, names, tinygrad's promotion lattice and
 * safe-cast table, value casting, and the public float conversions. */
#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "dtype/dtype.h"
#include "dtype/fpconv.h"
#include "util/util.h"

static bool valid(int s) { return s >= 0 && s < TG_DTYPE_COUNT; }

/* ---------------------------------------------------------------- properties */

static const int sizes[TG_NSCALAR] = {
  [TG_BOOL] = 1, [TG_I8] = 1, [TG_U8] = 1, [TG_I16] = 2, [TG_U16] = 2, [TG_I32] = 4, [TG_U32] = 4,
  [TG_I64] = 8, [TG_U64] = 8, [TG_FP8E4M3] = 1, [TG_FP8E5M2] = 1, [TG_F16] = 2, [TG_BF16] = 2,
  [TG_F32] = 4, [TG_F64] = 8, [TG_VOID] = 0,
};

static bool s_is_float(int s) { return s >= TG_FP8E4M3 && s <= TG_F64; }
static bool s_is_int(int s) { return s >= TG_I8 && s <= TG_U64; }
static bool s_is_unsigned(int s) {
  return s == TG_U8 || s == TG_U16 || s == TG_U32 || s == TG_U64;
}

bool dt_is_float(dtype_t d) { return s_is_float(d.scalar); }
bool dt_is_int(dtype_t d) { return s_is_int(d.scalar); }
bool dt_is_unsigned(dtype_t d) { return s_is_unsigned(d.scalar); }
int dt_itemsize(dtype_t d) { return d.scalar < TG_NSCALAR ? sizes[d.scalar] : 0; }

double dt_min(dtype_t d) {
  switch (d.scalar) {
  case TG_BOOL: return 0;
  case TG_I8: return INT8_MIN;
  case TG_I16: return INT16_MIN;
  case TG_I32: return INT32_MIN;
  case TG_I64: return (double)INT64_MIN;
  case TG_U8: case TG_U16: case TG_U32: case TG_U64: return 0;
  default: return s_is_float(d.scalar) ? -dt_max(d) : 0;
  }
}

double dt_max(dtype_t d) {
  switch (d.scalar) {
  case TG_BOOL: return 1;
  case TG_I8: return INT8_MAX;
  case TG_U8: return UINT8_MAX;
  case TG_I16: return INT16_MAX;
  case TG_U16: return UINT16_MAX;
  case TG_I32: return INT32_MAX;
  case TG_U32: return UINT32_MAX;
  case TG_I64: return 9223372036854775807.0;    /* 2^63 - 1 rounds to 2^63 */
  case TG_U64: return 18446744073709551615.0;   /* 2^64 - 1 rounds to 2^64 */
  case TG_FP8E4M3: return 448.0;
  case TG_FP8E5M2: return 57344.0;
  case TG_F16: return 65504.0;
  case TG_BF16: return 0x1.FEp127;
  case TG_F32: return FLT_MAX;
  case TG_F64: return DBL_MAX;
  default: return 0;
  }
}

static const char *const cnames[TG_NSCALAR] = {
  "bool", "char", "uchar", "short", "ushort", "int", "uint", "long", "ulong",
  "fp8e4m3", "fp8e5m2", "half", "bfloat16", "float", "double", "void",
};

const char *dt_str(dtype_t d, char *buf, int n) {
  if (!buf || n <= 0) return "";
  const char *base = d.scalar < TG_NSCALAR ? cnames[d.scalar] : "?";
  int k = d.count > 1 ? snprintf(buf, (size_t)n, "%s.vec(%d)", base, d.count)
                      : snprintf(buf, (size_t)n, "%s", base);
  if (k < 0 || k >= n || d.addr == ADDR_NONE) return buf;
  const char *sp = d.addr == ADDR_LOCAL ? "* local" : d.addr == ADDR_REG ? "* reg" : "*";
  snprintf(buf + k, (size_t)(n - k), "%s", sp);
  return buf;
}

/* ---------------------------------------------------------------- public tg_dtype */

static const char *const pnames[TG_DTYPE_COUNT] = {
  "bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
  "fp8e4m3", "fp8e5m2", "float16", "bfloat16", "float32", "float64",
};

/* An out-of-range dtype gives "?" / 0 with tg_error() saying so. */
const char *tg_dtype_name(tg_dtype dt) {
  if (valid((int)dt)) return pnames[dt];
  if ((int)dt == TG_VOID) return "void";
  if ((int)dt < 0 || (int)dt >= TG_NSCALAR) tg_seterr("tg_dtype_name: unknown dtype %d", (int)dt);
  return "?";
}
int tg_dtype_size(tg_dtype dt) {
  if (valid((int)dt)) return sizes[dt];
  if ((int)dt < 0 || (int)dt >= TG_NSCALAR) tg_seterr("tg_dtype_size: unknown dtype %d", (int)dt);   /* (internal ones: 0, quietly) */
  return 0;
}
bool tg_dtype_is_float(tg_dtype dt) { return s_is_float((int)dt); }
bool tg_dtype_is_int(tg_dtype dt) { return s_is_int((int)dt); }
bool tg_dtype_is_unsigned(tg_dtype dt) { return s_is_unsigned((int)dt); }

/* tinygrad's promo_lattice (tinygrad/dtype.py): the direct parents of each
 * dtype, as bitmasks. WEAKF is tinygrad's "weakfloat" node, where int64 and
 * uint64 meet (as in JAX); it is not a storable dtype and resolves to the
 * default float, float32. Its priority sits between uint64 and fp8e4m3. */
#define B(x) (1u << (x))
#define WEAKF TG_DTYPE_COUNT
static const uint32_t lattice[TG_DTYPE_COUNT + 1] = {
  [TG_BOOL] = B(TG_I8) | B(TG_U8),
  [TG_I8] = B(TG_I16),
  [TG_I16] = B(TG_I32),
  [TG_I32] = B(TG_I64),
  [TG_I64] = B(WEAKF),
  [TG_U8] = B(TG_I16) | B(TG_U16),
  [TG_U16] = B(TG_I32) | B(TG_U32),
  [TG_U32] = B(TG_I64) | B(TG_U64),
  [TG_U64] = B(WEAKF),
  [WEAKF] = B(TG_FP8E4M3) | B(TG_FP8E5M2),
  [TG_FP8E5M2] = B(TG_F16) | B(TG_BF16),
  [TG_FP8E4M3] = B(TG_F16) | B(TG_BF16),
  [TG_F16] = B(TG_F32),
  [TG_BF16] = B(TG_F32),
  [TG_F32] = B(TG_F64),
  [TG_F64] = 0,
};
/* Lattice nodes from lowest to highest priority. */
static const int by_priority[TG_DTYPE_COUNT + 1] = {
  TG_BOOL, TG_I8, TG_U8, TG_I16, TG_U16, TG_I32, TG_U32, TG_I64, TG_U64, WEAKF,
  TG_FP8E4M3, TG_FP8E5M2, TG_F16, TG_BF16, TG_F32, TG_F64,
};

/* The node itself and all its recursive parents. */
static uint32_t parents_walk(int d) {
  uint32_t set = B(d);
  for (int i = 0; i <= TG_DTYPE_COUNT; i++)
    if (lattice[d] & B(i)) set |= parents_walk(i);
  return set;
}
/* ... made once: every binary op of every graph asks (a model's layer
 * builds tens of thousands) */
static uint32_t parents_of[TG_DTYPE_COUNT + 1];
static pthread_once_t parents_once = PTHREAD_ONCE_INIT;
static void parents_make(void) { for (int d = 0; d <= TG_DTYPE_COUNT; d++) parents_of[d] = parents_walk(d); }
static uint32_t parents(int d) {
  pthread_once(&parents_once, parents_make);
  return parents_of[d];
}

tg_dtype tg_dtype_promote(tg_dtype a, tg_dtype b) {
  if (!valid((int)a) || !valid((int)b)) {   /* never an unknown dtype back */
    tg_seterr("tg_dtype_promote: unknown dtype %d", valid((int)a) ? (int)b : (int)a);
    return valid((int)a) ? a : valid((int)b) ? b : TG_F32;
  }
  uint32_t common = parents((int)a) & parents((int)b);
  for (int i = 0; i <= TG_DTYPE_COUNT; i++) {
    int d = by_priority[i];
    if (common & B(d)) return d == WEAKF ? TG_F32 : (tg_dtype)d;
  }
  return TG_F64;
}
#undef WEAKF

/* tinygrad's can_safe_cast: for each target, the sources whose every value
 * it holds exactly (besides itself and bool). */
static const uint32_t safe_from[TG_DTYPE_COUNT] = {
  [TG_F64] = B(TG_F32) | B(TG_F16) | B(TG_BF16) | B(TG_FP8E4M3) | B(TG_FP8E5M2) |
             B(TG_U32) | B(TG_U16) | B(TG_U8) | B(TG_I32) | B(TG_I16) | B(TG_I8),
  [TG_F32] = B(TG_F16) | B(TG_BF16) | B(TG_FP8E4M3) | B(TG_FP8E5M2) |
             B(TG_U16) | B(TG_U8) | B(TG_I16) | B(TG_I8),
  [TG_F16] = B(TG_FP8E4M3) | B(TG_FP8E5M2) | B(TG_U8) | B(TG_I8),
  [TG_BF16] = B(TG_FP8E4M3) | B(TG_FP8E5M2) | B(TG_U8) | B(TG_I8),
  [TG_U64] = B(TG_U32) | B(TG_U16) | B(TG_U8),
  [TG_U32] = B(TG_U16) | B(TG_U8),
  [TG_U16] = B(TG_U8),
  [TG_I64] = B(TG_U32) | B(TG_U16) | B(TG_U8) | B(TG_I32) | B(TG_I16) | B(TG_I8),
  [TG_I32] = B(TG_U16) | B(TG_U8) | B(TG_I16) | B(TG_I8),
  [TG_I16] = B(TG_U8) | B(TG_I8),
};

bool tg_dtype_can_safe_cast(tg_dtype from, tg_dtype to) {
  if (!valid((int)from) || !valid((int)to)) return false;
  if (from == to || from == TG_BOOL) return true;
  return (safe_from[to] & B(from)) != 0;
}
#undef B

/* ---------------------------------------------------------------- conversions */

uint16_t tg_f32_to_f16(float f) { return tg_cvt_f32_f16(f); }
float tg_f16_to_f32(uint16_t h) { return tg_cvt_f16_f32(h); }
uint16_t tg_f32_to_bf16(float f) { return tg_cvt_f32_bf16(f); }
float tg_bf16_to_f32(uint16_t h) { return tg_cvt_bf16_f32(h); }
uint8_t tg_f32_to_fp8e4m3(float f) { return tg_cvt_f32_e4m3(f); }
float tg_fp8e4m3_to_f32(uint8_t x) { return tg_cvt_e4m3_f32(x); }
uint8_t tg_f32_to_fp8e5m2(float f) { return tg_cvt_f32_e5m2(f); }
float tg_fp8e5m2_to_f32(uint8_t x) { return tg_cvt_e5m2_f32(x); }

/* A double as an integer modulo 2^64, like a C cast through int64/uint64:
 * truncate toward zero, then wrap. NaN and +-inf give 0. */
static uint64_t wrap_u64(double v) {
  if (!isfinite(v)) return 0;
  double t = trunc(v);
  uint64_t u = (uint64_t)fmod(fabs(t), 18446744073709551616.0);
  return t < 0 ? (uint64_t)0 - u : u;
}

double dt_cast_value(double v, dtype_t to) {
  uint64_t u;
  switch (to.scalar) {
  case TG_BOOL: return v != 0 ? 1.0 : 0.0;
  case TG_F64: return v;
  case TG_F32: return (double)(float)v;
  case TG_F16: return tg_cvt_f16_f32(tg_cvt_f64_f16(v));
  case TG_BF16: return tg_cvt_bf16_f32(tg_cvt_f64_bf16(v));
  case TG_FP8E4M3: return tg_cvt_e4m3_f32(tg_cvt_f64_e4m3(v));
  case TG_FP8E5M2: return tg_cvt_e5m2_f32(tg_cvt_f64_e5m2(v));
  default: break;
  }
  u = wrap_u64(v);
  switch (to.scalar) {
  case TG_I8: return (int8_t)(uint8_t)u;
  case TG_U8: return (uint8_t)u;
  case TG_I16: return (int16_t)(uint16_t)u;
  case TG_U16: return (uint16_t)u;
  case TG_I32: return (int32_t)(uint32_t)u;
  case TG_U32: return (uint32_t)u;
  case TG_I64: return (double)(int64_t)u;
  case TG_U64: return (double)u;
  default: return v;
  }
}

void dt_store_scalar(void *p, tg_dtype d, double v) {
  union { uint8_t u8; uint16_t u16; uint32_t u32; uint64_t u64; float f; double g; } x;
  switch (d) {
  case TG_BOOL: x.u8 = v != 0; break;
  case TG_I8: case TG_U8: x.u8 = (uint8_t)wrap_u64(v); break;
  case TG_I16: case TG_U16: x.u16 = (uint16_t)wrap_u64(v); break;
  case TG_I32: case TG_U32: x.u32 = (uint32_t)wrap_u64(v); break;
  case TG_I64: case TG_U64: x.u64 = wrap_u64(v); break;
  case TG_FP8E4M3: x.u8 = tg_cvt_f64_e4m3(v); break;
  case TG_FP8E5M2: x.u8 = tg_cvt_f64_e5m2(v); break;
  case TG_F16: x.u16 = tg_cvt_f64_f16(v); break;
  case TG_BF16: x.u16 = tg_cvt_f64_bf16(v); break;
  case TG_F32: x.f = (float)v; break;
  case TG_F64: x.g = v; break;
  default: return;
  }
  memcpy(p, &x, (size_t)sizes[d]);
}

double dt_load_scalar(const void *p, tg_dtype d) {
  union { uint8_t u8; int8_t i8; uint16_t u16; int16_t i16; uint32_t u32; int32_t i32;
          uint64_t u64; int64_t i64; float f; double g; } x;
  if (!valid((int)d)) return 0;
  memcpy(&x, p, (size_t)sizes[d]);
  switch (d) {
  case TG_BOOL: return x.u8 != 0;
  case TG_I8: return x.i8;
  case TG_U8: return x.u8;
  case TG_I16: return x.i16;
  case TG_U16: return x.u16;
  case TG_I32: return x.i32;
  case TG_U32: return x.u32;
  case TG_I64: return (double)x.i64;
  case TG_U64: return (double)x.u64;
  case TG_FP8E4M3: return tg_cvt_e4m3_f32(x.u8);
  case TG_FP8E5M2: return tg_cvt_e5m2_f32(x.u8);
  case TG_F16: return tg_cvt_f16_f32(x.u16);
  case TG_BF16: return tg_cvt_bf16_f32(x.u16);
  case TG_F32: return x.f;
  case TG_F64: return x.g;
  default: return 0;
  }
}
