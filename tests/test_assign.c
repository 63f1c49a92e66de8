/* test_assign.c: tg_assign, writing into a realized tensor's memory, checked
 * against naive C (numpy's semantics: the value is computed in full before
 * the target is written, even when the value reads the target).
 *
 * Lazy reads around an assign follow tinygrad (test/unit/test_assign.py):
 * a tensor handle that was assigned to reads the new value; a tensor computed
 * from the target *before* the assign was issued reads the old value, as
 * long as it is realized before the assign (realize-ordered cases). See
 * assign_lazy_read_before_assign_realized_after for the one case where tg
 * and tinygrad differ. */
#include <stdint.h>
#include "test.h"

static tg_tensor *vec(const float *x, int n) {
  tg_tensor *t = tg_from_data(x, TG_SHAPE(n), TG_F32);
  CHECK_OK(t);
  return t;
}

/* t must read back as want (n floats) exactly (all values here are small
 * integers or exact binary fractions). */
static void expect(tg_tensor *t, const float *want, int n, const char *what) {
  float *got = calloc((size_t)n, sizeof(float));
  if (!t) test_fail(__FILE__, __LINE__, "%s: tensor is NULL: %s", what, tg_error());
  else if (tg_numel(t) != n) test_fail(__FILE__, __LINE__, "%s: %lld elements, want %d", what, (long long)tg_numel(t), n);
  else if (tg_data(t, got, sizeof(float) * (size_t)n) < 0) test_fail(__FILE__, __LINE__, "%s: tg_data: %s", what, tg_error());
  else {
    int bad = 0;
    for (int i = 0; i < n; i++)
      if (got[i] != want[i] && bad++ < 4) test_fail(__FILE__, __LINE__, "%s[%d]: got %g want %g", what, i, got[i], want[i]);
  }
  free(got);
}

static void iota(float *x, int n, float start) { for (int i = 0; i < n; i++) x[i] = start + (float)i; }

/* ---------------------------------------------------------------- basics */

TEST(assign_in_place_twice) {
  float x[6], want[6];
  iota(x, 6, 0);
  tg_tensor *a = vec(x, 6);
  CHECK(tg_assign(a, tg_adds(a, 1)) == a);
  CHECK(tg_assign(a, tg_adds(a, 1)) == a);   /* chained on the pending assign */
  for (int i = 0; i < 6; i++) want[i] = x[i] + 2;
  expect(a, want, 6, "a+1 twice, lazy");
  /* and with a realize between */
  tg_assign(a, tg_muls(a, 3));
  CHECK(tg_realize(a) == 0);
  tg_assign(a, tg_subs(a, 1));
  CHECK(tg_realize(a) == 0);
  for (int i = 0; i < 6; i++) want[i] = (x[i] + 2) * 3 - 1;
  expect(a, want, 6, "(a*3)-1 realized between");
}

/* The assign writes the target's own buffer: a view of the base made before
 * the assign (a reshape) sees the new values. */
TEST(assign_writes_the_buffer_in_place) {
  float x[6], want[6];
  iota(x, 6, 1);
  tg_tensor *a = tg_from_data(x, TG_SHAPE(2, 3), TG_F32);
  tg_tensor *flat = tg_reshape(a, TG_SHAPE(6));
  tg_assign(a, tg_muls(a, 2));
  CHECK(tg_realize(a) == 0);
  for (int i = 0; i < 6; i++) want[i] = 2 * x[i];
  expect(flat, want, 6, "reshape view made before the assign");
  int64_t k0 = tg_get_counters().kernels_run;
  expect(a, want, 6, "a");
  CHECK_EQ_INT(tg_get_counters().kernels_run - k0, 0);   /* a is its buffer again: reading is free */
}

TEST(assign_from_constant) {
  float x[6], want[6];
  iota(x, 6, 0);
  tg_tensor *a = tg_from_data(x, TG_SHAPE(2, 3), TG_F32);
  tg_assign(a, tg_full(TG_SHAPE(2, 3), 7.5, TG_F32));
  for (int i = 0; i < 6; i++) want[i] = 7.5f;
  expect(a, want, 6, "assign full");
  tg_assign(a, tg_scalar(-2, TG_F32));   /* broadcasts */
  for (int i = 0; i < 6; i++) want[i] = -2;
  expect(a, want, 6, "assign scalar");
  tg_assign(a, tg_full(TG_SHAPE(3), 4, TG_F32));   /* broadcasts over rows */
  for (int i = 0; i < 6; i++) want[i] = 4;
  expect(a, want, 6, "assign row");
  int32_t xi[4] = { 1, 2, 3, 4 }, gi[4];
  tg_tensor *b = tg_from_data(xi, TG_SHAPE(4), TG_I32);
  tg_assign(b, tg_zeros_like(b));
  CHECK(tg_data(b, gi, sizeof gi) == 0);
  for (int i = 0; i < 4; i++) CHECK_EQ_INT(gi[i], 0);
}

/* ---------------------------------------------------------------- views */

TEST(assign_slice_updates_only_the_slice) {
  float x[5], want[5];
  iota(x, 5, 10);
  tg_tensor *a = vec(x, 5);
  tg_tensor *v = TG_GET(a, TG_SLICE(1, 3, 1));
  tg_assign(v, tg_full(TG_SHAPE(2), 9, TG_F32));
  CHECK(tg_realize(v) == 0);
  float w5[5] = { 10, 9, 9, 13, 14 };
  expect(a, w5, 5, "a after a[1:3] = 9");
  float w2[2] = { 9, 9 };
  expect(v, w2, 2, "the slice itself");
  /* the slice's handle reads the slice, the base the whole */
  tg_tensor *v2 = TG_GET(a, TG_SLICE(-2, 5, 1));
  tg_assign(v2, tg_muls(v2, 2));
  for (int i = 0; i < 5; i++) want[i] = w5[i];
  want[3] *= 2; want[4] *= 2;
  expect(v2, want + 3, 2, "a[-2:] *= 2, the slice");
  expect(a, want, 5, "a[-2:] *= 2, the base");
}

/* tinygrad's test_assign_slice: xs = X[2:4]; xs.assign(xs + 1); then X is
 * read, without realizing xs first. The assign must show through the base
 * (tinygrad substitutes the buffer with "buffer after the assign" in every
 * live tensor), in one kernel. */
TEST(assign_view_then_read_base_directly) {
  float y[4] = { 1, 2, 3, 4 };
  tg_tensor *X = vec(y, 4);
  tg_tensor *xs = TG_GET(X, TG_SLICE(2, 4, 1));
  tg_assign(xs, tg_adds(xs, 1));
  float wy[4] = { 1, 2, 4, 5 };
  int64_t k0 = tg_get_counters().kernels_run;
  expect(X, wy, 4, "X after X[2:4] += 1 (read through the base)");
  CHECK_MSG(tg_get_counters().kernels_run - k0 == 1, "slice assign read through the base ran %lld kernels, want 1",
            (long long)(tg_get_counters().kernels_run - k0));
  /* and an op on the base built after the assign sees it too */
  float z[4] = { 1, 2, 3, 4 };
  tg_tensor *Z = vec(z, 4);
  tg_assign(TG_GET(Z, TG_I(0)), tg_scalar(10, TG_F32));
  float wz[4] = { 20, 4, 6, 8 };
  expect(tg_muls(Z, 2), wz, 4, "Z*2 after Z[0] = 10");
}

/* tinygrad's test_assign_slice_alt: X[1:3] = X[2:4] + 1, overlapping */
TEST(assign_overlapping_slices) {
  float y[4] = { 1, 2, 3, 4 };
  tg_tensor *X = vec(y, 4);
  CHECK(tg_realize(tg_assign(TG_GET(X, TG_SLICE(1, 3, 1)), tg_adds(TG_GET(X, TG_SLICE(2, 4, 1)), 1))) == 0);
  float w[4] = { 1, 4, 5, 4 };
  expect(X, w, 4, "X[1:3] = X[2:4] + 1");
  /* shift right by one: numpy evaluates the right side first */
  float z[6];
  iota(z, 6, 0);
  tg_tensor *Z = vec(z, 6);
  CHECK(tg_realize(tg_assign(TG_GET(Z, TG_FROM(1)), TG_GET(Z, TG_UPTO(-1)))) == 0);
  float wz[6] = { 0, 0, 1, 2, 3, 4 };
  expect(Z, wz, 6, "Z[1:] = Z[:-1]");
  CHECK(tg_realize(tg_assign(TG_GET(Z, TG_UPTO(-1)), TG_GET(Z, TG_FROM(1)))) == 0);
  float wz2[6] = { 0, 1, 2, 3, 4, 4 };
  expect(Z, wz2, 6, "Z[:-1] = Z[1:]");
}

/* 2-D strided and flipped views as targets (steps that divide the sliced
 * length, so the view is pure shrink/reshape/flip) */
TEST(assign_strided_2d_view) {
  float x[24], want[24];
  iota(x, 24, 0);
  tg_tensor *a = tg_from_data(x, TG_SHAPE(4, 6), TG_F32);
  /* rows 0, 2; columns 3, 0 (the step-3 slice flipped) */
  tg_tensor *v = tg_flip(TG_GET(a, TG_STEP(2), TG_SLICE(0, 6, 3)), TG_AXES(1));
  float vals[4] = { 100, 101, 102, 103 };
  CHECK(tg_realize(tg_assign(v, tg_from_data(vals, TG_SHAPE(2, 2), TG_F32))) == 0);
  memcpy(want, x, sizeof want);
  int rows[2] = { 0, 2 }, cols[2] = { 3, 0 };
  for (int i = 0; i < 2; i++) for (int j = 0; j < 2; j++) want[rows[i] * 6 + cols[j]] = vals[i * 2 + j];
  expect(a, want, 24, "flip(a[::2, 0:6:3], 1) = vals");
  /* through a transpose */
  tg_tensor *t = tg_T(a);
  tg_tensor *col = TG_GET(t, TG_I(4));   /* = a[:, 4] */
  CHECK(tg_realize(tg_assign(col, tg_full(TG_SHAPE(4), -1, TG_F32))) == 0);
  for (int i = 0; i < 4; i++) want[i * 6 + 4] = -1;
  expect(a, want, 24, "a.T[4] = -1");
}

/* A strided slice whose step does not divide the sliced length: getitem
 * builds it with a pad (to a multiple of the step), a reshape and a shrink
 * that drops the padding again. It is a slice, so it is a valid target. */
TEST(assign_strided_slice_step_not_dividing) {
  float x[20], want[20];
  iota(x, 20, 0);
  tg_tensor *a = tg_from_data(x, TG_SHAPE(4, 5), TG_F32);
  tg_tensor *v = TG_GET(a, TG_SLICE(1, 4, 2), TG_STEP(-2));   /* rows 1, 3; columns 4, 2, 0 */
  float vals[6] = { 100, 101, 102, 103, 104, 105 };
  tg_clear_error();
  tg_tensor *r = tg_assign(v, tg_from_data(vals, TG_SHAPE(2, 3), TG_F32));
  CHECK_MSG(r != NULL, "assign to a[1:4:2, ::-2]: %s", tg_error());
  if (!r) return;
  CHECK(tg_realize(r) == 0);
  memcpy(want, x, sizeof want);
  int rows[2] = { 1, 3 }, cols[3] = { 4, 2, 0 };
  for (int i = 0; i < 2; i++) for (int j = 0; j < 3; j++) want[rows[i] * 5 + cols[j]] = vals[i * 3 + j];
  expect(a, want, 20, "a[1:4:2, ::-2] = vals");
}

/* ---------------------------------------------------------------- value reads the target */

TEST(assign_flip_of_itself) {
  float x[7], want[7];
  iota(x, 7, 0);
  tg_tensor *a = vec(x, 7);
  tg_assign(a, tg_flip(a, TG_AXES(0)));
  for (int i = 0; i < 7; i++) want[i] = x[6 - i];
  expect(a, want, 7, "a = a[::-1]");
  /* tinygrad's test_post_flipped_assignment: a = a.flip(0) + b, 2-D */
  float m[16], bm[16], wm[16];
  iota(m, 16, 0);
  iota(bm, 16, 100);
  tg_tensor *A = tg_from_data(m, TG_SHAPE(4, 4), TG_F32), *B = tg_from_data(bm, TG_SHAPE(4, 4), TG_F32);
  tg_assign(A, tg_add(tg_flip(A, TG_AXES(0)), B));
  for (int i = 0; i < 4; i++) for (int j = 0; j < 4; j++) wm[i * 4 + j] = m[(3 - i) * 4 + j] + bm[i * 4 + j];
  expect(A, wm, 16, "A = A.flip(0) + B");
}

TEST(assign_transpose_of_itself) {
  float m[16], bm[16], wm[16];
  iota(m, 16, 0);
  iota(bm, 16, 0);
  tg_tensor *A = tg_from_data(m, TG_SHAPE(4, 4), TG_F32), *B = tg_from_data(bm, TG_SHAPE(4, 4), TG_F32);
  /* tinygrad's test_post_permuted_assignment_alt: a = a.T + b */
  tg_assign(A, tg_add(tg_T(A), B));
  for (int i = 0; i < 4; i++) for (int j = 0; j < 4; j++) wm[i * 4 + j] = m[j * 4 + i] + bm[i * 4 + j];
  expect(A, wm, 16, "A = A.T + B");
}

/* a row from a reduce of the whole: A[0] = A.sum(0) */
TEST(assign_row_from_reduce_of_itself) {
  float m[16], w2[16];
  iota(m, 16, 1);
  tg_tensor *A = tg_from_data(m, TG_SHAPE(4, 4), TG_F32);
  memcpy(w2, m, sizeof w2);
  for (int j = 0; j < 4; j++) w2[j] = m[j] + m[4 + j] + m[8 + j] + m[12 + j];
  CHECK(tg_realize(tg_assign(TG_GET(A, TG_I(0)), tg_sum(A, TG_AXES(0), false))) == 0);
  expect(A, w2, 16, "A[0] = A.sum(0)");
  /* the whole from a reduce of itself, broadcast: A = A - A.max(1) */
  float w3[16];
  for (int i = 0; i < 4; i++) {
    float mx = -INFINITY;
    for (int j = 0; j < 4; j++) mx = fmaxf(mx, w2[i * 4 + j]);
    for (int j = 0; j < 4; j++) w3[i * 4 + j] = w2[i * 4 + j] - mx;
  }
  tg_assign(A, tg_sub(A, tg_max(A, TG_AXES(1), true)));
  expect(A, w3, 16, "A = A - A.max(1)");
}

/* ---------------------------------------------------------------- lazy reads */

/* tinygrad's test_pending_assign_chain_preserves_intermediate_reads, read in
 * order: each y sees the value x had when y was built. */
TEST(assign_chain_intermediate_reads_in_order) {
  float z[1] = { 0 };
  tg_tensor *x = vec(z, 1);
  tg_tensor *y0 = tg_adds(x, 0);
  CHECK_OK(tg_assign(x, tg_adds(x, 1)));
  tg_tensor *y1 = tg_adds(x, 0);
  CHECK_OK(tg_assign(x, tg_adds(x, 1)));
  tg_tensor *y2 = tg_adds(x, 0);
  CHECK_OK(tg_assign(x, tg_adds(x, 1)));   /* a third pending assign chains too */
  CHECK_NEAR(tg_item(y0), 0, 0);
  CHECK_NEAR(tg_item(y1), 1, 0);
  CHECK_NEAR(tg_item(y2), 2, 0);
  CHECK_NEAR(tg_item(x), 3, 0);
}

/* tinygrad's test_assign_diamond_possible: times_a is realized into its own
 * buffer (contiguous) before a's new value lands. */
TEST(assign_diamond_realize_ordered) {
  float ones[4] = { 1, 1, 1, 1 }, w[4] = { 4, 4, 4, 4 };
  tg_tensor *a = vec(ones, 4);
  tg_tensor *times_a = tg_muls(a, 3);
  CHECK(tg_realize(times_a) == 0);
  tg_assign(a, tg_full(TG_SHAPE(4), 2, TG_F32));
  expect(tg_add(a, tg_subs(times_a, 1)), w, 4, "a + (times_a - 1)");
  /* test_assign_diamond_alt: built after the assign, reads the new value */
  tg_tensor *b = vec(ones, 4);
  tg_assign(b, tg_full(TG_SHAPE(4), 2, TG_F32));
  tg_tensor *times_b = tg_muls(b, 3);
  float w8[4] = { 8, 8, 8, 8 };
  expect(tg_add(b, times_b), w8, 4, "b + b*3 after the assign");
}

/* tinygrad's test_crossover_assign and test_assign_double_diamond: a += b;
 * b += a, realized together */
TEST(assign_crossover_realize_all) {
  float twos[4] = { 2, 2, 2, 2 }, threes[4] = { 3, 3, 3, 3 };
  tg_tensor *a = vec(twos, 4), *b = vec(threes, 4);
  tg_assign(a, tg_add(a, b));
  tg_assign(b, tg_add(b, a));
  tg_tensor *both[2] = { a, b };
  CHECK(tg_realize_all(both, 2) == 0);
  float w5[4] = { 5, 5, 5, 5 }, w8[4] = { 8, 8, 8, 8 };
  expect(a, w5, 4, "a += b");
  expect(b, w8, 4, "b += a (the new a)");
  tg_tensor *c = vec(twos, 4), *d = vec(threes, 4);
  tg_tensor *c_prev = tg_contiguous(tg_muls(c, 4)), *d_prev = tg_contiguous(tg_adds(d, 3));
  tg_assign(d, tg_add(d, c_prev));
  tg_assign(c, tg_add(c, d_prev));
  tg_tensor *cd[2] = { c, d };
  CHECK(tg_realize_all(cd, 2) == 0);
  float w11[4] = { 11, 11, 11, 11 };
  expect(d, w11, 4, "d += contiguous(c*4)");
  expect(c, w8, 4, "c += contiguous(d+3)");
}

/* tinygrad's test_assign_corealize_order_independent */
TEST(assign_corealize_order_independent) {
  for (int order = 0; order < 2; order++) {
    float one[1] = { 1 };
    tg_tensor *x = vec(one, 1);
    tg_tensor *y = tg_adds(x, 10);
    tg_assign(x, tg_muls(x, 2));
    tg_assign(x, tg_adds(x, 3));
    tg_tensor *r[2] = { order ? y : x, order ? x : y };
    CHECK(tg_realize_all(r, 2) == 0);
    CHECK_MSG(tg_item(y) == 11, "order %d: y = %g, want 11", order, tg_item(y));
    CHECK_MSG(tg_item(x) == 5, "order %d: x = %g, want 5", order, tg_item(x));
  }
}

/* b = a*2 is built (lazily) before a.assign(a+1). Realized before the assign
 * is realized, b is the old a times 2 (realize-ordered: must hold). */
TEST(assign_lazy_read_before_assign_realize_ordered) {
  float x[3] = { 1, 2, 3 };
  tg_tensor *a = vec(x, 3);
  tg_tensor *b = tg_muls(a, 2);
  tg_assign(a, tg_adds(a, 1));
  float wb[3] = { 2, 4, 6 }, wa[3] = { 2, 3, 4 };
  expect(b, wb, 3, "b = old a * 2, read first");
  expect(a, wa, 3, "a + 1");
  expect(b, wb, 3, "b again");
}

/* The same, but a's assign runs first. What tg gives, documented here: b is
 * lazy and reads a's buffer when it is realized, after the in-place write,
 * so b = new a * 2 = 4, 6, 8 (numpy, which computes b at once, gives 2, 4, 6;
 * tinygrad also reads the buffer late). Realize b before the assign runs to
 * keep the old value, as the test above does. */
TEST(assign_lazy_read_before_assign_realized_after) {
  float x[3] = { 1, 2, 3 };
  tg_tensor *a = vec(x, 3);
  tg_tensor *b = tg_muls(a, 2);
  tg_assign(a, tg_adds(a, 1));
  float wa[3] = { 2, 3, 4 }, wb[3] = { 4, 6, 8 };
  expect(a, wa, 3, "a + 1, read first");
  expect(b, wb, 3, "b = a * 2 read after the assign ran: the new a");
}

/* The same assign expression again and again, realized in between: each is
 * a new write (two alike assigns must not merge into one). */
TEST(assign_same_expression_repeatedly) {
  float x[2] = { 1, 2 };
  tg_tensor *a = vec(x, 2);
  for (int i = 0; i < 4; i++) {
    CHECK_OK(tg_assign(a, tg_adds(a, 1)));
    CHECK(tg_realize(a) == 0);
  }
  float w[2] = { 5, 6 };
  expect(a, w, 2, "a += 1, four times");
  tg_tensor *b = vec(x, 2);
  tg_tensor *handles[3];
  for (int i = 0; i < 3; i++) { CHECK_OK(tg_assign(b, tg_adds(b, 1))); handles[i] = tg_muls(b, 1); }
  for (int i = 0; i < 3; i++) CHECK_NEAR(tg_item(TG_GET(handles[i], TG_I(0))), 2 + i, 0);
  float w2[2] = { 4, 5 };
  expect(b, w2, 2, "b += 1, three pending");
}

/* ---------------------------------------------------------------- errors */

TEST(assign_mismatched_shape_errors) {
  float x[6] = { 0 };
  tg_tensor *a = tg_from_data(x, TG_SHAPE(2, 3), TG_F32);
  tg_clear_error();
  CHECK(tg_assign(a, tg_zeros(TG_SHAPE(3, 2), TG_F32)) == NULL);
  CHECK_MSG(strstr(tg_error(), "expand") || strstr(tg_error(), "shape"), "error: \"%s\"", tg_error());
  tg_clear_error();
  CHECK(tg_assign(TG_GET(a, TG_I(0)), tg_zeros(TG_SHAPE(2), TG_F32)) == NULL);
  CHECK(tg_error()[0] != 0);
  tg_clear_error();
  CHECK(tg_assign(a, tg_zeros(TG_SHAPE(2, 3, 1), TG_F32)) == NULL);
  CHECK(tg_error()[0] != 0);
  /* the target is untouched and still usable */
  tg_clear_error();
  tg_assign(a, tg_ones(TG_SHAPE(2, 3), TG_F32));
  float w[6] = { 1, 1, 1, 1, 1, 1 };
  expect(a, w, 6, "a after failed assigns, then a good one");
}
