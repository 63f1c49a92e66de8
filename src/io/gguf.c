/* gguf.c: reading GGUF files (ggml's model format), versions 2 and 3.
 *
 *   u32 magic "GGUF", u32 version, u64 tensor_count, u64 metadata_kv_count
 *   metadata_kv_count x { string key, u32 type, value }
 *   tensor_count x { string name, u32 n_dims, u64 ne[n_dims], u32 ggml_type,
 *                    u64 offset (from the data section, aligned) }
 *   padding to general.alignment (default 32)
 *   the data section
 * Strings are u64 length + bytes; all little-endian.
 *
 * This file holds a self-contained, bounds-checked metadata parser (every
 * value type, nested arrays) so it can grow into the full GGUF reader (the
 * vocabulary, hyperparameters, quantized types). Today tg_gguf_load_tensors
 * returns the F32, F16 and BF16 tensors as DISK tensors moved to a device. */
#include <strings.h>
#include "io/io.h"
#include "util/util.h"

enum {
  GGUF_U8, GGUF_I8, GGUF_U16, GGUF_I16, GGUF_U32, GGUF_I32, GGUF_F32, GGUF_BOOL,
  GGUF_STRING, GGUF_ARRAY, GGUF_U64, GGUF_I64, GGUF_F64, GGUF_NTYPES
};
static const int gguf_scalar_size[GGUF_NTYPES] = { 1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8 };

enum { GGML_F32 = 0, GGML_F16 = 1, GGML_BF16 = 30 };
#define GGUF_MAX_DIMS 4
#define GGUF_MAX_NESTING 8

typedef struct {
  const char *path;
  const unsigned char *b;
  size_t size, pos;
} reader;

static int rd_err_eof(reader *r, const char *what) {
  return tg_seterr("%s: truncated GGUF: %s at byte %zu runs past the end of the file (%zu bytes)", r->path, what, r->pos, r->size);
}
static int rd_bytes(reader *r, size_t n, const char *what) {
  if (n > r->size - r->pos) return rd_err_eof(r, what);
  return 0;
}
static int rd_u32(reader *r, uint32_t *v, const char *what) {
  if (rd_bytes(r, 4, what) < 0) return -1;
  const unsigned char *p = r->b + r->pos;
  *v = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
  r->pos += 4;
  return 0;
}
static int rd_u64(reader *r, uint64_t *v, const char *what) {
  if (rd_bytes(r, 8, what) < 0) return -1;
  const unsigned char *p = r->b + r->pos;
  uint64_t x = 0;
  for (int i = 7; i >= 0; i--) x = x << 8 | p[i];
  *v = x;
  r->pos += 8;
  return 0;
}
/* A string: *s points into the file, *n its length. */
static int rd_str(reader *r, const char **s, uint64_t *n, const char *what) {
  if (rd_u64(r, n, what) < 0) return -1;
  if (*n > r->size - r->pos) return rd_err_eof(r, what);
  *s = (const char *)r->b + r->pos;
  r->pos += (size_t)*n;
  return 0;
}

/* Skips (or, for general.alignment, reads) one value of type t. */
static int skip_value(reader *r, uint32_t t, int depth, const char *key) {
  if (t >= GGUF_NTYPES) return tg_seterr("%s: metadata '%s' has unknown value type %u", r->path, key, t);
  if (t == GGUF_STRING) {
    const char *s; uint64_t n;
    return rd_str(r, &s, &n, "a metadata string");
  }
  if (t != GGUF_ARRAY) {
    if (rd_bytes(r, (size_t)gguf_scalar_size[t], "a metadata value") < 0) return -1;
    r->pos += (size_t)gguf_scalar_size[t];
    return 0;
  }
  if (depth >= GGUF_MAX_NESTING) return tg_seterr("%s: metadata '%s' nests arrays deeper than %d", r->path, key, GGUF_MAX_NESTING);
  uint32_t et; uint64_t cnt;
  if (rd_u32(r, &et, "an array's element type") < 0 || rd_u64(r, &cnt, "an array's length") < 0) return -1;
  if (et >= GGUF_NTYPES) return tg_seterr("%s: metadata '%s' is an array of unknown type %u", r->path, key, et);
  /* every element takes at least this many bytes: a count the file cannot
   * hold is refused before looping over it */
  uint64_t min = et == GGUF_STRING ? 8 : et == GGUF_ARRAY ? 12 : (uint64_t)gguf_scalar_size[et];
  if (cnt > (r->size - r->pos) / min)
    return tg_seterr("%s: metadata '%s': array of %llu elements does not fit in the file", r->path, key, (unsigned long long)cnt);
  if (et != GGUF_STRING && et != GGUF_ARRAY) { r->pos += (size_t)(cnt * min); return 0; }
  for (uint64_t i = 0; i < cnt; i++) if (skip_value(r, et, depth + 1, key) < 0) return -1;
  return 0;
}

typedef struct { char *name; tg_shape shape; tg_dtype dt; uint64_t offset, nbytes; } gguf_tensor;

int tg_gguf_load_tensors(const char *path, const char *device, tg_tensor_list *out) {
  if (!out) return tg_seterr("tg_gguf_load_tensors: no output list");
  memset(out, 0, sizeof *out);
  disk_map *m = disk_map_open(path);
  if (!m) return -1;
  reader r = { path, m->base, m->size, 0 };
  gguf_tensor *ts = NULL;
  io_range *ranges = NULL;
  uint64_t nt = 0, nkv = 0, alignment = 32;
  int rc = -1;
  uint32_t version;
  if (m->size < 4 || memcmp(m->base, "GGUF", 4) != 0) { tg_seterr("%s: not a GGUF file (bad magic)", path); goto done; }
  r.pos = 4;
  if (rd_u32(&r, &version, "the version") < 0) goto done;
  if (version != 2 && version != 3) { tg_seterr("%s: GGUF version %u is not supported (2 and 3 are)", path, version); goto done; }
  if (rd_u64(&r, &nt, "the tensor count") < 0 || rd_u64(&r, &nkv, "the metadata count") < 0) goto done;
  if (nkv > (r.size - r.pos) / 13) { tg_seterr("%s: metadata count %llu is absurd for a file of %zu bytes", path, (unsigned long long)nkv, r.size); goto done; }
  for (uint64_t i = 0; i < nkv; i++) {
    const char *k; uint64_t kn; uint32_t t;
    if (rd_str(&r, &k, &kn, "a metadata key") < 0 || rd_u32(&r, &t, "a metadata type") < 0) goto done;
    char key[128];
    snprintf(key, sizeof key, "%.*s", (int)(kn < 120 ? kn : 120), k);
    if (kn == 17 && memcmp(k, "general.alignment", 17) == 0) {
      uint64_t a = 0;
      if (t == GGUF_U32) { uint32_t v; if (rd_u32(&r, &v, "general.alignment") < 0) goto done; a = v; }
      else if (t == GGUF_U64 || t == GGUF_I64) { if (rd_u64(&r, &a, "general.alignment") < 0) goto done; }
      else if (t == GGUF_I32) { uint32_t v; if (rd_u32(&r, &v, "general.alignment") < 0) goto done; a = v; }
      else { tg_seterr("%s: general.alignment has type %u, not an integer", path, t); goto done; }
      if (a == 0 || (a & (a - 1)) || a > (1u << 20)) { tg_seterr("%s: general.alignment %llu is not a power of two (<= 1 MiB)", path, (unsigned long long)a); goto done; }
      alignment = a;
      continue;
    }
    if (skip_value(&r, t, 0, key) < 0) goto done;
  }
  if (nt > (r.size - r.pos) / 24) { tg_seterr("%s: tensor count %llu is absurd for a file of %zu bytes", path, (unsigned long long)nt, r.size); goto done; }
  ts = tg_xcalloc((size_t)nt + 1, sizeof *ts);
  for (uint64_t i = 0; i < nt; i++) {
    gguf_tensor *g = &ts[i];
    const char *nm; uint64_t nn; uint32_t nd, type;
    if (rd_str(&r, &nm, &nn, "a tensor name") < 0) goto done;
    if (nn > 65535) { tg_seterr("%s: tensor %llu has a name of %llu bytes", path, (unsigned long long)i, (unsigned long long)nn); goto done; }
    g->name = tg_xmalloc((size_t)nn + 1);
    memcpy(g->name, nm, (size_t)nn);
    g->name[nn] = 0;
    if (strlen(g->name) != nn) { tg_seterr("%s: tensor %llu has a name with a NUL byte", path, (unsigned long long)i); goto done; }
    if (rd_u32(&r, &nd, "a tensor's dimension count") < 0) goto done;
    if (nd > GGUF_MAX_DIMS) { tg_seterr("%s: tensor '%s' has %u dimensions (at most %d)", path, g->name, nd, GGUF_MAX_DIMS); goto done; }
    g->shape.ndim = (int)nd;
    for (uint32_t k = 0; k < nd; k++) {
      uint64_t ne;
      if (rd_u64(&r, &ne, "a tensor dimension") < 0) goto done;
      if (ne > (uint64_t)INT64_MAX) { tg_seterr("%s: tensor '%s' has an absurd dimension %llu", path, g->name, (unsigned long long)ne); goto done; }
      g->shape.d[nd - 1 - k] = (int64_t)ne;   /* ne[0] is the innermost axis */
    }
    if (rd_u32(&r, &type, "a tensor type") < 0 || rd_u64(&r, &g->offset, "a tensor offset") < 0) goto done;
    if (type == GGML_F32) g->dt = TG_F32;
    else if (type == GGML_F16) g->dt = TG_F16;
    else if (type == GGML_BF16) g->dt = TG_BF16;
    else { tg_seterr("%s: tensor '%s' has ggml type %u; only F32 (0), F16 (1) and BF16 (30) are supported so far", path, g->name, type); goto done; }
    int64_t numel = io_numel(g->shape.d, g->shape.ndim);
    if (numel < 0 || !io_nbytes(numel, tg_dtype_size(g->dt), &g->nbytes)) { tg_seterr("%s: tensor '%s' is absurdly large", path, g->name); goto done; }
    if (g->offset % alignment) { tg_seterr("%s: tensor '%s' offset %llu is not a multiple of the alignment %llu", path, g->name, (unsigned long long)g->offset, (unsigned long long)alignment); goto done; }
  }
  uint64_t data = (r.pos + alignment - 1) / alignment * alignment;
  uint64_t dsize = data <= r.size ? r.size - data : 0;
  if (nt && data > r.size) { tg_seterr("%s: truncated GGUF: the data section would start at byte %llu, past the end (%zu bytes)", path, (unsigned long long)data, r.size); goto done; }
  ranges = tg_xmalloc(sizeof *ranges * ((size_t)nt + 1));
  for (uint64_t i = 0; i < nt; i++) {
    if (ts[i].offset > dsize || ts[i].nbytes > dsize - ts[i].offset) {
      tg_seterr("%s: tensor '%s' data [%llu, %llu) lies past the end of the data section (%llu bytes): truncated?", path, ts[i].name,
                (unsigned long long)ts[i].offset, (unsigned long long)(ts[i].offset + ts[i].nbytes), (unsigned long long)dsize);
      goto done;
    }
    ranges[i] = (io_range){ ts[i].offset, ts[i].offset + ts[i].nbytes, (int)i };
  }
  int other, first = io_find_overlap(ranges, (int)nt, &other);
  if (first >= 0) { tg_seterr("%s: data of tensors '%s' and '%s' overlap", path, ts[first].name, ts[other].name); goto done; }
  const char **names = tg_xmalloc(sizeof(char *) * ((size_t)nt + 1));
  for (uint64_t i = 0; i < nt; i++) names[i] = ts[i].name;
  const char *dup = io_find_duplicate(names, (int)nt);
  free(names);
  if (dup) { tg_seterr("%s: tensor name '%s' appears twice", path, dup); goto done; }
  for (uint64_t i = 0; i < nt; i++) {
    tg_tensor *t = disk_tensor(m, (size_t)(data + ts[i].offset), ts[i].shape, ts[i].dt);
    if (t && !(device && strcasecmp(device, "DISK") == 0)) t = disk_tensor_to(t, device);
    if (!t) goto done;
    io_list_push(out, ts[i].name, t);
  }
  rc = 0;
done:
  if (rc != 0) io_list_discard(out);
  for (uint64_t i = 0; ts && i < nt; i++) free(ts[i].name);
  free(ts);
  free(ranges);
  disk_map_release(m);
  return rc;
}
