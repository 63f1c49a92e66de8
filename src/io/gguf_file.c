/* gguf_file.c: parses GGUF files into gguf_file (see gguf_file.h). */
#include <inttypes.h>
#include "io/gguf_file.h"
#include "io/io.h"
#include "util/util.h"

#define GGUF_MAX_DIMS 4
#define GGUF_MAX_NESTING 8
#define GGUF_MAX_PARTS 1024

static const int scalar_size[GGUF_NTYPES] = { 1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8 };
static const char *const type_names[GGUF_NTYPES] = {
  "u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "string", "array", "u64", "i64", "f64"
};

const char *gguf_type_name(uint32_t t) { return t < GGUF_NTYPES ? type_names[t] : "?"; }

typedef struct {
  const char *path;
  const unsigned char *b;
  size_t size, pos;
} reader;

static int rd_eof(reader *r, const char *what) {
  return tg_seterr("%s: truncated GGUF: %s at byte %zu runs past the end of the file (%zu bytes)", r->path, what, r->pos, r->size);
}
static int rd_need(reader *r, uint64_t n, const char *what) {
  return n > r->size - r->pos ? rd_eof(r, what) : 0;
}
static uint64_t le(const unsigned char *p, int n) {
  uint64_t x = 0;
  for (int i = n - 1; i >= 0; i--) x = x << 8 | p[i];
  return x;
}
static int rd_u32(reader *r, uint32_t *v, const char *what) {
  if (rd_need(r, 4, what) < 0) return -1;
  *v = (uint32_t)le(r->b + r->pos, 4);
  r->pos += 4;
  return 0;
}
static int rd_u64(reader *r, uint64_t *v, const char *what) {
  if (rd_need(r, 8, what) < 0) return -1;
  *v = le(r->b + r->pos, 8);
  r->pos += 8;
  return 0;
}
static int rd_str(reader *r, const char **s, uint64_t *n, const char *what) {
  if (rd_u64(r, n, what) < 0) return -1;
  if (*n > r->size - r->pos)
    return tg_seterr("%s: truncated GGUF: %s of %" PRIu64 " bytes at byte %zu runs past the end of the file (%zu bytes)",
                     r->path, what, *n, r->pos, r->size);
  *s = (const char *)r->b + r->pos;
  r->pos += (size_t)*n;
  return 0;
}

/* The integer view of a float value: truncated when it fits in int64,
 * saturated when it does not, 0 for NaN (a plain cast would be undefined;
 * callers that need an integer check the range or the float). */
static int64_t float_as_int(double x) {
  int64_t r;
  if (tg_f64_to_i64(x, &r)) return r;
  return x != x ? 0 : x > 0 ? INT64_MAX : INT64_MIN;
}

/* Decodes a scalar of type t at p into kv's i/u/f. */
static void scalar_value(uint32_t t, const unsigned char *p, int64_t *i, uint64_t *u, double *f) {
  uint64_t raw = le(p, scalar_size[t]);
  switch (t) {
  case GGUF_I8: *i = (int8_t)raw; break;
  case GGUF_I16: *i = (int16_t)raw; break;
  case GGUF_I32: *i = (int32_t)raw; break;
  case GGUF_I64: *i = (int64_t)raw; break;
  case GGUF_F32: { uint32_t b = (uint32_t)raw; float x; memcpy(&x, &b, 4); *f = x; *i = float_as_int(x); *u = (uint64_t)*i; return; }
  case GGUF_F64: { double x; memcpy(&x, &raw, 8); *f = x; *i = float_as_int(x); *u = (uint64_t)*i; return; }
  default: *i = (int64_t)raw; break;   /* unsigned types and bool */
  }
  *u = (uint64_t)*i;
  if (t == GGUF_U64) *u = raw;
  *f = t == GGUF_U64 ? (double)raw : (double)*i;
}

/* Skips one value of type t (used for nested arrays). */
static int skip_value(reader *r, uint32_t t, int depth, const char *key) {
  if (t >= GGUF_NTYPES) return tg_seterr("%s: metadata '%s' has unknown value type %u", r->path, key, t);
  if (t == GGUF_STRING) { const char *s; uint64_t n; return rd_str(r, &s, &n, "a metadata string"); }
  if (t != GGUF_ARRAY) {
    if (rd_need(r, (uint64_t)scalar_size[t], "a metadata value") < 0) return -1;
    r->pos += (size_t)scalar_size[t];
    return 0;
  }
  if (depth >= GGUF_MAX_NESTING) return tg_seterr("%s: metadata '%s' nests arrays deeper than %d", r->path, key, GGUF_MAX_NESTING);
  uint32_t et; uint64_t cnt;
  if (rd_u32(r, &et, "an array's element type") < 0 || rd_u64(r, &cnt, "an array's length") < 0) return -1;
  if (et >= GGUF_NTYPES) return tg_seterr("%s: metadata '%s' is an array of unknown type %u", r->path, key, et);
  uint64_t min = et == GGUF_STRING ? 8 : et == GGUF_ARRAY ? 12 : (uint64_t)scalar_size[et];
  if (cnt > (r->size - r->pos) / min)
    return tg_seterr("%s: metadata '%s': array of %" PRIu64 " elements does not fit in the file", r->path, key, cnt);
  if (et != GGUF_STRING && et != GGUF_ARRAY) { r->pos += (size_t)(cnt * min); return 0; }
  for (uint64_t i = 0; i < cnt; i++) if (skip_value(r, et, depth + 1, key) < 0) return -1;
  return 0;
}

static bool is_int_type(uint32_t t) {
  return t <= GGUF_I32 || t == GGUF_U64 || t == GGUF_I64;
}

static int read_kv(reader *r, gguf_kv *kv) {
  const char *k; uint64_t kn;
  if (rd_str(r, &k, &kn, "a metadata key") < 0) return -1;
  if (kn > 65535) return tg_seterr("%s: a metadata key of %" PRIu64 " bytes at byte %zu", r->path, kn, r->pos);
  kv->key = tg_xmalloc((size_t)kn + 1);
  memcpy(kv->key, k, (size_t)kn);
  kv->key[kn] = 0;
  if (rd_u32(r, &kv->type, "a metadata type") < 0) return -1;
  uint32_t t = kv->type;
  if (t >= GGUF_NTYPES) return tg_seterr("%s: metadata '%s' has unknown value type %u", r->path, kv->key, t);
  if (!strcmp(kv->key, "general.alignment") && !is_int_type(t))
    return tg_seterr("%s: general.alignment has type %s, not an integer", r->path, gguf_type_name(t));
  if (t == GGUF_STRING) return rd_str(r, &kv->str, &kv->str_len, "a metadata string");
  if (t != GGUF_ARRAY) {
    if (rd_need(r, (uint64_t)scalar_size[t], "a metadata value") < 0) return -1;
    scalar_value(t, r->b + r->pos, &kv->i, &kv->u, &kv->f);
    r->pos += (size_t)scalar_size[t];
    return 0;
  }
  if (rd_u32(r, &kv->arr_type, "an array's element type") < 0 || rd_u64(r, &kv->arr_n, "an array's length") < 0) return -1;
  uint32_t et = kv->arr_type;
  if (et >= GGUF_NTYPES) return tg_seterr("%s: metadata '%s' is an array of unknown type %u", r->path, kv->key, et);
  uint64_t min = et == GGUF_STRING ? 8 : et == GGUF_ARRAY ? 12 : (uint64_t)scalar_size[et];
  if (kv->arr_n > (r->size - r->pos) / min)
    return tg_seterr("%s: metadata '%s': array of %" PRIu64 " elements does not fit in the file", r->path, kv->key, kv->arr_n);
  kv->arr_data = r->b + r->pos;
  if (et == GGUF_STRING) {
    kv->strs = tg_xmalloc(sizeof *kv->strs * ((size_t)kv->arr_n + 1));
    kv->str_lens = tg_xmalloc(sizeof *kv->str_lens * ((size_t)kv->arr_n + 1));
    for (uint64_t i = 0; i < kv->arr_n; i++)
      if (rd_str(r, &kv->strs[i], &kv->str_lens[i], "a string in an array") < 0) return -1;
    return 0;
  }
  if (et == GGUF_ARRAY) {
    for (uint64_t i = 0; i < kv->arr_n; i++) if (skip_value(r, et, 1, kv->key) < 0) return -1;
    return 0;
  }
  r->pos += (size_t)(kv->arr_n * min);
  return 0;
}

static void free_kv(gguf_kv *kv) {
  free(kv->key);
  free(kv->strs);
  free(kv->str_lens);
}

/* Parses one file (part) into f: its metadata when want_kv, its tensors
 * appended. */
static int parse_part(gguf_file *f, disk_map *m, int part, bool want_kv) {
  reader r = { m->path, m->base, m->size, 0 };
  const char *path = m->path;
  uint32_t version;
  uint64_t nt, nkv, alignment = 32;
  if (m->size < 4 || memcmp(m->base, "GGUF", 4) != 0) return tg_seterr("%s: not a GGUF file (bad magic)", path);
  r.pos = 4;
  if (rd_u32(&r, &version, "the version") < 0) return -1;
  if (version != 2 && version != 3) return tg_seterr("%s: GGUF version %u is not supported (2 and 3 are)", path, version);
  if (rd_u64(&r, &nt, "the tensor count") < 0 || rd_u64(&r, &nkv, "the metadata count") < 0) return -1;
  if (nkv > (r.size - r.pos) / 13) return tg_seterr("%s: metadata count %" PRIu64 " is absurd for a file of %zu bytes", path, nkv, r.size);
  if (part == 0) f->version = version;
  gguf_kv *kvs = tg_xcalloc((size_t)nkv + 1, sizeof *kvs);
  int rc = 0;
  for (uint64_t i = 0; i < nkv && rc == 0; i++) {
    rc = read_kv(&r, &kvs[i]);
    if (rc == 0 && !strcmp(kvs[i].key, "general.alignment")) {
      if (kvs[i].u == 0 || (kvs[i].u & (kvs[i].u - 1)) || kvs[i].u > (1u << 20))
        rc = tg_seterr("%s: general.alignment %" PRIu64 " is not a power of two (<= 1 MiB)", path, kvs[i].u);
      else alignment = kvs[i].u;
    }
  }
  if (rc == 0 && want_kv) {
    f->kv = kvs;
    f->n_kv = (int)nkv;
    f->alignment = alignment;
  } else {
    for (uint64_t i = 0; i < nkv; i++) free_kv(&kvs[i]);
    free(kvs);
  }
  if (rc) return -1;
  if (nt > (r.size - r.pos) / 24) return tg_seterr("%s: tensor count %" PRIu64 " is absurd for a file of %zu bytes", path, nt, r.size);
  int first = f->n_tensors;
  f->tensors = tg_xrealloc(f->tensors, sizeof *f->tensors * ((size_t)first + (size_t)nt + 1));
  memset(f->tensors + first, 0, sizeof *f->tensors * (size_t)nt);
  for (uint64_t i = 0; i < nt; i++) {
    gguf_tensor_info *g = &f->tensors[f->n_tensors];
    const char *nm; uint64_t nn; uint32_t nd;
    if (rd_str(&r, &nm, &nn, "a tensor name") < 0) return -1;
    if (nn > 65535) return tg_seterr("%s: tensor %" PRIu64 " has a name of %" PRIu64 " bytes", path, i, nn);
    g->name = tg_xmalloc((size_t)nn + 1);
    memcpy(g->name, nm, (size_t)nn);
    g->name[nn] = 0;
    f->n_tensors++;
    if (strlen(g->name) != nn) return tg_seterr("%s: tensor %" PRIu64 " has a name with a NUL byte", path, i);
    if (rd_u32(&r, &nd, "a tensor's dimension count") < 0) return -1;
    if (nd > GGUF_MAX_DIMS) return tg_seterr("%s: tensor '%s' has %u dimensions (at most %d)", path, g->name, nd, GGUF_MAX_DIMS);
    g->n_dims = (int)nd;
    for (int k = 0; k < 4; k++) g->ne[k] = 1;
    for (uint32_t k = 0; k < nd; k++) {
      uint64_t ne;
      if (rd_u64(&r, &ne, "a tensor dimension") < 0) return -1;
      if (ne > (uint64_t)INT64_MAX) return tg_seterr("%s: tensor '%s' has an absurd dimension %" PRIu64, path, g->name, ne);
      g->ne[k] = (int64_t)ne;
    }
    if (rd_u32(&r, &g->type, "a tensor type") < 0 || rd_u64(&r, &g->offset, "a tensor offset") < 0) return -1;
    const ggml_type_traits *tr = ggml_type_info(g->type);
    if (!tr) return tg_seterr("%s: tensor '%s' has unknown ggml type %u", path, g->name, g->type);
    uint64_t row;
    if (!ggml_row_bytes(g->type, g->ne[0], &row))
      return tg_seterr("%s: tensor '%s': row length %" PRId64 " is not a multiple of %s's block size %d", path, g->name, g->ne[0], tr->name, tr->block_size);
    int64_t rows = io_numel(g->ne + 1, 3);
    if (rows < 0 || (rows && row > UINT64_MAX / (uint64_t)rows))
      return tg_seterr("%s: tensor '%s' is absurdly large", path, g->name);
    g->nbytes = row * (uint64_t)rows;
    if (g->offset % alignment)
      return tg_seterr("%s: tensor '%s' offset %" PRIu64 " is not a multiple of the alignment %" PRIu64, path, g->name, g->offset, alignment);
    g->map = m;
    g->part = part;
  }
  uint64_t data = (r.pos + alignment - 1) / alignment * alignment;
  if (nt && data > r.size)
    return tg_seterr("%s: truncated GGUF: the data section would start at byte %" PRIu64 ", past the end (%zu bytes)", path, data, r.size);
  uint64_t dsize = data <= r.size ? r.size - data : 0;
  io_range *ranges = tg_xmalloc(sizeof *ranges * ((size_t)nt + 1));
  for (uint64_t i = 0; i < nt; i++) {
    gguf_tensor_info *g = &f->tensors[first + (int)i];
    if (g->offset > dsize || g->nbytes > dsize - g->offset) {
      free(ranges);
      return tg_seterr("%s: tensor '%s' data [%" PRIu64 ", %" PRIu64 ") lies past the end of the data section (%" PRIu64 " bytes): truncated?",
                       path, g->name, g->offset, g->offset + g->nbytes, dsize);
    }
    g->file_offset = (size_t)(data + g->offset);
    ranges[i] = (io_range){ g->offset, g->offset + g->nbytes, first + (int)i };
  }
  int other, bad = io_find_overlap(ranges, (int)nt, &other);
  free(ranges);
  if (bad >= 0) return tg_seterr("%s: data of tensors '%s' and '%s' overlap", path, f->tensors[bad].name, f->tensors[other].name);
  return 0;
}

/* For X-00002-of-00005.gguf: *count = 5, and prefix_len the length of "X". */
static bool split_name(const char *path, int *count, size_t *prefix_len) {
  size_t n = strlen(path);
  const char *tail = "-00000-of-00000.gguf";
  size_t tl = strlen(tail);
  if (n < tl) return false;
  const char *s = path + n - tl;
  for (size_t i = 0; i < tl; i++) {
    bool digit = tail[i] == '0';
    if (digit ? !(s[i] >= '0' && s[i] <= '9') : s[i] != tail[i]) return false;
  }
  *count = atoi(s + 10);
  *prefix_len = n - tl;
  return *count >= 1;
}

gguf_file *gguf_open(const char *path) {
  if (!path) TG_FAIL("gguf_open: NULL path");
  gguf_file *f = tg_xcalloc(1, sizeof *f);
  f->path = tg_xstrdup(path);
  int count = 1;
  size_t plen = 0;
  bool split = split_name(path, &count, &plen);
  if (split && count > GGUF_MAX_PARTS) { tg_seterr("%s: %d split parts is absurd", path, count); goto fail; }
  f->parts = tg_xcalloc((size_t)count, sizeof *f->parts);
  for (int p = 0; p < count; p++) {
    char *part_path = split ? tg_xmalloc(plen + 32) : tg_xstrdup(path);
    if (split) snprintf(part_path, plen + 32, "%.*s-%05d-of-%05d.gguf", (int)plen, path, p + 1, count);
    disk_map *m = disk_map_open(part_path);
    free(part_path);
    if (!m) goto fail;
    f->parts[f->n_parts++] = m;
    if (parse_part(f, m, p, p == 0) < 0) goto fail;
  }
  int64_t declared;
  if (split && gguf_get_int(f, "split.count", &declared) && declared != count) {
    tg_seterr("%s: split.count says %" PRId64 " parts, the name says %d", path, declared, count);
    goto fail;
  }
  const char **names = tg_xmalloc(sizeof(char *) * ((size_t)f->n_tensors + 1));
  for (int i = 0; i < f->n_tensors; i++) names[i] = f->tensors[i].name;
  const char *dup = io_find_duplicate(names, f->n_tensors);
  if (dup) tg_seterr("%s: tensor name '%s' appears twice", path, dup);
  free(names);
  if (dup) goto fail;
  return f;
fail:
  gguf_close(f);
  return NULL;
}

void gguf_close(gguf_file *f) {
  if (!f) return;
  for (int i = 0; i < f->n_kv; i++) free_kv(&f->kv[i]);
  free(f->kv);
  for (int i = 0; i < f->n_tensors; i++) free(f->tensors[i].name);
  free(f->tensors);
  for (int i = 0; i < f->n_parts; i++) disk_map_release(f->parts[i]);
  free(f->parts);
  free(f->path);
  free(f);
}

const gguf_kv *gguf_find(const gguf_file *f, const char *key) {
  for (int i = 0; i < f->n_kv; i++) if (!strcmp(f->kv[i].key, key)) return &f->kv[i];
  return NULL;
}

const gguf_tensor_info *gguf_find_tensor(const gguf_file *f, const char *name) {
  for (int i = 0; i < f->n_tensors; i++) if (!strcmp(f->tensors[i].name, name)) return &f->tensors[i];
  return NULL;
}

bool gguf_get_int(const gguf_file *f, const char *key, int64_t *out) {
  const gguf_kv *kv = gguf_find(f, key);
  if (!kv || !(is_int_type(kv->type) || kv->type == GGUF_BOOL)) return false;
  *out = kv->i;
  return true;
}

bool gguf_get_f64(const gguf_file *f, const char *key, double *out) {
  const gguf_kv *kv = gguf_find(f, key);
  if (!kv || !(is_int_type(kv->type) || kv->type == GGUF_F32 || kv->type == GGUF_F64)) return false;
  *out = kv->f;
  return true;
}

bool gguf_get_bool(const gguf_file *f, const char *key, bool *out) {
  const gguf_kv *kv = gguf_find(f, key);
  if (!kv || !(is_int_type(kv->type) || kv->type == GGUF_BOOL)) return false;
  *out = kv->i != 0;
  return true;
}

char *gguf_get_str(const gguf_file *f, const char *key) {
  const gguf_kv *kv = gguf_find(f, key);
  if (!kv || kv->type != GGUF_STRING) return NULL;
  char *s = tg_xmalloc((size_t)kv->str_len + 1);
  memcpy(s, kv->str, (size_t)kv->str_len);
  s[kv->str_len] = 0;
  return s;
}

const gguf_kv *gguf_get_arr(const gguf_file *f, const char *key, int et) {
  const gguf_kv *kv = gguf_find(f, key);
  if (!kv || kv->type != GGUF_ARRAY || (et >= 0 && kv->arr_type != (uint32_t)et)) return NULL;
  return kv;
}

double gguf_arr_f64(const gguf_kv *kv, uint64_t i) {
  int64_t iv = 0; uint64_t uv = 0; double fv = 0;
  scalar_value(kv->arr_type, kv->arr_data + i * (uint64_t)scalar_size[kv->arr_type], &iv, &uv, &fv);
  return fv;
}

int64_t gguf_arr_int(const gguf_kv *kv, uint64_t i) {
  int64_t iv = 0; uint64_t uv = 0; double fv = 0;
  scalar_value(kv->arr_type, kv->arr_data + i * (uint64_t)scalar_size[kv->arr_type], &iv, &uv, &fv);
  return iv;
}

static void format_scalar(uint32_t t, int64_t i, uint64_t u, double f, char *buf, size_t n) {
  if (t == GGUF_F32 || t == GGUF_F64) snprintf(buf, n, "%.9g", f);
  else if (t == GGUF_BOOL) snprintf(buf, n, "%s", i ? "true" : "false");
  else if (t == GGUF_U64) snprintf(buf, n, "%" PRIu64, u);
  else snprintf(buf, n, "%" PRId64, i);
}

/* Appends s (len bytes) quoted, with control characters escaped. */
static void append_quoted(char *buf, size_t n, const char *s, uint64_t len) {
  size_t at = strlen(buf);
  if (at + 1 < n) buf[at++] = '"';
  for (uint64_t k = 0; k < len && at + 4 < n; k++) {
    unsigned char c = (unsigned char)s[k];
    if (c == '\n') { buf[at++] = '\\'; buf[at++] = 'n'; }
    else if (c < 0x20) at += (size_t)snprintf(buf + at, n - at, "\\x%02x", c);
    else buf[at++] = (char)c;
  }
  if (at + 1 < n) buf[at++] = '"';
  buf[at < n ? at : n - 1] = 0;
}

void gguf_kv_format(const gguf_kv *kv, char *buf, size_t n) {
  if (!n) return;
  buf[0] = 0;
  if (kv->type == GGUF_STRING) { append_quoted(buf, n > 200 ? 200 : n, kv->str, kv->str_len); return; }
  if (kv->type != GGUF_ARRAY) { format_scalar(kv->type, kv->i, kv->u, kv->f, buf, n); return; }
  size_t at = (size_t)snprintf(buf, n, "[");
  uint64_t shown = kv->arr_n < 6 ? kv->arr_n : 6;
  for (uint64_t k = 0; k < shown && at < n && kv->arr_type != GGUF_ARRAY; k++) {
    if (k) at += (size_t)snprintf(buf + at, n - at, ", ");
    if (at >= n) break;
    if (kv->arr_type == GGUF_STRING) {
      append_quoted(buf, n < at + 40 ? n : at + 40, kv->strs[k], kv->str_lens[k]);
      at = strlen(buf);
    } else {
      int64_t iv = 0; uint64_t uv = 0; double fv = 0;
      scalar_value(kv->arr_type, kv->arr_data + k * (uint64_t)scalar_size[kv->arr_type], &iv, &uv, &fv);
      format_scalar(kv->arr_type, iv, uv, fv, buf + at, n - at);
      at = strlen(buf);
    }
  }
  if (at < n) snprintf(buf + at, n - at, "%s] (%" PRIu64 " x %s)", kv->arr_n > shown ? ", ..." : "", kv->arr_n, gguf_type_name(kv->arr_type));
}
