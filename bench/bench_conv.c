/* bench_conv.c: 2-D convolution, tg_conv2d against PyTorch on the CPU.
 *
 *   conv2d_32x64x56x56_k3  x (32, 64, 56, 56) float32, weight (64, 64, 3, 3),
 *                          padding 1, stride 1, no bias: the shape of a
 *                          ResNet-50 stage-1 3x3 layer
 *
 * The reference is bench/conv_torch.py (torch.nn.functional.conv2d in
 * inference mode, torch.set_num_threads(T) with T the threads tg uses),
 * run by this program with the same inputs (raw files in a temporary
 * directory); it prints torch's best time and writes its output back.
 * ratio = torch time / tg time: above 1, tg is faster (the same direction as
 * every other bench). tg's time is the kernel time from tg_get_counters()
 * (both sides allocate a fresh output per call). flops = 2*N*Cout*Cin*K*K*OH*OW.
 *
 * Checks: tg's output against a direct double-precision convolution at 4096
 * sampled points (inputs are multiples of 1/8, so tg's float sums are exact:
 * equality), and against torch's whole output (within 1e-3: torch may use
 * another algorithm). When torch cannot be imported (or python3 is missing)
 * the line is "bench conv2d skipped reason=... tg_ms=... tg_gflops=..." (tg
 * still runs and is checked). BENCH_PYTHON picks the interpreter (default python3).
 *
 * With BEAM=n the line is named ..._beamN (the first search of this kernel
 * takes about ten seconds; the choice is cached). */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "bench.h"

#ifndef BENCH_DIR
#define BENCH_DIR "bench"
#endif

enum { NB = 32, CIN = 64, COUT = 64, HW = 56, K = 3, PAD = 1, OHW = HW + 2 * PAD - K + 1 };

static void write_file(const char *name, const char *path, const void *data, size_t nbytes) {
  FILE *f = fopen(path, "wb");
  if (!f || fwrite(data, 1, nbytes, f) != nbytes || fclose(f) != 0) bench_fail(name, "writing %s failed", path);
}

static int read_file(const char *path, void *data, size_t nbytes) {
  FILE *f = fopen(path, "rb");
  if (!f) return -1;
  size_t got = fread(data, 1, nbytes, f);
  fclose(f);
  return got == nbytes ? 0 : -1;
}

static void remove_dir(const char *dir, const char *const *files, int n) {
  char path[4096];
  for (int i = 0; i < n; i++) {
    snprintf(path, sizeof path, "%s/%s", dir, files[i]);
    unlink(path);
  }
  rmdir(dir);
}

/* Runs conv_torch.py; returns torch's best time in seconds, or < 0 with
 * *skip set to the reason (torch or python missing). Exits on other failures. */
static double run_torch(const char *name, const char *dir, int threads, int reps, char *skip, size_t skipsz, char *version,
                        size_t versz) {
  const char *py = getenv("BENCH_PYTHON");
  if (!py || !*py) py = "python3";
  char cmd[8192];
  snprintf(cmd, sizeof cmd,
           "'%s' '%s/conv_torch.py' --n %d --cin %d --cout %d --hw %d --k %d --pad %d --threads %d --reps %d "
           "--x '%s/x.f32' --weight '%s/w.f32' --out '%s/y.f32' 2>&1",
           py, BENCH_DIR, NB, CIN, COUT, HW, K, PAD, threads, reps, dir, dir, dir);
  fflush(stdout);
  FILE *p = popen(cmd, "r");
  if (!p) bench_fail(name, "popen(%s) failed", py);
  char line[4096], last[4096] = "";
  double ms = -1;
  while (fgets(line, sizeof line, p)) {
    line[strcspn(line, "\n")] = 0;
    if (*line) snprintf(last, sizeof last, "%s", line);
    const char *t = strstr(line, "torch_ms=");
    if (t) {
      ms = atof(t + 9);
      const char *v = strstr(line, "torch=");
      snprintf(version, versz, "%s", v ? v + 6 : "?");
    }
    const char *s = strstr(line, "skip reason=");
    if (s) snprintf(skip, skipsz, "%s", s + 12);
  }
  int st = pclose(p);
  int code = st != -1 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  if (code == 3 && *skip) return -1;
  if (code == 127) { snprintf(skip, skipsz, "%s not found (BENCH_PYTHON picks the interpreter)", py); return -1; }
  if (code != 0 || ms <= 0) bench_fail(name, "conv_torch.py failed (exit %d): %s", code, last);
  return ms * 1e-3;
}

/* Direct convolution at one output point, in double. */
static double conv_at(const float *x, const float *w, int n, int co, int oy, int ox) {
  double s = 0;
  for (int ci = 0; ci < CIN; ci++)
    for (int ky = 0; ky < K; ky++)
      for (int kx = 0; kx < K; kx++) {
        int iy = oy + ky - PAD, ix = ox + kx - PAD;
        if (iy < 0 || iy >= HW || ix < 0 || ix >= HW) continue;
        s += (double)x[(((size_t)n * CIN + ci) * HW + iy) * HW + ix] * (double)w[((co * CIN + ci) * K + ky) * K + kx];
      }
  return s;
}

int main(void) {
  char name[96];
  snprintf(name, sizeof name, "conv2d_%dx%dx%dx%d_k%d%s", NB, CIN, HW, HW, K, bench_name_suffix());
  const int threads = bench_threads(), reps = bench_reps(3);
  const size_t nx = (size_t)NB * CIN * HW * HW, nw = (size_t)COUT * CIN * K * K, ny = (size_t)NB * COUT * OHW * OHW;
  const double gflop = 2.0 * NB * COUT * CIN * K * K * (double)OHW * OHW * 1e-9;
  float *hx = bench_alloc_f32(nx), *hw = bench_alloc_f32(nw), *got = bench_alloc_f32(ny), *ref = bench_alloc_f32(ny);
  for (size_t i = 0; i < nx; i++) hx[i] = bench_eighths(i, 5);
  for (size_t i = 0; i < nw; i++) hw[i] = bench_eighths(i, 6);

  /* tg: repetition 0 warms up (compiles, or searches with BEAM) */
  tg_scope_begin();
  tg_tensor *x = tg_from_data(hx, TG_SHAPE(NB, CIN, HW, HW), TG_F32);
  tg_tensor *w = tg_from_data(hw, TG_SHAPE(COUT, CIN, K, K), TG_F32);
  if (!x || !w) bench_fail(name, "tg_from_data failed");
  tg_conv_opts o = { .padding = { PAD, PAD, PAD, PAD } };
  bench_tg_run first = { 0 }, best = { 1e30, 1e30, 0, 0 };
  int64_t compiles = 0;
  for (int r = 0; r <= reps; r++) {
    tg_scope_begin();
    tg_tensor *y = tg_conv2d(x, w, NULL, &o);
    bench_tg_run t = bench_tg_realize(y, name);
    if (r == 0) {
      first = t;
      if (tg_data(y, got, ny * sizeof(float)) < 0) bench_fail(name, "tg_data failed");
    } else {
      compiles += t.compiled;
      if (t.kernel_s < best.kernel_s) best = t;
    }
    tg_scope_end();
  }
  tg_scope_end();
  if (best.kernel_s <= 0) bench_fail(name, "no kernel time recorded (is TG_DEVICE=NULL set?)");

  /* sampled exact check: the corners of the first image, then scattered
   * points (about 1 in 7 on the padded border) */
  for (size_t s = 0; s < 4096; s++) {
    size_t i = s < 4 ? (s & 1 ? OHW - 1 : 0) + (s & 2 ? (size_t)(OHW - 1) * OHW : 0) : (s * 2654435761u) % ny;
    int ox = (int)(i % OHW), oy = (int)(i / OHW % OHW), co = (int)(i / ((size_t)OHW * OHW) % COUT),
        n = (int)(i / ((size_t)OHW * OHW * COUT));
    double want = conv_at(hx, hw, n, co, oy, ox);
    if ((double)got[i] != want)
      bench_fail(name, "wrong result at (%d, %d, %d, %d): tg %.9g, direct %.9g", n, co, oy, ox, got[i], want);
  }

  /* torch, on the same inputs */
  char tmpl[4096];
  const char *tmp = getenv("TMPDIR");
  snprintf(tmpl, sizeof tmpl, "%s/tg_bench_conv_XXXXXX", tmp && *tmp ? tmp : "/tmp");
  const char *dir = mkdtemp(tmpl);
  if (!dir) bench_fail(name, "mkdtemp(%s) failed", tmpl);
  static const char *const files[] = { "x.f32", "w.f32", "y.f32" };
  char path[4200];
  snprintf(path, sizeof path, "%s/x.f32", dir);
  write_file(name, path, hx, nx * sizeof(float));
  snprintf(path, sizeof path, "%s/w.f32", dir);
  write_file(name, path, hw, nw * sizeof(float));
  snprintf(path, sizeof path, "%s/y.f32", dir);
  int fd = open(path, O_CREAT | O_RDWR | O_TRUNC, 0600);
  if (fd < 0 || ftruncate(fd, (off_t)(ny * sizeof(float))) != 0) bench_fail(name, "creating %s failed", path);
  close(fd);
  bench_settle(0.01);
  char skip[512] = "", version[128] = "";
  double torch_s = run_torch(name, dir, threads, reps < 3 ? 3 : reps, skip, sizeof skip, version, sizeof version);
  if (torch_s < 0) {
    remove_dir(dir, files, 3);
    printf("bench conv2d skipped reason=%s tg_ms=%.2f tg_gflops=%.2f\n", bench_token(skip), best.kernel_s * 1e3,
           gflop / best.kernel_s);
    return 0;
  }
  int rc = read_file(path, ref, ny * sizeof(float));
  remove_dir(dir, files, 3);
  if (rc < 0) bench_fail(name, "reading torch's output failed");
  double maxdiff = 0;
  for (size_t i = 0; i < ny; i++) {
    double d = (double)got[i] - (double)ref[i];
    if (d < 0) d = -d;
    if (!(d <= 1e-3))
      bench_fail(name, "tg and torch differ at %zu: tg %.9g, torch %.9g", i, got[i], ref[i]);
    if (d > maxdiff) maxdiff = d;
  }
  printf("bench %s n=%d cin=%d cout=%d hw=%d k=%d pad=%d opts=%s threads=%d kernels=%lld first_ms=%.1f tg_ms=%.2f "
         "tg_wall_ms=%.2f tg_gflops=%.2f torch_ms=%.2f torch_gflops=%.2f torch=%s maxdiff=%.2g recompiles=%lld "
         "ratio=%.3f\n",
         name, NB, CIN, COUT, HW, K, PAD, bench_opts_label(), threads, (long long)best.kernels, first.wall_s * 1e3,
         best.kernel_s * 1e3, best.wall_s * 1e3, gflop / best.kernel_s, torch_s * 1e3, gflop / torch_s, version, maxdiff,
         (long long)compiles, torch_s / best.kernel_s);
  fflush(stdout);
  free(hx); free(hw); free(got); free(ref);
  return 0;
}
