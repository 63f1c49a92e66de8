/* backends.h: the entry points device.c's registry calls, one set per
 * backend: a static device (CPU, NULL, DISK), or how many devices are
 * present (0 with the reason in *why) and how to open one (OpenCL, CUDA). */
#ifndef TG_BACKENDS_H
#define TG_BACKENDS_H

#include "runtime/device.h"

struct tg_device *cpu_device(void);     /* cpu.c: CPU (= CPU:0) */
int cpu_count(const char **why);        /* cpu.c: CPU:1, CPU:2, ... */
tg_device *cpu_open(int index);
struct tg_device *null_device(void);    /* null_device.c */
struct tg_device *disk_device(void);    /* disk_device.c */
int opencl_count(const char **why);     /* opencl.c */
tg_device *opencl_open(int index);
int cuda_count(const char **why);       /* cuda.c */
tg_device *cuda_open(int index);

#endif
