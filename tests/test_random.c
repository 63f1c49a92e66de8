/* test_random.c: tg_rand against an independent Python threefry (goldens),
 * reproducibility by seed, and tg_randn's moments. */
#include <stdint.h>
#include "test.h"

TEST(random_rand_matches_threefry_goldens) {
  size_t n = 0;
  unsigned char *g = test_read_file("goldens/random_rand.bin", &n);
  if (!g) SKIP("goldens/random_rand.bin missing (run tests/gen/gen_random.py)");
  uint64_t seed, cnt;
  memcpy(&seed, g, 8); memcpy(&cnt, g + 8, 8);
  const float *want = (const float *)(g + 16);
  CHECK(n == 16 + 2 * cnt * 4);
  float *got = malloc(cnt * 4);
  tg_manual_seed(seed);
  for (int draw = 0; draw < 2; draw++) {
    tg_tensor *r = tg_rand(TG_SHAPE((int64_t)cnt), TG_F32);
    CHECK_OK(r);
    CHECK(tg_data(r, got, cnt * 4) == 0);
    test_close_f32(got, want + draw * cnt, cnt, 0, 0, "rand");
  }
  free(got);
  free(g);
}

TEST(random_same_seed_same_numbers) {
  float a[64], b[64];
  tg_manual_seed(7);
  CHECK(tg_data(tg_rand(TG_SHAPE(8, 8), TG_F32), a, sizeof a) == 0);
  tg_manual_seed(7);
  CHECK(tg_data(tg_rand(TG_SHAPE(8, 8), TG_F32), b, sizeof b) == 0);
  CHECK(memcmp(a, b, sizeof a) == 0);
  CHECK(tg_data(tg_rand(TG_SHAPE(8, 8), TG_F32), b, sizeof b) == 0);
  CHECK(memcmp(a, b, sizeof a) != 0);   /* the counter moved on */
  for (int i = 0; i < 64; i++) CHECK(a[i] >= 0 && a[i] < 1);
}

TEST(random_randn_moments) {
  enum { N = 1 << 16 };
  float *x = malloc(N * sizeof(float));
  tg_manual_seed(1234);
  CHECK(tg_data(tg_randn(TG_SHAPE(N), TG_F32), x, N * sizeof(float)) == 0);
  double s = 0, s2 = 0;
  for (int i = 0; i < N; i++) { s += x[i]; s2 += (double)x[i] * x[i]; CHECK(isfinite(x[i])); }
  double mean = s / N, var = s2 / N - mean * mean;
  /* 5 standard errors: 1/sqrt(N) = 0.004 for the mean, ~sqrt(2/N) for var */
  CHECK_MSG(fabs(mean) < 0.02, "mean %g", mean);
  CHECK_MSG(fabs(var - 1) < 0.03, "var %g", var);
  free(x);
}

TEST(random_rejects_int_dtype) {
  CHECK(tg_rand(TG_SHAPE(3), TG_I32) == NULL);
  CHECK(strstr(tg_error(), "float") != NULL);
}
