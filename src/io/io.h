/* io.h: helpers shared by the file-format readers and writers in src/io/. */
#ifndef TG_IO_INTERNAL_H
#define TG_IO_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "io/disk_map.h"
#include "tg.h"

/* Element count of shape, or -1 when it overflows int64 (or a dim < 0). */
int64_t io_numel(const int64_t *d, int nd);
/* numel * itemsize in bytes, or false when it overflows. */
bool io_nbytes(int64_t numel, int itemsize, uint64_t *out);

/* Appends (name, t) to a list (takes a copy of the name). */
void io_list_push(tg_tensor_list *l, const char *name, tg_tensor *t);
void io_list_push_meta(tg_tensor_list *l, const char *key, const char *value);
/* On failure: frees the list's tensors too, and zeroes it. */
void io_list_discard(tg_tensor_list *l);

/* A byte range of one tensor inside a file, for the overlap check. */
typedef struct { uint64_t begin, end; int index; } io_range;
/* Index of a pair of non-empty ranges that overlap (sorts r), or -1. *other
 * gets the second one. */
int io_find_overlap(io_range *r, int n, int *other);

/* A name that appears twice among names[0..n) (sorts names), or NULL. */
const char *io_find_duplicate(const char **names, int n);

/* Writes n bytes to f; false on a short write. */
bool io_write_all(int fd, const void *p, size_t n);
/* A temporary file next to path (path.tmp.XXXXXX); its fd, or -1 + tg_error.
 * *tmp gets the malloc'd name. */
int io_create_tmp(const char *path, char **tmp);
/* Closes fd and renames tmp onto path (or removes tmp when ok is false).
 * 0 or -1 + tg_error. */
int io_finish_tmp(int fd, char *tmp, const char *path, bool ok);

#endif
