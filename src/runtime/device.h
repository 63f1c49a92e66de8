/* device.h: a device is a small table of functions: buffers, copies,
 * compiling source to a loaded program, and launching it. Devices know
 * nothing of tensors or UOps. */
#ifndef TG_DEVICE_H
#define TG_DEVICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "tg.h"
#include "renderer/renderer.h"

typedef struct tg_device tg_device;
typedef struct tg_program tg_program;

/* Every kernel tg generates for the CPU has this signature (GPU kernels take
 * their buffers and variables as arguments: see docs/devices.md):
 * bufs are the kernel's buffers in DEFINE_GLOBAL order, vars the values of
 * its symbolic variables; core/ncores split the outermost parallel loop. */
typedef void (*tg_kernel_fn)(void **bufs, const int64_t *vars, int core, int ncores);

struct tg_program {
  tg_device *dev;
  char *name;
  tg_kernel_fn fn;      /* CPU: the loaded function; NULL on the NULL device */
  void *handle;         /* CPU: the dlopen handle */
  int max_cores;        /* how many cores the kernel may use: 1 = the calling
                         * thread only (a kernel that ignores core/ncores);
                         * 0 (the default) = all of the pool's; set by the
                         * engine after compile */
  /* GPU devices: groups per dimension and threads per group (set by the
   * engine after compile, from codegen), and how many buffer parameters
   * the kernel declares (0: all the launch passes) */
  int64_t global[3], local[3];
  int nbuf_args;
  void *impl;           /* the backend's kernel object */
};

struct tg_device {
  const char *name;
  /* Memory. alloc returns NULL (and sets tg_error) on failure. */
  void *(*alloc)(tg_device *d, size_t nbytes);
  /* Optional: memory that reads as zeros (NULL: the engine runs a kernel
   * that stores them). */
  void *(*alloc_zeroed)(tg_device *d, size_t nbytes);
  void (*free)(tg_device *d, void *p, size_t nbytes);
  int (*copyin)(tg_device *d, void *dst, const void *host, size_t n);
  int (*copyout)(tg_device *d, void *host, const void *src, size_t n);
  /* Compile source and load the function `name` from it. NULL + tg_error on a
   * failed compile or a missing compiler. */
  tg_program *(*compile)(tg_device *d, const char *src, const char *name);
  void (*program_free)(tg_device *d, tg_program *p);
  /* Run a loaded program. Returns 0 or a negative error. */
  int (*launch)(tg_device *d, tg_program *p, void **bufs, int nbufs, const int64_t *vars, int nvars);
  /* Optional: runs n programs in order as one launch (the JIT's batches),
   * each finishing before the next starts; bufs[i] and vars[i] are program
   * i's. NULL: the engine launches them one by one. */
  int (*launch_batch)(tg_device *d, tg_program *const *progs, void **const *bufs, const int64_t *const *vars, int n);
  /* Optional: runs n programs in order as one graph the device keeps
   * (CUDA graphs; the JIT's batches on such a device). *graph is NULL at a
   * batch's first run and holds the device's graph after it: later runs
   * give the same programs, update the arguments that changed and launch
   * the graph whole. nbufs[i] and nvars[i] count program i's arguments.
   * graph_free gives a graph back. */
  int (*launch_graph)(tg_device *d, void **graph, tg_program *const *progs, void **const *bufs, const int *nbufs, const int64_t *const *vars,
                      const int *nvars, int n);
  void (*graph_free)(tg_device *d, void *graph);
  /* Who writes its kernels and what they may use (renderer.h): the table
   * of its dialect, with limits the device read from its driver. */
  const tg_renderer *renderer;
  /* How it compiles them (flags that change the code), or NULL: part of any
   * cache of choices made by timing its kernels (BEAM). */
  const char *compile_flags;
  /* Waits for every launch and copy queued on it (NULL: it never queues). */
  int (*synchronize)(tg_device *d);
  /* Runs p like launch, waits, and gives the kernel's own run time from the
   * device's timer (events); NULL: the engine times launch by the clock. */
  int (*launch_timed)(tg_device *d, tg_program *p, void **bufs, int nbufs, const int64_t *vars, int nvars, double *seconds);
  /* Buffers are plain host pointers (the CPU devices): code on the host,
   * such as MPI, may read and write them directly. */
  bool host_memory;
  /* what tg_devices reports */
  char description[128];
  int64_t memory;                /* bytes, 0 when unknown */
  void *impl;                    /* the backend's state */
};

/* Looks a device up by name, case-insensitive: "CPU", "NULL", "DISK",
 * "CL" (= "CL:0"), "CL:1", "CUDA", "CUDA:1"; opens it on first use. NULL +
 * tg_error when unknown or absent, naming the devices that are present. */
tg_device *device_get(const char *name);

/* A backend of the registry: a name prefix, how many of its devices are
 * present (0 with a reason when its library or hardware is missing), and
 * how to open device i (NULL + tg_error). */
typedef struct {
  const char *prefix;
  int (*count)(const char **why_absent);
  tg_device *(*open)(int index);
} device_backend;

/* How many of a launch's nbufs buffers p's kernel takes as parameters. */
static inline int program_buffer_args(const tg_program *p, int nbufs) { return p->nbuf_args > 0 && p->nbuf_args < nbufs ? p->nbuf_args : nbufs; }

/* "CL" for index 0, "CL:1" for the next: the canonical name of a device. */
void device_name(char *buf, size_t n, const char *prefix, int index);

/* A device of a backend that opens them at run time: its functions from a
 * template, named PREFIX (index 0) or PREFIX:index, with its renderer,
 * compile flags, memory and backend state. */
tg_device *device_new(const tg_device *functions, const char *prefix, int index, const tg_renderer *ren, const char *flags, int64_t memory, void *impl);

/* Runs a launch and times it: the device's timer when it has one, else the
 * wall clock around launch (after synchronizing). */
int device_launch_timed(tg_device *d, tg_program *p, void **bufs, int nbufs, const int64_t *vars, int nvars, double *seconds);

/* ---- the on-disk compile cache shared by compiling devices.
 * Key: a hash of source, compiler and flags. Directory: $XDG_CACHE_HOME/tg or
 * ~/.cache/tg (TG_CACHE_DIR overrides; TG_NOCACHE=1 disables reads). */
char *compile_cache_path(const char *src, const char *compiler, const char *flags, const char *ext);
/* A cached file's bytes (malloc'd), or NULL when absent or TG_NOCACHE=1. */
void *cache_read_file(const char *path, size_t *n);
/* Writes a cache file through a temp file and a rename (0, or -1). */
int cache_write_file(const char *path, const void *data, size_t n);
/* A cache file whose contents are checked when read: magic (a line), a
 * hash of the body and its length, then the body (0, or -1). */
int cache_write_checked(const char *path, const char *magic, const void *body, size_t n);
/* The body (malloc'd, *n bytes) of such a file written with magic, or NULL
 * when it is absent, damaged or another kind, or TG_NOCACHE=1. */
char *cache_read_checked(const char *path, const char *magic, size_t *n);
/* Sets tg_error for a failed compile: the device, the kernel, the
 * compiler's log, and the source lines the log points at. Returns -1. */
int compile_error(const char *device, const char *kernel, const char *log, const char *src);

#endif
