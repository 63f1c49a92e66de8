/* fpconv.h: exact conversions between double/float and the small float
 * formats (float16, bfloat16, fp8 e4m3fn, fp8 e5m2).
 *
 * This file is compiled into the library (through dtype.c) and is also pasted
 * verbatim, as text, into every generated kernel (build/gen/kernel_prelude.c),
 * so it must stay self-contained: it includes nothing and assumes that
 * <stdint.h>, <string.h> and <math.h> are already included. Every name starts
 * with tg_cvt; every function is marked unused, so a kernel that calls a few
 * of them compiles without warnings. The work is done on integer bits, so the
 * results hold under -ffast-math too (except that a DAZ mode flushes subnormal
 * float inputs before they get here).
 *
 * Encoding (to the small type) rounds once, to nearest even, straight from the
 * double (never through float, so there is no double rounding).
 *   float16:  overflow -> +-inf; subnormals exact; NaN keeps its sign and the
 *             top payload bits and is quieted (sign|0x7E00|payload).
 *   bfloat16: overflow -> +-inf; NaN -> sign|0x7FC0 (as ml_dtypes/Eigen).
 *   e4m3fn:   NVIDIA cuda_fp8 __NV_SATFINITE: |x| beyond 448 (after rounding),
 *             and +-inf, saturate to +-448 (0x7E/0xFE); NaN -> sign|0x7F.
 *   e5m2:     finite overflow saturates to +-57344 (0x7B/0xFB), as cuda;
 *             but +-inf stays +-inf (0x7C/0xFC), where cuda's SATFINITE gives
 *             +-57344; NaN -> sign|0x7E (cuda's and ml_dtypes' code for the
 *             default quiet NaN).
 * Decoding (to float) is exact. float16/bfloat16 NaNs widen bit for bit
 * (payload kept, as numpy/ml_dtypes do); fp8 NaNs become sign|0x7FC00000.
 */
#ifndef TG_FPCONV_H
#define TG_FPCONV_H

/* GPU dialects paste this file too: they define TG_CVT_FN (their helper
 * qualifiers), TG_CVT_HAVE_BITS with their own tg_cvt__bits64/bits32 and
 * tg_cvt__f32bits, and the fixed-width integer names. */
#ifndef TG_CVT_FN
#define TG_CVT_FN static inline __attribute__((unused))
#endif

/* Round |x| (bits a: finite, sign cleared) to a format with M mantissa bits
 * and exponent bias B, returning the magnitude encoding. Results at or beyond
 * the format's top codes mean overflow; the caller handles that. */
TG_CVT_FN uint32_t tg_cvt__rne(uint64_t a, int M, int B) {
  int e = (int)(a >> 52);
  if (e == 0) return 0;                       /* double subnormal or zero */
  int ed = e - 1023, emin = 1 - B;
  if (ed > B + 1) return (uint32_t)(2 * B + 2) << M;   /* far overflow */
  uint64_t m = (a & 0xFFFFFFFFFFFFFull) | 0x10000000000000ull;
  int shift = 52 - M;
  uint32_t base = 0;
  if (ed >= emin) base = (uint32_t)(ed - emin) << M;
  else {
    shift += emin - ed;
    if (shift > 53) return 0;
  }
  uint64_t q = m >> shift, rem = m & ((1ull << shift) - 1), halfway = 1ull << (shift - 1);
  if (rem > halfway || (rem == halfway && (q & 1))) q++;
  return base + (uint32_t)q;
}

#ifndef TG_CVT_HAVE_BITS
TG_CVT_FN uint64_t tg_cvt__bits64(double x) { uint64_t u; __builtin_memcpy(&u, &x, 8); return u; }
TG_CVT_FN uint32_t tg_cvt__bits32(float x) { uint32_t u; __builtin_memcpy(&u, &x, 4); return u; }
TG_CVT_FN float tg_cvt__f32bits(uint32_t u) { float f; __builtin_memcpy(&f, &u, 4); return f; }
#endif

/* ---- float16 */
TG_CVT_FN uint16_t tg_cvt_f64_f16(double x) {
  uint64_t u = tg_cvt__bits64(x), a = u & 0x7FFFFFFFFFFFFFFFull;
  uint16_t s = (uint16_t)((u >> 48) & 0x8000);
  if (a > 0x7FF0000000000000ull) return (uint16_t)(s | 0x7E00 | ((a >> 42) & 0x3FF));
  uint32_t r = tg_cvt__rne(a, 10, 15);
  if (r > 0x7C00) r = 0x7C00;
  return (uint16_t)(s | r);
}
#if defined(__F16C__) && !defined(TG_NO_F16C) && !defined(TG_CVT_HAVE_BITS)
/* the CPU converts in one instruction each way (and vectorizes it): float
 * to half rounds to nearest even like tg_cvt_f64_f16 (a float's NaN keeps
 * its sign and top payload bits and is quieted, the same bits); half to
 * float is exact, only a NaN's quiet bit may differ from the portable
 * version below */
#include <immintrin.h>
TG_CVT_FN uint16_t tg_cvt_f32_f16(float x) { return (uint16_t)_cvtss_sh(x, _MM_FROUND_TO_NEAREST_INT); }
TG_CVT_FN float tg_cvt_f16_f32(uint16_t h) { return _cvtsh_ss(h); }
#else
TG_CVT_FN uint16_t tg_cvt_f32_f16(float x) { return tg_cvt_f64_f16((double)x); }
TG_CVT_FN float tg_cvt_f16_f32(uint16_t h) {
  uint32_t s = (uint32_t)(h & 0x8000) << 16, e = (h >> 10) & 0x1F, m = h & 0x3FF;
  if (e == 0x1F) return tg_cvt__f32bits(s | 0x7F800000u | (m << 13));
  if (e) return tg_cvt__f32bits(s | ((e + 112) << 23) | (m << 13));
  return tg_cvt__f32bits(s | tg_cvt__bits32((float)m * 0x1p-24f));   /* subnormal: exact */
}
#endif

/* ---- bfloat16 */
TG_CVT_FN uint16_t tg_cvt_f64_bf16(double x) {
  uint64_t u = tg_cvt__bits64(x), a = u & 0x7FFFFFFFFFFFFFFFull;
  uint16_t s = (uint16_t)((u >> 48) & 0x8000);
  if (a > 0x7FF0000000000000ull) return (uint16_t)(s | 0x7FC0);
  uint32_t r = tg_cvt__rne(a, 7, 127);
  if (r > 0x7F80) r = 0x7F80;
  return (uint16_t)(s | r);
}
TG_CVT_FN uint16_t tg_cvt_f32_bf16(float x) {
  uint32_t u = tg_cvt__bits32(x);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return (uint16_t)(((u >> 16) & 0x8000) | 0x7FC0);
  return (uint16_t)((u + 0x7FFFu + ((u >> 16) & 1)) >> 16);
}
TG_CVT_FN float tg_cvt_bf16_f32(uint16_t h) {
  return tg_cvt__f32bits((uint32_t)h << 16);
}

/* ---- fp8 e4m3fn: bias 7, no inf, 0x7F/0xFF are NaN, max 448 */
TG_CVT_FN uint8_t tg_cvt_f64_e4m3(double x) {
  uint64_t u = tg_cvt__bits64(x), a = u & 0x7FFFFFFFFFFFFFFFull;
  uint8_t s = (uint8_t)((u >> 56) & 0x80);
  if (a > 0x7FF0000000000000ull) return (uint8_t)(s | 0x7F);
  uint32_t r = tg_cvt__rne(a, 3, 7);
  if (r > 0x7E) r = 0x7E;
  return (uint8_t)(s | r);
}
TG_CVT_FN uint8_t tg_cvt_f32_e4m3(float x) { return tg_cvt_f64_e4m3((double)x); }
TG_CVT_FN float tg_cvt_e4m3_f32(uint8_t v) {
  uint32_t s = (uint32_t)(v & 0x80) << 24, e = (v >> 3) & 0xF, m = v & 7;
  if (e == 0xF && m == 7) return tg_cvt__f32bits(s | 0x7FC00000u);
  if (e) return tg_cvt__f32bits(s | ((e + 120) << 23) | (m << 20));
  return tg_cvt__f32bits(s | tg_cvt__bits32((float)m * 0x1p-9f));   /* subnormal: exact */
}

/* ---- fp8 e5m2: bias 15, IEEE-like (inf 0x7C, NaN 0x7D..0x7F), max 57344 */
TG_CVT_FN uint8_t tg_cvt_f64_e5m2(double x) {
  uint64_t u = tg_cvt__bits64(x), a = u & 0x7FFFFFFFFFFFFFFFull;
  uint8_t s = (uint8_t)((u >> 56) & 0x80);
  if (a > 0x7FF0000000000000ull) return (uint8_t)(s | 0x7E);
  if (a == 0x7FF0000000000000ull) return (uint8_t)(s | 0x7C);
  uint32_t r = tg_cvt__rne(a, 2, 15);
  if (r > 0x7B) r = 0x7B;
  return (uint8_t)(s | r);
}
TG_CVT_FN uint8_t tg_cvt_f32_e5m2(float x) { return tg_cvt_f64_e5m2((double)x); }
TG_CVT_FN float tg_cvt_e5m2_f32(uint8_t v) {
  uint32_t s = (uint32_t)(v & 0x80) << 24, e = (v >> 2) & 0x1F, m = v & 3;
  if (e == 0x1F) return tg_cvt__f32bits(s | (m ? 0x7FC00000u : 0x7F800000u));
  if (e) return tg_cvt__f32bits(s | ((e + 112) << 23) | (m << 21));
  return tg_cvt__f32bits(s | tg_cvt__bits32((float)m * 0x1p-16f));   /* subnormal: exact */
}

#endif
