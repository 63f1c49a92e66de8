/* disk_tensor.c: tensors over file mappings (BUFFERs on the DISK device),
 * tg_from_file, tensor lists, and helpers shared by the format readers. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>
#include "io/io.h"
#include "runtime/buffer.h"
#include "runtime/device.h"
#include "tensor/tensor.h"
#include "util/counters.h"

static void hooks_once(void) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, buffer_init_hooks);
}

tg_tensor *disk_tensor(disk_map *m, size_t offset, tg_shape shape, tg_dtype dt) {
  if (!m) TG_FAIL("disk_tensor: no mapping");
  if (shape.ndim < 0 || shape.ndim > TG_MAX_DIMS) TG_FAIL("%s: bad number of dimensions %d", m->path, shape.ndim);
  int64_t numel = io_numel(shape.d, shape.ndim);
  uint64_t nbytes;
  if (numel < 0 || !io_nbytes(numel, tg_dtype_size(dt), &nbytes))
    TG_FAIL("%s: tensor size overflows", m->path);
  if (offset > m->size || nbytes > m->size - offset)
    TG_FAIL("%s: bytes [%zu, %llu) lie past the end of the file (%zu bytes)", m->path, offset,
            (unsigned long long)(offset + nbytes), m->size);
  tg_buffer *b = buffer_new(disk_device(), dt, numel);
  if (!b) return NULL;
  /* An empty tensor points at the mapping's start (never read): a pointer
   * one past the end could be the start of another mapping. An empty file
   * has no mapping: the buffer then gets a dummy pointer and no reference. */
  static const unsigned char empty_file_byte;
  if (m->base) {
    b->ptr = (void *)(nbytes ? m->base + offset : m->base);
    disk_map_retain(m);
  } else {
    b->ptr = (void *)&empty_file_byte;
  }
  counters_mem((int64_t)b->nbytes);   /* buffer_release gives it back */
  hooks_once();
  uop_pool_push();
  uop *u = uop0(OP_BUFFER, dt_scalar(dt), arg_ptr(b));
  buffer_release(b);   /* the BUFFER node holds it now */
  u = mv_reshape(u, shape.d, shape.ndim);
  tg_tensor *t = tensor_wrap(u, disk_device()->name);
  uop_pool_pop();
  return t;
}

tg_tensor *disk_tensor_to(tg_tensor *t, const char *device) {
  if (!t) return NULL;
  const char *dev = device ? device : tg_default_device();
  if (!dev) return NULL;
  tg_tensor *r = tg_to(t, dev);
  if (r != t) tg_free(t);   /* the COPY node keeps the DISK buffer alive */
  return r;
}

tg_tensor *disk_tensor_in_place(tg_tensor *t, const char *device) {
  if (!t) return NULL;
  const char *name = device ? device : tg_default_device();
  tg_device *dev = name ? device_get(name) : NULL;
  uop *u = t->u;
  while (u->op == OP_RESHAPE) u = u->src[0];
  if (!dev || !dev->host_memory || u->op != OP_BUFFER) return disk_tensor_to(t, device);
  tg_buffer *disk = u->arg.p;
  tg_buffer *b = buffer_view_on(dev, disk, 0, disk->numel);   /* a DISK buffer's pointer is into the mapping */
  if (!b) { tg_free(t); return NULL; }
  uop_pool_push();
  uop *v = uop0(OP_BUFFER, dt_scalar(disk->dtype), arg_ptr(b));
  buffer_release(b);   /* the BUFFER node holds it now */
  v = mv_reshape(v, t->u->shape, t->u->ndim);
  tg_tensor *r = tensor_wrap(v, dev->name);
  uop_pool_pop();
  tg_free(t);
  return r;
}

tg_tensor *tg_from_file(const char *path, int64_t offset, tg_shape shape, tg_dtype dt) {
  if ((int)dt < 0 || dt >= TG_DTYPE_COUNT) TG_FAIL("tg_from_file: unknown dtype %d", (int)dt);
  if (offset < 0) TG_FAIL("tg_from_file: %s: negative offset %lld", path ? path : "(null)", (long long)offset);
  for (int i = 0; i < shape.ndim && i < TG_MAX_DIMS; i++)
    if (shape.d[i] < 0) TG_FAIL("tg_from_file: negative dimension %lld at axis %d", (long long)shape.d[i], i);
  disk_map *m = disk_map_open(path);
  if (!m) return NULL;
  tg_tensor *t = disk_tensor(m, (size_t)offset, shape, dt);
  disk_map_release(m);
  return t;
}

/* ---------------------------------------------------------------- lists */

void tg_tensor_list_free(tg_tensor_list *l) {
  if (!l) return;
  for (int i = 0; i < l->n; i++) free(l->names[i]);
  for (int i = 0; i < l->nmeta; i++) { free(l->meta_keys[i]); free(l->meta_values[i]); }
  free(l->names); free(l->t); free(l->meta_keys); free(l->meta_values);
  memset(l, 0, sizeof *l);
}

tg_tensor *tg_tensor_list_get(const tg_tensor_list *l, const char *name) {
  if (!l || !name) TG_FAIL("tg_tensor_list_get: %s is NULL", !l ? "list l" : "name");
  for (int i = 0; i < l->n; i++) if (strcmp(l->names[i], name) == 0) return l->t[i];
  return NULL;
}

void io_list_push(tg_tensor_list *l, const char *name, tg_tensor *t) {
  l->names = tg_xrealloc(l->names, sizeof(char *) * (size_t)(l->n + 1));
  l->t = tg_xrealloc(l->t, sizeof(tg_tensor *) * (size_t)(l->n + 1));
  l->names[l->n] = tg_xstrdup(name);
  l->t[l->n] = t;
  l->n++;
}

void io_list_push_meta(tg_tensor_list *l, const char *key, const char *value) {
  l->meta_keys = tg_xrealloc(l->meta_keys, sizeof(char *) * (size_t)(l->nmeta + 1));
  l->meta_values = tg_xrealloc(l->meta_values, sizeof(char *) * (size_t)(l->nmeta + 1));
  l->meta_keys[l->nmeta] = tg_xstrdup(key);
  l->meta_values[l->nmeta] = tg_xstrdup(value);
  l->nmeta++;
}

void io_list_discard(tg_tensor_list *l) {
  for (int i = 0; i < l->n; i++) tg_free(l->t[i]);
  tg_tensor_list_free(l);
}

/* ---------------------------------------------------------------- sizes */

int64_t io_numel(const int64_t *d, int nd) {
  int64_t n = 1;
  for (int i = 0; i < nd; i++) {
    if (d[i] < 0) return -1;
    if (d[i] && n > INT64_MAX / d[i]) return -1;
    n *= d[i];
  }
  return n;
}

bool io_nbytes(int64_t numel, int itemsize, uint64_t *out) {
  if (numel < 0 || itemsize <= 0) return false;
  if ((uint64_t)numel > (UINT64_MAX / 4) / (uint64_t)itemsize) return false;
  *out = (uint64_t)numel * (uint64_t)itemsize;
  return true;
}

static int range_cmp(const void *a, const void *b) {
  const io_range *x = a, *y = b;
  if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
  return x->index - y->index;
}

int io_find_overlap(io_range *r, int n, int *other) {
  qsort(r, (size_t)n, sizeof *r, range_cmp);
  int last = -1;   /* the non-empty range reaching furthest so far */
  for (int i = 0; i < n; i++) {
    if (r[i].begin == r[i].end) continue;
    if (last >= 0 && r[i].begin < r[last].end) { *other = r[i].index; return r[last].index; }
    if (last < 0 || r[i].end > r[last].end) last = i;
  }
  return -1;
}

static int str_cmp(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

const char *io_find_duplicate(const char **names, int n) {
  qsort(names, (size_t)n, sizeof *names, str_cmp);
  for (int i = 1; i < n; i++) if (strcmp(names[i - 1], names[i]) == 0) return names[i];
  return NULL;
}

/* ---------------------------------------------------------------- writing */

bool io_write_all(int fd, const void *p, size_t n) {
  const char *c = p;
  while (n) {
    ssize_t k = write(fd, c, n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    c += k;
    n -= (size_t)k;
  }
  return true;
}

int io_create_tmp(const char *path, char **tmp) {
  strbuf sb = { 0 };
  sb_printf(&sb, "%s.tmp.XXXXXX", path);
  int fd = mkstemp(sb.s);
  if (fd < 0) {
    int e = errno;
    sb_free(&sb);
    *tmp = NULL;
    return tg_seterr("%s: cannot create a file next to it: %s", path, strerror(e));
  }
  fchmod(fd, 0644);
  *tmp = sb.s;
  return fd;
}

int io_finish_tmp(int fd, char *tmp, const char *path, bool ok) {
  int rc = 0;
  if (close(fd) != 0 && ok) { rc = tg_seterr("%s: write failed: %s", path, strerror(errno)); ok = false; }
  if (ok && rename(tmp, path) != 0) { rc = tg_seterr("%s: cannot rename %s onto it: %s", path, tmp, strerror(errno)); ok = false; }
  if (!ok) { unlink(tmp); if (rc == 0) rc = -1; }
  free(tmp);
  return rc;
}
