/* settings.h: every environment variable tg reads, in one table: name,
 * type, default, one line of documentation. Code reads them only through
 * the accessors below (the test settings_no_stray_getenv holds src/ to it),
 * `tg env` prints the table with the values now, and docs/debugging.md's
 * table of variables is checked against it (settings_documented).
 *
 * Values are read from the environment at each call, never cached: tests
 * and programs setenv between calls and expect the next call to see it.
 *
 * Types: SETTING_INT is a number (unset or empty: the default); SETTING_FLAG
 * is on when the variable is set at all, to anything ("TG_NO_LAYOUT=0" is
 * on too); SETTING_STR is text (the default only documents what happens
 * when unset; setting_str returns NULL then). */
#ifndef TG_UTIL_SETTINGS_H
#define TG_UTIL_SETTINGS_H

#include <stdbool.h>
#include <stdint.h>

typedef enum { SETTING_INT, SETTING_FLAG, SETTING_STR } setting_type;

/* X(name, type, default, doc) */
#define TG_SETTINGS(X) \
  /* debugging and tracing (docs/debugging.md, docs/viz.md) */ \
  X(DEBUG, SETTING_INT, "0", "1: print every error and cache problem; 2: a line per kernel compiled and run; 3: ASTs and opts; 4: C source; 5-6: linearized program and kernel graph; 7: disassembly") \
  X(TRACK_REWRITES, SETTING_INT, "0", "1: a line per rewrite rule that fires; 2: also the graphs before and after") \
  X(VIZ, SETTING_INT, "0", "-1: record a trace of every rewrite, kernel and run to TG_VIZ_DIR (read with tg viz); 1: also serve the VIZ page at exit") \
  X(TG_VIZ_DIR, SETTING_STR, "./tg-viz", "where VIZ traces are written, and what tg viz reads") \
  X(TG_VIZ_MAX_MB, SETTING_INT, "256", "MiB of graph detail a VIZ trace keeps before it records names only") \
  X(TG_VIZ_HOST, SETTING_STR, "127.0.0.1", "the address the VIZ page is served on at exit") \
  X(TG_VIZ_PORT, SETTING_INT, "8000", "the port the VIZ page is served on at exit") \
  X(TG_VIZ_SERVE_SECONDS, SETTING_INT, "0", "seconds the VIZ page is served at exit (0: until interrupted)") \
  X(TG_KERNEL_TIMES, SETTING_INT, "0", "1: time every kernel run (tg_get_counters), as DEBUG=2 does") \
  X(TG_DEBUG_VEC, SETTING_INT, "0", "1: print why a kernel's lanes did not vectorize") \
  X(OBJDUMP, SETTING_STR, "objdump", "the disassembler DEBUG=7 runs") \
  X(NO_COLOR, SETTING_STR, "", "set (non-empty): tg viz prints no colours") \
  /* devices, threads and the compile cache (docs/devices.md, docs/runtime.md) */ \
  X(TG_DEVICE, SETTING_STR, "CPU", "the default device (CPU, NULL, CL, CL:1, CUDA ...)") \
  X(TG_CPU_DEVICES, SETTING_INT, "2", "how many CPU devices (CPU, CPU:1 ...) one process has") \
  X(TG_THREADS, SETTING_STR, "", "worker threads of CPU kernels (default: the cores this process may run on)") \
  X(TG_ALLOC_CACHE_MB, SETTING_INT, "1024", "MiB of freed buffers kept for reuse") \
  X(TG_CL_EMULATE_TC, SETTING_INT, "0", "1: OpenCL emulates CUDA's tensor cores through local memory (tests them without an NVIDIA GPU)") \
  X(CUDA_PATH, SETTING_STR, "", "a CUDA toolkit whose NVRTC is tried first") \
  X(CC, SETTING_STR, "", "the compiler for CPU kernels (default: the first of clang, gcc, cc on PATH)") \
  X(PATH, SETTING_STR, "", "searched for the kernel compiler") \
  X(TG_NOCACHE, SETTING_INT, "0", "1: ignore the kernel caches on disk (always lower, render and compile; results are still stored)") \
  X(TG_CACHE_DIR, SETTING_STR, "", "where compiled kernels are stored (default $XDG_CACHE_HOME/tg, else ~/.cache/tg)") \
  X(XDG_CACHE_HOME, SETTING_STR, "", "the cache root when TG_CACHE_DIR is unset") \
  X(HOME, SETTING_STR, "", "~/.cache/tg when neither TG_CACHE_DIR nor XDG_CACHE_HOME is set") \
  X(TMPDIR, SETTING_STR, "/tmp", "where the kernel cache goes when no home directory is known") \
  /* dtypes (docs/dtypes.md) */ \
  X(DEFAULT_FLOAT, SETTING_STR, "float32", "the float dtype ints become (tg_default_float), read once") \
  X(SUM_DTYPE, SETTING_STR, "float32", "the float dtype sums accumulate in at least (tg_sum_acc_float), read once") \
  /* kernel choices (docs/kernel_opts.md) */ \
  X(TG_OPTS, SETTING_STR, "", "kernel opts for every kernel (UPCAST:0:4,...) instead of the heuristic (tg_set_kernel_opts)") \
  X(NOOPT, SETTING_INT, "0", "1: no kernel opts at all") \
  X(BEAM, SETTING_INT, "0", "N: search kernel opts with a beam of width N (results cached)") \
  X(JITBEAM, SETTING_INT, "0", "N: BEAM=N for the kernels a tg_jit captures") \
  X(TG_NOVEC, SETTING_INT, "0", "1: no vector lanes in kernels") \
  X(TG_NO_PREFETCH, SETTING_FLAG, "", "set: CPU kernels get no prefetch hints") \
  /* scheduling (docs/internals.md) */ \
  X(TG_NO_LAYOUT, SETTING_FLAG, "", "set: the scheduler keeps every intermediate in its row-major layout") \
  X(TG_NO_LOWER_CACHE, SETTING_FLAG, "", "set: lower every kernel anew (no cache of lowered kernels)") \
  X(TG_NO_SCHEDULE_CACHE, SETTING_FLAG, "", "set: schedule every graph anew (no cache of whole schedules by the graph's structure)") \
  X(TG_SCHEDULE_CACHE_CHECK, SETTING_FLAG, "", "set: schedule again every graph whose schedule was found by its structure, and abort with a report if they differ") \
  X(TG_NO_SHARED_STORE, SETTING_FLAG, "", "set: values read by several kernels are recomputed rather than stored once when costly") \
  X(TG_NO_SMALL_FORMS, SETTING_FLAG, "", "set: no small-form kernels (tiny reductions folded into their users)") \
  X(TG_NO_MULTI_OUTPUT, SETTING_INT, "0", "1: sibling kernels are not merged into multi-output kernels") \
  X(TG_NO_MATMUL_PACK, SETTING_FLAG, "", "set: matmuls read their operands as they are (no packed copy)") \
  X(TG_CONV_GENERIC_GRAD, SETTING_FLAG, "", "set: convolution weight gradients by the generic rule (no transposed form)") \
  X(TG_CONV_NO_CHANNEL_LANES, SETTING_FLAG, "", "set: convolutions do not vectorize over channels") \
  /* JIT (docs/jit.md) */ \
  X(JIT, SETTING_INT, "1", "2: a tg_jit replays kernel by kernel (no batches)") \
  X(JIT_BATCH_SIZE, SETTING_INT, "32", "kernels a tg_jit replay runs per batch") \
  X(TG_CUDA_GRAPHS, SETTING_INT, "1", "0: a tg_jit replay on CUDA launches its batches kernel by kernel, not as CUDA graphs") \
  /* language models (docs/llm.md) */ \
  X(TG_LLM_FUNCTIONS, SETTING_INT, "1", "0: LLM layers inline instead of one function per kind of layer") \
  X(TG_LLM_FLOAT_MATVEC, SETTING_FLAG, "", "set: quantized weights are dequantized to float for matvecs") \
  X(TG_LLM_NO_ROWS, SETTING_FLAG, "", "set: quantized weights stay in ggml blocks (no row-packed copies)") \
  X(TG_PACK_CACHE, SETTING_INT, "1", "0: a model's row-packed weights are packed at every load, never kept in $TG_CACHE_DIR/packed (docs/llm.md)") \
  X(TG_PACK_CACHE_MIN_MB, SETTING_INT, "16", "models whose row-packed weights are smaller (MiB) are packed at every load, not cached") \
  X(TG_LLM_NO_PANELS, SETTING_FLAG, "", "set: float weights (F32, F16, BF16) stay in the file's row layout (no 32-row panels)") \
  X(TG_LLM_ROWS_K_PREFILL, SETTING_INT, "1", "0: prefill chunks multiply row-packed K-quant and IQ4_XS weights by a float matmul of their values (default: byte dot products, as decoding)") \
  X(TG_LLM_ROWS_K, SETTING_INT, "1", "0: the K-quants (Q2_K ... Q6_K) keep ggml's layout (only the output matrix is row-packed); decoding then uses the float path") \
  X(TG_LLM_SWA_FULL, SETTING_INT, "0", "1: sliding-window layers keep every position (no window-sized ring cache)") \
  X(TG_LLM_GDN_RECURRENT, SETTING_FLAG, "", "set: delta-net prompt chunks run the recurrence token by token (not the chunked form)") \
  X(LLAMA_API_KEY, SETTING_STR, "", "the API key tg serve asks for (as llama-server; --api-key overrides)") \
  /* several devices and processes (docs/distributed.md) */ \
  X(TG_DIST, SETTING_STR, "", "the tg_dist backend (mpi, single); default: mpi when launched by mpirun") \
  X(TG_MPI_LIB, SETTING_STR, "libmpi.so.40", "the MPI library tg_dist loads") \
  X(TG_DIST_TIMEOUT, SETTING_INT, "300", "seconds a collective may wait before the watchdog ends the process") \
  X(TG_NCCL, SETTING_INT, "1", "0: collectives of CUDA tensors across ranks go through host memory and MPI, never NCCL") \
  X(TG_NCCL_LIB, SETTING_STR, "libnccl.so.2", "the NCCL library tg_dist loads for CUDA tensors") \
  X(OMPI_COMM_WORLD_SIZE, SETTING_STR, "", "set by Open MPI's mpirun: this process was launched by MPI") \
  X(PMIX_RANK, SETTING_STR, "", "set by PMIx launchers: this process was launched by MPI") \
  X(PMI_SIZE, SETTING_STR, "", "set by PMI launchers: this process was launched by MPI") \
  X(PMI_RANK, SETTING_STR, "", "set by PMI launchers: this process was launched by MPI") \
  X(TG_RING, SETTING_INT, "1", "allreduce across devices: 0 never ring, 1 ring on more than 2 devices and large sizes, 2 always") \
  X(TG_RING_ALLREDUCE_THRESHOLD, SETTING_INT, "256000", "elements above which TG_RING=1 uses the ring allreduce") \
  X(TG_ALLREDUCE_BUCKET, SETTING_INT, "1", "0: one allreduce per tensor (no buckets)") \
  X(TG_ALLREDUCE_CAST, SETTING_INT, "1", "0: allreduce in the wide dtype (no cast to the narrow one first)")

typedef enum {
#define TG_SETTING_ID(name, type, dflt, doc) SET_##name,
  TG_SETTINGS(TG_SETTING_ID)
#undef TG_SETTING_ID
  SETTING_COUNT
} setting_id;

typedef struct {
  const char *name;
  setting_type type;
  const char *dflt;
  const char *doc;
} setting_info;

extern const setting_info settings_table[SETTING_COUNT];

/* SETTING_INT: the number (strtoll; the default when unset or empty). */
int64_t setting_int(setting_id id);
/* SETTING_FLAG (and SETTING_STR): set at all; SETTING_INT: not 0. */
bool setting_on(setting_id id);
/* The value as text, NULL when unset (any type). */
const char *setting_str(setting_id id);
/* The value as text, or dflt when unset or empty. */
const char *setting_str_or(setting_id id, const char *dflt);

#endif
