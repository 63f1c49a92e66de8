/* cuda.h: what the CUDA backend (cuda.c) offers beyond the device table. */
#ifndef TG_CUDA_H
#define TG_CUDA_H

#include "runtime/device.h"

/* Whether NVRTC (the CUDA toolkit's run-time compiler) could be loaded;
 * *why says what is missing when not. */
bool cuda_nvrtc_available(const char **why);
/* Compiles a CUDA C kernel with NVRTC for compute_<arch> (e.g. 90), without
 * a GPU: 0, or -1 with tg_error holding the log and the offending lines. */
int cuda_check_source(const char *src, const char *name, int arch);
/* d's context made current on this thread (for libraries that run on it,
 * as NCCL): the GPU's ordinal, or -1 + tg_error when d is not a CUDA
 * device or its context cannot be made current. */
int cuda_device_enter(tg_device *d);

#endif
