/* test_vector_lut16.c: byte loads from a table of at most 16 entries, at
 * indices that are data known to lie below 16, run as one byte shuffle per
 * vector (OP_LUT16, the C renderer's tg_lut16_vK): the row-packed IQ4_NL
 * and IQ4_XS matvecs look their levels up so. Each is checked to be
 * vectorized (the helper in the kernel's source) and against plain C
 * table lookups; where the table has more than 16 entries the lanes fall
 * back to scalar loads, still exact. */
#include "test.h"

enum { NV = 1 << 16, C = NV / 4 };

/* table[idx[r, j] & mask] for seeded random bytes idx (4, C), by tg and by
 * C: a column sum of the 4 entries (below 128) times 256^r, so every entry
 * is one byte of the sum (a byte elementwise kernel gets no lanes; a
 * reduction over rows does) */
static void check_lookup(int entries, int mask, int want_lut) {
  tg_scope_begin();
  uint8_t tab[32], *idx = malloc(NV);
  int32_t *got = malloc(sizeof(int32_t) * C);
  const int32_t shift[4] = { 1, 1 << 8, 1 << 16, 1 << 24 };
  for (int i = 0; i < entries; i++) tab[i] = (uint8_t)((i * 37 + 11) & 127);
  uint64_t s = 0x9e3779b97f4a7c15ULL + (uint64_t)entries;
  for (int i = 0; i < NV; i++) s = s * 6364136223846793005ULL + 1442695040888963407ULL, idx[i] = (uint8_t)(s >> 56);
  tg_tensor *I = tg_from_data(idx, TG_SHAPE(4, C), TG_U8), *T = tg_from_data(tab, TG_SHAPE(entries), TG_U8);
  CHECK_OK(I && T && tg_realize(I) == 0 && tg_realize(T) == 0);
  tg_tensor *v = tg_cast(tg_take(T, tg_bitwise_and(I, tg_scalar(mask, TG_U8))), TG_I32);
  tg_tensor *y = tg_sum(tg_mul(v, tg_from_data(shift, TG_SHAPE(4, 1), TG_I32)), TG_AXES(0), false);
  int nk = 0;
  CHECK_EQ_INT(test_kernels_with("tg_lut16_v", y, &nk), want_lut);
  CHECK_OK(tg_data(y, got, sizeof(int32_t) * C) == 0);
  int bad = 0;
  for (int j = 0; j < C; j++) {
    int32_t want = 0;
    for (int r = 0; r < 4; r++) want += tab[idx[r * C + j] & mask] * shift[r];
    if (got[j] != want && bad++ < 3) CHECK_MSG(0, "entries %d: column %d = %#x, want %#x", entries, j, (unsigned)got[j], (unsigned)want);
  }
  CHECK_EQ_INT(bad, 0);
  free(idx), free(got);
  tg_scope_end();
}

TEST(vector_lut16_exact) {
  check_lookup(16, 15, 1);
  check_lookup(8, 7, 1);    /* a shorter table: entries 0..7 only are read */
  check_lookup(32, 31, 0);  /* too many entries: scalar loads */
}

/* The matvec kernel of row-packed IQ4_NL and IQ4_XS (tg_quant_pack_rows)
 * looks its levels up with tg_lut16 (the dot product itself is checked
 * against ggml in test_quant_matmul*.c). */
TEST(vector_lut16_in_iq4_matvec) {
  static const struct { int t, bpb, block; } cases[] = { { TG_GGML_IQ4_NL, 18, 32 }, { TG_GGML_IQ4_XS, 136, 256 } };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    const int64_t n = 64, k = 1024;
    int64_t nbytes;
    uint8_t *w = test_random_blocks((uint64_t)cases[c].t + 3, n * k / cases[c].block, cases[c].bpb, 0, &nbytes);
    tg_scope_begin();
    tg_tensor *raw = tg_from_data(w, TG_SHAPE(nbytes), TG_U8), *sc = NULL, *qs = NULL;
    CHECK_OK(tg_quant_pack_rows(raw, cases[c].t, TG_SHAPE(n, k), &sc, &qs) == 0 && tg_realize(sc) == 0 && tg_realize(qs) == 0);
    tg_tensor *y = tg_quant_matmul_rows(tg_ones(TG_SHAPE(1, k), TG_F32), sc, qs, cases[c].t, TG_SHAPE(n, k));
    int nk = 0;
    CHECK_MSG(test_kernels_with("tg_lut16_v", y, &nk) >= 1, "type %d: no tg_lut16 in its %d kernels", cases[c].t, nk);
    tg_scope_end();
    free(w);
  }
}
