/* cpu_slab.c: medium CPU buffers (256 KiB up to 2 MiB) carved out of
 * chunks of 2 MiB-aligned transparent huge pages.
 *
 * A buffer of its own mapping below 2 MiB is made of 4 KiB pages, and each
 * page costs the kernel an allocation, a zeroing and its bookkeeping when
 * it is first written: a 125M model's row-packed weights are 60-odd such
 * buffers (~50 MB), and their 13,000 pages took ~8% of the first token.
 * Here they come from 8 MiB chunks that are huge pages (4 per chunk, made
 * at once), handed out one after another (bump allocation). A chunk counts
 * the buffers living in it; when the last one goes it is unmapped, or, for
 * the chunk being filled, filled again from its start. Space freed inside
 * a chunk that still holds a buffer is not reused: the buffers served here
 * are mostly long-lived (weights) and the buffer cache above recycles the
 * rest, so the cost is bounded by a chunk per long-lived buffer at worst.
 *
 * Only buffers written before they are read come here (the memory of a
 * reused chunk is not zero). */
#include <pthread.h>
#include <stdint.h>
#include "runtime/cpu_slab.h"
#include "runtime/page_populate.h"
#include "util/util.h"

#define SLAB_CHUNK ((size_t)8 << 20)
#define SLAB_ALIGN ((size_t)4096)   /* a page: neighbours never share one */

typedef struct {
  char *base;
  size_t used;   /* bump offset */
  int live;      /* buffers in it */
} slab_chunk;

static pthread_mutex_t slab_lock = PTHREAD_MUTEX_INITIALIZER;
static slab_chunk *chunks;
static int nchunks, capchunks;
static int filling = -1;   /* the chunk new buffers come from */

bool cpu_slab_serves(size_t n) { return n >= CPU_SLAB_MIN && n < CPU_SLAB_MAX; }

void *cpu_slab_alloc(size_t n) {
  if (!cpu_slab_serves(n)) return NULL;
  n = (n + SLAB_ALIGN - 1) / SLAB_ALIGN * SLAB_ALIGN;
  pthread_mutex_lock(&slab_lock);
  if (filling < 0 || SLAB_CHUNK - chunks[filling].used < n) {
    char *base = cpu_map_populated(SLAB_CHUNK);
    if (!base) { pthread_mutex_unlock(&slab_lock); return NULL; }   /* the caller maps it alone */
    /* the chunk being left (it holds a buffer, or it would be empty and
     * have room) stays until its last buffer goes */
    if (nchunks == capchunks) {
      capchunks = capchunks ? 2 * capchunks : 8;
      chunks = tg_xrealloc(chunks, sizeof *chunks * (size_t)capchunks);
    }
    chunks[nchunks] = (slab_chunk){ base, 0, 0 };
    filling = nchunks++;
  }
  slab_chunk *c = &chunks[filling];
  void *p = c->base + c->used;
  c->used += n;
  c->live++;
  pthread_mutex_unlock(&slab_lock);
  return p;
}

bool cpu_slab_free(void *p) {
  if (!p) return false;
  pthread_mutex_lock(&slab_lock);
  int i = 0;
  while (i < nchunks && !((char *)p >= chunks[i].base && (char *)p < chunks[i].base + SLAB_CHUNK)) i++;
  if (i == nchunks) { pthread_mutex_unlock(&slab_lock); return false; }
  if (--chunks[i].live == 0) {
    if (i == filling) chunks[i].used = 0;   /* filled again from its start */
    else {
      tg_unmap_pages(chunks[i].base, SLAB_CHUNK);
      chunks[i] = chunks[--nchunks];
      if (filling == nchunks) filling = i;   /* it moved into slot i */
    }
  }
  pthread_mutex_unlock(&slab_lock);
  return true;
}

int cpu_slab_chunks(void) {
  pthread_mutex_lock(&slab_lock);
  int n = nchunks;
  pthread_mutex_unlock(&slab_lock);
  return n;
}
