/* safetensors.c: the safetensors format (huggingface/safetensors).
 *
 *   u64 little-endian  N, the header's size
 *   N bytes            JSON object: name -> {"dtype", "shape", "data_offsets":
 *                      [begin, end]} (offsets relative to the data section),
 *                      plus an optional "__metadata__": {string: string}
 *   the rest           the data section
 *
 * Loading maps the file and makes one DISK tensor per entry (io/disk_map.h),
 * after validating the whole header against the file's size: nothing is
 * allocated from a size the file does not back. Saving writes what the
 * Python package writes, byte for byte: tensors sorted by dtype (larger
 * alignment first, in the Rust crate's Dtype order) then by name, compact
 * JSON with "__metadata__" first, the header padded with spaces to a multiple
 * of 8. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <strings.h>
#include "io/io.h"
#include "util/util.h"

#define ST_MAX_HEADER 100000000ull   /* the Python package's limit too */

typedef struct { const char *name; tg_dtype dt; int rank; } st_dtype;
/* rank: the crate's Dtype order (saving sorts by it, descending) */
static const st_dtype st_dtypes[] = {
  { "BOOL", TG_BOOL, 0 }, { "U8", TG_U8, 1 }, { "I8", TG_I8, 2 },
  { "F8_E5M2", TG_FP8E5M2, 3 }, { "F8_E4M3", TG_FP8E4M3, 4 },
  { "I16", TG_I16, 5 }, { "U16", TG_U16, 6 }, { "F16", TG_F16, 7 }, { "BF16", TG_BF16, 8 },
  { "I32", TG_I32, 9 }, { "U32", TG_U32, 10 }, { "F32", TG_F32, 11 }, { "F64", TG_F64, 12 },
  { "I64", TG_I64, 13 }, { "U64", TG_U64, 14 },
};
#define N_ST_DTYPES ((int)(sizeof st_dtypes / sizeof st_dtypes[0]))

static const st_dtype *st_dtype_of(tg_dtype dt) {
  for (int i = 0; i < N_ST_DTYPES; i++) if (st_dtypes[i].dt == dt) return &st_dtypes[i];
  return NULL;
}

/* A JSON number that is an exact integer in [0, 2^53]. */
static bool json_uint(const cJSON *j, uint64_t *out) {
  if (!cJSON_IsNumber(j)) return false;
  double v = j->valuedouble;
  if (!(v >= 0 && v <= 9007199254740992.0) || v != (double)(uint64_t)v) return false;
  *out = (uint64_t)v;
  return true;
}

typedef struct { const char *name; tg_dtype dt; tg_shape shape; uint64_t begin, end; } st_entry;

/* Validates one tensor entry into *e; -1 + tg_error. */
static int parse_entry(const char *path, const cJSON *item, uint64_t dsize, st_entry *e) {
  const char *name = item->string;
  e->name = name;
  if (!cJSON_IsObject(item)) return tg_seterr("%s: header entry '%s' is not an object", path, name);
  const cJSON *dt = cJSON_GetObjectItemCaseSensitive(item, "dtype");
  const cJSON *shape = cJSON_GetObjectItemCaseSensitive(item, "shape");
  const cJSON *offs = cJSON_GetObjectItemCaseSensitive(item, "data_offsets");
  if (!cJSON_IsString(dt)) return tg_seterr("%s: tensor '%s' has no \"dtype\" string", path, name);
  const st_dtype *sd = NULL;
  for (int i = 0; i < N_ST_DTYPES && !sd; i++) if (strcmp(st_dtypes[i].name, dt->valuestring) == 0) sd = &st_dtypes[i];
  if (!sd) return tg_seterr("%s: tensor '%s' has unknown or unsupported dtype \"%.40s\"", path, name, dt->valuestring);
  e->dt = sd->dt;
  if (!cJSON_IsArray(shape)) return tg_seterr("%s: tensor '%s' has no \"shape\" array", path, name);
  int nd = cJSON_GetArraySize(shape);
  if (nd > TG_MAX_DIMS) return tg_seterr("%s: tensor '%s' has %d dimensions (at most %d)", path, name, nd, TG_MAX_DIMS);
  e->shape.ndim = nd;
  int k = 0;
  for (const cJSON *d = shape->child; d; d = d->next, k++) {
    uint64_t v;
    if (!json_uint(d, &v)) return tg_seterr("%s: tensor '%s': shape entry %d is not a non-negative integer", path, name, k);
    e->shape.d[k] = (int64_t)v;
  }
  if (!cJSON_IsArray(offs) || cJSON_GetArraySize(offs) != 2 || !json_uint(offs->child, &e->begin) ||
      !json_uint(offs->child->next, &e->end))
    return tg_seterr("%s: tensor '%s': \"data_offsets\" is not [begin, end] of non-negative integers", path, name);
  if (e->begin > e->end || e->end > dsize)
    return tg_seterr("%s: tensor '%s': data_offsets [%llu, %llu] out of range (the data section has %llu bytes)", path,
                     name, (unsigned long long)e->begin, (unsigned long long)e->end, (unsigned long long)dsize);
  int64_t numel = io_numel(e->shape.d, nd);
  uint64_t nbytes;
  if (numel < 0 || !io_nbytes(numel, tg_dtype_size(e->dt), &nbytes))
    return tg_seterr("%s: tensor '%s': shape is absurdly large", path, name);
  if (nbytes != e->end - e->begin)
    return tg_seterr("%s: tensor '%s': shape of %lld %s elements needs %llu bytes, data_offsets give %llu", path, name,
                     (long long)numel, sd->name, (unsigned long long)nbytes, (unsigned long long)(e->end - e->begin));
  return 0;
}

int tg_safetensors_load(const char *path, const char *device, tg_tensor_list *out) {
  if (!out) return tg_seterr("tg_safetensors_load: no output list");
  memset(out, 0, sizeof *out);
  disk_map *m = disk_map_open(path);
  if (!m) return -1;
  cJSON *root = NULL;
  st_entry *ents = NULL;
  io_range *ranges = NULL;
  int rc = -1;
  if (m->size < 8) {
    tg_seterr("%s: truncated: %zu bytes, but a safetensors file starts with an 8-byte header size", path, m->size);
    goto done;
  }
  uint64_t hlen = 0;
  for (int i = 7; i >= 0; i--) hlen = hlen << 8 | m->base[i];
  if (hlen > m->size - 8) {
    tg_seterr("%s: header size %llu runs past the end of the file (%zu bytes): truncated or not safetensors", path,
              (unsigned long long)hlen, m->size);
    goto done;
  }
  if (hlen > ST_MAX_HEADER) {
    tg_seterr("%s: header size %llu is too large (limit %llu)", path, (unsigned long long)hlen, ST_MAX_HEADER);
    goto done;
  }
  uint64_t dsize = m->size - 8 - hlen;
  const unsigned char *hdr = m->base + 8;
  if (hlen == 0 || hdr[0] != '{') {
    tg_seterr("%s: the header is not a JSON object (it must start with '{')", path);
    goto done;
  }
  root = cJSON_ParseWithLength((const char *)hdr, (size_t)hlen);
  if (!root) { tg_seterr("%s: the header is not valid JSON", path); goto done; }
  if (!cJSON_IsObject(root)) { tg_seterr("%s: the header is not a JSON object", path); goto done; }
  int count = cJSON_GetArraySize(root), n = 0;
  ents = tg_xcalloc((size_t)count + 1, sizeof *ents);
  for (const cJSON *it = root->child; it; it = it->next) {
    if (!it->string) { tg_seterr("%s: header entry without a name", path); goto done; }
    if (strcmp(it->string, "__metadata__") == 0) {
      if (!cJSON_IsObject(it)) { tg_seterr("%s: \"__metadata__\" is not an object", path); goto done; }
      for (const cJSON *kv = it->child; kv; kv = kv->next) {
        if (!cJSON_IsString(kv)) { tg_seterr("%s: \"__metadata__\" value of '%s' is not a string", path, kv->string); goto done; }
        io_list_push_meta(out, kv->string, kv->valuestring);
      }
      continue;
    }
    if (parse_entry(path, it, dsize, &ents[n]) < 0) goto done;
    n++;
  }
  /* duplicate names, overlapping data */
  const char **names = tg_xmalloc(sizeof(char *) * ((size_t)n + 1));
  for (int i = 0; i < n; i++) names[i] = ents[i].name;
  const char *dup = io_find_duplicate(names, n);
  if (dup) {
    tg_seterr("%s: tensor name '%s' appears twice in the header", path, dup);
    free(names);
    goto done;
  }
  free(names);
  ranges = tg_xmalloc(sizeof *ranges * ((size_t)n + 1));
  for (int i = 0; i < n; i++) ranges[i] = (io_range){ ents[i].begin, ents[i].end, i };
  int other, first = io_find_overlap(ranges, n, &other);
  if (first >= 0) {
    tg_seterr("%s: data of tensors '%s' [%llu, %llu) and '%s' [%llu, %llu) overlap", path, ents[first].name,
              (unsigned long long)ents[first].begin, (unsigned long long)ents[first].end, ents[other].name,
              (unsigned long long)ents[other].begin, (unsigned long long)ents[other].end);
    goto done;
  }
  for (int i = 0; i < n; i++) {
    tg_tensor *t = disk_tensor(m, (size_t)(8 + hlen + ents[i].begin), ents[i].shape, ents[i].dt);
    if (t && !(device && strcasecmp(device, "DISK") == 0)) t = disk_tensor_to(t, device);
    if (!t) { io_list_discard(out); goto done; }
    io_list_push(out, ents[i].name, t);
  }
  rc = 0;
done:
  if (rc != 0) io_list_discard(out);
  cJSON_Delete(root);
  free(ents);
  free(ranges);
  disk_map_release(m);
  return rc;
}

/* ---------------------------------------------------------------- saving */

/* JSON string the way serde_json writes it. */
static void json_str(strbuf *b, const char *s) {
  sb_puts(b, "\"");
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    switch (*p) {
    case '"': sb_puts(b, "\\\""); break;
    case '\\': sb_puts(b, "\\\\"); break;
    case '\b': sb_puts(b, "\\b"); break;
    case '\f': sb_puts(b, "\\f"); break;
    case '\n': sb_puts(b, "\\n"); break;
    case '\r': sb_puts(b, "\\r"); break;
    case '\t': sb_puts(b, "\\t"); break;
    default:
      if (*p < 0x20) sb_printf(b, "\\u%04x", *p);
      else sb_printf(b, "%c", *p);
    }
  }
  sb_puts(b, "\"");
}

typedef struct { const char *name; tg_tensor *t; int rank; uint64_t nbytes; } save_item;

static int save_cmp(const void *a, const void *b) {
  const save_item *x = a, *y = b;
  if (x->rank != y->rank) return y->rank - x->rank;
  return strcmp(x->name, y->name);
}

int tg_safetensors_save(const char *path, const char *const *names, tg_tensor *const *tensors, int n,
                        const char *const *metadata) {
  if (!path) return tg_seterr("tg_safetensors_save: no path");
  if (n < 0 || (n > 0 && (!names || !tensors))) return tg_seterr("tg_safetensors_save: %s: bad tensor list", path);
  save_item *items = tg_xcalloc((size_t)n + 1, sizeof *items);
  int rc = -1;
  for (int i = 0; i < n; i++) {
    if (!names[i] || !*names[i]) { tg_seterr("tg_safetensors_save: %s: tensor %d has no name", path, i); goto fail; }
    if (!tensors[i]) { tg_seterr("tg_safetensors_save: %s: tensor '%s' is NULL (%s)", path, names[i], tg_error()); goto fail; }
    if (strcmp(names[i], "__metadata__") == 0) { tg_seterr("tg_safetensors_save: %s: '__metadata__' cannot name a tensor", path); goto fail; }
    const st_dtype *sd = st_dtype_of(tg_dtype_of(tensors[i]));
    if (!sd) { tg_seterr("tg_safetensors_save: %s: tensor '%s' has a dtype safetensors lacks", path, names[i]); goto fail; }
    items[i] = (save_item){ names[i], tensors[i], sd->rank,
                            (uint64_t)tg_numel(tensors[i]) * (uint64_t)tg_dtype_size(tg_dtype_of(tensors[i])) };
  }
  const char **sorted = tg_xmalloc(sizeof(char *) * ((size_t)n + 1));
  for (int i = 0; i < n; i++) sorted[i] = names[i];
  const char *dup = io_find_duplicate(sorted, n);
  if (dup) {
    tg_seterr("tg_safetensors_save: %s: tensor name '%s' given twice", path, dup);
    free(sorted);
    goto fail;
  }
  free(sorted);
  qsort(items, (size_t)n, sizeof *items, save_cmp);
  if (n && tg_realize_all((tg_tensor **)tensors, n) < 0) goto fail;

  strbuf h = { 0 };
  sb_puts(&h, "{");
  bool first = true;
  if (metadata) {
    sb_puts(&h, "\"__metadata__\":{");
    for (int i = 0; metadata[i]; i += 2) {
      if (!metadata[i + 1]) { tg_seterr("tg_safetensors_save: %s: metadata key '%s' has no value", path, metadata[i]); sb_free(&h); goto fail; }
      if (i) sb_puts(&h, ",");
      json_str(&h, metadata[i]);
      sb_puts(&h, ":");
      json_str(&h, metadata[i + 1]);
    }
    sb_puts(&h, "}");
    first = false;
  }
  uint64_t off = 0;
  for (int i = 0; i < n; i++) {
    if (!first) sb_puts(&h, ",");
    first = false;
    json_str(&h, items[i].name);
    sb_printf(&h, ":{\"dtype\":\"%s\",\"shape\":[", st_dtype_of(tg_dtype_of(items[i].t))->name);
    tg_shape s = tg_shape_of(items[i].t);
    for (int k = 0; k < s.ndim; k++) sb_printf(&h, "%s%lld", k ? "," : "", (long long)s.d[k]);
    sb_printf(&h, "],\"data_offsets\":[%llu,%llu]}", (unsigned long long)off, (unsigned long long)(off + items[i].nbytes));
    off += items[i].nbytes;
  }
  sb_puts(&h, "}");
  while (h.n % 8) sb_puts(&h, " ");

  char *tmp;
  int fd = io_create_tmp(path, &tmp);
  if (fd < 0) { sb_free(&h); goto fail; }
  unsigned char len8[8];
  for (int i = 0; i < 8; i++) len8[i] = (unsigned char)((uint64_t)h.n >> (8 * i));
  bool ok = io_write_all(fd, len8, 8) && io_write_all(fd, h.s, h.n);
  sb_free(&h);
  if (!ok) tg_seterr("%s: write failed: %s", path, strerror(errno));
  for (int i = 0; i < n && ok; i++) {
    if (!items[i].nbytes) continue;
    void *buf = malloc(items[i].nbytes);
    if (!buf) { tg_seterr("%s: out of memory for tensor '%s' (%llu bytes)", path, items[i].name, (unsigned long long)items[i].nbytes); ok = false; break; }
    if (tg_data(items[i].t, buf, items[i].nbytes) < 0) ok = false;
    else if (!io_write_all(fd, buf, items[i].nbytes)) { tg_seterr("%s: write failed: %s", path, strerror(errno)); ok = false; }
    free(buf);
  }
  rc = io_finish_tmp(fd, tmp, path, ok);
fail:
  free(items);
  return rc;
}
