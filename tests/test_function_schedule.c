/* test_function_schedule.c: a stack of tg_function calls kept as a
 * program. tg_schedule_new keeps each call one item up to its linear (the
 * body's kernels over the call's buffer table, schedule_create_calls);
 * tg_schedule_list makes the flat schedule. Both must list the same
 * kernels with the same buffers, each call's kernels must read that
 * call's weights and have intermediates of their own, and a run must give
 * what naive C loops give. */
#include "test.h"

enum { SB = 3, SD = 6, SL = 4 };

/* one layer: softmax(h @ w + b) + h (several kernels: the matmul, the
 * softmax's reductions) */
static int slayer(void *ctx, tg_tensor *const *in, int nin, tg_tensor **out, int nout) {
  (void)ctx; (void)nin; (void)nout;
  out[0] = tg_add(tg_softmax(tg_add(tg_matmul(in[0], in[1]), in[2]), -1), in[0]);
  return out[0] ? 0 : -1;
}

static float sw[SL][SD * SD], sbias[SL][SD], sx[SB * SD];

static void ref_stack(float *h) {
  memcpy(h, sx, sizeof sx);
  for (int l = 0; l < SL; l++) {
    float nh[SB * SD];
    for (int i = 0; i < SB; i++) {
      double z[SD], mx = -1e30, sum = 0;
      for (int j = 0; j < SD; j++) {
        z[j] = sbias[l][j];
        for (int k = 0; k < SD; k++) z[j] += (double)h[i * SD + k] * sw[l][k * SD + j];
        if (z[j] > mx) mx = z[j];
      }
      for (int j = 0; j < SD; j++) sum += exp(z[j] - mx);
      for (int j = 0; j < SD; j++) nh[i * SD + j] = (float)(exp(z[j] - mx) / sum + h[i * SD + j]);
    }
    memcpy(h, nh, sizeof nh);
  }
}

TEST(function_schedule_keeps_calls) {
  for (int l = 0; l < SL; l++) {
    for (int i = 0; i < SD * SD; i++) sw[l][i] = (float)(((i * 5 + l * 3) % 13) - 6) / 10.0f;
    for (int i = 0; i < SD; i++) sbias[l][i] = (float)(((i + 2 * l) % 5) - 2) / 8.0f;
  }
  for (int i = 0; i < SB * SD; i++) sx[i] = (float)((i * 7) % 11 - 5) / 5.0f;
  /* scheduled anew both times (a schedule found by its structure is flat) */
  bool had = getenv("TG_NO_SCHEDULE_CACHE");
  setenv("TG_NO_SCHEDULE_CACHE", "1", 1);
  tg_scope_begin();
  tg_function *f = tg_function_new("slayer", slayer, NULL, 3, 1);
  tg_tensor *w[SL], *h = tg_from_data(sx, TG_SHAPE(SB, SD), TG_F32);
  CHECK(tg_realize(h) == 0);
  for (int l = 0; l < SL; l++) {
    w[l] = tg_from_data(sw[l], TG_SHAPE(SD, SD), TG_F32);
    tg_tensor *b = tg_from_data(sbias[l], TG_SHAPE(SD), TG_F32), *o = NULL;
    CHECK(tg_realize(w[l]) == 0 && tg_realize(b) == 0);
    tg_tensor *in[3] = { h, w[l], b };
    CHECK_OK(tg_function_call(f, in, &o) == 0);
    h = o;
  }
  enum { MAXE = 64 };
  tg_schedule_entry want[MAXE], got[MAXE];
  int n = tg_schedule_list(&h, 1, want, MAXE);
  CHECK_MSG(n >= 2 * SL && n <= MAXE, "%d kernels for %d calls", n, SL);
  tg_schedule *s = tg_schedule_new(&h, 1);
  CHECK_OK(s);
  if (s && n >= 2 * SL && n <= MAXE) {
    CHECK_EQ_INT(tg_schedule_count(s), n);
    for (int i = 0; i < n; i++) {
      CHECK(tg_schedule_call(s, i, &got[i]) == 0);
      CHECK_MSG(!strcmp(got[i].name, want[i].name), "kernel %d: %s vs %s", i, got[i].name, want[i].name);
      CHECK_EQ_INT(got[i].nbufs, want[i].nbufs);
      CHECK_EQ_INT(got[i].bytes, want[i].bytes);
    }
    /* the same buffers in the same places: two slots hold one buffer in
     * one listing exactly when they do in the other (a weight read by its
     * call only, an intermediate of one call only, a call's output read by
     * the next) */
    int diff = 0;
    for (int i = 0; i < n; i++)
      for (int j = 0; j < want[i].nbufs && j < 8; j++)
        for (int i2 = 0; i2 < n; i2++)
          for (int j2 = 0; j2 < want[i2].nbufs && j2 < 8; j2++)
            diff += (want[i].buf_ids[j] == want[i2].buf_ids[j2]) != (got[i].buf_ids[j] == got[i2].buf_ids[j2]);
    CHECK_EQ_INT(diff, 0);
    /* and the calls write buffers of their own: call l's kernels (n / SL
     * each, in call order) write none that another call's write */
    int per = n / SL;
    CHECK_EQ_INT(per * SL, n);
    for (int i = 0; i < n; i++)
      for (int i2 = 0; i2 < n; i2++)
        if (i / per != i2 / per) CHECK_MSG(got[i].buf_ids[0] != got[i2].buf_ids[0], "kernels %d and %d of two calls write one buffer", i, i2);
    CHECK(tg_schedule_run(s, NULL, NULL, 0) == 0);
    float gotv[SB * SD], ref[SB * SD];
    CHECK(tg_data(h, gotv, sizeof gotv) == 0);
    ref_stack(ref);
    for (int i = 0; i < SB * SD; i++) CHECK_NEAR(gotv[i], ref[i], 1e-4);
    tg_schedule_free(s);
  }
  tg_function_free(f);
  tg_scope_end();
  if (!had) unsetenv("TG_NO_SCHEDULE_CACHE");
}
