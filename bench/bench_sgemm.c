/* bench_sgemm.c: float32 matrix multiply, tg_matmul against OpenBLAS,
 * PyTorch and a hand-written OpenMP loop on the CPU, and against cuBLAS on
 * CUDA devices.
 *
 *   sgemm_N       C = A @ B, N x N float32 (N = 512, 1024, 2048), against
 *                 OpenBLAS's cblas_sgemm on as many threads as tg uses.
 *                 Built only when the Makefile finds OpenBLAS (it then
 *                 defines BENCH_HAVE_OPENBLAS and links -lopenblas); without
 *                 it one line "bench sgemm_openblas skipped reason=..."
 *   sgemm_torch_N the same N against torch.matmul (bench/matmul_torch.py,
 *                 torch.set_num_threads(T) with T the threads tg uses) when
 *                 torch can be imported (BENCH_PYTHON picks the interpreter,
 *                 default python3); else "bench sgemm_torch skipped ..."
 *   sgemm_loop_N  the same against the i-k-j triple loop with OpenMP over the
 *                 rows (the inner j loop vectorizes): always runs
 *   sgemm_f32_DEV, sgemm_f16_DEV
 *                 on each GPU/OpenCL device present (CL, CUDA; absent ones
 *                 print "bench sgemm_DEV skipped reason=device_absent"):
 *                 N = 4096 on CUDA, 512 elsewhere (BENCH_SGEMM_DEV_N
 *                 overrides). f32: tg_matmul of float32; f16: float16 inputs
 *                 multiplied and summed in float32,
 *                 tg_matmul(tg_cast(a16, F32), tg_cast(b16, F32)). On CUDA
 *                 against cuBLAS (cublasSgemm; cublasGemmEx with CUDA_R_16F
 *                 inputs, a CUDA_R_32F output and CUBLAS_COMPUTE_32F),
 *                 libcublas opened with dlopen (CUDA_PATH, the loader path,
 *                 /usr/local/cuda): never linked, so the build needs no CUDA.
 *                 Without cuBLAS (OpenCL, PoCL here) the line gives
 *                 correctness and time only (ref=none, no ratio).
 *
 * ratio = tg GFLOPS / reference GFLOPS, with 2*N^3 flops. tg's time is the
 * kernel time from tg_get_counters() (on devices: every launch timed with the
 * device's events, TG_KERNEL_TIMES=1); the reference's is the wall time of
 * its call (cuBLAS: CUDA events around it; torch: its own best time, taken
 * in its process after tg's runs). Each repetition builds the lazy matmul
 * anew (the kernel compiles once, in the warm-up repetition, which is not
 * counted); tg and the reference take turns and the best of each counts.
 *
 * The inputs are multiples of 1/8 in [-1, 1], so every product and partial
 * sum is exact in float32 (and the inputs exact in float16): any correct
 * summation order (OpenBLAS's blocked FMAs, cuBLAS's tiles, torch's) gives
 * the same bits, and the checks are exact equality: tg against each
 * reference, the f16 products against the f32 ones, and on devices 4096
 * sampled entries against dot products in double.
 *
 * With BEAM=n in the environment tg searches kernel opts (once per kernel,
 * then cached) instead of using its heuristic: names get a _beamN suffix.
 * The search starts from the heuristic's choice, so it takes seconds on the
 * CPU; on devices it is left out (minutes on PoCL) unless
 * BENCH_DEVICE_BEAM=1. */
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "bench.h"

#ifdef BENCH_HAVE_OPENBLAS
#include <cblas.h>
void openblas_set_num_threads(int num_threads);
int openblas_get_num_threads(void);
char *openblas_get_config(void);
char *openblas_get_corename(void);
#endif

__attribute__((noinline)) static void omp_matmul(const float *restrict a, const float *restrict b, float *restrict c, long n) {
#pragma omp parallel for schedule(static)
  for (long i = 0; i < n; i++) {
    float *restrict ci = c + i * n;
    for (long j = 0; j < n; j++) ci[j] = 0;
    for (long k = 0; k < n; k++) {
      float aik = a[i * n + k];
      const float *restrict bk = b + k * n;
      for (long j = 0; j < n; j++) ci[j] += aik * bk[j];
    }
  }
}

typedef enum { REF_OPENBLAS, REF_LOOP, REF_NONE } ref_kind;   /* REF_NONE: tg alone (for torch) */

#define BACK_TO_BACK 2   /* timed runs in a row per contender and repetition */

static void run_ref(ref_kind kind, const float *a, const float *b, float *c, long n) {
#ifdef BENCH_HAVE_OPENBLAS
  if (kind == REF_OPENBLAS) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)n, (int)n, (int)n, 1.0f, a, (int)n, b, (int)n, 0.0f, c, (int)n);
    return;
  }
#endif
  if (kind == REF_LOOP) omp_matmul(a, b, c, n);
}

/* ---------------------------------------------------------------- torch */

#ifndef BENCH_DIR
#define BENCH_DIR "bench"
#endif

static const long torch_sizes[] = { 512, 1024, 2048 };
#define NTORCH (int)(sizeof torch_sizes / sizeof torch_sizes[0])

/* torch.matmul's results and best times, per size of torch_sizes. */
typedef struct {
  bool ok;
  char skip[512], version[64];
  double seconds[NTORCH];
  float *c[NTORCH];
} torch_ref;

static void fill_inputs(float *a, float *b, size_t nn) {
  for (size_t i = 0; i < nn; i++) {
    a[i] = bench_eighths(i, 1);
    b[i] = bench_eighths(i, 2);
  }
}

static void write_file(const char *path, const void *data, size_t nbytes) {
  FILE *f = fopen(path, "wb");
  if (!f || fwrite(data, 1, nbytes, f) != nbytes || fclose(f) != 0) bench_fail("sgemm_torch", "writing %s failed", path);
}

/* Runs bench/matmul_torch.py once for every size, on the inputs the tg
 * cases use (raw files in a temporary directory), before tg runs: its
 * threads are gone when tg's start. */
static torch_ref run_torch(int threads, int reps) {
  torch_ref t = { .ok = false };
  char tmpl[4096], path[4200];
  const char *tmp = getenv("TMPDIR");
  snprintf(tmpl, sizeof tmpl, "%s/tg_bench_sgemm_XXXXXX", tmp && *tmp ? tmp : "/tmp");
  const char *dir = mkdtemp(tmpl);
  if (!dir) bench_fail("sgemm_torch", "mkdtemp(%s) failed", tmpl);
  char sizes[64] = "";
  for (int i = 0; i < NTORCH; i++) {
    long n = torch_sizes[i];
    size_t nn = (size_t)(n * n);
    float *a = bench_alloc_f32(nn), *b = bench_alloc_f32(nn);
    fill_inputs(a, b, nn);
    snprintf(path, sizeof path, "%s/a_%ld.f32", dir, n);
    write_file(path, a, nn * sizeof(float));
    snprintf(path, sizeof path, "%s/b_%ld.f32", dir, n);
    write_file(path, b, nn * sizeof(float));
    snprintf(path, sizeof path, "%s/c_%ld.f32", dir, n);
    int fd = open(path, O_CREAT | O_RDWR | O_TRUNC, 0600);
    if (fd < 0 || ftruncate(fd, (off_t)(nn * sizeof(float))) != 0) bench_fail("sgemm_torch", "creating %s failed", path);
    close(fd);
    free(a); free(b);
    snprintf(sizes + strlen(sizes), sizeof sizes - strlen(sizes), "%s%ld", i ? "," : "", n);
  }
  const char *py = getenv("BENCH_PYTHON");
  if (!py || !*py) py = "python3";
  char cmd[8192];
  snprintf(cmd, sizeof cmd, "'%s' '%s/matmul_torch.py' --sizes %s --threads %d --reps %d --dir '%s' 2>&1", py, BENCH_DIR, sizes,
           threads, reps, dir);
  fflush(stdout);
  FILE *p = popen(cmd, "r");
  if (!p) bench_fail("sgemm_torch", "popen(%s) failed", py);
  char line[4096], last[4096] = "";
  int got = 0;
  while (fgets(line, sizeof line, p)) {
    line[strcspn(line, "\n")] = 0;
    if (*line) snprintf(last, sizeof last, "%s", line);
    const char *s = strstr(line, "skip reason=");
    if (s) snprintf(t.skip, sizeof t.skip, "%s", s + 12);
    const char *ms = strstr(line, "torch_ms="), *v = strstr(line, "torch=");
    if (strncmp(line, "n=", 2) != 0 || !ms) continue;
    long n = atol(line + 2);
    for (int i = 0; i < NTORCH; i++)
      if (torch_sizes[i] == n) { t.seconds[i] = atof(ms + 9) * 1e-3; got++; }
    if (v) snprintf(t.version, sizeof t.version, "%s", v + 6);
  }
  int st = pclose(p);
  int code = st != -1 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  if (code == 127) snprintf(t.skip, sizeof t.skip, "%s not found (BENCH_PYTHON picks the interpreter)", py);
  else if (code != 0 && !(code == 3 && *t.skip)) bench_fail("sgemm_torch", "matmul_torch.py failed (exit %d): %s", code, last);
  else if (code == 0 && got != NTORCH) bench_fail("sgemm_torch", "matmul_torch.py printed %d of %d times: %s", got, NTORCH, last);
  t.ok = code == 0;
  for (int i = 0; i < NTORCH; i++) {
    long n = torch_sizes[i];
    size_t nn = (size_t)(n * n);
    snprintf(path, sizeof path, "%s/a_%ld.f32", dir, n); unlink(path);
    snprintf(path, sizeof path, "%s/b_%ld.f32", dir, n); unlink(path);
    snprintf(path, sizeof path, "%s/c_%ld.f32", dir, n);
    if (t.ok) {
      t.c[i] = bench_alloc_f32(nn);
      FILE *f = fopen(path, "rb");
      if (!f || fread(t.c[i], sizeof(float), nn, f) != nn) bench_fail("sgemm_torch", "reading torch's output %s failed", path);
      fclose(f);
    }
    unlink(path);
  }
  rmdir(dir);
  return t;
}

/* One CPU case; with torch (its result and time for this n) also a
 * sgemm_torch_N line from the same tg runs. */
static void bench_sgemm(ref_kind kind, long n, int reps, int threads, const torch_ref *torch, int ti) {
  char name[64];
  snprintf(name, sizeof name, "sgemm_%s%ld%s", kind == REF_LOOP ? "loop_" : kind == REF_NONE ? "torch_" : "", n, bench_name_suffix());
  const double gflop = 2.0 * (double)n * (double)n * (double)n * 1e-9;
  const size_t nn = (size_t)(n * n), nb = nn * sizeof(float);
  float *ha = bench_alloc_f32(nn), *hb = bench_alloc_f32(nn), *want = bench_alloc_f32(nn), *got = bench_alloc_f32(nn);
  fill_inputs(ha, hb, nn);

  tg_scope_begin();
  tg_tensor *a = tg_from_data(ha, TG_SHAPE(n, n), TG_F32);
  tg_tensor *b = tg_from_data(hb, TG_SHAPE(n, n), TG_F32);
  if (!a || !b) bench_fail(name, "tg_from_data failed");
  double ref_s = 1e30;
  bench_tg_run first = { 0 }, best = { 1e30, 1e30, 0, 0 };
  int64_t compiles = 0;
  for (int r = 0; r <= reps; r++) {   /* repetition 0 warms up (tg compiles, or searches with BEAM) */
    /* each contender runs BACK_TO_BACK times in a row and its best run
     * counts: on this kind of VM a core that has slept (bench_settle) reads
     * its caches at half speed for tens of milliseconds, which would
     * otherwise fall on whoever runs right after the settle */
    for (int j = 0; j < (r ? BACK_TO_BACK : 1); j++) {
      tg_scope_begin();
      tg_tensor *c = tg_matmul(a, b);
      bench_tg_run x = bench_tg_realize(c, name);
      if (r == 0) {
        first = x;
        if (tg_data(c, got, nb) < 0) bench_fail(name, "tg_data failed");
      } else {
        compiles += x.compiled;
        if (x.kernel_s < best.kernel_s) best = x;
      }
      tg_scope_end();
    }

    for (int j = 0; kind != REF_NONE && j < (r ? BACK_TO_BACK : 1); j++) {
      double t0 = bench_now();
      run_ref(kind, ha, hb, want, n);
      double dt = bench_now() - t0;
      if (r && dt < ref_s) ref_s = dt;
    }
    /* OpenBLAS's workers spin for a while after a call: let them sleep
     * before tg runs again */
    bench_settle(kind == REF_OPENBLAS ? 0.15 : 0.002);
    if (r == 0 && kind != REF_NONE)
      for (size_t i = 0; i < nn; i++)
        if (got[i] != want[i])
          bench_fail(name, "wrong result at (%zu, %zu): tg %.9g, %s %.9g", i / (size_t)n, i % (size_t)n, got[i],
                     kind == REF_OPENBLAS ? "OpenBLAS" : "loop", want[i]);
  }
  tg_scope_end();
  if (best.kernel_s <= 0) bench_fail(name, "no kernel time recorded (is TG_DEVICE=NULL set?)");
  if (torch && torch->ok) {
    char tname[64];
    snprintf(tname, sizeof tname, "sgemm_torch_%ld%s", n, bench_name_suffix());
    for (size_t i = 0; i < nn; i++)
      if (got[i] != torch->c[ti][i])
        bench_fail(tname, "wrong result at (%zu, %zu): tg %.9g, torch %.9g", i / (size_t)n, i % (size_t)n, got[i], torch->c[ti][i]);
    double ts = torch->seconds[ti];
    printf("bench %s n=%ld opts=%s threads=%d kernels=%lld tg_ms=%.2f tg_gflops=%.2f torch_ms=%.2f torch_gflops=%.2f "
           "torch=%s recompiles=%lld ratio=%.3f\n",
           tname, n, bench_opts_label(), threads, (long long)best.kernels, best.kernel_s * 1e3, gflop / best.kernel_s, ts * 1e3,
           gflop / ts, torch->version, (long long)compiles, ts / best.kernel_s);
    fflush(stdout);
  }
  if (kind == REF_NONE) { free(ha); free(hb); free(want); free(got); return; }
  printf("bench %s n=%ld opts=%s threads=%d kernels=%lld first_ms=%.1f tg_ms=%.2f tg_wall_ms=%.2f tg_gflops=%.2f "
         "%s_ms=%.2f %s_gflops=%.2f recompiles=%lld ratio=%.3f\n",
         name, n, bench_opts_label(), threads, (long long)best.kernels, first.wall_s * 1e3, best.kernel_s * 1e3,
         best.wall_s * 1e3, gflop / best.kernel_s, kind == REF_OPENBLAS ? "openblas" : "omp", ref_s * 1e3,
         kind == REF_OPENBLAS ? "openblas" : "omp", gflop / ref_s, (long long)compiles, ref_s / best.kernel_s);
  fflush(stdout);
  free(ha); free(hb); free(want); free(got);
}

/* ---------------------------------------------------------------- cuBLAS */

/* The driver API (for the device memory cuBLAS works on, in the primary
 * context tg's CUDA backend uses too) and cuBLAS, both through dlopen. */
typedef unsigned long long cu_ptr;
static struct {
  int (*Init)(unsigned);
  int (*DeviceGet)(int *, int);
  int (*PrimaryCtxRetain)(void **, int);
  int (*CtxSetCurrent)(void *);
  int (*CtxSynchronize)(void);
  int (*MemAlloc)(cu_ptr *, size_t);
  int (*MemFree)(cu_ptr);
  int (*MemcpyHtoD)(cu_ptr, const void *, size_t);
  int (*MemcpyDtoH)(void *, cu_ptr, size_t);
  int (*EventCreate)(void **, unsigned);
  int (*EventRecord)(void *, void *);
  int (*EventSynchronize)(void *);
  int (*EventElapsedTime)(float *, void *, void *);
  int (*EventDestroy)(void *);
  int (*Create)(void **);
  int (*Destroy)(void *);
  int (*GetVersion)(void *, int *);
  int (*Sgemm)(void *, int, int, int, int, int, const float *, const float *, int, const float *, int, const float *, float *, int);
  int (*GemmEx)(void *, int, int, int, int, int, const void *, const void *, int, int, const void *, int, int, const void *, void *,
                int, int, int, int);
} cb;
static bool cb_tried, cb_ok;
static char cb_why[512];

#define CUBLAS_OP_N 0
#define CUDA_R_16F 2
#define CUDA_R_32F 0
#define CUBLAS_COMPUTE_32F 68
#define CUBLAS_GEMM_DEFAULT (-1)

static bool cb_resolve(void *h, void **slots, const char *const *names, int n, const char *lib) {
  for (int i = 0; i < n; i++)
    if (!(slots[i] = dlsym(h, names[i]))) {
      snprintf(cb_why, sizeof cb_why, "%s has no %s", lib, names[i]);
      return false;
    }
  return true;
}

/* Opens libcuda.so.1 and libcublas (CUDA_PATH/lib64, the loader's path,
 * /usr/local/cuda/lib64); false with cb_why saying what is missing. */
static bool cublas_load(void) {
  if (cb_tried) return cb_ok;
  cb_tried = true;
  void *cu = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!cu) { snprintf(cb_why, sizeof cb_why, "libcuda.so.1 not found (no NVIDIA driver)"); return false; }
  static const char *const cu_names[] = { "cuInit", "cuDeviceGet", "cuDevicePrimaryCtxRetain", "cuCtxSetCurrent", "cuCtxSynchronize",
    "cuMemAlloc_v2", "cuMemFree_v2", "cuMemcpyHtoD_v2", "cuMemcpyDtoH_v2", "cuEventCreate", "cuEventRecord", "cuEventSynchronize",
    "cuEventElapsedTime", "cuEventDestroy_v2" };
  if (!cb_resolve(cu, (void **)&cb.Init, cu_names, 14, "libcuda.so.1")) return false;
  char paths[6][512];
  int np = 0;
  const char *cp = getenv("CUDA_PATH");
  if (cp && *cp) snprintf(paths[np++], sizeof paths[0], "%s/lib64/libcublas.so", cp);
  snprintf(paths[np++], sizeof paths[0], "libcublas.so");
  snprintf(paths[np++], sizeof paths[0], "libcublas.so.13");
  snprintf(paths[np++], sizeof paths[0], "libcublas.so.12");
  snprintf(paths[np++], sizeof paths[0], "/usr/local/cuda/lib64/libcublas.so");
  void *h = NULL;
  for (int i = 0; i < np && !h; i++) h = dlopen(paths[i], RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    snprintf(cb_why, sizeof cb_why, "libcublas not found (the CUDA toolkit; set CUDA_PATH): %s", dlerror());
    return false;
  }
  static const char *const blas_names[] = { "cublasCreate_v2", "cublasDestroy_v2", "cublasGetVersion_v2", "cublasSgemm_v2", "cublasGemmEx" };
  if (!cb_resolve(h, (void **)&cb.Create, blas_names, 5, "libcublas")) return false;
  int r = cb.Init(0);
  if (r) { snprintf(cb_why, sizeof cb_why, "cuInit failed (error %d)", r); return false; }
  cb_ok = true;
  return true;
}

typedef struct { void *ctx, *handle; int version; } cublas_dev;

/* cuBLAS on CUDA device index; false with why. */
static bool cublas_open(int index, cublas_dev *d, char *why, size_t wn) {
  if (!cublas_load()) { snprintf(why, wn, "%s", cb_why); return false; }
  int dev = 0, r = cb.DeviceGet(&dev, index);
  if (!r) r = cb.PrimaryCtxRetain(&d->ctx, dev);
  if (!r) r = cb.CtxSetCurrent(d->ctx);
  if (r) { snprintf(why, wn, "CUDA:%d: cannot open its context (error %d)", index, r); return false; }
  r = cb.Create(&d->handle);
  if (r) { snprintf(why, wn, "cublasCreate failed (status %d)", r); return false; }
  cb.GetVersion(d->handle, &d->version);
  return true;
}

/* C = A @ B (row-major n x n; A, B float32 or float16 bits, C float32) by
 * cuBLAS: a warm-up call, then the best of reps calls timed with events.
 * Row-major C = A B is column-major C^T = B^T A^T: B is passed first. Returns
 * seconds, or < 0 with why. */
static double cublas_gemm(cublas_dev *d, bool f16, const void *ha, const void *hb, float *hc, long n, int reps, char *why, size_t wn) {
  size_t nn = (size_t)(n * n), esz = f16 ? 2 : 4;
  cu_ptr a = 0, b = 0, c = 0;
  void *e0 = NULL, *e1 = NULL;
  double best = -1;
  int r = cb.CtxSetCurrent(d->ctx);
  if (!r) r = cb.MemAlloc(&a, nn * esz);
  if (!r) r = cb.MemAlloc(&b, nn * esz);
  if (!r) r = cb.MemAlloc(&c, nn * sizeof(float));
  if (!r) r = cb.MemcpyHtoD(a, ha, nn * esz);
  if (!r) r = cb.MemcpyHtoD(b, hb, nn * esz);
  if (!r) r = cb.EventCreate(&e0, 0);
  if (!r) r = cb.EventCreate(&e1, 0);
  if (r) { snprintf(why, wn, "CUDA memory for cuBLAS (error %d)", r); goto done; }
  const float one = 1.0f, zero = 0.0f;
  for (int i = 0; i <= reps; i++) {
    cb.EventRecord(e0, NULL);
    int st = f16 ? cb.GemmEx(d->handle, CUBLAS_OP_N, CUBLAS_OP_N, (int)n, (int)n, (int)n, &one, (const void *)(uintptr_t)b, CUDA_R_16F,
                             (int)n, (const void *)(uintptr_t)a, CUDA_R_16F, (int)n, &zero, (void *)(uintptr_t)c, CUDA_R_32F, (int)n,
                             CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT)
                 : cb.Sgemm(d->handle, CUBLAS_OP_N, CUBLAS_OP_N, (int)n, (int)n, (int)n, &one, (const float *)(uintptr_t)b, (int)n,
                            (const float *)(uintptr_t)a, (int)n, &zero, (float *)(uintptr_t)c, (int)n);
    cb.EventRecord(e1, NULL);
    r = cb.EventSynchronize(e1);
    if (st || r) { snprintf(why, wn, "%s failed (status %d, error %d)", f16 ? "cublasGemmEx" : "cublasSgemm", st, r); best = -1; goto done; }
    float ms = 0;
    cb.EventElapsedTime(&ms, e0, e1);
    if (i && (best < 0 || ms * 1e-3 < best)) best = ms * 1e-3;
  }
  r = cb.MemcpyDtoH(hc, c, nn * sizeof(float));
  if (r) { snprintf(why, wn, "copying cuBLAS's result (error %d)", r); best = -1; }
done:
  if (e0) cb.EventDestroy(e0);
  if (e1) cb.EventDestroy(e1);
  if (a) cb.MemFree(a);
  if (b) cb.MemFree(b);
  if (c) cb.MemFree(c);
  return best;
}

/* ---------------------------------------------------------------- devices */

static void check_same(const char *name, const float *got, const float *want, long n, const char *what) {
  for (size_t i = 0; i < (size_t)(n * n); i++)
    if (got[i] != want[i])
      bench_fail(name, "wrong result at (%zu, %zu): %.9g, %s %.9g", i / (size_t)n, i % (size_t)n, got[i], what, want[i]);
}

/* 4096 entries (the corners first) against dot products in double. */
static void check_sampled(const char *name, const float *got, const float *ha, const float *hb, long n) {
  size_t nn = (size_t)(n * n);
  for (size_t s = 0; s < 4096; s++) {
    size_t i = s < 4 ? (s & 1 ? (size_t)n - 1 : 0) + (s & 2 ? (size_t)(n - 1) * (size_t)n : 0) : (s * 2654435761u) % nn;
    size_t row = i / (size_t)n, col = i % (size_t)n;
    double want = 0;
    for (long k = 0; k < n; k++) want += (double)ha[row * (size_t)n + (size_t)k] * (double)hb[(size_t)k * (size_t)n + col];
    if ((double)got[i] != want) bench_fail(name, "wrong result at (%zu, %zu): tg %.9g, exact %.9g", row, col, got[i], want);
  }
}

/* sgemm_f32_DEV and sgemm_f16_DEV on one device. */
static void bench_sgemm_device(const tg_device_info *info, int reps) {
  const char *dev = info->name;
  const bool cuda = !strcmp(info->renderer, "cuda");
  long n = cuda ? 4096 : 512;   /* PoCL on 2 cores: about 5 s per 1024 product with today's kernels */
  const char *ne = getenv("BENCH_SGEMM_DEV_N");
  if (ne && atol(ne) > 0) n = atol(ne);
  char name[96];
  const double gflop = 2.0 * (double)n * (double)n * (double)n * 1e-9;
  const size_t nn = (size_t)(n * n);
  float *ha = bench_alloc_f32(nn), *hb = bench_alloc_f32(nn), *want = bench_alloc_f32(nn), *got = bench_alloc_f32(nn);
  uint16_t *ha16 = bench_alloc(nn * 2), *hb16 = bench_alloc(nn * 2);
  fill_inputs(ha, hb, nn);

  /* cuBLAS for CUDA devices */
  cublas_dev cbd = { 0 };
  char why[512] = "no cuBLAS for this device";
  bool have_cublas = false;
  if (cuda) {
    const char *colon = strchr(dev, ':');
    have_cublas = cublas_open(colon ? atoi(colon + 1) : 0, &cbd, why, sizeof why);
  }

  tg_scope_begin();
  tg_tensor *a = tg_to(tg_from_data(ha, TG_SHAPE(n, n), TG_F32), dev), *b = tg_to(tg_from_data(hb, TG_SHAPE(n, n), TG_F32), dev);
  if (!a || !b || tg_realize(a) < 0 || tg_realize(b) < 0) bench_fail("sgemm_device", "inputs on %s: %s", dev, tg_error());
  tg_tensor *a16 = tg_contiguous(tg_cast(a, TG_F16)), *b16 = tg_contiguous(tg_cast(b, TG_F16));
  if (!a16 || !b16 || tg_realize(a16) < 0 || tg_realize(b16) < 0 || tg_data(a16, ha16, nn * 2) < 0 || tg_data(b16, hb16, nn * 2) < 0)
    bench_fail("sgemm_device", "float16 inputs on %s: %s", dev, tg_error());

  bool have_want = false;
  for (int f16 = 0; f16 < 2; f16++) {
    snprintf(name, sizeof name, "sgemm_%s_%.31s%s", f16 ? "f16" : "f32", dev, bench_name_suffix());
    bench_tg_run first = { 0 }, best = { 1e30, 1e30, 0, 0 };
    int64_t compiles = 0;
    int nrep = reps;
    for (int r = 0; r <= nrep; r++) {   /* repetition 0 warms up (compiles) and is checked */
      tg_scope_begin();
      tg_tensor *c = f16 ? tg_matmul(tg_cast(a16, TG_F32), tg_cast(b16, TG_F32)) : tg_matmul(a, b);
      bench_tg_run x = bench_tg_realize(c, name);
      if (r == 0) {
        first = x;
        if (tg_data(c, got, nn * sizeof(float)) < 0) bench_fail(name, "tg_data: %s", tg_error());
        if (x.kernel_s > 5 && nrep > 1) nrep = 1;   /* a slow kernel: one timed run (a lent GPU's minutes are few) */
      } else {
        compiles += x.compiled;
        if (x.kernel_s < best.kernel_s) best = x;
      }
      tg_scope_end();
    }
    if (best.kernel_s <= 0 || best.kernel_s >= 1e29) bench_fail(name, "no kernel time recorded");
    check_sampled(name, got, ha, hb, n);
    double ref_s = -1;
    if (have_cublas) {
      ref_s = cublas_gemm(&cbd, f16, f16 ? (const void *)ha16 : ha, f16 ? (const void *)hb16 : hb, want, n, reps, why, sizeof why);
      if (ref_s < 0) bench_fail(name, "cuBLAS: %s", why);
      check_sampled(f16 ? "cublasGemmEx" : "cublasSgemm", want, ha, hb, n);   /* the reference itself */
      check_same(name, got, want, n, f16 ? "cublasGemmEx" : "cublasSgemm");
    } else {   /* the CPU loop (or at 4096, tg's own f32 product, checked above) for both */
      if (!have_want && n <= 2048) omp_matmul(ha, hb, want, n);
      else if (!have_want) memcpy(want, got, nn * sizeof(float));
      have_want = true;
      check_same(name, got, want, n, n <= 2048 ? "the CPU loop" : "tg's f32 product");
    }
    if (ref_s > 0)
      printf("bench %s n=%ld device=%s dtype=%s opts=%s correct=1 kernels=%lld first_ms=%.1f tg_ms=%.3f tg_gflops=%.1f "
             "cublas_ms=%.3f cublas_gflops=%.1f cublas=%d recompiles=%lld ratio=%.3f\n",
             name, n, dev, f16 ? "f16_in_f32_acc" : "f32", bench_opts_label(), (long long)best.kernels, first.wall_s * 1e3,
             best.kernel_s * 1e3, gflop / best.kernel_s, ref_s * 1e3, gflop / ref_s, cbd.version, (long long)compiles,
             ref_s / best.kernel_s);
    else
      printf("bench %s n=%ld device=%s dtype=%s opts=%s correct=1 kernels=%lld first_ms=%.1f tg_ms=%.3f tg_gflops=%.2f "
             "recompiles=%lld ref=none reason=%s\n",
             name, n, dev, f16 ? "f16_in_f32_acc" : "f32", bench_opts_label(), (long long)best.kernels, first.wall_s * 1e3,
             best.kernel_s * 1e3, gflop / best.kernel_s, (long long)compiles, bench_token(why));
    fflush(stdout);
  }
  tg_scope_end();
  if (have_cublas) cb.Destroy(cbd.handle);
  free(ha); free(hb); free(want); free(got); free(ha16); free(hb16);
}

int main(int argc, char **argv) {
  (void)argc;
#ifdef BENCH_HAVE_OPENBLAS
  /* OpenBLAS reads these when the library is loaded, before main: a forced
   * core type or cache size (set for other programs on some machines) would
   * skew the reference. Run again without them. */
  if (getenv("OPENBLAS_CORETYPE") || getenv("OPENBLAS_L2_SIZE")) {
    unsetenv("OPENBLAS_CORETYPE");
    unsetenv("OPENBLAS_L2_SIZE");
    fflush(stdout);
    execv("/proc/self/exe", argv);
    bench_fail("sgemm_openblas", "could not re-run itself without OPENBLAS_CORETYPE/OPENBLAS_L2_SIZE");
  }
#else
  (void)argv;
#endif
  int threads = bench_threads();
  int reps = bench_reps(3);
  const int size_reps[NTORCH] = { bench_reps(5), reps, bench_reps(2) };

  /* GPU and OpenCL devices first: their kernels are timed one by one. A
   * BEAM search there times every candidate on the device (minutes on
   * PoCL): only with BENCH_DEVICE_BEAM=1. */
  char devs[8][32];
  const char *dbeam = getenv("BENCH_DEVICE_BEAM");
  bool dev_skip = *bench_name_suffix() && !(dbeam && atoi(dbeam) > 0);
  int ndev = dev_skip ? 0 : bench_gpu_devices("sgemm", devs, 8);
  if (dev_skip) bench_skip("sgemm_devices", "BEAM_searches_on_devices_only_with_BENCH_DEVICE_BEAM=1");
  if (ndev > 0) {
    tg_device_info info[32];
    int n = tg_devices(info, 32, NULL);
    setenv("TG_KERNEL_TIMES", "1", 1);   /* queued launches timed one by one, into the counters */
    for (int d = 0; d < ndev; d++)
      for (int i = 0; i < n && i < 32; i++)
        if (!strcmp(info[i].name, devs[d])) bench_sgemm_device(&info[i], reps);
    unsetenv("TG_KERNEL_TIMES");
  }
  if (bench_devices_only()) return 0;

  torch_ref torch = run_torch(threads, reps < 3 ? 3 : reps);
  if (!torch.ok) bench_skip("sgemm_torch", "%s", *torch.skip ? torch.skip : "torch_not_available");
#ifdef BENCH_HAVE_OPENBLAS
  openblas_set_num_threads(threads);
  fprintf(stderr, "bench_sgemm: OpenBLAS %s, core %s, %d threads\n", openblas_get_config(), openblas_get_corename(),
          openblas_get_num_threads());
  for (int i = 0; i < NTORCH; i++) bench_sgemm(REF_OPENBLAS, torch_sizes[i], size_reps[i], threads, &torch, i);
#else
  bench_skip("sgemm_openblas", "OpenBLAS not found when building (Debian: apt-get install -y libopenblas-dev, then make bench)");
  if (torch.ok)
    for (int i = 0; i < NTORCH; i++) bench_sgemm(REF_NONE, torch_sizes[i], size_reps[i], threads, &torch, i);
#endif
  bench_sgemm(REF_LOOP, 1024, reps, threads, NULL, 0);
  for (int i = 0; i < NTORCH; i++) free(torch.c[i]);
  return 0;
}
