/* device.c: the device registry. A device is named PREFIX or PREFIX:N
 * (case-insensitive; PREFIX alone is device 0, and its canonical name);
 * backends say how many of theirs are present and open them on first use.
 * Opened devices live until the process exits (tensors and caches hold
 * pointers to them). Adding a backend is one entry in `backends`. */
#include <ctype.h>
#include <pthread.h>
#include <strings.h>
#include "runtime/backends.h"
#include "util/util.h"

static int one(const char **why) { return 1; }
static tg_device *open_null(int i) { return null_device(); }
static tg_device *open_disk(int i) { return disk_device(); }

static const device_backend backends[] = {
  { "CPU", cpu_count, cpu_open },
  { "NULL", one, open_null },
  { "DISK", one, open_disk },
  { "CL", opencl_count, opencl_open },
  { "CUDA", cuda_count, cuda_open },
};
#define NBACKENDS (int)(sizeof backends / sizeof backends[0])
#define MAX_PER_BACKEND 16

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static tg_device *opened[NBACKENDS][MAX_PER_BACKEND];

/* "PREFIX[:N]" -> backend and index; -1 when it names no backend. */
static int parse_name(const char *name, int *index) {
  const char *colon = strchr(name, ':');
  size_t plen = colon ? (size_t)(colon - name) : strlen(name);
  *index = 0;
  if (colon) {
    const char *p = colon + 1;
    if (!*p || strlen(p) > 3) return -1;
    for (const char *q = p; *q; q++) if (!isdigit((unsigned char)*q)) return -1;
    *index = atoi(p);
  }
  for (int b = 0; b < NBACKENDS; b++)
    if (strlen(backends[b].prefix) == plen && strncasecmp(backends[b].prefix, name, plen) == 0) return b;
  return -1;
}

void device_name(char *buf, size_t n, const char *prefix, int index) {
  snprintf(buf, n, index ? "%s:%d" : "%s", prefix, index);
}

/* "CPU, NULL, DISK, CL, CL:1" */
static void present_list(char *buf, size_t n) {
  size_t k = 0;
  buf[0] = 0;
  for (int b = 0; b < NBACKENDS; b++) {
    const char *why = NULL;
    int c = backends[b].count(&why);
    for (int i = 0; i < c && k + 24 < n; i++) {
      char nm[32];
      device_name(nm, sizeof nm, backends[b].prefix, i);
      k += (size_t)snprintf(buf + k, n - k, "%s%s", k ? ", " : "", nm);
    }
  }
}

tg_device *device_get(const char *name) {
  char present[256];
  if (!name) { present_list(present, sizeof present); TG_FAIL("device_get: no device name given (present: %s)", present); }
  int index, b = parse_name(name, &index);
  if (b < 0) { present_list(present, sizeof present); TG_FAIL("unknown device '%s' (present: %s)", name, present); }
  pthread_mutex_lock(&lock);
  tg_device *d = index < MAX_PER_BACKEND ? opened[b][index] : NULL;
  pthread_mutex_unlock(&lock);
  if (d) return d;
  const char *why = NULL;
  int count = backends[b].count(&why);
  if (index >= count) {
    present_list(present, sizeof present);
    if (count == 0) TG_FAIL("device '%s' is not present: %s (present: %s)", name, why ? why : "none found", present);
    TG_FAIL("device '%s' is not present: %d %s device%s found (present: %s)", name, count, backends[b].prefix, count == 1 ? "" : "s", present);
  }
  if (index >= MAX_PER_BACKEND) TG_FAIL("device '%s': tg opens at most %d %s devices", name, MAX_PER_BACKEND, backends[b].prefix);
  pthread_mutex_lock(&lock);
  d = opened[b][index];
  if (!d) d = opened[b][index] = backends[b].open(index);
  pthread_mutex_unlock(&lock);
  return d;
}

int tg_devices(tg_device_info *out, int max, const char **absent) {
  if (max < 0) return tg_seterr("tg_devices: max is negative (%d)", max);
  static _Thread_local char why_buf[1024];
  size_t wk = 0;
  why_buf[0] = 0;
  int n = 0;
  for (int b = 0; b < NBACKENDS; b++) {
    const char *why = NULL;
    int c = backends[b].count(&why);
    if (c == 0 && wk + 8 < sizeof why_buf)
      wk += (size_t)snprintf(why_buf + wk, sizeof why_buf - wk, "%s: %s\n", backends[b].prefix, why ? why : "none found");
    for (int i = 0; i < c; i++, n++) {
      if (!out || n >= max) continue;
      char nm[32];
      device_name(nm, sizeof nm, backends[b].prefix, i);
      tg_device *d = device_get(nm);
      tg_device_info *o = &out[n];
      memset(o, 0, sizeof *o);
      snprintf(o->name, sizeof o->name, "%s", d ? d->name : nm);
      if (!d) { snprintf(o->description, sizeof o->description, "cannot open: %s", tg_error()); continue; }
      snprintf(o->description, sizeof o->description, "%s", d->description);
      snprintf(o->renderer, sizeof o->renderer, "%s", d->renderer ? d->renderer->name : "-");
      o->memory = d->memory;
      if (d->renderer) {
        o->local_memory = d->renderer->has_local ? d->renderer->local_mem : 0;
        o->max_local = d->renderer->has_local ? d->renderer->max_local : 0;
        o->threads = d->renderer->has_threads;
      }
    }
  }
  if (absent) *absent = why_buf;
  return n;
}

int device_launch_timed(tg_device *d, tg_program *p, void **bufs, int nbufs, const int64_t *vars, int nvars, double *seconds) {
  if (d->launch_timed) return d->launch_timed(d, p, bufs, nbufs, vars, nvars, seconds);
  if (d->synchronize && d->synchronize(d) < 0) return -1;
  double t0 = tg_now_seconds();
  int rc = d->launch(d, p, bufs, nbufs, vars, nvars);
  if (rc == 0 && d->synchronize) rc = d->synchronize(d);
  *seconds = tg_now_seconds() - t0;
  return rc;
}

tg_device *device_new(const tg_device *functions, const char *prefix, int index, const tg_renderer *ren, const char *flags, int64_t memory, void *impl) {
  tg_device *d = tg_xcalloc(1, sizeof *d);
  *d = *functions;
  char nm[32];
  device_name(nm, sizeof nm, prefix, index);
  d->name = tg_xstrdup(nm);
  d->renderer = ren;
  d->compile_flags = flags;
  d->memory = memory;
  d->impl = impl;
  return d;
}
