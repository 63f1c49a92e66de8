/* gguf_writer.c: writes GGUF v3 files (see gguf_writer.h). Metadata values
 * are encoded when set; the header (magic, counts, metadata, tensor infos,
 * padding) is assembled in memory and tensor data streamed after it through
 * a 1 MiB buffer. */
#include <errno.h>
#include <inttypes.h>
#include "io/gguf_writer.h"
#include "io/io.h"
#include "util/util.h"

/* Values are copied from memory as they are: GGUF is little-endian, and so
 * must the host be. */
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the GGUF writer assumes a little-endian host");

/* Bytes of each scalar type (0: not a scalar). */
static const int scalar_size[GGUF_NTYPES] = { 1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8 };

typedef struct { unsigned char *p; size_t n, cap; } bytes;

static void b_put(bytes *b, const void *p, size_t n) {
  if (b->n + n > b->cap) {
    while (b->n + n > b->cap) b->cap = b->cap ? b->cap * 2 : 256;
    b->p = tg_xrealloc(b->p, b->cap);
  }
  if (n) memcpy(b->p + b->n, p, n);
  b->n += n;
}
static void b_le(bytes *b, uint64_t v, int n) {
  unsigned char t[8];
  for (int i = 0; i < n; i++) t[i] = (unsigned char)(v >> 8 * i);
  b_put(b, t, (size_t)n);
}
static void b_str(bytes *b, const char *s, uint64_t n) { b_le(b, n, 8); b_put(b, s, (size_t)n); }

typedef struct { char *key; uint32_t type; bytes val; } w_kv;
typedef struct {
  char *name;
  uint32_t type;
  int n_dims;
  int64_t ne[4];
  uint64_t nbytes, offset;
  const void *data;
} w_tensor;

struct gguf_writer {
  VEC(w_kv) kv;
  VEC(w_tensor) t;
  uint64_t alignment;
};

struct gguf_w_sink {
  int fd;
  const char *path;
  bytes buf;
  uint64_t left;     /* bytes the current tensor still needs */
  const char *tensor;
};

gguf_writer *gguf_writer_new(void) {
  gguf_writer *w = tg_xcalloc(1, sizeof *w);
  w->alignment = GGUF_DEFAULT_ALIGNMENT;
  return w;
}

void gguf_writer_free(gguf_writer *w) {
  if (!w) return;
  for (int i = 0; i < w->kv.n; i++) { free(w->kv.v[i].key); free(w->kv.v[i].val.p); }
  for (int i = 0; i < w->t.n; i++) free(w->t.v[i].name);
  VEC_FREE(w->kv);
  VEC_FREE(w->t);
  free(w);
}

int gguf_w_n_kv(const gguf_writer *w) { return w->kv.n; }

static int find_kv(const gguf_writer *w, const char *key) {
  for (int i = 0; i < w->kv.n; i++)
    if (!strcmp(w->kv.v[i].key, key)) return i;
  return -1;
}

void gguf_w_remove(gguf_writer *w, const char *key) {
  int i = find_kv(w, key);
  if (i < 0) return;
  free(w->kv.v[i].key);
  free(w->kv.v[i].val.p);
  memmove(w->kv.v + i, w->kv.v + i + 1, (size_t)(w->kv.n - i - 1) * sizeof *w->kv.v);
  w->kv.n--;
  if (!strcmp(key, "general.alignment")) w->alignment = GGUF_DEFAULT_ALIGNMENT;
}

/* Stores (key, t, val), taking val's buffer. */
static int put_kv(gguf_writer *w, const char *key, uint32_t t, bytes val) {
  if (!strcmp(key, "general.alignment")) {
    uint32_t a = 0;
    if (t == GGUF_U32) memcpy(&a, val.p, 4);   /* the host is little-endian, as GGUF is */
    if (t != GGUF_U32 || !a || (a & (a - 1))) {
      free(val.p);
      return tg_seterr("gguf writer: general.alignment must be a u32 power of two");
    }
    w->alignment = a;
  }
  int i = find_kv(w, key);
  if (i >= 0) {
    free(w->kv.v[i].val.p);
    w->kv.v[i].type = t;
    w->kv.v[i].val = val;
    return 0;
  }
  w_kv kv = { tg_xstrdup(key), t, val };
  VEC_PUSH(w->kv, kv);
  return 0;
}

int gguf_w_set(gguf_writer *w, const char *key, uint32_t t, const void *value) {
  if (t >= GGUF_NTYPES || !scalar_size[t]) return tg_seterr("gguf writer: '%s': type %u is not a scalar type", key, t);
  bytes b = { 0 };
  b_put(&b, value, (size_t)scalar_size[t]);
  return put_kv(w, key, t, b);
}

int gguf_w_set_strn(gguf_writer *w, const char *key, const char *s, uint64_t len) {
  bytes b = { 0 };
  b_str(&b, s, len);
  return put_kv(w, key, GGUF_STRING, b);
}

int gguf_w_set_str(gguf_writer *w, const char *key, const char *s) { return gguf_w_set_strn(w, key, s, strlen(s)); }

int gguf_w_set_arr(gguf_writer *w, const char *key, uint32_t et, const void *elems, uint64_t n) {
  if (et >= GGUF_NTYPES || !scalar_size[et])
    return tg_seterr("gguf writer: '%s': use gguf_w_set_str_arr or gguf_w_set_raw for arrays of type %u", key, et);
  bytes b = { 0 };
  b_le(&b, et, 4);
  b_le(&b, n, 8);
  b_put(&b, elems, (size_t)n * (size_t)scalar_size[et]);
  return put_kv(w, key, GGUF_ARRAY, b);
}

int gguf_w_set_str_arr(gguf_writer *w, const char *key, const char *const *strs, uint64_t n) {
  bytes b = { 0 };
  b_le(&b, GGUF_STRING, 4);
  b_le(&b, n, 8);
  for (uint64_t i = 0; i < n; i++) b_str(&b, strs[i], strlen(strs[i]));
  return put_kv(w, key, GGUF_ARRAY, b);
}

int gguf_w_set_raw(gguf_writer *w, const char *key, uint32_t t, const void *encoded, size_t n) {
  if (t >= GGUF_NTYPES) return tg_seterr("gguf writer: '%s': bad value type %u", key, t);
  bytes b = { 0 };
  b_put(&b, encoded, n);
  return put_kv(w, key, t, b);
}

size_t gguf_arr_bytes(uint32_t et, uint64_t n, const unsigned char *p) {
  if (et < GGUF_NTYPES && scalar_size[et]) return (size_t)n * (size_t)scalar_size[et];
  size_t at = 0;
  for (uint64_t i = 0; i < n; i++) {
    uint64_t len;
    if (et == GGUF_STRING) { memcpy(&len, p + at, 8); at += 8 + (size_t)len; continue; }
    uint32_t inner;                    /* GGUF_ARRAY: type, count, elements */
    memcpy(&inner, p + at, 4);
    memcpy(&len, p + at + 4, 8);
    at += 12;
    at += gguf_arr_bytes(inner, len, p + at);
  }
  return at;
}

int gguf_w_copy_kv(gguf_writer *w, const gguf_kv *kv) {
  if (kv->type == GGUF_STRING) return gguf_w_set_strn(w, kv->key, kv->str, kv->str_len);
  if (kv->type != GGUF_ARRAY) {
    /* scalars are kept widened in the parsed entry; narrow them back */
    uint64_t u = kv->type == GGUF_F32 ? 0 : kv->u;
    if (kv->type == GGUF_F32) { float f = (float)kv->f; memcpy(&u, &f, 4); }
    if (kv->type == GGUF_F64) memcpy(&u, &kv->f, 8);
    if (kv->type == GGUF_I8 || kv->type == GGUF_I16 || kv->type == GGUF_I32 || kv->type == GGUF_I64) u = (uint64_t)kv->i;
    bytes b = { 0 };
    b_le(&b, u, scalar_size[kv->type]);
    return put_kv(w, kv->key, kv->type, b);
  }
  bytes b = { 0 };
  b_le(&b, kv->arr_type, 4);
  b_le(&b, kv->arr_n, 8);
  b_put(&b, kv->arr_data, gguf_arr_bytes(kv->arr_type, kv->arr_n, kv->arr_data));
  return put_kv(w, kv->key, GGUF_ARRAY, b);
}

int gguf_w_add_tensor(gguf_writer *w, const char *name, uint32_t type, int n_dims, const int64_t *ne, const void *data) {
  const ggml_type_traits *tt = ggml_type_info(type);
  if (!tt) return tg_seterr("gguf writer: tensor '%s': unknown ggml type %u", name, type);
  if (n_dims < 1 || n_dims > 4) return tg_seterr("gguf writer: tensor '%s': %d dims (GGUF holds 1 to 4)", name, n_dims);
  w_tensor t = { NULL, type, n_dims, { 1, 1, 1, 1 }, 0, 0, data };
  uint64_t rows = 1;
  for (int i = 0; i < n_dims; i++) {
    if (ne[i] < 0) return tg_seterr("gguf writer: tensor '%s': negative dim %" PRId64, name, ne[i]);
    t.ne[i] = ne[i];
    if (i && ne[i] && rows > UINT64_MAX / (uint64_t)ne[i]) return tg_seterr("gguf writer: tensor '%s' is too large", name);
    if (i) rows *= (uint64_t)ne[i];
  }
  uint64_t row;
  if (!ggml_row_bytes(type, ne[0], &row))
    return tg_seterr("gguf writer: tensor '%s': %s needs rows of a multiple of %d values, ne[0] is %" PRId64, name, tt->name,
                     tt->block_size, ne[0]);
  if (rows && row > UINT64_MAX / 2 / rows) return tg_seterr("gguf writer: tensor '%s' is too large", name);
  t.nbytes = row * rows;
  for (int i = 0; i < w->t.n; i++)
    if (!strcmp(w->t.v[i].name, name)) return tg_seterr("gguf writer: tensor name '%s' used twice", name);
  t.name = tg_xstrdup(name);
  VEC_PUSH(w->t, t);
  return w->t.n - 1;
}

uint64_t gguf_w_tensor_nbytes(const gguf_writer *w, int index) { return w->t.v[index].nbytes; }

static int sink_flush(gguf_w_sink *s) {
  if (s->buf.n && !io_write_all(s->fd, s->buf.p, s->buf.n))
    return tg_seterr("%s: write failed: %s", s->path, strerror(errno));
  s->buf.n = 0;
  return 0;
}

#define SINK_BUF (1u << 20)

static int sink_raw(gguf_w_sink *s, const void *p, size_t n) {
  if (s->buf.n + n > SINK_BUF && sink_flush(s) < 0) return -1;
  if (n >= SINK_BUF) return io_write_all(s->fd, p, n) ? 0 : tg_seterr("%s: write failed: %s", s->path, strerror(errno));
  b_put(&s->buf, p, n);
  return 0;
}

int gguf_w_sink_write(gguf_w_sink *s, const void *p, size_t n) {
  if (n > s->left)
    return tg_seterr("%s: tensor '%s': %zu more bytes than its size", s->path, s->tensor, (size_t)(n - s->left));
  s->left -= n;
  return sink_raw(s, p, n);
}

static int pad_to(gguf_w_sink *s, uint64_t at, uint64_t align) {
  static const unsigned char zeros[256];
  uint64_t pad = (align - at % align) % align;
  while (pad) {
    size_t k = pad > sizeof zeros ? sizeof zeros : (size_t)pad;
    if (sink_raw(s, zeros, k) < 0) return -1;
    pad -= k;
  }
  return 0;
}

int gguf_writer_write(gguf_writer *w, const char *path, gguf_w_fill_fn fill, void *ctx) {
  bytes h = { 0 };
  b_put(&h, "GGUF", 4);
  b_le(&h, 3, 4);
  b_le(&h, (uint64_t)w->t.n, 8);
  b_le(&h, (uint64_t)w->kv.n, 8);
  for (int i = 0; i < w->kv.n; i++) {
    b_str(&h, w->kv.v[i].key, strlen(w->kv.v[i].key));
    b_le(&h, w->kv.v[i].type, 4);
    b_put(&h, w->kv.v[i].val.p, w->kv.v[i].val.n);
  }
  uint64_t off = 0;
  for (int i = 0; i < w->t.n; i++) {
    w_tensor *t = &w->t.v[i];
    b_str(&h, t->name, strlen(t->name));
    b_le(&h, (uint64_t)t->n_dims, 4);
    for (int d = 0; d < t->n_dims; d++) b_le(&h, (uint64_t)t->ne[d], 8);
    b_le(&h, t->type, 4);
    b_le(&h, off, 8);
    t->offset = off;
    off += (t->nbytes + w->alignment - 1) / w->alignment * w->alignment;
  }

  char *tmp;
  int fd = io_create_tmp(path, &tmp);
  if (fd < 0) { free(h.p); return -1; }
  gguf_w_sink s = { fd, path, { 0 }, 0, NULL };
  s.buf.p = tg_xmalloc(SINK_BUF);
  s.buf.cap = SINK_BUF;
  bool ok = sink_raw(&s, h.p, h.n) == 0 && pad_to(&s, h.n, w->alignment) == 0;
  for (int i = 0; i < w->t.n && ok; i++) {
    w_tensor *t = &w->t.v[i];
    s.left = t->nbytes;
    s.tensor = t->name;
    if (t->data) ok = gguf_w_sink_write(&s, t->data, (size_t)t->nbytes) == 0;
    else if (!fill) ok = tg_seterr("%s: tensor '%s' has no data and no fill callback was given", path, t->name) == 0;
    else ok = fill(ctx, i, &s) == 0;
    if (ok && s.left) ok = tg_seterr("%s: tensor '%s': %" PRIu64 " of its %" PRIu64 " bytes were not written", path, t->name,
                                     s.left, t->nbytes) == 0;
    ok = ok && pad_to(&s, t->nbytes, w->alignment) == 0;
  }
  ok = ok && sink_flush(&s) == 0;
  free(s.buf.p);
  free(h.p);
  return io_finish_tmp(fd, tmp, path, ok);
}
