/* test_tensor_threads.c: threads that use tensors at once. Each thread has
 * its own scopes and live-tensor list (src/tensor/tensor.c), so two threads
 * build, realize and free their own graphs side by side; `make test TSAN=1
 * FILTER=tensor_threads` runs these under ThreadSanitizer. */
#include <pthread.h>
#include "test.h"

enum { N = 256, ROUNDS = 12 };

typedef struct { float scale; int bad; char err[256]; } graph_job;

/* Each round: x = scale*i + round, then sum(2x + 1) and max(x), exact in
 * float32 (integers below 2^24), compared with the sums written out. */
static void *build_realize_free(void *arg) {
  graph_job *j = arg;
  float xs[N];
  for (int r = 0; r < ROUNDS; r++) {
    double want_sum = 0, want_max = -1e30;
    for (int i = 0; i < N; i++) {
      xs[i] = j->scale * (float)i + (float)r;
      want_sum += 2.0 * xs[i] + 1.0;
      if (xs[i] > want_max) want_max = xs[i];
    }
    tg_scope_begin();
    tg_tensor *x = tg_from_data(xs, TG_SHAPE(N), TG_F32);
    tg_tensor *y = tg_add(tg_mul(x, tg_full(TG_SHAPE(), 2, TG_F32)), tg_full(TG_SHAPE(), 1, TG_F32));
    tg_tensor *s = tg_sum(y, TG_ALL, false), *m = tg_max(x, TG_ALL, false);
    tg_tensor *outs[2] = { s, m };
    float got[2] = { 0, 0 };
    bool ok = tg_realize_all(outs, 2) == 0 && tg_data(s, &got[0], sizeof(float)) == 0 &&
              tg_data(m, &got[1], sizeof(float)) == 0;
    if (!ok) snprintf(j->err, sizeof j->err, "%s", tg_error());
    if (!ok || got[0] != (float)want_sum || got[1] != (float)want_max) j->bad++;
    tg_scope_end();
  }
  return NULL;
}

TEST(tensor_threads_own_graphs) {
  graph_job jobs[2] = { { 1.0f, 0, "" }, { 3.0f, 0, "" } };
  pthread_t th[2];
  for (int i = 0; i < 2; i++) CHECK(pthread_create(&th[i], NULL, build_realize_free, &jobs[i]) == 0);
  for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
  for (int i = 0; i < 2; i++) CHECK_MSG(jobs[i].bad == 0, "thread %d: %d of %d rounds wrong (%s)", i, jobs[i].bad, ROUNDS, jobs[i].err);
}

/* A scope is the thread's own: while thread A has one open, a tensor thread
 * B makes (with no scope of its own) is not A's, and survives A's
 * tg_scope_end. */
typedef struct { pthread_barrier_t *bar; tg_tensor *t; float got; } scope_job;

static void *scope_owner(void *arg) {
  scope_job *j = arg;
  tg_scope_begin();
  tg_tensor *mine = tg_full(TG_SHAPE(4), 7, TG_F32);
  pthread_barrier_wait(j->bar);   /* 1: A's scope is open */
  pthread_barrier_wait(j->bar);   /* 2: B has made its tensor */
  tg_scope_end();                 /* frees `mine`, and only it */
  (void)mine;
  pthread_barrier_wait(j->bar);   /* 3 */
  return NULL;
}

static void *scope_other(void *arg) {
  scope_job *j = arg;
  pthread_barrier_wait(j->bar);
  j->t = tg_full(TG_SHAPE(4), 5, TG_F32);
  pthread_barrier_wait(j->bar);
  pthread_barrier_wait(j->bar);
  float v[4] = { 0 };
  if (tg_data(j->t, v, sizeof v) == 0) j->got = v[3];
  return NULL;   /* j->t outlives this thread: the test frees it */
}

TEST(tensor_threads_scopes) {
  pthread_barrier_t bar;
  pthread_barrier_init(&bar, NULL, 2);
  scope_job j = { &bar, NULL, 0 };
  pthread_t a, b;
  CHECK(pthread_create(&a, NULL, scope_owner, &j) == 0);
  CHECK(pthread_create(&b, NULL, scope_other, &j) == 0);
  pthread_join(a, NULL);
  pthread_join(b, NULL);
  pthread_barrier_destroy(&bar);
  CHECK_MSG(j.got == 5.0f, "the other thread's tensor read %g after the first thread's scope ended", j.got);

  /* a tensor made by a thread that has ended is still there to use and free */
  tg_tensor *twice = tg_add(j.t, j.t);
  CHECK_OK(twice);
  CHECK_NEAR(tg_item(tg_sum(twice, TG_ALL, false)), 40.0, 0);
  tg_free(twice);
  tg_free(j.t);
}
