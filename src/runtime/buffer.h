/* buffer.h: device memory with a dtype and an element count. Allocated on
 * first use; reference counted (BUFFER UOps and the engine hold it). */
#ifndef TG_BUFFER_H
#define TG_BUFFER_H

#include "runtime/device.h"

typedef struct tg_buffer {
  tg_device *dev;
  tg_dtype dtype;
  int64_t numel;
  size_t nbytes;
  void *ptr;          /* NULL until allocated */
  int refcnt;
  int64_t id;
  bool placeholder;   /* a function parameter's stand-in (schedule/call.h): never allocated */
  struct tg_buffer *base;   /* a view (buffer_view): base's memory from byte `offset` on */
  size_t offset;
} tg_buffer;

tg_buffer *buffer_new(tg_device *dev, tg_dtype dt, int64_t numel);
int buffer_alloc(tg_buffer *b);            /* allocate if not yet; 0 or -1 */
/* Allocates b as zeros where its device can (tg_device.alloc_zeroed) and
 * b has no memory yet (not a view): 1; 0 when it cannot (nothing done);
 * -1 + tg_error when the device is out of memory. */
int buffer_alloc_zeroed(tg_buffer *b);
/* numel elements of base from element offset on, sharing base's memory (a
 * realized contiguous slice: no kernel, no copy). Only on devices whose
 * buffers are host memory; NULL with an error otherwise or when the range
 * is outside base. Holds base. */
tg_buffer *buffer_view(tg_buffer *base, int64_t offset, int64_t numel);
/* The same view made a buffer of dev (host memory), for a base whose
 * memory the host addresses though its device is not dev (a DISK
 * mapping read by the CPU in place). The caller vouches for base's memory. */
tg_buffer *buffer_view_on(tg_device *dev, tg_buffer *base, int64_t offset, int64_t numel);
/* The id the next buffer will get (ids increase): buffers with an id at
 * least this were made after the call. */
int64_t buffer_next_id(void);
void buffer_retain(tg_buffer *b);
void buffer_release(tg_buffer *b);
/* Gives b's memory back (to the allocator cache) and keeps b, unallocated
 * (a later use allocates again): for a buffer whose contents are dead but
 * whose description is still wanted (a JIT's captured intermediates, which
 * replays put in planned memory). Nothing for views. */
void buffer_drop_memory(tg_buffer *b);
int buffer_copyin(tg_buffer *b, const void *host, size_t nbytes);
int buffer_copyout(tg_buffer *b, void *host, size_t nbytes);
/* Registers the BUFFER-UOp hooks (called once at start-up). */
void buffer_init_hooks(void);
/* Returns the allocator cache's memory (freed buffers kept for reuse) to
 * the system: after a one-time phase (loading a model) whose temporaries
 * will not come back. */
void buffer_cache_trim(void);

#endif
