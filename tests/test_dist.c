/* test_dist.c: several CPU devices in one process, and the distributed
 * layer (include/tg_dist.h): the world of one, the errors of a missing or
 * foreign libmpi, and, where Open MPI's mpirun is present, 2 ranks on this
 * machine: allreduce and broadcast against numpy's goldens
 * (tests/gen/gen_dist.py), a rank that dies or hangs, and data-parallel
 * Fashion-MNIST against one process on the same global batch. The MPI
 * tests start build/tests/dist_worker and build/examples/fashion_mnist
 * (found next to $TG_BIN) and skip with a message where mpirun is absent. */
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "test.h"
#include "tg_dist.h"

/* ASAN_OPTIONS: in a SAN=1 build, Open MPI's own allocations must not
 * count as the ranks' leaks */
#define MPIRUN(seconds) "ASAN_OPTIONS=detect_leaks=0 timeout " seconds " mpirun --allow-run-as-root --oversubscribe -np 2 -x ASAN_OPTIONS "

TEST(dist_cpu_devices_compute_and_copy) {
  tg_device_info info[32];
  int n = tg_devices(info, 32, NULL);
  bool listed = false;
  for (int i = 0; i < n && i < 32; i++) listed |= !strcmp(info[i].name, "CPU:1");
  CHECK_MSG(listed, "tg_devices does not list CPU:1");
  enum { R = 33, K = 20, C = 17 };
  static float a[R * K], b[K * C];
  for (int i = 0; i < R * K; i++) a[i] = (float)((i * 7) % 23) * 0.125f - 1;
  for (int i = 0; i < K * C; i++) b[i] = (float)((i * 5) % 19) * 0.25f - 2;
  tg_scope_begin();
  tg_tensor *x0 = tg_from_data(a, TG_SHAPE(R, K), TG_F32), *w0 = tg_from_data(b, TG_SHAPE(K, C), TG_F32);
  tg_tensor *x1 = tg_to(x0, "CPU:1"), *w1 = tg_to(w0, "cpu:1");
  CHECK_OK(x1);
  CHECK(x1 && !strcmp(tg_device_of(x1), "CPU:1"));
  /* the same computation on each device */
  tg_tensor *y0 = tg_softmax(tg_relu(tg_matmul(x0, w0)), -1), *y1 = tg_softmax(tg_relu(tg_matmul(x1, w1)), -1);
  CHECK(y1 && !strcmp(tg_device_of(y1), "CPU:1"));
  static float g0[R * C], g1[R * C], back[R * C];
  CHECK(tg_data(y0, g0, sizeof g0) == 0);
  CHECK_MSG(tg_data(y1, g1, sizeof g1) == 0, "%s", tg_error());
  CHECK_MSG(memcmp(g0, g1, sizeof g0) == 0, "CPU:1 computes other values than CPU");
  /* copies both ways: CPU:1 -> CPU, and CPU -> CPU:1 -> CPU */
  CHECK(tg_data(tg_to(y1, "CPU"), back, sizeof back) == 0 && memcmp(back, g0, sizeof back) == 0);
  tg_tensor *round = tg_to(tg_to(tg_muls(x0, 3), "CPU:1"), "CPU");
  static float r[R * K];
  CHECK(tg_data(round, r, sizeof r) == 0);
  for (int i = 0; i < R * K; i++) CHECK_NEAR(r[i], a[i] * 3, 0);
  /* one op over both is refused, naming both */
  CHECK(tg_add(x0, x1) == NULL);
  CHECK_MSG(strstr(tg_error(), "different devices (CPU and CPU:1)"), "%s", tg_error());
  tg_scope_end();
}

TEST(dist_world_of_one_and_missing_mpi) {
  float v[3] = { 1.5f, -2, 3 };
  tg_dist_finalize();
  CHECK(tg_dist_rank() == 0 && tg_dist_size() == 1);
  CHECK(tg_dist_allreduce_host(v, 3, TG_F32, TG_DIST_SUM) < 0);
  CHECK_MSG(strstr(tg_error(), "call tg_dist_init first"), "%s", tg_error());
  /* an MPI library that is not there, or not Open MPI: clear errors */
  setenv("TG_DIST", "mpi", 1);
  setenv("TG_MPI_LIB", "/nonexistent/libmpi.so.40", 1);
  CHECK(tg_dist_init() < 0);
  CHECK_MSG(strstr(tg_error(), "cannot load /nonexistent/libmpi.so.40") && strstr(tg_error(), "openmpi-bin"), "%s", tg_error());
  setenv("TG_MPI_LIB", "libm.so.6", 1);
  CHECK(tg_dist_init() < 0);
  CHECK_MSG(strstr(tg_error(), "not an MPI-3 library"), "%s", tg_error());
  unsetenv("TG_MPI_LIB");
  unsetenv("TG_DIST");
  /* outside mpirun: a world of one, collectives leave the data alone */
  CHECK_MSG(tg_dist_init() == 0, "%s", tg_error());
  CHECK(tg_dist_rank() == 0 && tg_dist_size() == 1);
  CHECK(!strcmp(tg_dist_backend(), "single process"));
  tg_scope_begin();
  tg_tensor *t = tg_from_data(v, TG_SHAPE(3), TG_F32);
  float out[3];
  CHECK(tg_data(tg_dist_allreduce(t, TG_DIST_MEAN), out, sizeof out) == 0 && memcmp(out, v, sizeof v) == 0);
  CHECK(tg_dist_allreduce_inplace(t, TG_DIST_MAX) == 0 && tg_data(t, out, sizeof out) == 0 && memcmp(out, v, sizeof v) == 0);
  CHECK(tg_dist_broadcast_inplace(t, 0) == 0);
  CHECK(tg_dist_broadcast(t, 1) == NULL);
  CHECK_MSG(strstr(tg_error(), "root 1 is not a rank of this world of 1"), "%s", tg_error());
  CHECK(tg_dist_allreduce(tg_cast(t, TG_BF16), TG_DIST_SUM) == NULL);
  CHECK_MSG(strstr(tg_error(), "bfloat16 is not supported"), "%s", tg_error());
  CHECK(tg_dist_allreduce(NULL, TG_DIST_SUM) == NULL);
  CHECK(tg_dist_allreduce_host(v, -1, TG_F32, TG_DIST_SUM) < 0 && strstr(tg_error(), "negative count"));
  CHECK(tg_dist_allreduce_host(v, 3, TG_F32, (tg_dist_op)7) < 0 && strstr(tg_error(), "unknown op 7"));
  CHECK(tg_dist_barrier() == 0);
  tg_scope_end();
  CHECK(tg_dist_finalize() == 0);
  CHECK(tg_dist_size() == 1);
}

/* ---------------------------------------------------------------- under mpirun */

static bool have_mpirun(void) { return system("mpirun --version >/dev/null 2>&1") == 0; }

/* Runs cmd (stderr too) into out (test_run_capture); also the seconds it took. */
static int run_cmd(const char *cmd, char *out, size_t n, double *seconds) {
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  int st = test_run_capture(cmd, out, n);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  *seconds = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
  return st;
}

#define NEED_MPI(worker) \
  const char *bd = test_build_dir(); \
  if (!bd) SKIP("TG_BIN does not name the tg binary (make test sets it)"); \
  if (!have_mpirun()) SKIP("no mpirun (Debian: apt-get install openmpi-bin libopenmpi-dev)"); \
  char worker[1200]; \
  snprintf(worker, sizeof worker, "%s/tests/dist_worker", bd); \
  if (access(worker, X_OK) != 0) SKIP("%s is not built (make %s)", worker, worker + 3)

TEST(dist_mpi_allreduce_goldens) {
  NEED_MPI(worker);
  static char out[65536];
  char cmd[2048];
  double s;
  snprintf(cmd, sizeof cmd, MPIRUN("300") "%s allreduce goldens/dist_allreduce.bin", worker);
  int rc = run_cmd(cmd, out, sizeof out, &s);
  CHECK_MSG(rc == 0, "exit status %d:\n%s", rc, out);
  CHECK_MSG(strstr(out, "rank 0 of 2 (Open MPI") && strstr(out, "rank 1 of 2 (Open MPI"), "%s", out);
  int ok = 0;
  for (const char *p = strstr(out, "checks, 0 failed"); p; p = strstr(p + 1, "checks, 0 failed")) ok++;
  CHECK_MSG(ok == 2, "%s", out);
  printf("  info: 2 ranks, allreduce and broadcast goldens in %.1f s\n", s);
}

TEST(dist_mpi_rank_dies_or_hangs) {
  NEED_MPI(worker);
  static char out[65536];
  char cmd[2048];
  double s;
  /* rank 1 is killed: mpirun ends rank 0, waiting in an allreduce, and fails */
  snprintf(cmd, sizeof cmd, MPIRUN("120") "%s die", worker);
  int rc = run_cmd(cmd, out, sizeof out, &s);
  CHECK_MSG(rc != 0 && rc != 124 && s < 120, "exit status %d after %.1f s:\n%s", rc, s, out);
  CHECK_MSG(!strstr(out, "the allreduce returned 0"), "%s", out);
  /* rank 1 hangs: rank 0's watchdog ends it after TG_DIST_TIMEOUT */
  snprintf(cmd, sizeof cmd, "TG_DIST_TIMEOUT=3 " MPIRUN("120") "-x TG_DIST_TIMEOUT %s hang", worker);
  rc = run_cmd(cmd, out, sizeof out, &s);
  CHECK_MSG(rc == 70 && s < 60, "exit status %d after %.1f s:\n%s", rc, s, out);
  CHECK_MSG(strstr(out, "tg_dist: rank 0 of 2: allreduce of 4 float32 (sum) has waited 3 s for the other ranks"), "%s", out);
}

/* Layers split over the ranks (pipeline parallel): the library on the
 * families' tiny models against one process (dist_worker llm_split), over
 * 2 ranks and over 3 (qwen35's 4 layers as 1, 1, 2; the 2-layer llama
 * refused); `tg run --split layers` gives one process's greedy text
 * (stories260K, whose one-process text test_llm.c checks against
 * llama.cpp's), and a bad --split value or an unloadable model fails on
 * every rank. */
TEST(dist_mpi_llm_split_layers) {
  NEED_MPI(worker);
  static char out[65536], one[8192];
  char cmd[4096];
  double s;
  snprintf(cmd, sizeof cmd, MPIRUN("600") "%s llm_split goldens/llm_llama.gguf goldens/llm_qwen35.gguf goldens/llm_gemma2.gguf "
           "goldens/llm_deepseek2.gguf goldens/llm_qwen3moe.gguf goldens/llm_phi3.gguf goldens/llm_gptoss.gguf", worker);
  int rc = run_cmd(cmd, out, sizeof out, &s);
  CHECK_MSG(rc == 0 && strstr(out, "rank 0 of 2: llm split:") && strstr(out, "rank 1 of 2: llm split:"), "exit status %d:\n%s", rc, out);
  snprintf(cmd, sizeof cmd, "ASAN_OPTIONS=detect_leaks=0 timeout 600 mpirun --allow-run-as-root --oversubscribe -np 3 -x ASAN_OPTIONS "
           "%s llm_split goldens/llm_qwen35.gguf goldens/llm_llama.gguf", worker);
  rc = run_cmd(cmd, out, sizeof out, &s);
  CHECK_MSG(rc == 0 && strstr(out, "rank 2 of 3: llm split:"), "3 ranks: exit status %d:\n%s", rc, out);
  const char *model = "../../shared/testdata/models/stories260K.gguf";
  if (access(model, R_OK) != 0) SKIP("%s is absent", model);
  const char *args = "-p 'Once upon a time' -n 40 --temp 0";
  snprintf(cmd, sizeof cmd, "timeout 600 %s/tg run -m %s %s 2>&1", bd, model, args);
  rc = run_cmd(cmd, one, sizeof one, &s);
  CHECK_MSG(rc == 0 && strlen(one) > 40, "one process: exit status %d:\n%s", rc, one);
  snprintf(cmd, sizeof cmd, MPIRUN("600") "%s/tg run -m %s --split layers %s", bd, model, args);
  rc = run_cmd(cmd, out, sizeof out, &s);
  CHECK_MSG(rc == 0 && !strcmp(out, one), "2 ranks: exit status %d:\n%s\none process:\n%s", rc, out, one);
  printf("  info: tg run --split layers over 2 ranks in %.1f s: %.40s...\n", s, out);
  snprintf(cmd, sizeof cmd, MPIRUN("120") "%s/tg run -m %s --split rows %s", bd, model, args);
  rc = run_cmd(cmd, out, sizeof out, &s);
  CHECK_MSG(rc != 0 && strstr(out, "--split rows: only 'layers'"), "exit status %d:\n%s", rc, out);
  snprintf(cmd, sizeof cmd, MPIRUN("120") "%s/tg run -m goldens/llm_llama.gguf --split layers %s", bd, args);
  rc = run_cmd(cmd, out, sizeof out, &s);
  CHECK_MSG(rc == 1 && s < 100 && strstr(out, "no tokenizer"), "exit status %d after %.1f s:\n%s", rc, s, out);
}

/* "loss STEP VALUE" lines of a run -> losses[STEP]; how many */
static int read_losses(const char *out, double *losses, int max) {
  int n = 0;
  for (const char *p = strstr(out, "loss "); p; p = strstr(p + 1, "\nloss ")) {
    if (*p == '\n') p++;
    int step;
    double v;
    if (sscanf(p, "loss %d %lf", &step, &v) == 2 && step == n && n < max) losses[n++] = v;
  }
  return n;
}

TEST(dist_mpi_fmnist_same_loss_as_one_process) {
  NEED_MPI(worker);
  const char *data = "/usr/share/datasets/fashion-mnist";
  if (access(data, R_OK) != 0) SKIP("no %s (Debian: dataset-fashion-mnist)", data);
  char ex[1200];
  snprintf(ex, sizeof ex, "%s/examples/fashion_mnist", bd);
  if (access(ex, X_OK) != 0) SKIP("%s is not built", ex);
  enum { STEPS = 5 };
  static char out[65536];
  char cmd[2048];
  double s, two[STEPS], one[STEPS], solo[STEPS], plain[STEPS];
  /* 2 ranks, half of each batch of 64 each */
  snprintf(cmd, sizeof cmd, "TG_THREADS=1 " MPIRUN("600") "-x TG_THREADS %s %d --distributed --batch 64 --print-loss --no-eval", ex, STEPS);
  int rc = run_cmd(cmd, out, sizeof out, &s);
  CHECK_MSG(rc == 0 && read_losses(out, two, STEPS) == STEPS, "exit status %d:\n%s", rc, out);
  /* one process, the same batches in 2 parts */
  snprintf(cmd, sizeof cmd, "timeout 600 %s %d --split 2 --batch 64 --print-loss --no-eval", ex, STEPS);
  rc = run_cmd(cmd, out, sizeof out, &s);
  CHECK_MSG(rc == 0 && read_losses(out, one, STEPS) == STEPS, "exit status %d:\n%s", rc, out);
  for (int i = 0; i < STEPS; i++) CHECK_MSG(fabs(two[i] - one[i]) <= 1e-4 * fabs(one[i]), "step %d: 2 ranks %.9g, one process %.9g", i, two[i], one[i]);
  /* --distributed outside mpirun is a world of one: the plain run's curve.
   * At batch 32 its kernels are the ones the runs above compiled. */
  snprintf(cmd, sizeof cmd, "timeout 600 %s %d --distributed --batch 32 --print-loss --no-eval", ex, STEPS);
  rc = run_cmd(cmd, out, sizeof out, &s);
  CHECK_MSG(rc == 0 && read_losses(out, solo, STEPS) == STEPS, "exit status %d:\n%s", rc, out);
  snprintf(cmd, sizeof cmd, "timeout 600 %s %d --batch 32 --print-loss --no-eval", ex, STEPS);
  rc = run_cmd(cmd, out, sizeof out, &s);
  CHECK_MSG(rc == 0 && read_losses(out, plain, STEPS) == STEPS, "exit status %d:\n%s", rc, out);
  for (int i = 0; i < STEPS; i++) CHECK_MSG(fabs(solo[i] - plain[i]) <= 1e-5 * fabs(plain[i]), "step %d: world of one %.9g, plain %.9g", i, solo[i], plain[i]);
  printf("  info: loss after %d steps: 2 ranks %.6f, one process in 2 parts %.6f; batch 32: world of one %.6f, plain %.6f\n", STEPS, two[STEPS - 1], one[STEPS - 1], solo[STEPS - 1], plain[STEPS - 1]);
}
