/* buffer.c: device buffers. buffer_new only records what is wanted; memory
 * comes at buffer_alloc (or the first copyin). Reference counts are atomic, so
 * buffers may be retained and released from several threads. */
#include <pthread.h>
#include "runtime/buffer.h"
#include "uop/uop_buffer.h"
#include "util/counters.h"
#include "util/util.h"
#include "viz/viz.h"
#include "util/settings.h"

/* ---- an allocator cache: freed device memory is kept, by size, and handed
 * to the next buffer of the same size on the same device, so a training
 * step's or a decode step's temporaries do not go back to the system (and
 * pay page faults) every time. At most TG_ALLOC_CACHE_MB (default 1024) MB
 * is kept. */
typedef struct cached_mem { tg_device *dev; size_t nbytes; void *ptr; struct cached_mem *next; } cached_mem;
static cached_mem *mem_cache;
static size_t mem_cache_bytes;
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;

static void *cache_take(tg_device *dev, size_t nbytes) {
  pthread_mutex_lock(&cache_lock);
  void *p = NULL;
  for (cached_mem **pp = &mem_cache; *pp; pp = &(*pp)->next)
    if ((*pp)->dev == dev && (*pp)->nbytes == nbytes) {
      cached_mem *c = *pp;
      *pp = c->next;
      p = c->ptr;
      mem_cache_bytes -= nbytes;
      free(c);
      break;
    }
  pthread_mutex_unlock(&cache_lock);
  return p;
}

/* returns a list of cached blocks to their devices (outside the lock) */
static void free_cached_list(cached_mem *c) {
  while (c) {
    cached_mem *next = c->next;
    c->dev->free(c->dev, c->ptr, c->nbytes);
    free(c);
    c = next;
  }
}

static void cache_give(tg_device *dev, void *ptr, size_t nbytes) {
  size_t limit = (size_t)setting_int(SET_TG_ALLOC_CACHE_MB) << 20;
  /* mapped files (DISK) go back to their device, which unmaps them */
  if (!strcmp(dev->name, "DISK")) limit = 0;
  cached_mem *evicted = NULL;
  pthread_mutex_lock(&cache_lock);
  if (nbytes && nbytes <= limit) {
    /* full: the least recently freed go back to the system, so the sizes in
     * use now stay cached (a test pass at another batch size than training
     * would otherwise page-fault every buffer of every batch) */
    while (mem_cache && mem_cache_bytes + nbytes > limit) {
      cached_mem **pp = &mem_cache;
      while ((*pp)->next) pp = &(*pp)->next;
      cached_mem *old = *pp;
      *pp = NULL;
      mem_cache_bytes -= old->nbytes;
      old->next = evicted;
      evicted = old;
    }
    cached_mem *c = tg_xmalloc(sizeof *c);
    *c = (cached_mem){ dev, nbytes, ptr, mem_cache };
    mem_cache = c;
    mem_cache_bytes += nbytes;
    ptr = NULL;
  }
  pthread_mutex_unlock(&cache_lock);
  if (ptr) dev->free(dev, ptr, nbytes);
  free_cached_list(evicted);
}

void buffer_cache_trim(void) {
  pthread_mutex_lock(&cache_lock);
  cached_mem *c = mem_cache;
  mem_cache = NULL;
  mem_cache_bytes = 0;
  pthread_mutex_unlock(&cache_lock);
  free_cached_list(c);
}

static int64_t next_id = 1;                 /* atomic; ids increase from 1 */
static pthread_mutex_t alloc_lock = PTHREAD_MUTEX_INITIALIZER;

static pthread_once_t hooks_once = PTHREAD_ONCE_INIT;

tg_buffer *buffer_new(struct tg_device *dev, tg_dtype dt, int64_t numel) {
  /* BUFFER UOps must hold their buffers from the first one on */
  pthread_once(&hooks_once, buffer_init_hooks);
  if (!dev) TG_FAIL("buffer_new: no device");
  if ((int)dt < 0 || dt >= TG_DTYPE_COUNT) TG_FAIL("buffer_new: bad dtype %d", (int)dt);
  if (numel < 0) TG_FAIL("buffer_new: negative size %lld", (long long)numel);
  size_t item = (size_t)tg_dtype_size(dt);
  if (item && (uint64_t)numel > (uint64_t)(SIZE_MAX / 2) / item)
    TG_FAIL("buffer_new: %lld elements of %s is too large", (long long)numel, tg_dtype_name(dt));
  counters_add_work(1);
  tg_buffer *b = tg_xcalloc(1, sizeof *b);
  b->dev = dev;
  b->dtype = dt;
  b->numel = numel;
  b->nbytes = (size_t)numel * item;
  b->ptr = NULL;
  b->refcnt = 1;
  b->id = __atomic_fetch_add(&next_id, 1, __ATOMIC_RELAXED);
  return b;
}

int64_t buffer_next_id(void) { return __atomic_load_n(&next_id, __ATOMIC_RELAXED); }

tg_buffer *buffer_view(tg_buffer *base, int64_t offset, int64_t numel) {
  if (!base) TG_FAIL("buffer_view: no base");
  if (!base->dev->host_memory) TG_FAIL("buffer_view: %s buffers are not host memory", base->dev->name);
  return buffer_view_on(base->dev, base, offset, numel);
}

tg_buffer *buffer_view_on(tg_device *dev, tg_buffer *base, int64_t offset, int64_t numel) {
  if (!base || !dev) TG_FAIL("buffer_view: no base or device");
  if (!dev->host_memory) TG_FAIL("buffer_view: %s buffers are not host memory", dev->name);
  if (offset < 0 || numel < 0 || offset > base->numel || numel > base->numel - offset)
    TG_FAIL("buffer_view: elements [%lld, %lld) are outside a buffer of %lld", (long long)offset, (long long)(offset + numel), (long long)base->numel);
  size_t item = (size_t)tg_dtype_size(base->dtype);
  size_t off = (size_t)offset * item + base->offset;
  while (base->base) base = base->base;   /* a view of a view: of the same memory */
  tg_buffer *b = buffer_new(dev, base->dtype, numel);
  if (!b) return NULL;
  buffer_retain(base);
  b->base = base;
  b->offset = off;
  return b;
}

/* Gives b memory if it has none (two threads may race to allocate one
 * buffer): zeroed from the device, never a cached block (those hold old
 * values), or else the cache's or the device's. 1 when b got memory here,
 * 0 when it had some, -1 when the device failed (it set tg_error). */
static int allocate(tg_buffer *b, bool zeroed) {
  int rc = 0;
  pthread_mutex_lock(&alloc_lock);
  if (!b->ptr) {
    void *p = zeroed ? b->dev->alloc_zeroed(b->dev, b->nbytes) : cache_take(b->dev, b->nbytes);
    if (!p && !zeroed) p = b->dev->alloc(b->dev, b->nbytes);
    if (p) { __atomic_store_n(&b->ptr, p, __ATOMIC_RELEASE); counters_mem((int64_t)b->nbytes); if (viz_on) viz_mem(b->dev->name, b->id, (int64_t)b->nbytes); rc = 1; }
    else rc = -1;
  }
  pthread_mutex_unlock(&alloc_lock);
  return rc;
}

int buffer_alloc(tg_buffer *b) {
  if (!b) return tg_seterr("buffer_alloc: no buffer");
  if (__atomic_load_n(&b->ptr, __ATOMIC_ACQUIRE)) return 0;
  if (b->base) {
    if (buffer_alloc(b->base) < 0) return -1;
    __atomic_store_n(&b->ptr, (void *)((char *)b->base->ptr + b->offset), __ATOMIC_RELEASE);
    return 0;
  }
  if (b->placeholder) return tg_seterr("a function's parameter has no memory: tensors read inside a function body cannot be realized there");
  return allocate(b, false) < 0 ? -1 : 0;
}

int buffer_alloc_zeroed(tg_buffer *b) {
  if (!b || b->base || b->placeholder || !b->dev->alloc_zeroed || __atomic_load_n(&b->ptr, __ATOMIC_ACQUIRE)) return 0;
  return allocate(b, true);
}

void buffer_retain(tg_buffer *b) {
  if (b) __atomic_add_fetch(&b->refcnt, 1, __ATOMIC_RELAXED);
}

void buffer_release(tg_buffer *b) {
  if (!b) return;
  if (__atomic_sub_fetch(&b->refcnt, 1, __ATOMIC_ACQ_REL) != 0) return;
  if (b->base) { buffer_release(b->base); free(b); return; }   /* a view: the base owns the memory */
  if (b->ptr) { cache_give(b->dev, b->ptr, b->nbytes); counters_mem(-(int64_t)b->nbytes); if (viz_on) viz_mem(b->dev->name, b->id, -(int64_t)b->nbytes); }
  free(b);
}

void buffer_drop_memory(tg_buffer *b) {
  if (!b || b->base || !b->ptr) return;
  cache_give(b->dev, b->ptr, b->nbytes);
  counters_mem(-(int64_t)b->nbytes);
  if (viz_on) viz_mem(b->dev->name, b->id, -(int64_t)b->nbytes);
  b->ptr = NULL;
}

int buffer_copyin(tg_buffer *b, const void *host, size_t nbytes) {
  if (!b) return tg_seterr("buffer_copyin: no buffer");
  if (nbytes > b->nbytes)
    return tg_seterr("buffer_copyin: %zu bytes do not fit %s:buf#%lld (%zu bytes)",
                     nbytes, b->dev->name, (long long)b->id, b->nbytes);
  if (nbytes && !host) return tg_seterr("buffer_copyin: no host data");
  if (buffer_alloc(b) != 0) return -1;
  if (!nbytes) return 0;
  return b->dev->copyin(b->dev, b->ptr, host, nbytes);
}

int buffer_copyout(tg_buffer *b, void *host, size_t nbytes) {
  if (!b) return tg_seterr("buffer_copyout: no buffer");
  if (nbytes > b->nbytes)
    return tg_seterr("buffer_copyout: %zu bytes asked of %s:buf#%lld (%zu bytes)",
                     nbytes, b->dev->name, (long long)b->id, b->nbytes);
  if (nbytes && !host) return tg_seterr("buffer_copyout: no host memory");
  if (b->base && buffer_alloc(b) < 0) return -1;   /* a view: its base's memory */
  if (!__atomic_load_n(&b->ptr, __ATOMIC_ACQUIRE))
    return tg_seterr("buffer_copyout: %s:buf#%lld was never allocated", b->dev->name, (long long)b->id);
  if (!nbytes) return 0;
  return b->dev->copyout(b->dev, host, b->ptr, nbytes);
}

/* ---------------------------------------------------------------- UOp hooks */

static int64_t hook_numel(void *p) { return ((tg_buffer *)p)->numel; }
static void hook_retain(void *p) { buffer_retain(p); }
static void hook_release(void *p) { buffer_release(p); }
static const char *hook_describe(void *p) {
  static _Thread_local char s[96];
  const tg_buffer *b = p;
  snprintf(s, sizeof s, "%s:buf#%lld %s[%lld]", b->dev->name, (long long)b->id,
           tg_dtype_name(b->dtype), (long long)b->numel);
  return s;
}

static const uop_buffer_hooks hooks = { hook_numel, hook_retain, hook_release, hook_describe };

void buffer_init_hooks(void) { uop_set_buffer_hooks(&hooks); }
