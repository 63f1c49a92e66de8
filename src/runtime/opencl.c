/* opencl.c: the CL devices. libOpenCL (the ICD loader: Debian's
 * ocl-icd-libopencl1) is opened with dlopen on first use, so tg builds and
 * runs without it; every device of every platform is one CL device, in
 * platform order ("CL", "CL:1", ...). On machines without a GPU, PoCL
 * (pocl-opencl-icd) runs the same kernels on the CPU.
 *
 * Buffers are cl_mem handles (tg_buffer.ptr holds the handle, never host
 * memory). Kernels are OpenCL C from the "opencl" renderer, built once per
 * source and device, and cached on disk as program binaries keyed by the
 * source, the device, its driver version and the build options. Launches
 * queue in order on one in-order command queue with profiling on; copies
 * out wait for them. */
#include <dlfcn.h>
#include <pthread.h>
#include "runtime/backends.h"
#include "util/counters.h"
#include "util/util.h"
#include "util/settings.h"

typedef int32_t cl_int;
typedef uint32_t cl_uint;
typedef uint64_t cl_ulong;
typedef void *cl_platform_id, *cl_device_id, *cl_context, *cl_command_queue, *cl_mem, *cl_program, *cl_kernel, *cl_event;

#define CL_DEVICE_TYPE_ALL 0xFFFFFFFFull
#define CL_DEVICE_NAME 0x102B
#define CL_DRIVER_VERSION 0x102D
#define CL_DEVICE_MAX_WORK_GROUP_SIZE 0x1004
#define CL_DEVICE_MAX_WORK_ITEM_SIZES 0x1005
#define CL_DEVICE_LOCAL_MEM_SIZE 0x1023
#define CL_DEVICE_GLOBAL_MEM_SIZE 0x101F
#define CL_DEVICE_SINGLE_FP_CONFIG 0x101B
#define CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT (1 << 7)
#define CL_PLATFORM_NAME 0x0902
#define CL_QUEUE_PROFILING_ENABLE (1 << 1)
#define CL_MEM_READ_WRITE (1 << 0)
#define CL_PROGRAM_BUILD_LOG 0x1183
#define CL_PROGRAM_BINARY_SIZES 0x1165
#define CL_PROGRAM_BINARIES 0x1166
#define CL_PROFILING_COMMAND_START 0x1282
#define CL_PROFILING_COMMAND_END 0x1283
#define CL_MEM_OBJECT_ALLOCATION_FAILURE (-4)
#define CL_OUT_OF_RESOURCES (-5)
#define CL_OUT_OF_HOST_MEMORY (-6)

/* the entry points tg uses, resolved once */
static struct {
  cl_int (*GetPlatformIDs)(cl_uint, cl_platform_id *, cl_uint *);
  cl_int (*GetPlatformInfo)(cl_platform_id, cl_uint, size_t, void *, size_t *);
  cl_int (*GetDeviceIDs)(cl_platform_id, cl_ulong, cl_uint, cl_device_id *, cl_uint *);
  cl_int (*GetDeviceInfo)(cl_device_id, cl_uint, size_t, void *, size_t *);
  cl_context (*CreateContext)(const intptr_t *, cl_uint, const cl_device_id *, void *, void *, cl_int *);
  cl_command_queue (*CreateCommandQueue)(cl_context, cl_device_id, cl_ulong, cl_int *);
  cl_mem (*CreateBuffer)(cl_context, cl_ulong, size_t, void *, cl_int *);
  cl_int (*ReleaseMemObject)(cl_mem);
  cl_int (*EnqueueWriteBuffer)(cl_command_queue, cl_mem, cl_uint, size_t, size_t, const void *, cl_uint, const cl_event *, cl_event *);
  cl_int (*EnqueueReadBuffer)(cl_command_queue, cl_mem, cl_uint, size_t, size_t, void *, cl_uint, const cl_event *, cl_event *);
  cl_program (*CreateProgramWithSource)(cl_context, cl_uint, const char **, const size_t *, cl_int *);
  cl_program (*CreateProgramWithBinary)(cl_context, cl_uint, const cl_device_id *, const size_t *, const unsigned char **, cl_int *, cl_int *);
  cl_int (*BuildProgram)(cl_program, cl_uint, const cl_device_id *, const char *, void *, void *);
  cl_int (*GetProgramBuildInfo)(cl_program, cl_device_id, cl_uint, size_t, void *, size_t *);
  cl_int (*GetProgramInfo)(cl_program, cl_uint, size_t, void *, size_t *);
  cl_int (*ReleaseProgram)(cl_program);
  cl_kernel (*CreateKernel)(cl_program, const char *, cl_int *);
  cl_int (*ReleaseKernel)(cl_kernel);
  cl_int (*SetKernelArg)(cl_kernel, cl_uint, size_t, const void *);
  cl_int (*EnqueueNDRangeKernel)(cl_command_queue, cl_kernel, cl_uint, const size_t *, const size_t *, const size_t *, cl_uint, const cl_event *, cl_event *);
  cl_int (*Finish)(cl_command_queue);
  cl_int (*WaitForEvents)(cl_uint, const cl_event *);
  cl_int (*GetEventProfilingInfo)(cl_event, cl_uint, size_t, void *, size_t *);
  cl_int (*ReleaseEvent)(cl_event);
} cl;

#define MAX_CL_DEVICES 16
typedef struct {
  cl_device_id id;
  cl_context ctx;
  cl_command_queue queue;
  pthread_mutex_t lock;     /* kernel arguments are set and launched under it */
  char ident[512];          /* device, platform and driver: part of the cache key */
  char options[128];        /* build options */
  tg_renderer ren;
} cl_dev;

static pthread_once_t probe_once = PTHREAD_ONCE_INIT;
static int ndevices;
static cl_device_id device_ids[MAX_CL_DEVICES];
static cl_platform_id device_platforms[MAX_CL_DEVICES];
static char absent_reason[256];

static void probe(void) {
  const char *names[] = { "libOpenCL.so.1", "libOpenCL.so" };
  void *h = NULL;
  for (size_t i = 0; i < 2 && !h; i++) h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
  if (!h) { snprintf(absent_reason, sizeof absent_reason, "libOpenCL not found (Debian: ocl-icd-libopencl1 and a driver, e.g. pocl-opencl-icd)"); return; }
  struct { void **slot; const char *name; } syms[] = {
#define S(n) { (void **)&cl.n, "cl" #n }
    S(GetPlatformIDs), S(GetPlatformInfo), S(GetDeviceIDs), S(GetDeviceInfo), S(CreateContext), S(CreateCommandQueue), S(CreateBuffer),
    S(ReleaseMemObject), S(EnqueueWriteBuffer), S(EnqueueReadBuffer), S(CreateProgramWithSource), S(CreateProgramWithBinary), S(BuildProgram),
    S(GetProgramBuildInfo), S(GetProgramInfo), S(ReleaseProgram), S(CreateKernel), S(ReleaseKernel), S(SetKernelArg), S(EnqueueNDRangeKernel),
    S(Finish), S(WaitForEvents), S(GetEventProfilingInfo), S(ReleaseEvent),
#undef S
  };
  for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
    *syms[i].slot = dlsym(h, syms[i].name);
    if (!*syms[i].slot) { snprintf(absent_reason, sizeof absent_reason, "libOpenCL has no %s", syms[i].name); return; }
  }
  cl_platform_id plats[8];
  cl_uint np = 0;
  if (cl.GetPlatformIDs(8, plats, &np) != 0 || np == 0) {
    snprintf(absent_reason, sizeof absent_reason, "no OpenCL platform (install a driver, e.g. pocl-opencl-icd)");
    return;
  }
  for (cl_uint p = 0; p < np && p < 8; p++) {
    cl_device_id ids[MAX_CL_DEVICES];
    cl_uint nd = 0;
    if (cl.GetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, MAX_CL_DEVICES, ids, &nd) != 0) continue;
    for (cl_uint i = 0; i < nd && ndevices < MAX_CL_DEVICES; i++) { device_platforms[ndevices] = plats[p]; device_ids[ndevices++] = ids[i]; }
  }
  if (!ndevices) snprintf(absent_reason, sizeof absent_reason, "the OpenCL platforms have no devices");
}

int opencl_count(const char **why) {
  pthread_once(&probe_once, probe);
  if (!ndevices && why) *why = absent_reason;
  return ndevices;
}

static const char *cl_errname(cl_int e) {
  switch (e) {
  case -4: return "CL_MEM_OBJECT_ALLOCATION_FAILURE";
  case -5: return "CL_OUT_OF_RESOURCES";
  case -6: return "CL_OUT_OF_HOST_MEMORY";
  case -11: return "CL_BUILD_PROGRAM_FAILURE";
  case -30: return "CL_INVALID_VALUE";
  case -38: return "CL_INVALID_MEM_OBJECT";
  case -46: return "CL_INVALID_KERNEL_NAME";
  case -48: return "CL_INVALID_KERNEL";
  case -49: return "CL_INVALID_ARG_INDEX";
  case -51: return "CL_INVALID_ARG_SIZE";
  case -52: return "CL_INVALID_KERNEL_ARGS";
  case -54: return "CL_INVALID_WORK_GROUP_SIZE";
  case -55: return "CL_INVALID_WORK_ITEM_SIZE";
  case -61: return "CL_INVALID_BUFFER_SIZE";
  case -63: return "CL_INVALID_GLOBAL_WORK_SIZE";
  default: return "error";
  }
}

/* ---------------------------------------------------------------- memory */

static void *cl_alloc(tg_device *d, size_t nbytes) {
  cl_dev *c = d->impl;
  cl_int err = 0;
  cl_mem m = cl.CreateBuffer(c->ctx, CL_MEM_READ_WRITE, nbytes ? nbytes : 4, NULL, &err);
  if (!m || err) {
    if (err == CL_MEM_OBJECT_ALLOCATION_FAILURE || err == CL_OUT_OF_RESOURCES || err == CL_OUT_OF_HOST_MEMORY || err == -61)
      TG_FAIL("%s: out of device memory allocating %zu bytes (%s)", d->name, nbytes, cl_errname(err));
    TG_FAIL("%s: cannot allocate %zu bytes (%s %d)", d->name, nbytes, cl_errname(err), err);
  }
  return m;
}
static void cl_free(tg_device *d, void *p, size_t nbytes) { if (p) cl.ReleaseMemObject(p); }

static int cl_copyin(tg_device *d, void *dst, const void *host, size_t n) {
  cl_dev *c = d->impl;
  if (!n) return 0;
  cl_int e = cl.EnqueueWriteBuffer(c->queue, dst, 1, 0, n, host, 0, NULL, NULL);   /* blocking: host may go at once */
  return e ? tg_seterr("%s: copy of %zu bytes to the device failed (%s %d)", d->name, n, cl_errname(e), e) : 0;
}
static int cl_copyout(tg_device *d, void *host, const void *src, size_t n) {
  cl_dev *c = d->impl;
  if (!n) return 0;
  cl_int e = cl.EnqueueReadBuffer(c->queue, (cl_mem)src, 1, 0, n, host, 0, NULL, NULL);
  return e ? tg_seterr("%s: copy of %zu bytes from the device failed (%s %d)", d->name, n, cl_errname(e), e) : 0;
}

static int cl_sync(tg_device *d) {
  cl_dev *c = d->impl;
  cl_int e = cl.Finish(c->queue);
  return e ? tg_seterr("%s: clFinish failed (%s %d)", d->name, cl_errname(e), e) : 0;
}

/* ---------------------------------------------------------------- compiling */

static char *build_log(cl_dev *c, cl_program p) {
  size_t n = 0;
  cl.GetProgramBuildInfo(p, c->id, CL_PROGRAM_BUILD_LOG, 0, NULL, &n);
  char *log = tg_xcalloc(1, n + 1);
  if (n) cl.GetProgramBuildInfo(p, c->id, CL_PROGRAM_BUILD_LOG, n, log, NULL);
  return log;
}

static tg_program *cl_compile(tg_device *d, const char *src, const char *name) {
  cl_dev *c = d->impl;
  if (!src || !name || !*name) TG_FAIL("%s: compile needs a source and a kernel name", d->name);
  char *path = compile_cache_path(src, c->ident, c->options, ".clbin");
  cl_int err = 0;
  cl_program prog = NULL;
  size_t bn = 0;
  unsigned char *bin = path ? cache_read_file(path, &bn) : NULL;
  bool cached = false;
  if (bin) {
    cl_int status = 0;
    prog = cl.CreateProgramWithBinary(c->ctx, 1, &c->id, &bn, (const unsigned char **)&bin, &status, &err);
    if (prog && !err && !status && cl.BuildProgram(prog, 1, &c->id, c->options, NULL, NULL) == 0) cached = true;
    else if (prog) { cl.ReleaseProgram(prog); prog = NULL; }   /* stale: build from source */
    free(bin);
  }
  if (!prog) {
    prog = cl.CreateProgramWithSource(c->ctx, 1, &src, NULL, &err);
    if (!prog || err) { free(path); TG_FAIL("%s: clCreateProgramWithSource for kernel '%s' failed (%s %d)", d->name, name, cl_errname(err), err); }
    err = cl.BuildProgram(prog, 1, &c->id, c->options, NULL, NULL);
    if (err) {
      char *log = build_log(c, prog);
      compile_error(d->name, name, log, src);
      free(log);
      cl.ReleaseProgram(prog);
      free(path);
      return NULL;
    }
    size_t sz = 0;
    if (path && cl.GetProgramInfo(prog, CL_PROGRAM_BINARY_SIZES, sizeof sz, &sz, NULL) == 0 && sz) {
      unsigned char *out = tg_xmalloc(sz);
      if (cl.GetProgramInfo(prog, CL_PROGRAM_BINARIES, sizeof out, &out, NULL) == 0) cache_write_file(path, out, sz);
      free(out);
    }
  }
  free(path);
  counters_add_compile(cached);
  cl_kernel k = cl.CreateKernel(prog, name, &err);
  cl.ReleaseProgram(prog);   /* the kernel keeps it */
  if (!k || err) TG_FAIL("%s: kernel '%s' not found in its program (%s %d)", d->name, name, cl_errname(err), err);
  tg_program *p = tg_xcalloc(1, sizeof *p);
  p->dev = d;
  p->name = tg_xstrdup(name);
  p->impl = k;
  for (int i = 0; i < 3; i++) p->global[i] = p->local[i] = 1;
  return p;
}

static void cl_program_free(tg_device *d, tg_program *p) {
  if (!p) return;
  if (p->impl) cl.ReleaseKernel(p->impl);
  free(p->name);
  free(p);
}

/* ---------------------------------------------------------------- launching */

static int enqueue(tg_device *d, tg_program *p, void **bufs, int nbufs, const int64_t *vars, int nvars, cl_event *ev) {
  cl_dev *c = d->impl;
  if (!p || !p->impl) return tg_seterr("%s: launch of a program with no kernel ('%s')", d->name, p && p->name ? p->name : "?");
  int nb = program_buffer_args(p, nbufs);
  size_t global[3], local[3];
  for (int i = 0; i < 3; i++) { global[i] = (size_t)(p->global[i] * p->local[i]); local[i] = (size_t)p->local[i]; }
  pthread_mutex_lock(&c->lock);
  cl_int e = 0;
  for (int i = 0; i < nb && !e; i++) e = cl.SetKernelArg(p->impl, (cl_uint)i, sizeof(cl_mem), &bufs[i]);
  for (int v = 0; v < nvars && !e; v++) e = cl.SetKernelArg(p->impl, (cl_uint)(nb + v), sizeof(cl_ulong), &vars[v]);
  if (!e) e = cl.EnqueueNDRangeKernel(c->queue, p->impl, 3, NULL, global, local, 0, NULL, ev);
  pthread_mutex_unlock(&c->lock);
  if (e) return tg_seterr("%s: launching kernel '%s' (global %zux%zux%zu, local %zux%zux%zu) failed: %s %d", d->name, p->name,
                          global[0], global[1], global[2], local[0], local[1], local[2], cl_errname(e), e);
  return 0;
}

static int cl_launch(tg_device *d, tg_program *p, void **bufs, int nbufs, const int64_t *vars, int nvars) {
  return enqueue(d, p, bufs, nbufs, vars, nvars, NULL);
}

static int cl_launch_timed(tg_device *d, tg_program *p, void **bufs, int nbufs, const int64_t *vars, int nvars, double *seconds) {
  cl_event ev = NULL;
  if (enqueue(d, p, bufs, nbufs, vars, nvars, &ev) < 0) return -1;
  cl_int e = cl.WaitForEvents(1, &ev);
  cl_ulong t0 = 0, t1 = 0;
  if (!e) e = cl.GetEventProfilingInfo(ev, CL_PROFILING_COMMAND_START, sizeof t0, &t0, NULL);
  if (!e) e = cl.GetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof t1, &t1, NULL);
  cl.ReleaseEvent(ev);
  if (e) return tg_seterr("%s: kernel '%s' failed while running (%s %d)", d->name, p->name, cl_errname(e), e);
  *seconds = (double)(t1 - t0) * 1e-9;
  return 0;
}

/* ---------------------------------------------------------------- the device */

tg_device *opencl_open(int index) {
  pthread_once(&probe_once, probe);
  if (index < 0 || index >= ndevices) TG_FAIL("CL:%d: no such OpenCL device (%d present)", index, ndevices);
  cl_dev *c = tg_xcalloc(1, sizeof *c);
  c->id = device_ids[index];
  cl_int err = 0;
  c->ctx = cl.CreateContext(NULL, 1, &c->id, NULL, NULL, &err);
  if (!c->ctx || err) { free(c); TG_FAIL("CL:%d: clCreateContext failed (%s %d)", index, cl_errname(err), err); }
  c->queue = cl.CreateCommandQueue(c->ctx, c->id, CL_QUEUE_PROFILING_ENABLE, &err);
  if (!c->queue || err) { free(c); TG_FAIL("CL:%d: clCreateCommandQueue failed (%s %d)", index, cl_errname(err), err); }
  pthread_mutex_init(&c->lock, NULL);
  char dname[256] = "", drv[128] = "", plat[128] = "";
  cl.GetDeviceInfo(c->id, CL_DEVICE_NAME, sizeof dname - 1, dname, NULL);
  cl.GetDeviceInfo(c->id, CL_DRIVER_VERSION, sizeof drv - 1, drv, NULL);
  cl.GetPlatformInfo(device_platforms[index], CL_PLATFORM_NAME, sizeof plat - 1, plat, NULL);
  snprintf(c->ident, sizeof c->ident, "opencl|%s|%s|%s", plat, dname, drv);
  cl_ulong fp = 0, lmem = 0, gmem = 0;
  size_t maxwg = 0, items[3] = { 0, 0, 0 };
  cl.GetDeviceInfo(c->id, CL_DEVICE_SINGLE_FP_CONFIG, sizeof fp, &fp, NULL);
  cl.GetDeviceInfo(c->id, CL_DEVICE_LOCAL_MEM_SIZE, sizeof lmem, &lmem, NULL);
  cl.GetDeviceInfo(c->id, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof gmem, &gmem, NULL);
  cl.GetDeviceInfo(c->id, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof maxwg, &maxwg, NULL);
  cl.GetDeviceInfo(c->id, CL_DEVICE_MAX_WORK_ITEM_SIZES, sizeof items, items, NULL);
  /* division and square roots rounded as on the CPU, where the device can */
  snprintf(c->options, sizeof c->options, "-cl-std=CL1.2%s", fp & CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT ? " -cl-fp32-correctly-rounded-divide-sqrt" : "");
  c->ren = renderer_opencl;
  if (lmem) c->ren.local_mem = (int64_t)lmem;
  if (maxwg) c->ren.max_local = maxwg > 1024 ? 1024 : (int)maxwg;
  for (int i = 0; i < 3; i++) if (items[i]) c->ren.local_max[i] = (int64_t)items[i] < c->ren.max_local ? (int64_t)items[i] : c->ren.max_local;
  /* CUDA's tensor cores emulated through local memory (dialect_opencl.c):
   * tests the tensor-core kernels where no NVIDIA GPU is */
  if (setting_int(SET_TG_CL_EMULATE_TC) && c->ren.local_max[0] >= 32)
    c->ren.tensor_cores = tensor_cores_mma_m16n8k16, c->ren.n_tensor_cores = 2;
  static const tg_device functions = { .alloc = cl_alloc, .free = cl_free, .copyin = cl_copyin, .copyout = cl_copyout,
    .compile = cl_compile, .program_free = cl_program_free, .launch = cl_launch, .launch_timed = cl_launch_timed, .synchronize = cl_sync };
  tg_device *d = device_new(&functions, "CL", index, &c->ren, c->options, (int64_t)gmem, c);
  snprintf(d->description, sizeof d->description, "%s (%s, %s)", dname, plat, drv);
  return d;
}
