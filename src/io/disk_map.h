/* disk_map.h: the DISK device's file mappings (implemented in
 * runtime/disk_device.c) and tensors over them (io/disk_tensor.c).
 *
 * A disk_map is one read-only mmap of a whole file. It is reference counted:
 * the loader holds one reference while it parses, and every DISK buffer whose
 * memory lies in the mapping holds one (taken by disk_tensor, given back when
 * the buffer's memory is freed through the DISK device). The last release
 * unmaps the file. */
#ifndef TG_IO_DISK_MAP_H
#define TG_IO_DISK_MAP_H

#include <stddef.h>
#include <stdint.h>
#include "tg.h"

typedef struct disk_map {
  char *path;
  const unsigned char *base;   /* the mapping (NULL for an empty file) */
  size_t size;                 /* the file's size in bytes */
  int refcnt;
  struct disk_map *next;       /* the list of live mappings */
} disk_map;

struct tg_device;
struct tg_device *disk_device(void);

/* Maps path read-only. NULL + tg_error ("<path>: ...") on failure. */
disk_map *disk_map_open(const char *path);
void disk_map_retain(disk_map *m);
void disk_map_release(disk_map *m);
/* Lets the kernel drop the process's pages of m's bytes [offset, offset +
 * len) (whole pages inside the range only): for bytes copied out that
 * will not be read again. Nothing is lost: the mapping is read-only, so a
 * later read pages them back in from the file. */
void disk_map_drop_pages(disk_map *m, size_t offset, size_t len);
/* Maps in the pages of [offset, offset + len) in one call
 * (MADV_POPULATE_READ), before a kernel reads them all: a fault per page
 * group otherwise (advice only). */
void disk_map_prefault(disk_map *m, size_t offset, size_t len);
/* How many mappings are alive (for tests). */
int disk_maps_live(void);

/* A DISK tensor over m's bytes [offset, offset + numel*size) with shape and
 * dtype (the caller checked the range). Retains m. NULL + tg_error. */
tg_tensor *disk_tensor(disk_map *m, size_t offset, tg_shape shape, tg_dtype dt);
/* Moves a freshly made DISK tensor to device (NULL: the default device),
 * lazily (tg_to); frees t when it made a copy. "DISK" keeps t. */
tg_tensor *disk_tensor_to(tg_tensor *t, const char *device);
/* The same, but when device's buffers are host memory (the CPUs) the
 * result reads the mapping where it lies: no copy, and the file's pages
 * are the only memory it takes (the kernel shares them with the page
 * cache). The mapping is read-only, so this is for tensors that are only
 * ever read (a model's weights); a write to one faults. Elsewhere
 * disk_tensor_to's copy. */
tg_tensor *disk_tensor_in_place(tg_tensor *t, const char *device);

#endif
