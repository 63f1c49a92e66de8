/* linear.c: running a linear (see linear.h): its calls in order, with the
 * variables' values resolved first, intermediates' memory given back after
 * their last call, and the JIT's capture fed. */
#include "engine/linear.h"
#include "engine/realize.h"
#include "runtime/buffer.h"
#include "schedule/call.h"
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

static void linear_body_free(linear_body *lb) {
  for (int i = 0; i < lb->nscratch; i++) buffer_release(lb->scratch[i]);
  call_body_release(lb->body);
  free(lb->scratch); free(lb->slot); free(lb->k); free(lb->var_at);
  free(lb);
}

void linear_free(linear *l) {
  for (int i = 0; i < l->n; i++) {
    linear_call *c = &l->v[i];
    if (c->call) { call_instance_free(c->call); free(c->call); continue; }   /* its table is bufs */
    for (int j = 0; j < c->nbufs; j++) buffer_release(c->bufs[j]);
    if (!c->bufs_in_block) free(c->bufs);
  }
  for (int i = 0; i < l->blocks.n; i++) free(l->blocks.v[i]);
  VEC_FREE(l->blocks);
  for (int i = 0; i < l->bodies.n; i++) linear_body_free(l->bodies.v[i]);
  VEC_FREE(l->bodies);
  VEC_FREE(*l);
}

int linear_count(const linear *l) {
  int n = 0;
  for (int i = 0; i < l->n; i++) n += l->v[i].call ? l->v[i].body->nk : 1;
  return n;
}

/* Buffer j of kernel k of call entry c: the call's argument or output,
 * the body's own memory, or (an intermediate) the call's own when it was
 * made, else the body's scratch buffer for it. */
static tg_buffer *call_entry_buf(const linear_call *c, int k, int j) {
  const call_body *b = c->call->body;
  tg_buffer *t = call_instance_buf(c->call, k, j);
  return t ? t : c->body->scratch[c->body->slot[-b->roles[b->role_at[k] + j] - 1]];
}

void linear_flatten(linear *l) {
  bool any = false;
  for (int i = 0; i < l->n && !any; i++) any = l->v[i].call != NULL;
  if (!any) return;
  int n = linear_count(l);
  linear_call *v = tg_xmalloc(sizeof(linear_call) * (size_t)(n ? n : 1));
  int m = 0;
  for (int i = 0; i < l->n; i++) {
    linear_call *c = &l->v[i];
    if (!c->call) { v[m++] = *c; continue; }
    call_instance_fresh(c->call);   /* the call's intermediates, its own from now on */
    const call_body *b = c->call->body;
    int nb = b->sched.n ? b->role_at[b->sched.n - 1] + b->sched.v[b->sched.n - 1].nbufs : 0;
    tg_buffer **block = tg_xmalloc(sizeof(tg_buffer *) * (size_t)(nb ? nb : 1));
    VEC_PUSH(l->blocks, (void *)block);
    for (int k = 0; k < c->body->nk; k++) {
      linear_call kc = c->body->k[k];
      kc.bufs = block + b->role_at[k];
      kc.bufs_in_block = true;
      for (int j = 0; j < kc.nbufs; j++) { kc.bufs[j] = call_instance_buf(c->call, k, j); buffer_retain(kc.bufs[j]); }
      v[m++] = kc;
    }
    call_instance_free(c->call);
    free(c->call);
  }
  counters_add_work(n);   /* the entries made */
  free(l->v);
  l->v = v; l->n = m; l->cap = n ? n : 1;
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
      if (!b) continue;   /* a call's intermediate: runs in its body's scratch */
      size_t h = (size_t)tg_hash_mix(0, (uint64_t)(uintptr_t)b) & (cap - 1);
      while (bu->slots[h].b && bu->slots[h].b != b) h = (h + 1) & (cap - 1);
      bu->slots[h].b = b;
      bu->slots[h].uses++;
      bu->slots[h].last = i;
      bu->slot_of[k] = (int)h;
    }
}

/* A function call's entry: its body's kernels over its buffers, the
 * intermediates in the body's scratch buffers. vars: the body's values. */
static int run_call_entry(const linear_call *c, const int64_t *vars, int debug, bool time_each) {
  const linear_body *lb = c->body;
  tg_buffer *bufs[256];
  int rc = 0;
  for (int k = 0; k < lb->nk && rc == 0; k++) {
    linear_call kc = lb->k[k];
    if (kc.nbufs > 256) return tg_seterr("kernel %s: more than 256 buffers", kc.name);
    for (int j = 0; j < kc.nbufs; j++) bufs[j] = call_entry_buf(c, k, j);
    kc.bufs = bufs;
    rc = run_call(&kc, vars + lb->var_at[k], debug, time_each);
  }
  return rc;
}

int linear_run(linear *l, const var_values *given) {
  /* the JIT captures each kernel with its own buffers */
  if (capture) linear_flatten(l);
  /* the values of each call's variables, in one array (most calls have
   * none); a function body's once, for all its calls */
  int nb = l->bodies.n;
  int *at = tg_xmalloc(sizeof(int) * (size_t)(l->n + nb ? l->n + nb : 1)), *body_at = at + l->n, nv = 0;
  for (int i = 0; i < l->n; i++) { at[i] = nv; nv += l->v[i].call ? 0 : l->v[i].nvars; }
  for (int b = 0; b < nb; b++) { body_at[b] = nv; nv += l->bodies.v[b]->nvars; }
  int64_t *vars = tg_xmalloc(sizeof(int64_t) * (size_t)(nv ? nv : 1));
  int rc = 0;
  for (int i = 0; i < l->n && rc == 0; i++)
    if (!l->v[i].call && l->v[i].nvars) rc = vars_values_given(l->v[i].varnames, l->v[i].nvars, vars + at[i], given);
  for (int b = 0; b < nb && rc == 0; b++) {
    const linear_body *lb = l->bodies.v[b];
    for (int k = 0; k < lb->nk && rc == 0; k++)
      if (lb->k[k].nvars) rc = vars_values_given(lb->k[k].varnames, lb->k[k].nvars, vars + body_at[b] + lb->var_at[k], given);
  }
  if (rc < 0) { free(vars); free(at); return -1; }
  int debug = (int)setting_int(SET_DEBUG);
  bool time_each = debug >= 2 || setting_int(SET_TG_KERNEL_TIMES) || viz_on;
  /* each buffer's uses and its last call: a buffer only the calls hold
   * (twice that under a capture, which holds each use too) is an
   * intermediate, and its memory goes to the allocator cache after its
   * last call, so a later one of its size reuses it (a layer-by-layer
   * graph needs one layer's intermediates, not all). A JIT's capture
   * replays them in planned memory (jit.c), so it needs their
   * description, not their contents. A function body's scratch memory
   * goes back after its last call. */
  int nuses = 0;
  int *body_last = tg_xmalloc(sizeof(int) * (size_t)(nb ? nb : 1));
  for (int b = 0; b < nb; b++) body_last[b] = -1;
  for (int i = 0; i < l->n; i++) {
    nuses += l->v[i].nbufs;
    if (l->v[i].call) body_last[l->v[i].body->index] = i;
  }
  buffer_uses bu;
  uses_count(&bu, l, nuses);
  if (capture) for (int i = 0; i < l->n; i++) linear_push(&capture->l, &l->v[i]);
  for (int i = 0, at_use = 0; i < l->n && rc == 0; at_use += l->v[i].nbufs, i++) {
    const linear_call *c = &l->v[i];
    rc = c->call ? run_call_entry(c, vars + body_at[c->body->index], debug, time_each) : run_call(c, vars + at[i], debug, time_each);
    for (int j = 0; rc == 0 && j < c->nbufs; j++) {
      tg_buffer *b = c->bufs[j];
      if (!b) continue;
      const struct buffer_use *u = &bu.slots[bu.slot_of[at_use + j]];
      intptr_t held = (intptr_t)u->uses * (capture ? 2 : 1);
      if (u->last == i && b->refcnt == held && !(capture && capture->keep_memory)) buffer_drop_memory(b);
    }
    if (c->call && body_last[c->body->index] == i)
      for (int s = 0; s < c->body->nscratch; s++) buffer_drop_memory(c->body->scratch[s]);
  }
  free(bu.slots); free(bu.slot_of);
  free(body_last);
  free(vars); free(at);
  return rc;
}
