/* tg_io.h: tensors from and to files: safetensors, .npy, GGUF (plain and
 * quantized tensors), and raw file regions. Included by tg.h. See docs/state_files.md.
 *
 * Files are memory-mapped, never read whole. A tensor loaded from a file is a
 * BUFFER on the DISK device whose memory is the mapping; the mapping stays
 * alive while any such buffer does. Kernels cannot run on DISK, so the
 * loaders return each tensor already moved to `device` with tg_to (lazily:
 * the bytes are copied out of the file when the tensor is realized). device
 * NULL means the default device (tg_default_device(), normally "CPU");
 * "DISK" returns the DISK tensors themselves (tg_data reads them; tg_to moves
 * them).
 *
 * Loaded tensors belong to the current scope, like any new tensor. Errors
 * (a missing file, a truncated or corrupt one, an unsupported dtype) return
 * -1 or NULL with tg_error() naming the file and the problem; nothing is
 * returned half-loaded. */
#ifndef TG_IO_H
#define TG_IO_H

#include "tg.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Named tensors, in file order, plus the file's string metadata (the
 * safetensors "__metadata__" object; none for GGUF). tg_tensor_list_free
 * frees the names, metadata and arrays, not the tensors (their scope owns
 * them). A zeroed list is empty; free leaves it zeroed. */
typedef struct {
  char **names;
  tg_tensor **t;
  int n;
  char **meta_keys, **meta_values;
  int nmeta;
} tg_tensor_list;
TG_API void tg_tensor_list_free(tg_tensor_list *l);
/* The tensor called name, or NULL (no error set) when there is none; NULL
 * with an error when l or name is NULL. */
TG_API tg_tensor *tg_tensor_list_get(const tg_tensor_list *l, const char *name);

/* A tensor over the bytes [offset, offset + numel*size) of a file, on DISK. */
TG_API tg_tensor *tg_from_file(const char *path, int64_t offset, tg_shape shape, tg_dtype dt);

/* safetensors (https://github.com/huggingface/safetensors). Loads every
 * tensor; dtypes BOOL U8 I8 U16 I16 U32 I32 U64 I64 F16 BF16 F32 F64 F8_E4M3
 * F8_E5M2. Fills *out (zeroed first); 0 or -1. */
TG_API int tg_safetensors_load(const char *path, const char *device, tg_tensor_list *out);
/* Writes tensors (realizing them) the way the Python `safetensors` package
 * does: same order (by dtype size, then name), same header bytes. metadata is
 * NULL or a NULL-terminated list of key, value strings ("__metadata__").
 * Names must be distinct. Written to a temporary file, then renamed. 0 or -1. */
TG_API int tg_safetensors_save(const char *path, const char *const *names, tg_tensor *const *tensors, int n,
                        const char *const *metadata);

/* NumPy .npy, versions 1.0, 2.0, 3.0, little-endian, C order. dtypes: bool,
 * int8..int64, uint8..uint64, float16, float32, float64. */
TG_API tg_tensor *tg_npy_load(const char *path, const char *device);
/* Writes version 1.0 (2.0 for huge headers), byte for byte what numpy.save
 * writes. bfloat16 and fp8 have no .npy dtype: cast first. 0 or -1. */
TG_API int tg_npy_save(const char *path, tg_tensor *t);

/* GGUF v2/v3 tensors. Types F32 F16 BF16 F64 I8 I16 I32 I64 load as that
 * dtype. Quantized types (every type tg_dequantize handles, see tg_quant.h)
 * load as float32 tensors computed lazily from their packed bytes, which are
 * copied to `device` once, on first use: used in a matmul, the decoding
 * fuses into its kernel and the weights stay packed in memory (realizing
 * such a tensor by itself makes float32 weights). Quantized tensors need a
 * compute device: "DISK" refuses them. Shapes are ggml's ne[] reversed:
 * ne = [4096, 32000] becomes the tg shape (32000, 4096). */
TG_API int tg_gguf_load_tensors(const char *path, const char *device, tg_tensor_list *out);
/* Writes tensors (realizing them one at a time) as a GGUF v3 file, byte for
 * byte what gguf-py's GGUFWriter writes for the same content: metadata (NULL
 * or a NULL-terminated list of key, value strings, stored as GGUF strings,
 * in order; pass "general.architecture" first for llama.cpp-style readers),
 * then the tensors in the order given, each at a multiple of 32 bytes. Shapes
 * are stored as ggml's ne[] (the tg shape reversed; a 0-d tensor as [1]);
 * at most 4 dims. dtypes: float32, float16, bfloat16, float64, int8, int16,
 * int32, int64. Names must be distinct. Written to a temporary file, then
 * renamed. 0 or -1. */
TG_API int tg_gguf_save(const char *path, const char *const *names, tg_tensor *const *tensors, int n, const char *const *metadata);

#ifdef __cplusplus
}
#endif
#endif
