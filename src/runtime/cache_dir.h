/* cache_dir.h: where tg keeps what it caches on disk (compiled kernels,
 * packed LLM weights). */
#ifndef TG_CACHE_DIR_H
#define TG_CACHE_DIR_H

/* The cache directory ($TG_CACHE_DIR, $XDG_CACHE_HOME/tg, ~/.cache/tg, or a
 * per-process mkdtemp fallback when those cannot be made), created if
 * missing. malloc'd; NULL + tg_error when no directory works. */
char *cache_dir(void);

#endif
