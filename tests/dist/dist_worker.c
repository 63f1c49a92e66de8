/* dist_worker.c: the program tests/test_dist.c starts under mpirun (one
 * process per rank). It prints what it checked and exits 0 when all held.
 *
 *   dist_worker allreduce GOLDEN   allreduce and broadcast on the CPU
 *                                  devices (and CL when present) against
 *                                  numpy's goldens (tests/gen/gen_dist.py)
 *   dist_worker die                rank 1 is killed; rank 0 waits on an
 *                                  allreduce (mpirun must end the job)
 *   dist_worker hang               rank 1 sleeps; rank 0's allreduce must
 *                                  end by the watchdog (TG_DIST_TIMEOUT)
 *   dist_worker llm_split MODEL... point to point messages; each model with
 *                                  its layers split over the ranks against
 *                                  the same file loaded whole in this
 *                                  process (a prompt and 8 greedy steps) */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "tg.h"
#include "tg_dist.h"

static int failures, checks;
#define EXPECT(c, ...) do { checks++; if (!(c)) { failures++; fprintf(stderr, "rank %d: ", tg_dist_rank()); fprintf(stderr, __VA_ARGS__); fprintf(stderr, "\n"); } } while (0)

static const tg_dtype dtypes[] = { TG_F32, TG_F64, TG_I32, TG_I64 };

static unsigned char *read_all(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long len = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *p = len > 0 ? malloc((size_t)len) : NULL;
  if (p && fread(p, 1, (size_t)len, f) != (size_t)len) { free(p); p = NULL; }
  fclose(f);
  *n = p ? (size_t)len : 0;
  return p;
}

/* t (as bytes) equals want exactly */
static void expect_tensor(tg_tensor *t, const void *want, size_t nbytes, const char *what) {
  void *got = malloc(nbytes ? nbytes : 1);
  int rc = t ? tg_data(t, got, nbytes) : -1;
  EXPECT(rc == 0, "%s: %s", what, tg_error());
  if (rc == 0) EXPECT(memcmp(got, want, nbytes) == 0, "%s: values differ from numpy's", what);
  free(got);
}

static void check_record(const char *dev, tg_dtype dt, int64_t n, const unsigned char *in[2], const unsigned char *sum,
                         const unsigned char *max, const unsigned char *mean) {
  int r = tg_dist_rank();
  size_t nbytes = (size_t)n * (size_t)tg_dtype_size(dt);
  char what[128];
  tg_scope_begin();
  const char *prev = tg_default_device();
  char saved[32];
  snprintf(saved, sizeof saved, "%s", prev);
  tg_set_default_device(dev);
  const struct { tg_dist_op op; const unsigned char *want; const char *name; } ops[] = {
    { TG_DIST_SUM, sum, "sum" }, { TG_DIST_MAX, max, "max" }, { TG_DIST_MEAN, mean, "mean" } };
  for (int k = 0; k < 3; k++) {
    if (!ops[k].want) continue;
    tg_tensor *x = tg_from_data(in[r], TG_SHAPE(n), dt);
    snprintf(what, sizeof what, "%s %s %s[%lld] returning", dev, ops[k].name, tg_dtype_name(dt), (long long)n);
    tg_tensor *y = tg_dist_allreduce(x, ops[k].op);
    expect_tensor(y, ops[k].want, nbytes, what);
    snprintf(what, sizeof what, "%s %s %s[%lld]: the input unchanged", dev, ops[k].name, tg_dtype_name(dt), (long long)n);
    expect_tensor(x, in[r], nbytes, what);
    EXPECT(y && !strcmp(tg_device_of(y), tg_device_of(x)), "%s: result on %s, not %s", what, y ? tg_device_of(y) : "-", tg_device_of(x));
    snprintf(what, sizeof what, "%s %s %s[%lld] in place", dev, ops[k].name, tg_dtype_name(dt), (long long)n);
    EXPECT(tg_dist_allreduce_inplace(x, ops[k].op) == 0, "%s: %s", what, tg_error());
    expect_tensor(x, ops[k].want, nbytes, what);
  }
  /* broadcast from rank 1: everyone ends with rank 1's input */
  tg_tensor *b = tg_from_data(in[r], TG_SHAPE(n), dt);
  snprintf(what, sizeof what, "%s broadcast %s[%lld]", dev, tg_dtype_name(dt), (long long)n);
  expect_tensor(tg_dist_broadcast(b, 1), in[1], nbytes, what);
  EXPECT(tg_dist_broadcast_inplace(b, 1) == 0, "%s: %s", what, tg_error());
  expect_tensor(b, in[1], nbytes, what);
  tg_set_default_device(saved);
  tg_scope_end();
}

static int run_allreduce(const char *golden) {
  size_t len;
  unsigned char *g = read_all(golden, &len);
  if (!g || len < 12 || memcmp(g, "TGDIST1\n", 8) != 0) { fprintf(stderr, "cannot read %s\n", golden); return 1; }
  EXPECT(tg_dist_size() == 2, "world size %d, want 2", tg_dist_size());
  tg_device_info info[32];
  int nd = tg_devices(info, 32, NULL);
  const char *devs[3] = { "CPU", "CPU:1", NULL };
  for (int i = 0; i < nd && i < 32; i++) if (!strcmp(info[i].name, "CL")) devs[2] = "CL";
  uint32_t nrec;
  memcpy(&nrec, g + 8, 4);
  size_t off = 12;
  for (uint32_t i = 0; i < nrec; i++) {
    if (off + 5 > len) { fprintf(stderr, "%s: truncated\n", golden); return 1; }
    int code = g[off];
    uint32_t n;
    memcpy(&n, g + off + 1, 4);
    off += 5;
    tg_dtype dt = dtypes[code & 3];
    size_t nb = (size_t)n * (size_t)tg_dtype_size(dt);
    int narr = code <= 1 ? 5 : 4;
    if (off + nb * (size_t)narr > len) { fprintf(stderr, "%s: truncated\n", golden); return 1; }
    const unsigned char *in[2] = { g + off, g + off + nb };
    for (int d = 0; d < 3; d++)
      if (devs[d]) check_record(devs[d], dt, n, in, g + off + 2 * nb, g + off + 3 * nb, code <= 1 ? g + off + 4 * nb : NULL);
    off += nb * (size_t)narr;
  }
  /* errors are found before any rank waits: the same on every rank */
  tg_tensor *h = tg_from_data((float[]){ 1, 2 }, TG_SHAPE(2), TG_F32);
  EXPECT(tg_dist_broadcast(h, 2) == NULL && strstr(tg_error(), "root 2 is not a rank"), "bad root: %s", tg_error());
  EXPECT(tg_dist_allreduce(tg_cast(h, TG_F16), TG_DIST_SUM) == NULL && strstr(tg_error(), "float16"), "f16: %s", tg_error());
  EXPECT(tg_dist_allreduce(tg_cast(h, TG_I32), TG_DIST_MEAN) == NULL && strstr(tg_error(), "mean"), "int mean: %s", tg_error());
  /* in place on a view: realizing it gives it memory of its own (or it is
   * refused); the tensor it views keeps its values */
  tg_tensor *base = tg_reshape(tg_arange(0, 6, 1, TG_F32), TG_SHAPE(2, 3));
  tg_realize(base);
  tg_tensor *view = tg_permute(base, TG_AXES(1, 0));
  if (tg_dist_allreduce_inplace(view, TG_DIST_SUM) == 0) {
    expect_tensor(view, (float[]){ 0, 6, 2, 8, 4, 10 }, 6 * sizeof(float), "in place on a permuted view");
    expect_tensor(base, (float[]){ 0, 1, 2, 3, 4, 5 }, 6 * sizeof(float), "the viewed tensor unchanged");
  } else {
    EXPECT(strstr(tg_error(), "not contiguous"), "view: %s", tg_error());
  }
  EXPECT(tg_dist_barrier() == 0, "barrier: %s", tg_error());
  free(g);
  printf("rank %d of %d (%s): %d checks, %d failed\n", tg_dist_rank(), tg_dist_size(), tg_dist_backend(), checks, failures);
  return failures ? 1 : 0;
}

/* Point to point: rank 0 sends every other rank two messages, which
 * arrive whole and in order; a rank cannot send to itself. */
static void check_send_recv(void) {
  int r = tg_dist_rank(), n = tg_dist_size();
  float a[3] = { 1, 2, 3 }, b[2] = { 4, 5 }, got[3] = { 0 };
  if (r == 0) {
    for (int d = 1; d < n; d++) {
      EXPECT(tg_dist_send_host(a, sizeof a, d) == 0, "send to %d: %s", d, tg_error());
      EXPECT(tg_dist_send_host(b, sizeof b, d) == 0, "send to %d: %s", d, tg_error());
    }
  } else {
    EXPECT(tg_dist_recv_host(got, sizeof a, 0) == 0 && !memcmp(got, a, sizeof a), "first message: %s", tg_error());
    EXPECT(tg_dist_recv_host(got, sizeof b, 0) == 0 && !memcmp(got, b, sizeof b), "second message: %s", tg_error());
  }
  EXPECT(tg_dist_send_host(a, sizeof a, r) < 0 && strstr(tg_error(), "is not another rank"), "send to itself: %s", tg_error());
}

static int argmax(const float *x, int n) {
  int best = 0;
  for (int i = 1; i < n; i++) if (x[i] > x[best]) best = i;
  return best;
}

/* the largest |a - b| against the logits' scale */
static void expect_logits(const float *a, const float *b, int n, const char *what, int step) {
  float worst = 0, scale = 1;
  for (int i = 0; i < n; i++) {
    float d = a[i] > b[i] ? a[i] - b[i] : b[i] - a[i], m = a[i] > 0 ? a[i] : -a[i];
    if (d > worst) worst = d;
    if (m > scale) scale = m;
  }
  EXPECT(worst <= 1e-5f * scale, "%s step %d: logits differ by %g (scale %g)", what, step, worst, scale);
}

/* path with its layers split over the ranks (tg_llm_opts.split_layers)
 * against the same file whole in this process: the logits of a prompt and
 * of 8 greedy steps on every rank; a world with more ranks than layers is
 * refused on every rank, and so are the calls the split does not cover. */
static void check_llm_split(const char *path) {
  static const int32_t prompt[] = { 1, 5, 9, 13, 17, 21, 25 };
  tg_llm *one = tg_llm_load(path, &(tg_llm_opts){ .cache_type = "f32" });
  tg_llm *sp = tg_llm_load(path, &(tg_llm_opts){ .cache_type = "f32", .split_layers = true });
  int L = one ? tg_llm_config_of(one)->n_layers : 0;
  if (one && L < tg_dist_size()) {
    EXPECT(!sp && strstr(tg_error(), "layers cannot split over"), "%s: %d layers over %d ranks: %s", path, L, tg_dist_size(), sp ? "loaded" : tg_error());
    tg_llm_free(one); tg_llm_free(sp);
    return;
  }
  EXPECT(one && sp, "%s: load: %s", path, tg_error());
  if (one && sp) {
    int V = tg_llm_config_of(one)->n_vocab;
    float *a = malloc(sizeof(float) * (size_t)V), *b = malloc(sizeof(float) * (size_t)V);
    EXPECT(tg_llm_eval(one, prompt, 7, a) == 0 && tg_llm_eval(sp, prompt, 7, b) == 0, "%s: eval: %s", path, tg_error());
    expect_logits(a, b, V, path, 0);
    for (int step = 1; step <= 8; step++) {
      int32_t t = argmax(a, V);
      EXPECT(argmax(b, V) == t, "%s step %d: greedy token %d, one process %d", path, step, argmax(b, V), t);
      EXPECT(tg_llm_eval(one, &t, 1, a) == 0 && tg_llm_eval(sp, &t, 1, b) == 0, "%s: eval: %s", path, tg_error());
      expect_logits(a, b, V, path, step);
    }
    EXPECT(tg_llm_eval_all(sp, prompt, 2, a) < 0 && strstr(tg_error(), "split over ranks"), "%s: eval_all: %s", path, tg_error());
    free(a); free(b);
  }
  tg_llm_free(one); tg_llm_free(sp);
  EXPECT(!tg_llm_load(path, &(tg_llm_opts){ .split_layers = true, .devices = "CPU:0,CPU:1" }) && strstr(tg_error(), "not both"), "%s: with devices: %s", path, tg_error());
}

static int run_llm_split(int n, char **paths) {
  check_send_recv();
  for (int i = 0; i < n; i++) check_llm_split(paths[i]);
  printf("rank %d of %d: llm split: %d checks, %d failed\n", tg_dist_rank(), tg_dist_size(), checks, failures);
  return failures ? 1 : 0;
}

int main(int argc, char **argv) {
  if (argc < 2) { fprintf(stderr, "usage: dist_worker allreduce GOLDEN | llm_split MODEL... | die | hang\n"); return 2; }
  if (tg_dist_init() < 0) { fprintf(stderr, "tg_dist_init: %s\n", tg_error()); return 1; }
  int rc = 0;
  if (!strcmp(argv[1], "allreduce") && argc > 2) {
    rc = run_allreduce(argv[2]);
  } else if (!strcmp(argv[1], "llm_split") && argc > 2) {
    rc = run_llm_split(argc - 2, argv + 2);
  } else if (!strcmp(argv[1], "die") || !strcmp(argv[1], "hang")) {
    float x[4] = { 1, 2, 3, 4 };
    if (tg_dist_rank() == 1) {
      if (argv[1][0] == 'd') raise(SIGKILL);
      sleep(120);
      return 0;
    }
    rc = tg_dist_allreduce_host(x, 4, TG_F32, TG_DIST_SUM);
    printf("rank 0: the allreduce returned %d (%s)\n", rc, rc ? tg_error() : "no error");
    rc = 3;   /* it must not come back normally */
  } else {
    fprintf(stderr, "dist_worker: unknown mode '%s'\n", argv[1]);
    rc = 2;
  }
  if (tg_dist_finalize() < 0) { fprintf(stderr, "tg_dist_finalize: %s\n", tg_error()); rc = 1; }
  /* MPI starts once per process: a second init is an error, not an abort */
  if (rc == 0 && (tg_dist_init() == 0 || !strstr(tg_error(), "cannot start again"))) { fprintf(stderr, "init after finalize: %s\n", tg_error()); rc = 1; }
  return rc;
}
