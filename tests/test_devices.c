/* test_devices.c: the device registry, copies between devices, GPU opts
 * and the errors of absent devices and failed compiles. The CL tests run
 * on whatever OpenCL device is present (PoCL in CI) and skip without one. */
#include "test.h"
#include "runtime/cuda.h"
#include "runtime/device.h"

static bool have(const char *dev) {
  tg_device_info info[32];
  int n = tg_devices(info, 32, NULL);
  for (int i = 0; i < n && i < 32; i++) if (!strcmp(info[i].name, dev)) return true;
  return false;
}

TEST(devices_registry_lists_and_refuses) {
  tg_device_info info[32];
  const char *absent = NULL;
  int n = tg_devices(info, 32, &absent);
  CHECK(n >= 3);
  CHECK(!strcmp(info[0].name, "CPU") && !strcmp(info[0].renderer, "c") && info[0].threads);
  CHECK(absent != NULL);
  CHECK(device_get("cpu:0") == device_get("CPU"));
  CHECK(device_get("TPU") == NULL);
  CHECK_MSG(strstr(tg_error(), "unknown device 'TPU'") && strstr(tg_error(), "present: CPU"), "%s", tg_error());
  CHECK(device_get("CL:x") == NULL);
  CHECK(device_get("CL:9") == NULL);
  CHECK_MSG(strstr(tg_error(), "not present"), "%s", tg_error());
  if (!have("CUDA")) {
    CHECK(tg_set_default_device("CUDA") < 0);
    CHECK_MSG(strstr(tg_error(), "CUDA") && strstr(tg_error(), "present:"), "%s", tg_error());
    CHECK(tg_to(tg_ones(TG_SHAPE(2), TG_F32), "CUDA") == NULL);
  }
  CHECK(!strcmp(tg_default_device(), "CPU"));   /* a refused device changes nothing */
}

TEST(devices_cl_roundtrip_and_math) {
  if (!have("CL")) SKIP("no OpenCL device (install pocl-opencl-icd)");
  float a[6] = { 1, -2, 3, -4, 5, -6 }, out[6];
  tg_tensor *x = tg_to(tg_from_data(a, TG_SHAPE(2, 3), TG_F32), "CL");
  CHECK_OK(x);
  CHECK(!strcmp(tg_device_of(x), "CL"));
  tg_tensor *y = tg_relu(tg_muls(x, 2));
  CHECK(tg_data(tg_to(y, "CPU"), out, sizeof out) == 0);
  for (int i = 0; i < 6; i++) CHECK_NEAR(out[i], a[i] > 0 ? 2 * a[i] : 0, 0);
  float s[2];
  CHECK(tg_data(tg_sum(x, TG_AXES(1), false), s, sizeof s) == 0);
  CHECK_NEAR(s[0], 2, 0);
  CHECK_NEAR(s[1], -5, 0);
  /* mixing devices in one op is an error, not a crash */
  CHECK(tg_add(x, tg_ones(TG_SHAPE(2, 3), TG_F32)) == NULL);
  CHECK_MSG(strstr(tg_error(), "different devices (CL and CPU)"), "%s", tg_error());
}

TEST(devices_cl_group_reduce_matches) {
  if (!have("CL")) SKIP("no OpenCL device");
  enum { R = 8, C = 1024 };
  static float a[R * C];
  double want[R] = { 0 };
  for (int i = 0; i < R * C; i++) { a[i] = (float)((i * 37) % 101) * 0.25f; want[i / C] += a[i]; }
  const char *specs[] = { "GROUP:0:64", "GROUPTOP:0:32,LOCAL:0:2", "GROUP:0:16,UNROLL:0:4", "LOCAL:0:8", "UPCAST:0:2,GROUP:0:128" };
  for (size_t k = 0; k < sizeof specs / sizeof specs[0]; k++) {
    CHECK(tg_set_kernel_opts(specs[k]) == 0);
    tg_scope_begin();
    float got[R];
    tg_tensor *x = tg_to(tg_from_data(a, TG_SHAPE(R, C), TG_F32), "CL");
    int rc = tg_data(tg_sum(x, TG_AXES(1), false), got, sizeof got);
    CHECK_MSG(rc == 0, "%s: %s", specs[k], tg_error());
    for (int r = 0; rc == 0 && r < R; r++) CHECK_MSG(fabs(got[r] - want[r]) < 1e-3 * fabs(want[r]), "%s row %d: %g vs %g", specs[k], r, got[r], want[r]);
    tg_scope_end();
  }
  tg_set_kernel_opts(NULL);
}

TEST(devices_opts_follow_capabilities) {
  float a[64];
  for (int i = 0; i < 64; i++) a[i] = (float)i;
  float got[8];
  CHECK(tg_set_kernel_opts("LOCAL:0:4") == 0);
  tg_tensor *x = tg_from_data(a, TG_SHAPE(8, 8), TG_F32);
  CHECK(tg_data(tg_sum(x, TG_AXES(1), false), got, sizeof got) < 0);
  CHECK_MSG(strstr(tg_error(), "LOCAL") && strstr(tg_error(), "work groups"), "%s", tg_error());
  if (have("CL")) {
    CHECK(tg_set_kernel_opts("THREAD:0:2") == 0);
    tg_tensor *y = tg_to(tg_from_data(a, TG_SHAPE(8, 8), TG_F32), "CL");
    CHECK(tg_data(tg_sum(y, TG_AXES(1), false), got, sizeof got) < 0);
    CHECK_MSG(strstr(tg_error(), "THREAD") && strstr(tg_error(), "CPU cores"), "%s", tg_error());
    /* more threads per group than the device allows */
    CHECK(tg_set_kernel_opts("LOCAL:0:2,GROUP:0:4096") == 0);
    static float big[2 * 8192];
    tg_tensor *z = tg_to(tg_from_data(big, TG_SHAPE(2, 8192), TG_F32), "CL");
    CHECK(tg_data(tg_sum(z, TG_AXES(1), false), got, 2 * sizeof(float)) < 0);
    CHECK_MSG(strstr(tg_error(), "threads per work group"), "%s", tg_error());
  }
  tg_set_kernel_opts(NULL);
  CHECK(tg_data(tg_sum(x, TG_AXES(1), false), got, sizeof got) == 0);   /* and everything still works */
  CHECK_NEAR(got[7], 56 + 57 + 58 + 59 + 60 + 61 + 62 + 63, 0);
}

TEST(devices_compile_errors_name_kernel_and_lines) {
  const char *bad_cl = "__kernel void broken(__global float *a) {\n  a[0] = 1.0f;\n  a[1] = not_declared;\n}\n";
  if (have("CL")) {
    tg_device *d = device_get("CL");
    CHECK(d->compile(d, bad_cl, "broken") == NULL);
    CHECK_MSG(strstr(tg_error(), "kernel 'broken'") && strstr(tg_error(), "not_declared"), "%s", tg_error());
    CHECK_MSG(strstr(tg_error(), "    3 |"), "no source line in: %s", tg_error());
  }
  const char *why = NULL;
  if (!cuda_nvrtc_available(&why)) SKIP("NVRTC absent: %s", why);
  CHECK(cuda_check_source("extern \"C\" __global__ void broken(float *a) {\n  a[0] = not_declared;\n}\n", "broken", 80) < 0);
  CHECK_MSG(strstr(tg_error(), "kernel 'broken'") && strstr(tg_error(), "    2 |"), "%s", tg_error());
  CHECK(cuda_check_source("extern \"C\" __global__ void fine(float *a) { a[threadIdx.x] = 1.0f; }\n", "fine", 80) == 0);
}

TEST(devices_cl_memory_errors_leave_device_usable) {
  if (!have("CL")) SKIP("no OpenCL device");
  /* 1 TiB: more than any device holds */
  tg_tensor *x = tg_to(tg_contiguous(tg_ones(TG_SHAPE(256, 1024, 1024, 1024), TG_F32)), "CL");
  float v = 0;
  CHECK(tg_data(tg_sum(x, TG_ALL, false), &v, sizeof v) < 0);
  CHECK_MSG(strstr(tg_error(), "CL: out of device memory"), "%s", tg_error());
  /* grouped reduces over 256 lanes of 1024 threads: 1 MiB of local memory */
  tg_tensor *y = tg_to(tg_contiguous(tg_ones(TG_SHAPE(256, 4096), TG_F32)), "CL");
  CHECK(tg_realize(y) == 0);
  float o[256];
  tg_device *d = device_get("CL");
  if (d->renderer->max_local >= 1024 && d->renderer->local_mem < (1 << 20)) {
    CHECK(tg_set_kernel_opts("GROUP:0:1024,UPCAST:0:256") == 0);
    CHECK(tg_data(tg_sum(y, TG_AXES(1), false), o, sizeof o) < 0);
    CHECK_MSG(strstr(tg_error(), "local memory") && strstr(tg_error(), "r_256_4096"), "%s", tg_error());
    tg_set_kernel_opts(NULL);
  }
  CHECK(tg_data(tg_sum(y, TG_AXES(1), false), o, sizeof o) == 0);   /* the device still works */
  CHECK_NEAR(o[255], 4096, 0);
}
