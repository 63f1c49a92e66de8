/* cuda.c: the CUDA devices, through the driver API (libcuda.so.1, from the
 * NVIDIA driver) and NVRTC (libnvrtc, from the CUDA toolkit), both opened
 * with dlopen on first use: tg builds and runs without either.
 *
 * Kernels are CUDA C from the "cuda" renderer, compiled by NVRTC to PTX for
 * the device's compute capability (compute_XY), cached on disk by source,
 * NVRTC version and architecture, and loaded with cuModuleLoadData (the
 * driver turns PTX into machine code). Buffers are CUdeviceptr values in
 * tg_buffer.ptr. Launches queue on the context's default stream; copies out
 * wait for them; launch_timed brackets a launch with events.
 *
 * Without a GPU (no driver), NVRTC alone still compiles: cuda_check_source
 * is what the test suite uses to check every kernel it renders. */
#include <dlfcn.h>
#include <pthread.h>
#include <string.h>
#include "runtime/backends.h"
#include "runtime/cuda.h"
#include "util/counters.h"
#include "util/util.h"
#include "util/settings.h"

typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext, *CUmodule, *CUfunction, *CUstream, *CUevent;
typedef unsigned long long CUdeviceptr;
typedef int nvrtcResult;
typedef void *nvrtcProgram;
typedef void *CUgraph, *CUgraphNode, *CUgraphExec;
typedef struct {   /* CUDA_KERNEL_NODE_PARAMS (the first version, which the unsuffixed entry points take) */
  CUfunction func;
  unsigned gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes;
  void **kernelParams, **extra;
} cu_kernel_node;

static struct {
  CUresult (*Init)(unsigned);
  CUresult (*DeviceGetCount)(int *);
  CUresult (*DeviceGet)(CUdevice *, int);
  CUresult (*DeviceGetName)(char *, int, CUdevice);
  CUresult (*DeviceGetAttribute)(int *, int, CUdevice);
  CUresult (*DeviceTotalMem)(size_t *, CUdevice);
  CUresult (*DevicePrimaryCtxRetain)(CUcontext *, CUdevice);
  CUresult (*CtxSetCurrent)(CUcontext);
  CUresult (*CtxSynchronize)(void);
  CUresult (*MemAlloc)(CUdeviceptr *, size_t);
  CUresult (*MemFree)(CUdeviceptr);
  CUresult (*MemcpyHtoD)(CUdeviceptr, const void *, size_t);
  CUresult (*MemcpyDtoH)(void *, CUdeviceptr, size_t);
  CUresult (*ModuleLoadData)(CUmodule *, const void *);
  CUresult (*ModuleGetFunction)(CUfunction *, CUmodule, const char *);
  CUresult (*LaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream, void **, void **);
  CUresult (*EventCreate)(CUevent *, unsigned);
  CUresult (*EventRecord)(CUevent, CUstream);
  CUresult (*EventSynchronize)(CUevent);
  CUresult (*EventElapsedTime)(float *, CUevent, CUevent);
  CUresult (*EventDestroy)(CUevent);
  CUresult (*GetErrorString)(CUresult, const char **);
} cu;

/* CUDA graphs (driver 11.4 and later): the JIT's batches as graphs; a
 * driver without them launches batches kernel by kernel */
static struct {
  CUresult (*GraphCreate)(CUgraph *, unsigned);
  CUresult (*GraphAddKernelNode)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t, const cu_kernel_node *);
  CUresult (*GraphInstantiateWithFlags)(CUgraphExec *, CUgraph, unsigned long long);
  CUresult (*GraphExecKernelNodeSetParams)(CUgraphExec, CUgraphNode, const cu_kernel_node *);
  CUresult (*GraphLaunch)(CUgraphExec, CUstream);
  CUresult (*GraphExecDestroy)(CUgraphExec);
  CUresult (*GraphDestroy)(CUgraph);
} cug;
static bool have_graphs;

static struct {
  nvrtcResult (*Version)(int *, int *);
  nvrtcResult (*CreateProgram)(nvrtcProgram *, const char *, const char *, int, const char *const *, const char *const *);
  nvrtcResult (*CompileProgram)(nvrtcProgram, int, const char *const *);
  nvrtcResult (*GetProgramLogSize)(nvrtcProgram, size_t *);
  nvrtcResult (*GetProgramLog)(nvrtcProgram, char *);
  nvrtcResult (*GetPTXSize)(nvrtcProgram, size_t *);
  nvrtcResult (*GetPTX)(nvrtcProgram, char *);
  nvrtcResult (*DestroyProgram)(nvrtcProgram *);
} nv;

#define CU_ATTR_MAX_THREADS_PER_BLOCK 1
#define CU_ATTR_MAX_BLOCK_DIM_X 2
#define CU_ATTR_MAX_GRID_DIM_X 5
#define CU_ATTR_MAX_SHARED_MEMORY_PER_BLOCK 8
#define CU_ATTR_CC_MAJOR 75
#define CU_ATTR_CC_MINOR 76

static void *open_first(const char *const *names, int n) {
  void *h = NULL;
  for (int i = 0; i < n && !h; i++) h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
  return h;
}

static bool resolve(void *h, void **slots, const char *const *names, int n, char *why, size_t wn, const char *lib) {
  for (int i = 0; i < n; i++) {
    slots[i] = dlsym(h, names[i]);
    if (!slots[i]) { snprintf(why, wn, "%s has no %s", lib, names[i]); return false; }
  }
  return true;
}

/* ---- NVRTC */
static pthread_once_t nvrtc_once = PTHREAD_ONCE_INIT;
static bool nvrtc_ok;
static char nvrtc_why[256], nvrtc_ident[64];

static void nvrtc_load(void) {
  static const char *const libs[] = { "libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2",
    "/usr/local/cuda/lib64/libnvrtc.so", "/usr/local/cuda/targets/x86_64-linux/lib/libnvrtc.so", "/usr/lib/x86_64-linux-gnu/libnvrtc.so" };
  void *h = NULL;
  const char *cp = setting_str(SET_CUDA_PATH);
  if (cp && *cp) {
    char p[512];
    snprintf(p, sizeof p, "%s/lib64/libnvrtc.so", cp);
    h = dlopen(p, RTLD_NOW | RTLD_LOCAL);
  }
  if (!h) h = open_first(libs, (int)(sizeof libs / sizeof libs[0]));
  if (!h) { snprintf(nvrtc_why, sizeof nvrtc_why, "libnvrtc not found (the CUDA toolkit; set CUDA_PATH)"); return; }
  static const char *const names[] = { "nvrtcVersion", "nvrtcCreateProgram", "nvrtcCompileProgram", "nvrtcGetProgramLogSize", "nvrtcGetProgramLog",
    "nvrtcGetPTXSize", "nvrtcGetPTX", "nvrtcDestroyProgram" };
  if (!resolve(h, (void **)&nv, names, 8, nvrtc_why, sizeof nvrtc_why, "libnvrtc")) return;
  int maj = 0, min = 0;
  nv.Version(&maj, &min);
  snprintf(nvrtc_ident, sizeof nvrtc_ident, "nvrtc %d.%d", maj, min);
  nvrtc_ok = true;
}

bool cuda_nvrtc_available(const char **why) {
  pthread_once(&nvrtc_once, nvrtc_load);
  if (!nvrtc_ok && why) *why = nvrtc_why;
  return nvrtc_ok;
}

/* src -> PTX for compute_<arch> (malloc'd), through the disk cache; NULL +
 * tg_error (the log and the offending lines) on a failed compile. */
static char *nvrtc_ptx(const char *device, const char *src, const char *name, int arch, bool *cached) {
  const char *why = NULL;
  if (!cuda_nvrtc_available(&why)) TG_FAIL("%s: cannot compile kernel '%s': %s", device, name, why);
  char opt_arch[48];
  snprintf(opt_arch, sizeof opt_arch, "--gpu-architecture=compute_%d", arch);
  const char *opts[] = { opt_arch, "--fmad=false", "-default-device" };
  char flags[128];
  snprintf(flags, sizeof flags, "%s %s %s", opts[0], opts[1], opts[2]);
  char *path = compile_cache_path(src, nvrtc_ident, flags, ".ptx");
  size_t n = 0;
  char *ptx = path ? cache_read_file(path, &n) : NULL;
  if (ptx) {
    ptx = realloc(ptx, n + 1);
    ptx[n] = 0;
    free(path);
    *cached = true;
    return ptx;
  }
  *cached = false;
  nvrtcProgram prog = NULL;
  if (nv.CreateProgram(&prog, src, name, 0, NULL, NULL) != 0) { free(path); TG_FAIL("%s: nvrtcCreateProgram failed for kernel '%s'", device, name); }
  nvrtcResult rc = nv.CompileProgram(prog, 3, opts);
  if (rc != 0) {
    size_t ln = 0;
    nv.GetProgramLogSize(prog, &ln);
    char *log = tg_xcalloc(1, ln + 1);
    if (ln) nv.GetProgramLog(prog, log);
    compile_error(device, name, log, src);
    free(log);
    nv.DestroyProgram(&prog);
    free(path);
    return NULL;
  }
  size_t pn = 0;
  nv.GetPTXSize(prog, &pn);
  ptx = tg_xcalloc(1, pn + 1);
  nv.GetPTX(prog, ptx);
  nv.DestroyProgram(&prog);
  if (path) cache_write_file(path, ptx, strlen(ptx));
  free(path);
  return ptx;
}

int cuda_check_source(const char *src, const char *name, int arch) {
  bool cached;
  char *ptx = nvrtc_ptx("CUDA (NVRTC)", src, name, arch, &cached);
  if (!ptx) return -1;
  free(ptx);
  return 0;
}

/* ---- the driver */
static pthread_once_t driver_once = PTHREAD_ONCE_INIT;
static int ndevices;
static char driver_why[256];

static void driver_load(void) {
  static const char *const libs[] = { "libcuda.so.1", "libcuda.so" };
  void *h = open_first(libs, 2);
  if (!h) { snprintf(driver_why, sizeof driver_why, "libcuda.so.1 not found (no NVIDIA driver)"); return; }
  static const char *const names[] = { "cuInit", "cuDeviceGetCount", "cuDeviceGet", "cuDeviceGetName", "cuDeviceGetAttribute", "cuDeviceTotalMem_v2",
    "cuDevicePrimaryCtxRetain", "cuCtxSetCurrent", "cuCtxSynchronize", "cuMemAlloc_v2", "cuMemFree_v2", "cuMemcpyHtoD_v2", "cuMemcpyDtoH_v2",
    "cuModuleLoadData", "cuModuleGetFunction", "cuLaunchKernel", "cuEventCreate", "cuEventRecord", "cuEventSynchronize", "cuEventElapsedTime",
    "cuEventDestroy_v2", "cuGetErrorString" };
  if (!resolve(h, (void **)&cu, names, (int)(sizeof names / sizeof names[0]), driver_why, sizeof driver_why, "libcuda")) return;
  static const char *const graph_names[] = { "cuGraphCreate", "cuGraphAddKernelNode", "cuGraphInstantiateWithFlags",
    "cuGraphExecKernelNodeSetParams", "cuGraphLaunch", "cuGraphExecDestroy", "cuGraphDestroy" };
  char no_graphs[128];
  have_graphs = resolve(h, (void **)&cug, graph_names, (int)(sizeof graph_names / sizeof graph_names[0]), no_graphs, sizeof no_graphs, "libcuda");
  CUresult r = cu.Init(0);
  if (r != 0) { snprintf(driver_why, sizeof driver_why, "cuInit failed (error %d: no usable NVIDIA GPU)", r); return; }
  int n = 0;
  if (cu.DeviceGetCount(&n) != 0 || n <= 0) { snprintf(driver_why, sizeof driver_why, "the NVIDIA driver reports no GPU"); return; }
  ndevices = n > 16 ? 16 : n;
}

int cuda_count(const char **why) {
  pthread_once(&driver_once, driver_load);
  if (!ndevices && why) *why = driver_why;
  return ndevices;
}

typedef struct {
  CUdevice dev;
  CUcontext ctx;
  int arch;                 /* compute capability as 10*major+minor */
  tg_renderer ren;
  char flags[32];
} cuda_dev;

static const char *cu_err(CUresult r) {
  const char *s = NULL;
  if (cu.GetErrorString && cu.GetErrorString(r, &s) == 0 && s) return s;
  return "CUDA error";
}

static int use(tg_device *d) {
  cuda_dev *c = d->impl;
  CUresult r = cu.CtxSetCurrent(c->ctx);
  return r ? tg_seterr("%s: cannot make its context current: %s", d->name, cu_err(r)) : 0;
}

static void *cuda_alloc(tg_device *d, size_t nbytes) {
  if (use(d) < 0) return NULL;
  CUdeviceptr p = 0;
  CUresult r = cu.MemAlloc(&p, nbytes ? nbytes : 4);
  if (r == 2) TG_FAIL("%s: out of device memory allocating %zu bytes", d->name, nbytes);   /* CUDA_ERROR_OUT_OF_MEMORY */
  if (r) TG_FAIL("%s: cannot allocate %zu bytes: %s", d->name, nbytes, cu_err(r));
  return (void *)(uintptr_t)p;
}
static void cuda_free(tg_device *d, void *p, size_t nbytes) { if (p && use(d) == 0) cu.MemFree((CUdeviceptr)(uintptr_t)p); }
static int cuda_copyin(tg_device *d, void *dst, const void *host, size_t n) {
  if (!n) return 0;
  if (use(d) < 0) return -1;
  CUresult r = cu.MemcpyHtoD((CUdeviceptr)(uintptr_t)dst, host, n);
  return r ? tg_seterr("%s: copy of %zu bytes to the device failed: %s", d->name, n, cu_err(r)) : 0;
}
static int cuda_copyout(tg_device *d, void *host, const void *src, size_t n) {
  if (!n) return 0;
  if (use(d) < 0) return -1;
  CUresult r = cu.MemcpyDtoH(host, (CUdeviceptr)(uintptr_t)src, n);
  return r ? tg_seterr("%s: copy of %zu bytes from the device failed: %s", d->name, n, cu_err(r)) : 0;
}
static int cuda_sync(tg_device *d) {
  if (use(d) < 0) return -1;
  CUresult r = cu.CtxSynchronize();
  return r ? tg_seterr("%s: a kernel failed: %s", d->name, cu_err(r)) : 0;
}

int cuda_device_enter(tg_device *d) {
  if (!d || d->synchronize != cuda_sync) return tg_seterr("%s is not a CUDA device", d ? d->name : "(none)");
  return use(d) < 0 ? -1 : (int)((cuda_dev *)d->impl)->dev;
}

static tg_program *cuda_compile(tg_device *d, const char *src, const char *name) {
  cuda_dev *c = d->impl;
  if (!src || !name || !*name) TG_FAIL("%s: compile needs a source and a kernel name", d->name);
  bool cached = false;
  char *ptx = nvrtc_ptx(d->name, src, name, c->arch, &cached);
  if (!ptx) return NULL;
  if (use(d) < 0) { free(ptx); return NULL; }
  CUmodule mod = NULL;
  CUfunction fn = NULL;
  CUresult r = cu.ModuleLoadData(&mod, ptx);
  free(ptx);
  if (r) TG_FAIL("%s: cannot load kernel '%s': %s", d->name, name, cu_err(r));
  r = cu.ModuleGetFunction(&fn, mod, name);
  if (r) TG_FAIL("%s: kernel '%s' not found in its module: %s", d->name, name, cu_err(r));
  counters_add_compile(cached);
  tg_program *p = tg_xcalloc(1, sizeof *p);
  p->dev = d;
  p->name = tg_xstrdup(name);
  p->impl = fn;
  p->handle = mod;   /* modules stay loaded until the process exits */
  for (int i = 0; i < 3; i++) p->global[i] = p->local[i] = 1;
  return p;
}

static void cuda_program_free(tg_device *d, tg_program *p) {
  if (!p) return;
  free(p->name);
  free(p);
}

/* A launch's parameters: args[i] points at the i-th value (the buffers'
 * device pointers in ptrs, then the variables), as the driver reads them. */
static int kernel_params(tg_device *d, tg_program *p, void **bufs, int nbufs, const int64_t *vars, int nvars, CUdeviceptr *ptrs, void **args) {
  if (!p || !p->impl) return tg_seterr("%s: launch of a program with no kernel ('%s')", d->name, p && p->name ? p->name : "?");
  int nb = program_buffer_args(p, nbufs);
  if (nb + nvars > 512) return tg_seterr("%s: kernel '%s' has too many arguments", d->name, p->name);
  for (int i = 0; i < nb; i++) { ptrs[i] = (CUdeviceptr)(uintptr_t)bufs[i]; args[i] = &ptrs[i]; }
  for (int v = 0; v < nvars; v++) args[nb + v] = (void *)&vars[v];
  return nb + nvars;
}

static int launch_failed(tg_device *d, tg_program *p, CUresult r) {
  return tg_seterr("%s: launching kernel '%s' (grid %lldx%lldx%lld, block %lldx%lldx%lld) failed: %s", d->name, p->name, (long long)p->global[0],
                   (long long)p->global[1], (long long)p->global[2], (long long)p->local[0], (long long)p->local[1], (long long)p->local[2], cu_err(r));
}

static int cuda_launch(tg_device *d, tg_program *p, void **bufs, int nbufs, const int64_t *vars, int nvars) {
  void *args[512];
  CUdeviceptr ptrs[512];
  if (kernel_params(d, p, bufs, nbufs, vars, nvars, ptrs, args) < 0 || use(d) < 0) return -1;
  CUresult r = cu.LaunchKernel(p->impl, (unsigned)p->global[0], (unsigned)p->global[1], (unsigned)p->global[2],
                               (unsigned)p->local[0], (unsigned)p->local[1], (unsigned)p->local[2], 0, NULL, args, NULL);
  return r ? launch_failed(d, p, r) : 0;
}

/* ---- the JIT's batches as CUDA graphs: one kernel node per program, each
 * after the one before; a later run compares each kernel's argument values
 * with the last ones it gave and updates only the nodes whose changed (a
 * JIT's inputs, outputs and variables), then launches the graph. */
typedef struct {
  CUgraph graph;
  CUgraphExec exec;
  int n;
  CUgraphNode *nodes;
  uint64_t **last;   /* per kernel: its argument values at the last update */
  int *nlast;
} cuda_graph;

static void cuda_graph_free(tg_device *d, void *gp) {
  cuda_graph *g = gp;
  if (!g) return;
  if (use(d) == 0) {
    if (g->exec) cug.GraphExecDestroy(g->exec);
    if (g->graph) cug.GraphDestroy(g->graph);
  }
  for (int i = 0; i < g->n; i++) free(g->last[i]);
  free(g->last); free(g->nlast); free(g->nodes); free(g);
}

static cu_kernel_node node_params(tg_program *p, void **args) {
  return (cu_kernel_node){ p->impl, (unsigned)p->global[0], (unsigned)p->global[1], (unsigned)p->global[2],
                           (unsigned)p->local[0], (unsigned)p->local[1], (unsigned)p->local[2], 0, args, NULL };
}

/* kernel i's argument values (the pointers, then the variables) as 64-bit words */
static void arg_values(uint64_t *w, const CUdeviceptr *ptrs, int nb, const int64_t *vars, int nvars) {
  for (int a = 0; a < nb; a++) w[a] = ptrs[a];
  for (int v = 0; v < nvars; v++) w[nb + v] = (uint64_t)vars[v];
}

static int cuda_graph_build(tg_device *d, cuda_graph *g, tg_program *const *progs, void **const *bufs, const int *nbufs, const int64_t *const *vars,
                            const int *nvars) {
  CUresult r = cug.GraphCreate(&g->graph, 0);
  if (r) return tg_seterr("%s: cannot create a CUDA graph: %s", d->name, cu_err(r));
  for (int i = 0; i < g->n; i++) {
    void *args[512];
    CUdeviceptr ptrs[512];
    int na = kernel_params(d, progs[i], bufs[i], nbufs[i], vars[i], nvars[i], ptrs, args);
    if (na < 0) return -1;
    cu_kernel_node kp = node_params(progs[i], args);
    r = cug.GraphAddKernelNode(&g->nodes[i], g->graph, i ? &g->nodes[i - 1] : NULL, i ? 1 : 0, &kp);
    if (r) return tg_seterr("%s: cannot add kernel '%s' to a CUDA graph: %s", d->name, progs[i]->name, cu_err(r));
    g->nlast[i] = na;
    g->last[i] = tg_xmalloc(sizeof(uint64_t) * (size_t)(na ? na : 1));
    arg_values(g->last[i], ptrs, na - nvars[i], vars[i], nvars[i]);
  }
  r = cug.GraphInstantiateWithFlags(&g->exec, g->graph, 0);
  return r ? tg_seterr("%s: cannot instantiate a CUDA graph of %d kernels: %s", d->name, g->n, cu_err(r)) : 0;
}

static int cuda_launch_graph(tg_device *d, void **gp, tg_program *const *progs, void **const *bufs, const int *nbufs, const int64_t *const *vars,
                             const int *nvars, int n) {
  if (use(d) < 0) return -1;
  cuda_graph *g = *gp;
  if (!g) {
    g = tg_xcalloc(1, sizeof *g);
    g->n = n;
    g->nodes = tg_xcalloc((size_t)n, sizeof(CUgraphNode));
    g->last = tg_xcalloc((size_t)n, sizeof(uint64_t *));
    g->nlast = tg_xcalloc((size_t)n, sizeof(int));
    if (cuda_graph_build(d, g, progs, bufs, nbufs, vars, nvars) < 0) { cuda_graph_free(d, g); return -1; }
    *gp = g;
  } else {
    if (g->n != n) return tg_seterr("%s: a CUDA graph of %d kernels relaunched with %d", d->name, g->n, n);
    for (int i = 0; i < n; i++) {
      void *args[512];
      CUdeviceptr ptrs[512];
      uint64_t now[512];
      int na = kernel_params(d, progs[i], bufs[i], nbufs[i], vars[i], nvars[i], ptrs, args);
      if (na < 0) return -1;
      arg_values(now, ptrs, na - nvars[i], vars[i], nvars[i]);
      if (na == g->nlast[i] && !memcmp(now, g->last[i], sizeof(uint64_t) * (size_t)na)) continue;
      if (na != g->nlast[i]) return tg_seterr("%s: kernel '%s' relaunched in a CUDA graph with %d arguments, not %d", d->name, progs[i]->name, na, g->nlast[i]);
      cu_kernel_node kp = node_params(progs[i], args);
      CUresult r = cug.GraphExecKernelNodeSetParams(g->exec, g->nodes[i], &kp);
      if (r) return tg_seterr("%s: cannot update kernel '%s' in a CUDA graph: %s", d->name, progs[i]->name, cu_err(r));
      memcpy(g->last[i], now, sizeof(uint64_t) * (size_t)na);
    }
  }
  CUresult r = cug.GraphLaunch(g->exec, NULL);
  return r ? tg_seterr("%s: launching a CUDA graph of %d kernels failed: %s", d->name, n, cu_err(r)) : 0;
}

static int cuda_launch_timed(tg_device *d, tg_program *p, void **bufs, int nbufs, const int64_t *vars, int nvars, double *seconds) {
  if (use(d) < 0) return -1;
  CUevent a = NULL, b = NULL;
  if (cu.EventCreate(&a, 0) || cu.EventCreate(&b, 0)) return tg_seterr("%s: cannot create timing events", d->name);
  cu.EventRecord(a, NULL);
  int rc = cuda_launch(d, p, bufs, nbufs, vars, nvars);
  cu.EventRecord(b, NULL);
  CUresult r = cu.EventSynchronize(b);
  float ms = 0;
  if (rc == 0 && r) rc = tg_seterr("%s: kernel '%s' failed while running: %s", d->name, p->name, cu_err(r));
  if (rc == 0) cu.EventElapsedTime(&ms, a, b);
  cu.EventDestroy(a);
  cu.EventDestroy(b);
  *seconds = ms * 1e-3;
  return rc;
}

tg_device *cuda_open(int index) {
  pthread_once(&driver_once, driver_load);
  if (index < 0 || index >= ndevices) TG_FAIL("CUDA:%d: no such GPU (%d present)", index, ndevices);
  cuda_dev *c = tg_xcalloc(1, sizeof *c);
  CUresult r = cu.DeviceGet(&c->dev, index);
  if (!r) r = cu.DevicePrimaryCtxRetain(&c->ctx, c->dev);
  if (r) { free(c); TG_FAIL("CUDA:%d: cannot open the GPU: %s", index, cu_err(r)); }
  int maj = 0, min = 0, maxt = 0, smem = 0;
  int bdim[3] = { 0, 0, 0 }, gdim[3] = { 0, 0, 0 };
  cu.DeviceGetAttribute(&maj, CU_ATTR_CC_MAJOR, c->dev);
  cu.DeviceGetAttribute(&min, CU_ATTR_CC_MINOR, c->dev);
  cu.DeviceGetAttribute(&maxt, CU_ATTR_MAX_THREADS_PER_BLOCK, c->dev);
  cu.DeviceGetAttribute(&smem, CU_ATTR_MAX_SHARED_MEMORY_PER_BLOCK, c->dev);
  for (int i = 0; i < 3; i++) {
    cu.DeviceGetAttribute(&bdim[i], CU_ATTR_MAX_BLOCK_DIM_X + i, c->dev);
    cu.DeviceGetAttribute(&gdim[i], CU_ATTR_MAX_GRID_DIM_X + i, c->dev);
  }
  c->arch = maj * 10 + min;
  c->ren = renderer_cuda;
  if (c->arch < 80) c->ren.tensor_cores = NULL, c->ren.n_tensor_cores = 0;   /* mma.sync m16n8k16 needs sm_80 */
  if (maxt > 0) c->ren.max_local = maxt;
  if (smem > 0) c->ren.local_mem = smem;
  for (int i = 0; i < 3; i++) {
    if (bdim[i] > 0) c->ren.local_max[i] = bdim[i];
    if (gdim[i] > 0) c->ren.global_max[i] = gdim[i];
  }
  snprintf(c->flags, sizeof c->flags, "compute_%d", c->arch);
  char name[128] = "";
  size_t mem = 0;
  cu.DeviceGetName(name, sizeof name - 1, c->dev);
  cu.DeviceTotalMem(&mem, c->dev);
  tg_device functions = { .alloc = cuda_alloc, .free = cuda_free, .copyin = cuda_copyin, .copyout = cuda_copyout,
    .compile = cuda_compile, .program_free = cuda_program_free, .launch = cuda_launch, .launch_timed = cuda_launch_timed, .synchronize = cuda_sync };
  if (have_graphs && setting_int(SET_TG_CUDA_GRAPHS) != 0) functions.launch_graph = cuda_launch_graph, functions.graph_free = cuda_graph_free;
  tg_device *d = device_new(&functions, "CUDA", index, &c->ren, c->flags, (int64_t)mem, c);
  snprintf(d->description, sizeof d->description, "%s (compute %d.%d)", name, maj, min);
  return d;
}
