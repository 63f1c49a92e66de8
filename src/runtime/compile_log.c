/* compile_log.c: what the runtime's compilers share: reading and writing
 * cache files atomically, and a compile error that names the kernel and
 * shows the source lines the compiler's log points at. */
#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include "runtime/device.h"
#include "util/util.h"
#include "util/settings.h"

void *cache_read_file(const char *path, size_t *n) {
  if (setting_int(SET_TG_NOCACHE) == 1) return NULL;
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  struct stat st;
  if (fstat(fileno(f), &st) != 0 || st.st_size <= 0) { fclose(f); return NULL; }
  void *p = tg_xmalloc((size_t)st.st_size);
  size_t got = fread(p, 1, (size_t)st.st_size, f);
  fclose(f);
  if (got != (size_t)st.st_size) { free(p); return NULL; }
  *n = got;
  return p;
}

int cache_write_file(const char *path, const void *data, size_t n) {
  strbuf tmp = { 0 };
  sb_printf(&tmp, "%s.XXXXXX", path);
  int fd = mkstemp(tmp.s);
  if (fd < 0) { sb_free(&tmp); return -1; }
  size_t off = 0;
  while (off < n) {
    ssize_t k = write(fd, (const char *)data + off, n - off);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) break;
    off += (size_t)k;
  }
  int rc = close(fd) == 0 && off == n && rename(tmp.s, path) == 0 ? 0 : -1;
  if (rc) unlink(tmp.s);
  sb_free(&tmp);
  return rc;
}

#define CHECKED_SEED 0x746763686b
int cache_write_checked(const char *path, const char *magic, const void *body, size_t n) {
  strbuf all = { 0 };
  sb_printf(&all, "%s%016" PRIx64 " %zu\n", magic, tg_hash_bytes(body, n, CHECKED_SEED), n);
  sb_append(&all, body, n);
  int rc = cache_write_file(path, all.s, all.n);
  sb_free(&all);
  return rc;
}

char *cache_read_checked(const char *path, const char *magic, size_t *n) {
  size_t got = 0;
  char *data = cache_read_file(path, &got);
  if (!data) return NULL;
  size_t m = strlen(magic);
  const char *nl = got > m && !memcmp(data, magic, m) ? memchr(data + m, '\n', got - m) : NULL;
  uint64_t hash = 0;
  size_t len = 0;
  /* the header line copied out and ended: the file's bytes have no NUL
   * for sscanf to stop at (it read past the buffer: ASan, a SEGV) */
  char head[64];
  size_t hl = nl ? (size_t)(nl - (data + m)) : sizeof head;
  if (hl < sizeof head) { memcpy(head, data + m, hl); head[hl] = '\0'; }
  if (hl >= sizeof head || sscanf(head, "%16" SCNx64 " %zu", &hash, &len) != 2 || len != got - (size_t)(nl + 1 - data) ||
      tg_hash_bytes(nl + 1, len, CHECKED_SEED) != hash) { free(data); return NULL; }
  memmove(data, nl + 1, len);   /* the body, from the start of the buffer */
  *n = len;
  return data;
}

/* the line numbers a compiler log points at: "<source>:12:5: error",
 * "kernel.cu(12): error", "input.cl:12:5:" */
static int log_lines(const char *log, int *out, int max) {
  int n = 0;
  for (const char *p = log; *p && n < max; p++) {
    if ((*p == ':' || *p == '(') && p[1] >= '0' && p[1] <= '9' && p > log && p[-1] != ' ') {
      char *end;
      long line = strtol(p + 1, &end, 10);
      if ((*end == ':' || *end == ')') && line > 0 && line < 1000000) {
        bool seen = false;
        for (int i = 0; i < n; i++) seen |= out[i] == line;
        if (!seen) out[n++] = (int)line;
        p = end;
      }
    }
  }
  return n;
}

int compile_error(const char *device, const char *kernel, const char *log, const char *src) {
  strbuf sb = { 0 };
  const char *lg = log && *log ? log : "(no compiler output)";
  sb_printf(&sb, "%s: compiling kernel '%s' failed:\n%.1500s", device, kernel, lg);
  int lines[8], nl = log ? log_lines(log, lines, 8) : 0;
  if (nl && src) sb_puts(&sb, "\nthe source there:\n");
  for (int i = 0; i < nl && src; i++) {
    const char *p = src;
    for (int l = 1; l < lines[i] && p; l++) { p = strchr(p, '\n'); if (p) p++; }
    if (!p || !*p) continue;
    sb_printf(&sb, "%5d | %.*s\n", lines[i], (int)strcspn(p, "\n") > 300 ? 300 : (int)strcspn(p, "\n"), p);
  }
  tg_seterr("%s", sb.s);
  sb_free(&sb);
  return -1;
}
