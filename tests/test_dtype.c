/* test_dtype.c: dtype properties, names, promotion, safe casts, value casts and
 * the float conversions, bit for bit against goldens from tests/gen/gen_dtype.py
 * (the file formats are described at the top of that script). */
#include <stdint.h>
#include <string.h>
#include <math.h>
#include "test.h"
#include "dtype/dtype.h"
#include "dtype/fpconv.h"

static uint32_t f32bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static float bitsf32(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
static double bitsf64(uint64_t u) { double d; memcpy(&d, &u, 8); return d; }

static bool f16_nan(uint32_t h) { return (h & 0x7C00) == 0x7C00 && (h & 0x3FF); }
static bool bf16_nan(uint32_t h) { return (h & 0x7F80) == 0x7F80 && (h & 0x7F); }
static bool e4m3_nan(uint32_t v) { return (v & 0x7F) == 0x7F; }
static bool e5m2_nan(uint32_t v) { return (v & 0x7F) > 0x7C; }

/* Same bits, or both NaN with the same sign bit (signbit = top bit of `bits` wide). */
static bool same_code(uint32_t got, uint32_t want, bool (*isnan_)(uint32_t), uint32_t signbit) {
  return got == want || (isnan_(got) && isnan_(want) && (got & signbit) == (want & signbit));
}

/* ---------------------------------------------------------------- decode */

TEST(dtype_fp8_decode_all_codes) {
  size_t n;
  float *want = test_read_file("goldens/dtype_fp8_decode.bin", &n);
  if (!want) SKIP("goldens/dtype_fp8_decode.bin missing (run tests/gen/gen_dtype.py)");
  CHECK_EQ_INT(n, 512 * 4);
  int bad = 0;
  for (int c = 0; c < 256 && n == 2048; c++) {
    uint32_t g4 = f32bits(tg_fp8e4m3_to_f32((uint8_t)c)), w4 = f32bits(want[c]);
    uint32_t g5 = f32bits(tg_fp8e5m2_to_f32((uint8_t)c)), w5 = f32bits(want[256 + c]);
    if (g4 != w4 && bad++ < 5) test_fail(__FILE__, __LINE__, "e4m3 0x%02x: got 0x%08x want 0x%08x", c, g4, w4);
    if (g5 != w5 && bad++ < 5) test_fail(__FILE__, __LINE__, "e5m2 0x%02x: got 0x%08x want 0x%08x", c, g5, w5);
    CHECK(f32bits(tg_cvt_e4m3_f32((uint8_t)c)) == w4);
    CHECK(f32bits(tg_cvt_e5m2_f32((uint8_t)c)) == w5);
  }
  free(want);
}

TEST(dtype_f16_decode_all_codes) {
  size_t n;
  float *want = test_read_file("goldens/dtype_f16_decode.bin", &n);
  if (!want) SKIP("goldens/dtype_f16_decode.bin missing (run tests/gen/gen_dtype.py)");
  CHECK_EQ_INT(n, 65536 * 4);
  int bad = 0;
  for (uint32_t c = 0; c < 65536 && n == 65536 * 4; c++) {
    uint32_t g = f32bits(tg_f16_to_f32((uint16_t)c)), w = f32bits(want[c]);
    if (g != w && bad++ < 5) test_fail(__FILE__, __LINE__, "f16 0x%04x: got 0x%08x want 0x%08x", c, g, w);
  }
  free(want);
}

TEST(dtype_bf16_decode_all_codes) {
  size_t n;
  unsigned char *raw = test_read_file("goldens/dtype_bf16_decode.bin", &n);
  if (!raw) SKIP("goldens/dtype_bf16_decode.bin missing (run tests/gen/gen_dtype.py)");
  CHECK_EQ_INT(n, 8 + 4096 * 4);
  if (n != 8 + 4096 * 4) { free(raw); return; }
  uint64_t want_hash, h = 0xCBF29CE484222325ull;
  memcpy(&want_hash, raw, 8);
  for (uint32_t c = 0; c < 65536; c++) {
    uint32_t g = f32bits(tg_bf16_to_f32((uint16_t)c));
    unsigned char b[4];
    memcpy(b, &g, 4);   /* little-endian host assumed, like the goldens */
    for (int k = 0; k < 4; k++) h = (h ^ b[k]) * 0x100000001B3ull;
    if (c % 16 == 0) {
      uint32_t w;
      memcpy(&w, raw + 8 + (c / 16) * 4, 4);
      CHECK_MSG(g == w, "bf16 0x%04x: got 0x%08x want 0x%08x", c, g, w);
    }
  }
  CHECK_MSG(h == want_hash, "bf16 decode hash 0x%016llx, want 0x%016llx",
            (unsigned long long)h, (unsigned long long)want_hash);
  free(raw);
}

/* ---------------------------------------------------------------- encode */

typedef struct {
  size_t n;
  unsigned char *raw;
  const unsigned char *x;      /* float32 or float64 inputs */
  const uint16_t *f16, *bf16;
  const uint8_t *e4, *e5;
} enc_golden;

static bool load_enc(const char *path, size_t xsize, enc_golden *g) {
  size_t n;
  g->raw = test_read_file(path, &n);
  if (!g->raw) return false;
  uint32_t cnt = 0;
  if (n >= 4) memcpy(&cnt, g->raw, 4);
  g->n = cnt;
  if (n != 4 + (size_t)cnt * (xsize + 2 + 2 + 1 + 1)) {
    test_fail(__FILE__, __LINE__, "%s: size %zu does not match n=%u", path, n, cnt);
    g->n = 0;
    return true;
  }
  g->x = g->raw + 4;
  g->f16 = (const uint16_t *)(g->x + cnt * xsize);   /* offsets stay 2-aligned: 4 + n*4|8 */
  g->bf16 = g->f16 + cnt;
  g->e4 = (const uint8_t *)(g->bf16 + cnt);
  g->e5 = g->e4 + cnt;
  return true;
}

#define CHECK_CODE(got, want, nanfn, signbit, what, xbits) do { \
  uint32_t g_ = (got), w_ = (want); \
  if (!same_code(g_, w_, nanfn, signbit) && bad++ < 8) \
    test_fail(__FILE__, __LINE__, "%s(0x%llx): got 0x%x want 0x%x", what, (unsigned long long)(xbits), g_, w_); \
} while (0)

TEST(dtype_encode_f32_goldens) {
  enc_golden g;
  if (!load_enc("goldens/dtype_f32_encode.bin", 4, &g)) SKIP("goldens/dtype_f32_encode.bin missing");
  CHECK(g.n > 1000);
  int bad = 0;
  for (size_t i = 0; i < g.n; i++) {
    float x;
    memcpy(&x, g.x + i * 4, 4);
    uint16_t f16, bf16;
    memcpy(&f16, &g.f16[i], 2);
    memcpy(&bf16, &g.bf16[i], 2);
    uint32_t xb = f32bits(x);
    CHECK_CODE(tg_f32_to_f16(x), f16, f16_nan, 0x8000, "f32_to_f16", xb);
    CHECK_CODE(tg_f32_to_bf16(x), bf16, bf16_nan, 0x8000, "f32_to_bf16", xb);
    CHECK_CODE(tg_f32_to_fp8e4m3(x), g.e4[i], e4m3_nan, 0x80, "f32_to_e4m3", xb);
    CHECK_CODE(tg_f32_to_fp8e5m2(x), g.e5[i], e5m2_nan, 0x80, "f32_to_e5m2", xb);
    /* the double entry points agree on float inputs */
    CHECK_CODE(tg_cvt_f64_f16(x), f16, f16_nan, 0x8000, "f64_f16", xb);
    CHECK_CODE(tg_cvt_f64_bf16(x), bf16, bf16_nan, 0x8000, "f64_bf16", xb);
    CHECK_CODE(tg_cvt_f64_e4m3(x), g.e4[i], e4m3_nan, 0x80, "f64_e4m3", xb);
    CHECK_CODE(tg_cvt_f64_e5m2(x), g.e5[i], e5m2_nan, 0x80, "f64_e5m2", xb);
  }
  free(g.raw);
}

TEST(dtype_encode_f64_goldens_round_once) {
  enc_golden g;
  if (!load_enc("goldens/dtype_f64_encode.bin", 8, &g)) SKIP("goldens/dtype_f64_encode.bin missing");
  CHECK(g.n > 1000);
  int bad = 0;
  for (size_t i = 0; i < g.n; i++) {
    double x;
    memcpy(&x, g.x + i * 8, 8);
    uint16_t f16, bf16;
    memcpy(&f16, &g.f16[i], 2);
    memcpy(&bf16, &g.bf16[i], 2);
    uint64_t xb;
    memcpy(&xb, &x, 8);
    CHECK_CODE(tg_cvt_f64_f16(x), f16, f16_nan, 0x8000, "f64_f16", xb);
    CHECK_CODE(tg_cvt_f64_bf16(x), bf16, bf16_nan, 0x8000, "f64_bf16", xb);
    CHECK_CODE(tg_cvt_f64_e4m3(x), g.e4[i], e4m3_nan, 0x80, "f64_e4m3", xb);
    CHECK_CODE(tg_cvt_f64_e5m2(x), g.e5[i], e5m2_nan, 0x80, "f64_e5m2", xb);
  }
  free(g.raw);
}

/* Every code of every small format survives decode -> encode unchanged. */
TEST(dtype_roundtrip_all_codes) {
  for (uint32_t c = 0; c < 65536; c++) {
    uint16_t h = (uint16_t)c;
    CHECK_MSG(same_code(tg_f32_to_f16(tg_f16_to_f32(h)), h, f16_nan, 0x8000), "f16 0x%04x", c);
    CHECK_MSG(same_code(tg_cvt_f64_f16(tg_f16_to_f32(h)), h, f16_nan, 0x8000), "f16 0x%04x", c);
    CHECK_MSG(same_code(tg_f32_to_bf16(tg_bf16_to_f32(h)), h, bf16_nan, 0x8000), "bf16 0x%04x", c);
    CHECK_MSG(same_code(tg_cvt_f64_bf16(tg_bf16_to_f32(h)), h, bf16_nan, 0x8000), "bf16 0x%04x", c);
    if (c < 256) {
      uint8_t v = (uint8_t)c;
      CHECK_MSG(same_code(tg_f32_to_fp8e4m3(tg_fp8e4m3_to_f32(v)), v, e4m3_nan, 0x80), "e4m3 0x%02x", c);
      CHECK_MSG(same_code(tg_f32_to_fp8e5m2(tg_fp8e5m2_to_f32(v)), v, e5m2_nan, 0x80), "e5m2 0x%02x", c);
    }
  }
}

/* The choices the goldens only check loosely (NaN codes) and the saturation rules. */
TEST(dtype_special_values) {
  float nan = bitsf32(0x7FC00000), nnan = bitsf32(0xFFC00000), inf = INFINITY;
  CHECK_EQ_INT(tg_f32_to_f16(nan), 0x7E00);
  CHECK_EQ_INT(tg_f32_to_f16(nnan), 0xFE00);
  CHECK(f16_nan(tg_f32_to_f16(bitsf32(0x7F800001))));     /* signaling NaN stays NaN ... */
  CHECK(tg_f32_to_f16(bitsf32(0x7F800001)) & 0x200);       /* ... and is quiet */
  CHECK_EQ_INT(tg_f32_to_bf16(nan), 0x7FC0);
  CHECK_EQ_INT(tg_f32_to_bf16(nnan), 0xFFC0);
  CHECK_EQ_INT(tg_f32_to_bf16(bitsf32(0x7F800001)), 0x7FC0);
  CHECK_EQ_INT(tg_cvt_f64_bf16(bitsf64(0x7FF0000000000001ull)), 0x7FC0);
  CHECK_EQ_INT(tg_f32_to_fp8e4m3(nan), 0x7F);
  CHECK_EQ_INT(tg_f32_to_fp8e4m3(nnan), 0xFF);
  CHECK_EQ_INT(tg_f32_to_fp8e5m2(nan), 0x7E);
  CHECK_EQ_INT(tg_f32_to_fp8e5m2(nnan), 0xFE);
  /* inf */
  CHECK_EQ_INT(tg_f32_to_f16(inf), 0x7C00);
  CHECK_EQ_INT(tg_f32_to_f16(-inf), 0xFC00);
  CHECK_EQ_INT(tg_f32_to_bf16(-inf), 0xFF80);
  CHECK_EQ_INT(tg_f32_to_fp8e4m3(inf), 0x7E);      /* saturates: e4m3fn has no inf */
  CHECK_EQ_INT(tg_f32_to_fp8e4m3(-inf), 0xFE);
  CHECK_EQ_INT(tg_f32_to_fp8e5m2(inf), 0x7C);      /* kept */
  CHECK_EQ_INT(tg_f32_to_fp8e5m2(-inf), 0xFC);
  /* overflow */
  CHECK_EQ_INT(tg_f32_to_f16(65519.0f), 0x7BFF);
  CHECK_EQ_INT(tg_f32_to_f16(65520.0f), 0x7C00);
  CHECK_EQ_INT(tg_cvt_f64_f16(65519.99999), 0x7BFF);
  CHECK_EQ_INT(tg_cvt_f64_f16(1e300), 0x7C00);
  CHECK_EQ_INT(tg_f32_to_bf16(3.4e38f), 0x7F80);
  CHECK_EQ_INT(tg_f32_to_fp8e4m3(464.0f), 0x7E);   /* tie, to even (448) */
  CHECK_EQ_INT(tg_f32_to_fp8e4m3(465.0f), 0x7E);   /* saturates */
  CHECK_EQ_INT(tg_f32_to_fp8e4m3(-1e30f), 0xFE);
  CHECK_EQ_INT(tg_f32_to_fp8e5m2(61439.0f), 0x7B);
  CHECK_EQ_INT(tg_f32_to_fp8e5m2(61440.0f), 0x7B); /* saturates */
  CHECK_EQ_INT(tg_f32_to_fp8e5m2(-1e30f), 0xFB);
  CHECK_EQ_INT(tg_cvt_f64_e5m2(1e300), 0x7B);
  /* zeros, signed; underflow */
  CHECK_EQ_INT(tg_f32_to_f16(-0.0f), 0x8000);
  CHECK_EQ_INT(tg_f32_to_bf16(-0.0f), 0x8000);
  CHECK_EQ_INT(tg_f32_to_fp8e4m3(-0.0f), 0x80);
  CHECK_EQ_INT(tg_f32_to_fp8e5m2(-0.0f), 0x80);
  CHECK_EQ_INT(tg_cvt_f64_f16(bitsf64(1)), 0);             /* smallest double subnormal */
  CHECK_EQ_INT(tg_cvt_f64_e4m3(-1e-300), 0x80);
  CHECK_EQ_INT(tg_f32_to_f16(0x1p-25f), 0x0000);           /* half the smallest subnormal: tie to 0 */
  CHECK_EQ_INT(tg_cvt_f64_f16(0x1p-25 * (1 + 0x1p-40)), 0x0001);
  CHECK_EQ_INT(tg_f32_to_fp8e4m3(0x1p-10f), 0x00);
  CHECK_EQ_INT(tg_f32_to_fp8e4m3(0x1.8p-10f), 0x01);
  CHECK_EQ_INT(tg_f32_to_fp8e5m2(0x1.8p-17f), 0x01);
  /* rounding once from double: 1 + 2^-8 + 2^-40 is above the bf16 tie, but
   * rounding it to float first would land on the tie and go down to 1.0 */
  CHECK_EQ_INT(tg_cvt_f64_bf16(1 + 0x1p-8 + 0x1p-40), 0x3F81);
  CHECK_EQ_INT(tg_cvt_f64_f16(1 + 0x1p-11 + 0x1p-40), 0x3C01);
  CHECK_EQ_INT(tg_cvt_f64_e4m3(1 + 0x1p-4 + 0x1p-40), 0x39);
  CHECK_EQ_INT(tg_cvt_f64_e5m2(1 + 0x1p-3 + 0x1p-40), 0x3D);
  /* decode of specials */
  CHECK(isnan(tg_fp8e4m3_to_f32(0x7F)) && isnan(tg_fp8e4m3_to_f32(0xFF)) && signbit(tg_fp8e4m3_to_f32(0xFF)));
  CHECK(tg_fp8e4m3_to_f32(0x7E) == 448.0f && tg_fp8e4m3_to_f32(0x01) == 0x1p-9f);
  CHECK(tg_fp8e5m2_to_f32(0x7C) == INFINITY && tg_fp8e5m2_to_f32(0xFC) == -INFINITY);
  CHECK(tg_fp8e5m2_to_f32(0x7B) == 57344.0f && isnan(tg_fp8e5m2_to_f32(0x7D)));
  CHECK(tg_f16_to_f32(0x0001) == 0x1p-24f && tg_f16_to_f32(0x7BFF) == 65504.0f);
  CHECK(signbit(tg_f16_to_f32(0x8000)) && tg_f16_to_f32(0x8000) == 0);
}

/* ---------------------------------------------------------------- tables */

TEST(dtype_promote_table) {
  size_t n;
  unsigned char *want = test_read_file("goldens/dtype_promote.bin", &n);
  if (!want) SKIP("goldens/dtype_promote.bin missing (run tests/gen/gen_dtype.py)");
  CHECK_EQ_INT(n, 225);
  for (int a = 0; a < TG_DTYPE_COUNT && n == 225; a++)
    for (int b = 0; b < TG_DTYPE_COUNT; b++) {
      tg_dtype got = tg_dtype_promote((tg_dtype)a, (tg_dtype)b);
      CHECK_MSG((int)got == want[a * 15 + b], "promote(%s, %s) = %s, want %s", tg_dtype_name((tg_dtype)a),
                tg_dtype_name((tg_dtype)b), tg_dtype_name(got), tg_dtype_name((tg_dtype)want[a * 15 + b]));
      CHECK(tg_dtype_promote((tg_dtype)b, (tg_dtype)a) == got);
    }
  free(want);
  CHECK_EQ_INT(tg_dtype_promote(TG_I8, TG_U8), TG_I16);
  CHECK_EQ_INT(tg_dtype_promote(TG_I32, TG_U32), TG_I64);
  CHECK_EQ_INT(tg_dtype_promote(TG_I64, TG_U64), TG_F32);   /* tinygrad: weakfloat -> default float */
  CHECK_EQ_INT(tg_dtype_promote(TG_I8, TG_U64), TG_F32);
  CHECK_EQ_INT(tg_dtype_promote(TG_U32, TG_U64), TG_U64);
  CHECK_EQ_INT(tg_dtype_promote(TG_I64, TG_FP8E5M2), TG_FP8E5M2);
  CHECK_EQ_INT(tg_dtype_promote(TG_FP8E4M3, TG_FP8E5M2), TG_F16);
  CHECK_EQ_INT(tg_dtype_promote(TG_F16, TG_BF16), TG_F32);
  CHECK_EQ_INT(tg_dtype_promote(TG_BOOL, TG_BOOL), TG_BOOL);
  CHECK_EQ_INT(tg_dtype_promote(TG_BOOL, TG_F64), TG_F64);
}

TEST(dtype_can_safe_cast_table) {
  size_t n;
  unsigned char *want = test_read_file("goldens/dtype_safe_cast.bin", &n);
  if (!want) SKIP("goldens/dtype_safe_cast.bin missing (run tests/gen/gen_dtype.py)");
  CHECK_EQ_INT(n, 450);
  for (int a = 0; a < TG_DTYPE_COUNT && n == 450; a++)
    for (int b = 0; b < TG_DTYPE_COUNT; b++) {
      bool got = tg_dtype_can_safe_cast((tg_dtype)a, (tg_dtype)b);
      const char *an = tg_dtype_name((tg_dtype)a), *bn = tg_dtype_name((tg_dtype)b);
      CHECK_MSG(got == want[a * 15 + b], "can_safe_cast(%s, %s) = %d", an, bn, got);
      unsigned char np = want[225 + a * 15 + b];
      if (np == 255) continue;
      /* numpy calls int64/uint64 -> float64 safe; float64 has 53 bits */
      bool exception = (a == TG_I64 || a == TG_U64) && b == TG_F64;
      CHECK_MSG(exception ? (np == 1 && !got) : got == np, "can_safe_cast(%s, %s) = %d, numpy %d", an, bn, got, np);
    }
  free(want);
  CHECK(tg_dtype_can_safe_cast(TG_FP8E4M3, TG_BF16) && tg_dtype_can_safe_cast(TG_FP8E5M2, TG_F16));
  CHECK(tg_dtype_can_safe_cast(TG_U8, TG_BF16) && !tg_dtype_can_safe_cast(TG_I16, TG_BF16));
  CHECK(!tg_dtype_can_safe_cast(TG_FP8E4M3, TG_FP8E5M2) && !tg_dtype_can_safe_cast(TG_FP8E5M2, TG_FP8E4M3));
  CHECK(!tg_dtype_can_safe_cast(TG_I8, TG_FP8E4M3) && tg_dtype_can_safe_cast(TG_BOOL, TG_FP8E4M3));
  CHECK(!tg_dtype_can_safe_cast(TG_F16, TG_BF16) && !tg_dtype_can_safe_cast(TG_BF16, TG_F16));
  CHECK(!tg_dtype_can_safe_cast(TG_I8, TG_BOOL) && !tg_dtype_can_safe_cast(TG_F32, TG_I64));
}

/* ---------------------------------------------------------------- properties and names */

TEST(dtype_properties_and_names) {
  static const char *np_names[] = { "bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64",
    "uint64", "fp8e4m3", "fp8e5m2", "float16", "bfloat16", "float32", "float64" };
  static const int sizes[] = { 1, 1, 1, 2, 2, 4, 4, 8, 8, 1, 1, 2, 2, 4, 8 };
  static const char *c_names[] = { "bool", "char", "uchar", "short", "ushort", "int", "uint", "long", "ulong",
    "fp8e4m3", "fp8e5m2", "half", "bfloat16", "float", "double", "void" };
  char buf[64];
  for (int d = 0; d < TG_DTYPE_COUNT; d++) {
    CHECK(strcmp(tg_dtype_name((tg_dtype)d), np_names[d]) == 0);
    CHECK_EQ_INT(tg_dtype_size((tg_dtype)d), sizes[d]);
    CHECK_EQ_INT(dt_itemsize(dt_scalar(d)), sizes[d]);
    CHECK_EQ_INT(dt_itemsize(dt_vec(dt_scalar(d), 4)), sizes[d]);   /* itemsize is per scalar */
    bool fl = d >= TG_FP8E4M3, in = d >= TG_I8 && d <= TG_U64;
    bool un = d == TG_U8 || d == TG_U16 || d == TG_U32 || d == TG_U64;
    CHECK(tg_dtype_is_float((tg_dtype)d) == fl && dt_is_float(dt_scalar(d)) == fl);
    CHECK(tg_dtype_is_int((tg_dtype)d) == in && dt_is_int(dt_scalar(d)) == in);
    CHECK(tg_dtype_is_unsigned((tg_dtype)d) == un && dt_is_unsigned(dt_scalar(d)) == un);
    CHECK(dt_is_float(dt_ptr(dt_vec(dt_scalar(d), 2), ADDR_GLOBAL)) == fl);
  }
  for (int d = 0; d <= TG_VOID; d++) CHECK(strcmp(dt_str(dt_scalar(d), buf, sizeof buf), c_names[d]) == 0);
  CHECK(strcmp(tg_dtype_name((tg_dtype)TG_VOID), "void") == 0);
  CHECK_EQ_INT(dt_itemsize(DT_VOID), 0);
  CHECK(!dt_is_float(DT_VOID) && !dt_is_int(DT_VOID) && !dt_is_int(DT_BOOL));
  CHECK(strcmp(dt_str(dt_vec(DT_F32, 4), buf, sizeof buf), "float.vec(4)") == 0);
  CHECK(strcmp(dt_str(dt_ptr(DT_F32, ADDR_GLOBAL), buf, sizeof buf), "float*") == 0);
  CHECK(strcmp(dt_str(dt_ptr(dt_scalar(TG_F16), ADDR_LOCAL), buf, sizeof buf), "half* local") == 0);
  CHECK(strcmp(dt_str(dt_ptr(DT_I32, ADDR_REG), buf, sizeof buf), "int* reg") == 0);
  CHECK(strcmp(dt_str(dt_ptr(dt_vec(dt_scalar(TG_U8), 16), ADDR_GLOBAL), buf, sizeof buf), "uchar.vec(16)*") == 0);
  /* a short buffer truncates safely */
  char small[6];
  CHECK(strcmp(dt_str(dt_vec(DT_F32, 4), small, sizeof small), "float") == 0);
  /* limits */
  CHECK(dt_min(DT_BOOL) == 0 && dt_max(DT_BOOL) == 1);
  CHECK(dt_min(dt_scalar(TG_I8)) == -128 && dt_max(dt_scalar(TG_I8)) == 127);
  CHECK(dt_min(dt_scalar(TG_U16)) == 0 && dt_max(dt_scalar(TG_U16)) == 65535);
  CHECK(dt_min(DT_I32) == -2147483648.0 && dt_max(DT_U32) == 4294967295.0);
  CHECK(dt_min(DT_I64) == -0x1p63 && dt_max(DT_U64) == 0x1p64);
  CHECK(dt_max(dt_scalar(TG_F16)) == 65504 && dt_min(dt_scalar(TG_F16)) == -65504);
  CHECK(dt_max(dt_scalar(TG_BF16)) == (double)tg_bf16_to_f32(0x7F7F));
  CHECK(dt_max(dt_scalar(TG_FP8E4M3)) == 448 && dt_max(dt_scalar(TG_FP8E5M2)) == 57344);
  CHECK(dt_max(DT_F32) == (double)bitsf32(0x7F7FFFFF) && dt_min(DT_F64) == -bitsf64(0x7FEFFFFFFFFFFFFFull));
}

/* ---------------------------------------------------------------- value casts */

TEST(dtype_cast_value) {
  /* ints wrap like a C cast through int64, truncating toward zero */
  CHECK(dt_cast_value(300, dt_scalar(TG_U8)) == 44);
  CHECK(dt_cast_value(-1, dt_scalar(TG_U8)) == 255);
  CHECK(dt_cast_value(200, dt_scalar(TG_I8)) == -56);
  CHECK(dt_cast_value(-129, dt_scalar(TG_I8)) == 127);
  CHECK(dt_cast_value(2.9, dt_scalar(TG_I8)) == 2 && dt_cast_value(-2.9, dt_scalar(TG_I8)) == -2);
  CHECK(dt_cast_value(70000, dt_scalar(TG_I16)) == 4464);
  CHECK(dt_cast_value(-1, dt_scalar(TG_U16)) == 65535);
  CHECK(dt_cast_value(0x1p31, DT_I32) == -0x1p31);
  CHECK(dt_cast_value(-1, DT_U32) == 4294967295.0);
  CHECK(dt_cast_value(0x1p32 + 5, DT_U32) == 5);
  CHECK(dt_cast_value(-3.5, DT_I64) == -3);
  CHECK(dt_cast_value(0x1p63, DT_I64) == -0x1p63);           /* wraps */
  CHECK(dt_cast_value(0x1p63, DT_U64) == 0x1p63);
  CHECK(dt_cast_value(0x1p64 + 0x1p12, DT_U64) == 0x1p12);  /* beyond 64 bits: modulo 2^64 */
  CHECK(dt_cast_value(-0x1p12, DT_U64) == 0x1p64 - 0x1p12);
  CHECK(dt_cast_value(NAN, DT_I32) == 0 && dt_cast_value(INFINITY, dt_scalar(TG_U8)) == 0);
  CHECK(dt_cast_value(1e300, DT_I64) == 0);                  /* 1e300 is a multiple of 2^64 */
  /* bool */
  CHECK(dt_cast_value(0.5, DT_BOOL) == 1 && dt_cast_value(-0.0, DT_BOOL) == 0 && dt_cast_value(NAN, DT_BOOL) == 1);
  /* floats round to nearest even */
  CHECK(dt_cast_value(0.1, DT_F32) == (double)0.1f);
  CHECK(dt_cast_value(1e39, DT_F32) == INFINITY);
  CHECK(dt_cast_value(0.1, DT_F64) == 0.1);
  CHECK(dt_cast_value(1 + 0x1p-11, dt_scalar(TG_F16)) == 1);
  CHECK(dt_cast_value(1 + 0x1p-11 + 0x1p-40, dt_scalar(TG_F16)) == 1 + 0x1p-10);
  CHECK(dt_cast_value(70000, dt_scalar(TG_F16)) == INFINITY);
  CHECK(dt_cast_value(1 + 0x1p-8 + 0x1p-40, dt_scalar(TG_BF16)) == 1 + 0x1p-7);
  CHECK(dt_cast_value(1000, dt_scalar(TG_FP8E4M3)) == 448);
  CHECK(dt_cast_value(-1e6, dt_scalar(TG_FP8E5M2)) == -57344);
  CHECK(dt_cast_value(-INFINITY, dt_scalar(TG_FP8E5M2)) == -INFINITY);
  CHECK(dt_cast_value(0.3, dt_scalar(TG_FP8E4M3)) == 0.3125);
  CHECK(isnan(dt_cast_value(NAN, dt_scalar(TG_F16))) && isnan(dt_cast_value(NAN, dt_scalar(TG_FP8E4M3))));
  /* the vector/pointer parts are ignored */
  CHECK(dt_cast_value(300, dt_vec(dt_scalar(TG_U8), 4)) == 44);
}

TEST(dtype_store_load_scalar) {
  static const double vals[] = { 0, -0.0, 1, -1, 2.5, -2.5, 100.7, 300, -300, 65504, 70000, 1e10, -1e10,
    0x1p63, 0x1p64 + 0x1p12, 1e-7, 448, 1000, 0.3, INFINITY, -INFINITY, NAN };
  for (int d = 0; d < TG_DTYPE_COUNT; d++) {
    for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++) {
      unsigned char buf[16];
      memset(buf, 0xAB, sizeof buf);
      dt_store_scalar(buf + 1, (tg_dtype)d, vals[i]);    /* unaligned on purpose */
      int sz = tg_dtype_size((tg_dtype)d);
      CHECK(buf[0] == 0xAB && buf[1 + sz] == 0xAB);      /* writes exactly one element */
      double got = dt_load_scalar(buf + 1, (tg_dtype)d), want = dt_cast_value(vals[i], dt_scalar(d));
      CHECK_MSG(got == want || (isnan(got) && isnan(want)), "%s: store/load %g gave %.17g, cast gives %.17g",
                tg_dtype_name((tg_dtype)d), vals[i], got, want);
      CHECK_MSG(signbit(got) == signbit(want) || isnan(want), "%s: sign of %g", tg_dtype_name((tg_dtype)d), vals[i]);
    }
  }
  /* the stored bits are the ones the conversions give */
  uint16_t h;
  dt_store_scalar(&h, TG_F16, 1.0 / 3);
  CHECK_EQ_INT(h, tg_f32_to_f16(1.0f / 3));
  dt_store_scalar(&h, TG_BF16, -2.0);
  CHECK_EQ_INT(h, 0xC000);
  uint8_t b;
  dt_store_scalar(&b, TG_FP8E4M3, -1e9);
  CHECK_EQ_INT(b, 0xFE);
  dt_store_scalar(&b, TG_BOOL, -3);
  CHECK_EQ_INT(b, 1);
  uint64_t u;
  dt_store_scalar(&u, TG_U64, 0x1p64 - 0x1p11);
  CHECK(u == 0xFFFFFFFFFFFFF800ull);
  int64_t s;
  dt_store_scalar(&s, TG_I64, -0x1p62);
  CHECK(s == -(INT64_C(1) << 62));
  b = 0x80;
  CHECK(dt_load_scalar(&b, TG_I8) == -128 && dt_load_scalar(&b, TG_U8) == 128 && dt_load_scalar(&b, TG_BOOL) == 1);
}
