/* test_cpu_slab.c: medium CPU buffers carved from shared huge-page chunks
 * (runtime/cpu_slab.c): buffers never overlap, keep their contents while
 * neighbours come and go, and a chunk is filled again once empty. */
#include <stdint.h>
#include "test.h"
#include "runtime/cpu_slab.h"
#include "runtime/device.h"

static void fill(unsigned char *p, size_t n, unsigned char v) { memset(p, v, n); }
static bool holds(const unsigned char *p, size_t n, unsigned char v) {
  for (size_t i = 0; i < n; i++) if (p[i] != v) return false;
  return true;
}
static bool apart(const unsigned char *a, size_t na, const unsigned char *b, size_t nb) {
  return a + na <= b || b + nb <= a;
}

TEST(cpu_slab_buffers_apart_and_reused) {
  CHECK(!cpu_slab_serves(CPU_SLAB_MIN - 1) && cpu_slab_serves(CPU_SLAB_MIN) && !cpu_slab_serves(CPU_SLAB_MAX));
  CHECK(cpu_slab_alloc(CPU_SLAB_MAX) == NULL && cpu_slab_alloc(1000) == NULL);
  CHECK(!cpu_slab_free(NULL));
  int x;
  CHECK(!cpu_slab_free(&x));   /* not from a chunk */
  /* 24 buffers of 3 sizes: more than one chunk's worth */
  int chunks0 = cpu_slab_chunks();
  enum { N = 24 };
  size_t sz[N];
  unsigned char *p[N];
  for (int i = 0; i < N; i++) {
    sz[i] = (size_t)(256 << 10) * (1 + i % 3) + 100 * (size_t)i;
    p[i] = cpu_slab_alloc(sz[i]);
    CHECK_MSG(p[i] != NULL, "buffer %d", i);
    if (!p[i]) return;
    CHECK((uintptr_t)p[i] % 4096 == 0);
    fill(p[i], sz[i], (unsigned char)(i + 1));
  }
  CHECK(cpu_slab_chunks() >= chunks0 + 1);
  for (int i = 0; i < N; i++)
    for (int j = i + 1; j < N; j++) CHECK_MSG(apart(p[i], sz[i], p[j], sz[j]), "buffers %d and %d overlap", i, j);
  /* every other one freed, then new ones: the rest keep their bytes */
  for (int i = 0; i < N; i += 2) CHECK(cpu_slab_free(p[i]));
  unsigned char *q[N / 2];
  for (int k = 0; k < N / 2; k++) {
    q[k] = cpu_slab_alloc(CPU_SLAB_MIN);
    CHECK(q[k] != NULL);
    if (q[k]) fill(q[k], CPU_SLAB_MIN, 0xee);
  }
  for (int i = 1; i < N; i += 2) CHECK_MSG(holds(p[i], sz[i], (unsigned char)(i + 1)), "buffer %d changed", i);
  for (int k = 0; k < N / 2; k++)
    for (int i = 1; i < N; i += 2) if (q[k]) CHECK(apart(q[k], CPU_SLAB_MIN, p[i], sz[i]));
  for (int i = 1; i < N; i += 2) CHECK(cpu_slab_free(p[i]));
  for (int k = 0; k < N / 2; k++) if (q[k]) CHECK(cpu_slab_free(q[k]));
  /* all gone: the chunks they filled are unmapped (the one being filled
   * may stay, to be filled again) */
  CHECK_MSG(cpu_slab_chunks() <= chunks0 + 1, "%d chunks, %d before", cpu_slab_chunks(), chunks0);
}

/* Through the CPU device: medium tensors computed, freed and made again
 * give the values numpy would (here: exact integer arithmetic). */
TEST(cpu_slab_tensors_values) {
  int64_t n = 100000;   /* 400 KB of float32 */
  for (int round = 0; round < 3; round++) {
    tg_scope_begin();
    tg_tensor *a = tg_arange(0, (double)n, 1, TG_F32), *b = tg_add(tg_mul(a, tg_scalar(2, TG_F32)), tg_scalar(round, TG_F32));
    float *v = malloc(sizeof(float) * (size_t)n);
    CHECK_OK(a && b && v && tg_data(b, v, sizeof(float) * (size_t)n) == 0);
    bool ok = true;
    for (int64_t i = 0; v && i < n; i++) ok = ok && v[i] == (float)(2 * i + round);
    CHECK_MSG(ok, "round %d", round);
    free(v);
    tg_scope_end();
  }
}
