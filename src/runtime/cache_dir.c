/* cache_dir.c: the directory of tg's caches on disk, shared by the compiled
 * kernels (compile_cache.c) and the LLM's packed weights (llm_pack_cache.c):
 * $TG_CACHE_DIR, else $XDG_CACHE_HOME/tg, else $HOME/.cache/tg; when that
 * cannot be created or written, a private directory from mkdtemp (made once
 * per process) is used instead, so compiling still works, just without
 * reuse across processes. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "runtime/cache_dir.h"
#include "util/util.h"
#include "util/settings.h"

static pthread_mutex_t fallback_lock = PTHREAD_MUTEX_INITIALIZER;
static char *fallback_dir;   /* made once per process (again if it vanishes) */

static char *temp_cache_dir(void) {
  pthread_mutex_lock(&fallback_lock);
  struct stat st;
  if (fallback_dir && (stat(fallback_dir, &st) != 0 || !S_ISDIR(st.st_mode))) {
    free(fallback_dir);   /* removed under us (a tmp cleaner?): make another */
    fallback_dir = NULL;
  }
  if (!fallback_dir) {
    const char *tmp = setting_str(SET_TMPDIR);
    if (!tmp || !*tmp || access(tmp, W_OK) != 0) tmp = "/tmp";
    strbuf sb = { 0 };
    sb_printf(&sb, "%s/tg-cache-XXXXXX", tmp);
    if (mkdtemp(sb.s)) fallback_dir = sb.s;
    else sb_free(&sb);
  }
  char *r = fallback_dir ? tg_xstrdup(fallback_dir) : NULL;
  pthread_mutex_unlock(&fallback_lock);
  if (!r) tg_seterr("cache directory: cannot create a temporary one: %s", strerror(errno));
  return r;
}

char *cache_dir(void) {
  strbuf sb = { 0 };
  const char *env = setting_str(SET_TG_CACHE_DIR);
  const char *xdg = setting_str(SET_XDG_CACHE_HOME);
  const char *home = setting_str(SET_HOME);
  if (env && *env) sb_puts(&sb, env);
  else if (xdg && *xdg) sb_printf(&sb, "%s/tg", xdg);
  else if (home && *home) sb_printf(&sb, "%s/.cache/tg", home);
  if (sb.s && tg_mkdir_p(sb.s) == 0 && access(sb.s, W_OK | X_OK) == 0) return sb.s;
  if (sb.s && setting_int(SET_DEBUG) >= 1)
    fprintf(stderr, "tg: cache directory '%s' is not usable; using a temporary directory\n", sb.s);
  sb_free(&sb);
  return temp_cache_dir();
}
