/* compile_cache.c: where compiled kernels live on disk.
 *
 * A kernel's file name is a 128-bit hash (32 hex digits, the first half of a
 * SHA-256) of everything that decides the compiler's output: the source, the
 * compiler's identity and the flags. The directory is $TG_CACHE_DIR, else
 * $XDG_CACHE_HOME/tg, else $HOME/.cache/tg; when that cannot be created or
 * written, a private directory from mkdtemp (made once per process) is used
 * instead, so compiling still works, just without reuse across processes. */
#include <errno.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>
#include "runtime/cpu_compiler.h"
#include "runtime/device.h"
#include "util/sha256.h"
#include "util/util.h"
#include "util/settings.h"

/* ---------------------------------------------------------------- directory */


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
  if (!r) tg_seterr("compile cache: cannot create a temporary directory: %s", strerror(errno));
  return r;
}

char *compile_cache_dir(void) {
  strbuf sb = { 0 };
  const char *env = setting_str(SET_TG_CACHE_DIR);
  const char *xdg = setting_str(SET_XDG_CACHE_HOME);
  const char *home = setting_str(SET_HOME);
  if (env && *env) sb_puts(&sb, env);
  else if (xdg && *xdg) sb_printf(&sb, "%s/tg", xdg);
  else if (home && *home) sb_printf(&sb, "%s/.cache/tg", home);
  if (sb.s && tg_mkdir_p(sb.s) == 0 && access(sb.s, W_OK | X_OK) == 0) return sb.s;
  if (sb.s && setting_int(SET_DEBUG) >= 1)
    fprintf(stderr, "tg: compile cache '%s' is not usable; using a temporary directory\n", sb.s);
  sb_free(&sb);
  return temp_cache_dir();
}

char *compile_cache_path(const char *src, const char *compiler, const char *flags, const char *ext) {
  char *dir = compile_cache_dir();
  if (!dir) return NULL;
  sha256_ctx c;
  sha256_init(&c);
  sha256_field(&c, "tg compile cache v1");
  sha256_field(&c, src);
  sha256_field(&c, compiler);
  sha256_field(&c, flags);
  sha256_field(&c, ext);
  uint8_t d[32];
  sha256_final(&c, d);
  strbuf sb = { 0 };
  sb_puts(&sb, dir);
  sb_puts(&sb, "/");
  for (int i = 0; i < 16; i++) sb_printf(&sb, "%02x", d[i]);   /* 128 bits */
  sb_puts(&sb, ext ? ext : "");
  free(dir);
  return sb.s;
}
