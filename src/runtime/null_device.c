/* null_device.c: the NULL device. It schedules and "runs" everything and does
 * nothing: no memory behind its buffers, no compiler, no kernels. Useful to
 * measure the scheduler and to test the layers above without a C compiler. */
#include "runtime/cpu_compiler.h"
#include "runtime/device.h"
#include "util/util.h"

/* Every buffer on the NULL device points here: non-NULL, so "allocated", but
 * nobody may read or write through it. */
static unsigned char null_byte;

static void *null_alloc(struct tg_device *d, size_t nbytes) { return &null_byte; }
static void null_free(struct tg_device *d, void *p, size_t nbytes) {}
static int null_copyin(struct tg_device *d, void *dst, const void *host, size_t n) { return 0; }
static int null_copyout(struct tg_device *d, void *host, const void *src, size_t n) { return 0; }

static tg_program *null_compile(struct tg_device *d, const char *src, const char *name) {
  tg_program *p = tg_xcalloc(1, sizeof *p);
  p->dev = d;
  p->name = tg_xstrdup(name ? name : "");
  p->fn = NULL;
  p->handle = NULL;
  return p;
}

static void null_program_free(struct tg_device *d, tg_program *p) {
  if (!p) return;
  free(p->name);
  free(p);
}

static int null_launch(struct tg_device *d, tg_program *p, void **bufs, int nbufs, const int64_t *vars, int nvars) {
  return 0;
}

static struct tg_device null_dev = {
  .name = "NULL",
  .alloc = null_alloc,
  .free = null_free,
  .copyin = null_copyin,
  .copyout = null_copyout,
  .compile = null_compile,
  .program_free = null_program_free,
  .launch = null_launch,
  .renderer = &renderer_c,
  .description = "runs nothing (scheduling and counting only)",
};

struct tg_device *null_device(void) { return &null_dev; }
