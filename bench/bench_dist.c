/* bench_dist.c: the distributed layer (include/tg_dist.h) on 2 ranks of
 * this machine (Open MPI's mpirun; skipped without it).
 *
 *   bench dist_allreduce_100MB ranks=2 tg_gbs=.. tg_host_gbs=.. mpi_gbs=.. ratio=tg/mpi
 *     a 100 MB float32 sum: tg_dist_allreduce_inplace on a CPU tensor
 *     (tg_gbs) and tg_dist_allreduce_host on a host array (tg_host_gbs),
 *     beside a plain MPI_Allreduce (MPI_IN_PLACE, MPI_FLOAT, MPI_SUM) on
 *     the same array in the same processes, as osu_allreduce times it; GB/s
 *     = bytes of the buffer / seconds per allreduce (the median of
 *     BENCH_DIST_REPS, default 7). The result is checked.
 *   bench dist_fmnist_step ranks=2 threads=1 samples_s_2x1=.. samples_s_1x1=.. ratio=2x1/1x1
 *     the Fashion-MNIST training step (examples/fashion_mnist.c, batch
 *     512, FMNIST_STEPS steps, default 30) on 2 ranks of 1 thread each
 *     (--distributed) against 1 process of 1 thread: samples/s after the
 *     JIT's warm-up. Skipped without the dataset or the example.
 *
 * Started plainly it runs itself under mpirun for the first line; the
 * ranks' part is `bench_dist --ranks`. */
#include <dlfcn.h>
#include "bench.h"
#include "tg_dist.h"

#ifndef BENCH_BUILD
#define BENCH_BUILD "build"   /* the Makefile passes $(BUILD) */
#endif
#define MPIRUN "mpirun --allow-run-as-root --oversubscribe -np 2 "
#define NFLOAT (25 * 1000 * 1000)   /* 100 MB */

static int cmp_double(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return x < y ? -1 : x > y; }
static double median(double *v, int n) { qsort(v, (size_t)n, sizeof *v, cmp_double); return v[n / 2]; }

/* Open MPI's own call, from the libmpi tg_dist_init loaded (RTLD_GLOBAL) */
typedef int (*mpi_allreduce_fn)(const void *, void *, int, void *, void *, void *);

static int ranks_part(void) {
  if (tg_dist_init() < 0) { printf("bench FAIL dist_allreduce_100MB: %s\n", tg_error()); return 1; }
  int rank = tg_dist_rank(), reps = getenv("BENCH_DIST_REPS") ? atoi(getenv("BENCH_DIST_REPS")) : 7;
  if (reps < 1 || reps > 100) reps = 7;
  mpi_allreduce_fn mpi_allreduce = NULL;
  void *sym = dlsym(RTLD_DEFAULT, "MPI_Allreduce");
  memcpy(&mpi_allreduce, &sym, sizeof sym);
  void *comm = dlsym(RTLD_DEFAULT, "ompi_mpi_comm_world"), *flt = dlsym(RTLD_DEFAULT, "ompi_mpi_float"), *sum = dlsym(RTLD_DEFAULT, "ompi_mpi_op_sum");
  if (tg_dist_size() != 2 || !mpi_allreduce || !comm || !flt || !sum) {
    if (rank == 0) printf("bench dist_allreduce_100MB skipped reason=%s\n", tg_dist_size() != 2 ? "not_2_ranks" : "no_open_mpi_symbols");
    tg_dist_finalize();
    return 0;
  }
  float *host = malloc(sizeof(float) * NFLOAT);
  for (int i = 0; i < NFLOAT; i++) host[i] = (float)((i + rank) % 7);
  tg_tensor *t = tg_from_data(host, TG_SHAPE(NFLOAT), TG_F32);
  tg_realize(t);
  double tt[100], th[100], tm[100];
  int bad = 0;
  /* a warm-up of each, then reps rounds of the three, interleaved */
  if (tg_dist_allreduce_inplace(t, TG_DIST_MAX) < 0 || tg_dist_allreduce_host(host, NFLOAT, TG_F32, TG_DIST_MAX) < 0 ||
      mpi_allreduce((void *)1, host, NFLOAT, flt, sum, comm) != 0) bad = 1;
  for (int r = 0; r < reps && !bad; r++) {
    tg_dist_barrier();
    double t0 = bench_now();
    bad |= tg_dist_allreduce_inplace(t, TG_DIST_MAX) < 0;   /* max: the values stay put */
    tt[r] = bench_now() - t0;
    tg_dist_barrier();
    t0 = bench_now();
    bad |= tg_dist_allreduce_host(host, NFLOAT, TG_F32, TG_DIST_MAX) < 0;
    th[r] = bench_now() - t0;
    tg_dist_barrier();
    t0 = bench_now();
    bad |= mpi_allreduce((void *)1, host, NFLOAT, flt, sum, comm) != 0;   /* MPI_IN_PLACE */
    tm[r] = bench_now() - t0;
  }
  /* check: the tensor holds max over ranks of (i + rank) % 7 */
  float got[64];
  if (!bad && tg_data(tg_shrink(t, (int64_t[]){ 0 }, (int64_t[]){ 64 }), got, sizeof got) == 0) {
    for (int i = 0; i < 64; i++) {
      float a = (float)(i % 7), b = (float)((i + 1) % 7);
      if (got[i] != (a > b ? a : b)) bad = 1;
    }
  } else bad = 1;
  if (rank == 0) {
    if (bad) printf("bench FAIL dist_allreduce_100MB: %s\n", tg_error());
    else {
      double gb = (double)NFLOAT * sizeof(float) / 1e9, a = gb / median(tt, reps), h = gb / median(th, reps), m = gb / median(tm, reps);
      printf("bench dist_allreduce_100MB ranks=2 reps=%d tg_gbs=%.2f tg_host_gbs=%.2f mpi_gbs=%.2f mpi=%s ratio=%.3f\n",
             reps, a, h, m, "open_mpi", a / m);
    }
  }
  free(host);
  tg_dist_finalize();
  return bad;
}

static int run_rate(const char *cmd, double *rate) {
  FILE *p = popen(cmd, "r");
  if (!p) return -1;
  char line[1024];
  int found = -1;
  while (fgets(line, sizeof line, p)) {
    char *s = strstr(line, "result ") ? strstr(line, "samples_per_s=") : NULL;
    if (s) { *rate = atof(s + 14); found = 0; }
  }
  return pclose(p) == 0 ? found : -1;
}

int main(int argc, char **argv) {
  if (argc > 1 && !strcmp(argv[1], "--ranks")) return ranks_part();
  if (system("mpirun --version >/dev/null 2>&1") != 0) {
    printf("bench dist_allreduce_100MB skipped reason=no_mpirun (Debian: openmpi-bin libopenmpi-dev)\n");
    printf("bench dist_fmnist_step skipped reason=no_mpirun\n");
    return 0;
  }
  char self[1024], cmd[2048];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) { printf("bench FAIL dist: cannot find its own program\n"); return 1; }
  self[n] = 0;
  fflush(stdout);
  snprintf(cmd, sizeof cmd, MPIRUN "%s --ranks", self);
  if (system(cmd) != 0) { printf("bench FAIL dist_allreduce_100MB: mpirun failed\n"); return 1; }

  const char *data = "/usr/share/datasets/fashion-mnist", *ex = BENCH_BUILD "/examples/fashion_mnist";
  int steps = getenv("FMNIST_STEPS") ? atoi(getenv("FMNIST_STEPS")) : 30;
  if (steps < 5) steps = 5;
  if (access(data, R_OK) != 0) { printf("bench dist_fmnist_step skipped reason=no-dataset (make train installs it)\n"); return 0; }
  if (access(ex, X_OK) != 0) { printf("bench dist_fmnist_step skipped reason=no-example (make %s)\n", ex); return 0; }
  double r2 = 0, r1 = 0;
  snprintf(cmd, sizeof cmd, "TG_THREADS=1 " MPIRUN "-x TG_THREADS %s %d --distributed --no-eval 2>/dev/null", ex, steps);
  if (run_rate(cmd, &r2) < 0) { printf("bench FAIL dist_fmnist_step: the 2-rank run printed no result\n"); return 1; }
  snprintf(cmd, sizeof cmd, "TG_THREADS=1 %s %d --no-eval 2>/dev/null", ex, steps);
  if (run_rate(cmd, &r1) < 0) { printf("bench FAIL dist_fmnist_step: the 1-process run printed no result\n"); return 1; }
  printf("bench dist_fmnist_step ranks=2 threads=1 steps=%d samples_s_2x1=%.1f samples_s_1x1=%.1f ratio=%.3f\n", steps, r2, r1, r1 > 0 ? r2 / r1 : 0);
  return 0;
}
