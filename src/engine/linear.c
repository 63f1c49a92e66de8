/* linear.c: running a linear (see linear.h): its calls in order, with the
 * variables' values resolved first, intermediates' memory given back after
 * their last call, and the JIT's capture fed. */
#include "engine/linear.h"
#include "engine/realize.h"
#include "runtime/buffer.h"
#include "schedule/schedule.h"
#include "util/counters.h"
#include "util/settings.h"
#include "viz/viz.h"

void linear_push(linear *l, const linear_call *c) {
  linear_call k = *c;
  k.bufs_in_block = false;
  k.bufs = tg_xmalloc(sizeof(tg_buffer *) * (size_t)(c->nbufs ? c->nbufs : 1));
  for (int i = 0; i < c->nbufs; i++) { k.bufs[i] = c->bufs[i]; buffer_retain(k.bufs[i]); }
  VEC_PUSH(*l, k);
}

void linear_free(linear *l) {
  for (int i = 0; i < l->n; i++) {
    for (int j = 0; j < l->v[i].nbufs; j++) buffer_release(l->v[i].bufs[j]);
    if (!l->v[i].bufs_in_block) free(l->v[i].bufs);
  }
  for (int i = 0; i < l->blocks.n; i++) free(l->blocks.v[i]);
  VEC_FREE(l->blocks);
  VEC_FREE(*l);
}

static _Thread_local kernel_capture *capture;
/* a replay has no kernel for a view: captured schedules store every root */
void engine_capture_begin(kernel_capture *c) { capture = c; schedule_allow_views(false); }
void engine_capture_end(void) { capture = NULL; schedule_allow_views(true); }
void kernel_capture_free(kernel_capture *c) { linear_free(&c->l); }

static int run_copy(const linear_call *c) {
  tg_buffer *dst = c->bufs[0], *src = c->bufs[1];
  if (buffer_alloc(dst) < 0 || buffer_alloc(src) < 0) return -1;
  double t0 = viz_on ? engine_now_s() : 0;
  int rc = 0;
  if (src->dev->host_memory && dst->dev->host_memory) {   /* CPU <-> CPU:1: one memcpy */
    if (src->nbytes > dst->nbytes) rc = tg_seterr("copy %s->%s: %zu bytes do not fit %zu", src->dev->name, dst->dev->name, src->nbytes, dst->nbytes);
    else if (src->nbytes) memcpy(dst->ptr, src->ptr, src->nbytes);
  } else {
    void *tmp = tg_xmalloc(src->nbytes);
    rc = buffer_copyout(src, tmp, src->nbytes);
    if (rc == 0) rc = buffer_copyin(dst, tmp, src->nbytes);
    free(tmp);
  }
  if (viz_on) viz_copy(dst->dev->name, src->dev->name, src->nbytes, engine_now_s() - t0);
  counters_add_run(0, (double)src->nbytes * 2, 0);
  return rc;
}

/* time_each: time every launch (DEBUG=2, TG_KERNEL_TIMES=1), waiting for
 * devices that queue; else those run on while the engine goes on. */
static int run_call(const linear_call *c, const int64_t *vars, int debug, bool time_each) {
  if (!c->prog) return run_copy(c);
  /* zeros into a buffer with no memory yet: zeroed memory, no launch (a
   * capture launches: its replays find the buffer holding values) */
  if (c->zeros && !capture) {
    int z = buffer_alloc_zeroed(c->bufs[0]);
    if (z < 0) return -1;
    if (z == 1) {
      if (debug >= 2) fprintf(stderr, "*** %-4s %6s %-28s zeros from the allocator, not run\n", c->dev->name, "", c->name);
      return 0;
    }
  }
  void *ptrs[256];
  if (c->nbufs > 256) return tg_seterr("kernel %s: more than 256 buffers", c->name);
  double bytes = 0;
  for (int i = 0; i < c->nbufs; i++) {
    if (buffer_alloc(c->bufs[i]) < 0) return -1;
    ptrs[i] = c->bufs[i]->ptr;
    bytes += (double)c->bufs[i]->nbytes;
  }
  double dt = 0;
  int rc;
  if (time_each || !c->dev->synchronize) rc = device_launch_timed(c->dev, c->prog, ptrs, c->nbufs, vars, c->nvars, &dt);
  else rc = c->dev->launch(c->dev, c->prog, ptrs, c->nbufs, vars, c->nvars);
  if (rc < 0) return rc;
  counters_add_run(c->flops, bytes, dt);
  if (viz_on) viz_run(c->dev->name, c->name, dt, c->flops, bytes);
  if (debug >= 2) engine_print_kernel_run("***", c->dev->name, c->name, c->nbufs, dt, c->flops, bytes);
  return 0;
}

/* Each buffer's uses in a linear and its last call: one slot per buffer in
 * a table sized for the linear (found by one probe per use, not a map's
 * get and put), and per use (call by call, buffer by buffer) its slot. */
struct buffer_use { const tg_buffer *b; int uses, last; };
typedef struct { struct buffer_use *slots; int *slot_of; } buffer_uses;

static void uses_count(buffer_uses *bu, const linear *l, int nuses) {
  size_t cap = 16;
  while (cap < 2 * (size_t)nuses) cap *= 2;
  bu->slots = tg_xcalloc(cap, sizeof *bu->slots);
  bu->slot_of = tg_xmalloc(sizeof(int) * (size_t)(nuses ? nuses : 1));
  for (int i = 0, k = 0; i < l->n; i++)
    for (int j = 0; j < l->v[i].nbufs; j++, k++) {
      const tg_buffer *b = l->v[i].bufs[j];
      size_t h = (size_t)tg_hash_mix(0, (uint64_t)(uintptr_t)b) & (cap - 1);
      while (bu->slots[h].b && bu->slots[h].b != b) h = (h + 1) & (cap - 1);
      bu->slots[h].b = b;
      bu->slots[h].uses++;
      bu->slots[h].last = i;
      bu->slot_of[k] = (int)h;
    }
}

int linear_run(linear *l, const var_values *given) {
  /* the values of each call's variables, in one array (most calls have none) */
  int *at = tg_xmalloc(sizeof(int) * (size_t)(l->n ? l->n : 1)), nv = 0;
  for (int i = 0; i < l->n; i++) { at[i] = nv; nv += l->v[i].nvars; }
  int64_t *vars = tg_xmalloc(sizeof(int64_t) * (size_t)(nv ? nv : 1));
  for (int i = 0; i < l->n; i++)
    if (l->v[i].nvars && vars_values_given(l->v[i].varnames, l->v[i].nvars, vars + at[i], given) < 0) { free(vars); free(at); return -1; }
  int debug = (int)setting_int(SET_DEBUG);
  bool time_each = debug >= 2 || setting_int(SET_TG_KERNEL_TIMES) || viz_on;
  /* each buffer's uses and its last call: a buffer only the calls hold
   * (twice that under a capture, which holds each use too) is an
   * intermediate, and its memory goes to the allocator cache after its
   * last call, so a later one of its size reuses it (a layer-by-layer
   * graph needs one layer's intermediates, not all). A JIT's capture
   * replays them in planned memory (jit.c), so it needs their
   * description, not their contents. */
  int nuses = 0;
  for (int i = 0; i < l->n; i++) nuses += l->v[i].nbufs;
  buffer_uses bu;
  uses_count(&bu, l, nuses);
  if (capture) for (int i = 0; i < l->n; i++) linear_push(&capture->l, &l->v[i]);
  int rc = 0;
  for (int i = 0, at_use = 0; i < l->n && rc == 0; at_use += l->v[i].nbufs, i++) {
    rc = run_call(&l->v[i], vars + at[i], debug, time_each);
    for (int j = 0; rc == 0 && j < l->v[i].nbufs; j++) {
      tg_buffer *b = l->v[i].bufs[j];
      const struct buffer_use *u = &bu.slots[bu.slot_of[at_use + j]];
      intptr_t held = (intptr_t)u->uses * (capture ? 2 : 1);
      if (u->last == i && b->refcnt == held && !(capture && capture->keep_memory)) buffer_drop_memory(b);
    }
  }
  free(bu.slots); free(bu.slot_of);
  free(vars); free(at);
  return rc;
}
