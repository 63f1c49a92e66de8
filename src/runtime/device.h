/* device.h: a device is a small table of functions: buffers, copies,
 * compiling source to a loaded program, and launching it. Devices know
 * nothing of tensors or UOps. */
#ifndef TG_DEVICE_H
#define TG_DEVICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "tg.h"

typedef struct tg_device tg_device;
typedef struct tg_program tg_program;

/* Every kernel tg generates for a CPU-like device has this signature:
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
};

struct tg_device {
  const char *name;
  /* Memory. alloc returns NULL (and sets tg_error) on failure. */
  void *(*alloc)(tg_device *d, size_t nbytes);
  void (*free)(tg_device *d, void *p, size_t nbytes);
  int (*copyin)(tg_device *d, void *dst, const void *host, size_t n);
  int (*copyout)(tg_device *d, void *host, const void *src, size_t n);
  /* Compile source and load the function `name` from it. NULL + tg_error on a
   * failed compile or a missing compiler. */
  tg_program *(*compile)(tg_device *d, const char *src, const char *name);
  void (*program_free)(tg_device *d, tg_program *p);
  /* Run a loaded program. Returns 0 or a negative error. */
  int (*launch)(tg_device *d, tg_program *p, void **bufs, int nbufs, const int64_t *vars, int nvars);
  /* Which renderer writes its kernels: "c" for CPU-like devices. */
  const char *renderer;
  /* How it compiles them (flags that change the code), or NULL: part of any
   * cache of choices made by timing its kernels (BEAM). */
  const char *compile_flags;
};

/* Look a device up by name ("CPU", "NULL"; case-insensitive). NULL + tg_error
 * when unknown. */
tg_device *device_get(const char *name);

/* ---- the on-disk compile cache shared by compiling devices.
 * Key: a hash of source, compiler and flags. Directory: $XDG_CACHE_HOME/tg or
 * ~/.cache/tg (TG_CACHE_DIR overrides; TG_NOCACHE=1 disables reads). */
char *compile_cache_path(const char *src, const char *compiler, const char *flags, const char *ext);

#endif
