/* disk_device.c: the DISK device. Its memory is read-only memory-mapped
 * files: a DISK buffer's pointer points into a mapping (io/disk_map.h), so
 * weights are paged in by the kernel only when read, and never read whole.
 *
 *   alloc    refused: DISK memory comes only from mapping a file
 *            (tg_from_file, the loaders in src/io/).
 *   free     gives back the buffer's reference on its mapping; the last one
 *            unmaps the file.
 *   copyin   refused: mappings are read-only.
 *   copyout  memcpy out of the mapping: tg_data works on DISK tensors, and a
 *            COPY (tg_to(t, "CPU")) reads through it.
 *   compile, launch  refused: kernels cannot run on DISK; move the tensor to
 *            a compute device first (tg_to).
 *
 * Live mappings sit in a list under a mutex; `free` finds a buffer's mapping
 * by address (a buffer's pointer always lies inside its mapping). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "io/disk_map.h"
#include "runtime/device.h"
#include "runtime/page_populate.h"
#include "util/util.h"

static pthread_mutex_t maps_lock = PTHREAD_MUTEX_INITIALIZER;
static disk_map *maps;
static int nmaps;

disk_map *disk_map_open(const char *path) {
  if (!path || !*path) TG_FAIL("DISK: no file name given");
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) TG_FAIL("%s: cannot open: %s", path, strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int e = errno;
    close(fd);
    TG_FAIL("%s: cannot stat: %s", path, strerror(e));
  }
  if (!S_ISREG(st.st_mode)) { close(fd); TG_FAIL("%s: not a regular file", path); }
  size_t size = (size_t)st.st_size;
  void *base = NULL;
  if (size) {
    base = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (base == MAP_FAILED) {
      int e = errno;
      close(fd);
      TG_FAIL("%s: cannot map %zu bytes: %s", path, size, strerror(e));
    }
  }
  close(fd);   /* the mapping stays valid */
  disk_map *m = tg_xcalloc(1, sizeof *m);
  m->path = tg_xstrdup(path);
  m->base = base;
  m->size = size;
  m->refcnt = 1;
  pthread_mutex_lock(&maps_lock);
  m->next = maps;
  maps = m;
  nmaps++;
  pthread_mutex_unlock(&maps_lock);
  return m;
}

void disk_map_retain(disk_map *m) {
  if (!m) return;
  pthread_mutex_lock(&maps_lock);
  m->refcnt++;
  pthread_mutex_unlock(&maps_lock);
}

void disk_map_release(disk_map *m) {
  if (!m) return;
  pthread_mutex_lock(&maps_lock);
  bool last = --m->refcnt == 0;
  if (last) {
    for (disk_map **pp = &maps; *pp; pp = &(*pp)->next)
      if (*pp == m) { *pp = m->next; break; }
    nmaps--;
  }
  pthread_mutex_unlock(&maps_lock);
  if (!last) return;
  if (m->base) munmap((void *)m->base, m->size);
  free(m->path);
  free(m);
}

void disk_map_drop_pages(disk_map *m, size_t offset, size_t len) {
  if (!m || !m->base || offset >= m->size) return;
  if (len > m->size - offset) len = m->size - offset;
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  size_t lo = (offset + page - 1) / page * page, hi = (offset + len) / page * page;
  /* advice only: a failure leaves the pages where they are */
  if (hi > lo) (void)madvise((void *)(m->base + lo), hi - lo, MADV_DONTNEED);
}

void disk_map_prefault(disk_map *m, size_t offset, size_t len) {
  if (!m || !m->base || offset >= m->size) return;
  if (len > m->size - offset) len = m->size - offset;
  size_t page = (size_t)sysconf(_SC_PAGESIZE), lo = offset / page * page;
  if (len) pages_populate((void *)(m->base + lo), offset + len - lo, false);
}

int disk_maps_live(void) {
  pthread_mutex_lock(&maps_lock);
  int n = nmaps;
  pthread_mutex_unlock(&maps_lock);
  return n;
}

/* ---------------------------------------------------------------- the device */

static void *disk_alloc(struct tg_device *d, size_t nbytes) {
  TG_FAIL("DISK: cannot allocate %zu bytes: DISK memory comes only from mapping a file "
          "(tg_from_file, tg_safetensors_load, ...); use tg_to to move data to CPU", nbytes);
}

static void disk_free(struct tg_device *d, void *p, size_t nbytes) {
  const unsigned char *q = p;
  disk_map *found = NULL;
  pthread_mutex_lock(&maps_lock);
  for (disk_map *m = maps; m && !found; m = m->next)
    if (m->base && q >= m->base && q < m->base + m->size) found = m;
  pthread_mutex_unlock(&maps_lock);
  disk_map_release(found);
}

static int disk_copyin(struct tg_device *d, void *dst, const void *host, size_t n) {
  return tg_seterr("DISK: cannot write %zu bytes: DISK tensors are read-only file mappings", n);
}

static int disk_copyout(struct tg_device *d, void *host, const void *src, size_t n) {
  if (n) memcpy(host, src, n);
  return 0;
}

static tg_program *disk_compile(struct tg_device *d, const char *src, const char *name) {
  TG_FAIL("DISK: kernel '%s' cannot run on DISK: move DISK tensors to a compute device first "
          "(tg_to(t, \"CPU\"))", name ? name : "?");
}

static void disk_program_free(struct tg_device *d, tg_program *p) {
  if (!p) return;
  free(p->name);
  free(p);
}

static int disk_launch(struct tg_device *d, tg_program *p, void **bufs, int nbufs, const int64_t *vars, int nvars) {
  return tg_seterr("DISK: kernels cannot run on DISK; use tg_to(t, \"CPU\")");
}

static struct tg_device disk_dev = {
  .name = "DISK",
  .alloc = disk_alloc,
  .free = disk_free,
  .copyin = disk_copyin,
  .copyout = disk_copyout,
  .compile = disk_compile,
  .program_free = disk_program_free,
  .launch = disk_launch,
  .renderer = &renderer_c,   /* kernels never run here; copies do */
  .description = "memory-mapped files (weights load lazily)",
};

struct tg_device *disk_device(void) { return &disk_dev; }
