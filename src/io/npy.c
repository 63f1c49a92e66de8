/* npy.c: NumPy's .npy format (numpy/lib/format.py).
 *
 *   "\x93NUMPY" major minor      6 + 2 bytes
 *   header length                u16 (version 1.0) or u32 (2.0, 3.0), LE
 *   header                       a Python dict literal: {'descr': '<f4',
 *                                'fortran_order': False, 'shape': (2, 3), }
 *                                padded with spaces and a '\n' so the data
 *                                starts at a multiple of 64 (16 in old files)
 *   data                         C order
 *
 * Loading maps the file and makes one DISK tensor (io/disk_map.h). Saving
 * writes exactly numpy.save's bytes (sorted keys, the 21-digit growth space
 * after the dict, 64-byte alignment). */
#include <ctype.h>
#include <errno.h>
#include <strings.h>
#include "io/io.h"
#include "util/util.h"

typedef struct { const char *descr; tg_dtype dt; } npy_dtype;
static const npy_dtype npy_dtypes[] = {
  { "|b1", TG_BOOL }, { "|i1", TG_I8 }, { "|u1", TG_U8 }, { "<i2", TG_I16 }, { "<u2", TG_U16 },
  { "<i4", TG_I32 }, { "<u4", TG_U32 }, { "<i8", TG_I64 }, { "<u8", TG_U64 },
  { "<f2", TG_F16 }, { "<f4", TG_F32 }, { "<f8", TG_F64 },
};
#define N_NPY ((int)(sizeof npy_dtypes / sizeof npy_dtypes[0]))

/* descr -> dtype: byte order '<', '|' or '=' (this host is little-endian),
 * kind and size as numpy writes them. */
static int npy_parse_descr(const char *path, const char *d, tg_dtype *dt) {
  if (!d[0] || !d[1]) return tg_seterr("%s: bad descr '%s'", path, d);
  if (d[0] == '>' && !(d[2] == '1' && !d[3]))
    return tg_seterr("%s: big-endian data (descr '%s') is not supported", path, d);
  if (d[0] != '<' && d[0] != '|' && d[0] != '=' && d[0] != '>')
    return tg_seterr("%s: descr '%s' has no byte order character", path, d);
  for (int i = 0; i < N_NPY; i++)
    if (strcmp(npy_dtypes[i].descr + 1, d + 1) == 0) { *dt = npy_dtypes[i].dt; return 0; }
  return tg_seterr("%s: unsupported dtype descr '%s' (supported: bool, int8..64, uint8..64, float16/32/64)", path, d);
}

/* ---- a tiny reader for the header's dict literal */
typedef struct { const char *p, *e; } cur;
static void skip_ws(cur *c) { while (c->p < c->e && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r')) c->p++; }
static bool eat(cur *c, char ch) { skip_ws(c); if (c->p < c->e && *c->p == ch) { c->p++; return true; } return false; }
/* a quoted string (no escapes needed for the keys and descrs numpy writes) */
static bool read_str(cur *c, char *out, size_t n) {
  skip_ws(c);
  if (c->p >= c->e || (*c->p != '\'' && *c->p != '"')) return false;
  char q = *c->p++;
  size_t k = 0;
  while (c->p < c->e && *c->p != q) {
    if (k + 1 >= n) return false;
    out[k++] = *c->p++;
  }
  if (c->p >= c->e) return false;
  c->p++;
  out[k] = 0;
  return true;
}
static bool read_word(cur *c, const char *w) {
  skip_ws(c);
  size_t n = strlen(w);
  if ((size_t)(c->e - c->p) >= n && memcmp(c->p, w, n) == 0) { c->p += n; return true; }
  return false;
}

static int parse_header(const char *path, const char *h, size_t n, tg_dtype *dt, tg_shape *shape) {
  cur c = { h, h + n };
  bool have_descr = false, have_fo = false, have_shape = false;
  if (!eat(&c, '{')) return tg_seterr("%s: the .npy header is not a dict", path);
  while (!eat(&c, '}')) {
    char key[32], val[64];
    if (!read_str(&c, key, sizeof key) || !eat(&c, ':')) return tg_seterr("%s: malformed .npy header dict", path);
    if (strcmp(key, "descr") == 0) {
      if (!read_str(&c, val, sizeof val)) return tg_seterr("%s: 'descr' is not a simple dtype string (structured arrays are not supported)", path);
      if (npy_parse_descr(path, val, dt) < 0) return -1;
      have_descr = true;
    } else if (strcmp(key, "fortran_order") == 0) {
      if (read_word(&c, "True")) return tg_seterr("%s: fortran_order is True (column-major data) and is not supported: save a C-order array (numpy.ascontiguousarray)", path);
      if (!read_word(&c, "False")) return tg_seterr("%s: 'fortran_order' is neither True nor False", path);
      have_fo = true;
    } else if (strcmp(key, "shape") == 0) {
      if (!eat(&c, '(')) return tg_seterr("%s: 'shape' is not a tuple", path);
      shape->ndim = 0;
      while (!eat(&c, ')')) {
        skip_ws(&c);
        if (c.p >= c.e || !isdigit((unsigned char)*c.p)) return tg_seterr("%s: 'shape' holds something other than non-negative integers", path);
        if (shape->ndim >= TG_MAX_DIMS) return tg_seterr("%s: shape has more than %d dimensions", path, TG_MAX_DIMS);
        uint64_t v = 0;
        while (c.p < c.e && isdigit((unsigned char)*c.p)) {
          if (v > (uint64_t)INT64_MAX / 10) return tg_seterr("%s: a shape dimension is absurdly large", path);
          v = v * 10 + (uint64_t)(*c.p++ - '0');
        }
        if (v > (uint64_t)INT64_MAX) return tg_seterr("%s: a shape dimension is absurdly large", path);
        if (c.p < c.e && *c.p == 'L') c.p++;   /* Python 2 longs */
        shape->d[shape->ndim++] = (int64_t)v;
        if (!eat(&c, ',') ) { if (!eat(&c, ')')) return tg_seterr("%s: malformed 'shape' tuple", path); break; }
      }
      have_shape = true;
    } else {
      return tg_seterr("%s: unexpected key '%s' in the .npy header", path, key);
    }
    if (!eat(&c, ',')) { if (!eat(&c, '}')) return tg_seterr("%s: malformed .npy header dict", path); break; }
  }
  if (!have_descr || !have_fo || !have_shape)
    return tg_seterr("%s: the .npy header lacks %s", path, !have_descr ? "'descr'" : !have_fo ? "'fortran_order'" : "'shape'");
  return 0;
}

tg_tensor *tg_npy_load(const char *path, const char *device) {
  disk_map *m = disk_map_open(path);
  if (!m) return NULL;
  tg_tensor *t = NULL;
  const unsigned char *b = m->base;
  size_t hstart, hlen;
  tg_dtype dt = TG_F32;
  tg_shape shape = { 0, { 0 } };
  if (m->size < 10 || memcmp(b, "\x93NUMPY", 6) != 0) {
    tg_seterr("%s: not a .npy file (%s)", path, m->size < 10 ? "too short" : "bad magic");
    goto done;
  }
  if (b[6] == 1) { hstart = 10; hlen = (size_t)b[8] | (size_t)b[9] << 8; }
  else if (b[6] == 2 || b[6] == 3) {
    if (m->size < 12) { tg_seterr("%s: truncated .npy header", path); goto done; }
    hstart = 12;
    hlen = (size_t)b[8] | (size_t)b[9] << 8 | (size_t)b[10] << 16 | (size_t)b[11] << 24;
  } else {
    tg_seterr("%s: unsupported .npy version %d.%d", path, b[6], b[7]);
    goto done;
  }
  if (hlen > m->size - hstart) {
    tg_seterr("%s: header length %zu runs past the end of the file (%zu bytes)", path, hlen, m->size);
    goto done;
  }
  if (parse_header(path, (const char *)b + hstart, hlen, &dt, &shape) < 0) goto done;
  int64_t numel = io_numel(shape.d, shape.ndim);
  uint64_t need;
  if (numel < 0 || !io_nbytes(numel, tg_dtype_size(dt), &need)) { tg_seterr("%s: shape is absurdly large", path); goto done; }
  size_t have = m->size - hstart - hlen;
  if (need != have) {
    tg_seterr("%s: shape of %lld %s elements needs %llu data bytes, the file has %zu%s", path, (long long)numel,
              tg_dtype_name(dt), (unsigned long long)need, have, need > have ? " (truncated)" : "");
    goto done;
  }
  t = disk_tensor(m, hstart + hlen, shape, dt);
  if (t && !(device && strcasecmp(device, "DISK") == 0)) t = disk_tensor_to(t, device);
done:
  disk_map_release(m);
  return t;
}

int tg_npy_save(const char *path, tg_tensor *t) {
  if (!path) return tg_seterr("tg_npy_save: no path");
  if (!t) return tg_seterr("tg_npy_save: %s: tensor is NULL (%s)", path, tg_error());
  tg_dtype dt = tg_dtype_of(t);
  const char *descr = NULL;
  for (int i = 0; i < N_NPY; i++) if (npy_dtypes[i].dt == dt) descr = npy_dtypes[i].descr;
  if (!descr) return tg_seterr("tg_npy_save: %s: .npy has no %s dtype; cast first (tg_cast)", path, tg_dtype_name(dt));
  tg_shape s = tg_shape_of(t);
  strbuf h = { 0 };
  sb_printf(&h, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
  for (int i = 0; i < s.ndim; i++) sb_printf(&h, "%s%lld", i ? ", " : "", (long long)s.d[i]);
  sb_printf(&h, "%s), }", s.ndim == 1 ? "," : "");
  if (s.ndim > 0) {   /* numpy's room to grow the first axis in place */
    char d0[32];
    int len = snprintf(d0, sizeof d0, "%lld", (long long)s.d[0]);
    for (int i = len; i < 21; i++) sb_puts(&h, " ");
  }
  size_t hl = h.n + 1;
  int version = 1;
  size_t prefix = 10;
  size_t pad = 64 - (prefix + hl) % 64;
  if (hl + pad > 65535) { version = 2; prefix = 12; pad = 64 - (prefix + hl) % 64; }
  for (size_t i = 0; i < pad; i++) sb_puts(&h, " ");
  sb_puts(&h, "\n");
  unsigned char pre[12] = { 0x93, 'N', 'U', 'M', 'P', 'Y', (unsigned char)version, 0 };
  for (size_t i = 0; i < prefix - 8; i++) pre[8 + i] = (unsigned char)(h.n >> (8 * i));

  size_t nbytes = (size_t)tg_numel(t) * (size_t)tg_dtype_size(dt);
  void *data = nbytes ? malloc(nbytes) : NULL;
  if (nbytes && !data) { sb_free(&h); return tg_seterr("tg_npy_save: %s: out of memory (%zu bytes)", path, nbytes); }
  if (nbytes && tg_data(t, data, nbytes) < 0) { sb_free(&h); free(data); return -1; }
  char *tmp;
  int fd = io_create_tmp(path, &tmp);
  if (fd < 0) { sb_free(&h); free(data); return -1; }
  bool ok = io_write_all(fd, pre, prefix) && io_write_all(fd, h.s, h.n) && io_write_all(fd, data, nbytes);
  if (!ok) tg_seterr("%s: write failed: %s", path, strerror(errno));
  sb_free(&h);
  free(data);
  return io_finish_tmp(fd, tmp, path, ok);
}
