/* gguf_file.h: a parsed GGUF file (ggml's model format, versions 2 and 3):
 * every metadata value and the tensor table, bounds-checked, over a read-only
 * mapping of the file (DISK device). Split models (NAME-00001-of-0000N.gguf)
 * open as one file: metadata from the first part, tensors from all parts.
 *
 * Layout of one file (all little-endian; strings are u64 length + bytes):
 *   u32 magic "GGUF", u32 version, u64 tensor_count, u64 metadata_kv_count
 *   metadata_kv_count x { string key, u32 type, value }
 *   tensor_count x { string name, u32 n_dims, u64 ne[n_dims], u32 ggml_type,
 *                    u64 offset (from the data section, aligned) }
 *   padding to general.alignment (default 32), then the data section.
 *
 * Nothing here allocates in proportion to a number read from the file before
 * checking the file is big enough to hold that many items. */
#ifndef TG_IO_GGUF_FILE_H
#define TG_IO_GGUF_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "io/disk_map.h"
#include "io/ggml_types.h"

/* Metadata value types, numbered as in the file. */
typedef enum {
  GGUF_U8, GGUF_I8, GGUF_U16, GGUF_I16, GGUF_U32, GGUF_I32, GGUF_F32, GGUF_BOOL,
  GGUF_STRING, GGUF_ARRAY, GGUF_U64, GGUF_I64, GGUF_F64, GGUF_NTYPES
} gguf_type;
const char *gguf_type_name(uint32_t t);

/* One metadata entry. Strings point into the mapping (not NUL-terminated:
 * use the lengths). */
typedef struct {
  char *key;                   /* NUL-terminated copy */
  uint32_t type;               /* gguf_type */
  /* scalars (every integer type widens to both i and u; floats to f, and
   * to i/u truncated, saturated past int64's range, 0 for NaN) */
  int64_t i;
  uint64_t u;
  double f;
  /* GGUF_STRING */
  const char *str;
  uint64_t str_len;
  /* GGUF_ARRAY: element type and count; data points at the first element.
   * Elements of fixed size are packed there (little-endian); string arrays
   * also get strs/str_lens (one pointer and length per element); nested
   * arrays are left as raw bytes. */
  uint32_t arr_type;
  uint64_t arr_n;
  const unsigned char *arr_data;
  const char **strs;
  uint64_t *str_lens;
} gguf_kv;

typedef struct {
  char *name;
  uint32_t type;               /* ggml_type */
  int n_dims;
  int64_t ne[4];               /* ggml order: ne[0] is the innermost axis */
  uint64_t offset;             /* from the start of its part's data section */
  uint64_t nbytes;
  disk_map *map;               /* the part holding the data (not retained) */
  size_t file_offset;          /* absolute offset of the data in map */
  int part;
} gguf_tensor_info;

typedef struct gguf_file {
  char *path;
  uint32_t version;
  uint64_t alignment;
  gguf_kv *kv;
  int n_kv;
  gguf_tensor_info *tensors;
  int n_tensors;
  disk_map **parts;            /* one reference per part */
  int n_parts;
} gguf_file;

/* Opens and checks path (every tensor's data inside its file, no overlaps,
 * no duplicate names). A path like X-00001-of-00003.gguf opens all three
 * parts. NULL + tg_error naming the file and the problem. */
gguf_file *gguf_open(const char *path);
void gguf_close(gguf_file *f);

/* The entry called key, or NULL. */
const gguf_kv *gguf_find(const gguf_file *f, const char *key);
const gguf_tensor_info *gguf_find_tensor(const gguf_file *f, const char *name);

/* Typed lookups: true and *out set when key exists with a compatible type
 * (any integer type for int/uint, any number for f64, bool or integer for
 * bool). A missing key leaves *out alone and returns false. */
bool gguf_get_int(const gguf_file *f, const char *key, int64_t *out);
bool gguf_get_f64(const gguf_file *f, const char *key, double *out);
bool gguf_get_bool(const gguf_file *f, const char *key, bool *out);
/* A malloc'd NUL-terminated copy of a string value, or NULL. */
char *gguf_get_str(const gguf_file *f, const char *key);
/* An array entry whose elements have type et (or any type when et < 0). */
const gguf_kv *gguf_get_arr(const gguf_file *f, const char *key, int et);
/* Element i of a numeric array as double / int64 (no bounds check). */
double gguf_arr_f64(const gguf_kv *kv, uint64_t i);
int64_t gguf_arr_int(const gguf_kv *kv, uint64_t i);

/* Writes a one-line rendering of kv's value (arrays: the first few elements
 * and the count) into buf. */
void gguf_kv_format(const gguf_kv *kv, char *buf, size_t n);

#endif
