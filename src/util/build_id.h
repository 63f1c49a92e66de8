/* build_id.h: which build of tg this is, for caches on disk that hold
 * what tg's own code derived (rendered kernels, lowered kernels): a rebuilt
 * tg must not read an older one's. */
#ifndef TG_BUILD_ID_H
#define TG_BUILD_ID_H

/* The GNU build id of the binary tg's code is linked into (hex), or, when it
 * has none, that file's path, size and modification time. */
const char *tg_build_identity(void);

#endif
