/* compile_cache.c: where compiled kernels live on disk.
 *
 * A kernel's file name is a 128-bit hash (32 hex digits, the first half of a
 * SHA-256) of everything that decides the compiler's output: the source, the
 * compiler's identity and the flags, in tg's cache directory (cache_dir.c). */
#include "runtime/cache_dir.h"
#include "runtime/cpu_compiler.h"
#include "runtime/device.h"
#include "util/sha256.h"
#include "util/util.h"

char *compile_cache_path(const char *src, const char *compiler, const char *flags, const char *ext) {
  char *dir = cache_dir();
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
