/* page_populate.c: pages_populate (page_populate.h).
 *
 * The kernel makes each page a populate asks for (zeroes an anonymous one,
 * maps a file's), and in a VM the first use of a guest page can cost the
 * host's fault as well: a model's load makes ~80 MB of packed weights and
 * maps its file's pages while the pool's other cores wait. Faults on
 * different pages of one process proceed in parallel, so the pieces go to
 * the pool's cores. */
#include <stdint.h>
#include "runtime/page_populate.h"
#include "runtime/thread_pool.h"
#include "util/util.h"

#define PIECE_MIN ((size_t)512 << 10)
#define HUGE ((size_t)2 << 20)

typedef struct { char *p; size_t n, piece; bool write; } populate_job;

static void populate_piece(void *arg, int core, int ncores) {
  (void)ncores;
  const populate_job *j = arg;
  size_t lo = (size_t)core * j->piece;
  if (lo < j->n) tg_populate_pages(j->p + lo, j->n - lo < j->piece ? j->n - lo : j->piece, j->write);
}

void pages_populate(void *p, size_t n, bool write) {
  if (!p || !n) return;
  size_t pieces = n / PIECE_MIN, cores = (size_t)tg_pool_threads();
  if (pieces > cores) pieces = cores;
  if (pieces <= 1) { tg_populate_pages(p, n, write); return; }
  size_t piece = (n + pieces - 1) / pieces, align = piece >= HUGE && (uintptr_t)p % HUGE == 0 ? HUGE : 4096;
  piece = (piece + align - 1) / align * align;   /* whole huge pages (or pages) each */
  tg_pool_run(populate_piece, &(populate_job){ p, n, piece, write }, (int)((n + piece - 1) / piece));
}

void *cpu_map_populated(size_t n) {
  char *p = tg_map_pages(n, false);
  if (p) pages_populate(p, n, true);
  return p;
}
