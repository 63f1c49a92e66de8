/* test_schedule_program.c: a schedule kept as a program (tg_schedule_new /
 * tg_schedule_run, the LINEAR of calls): run again with other variable
 * values and new input contents, checked against C loops; state updated in
 * place per run; what it lists against tg_schedule_list and the JIT's
 * capture; the errors. */
#include "test.h"
#include "tg_dist.h"

enum { R = 4, C = 8 };

/* y[i] = 2 * sum_{j<n} x[i][j], z = x * 3 */
static void ref_prefix(const float *x, int n, float *y, float *z) {
  for (int i = 0; i < R; i++) {
    float s = 0;
    for (int j = 0; j < n; j++) s += x[i * C + j];
    y[i] = 2 * s;
  }
  for (int i = 0; i < R * C; i++) z[i] = x[i] * 3;
}

TEST(schedule_program_runs_with_variable_values) {
  float x[R * C], y[R], z[R * C], gy[R], gz[R * C];
  for (int i = 0; i < R * C; i++) x[i] = (float)((i * 7) % 11) - 5;
  CHECK_OK(tg_variable("sp_n", 1, C));
  CHECK(tg_bind("sp_n", 5) == 0);
  tg_tensor *xt = tg_from_data(x, TG_SHAPE(R, C), TG_F32);
  tg_tensor *yt = tg_muls(tg_sum(tg_shrink_var(xt, 1, "sp_n"), TG_AXES(1), false), 2);
  tg_tensor *zt = tg_muls(xt, 3);
  tg_tensor *outs[2] = { yt, zt };
  tg_schedule *s = tg_schedule_new(outs, 2);
  CHECK_OK(s);
  if (!s) return;
  CHECK(tg_schedule_count(s) >= 1);
  const char *names[4];
  CHECK_EQ_INT(tg_schedule_vars(s, names, 4), 1);
  CHECK(!strcmp(names[0], "sp_n"));
  tg_counters c0 = tg_get_counters();
  const char *vn[1] = { "sp_n" };
  for (int n = 1; n <= C; n += 3) {
    int64_t v = n;
    CHECK_MSG(tg_schedule_run(s, vn, &v, 1) == 0, "n %d: %s", n, tg_error());
    ref_prefix(x, n, y, z);
    CHECK(tg_data(yt, gy, sizeof gy) == 0);
    CHECK(tg_data(zt, gz, sizeof gz) == 0);
    test_close_f32(gy, y, R, 1e-6, 1e-6, "prefix sum");
    test_close_f32(gz, z, R * C, 0, 0, "x*3");
  }
  tg_counters c1 = tg_get_counters();   /* the runs scheduled and compiled nothing */
  CHECK_EQ_INT(c1.schedules, c0.schedules);
  CHECK_EQ_INT(c1.kernels_compiled + c1.kernels_cached, c0.kernels_compiled + c0.kernels_cached);
  /* given values are for that run only: with none, the bound 5 */
  CHECK(tg_schedule_run(s, NULL, NULL, 0) == 0);
  ref_prefix(x, 5, y, z);
  CHECK(tg_data(yt, gy, sizeof gy) == 0);
  test_close_f32(gy, y, R, 1e-6, 1e-6, "bound value");
  /* new input contents are read by the next run */
  for (int i = 0; i < R * C; i++) x[i] = (float)(i % 5) - 1.5f;
  CHECK(tg_realize(tg_assign(xt, tg_from_data(x, TG_SHAPE(R, C), TG_F32))) == 0);
  int64_t v = 7;
  CHECK(tg_schedule_run(s, vn, &v, 1) == 0);
  ref_prefix(x, 7, y, z);
  CHECK(tg_data(yt, gy, sizeof gy) == 0);
  CHECK(tg_data(zt, gz, sizeof gz) == 0);
  test_close_f32(gy, y, R, 1e-6, 1e-6, "new input");
  test_close_f32(gz, z, R * C, 0, 0, "new input x*3");
  tg_schedule_free(s);
  /* the outputs outlive the schedule */
  CHECK(tg_data(yt, gy, sizeof gy) == 0);
  test_close_f32(gy, y, R, 1e-6, 1e-6, "after free");
}

TEST(schedule_program_updates_state_each_run) {
  float zero[3] = { 0 }, got[3];
  tg_tensor *acc = tg_from_data(zero, TG_SHAPE(3), TG_F32);
  float step[3] = { 1, -2, 0.5f };
  tg_tensor *st = tg_from_data(step, TG_SHAPE(3), TG_F32);
  tg_tensor *upd = tg_assign(acc, tg_add(acc, st));
  tg_schedule *s = tg_schedule_new(&upd, 1);
  CHECK_OK(s);
  if (!s) return;
  for (int r = 1; r <= 4; r++) {
    CHECK(tg_schedule_run(s, NULL, NULL, 0) == 0);
    CHECK(tg_data(acc, got, sizeof got) == 0);
    for (int i = 0; i < 3; i++) CHECK_NEAR(got[i], step[i] * r, 0);
  }
  tg_schedule_free(s);
}

/* tg_schedule_call lists what tg_schedule_list lists for the same graph */
TEST(schedule_program_lists_its_calls) {
  float a[64];
  for (int i = 0; i < 64; i++) a[i] = (float)(i % 9);
  tg_tensor *at = tg_from_data(a, TG_SHAPE(8, 8), TG_F32);
  tg_tensor *y = tg_softmax(tg_matmul(at, at), -1);
  tg_schedule_entry want[16], got;
  int n = tg_schedule_list(&y, 1, want, 16);
  CHECK(n >= 2);
  tg_schedule *s = tg_schedule_new(&y, 1);
  CHECK_OK(s);
  if (!s) return;
  CHECK_EQ_INT(tg_schedule_count(s), n);
  for (int i = 0; i < n && i < 16; i++) {
    CHECK(tg_schedule_call(s, i, &got) == 0);
    CHECK_MSG(!strcmp(got.name, want[i].name), "call %d: %s vs %s", i, got.name, want[i].name);
    CHECK_EQ_INT(got.nbufs, want[i].nbufs);
    CHECK_EQ_INT(got.bytes, want[i].bytes);
    CHECK(!got.copy);
  }
  CHECK_EQ_INT(tg_schedule_vars(s, NULL, 0), 0);
  CHECK_FAILS(tg_schedule_call(s, n, &got), "call", "of");
  CHECK_FAILS(tg_schedule_call(s, -1, &got), "call -1");
  tg_schedule_free(s);
}

static int step_affine(void *ctx, tg_tensor *const *in, int nin, tg_tensor **out, int nout) {
  (void)ctx; (void)nin; (void)nout;
  out[0] = tg_relu(tg_adds(tg_matmul(in[0], in[1]), 1));
  return out[0] ? 0 : -1;
}

/* the JIT replays the linear it captured: tg_jit_entries lists it */
TEST(schedule_program_jit_entries) {
  tg_jit *j = tg_jit_new(step_affine, NULL);
  tg_schedule_entry e[8];
  CHECK_EQ_INT(tg_jit_entries(j, e, 8), 0);
  float a[16], b[16];
  for (int i = 0; i < 16; i++) { a[i] = (float)(i % 5) - 2; b[i] = (float)(i % 3); }
  for (int call = 0; call < 3; call++) {
    tg_tensor *in[2] = { tg_from_data(a, TG_SHAPE(4, 4), TG_F32), tg_from_data(b, TG_SHAPE(4, 4), TG_F32) }, *out;
    CHECK(tg_jit_call(j, in, 2, &out, 1) == 0);
  }
  int n = tg_jit_entries(j, e, 8);
  CHECK_EQ_INT(n, tg_jit_stats(j).kernels);
  CHECK(n >= 1);
  tg_tensor *in[2] = { tg_from_data(a, TG_SHAPE(4, 4), TG_F32), tg_from_data(b, TG_SHAPE(4, 4), TG_F32) };
  tg_tensor *y = tg_relu(tg_adds(tg_matmul(in[0], in[1]), 1));
  tg_schedule_entry w[8];
  CHECK_EQ_INT(tg_schedule_list(&y, 1, w, 8), n);
  for (int i = 0; i < n && i < 8; i++) CHECK(!strcmp(e[i].name, w[i].name));
  CHECK_FAILS(tg_jit_entries(NULL, e, 8), "no JIT");
  CHECK_FAILS(tg_jit_entries(j, NULL, 8), "NULL output");
  tg_jit_free(j);
}

TEST(schedule_program_errors) {
  CHECK_OK(tg_variable("sp_m", 0, 6));
  CHECK_OK(tg_variable("sp_never_bound", 1, 6));
  float x[24];
  for (int i = 0; i < 24; i++) x[i] = (float)i;
  tg_tensor *xt = tg_from_data(x, TG_SHAPE(4, 6), TG_F32);
  tg_tensor *y = tg_add(tg_sum(tg_shrink_var(xt, 1, "sp_m"), TG_AXES(1), false),
                        tg_sum(tg_shrink_var(xt, 1, "sp_never_bound"), TG_AXES(1), false));
  tg_schedule *s = tg_schedule_new(&y, 1);
  CHECK_OK(s);
  const char *vn[2] = { "sp_m", "sp_never_bound" };
  int64_t v[2] = { 3, 9 };
  CHECK_FAILS(tg_schedule_run(s, vn, v, 2), "tg_schedule_run", "sp_never_bound = 9", "[1, 6]");
  v[1] = 2;
  const char *twice[2] = { "sp_m", "sp_m" };
  CHECK_FAILS(tg_schedule_run(s, twice, v, 2), "'sp_m' given twice");
  const char *unknown[1] = { "sp_no_such_var" };
  CHECK_FAILS(tg_schedule_run(s, unknown, v, 1), "no variable named 'sp_no_such_var'");
  /* sp_never_bound is neither given nor bound: nothing runs */
  tg_counters c0 = tg_get_counters();
  CHECK_FAILS(tg_schedule_run(s, vn, v, 1), "'sp_never_bound' is not bound");
  CHECK_EQ_INT(tg_get_counters().kernels_run, c0.kernels_run);
  CHECK_FAILS(tg_schedule_run(s, vn, v, -1), "negative variable count");
  CHECK_FAILS(tg_schedule_run(s, NULL, v, 1), "NULL variable names");
  /* given both, it runs: y[i] = sum of the first 3 + the first 2 */
  CHECK(tg_schedule_run(s, vn, v, 2) == 0);
  float got[4];
  CHECK(tg_data(y, got, sizeof got) == 0);
  for (int i = 0; i < 4; i++) {
    float w = 0;
    for (int j = 0; j < 3; j++) w += x[i * 6 + j];
    for (int j = 0; j < 2; j++) w += x[i * 6 + j];
    CHECK_NEAR(got[i], w, 1e-6);
  }
  tg_schedule_free(s);
  tg_schedule_free(NULL);
  CHECK_FAILS(tg_schedule_run(NULL, NULL, NULL, 0), "no schedule");
  CHECK_FAILS(tg_schedule_count(NULL), "no schedule");
  CHECK_FAILS(tg_schedule_vars(NULL, NULL, 0), "no schedule");
  CHECK_ERR((tg_tensor *)tg_schedule_new(NULL, 1), "NULL tensor array");
  tg_tensor *none[1] = { NULL };
  CHECK_ERR((tg_tensor *)tg_schedule_new(none, 1), "tg_schedule_new");
  CHECK_ERR((tg_tensor *)tg_schedule_new(&xt, 0), "no tensors");
}

/* a contiguous slice of realized memory is a view: no call */
TEST(schedule_program_slice_is_a_view) {
  float a[24], got[8];
  for (int i = 0; i < 24; i++) a[i] = (float)i;
  tg_tensor *at = tg_from_data(a, TG_SHAPE(3, 8), TG_F32);
  tg_tensor *row = tg_shrink(at, (int64_t[]){ 1, 0 }, (int64_t[]){ 2, 8 });
  tg_schedule *s = tg_schedule_new(&row, 1);
  CHECK_OK(s);
  if (!s) return;
  CHECK_EQ_INT(tg_schedule_count(s), 0);
  CHECK(tg_schedule_run(s, NULL, NULL, 0) == 0);
  CHECK(tg_data(row, got, sizeof got) == 0);
  for (int i = 0; i < 8; i++) CHECK_NEAR(got[i], a[8 + i], 0);
  tg_schedule_free(s);
}

/* a JIT step that runs a kept schedule captures its calls too: replays run
 * them again (reading what its input holds then) */
static tg_tensor *jy;
static int step_runs_schedule(void *ctx, tg_tensor *const *in, int nin, tg_tensor **out, int nout) {
  (void)nin; (void)nout;
  if (tg_schedule_run(ctx, NULL, NULL, 0) < 0) return -1;
  out[0] = tg_add(in[0], jy);
  return out[0] ? 0 : -1;
}

TEST(schedule_program_run_inside_a_jit_step) {
  float xv[6] = { 1, 2, 3, 4, 5, 6 };
  tg_tensor *x = tg_from_data(xv, TG_SHAPE(6), TG_F32);
  jy = tg_muls(x, 2);
  tg_schedule *s = tg_schedule_new(&jy, 1);
  CHECK_OK(s);
  if (!s) return;
  tg_jit *j = tg_jit_new(step_runs_schedule, s);
  for (int call = 0; call < 5; call++) {
    for (int i = 0; i < 6; i++) xv[i] = (float)(i * (call + 1));
    CHECK(tg_realize(tg_assign(x, tg_from_data(xv, TG_SHAPE(6), TG_F32))) == 0);
    float iv[6], got[6];
    for (int i = 0; i < 6; i++) iv[i] = (float)(10 * call + i);
    tg_tensor *in = tg_from_data(iv, TG_SHAPE(6), TG_F32), *out = NULL;
    CHECK_MSG(tg_jit_call(j, &in, 1, &out, 1) == 0, "call %d: %s", call, tg_error());
    CHECK(tg_data(out, got, sizeof got) == 0);
    for (int i = 0; i < 6; i++) CHECK_NEAR(got[i], iv[i] + 2 * xv[i], 0);
  }
  CHECK_EQ_INT(tg_jit_stats(j).kernels, 2);   /* the schedule's kernel and the add */
  tg_jit_free(j);
  tg_schedule_free(s);
}

/* A schedule of sharded tensors (data-parallel SGD on two CPU devices):
 * the gradient's sum over the sharded batch is an allreduce, a call of
 * the linear like the kernels; each run updates the replicated weight as
 * the same update on one device does (checked against C). */
TEST(schedule_program_sharded) {
  enum { N = 8, D = 4 };
  const char *devs[2] = { "CPU:0", "CPU:1" };
  float x[N * D], w0[D] = { 0.5f, -1, 0.25f, 2 }, want[D], got[D];
  for (int i = 0; i < N * D; i++) x[i] = (float)((i * 7) % 11) / 4 - 1;
  tg_tensor *xs = tg_shard(tg_from_data(x, TG_SHAPE(N, D), TG_F32), devs, 2, 0);
  tg_tensor *w = tg_shard(tg_from_data(w0, TG_SHAPE(D), TG_F32), devs, 2, -1);
  CHECK_OK(xs && w && tg_realize(xs) == 0 && tg_realize(w) == 0);
  if (!xs || !w) return;
  /* w -= 0.1 * sum_n (x_n . w) x_n: the batch sum crosses the devices */
  tg_tensor *pred = tg_sum(tg_mul(xs, w), TG_AXES(1), true);                       /* (N, 1) */
  tg_tensor *grad = tg_sum(tg_mul(pred, xs), TG_AXES(0), false);                   /* (D,) */
  tg_tensor *upd = tg_assign(w, tg_sub(w, tg_muls(grad, 0.1)));
  tg_schedule *s = tg_schedule_new(&upd, 1);
  CHECK_OK(s);
  if (!s) return;
  CHECK(tg_schedule_count(s) >= 3);
  memcpy(want, w0, sizeof want);
  for (int r = 0; r < 3; r++) {
    float g[D] = { 0 };
    for (int n = 0; n < N; n++) {
      float p = 0;
      for (int d = 0; d < D; d++) p += x[n * D + d] * want[d];
      for (int d = 0; d < D; d++) g[d] += p * x[n * D + d];
    }
    for (int d = 0; d < D; d++) want[d] -= 0.1f * g[d];
    CHECK_OK(tg_schedule_run(s, NULL, NULL, 0) == 0);
    CHECK_OK(tg_data(w, got, sizeof got) == 0);
    test_close_f32(got, want, D, 1e-5, 1e-5, "sharded SGD step");
  }
  tg_schedule_free(s);
}
