/* gguf_writer.h: builds GGUF v3 files (layout in gguf_file.h), byte for
 * byte what gguf-py's GGUFWriter writes for the same content: metadata in
 * the order it was first set, tensor infos in the order added, each
 * tensor's data at a multiple of the alignment and padded with zeros to the
 * next one (the last one too).
 *
 *   gguf_writer *w = gguf_writer_new();
 *   gguf_w_set_str(w, "general.architecture", "llama");
 *   gguf_w_set_u32(w, "llama.block_count", 12);
 *   gguf_w_add_tensor(w, "token_embd.weight", GGML_TYPE_F16, 2, ne, data);
 *   gguf_writer_write(w, "out.gguf", NULL, NULL);
 *   gguf_writer_free(w);
 *
 * Tensor data is either given when the tensor is added (borrowed until the
 * write) or produced during the write by a callback, one tensor at a time,
 * so a model never has to be in memory whole. The file is written to a
 * temporary name and renamed when complete. Errors: -1 + tg_error. */
#ifndef TG_IO_GGUF_WRITER_H
#define TG_IO_GGUF_WRITER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "io/gguf_file.h"

#define GGUF_DEFAULT_ALIGNMENT 32

typedef struct gguf_writer gguf_writer;

gguf_writer *gguf_writer_new(void);
void gguf_writer_free(gguf_writer *w);

/* ---- metadata. Setting a key again replaces its value in place (it keeps
 * its position). "general.alignment" must be a u32 power of two; it sets
 * the data alignment (default 32). */

/* A scalar: value points at a value of type t's C type (uint8_t for U8 and
 * BOOL, float for F32, double for F64, ...). */
int gguf_w_set(gguf_writer *w, const char *key, uint32_t t, const void *value);
int gguf_w_set_str(gguf_writer *w, const char *key, const char *s);
int gguf_w_set_strn(gguf_writer *w, const char *key, const char *s, uint64_t len);
/* An array of n elements of fixed-size type et, packed as in C. */
int gguf_w_set_arr(gguf_writer *w, const char *key, uint32_t et, const void *elems, uint64_t n);
int gguf_w_set_str_arr(gguf_writer *w, const char *key, const char *const *strs, uint64_t n);
/* A value already encoded as in the file (what follows the u32 type), e.g.
 * an array of arrays: u32 ARRAY, u64 n, then n x { u32 type, u64 count,
 * elements }. Not checked beyond its length. */
int gguf_w_set_raw(gguf_writer *w, const char *key, uint32_t t, const void *encoded, size_t n);
/* A copy of an entry of a parsed file (any type, nested arrays included). */
int gguf_w_copy_kv(gguf_writer *w, const gguf_kv *kv);
/* Encoded size of n array elements of type et at p: bytes of a parsed
 * file's array (gguf_kv.arr_data), already bounds-checked by gguf_open. */
size_t gguf_arr_bytes(uint32_t et, uint64_t n, const unsigned char *p);
static inline int gguf_w_set_u32(gguf_writer *w, const char *key, uint32_t v) { return gguf_w_set(w, key, GGUF_U32, &v); }
static inline int gguf_w_set_i32(gguf_writer *w, const char *key, int32_t v) { return gguf_w_set(w, key, GGUF_I32, &v); }
static inline int gguf_w_set_f32(gguf_writer *w, const char *key, float v) { return gguf_w_set(w, key, GGUF_F32, &v); }
static inline int gguf_w_set_bool(gguf_writer *w, const char *key, bool v) {
  uint8_t b = v;
  return gguf_w_set(w, key, GGUF_BOOL, &b);
}
/* Removes key if present (later keys move up). */
void gguf_w_remove(gguf_writer *w, const char *key);
int gguf_w_n_kv(const gguf_writer *w);

/* ---- tensors. ne[0] is the innermost axis (n_dims 1..4). data: the
 * tensor's bytes (ggml_row_bytes(type, ne[0]) * ne[1] * ...), borrowed, or
 * NULL to produce them during the write. Returns the tensor's index, or -1
 * (bad type or shape, a name used twice). */
int gguf_w_add_tensor(gguf_writer *w, const char *name, uint32_t type, int n_dims, const int64_t *ne, const void *data);
uint64_t gguf_w_tensor_nbytes(const gguf_writer *w, int index);

/* Where a callback writes one tensor's data, in any number of pieces that
 * add up to exactly its size. */
typedef struct gguf_w_sink gguf_w_sink;
int gguf_w_sink_write(gguf_w_sink *s, const void *p, size_t n);
/* Called once per tensor added without data, in order. 0 or -1 (with
 * tg_error set), which abandons the file. */
typedef int (*gguf_w_fill_fn)(void *ctx, int index, gguf_w_sink *s);

/* Writes the file; fill may be NULL when every tensor has data. */
int gguf_writer_write(gguf_writer *w, const char *path, gguf_w_fill_fn fill, void *ctx);

#endif
