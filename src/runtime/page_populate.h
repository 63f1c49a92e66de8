/* page_populate.h: a mapping's pages made at once by the thread pool's
 * cores (page_populate.c). */
#ifndef TG_PAGE_POPULATE_H
#define TG_PAGE_POPULATE_H

#include <stdbool.h>
#include <stddef.h>

/* tg_populate_pages(p, n, write) split over the pool's cores in pieces
 * side by side (whole 2 MiB huge pages where the range has them; at least
 * 512 KiB each; one piece on the calling thread when smaller or when the
 * pool is busy). */
void pages_populate(void *p, size_t n, bool write);
/* n bytes of fresh pages (as tg_map_pages), made at once that way. NULL
 * when they cannot be mapped. */
void *cpu_map_populated(size_t n);

#endif
