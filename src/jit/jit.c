/* jit.c: capture the kernels of a step function once, replay them after.
 *
 * Call 1 runs the step normally (kernels compile). Call 2 runs it again with
 * a kernel capture on: every launched kernel is recorded with its buffers
 * (with capture_first, call 1 does). From then on, the recorded kernels are launched directly: each kernel
 * argument is either a fixed buffer (weights, state written in place by
 * assigns), an input (replaced by this call's input memory), an output (a
 * fresh buffer every call), or an intermediate (a slot of the memory plan,
 * shared with other intermediates whose lifetimes do not overlap).
 *
 * With pruning on (tg_jit_set_prune), kernels whose results cannot change
 * from call to call (they read no input, no symbolic variable, nothing a
 * changing kernel wrote, and write an intermediate) ran during the capture
 * and are dropped from the replay; their results stay in their own memory. */
#include "jit/jit_internal.h"
#include "engine/realize.h"
#include "engine/vars.h"
#include "runtime/buffer.h"
#include "tensor/tensor.h"
#include "uop/dims.h"
#include "util/counters.h"
#include "util/settings.h"
#include "viz/viz.h"

static void replay_plan_free(replay_plan *rp, const linear *l);

void tg_jit_set_reuse_outputs(tg_jit *j, bool on) { if (j) j->reuse_outputs = on; }

void tg_jit_set_prune(tg_jit *j, bool on) { if (j) j->prune = on; }

void tg_jit_set_capture_first(tg_jit *j, bool on) { if (j) j->capture_first = on; }

tg_jit *tg_jit_new(tg_jit_fn fn, void *ctx) {
  if (!fn) TG_FAIL("tg_jit_new: no step function");
  tg_jit *j = tg_xcalloc(1, sizeof *j);
  j->fn = fn; j->ctx = ctx;
  return j;
}

void tg_jit_free(tg_jit *j) {
  if (!j) return;
  replay_plan_free(j->rp, &j->cap.l);
  for (int i = 0; j->args && i < j->cap.l.n; i++) free(j->args[i]);
  free(j->args);
  kernel_capture_free(&j->cap);
  for (int s = 0; s < j->nslots; s++) if (j->slots[s]) j->slot_dev[s]->free(j->slot_dev[s], j->slots[s], j->slot_bytes[s]);
  free(j->slots); free(j->slot_bytes); free(j->slot_dev);
  for (int i = 0; j->out_sig && i < j->nout; i++)
    for (int a = 0; a < j->out_sig[i].shape.ndim; a++) uop_release(j->out_sig[i].var[a]);
  free(j->in_sig); free(j->out_sig);
  for (int i = 0; i < j->npinned; i++) buffer_release(j->pinned[i]);
  for (int i = 0; i < 256; i++) if (j->outb[i]) buffer_release(j->outb[i]);
  free(j->pinned);
  free(j);
}

tg_jit_info tg_jit_stats(const tg_jit *j) {
  tg_jit_info s = { 0 };
  if (!j) return s;
  s.calls = j->calls - (j->captured_first ? 1 : 0); s.kernels = j->cap.l.n; s.intermediate_bytes = j->inter_bytes; s.planned_bytes = j->planned_bytes;
  s.pruned = j->pruned;
  return s;
}

int tg_jit_entries(const tg_jit *j, tg_schedule_entry *out, int max) {
  if (!j) return tg_seterr("tg_jit_entries: no JIT");
  if (max < 0 || (max > 0 && !out)) return tg_seterr("tg_jit_entries: %s (max %d)", out ? "negative max" : "NULL output array", max);
  int n = j->calls >= 2 ? j->cap.l.n : 0;
  for (int k = 0; k < n && k < max; k++) {
    const linear_call *c = &j->cap.l.v[k];
    schedule_entry_fill(&out[k], c->name, c->dev, c->bufs, c->nbufs, !c->prog);
  }
  return n;
}

static tensor_sig sig_of(tg_tensor *t) { return (tensor_sig){ tg_shape_of(t), tg_dtype_of(t), tg_device_of(t), { 0 } }; }
static bool sig_eq(const tensor_sig *a, const tensor_sig *b) {
  if (a->dtype != b->dtype || a->device != b->device || a->shape.ndim != b->shape.ndim) return false;
  for (int i = 0; i < a->shape.ndim; i++) if (a->shape.d[i] != b->shape.d[i]) return false;
  return true;
}
static void sig_str(const tensor_sig *s, char *buf, size_t n) {
  size_t k = (size_t)snprintf(buf, n, "%s (", tg_dtype_name(s->dtype));
  for (int i = 0; i < s->shape.ndim && k + 24 < n; i++) k += (size_t)snprintf(buf + k, n - k, i ? ",%lld" : "%lld", (long long)s->shape.d[i]);
  snprintf(buf + k, n - k, ") on %s", s->device);
}

/* The realized, contiguous memory behind an input (realizing it if needed). */
static tg_buffer *input_buffer(tg_tensor *t) {
  if (tg_realize(t) < 0) return NULL;
  tg_buffer *b = uop_contiguous_buffer(t->u);
  if (!b) TG_FAIL("tg_jit_call: an input is not contiguous memory after realizing");
  if (buffer_alloc(b) < 0) return NULL;
  return b;
}

static int check_inputs(tg_jit *j, tg_tensor *const *in, int nin, tg_buffer **bufs) {
  if (nin != j->nin) return tg_seterr("tg_jit_call: %d inputs, the captured step had %d", nin, j->nin);
  for (int i = 0; i < nin; i++) {
    if (!in[i]) { tensor_null_input("tg_jit_call"); return -1; }
    tensor_sig s = sig_of(in[i]);
    if (!sig_eq(&s, &j->in_sig[i])) {
      char a[256], b[256];
      sig_str(&s, a, sizeof a); sig_str(&j->in_sig[i], b, sizeof b);
      return tg_seterr("tg_jit_call: input %d is %s, but the step was captured with %s", i, a, b);
    }
  }
  for (int i = 0; i < nin; i++) {
    bufs[i] = input_buffer(in[i]);
    if (!bufs[i]) return -1;
    for (int k = 0; k < i; k++)
      if (bufs[k] == bufs[i]) return tg_seterr("tg_jit_call: inputs %d and %d share memory; the JIT needs distinct inputs", k, i);
  }
  return 0;
}

/* Runs the step, realizing its outputs and pending assigns together. */
static int run_step(tg_jit *j, tg_tensor *const *in, int nin, tg_tensor **out, int nout) {
  /* JITBEAM=n: kernel search for the step's kernels only */
  int jitbeam = (int)setting_int(SET_JITBEAM), prev_beam = jitbeam > 0 ? engine_set_beam(jitbeam) : 0;
  tg_scope_begin();
  for (int i = 0; i < nout; i++) out[i] = NULL;
  int rc = j->fn(j->ctx, in, nin, out, nout);
  if (rc >= 0) {
    tg_tensor *all[1024];
    int n = 0;
    for (int i = 0; i < nout; i++) {
      if (!out[i]) { rc = tg_seterr("tg_jit_call: the step left output %d NULL%s%s", i, tg_error()[0] ? ": " : "", tg_error()); break; }
      all[n++] = out[i];
    }
    if (rc >= 0) {
      n += tensors_pending_assigns(all + n, 1024 - n);
      rc = tg_realize_all(all, n);
    }
  } else if (!tg_error()[0]) tg_seterr("tg_jit_call: the step function returned %d", rc);
  for (int i = 0; i < nout; i++) if (out[i] && rc >= 0) tg_keep(out[i]);
  tg_scope_end();
  if (jitbeam > 0) engine_set_beam(prev_beam);
  if (rc < 0) for (int i = 0; i < nout; i++) out[i] = NULL;
  return rc < 0 ? -1 : 0;
}

/* how many capture references each buffer has: a buffer nothing else
 * holds is an intermediate of the step */
static void count_refs(tg_jit *j, ptrmap *refs) {
  for (int k = 0; k < j->cap.l.n; k++)
    for (int a = 0; a < j->cap.l.v[k].nbufs; a++) {
      tg_buffer *b = j->cap.l.v[k].bufs[a];
      pm_put(refs, b, (void *)((intptr_t)pm_get(refs, b) + 1));
    }
}

/* Drops the kernels whose results are the same every call (see the top).
 * ck->writes says which of a kernel's buffers it writes (a multi-output
 * kernel writes several); the others are what it reads. */
static void prune_constant_kernels(tg_jit *j, tg_buffer **inb) {
  ptrmap refs = { 0 }, changing = { 0 };
  count_refs(j, &refs);
  for (int i = 0; i < j->nin; i++) pm_put(&changing, inb[i], (void *)1);
  int kept = 0;
  for (int k = 0; k < j->cap.l.n; k++) {
    linear_call *ck = &j->cap.l.v[k];
    bool keep = ck->nvars > 0 || !ck->writes || ck->nbufs > 64;
    for (int a = 0; a < ck->nbufs && !keep; a++) {
      tg_buffer *b = ck->bufs[a];
      if (ck->writes >> a & 1) keep = b->refcnt != (intptr_t)pm_get(&refs, b);   /* writes state or an output */
      else keep = pm_get(&changing, b) != NULL;                                  /* reads what changes */
    }
    if (keep) {
      for (int a = 0; a < ck->nbufs && a < 64; a++) if (ck->writes >> a & 1) pm_put(&changing, ck->bufs[a], (void *)1);
      j->cap.l.v[kept++] = *ck;
      continue;
    }
    /* its results stay in their captured buffers, which the JIT keeps */
    for (int a = 0; a < ck->nbufs; a++) {
      if (ck->writes >> a & 1) {
        j->pinned = tg_xrealloc(j->pinned, sizeof(tg_buffer *) * (size_t)(j->npinned + 1));
        j->pinned[j->npinned++] = ck->bufs[a];
      } else buffer_release(ck->bufs[a]);
    }
    free(ck->bufs);
    j->pruned++;
  }
  j->cap.l.n = kept;
  pm_free(&refs); pm_free(&changing);
}

/* Classifies every kernel argument and plans the intermediates' memory. */
static void plan(tg_jit *j, tg_buffer **inb, tg_tensor **out) {
  int nk = j->cap.l.n;
  j->args = tg_xcalloc((size_t)(nk ? nk : 1), sizeof(jit_arg *));
  tg_buffer *outb[256] = { 0 };
  for (int i = 0; i < j->nout && i < 256; i++) outb[i] = uop_contiguous_buffer(out[i]->u);
  ptrmap refs = { 0 }, last = { 0 }, slot_of = { 0 }, written = { 0 };
  count_refs(j, &refs);
  for (int k = 0; k < nk; k++)
    for (int a = 0; a < j->cap.l.v[k].nbufs; a++) {
      const linear_call *ck = &j->cap.l.v[k];
      pm_put(&last, ck->bufs[a], (void *)(intptr_t)(k + 1));
      if (ck->nbufs > 64 || (ck->writes >> a & 1)) pm_put(&written, ck->bufs[a], (void *)1);
    }
  /* slots: greedy by first use; a slot is free once its last user ran */
  int cap = 0;
  int *slot_last = NULL;
  for (int k = 0; k < nk; k++) {
    linear_call *ck = &j->cap.l.v[k];
    j->args[k] = tg_xcalloc((size_t)(ck->nbufs ? ck->nbufs : 1), sizeof(jit_arg));
    for (int a = 0; a < ck->nbufs; a++) {
      tg_buffer *b = ck->bufs[a];
      jit_arg *ja = &j->args[k][a];
      ja->kind = ARG_FIXED;
      for (int i = 0; i < j->nin; i++) if (inb[i] == b) { ja->kind = ARG_INPUT; ja->index = i; }
      for (int i = 0; i < j->nout && i < 256; i++) if (outb[i] == b) { ja->kind = ARG_OUTPUT; ja->index = i; }
      /* held by the capture alone and written by a captured kernel: an
       * intermediate. One no kernel writes (a table the step made from
       * host data, read by its kernels) keeps its memory. */
      if (ja->kind != ARG_FIXED || b->refcnt != (intptr_t)pm_get(&refs, b) || !pm_get(&written, b)) continue;
      void *s = pm_get(&slot_of, b);
      if (s) { ja->kind = ARG_SLOT; ja->index = (int)(intptr_t)s - 1; continue; }
      /* a new intermediate: the first free slot (best fit), or a new one */
      j->inter_bytes += (int64_t)b->nbytes;
      int best = -1;
      for (int t = 0; t < j->nslots; t++)
        if (slot_last[t] < k + 1 && j->slot_dev[t] == b->dev && (best < 0 || j->slot_bytes[t] < j->slot_bytes[best] || (j->slot_bytes[best] < b->nbytes && j->slot_bytes[t] > j->slot_bytes[best])))
          best = t;
      if (best < 0) {
        if (j->nslots == cap) {
          cap = cap ? cap * 2 : 8;
          j->slots = tg_xrealloc(j->slots, sizeof(void *) * (size_t)cap);
          j->slot_bytes = tg_xrealloc(j->slot_bytes, sizeof(size_t) * (size_t)cap);
          j->slot_dev = tg_xrealloc(j->slot_dev, sizeof(tg_device *) * (size_t)cap);
          slot_last = tg_xrealloc(slot_last, sizeof(int) * (size_t)cap);
        }
        best = j->nslots++;
        j->slots[best] = NULL; j->slot_bytes[best] = 0; j->slot_dev[best] = b->dev;
      }
      if (j->slot_bytes[best] < b->nbytes) j->slot_bytes[best] = b->nbytes;
      slot_last[best] = (int)(intptr_t)pm_get(&last, b);
      pm_put(&slot_of, b, (void *)(intptr_t)(best + 1));
      ja->kind = ARG_SLOT; ja->index = best;
    }
  }
  /* the capture's own intermediates are dead now (replays use the slots):
   * their memory goes back, so the step's intermediates take the plan's
   * bytes, not the plan's plus every one the capture made */
  for (int k = 0; k < nk; k++)
    for (int a = 0; a < j->cap.l.v[k].nbufs; a++) if (j->args[k][a].kind == ARG_SLOT) buffer_drop_memory(j->cap.l.v[k].bufs[a]);
  /* Slots are sized for the largest shape a replay binds (an LLM's prefill
   * chunk at its most tokens) and a replay may write a corner of one (a
   * 16-token prompt): where the device can, their pages come when first
   * written (the CPU's zeroed memory) rather than all at once. */
  for (int t = 0; t < j->nslots; t++) {
    tg_device *d = j->slot_dev[t];
    j->slots[t] = (d->alloc_zeroed ? d->alloc_zeroed : d->alloc)(d, j->slot_bytes[t] ? j->slot_bytes[t] : 1);
    j->planned_bytes += (int64_t)j->slot_bytes[t];
  }
  free(slot_last);
  pm_free(&refs); pm_free(&last); pm_free(&slot_of); pm_free(&written);
}

static void replay_plan_free(replay_plan *rp, const linear *l) {
  if (!rp) return;
  for (int k = 0; k < l->n; k++) free(rp->ptrs[k]);
  for (int b = 0, k = 0; b < rp->nbatches; k = rp->batch_end[b++])   /* a graph is its batch's first kernel's device's */
    if (rp->graphs[b]) l->v[k].dev->graph_free(l->v[k].dev, rp->graphs[b]);
  free(rp->ptrs); free(rp->patch); free(rp->vars); free(rp->progs); free(rp->varp);
  free(rp->nbufs); free(rp->nvars); free(rp->graphs);
  free(rp->batch_end); free(rp->batched); free(rp);
}

static replay_plan *build_replay_plan(tg_jit *j) {
  int nk = j->cap.l.n;
  replay_plan *rp = tg_xcalloc(1, sizeof *rp);
  rp->ptrs = tg_xcalloc((size_t)(nk ? nk : 1), sizeof(void **));
  rp->vars = tg_xcalloc((size_t)(nk ? nk : 1), sizeof *rp->vars);
  rp->progs = tg_xcalloc((size_t)(nk ? nk : 1), sizeof(tg_program *));
  rp->varp = tg_xcalloc((size_t)(nk ? nk : 1), sizeof(int64_t *));
  rp->nbufs = tg_xcalloc((size_t)(nk ? nk : 1), sizeof(int));
  rp->nvars = tg_xcalloc((size_t)(nk ? nk : 1), sizeof(int));
  rp->graphs = tg_xcalloc((size_t)(nk ? nk : 1), sizeof(void *));
  VEC(replay_patch) patch = { 0 };
  for (int k = 0; k < nk; k++) {
    linear_call *ck = &j->cap.l.v[k];
    rp->ptrs[k] = tg_xcalloc((size_t)(ck->nbufs ? ck->nbufs : 1), sizeof(void *));
    for (int a = 0; a < ck->nbufs; a++) {
      jit_arg *ja = &j->args[k][a];
      if (ja->kind == ARG_SLOT) rp->ptrs[k][a] = j->slots[ja->index];
      else if (ja->kind == ARG_FIXED) rp->ptrs[k][a] = ck->bufs[a]->ptr;
      else VEC_PUSH(patch, ((replay_patch){ k, a, ja->kind, ja->index }));
    }
    rp->progs[k] = ck->prog;
    rp->varp[k] = rp->vars[k];
    rp->nbufs[k] = ck->nbufs;
    rp->nvars[k] = ck->nvars;
    rp->flops += ck->flops;
  }
  rp->patch = patch.v; rp->npatch = patch.n;
  /* batches; JIT=2 keeps the JIT without them, DEBUG=2 times each kernel */
  bool batches = setting_int(SET_JIT) != 2 && setting_int(SET_DEBUG) < 2;
  int64_t size = setting_int(SET_JIT_BATCH_SIZE);
  if (size < 1) size = 1;
  rp->batch_end = tg_xcalloc((size_t)(nk ? nk : 1), sizeof(int));
  rp->batched = tg_xcalloc((size_t)(nk ? nk : 1), sizeof(bool));
  for (int k = 0; k < nk;) {
    linear_call *ck = &j->cap.l.v[k];
    int end = k + 1;
    if (batches && ck->prog && (ck->dev->launch_batch || ck->dev->launch_graph)) {
      while (end < nk && end - k < size && j->cap.l.v[end].prog && j->cap.l.v[end].dev == ck->dev) end++;
      rp->batched[rp->nbatches] = end - k > 1;
      if (end - k > 1 && size < (1 << 20)) size *= 2;
    }
    rp->batch_end[rp->nbatches++] = end;
    k = end;
  }
  return rp;
}

/* One captured call on the replay's pointers; timed (DEBUG=2's line, VIZ's
 * profile) when timed is set. */
static int replay_one(const linear_call *ck, void **ptrs, const int64_t *vars, bool timed, int debug) {
  double t0 = timed ? engine_now_s() : 0;
  if (!ck->prog) {   /* a copy between devices */
    tg_buffer *dst = ck->bufs[0], *src = ck->bufs[1];
    void *tmp = tg_xmalloc(src->nbytes);
    int rc = src->dev->copyout(src->dev, tmp, ptrs[1], src->nbytes);
    if (rc == 0) rc = dst->dev->copyin(dst->dev, ptrs[0], tmp, src->nbytes);
    free(tmp);
    if (rc == 0 && viz_on) viz_copy(dst->dev->name, src->dev->name, src->nbytes, engine_now_s() - t0);
    return rc;
  }
  double dt = 0;
  int rc = timed ? device_launch_timed(ck->dev, ck->prog, ptrs, ck->nbufs, vars, ck->nvars, &dt)
                 : ck->dev->launch(ck->dev, ck->prog, ptrs, ck->nbufs, vars, ck->nvars);
  if (rc < 0 || !timed) return rc;
  double bytes = 0;
  for (int a = 0; a < ck->nbufs; a++) bytes += (double)ck->bufs[a]->nbytes;
  if (viz_on) viz_run(ck->dev->name, ck->name, dt, ck->flops, bytes);
  if (debug >= 2) engine_print_kernel_run("JIT", ck->dev->name, ck->name, ck->nbufs, dt, ck->flops, bytes);
  return 0;
}

/* Runs the captured kernels on this call's inputs and outputs. */
static int replay_kernels(tg_jit *j, tg_buffer **inb, tg_buffer **outb) {
  if (!j->rp) j->rp = build_replay_plan(j);
  replay_plan *rp = j->rp;
  for (int i = 0; i < rp->npatch; i++) {
    const replay_patch *p = &rp->patch[i];
    rp->ptrs[p->k][p->a] = p->kind == ARG_INPUT ? inb[p->index]->ptr : outb[p->index]->ptr;
  }
  for (int k = 0; k < j->cap.l.n; k++)
    if (j->cap.l.v[k].nvars && vars_values(j->cap.l.v[k].varnames, j->cap.l.v[k].nvars, rp->vars[k]) < 0) return -1;
  int debug = (int)setting_int(SET_DEBUG);
  /* VIZ's profile and DEBUG=2 time every kernel of a replay, one at a time */
  bool each = viz_on || debug >= 2;
  for (int b = 0, k = 0; b < rp->nbatches; k = rp->batch_end[b++]) {
    linear_call *ck = &j->cap.l.v[k];
    int end = rp->batch_end[b];
    if (rp->batched[b] && !each) {
      tg_device *d = ck->dev;
      if (d->launch_graph) {
        if (d->launch_graph(d, &rp->graphs[b], rp->progs + k, rp->ptrs + k, rp->nbufs + k, rp->varp + k, rp->nvars + k, end - k) < 0) return -1;
      } else if (d->launch_batch(d, rp->progs + k, rp->ptrs + k, rp->varp + k, end - k) < 0) return -1;
      continue;
    }
    for (int c = k; c < end; c++)
      if (replay_one(&j->cap.l.v[c], rp->ptrs[c], rp->vars[c], each, debug) < 0) return -1;
  }
  counters_add_runs(j->cap.l.n, rp->flops, 0, 0);
  return 0;
}

static int replay(tg_jit *j, tg_tensor *const *in, int nin, tg_tensor **out, int nout) {
  tg_buffer *inb[256];
  if (nin > 256 || nout > 256) return tg_seterr("tg_jit_call: at most 256 inputs and outputs");
  if (nout != j->nout) return tg_seterr("tg_jit_call: %d outputs, the captured step had %d", nout, j->nout);
  if (check_inputs(j, in, nin, inb) < 0) return -1;
  tg_buffer *outb[256];
  for (int i = 0; i < nout; i++) {
    if (j->reuse_outputs && j->outb[i]) { outb[i] = j->outb[i]; buffer_retain(outb[i]); continue; }
    tensor_sig *s = &j->out_sig[i];
    int64_t numel = 1;
    for (int d = 0; d < s->shape.ndim; d++) numel *= s->shape.d[d];
    outb[i] = buffer_new(device_get(s->device), s->dtype, numel);
    if (!outb[i] || buffer_alloc(outb[i]) < 0) { for (int k = 0; k <= i; k++) buffer_release(outb[k]); return -1; }
    if (j->reuse_outputs) { j->outb[i] = outb[i]; buffer_retain(outb[i]); }
  }
  /* an input that is a reused output of an earlier call (a step fed its own
   * result) is copied first: the kernels write that memory while they read
   * it (tinygrad's JIT copies such inputs too) */
  tg_buffer *copies[256];
  int ncopies = 0, rc = 0;
  for (int i = 0; i < nin && rc == 0; i++)
    for (int o = 0; o < nout; o++) {
      if (inb[i] != outb[o] && inb[i]->ptr != outb[o]->ptr) continue;
      tg_buffer *t = buffer_new(inb[i]->dev, inb[i]->dtype, inb[i]->numel);
      void *host = tg_xmalloc(inb[i]->nbytes ? inb[i]->nbytes : 1);
      rc = !t || buffer_alloc(t) < 0 || buffer_copyout(inb[i], host, inb[i]->nbytes) < 0 || buffer_copyin(t, host, inb[i]->nbytes) < 0 ? -1 : 0;
      free(host);
      if (t) copies[ncopies++] = t;
      if (rc == 0) inb[i] = t;
      break;
    }
  if (rc == 0) rc = replay_kernels(j, inb, outb);
  for (int i = 0; i < ncopies; i++) buffer_release(copies[i]);
  if (rc < 0) {
    for (int i = 0; i < nout; i++) buffer_release(outb[i]);
    return -1;
  }
  uop_pool_push();
  for (int i = 0; i < nout; i++) {
    tensor_sig *s = &j->out_sig[i];
    uop *b = uop0(OP_BUFFER, dt_scalar(s->dtype), arg_ptr(outb[i]));
    buffer_release(outb[i]);
    uop *v = mv_reshape(b, s->shape.d, s->shape.ndim);
    for (int a = 0; a < s->shape.ndim; a++) if (s->var[a]) v = uop2(OP_SHRINK_VAR, v->dtype, v, s->var[a], arg_int(a));
    out[i] = tensor_wrap(v, s->device);
  }
  uop_pool_pop();
  return 0;
}

int tg_jit_call(tg_jit *j, tg_tensor *const *in, int nin, tg_tensor **out, int nout) {
  if (!j) return tg_seterr("tg_jit_call: no JIT");
  if (nin < 0 || nout < 0 || (nin && !in) || (nout && !out)) return tg_seterr("tg_jit_call: bad input/output arrays");
  if (j->calls >= 2) {
    if (replay(j, in, nin, out, nout) < 0) return -1;
    j->calls++;
    return 0;
  }
  tg_buffer *inb[256];
  if (nin > 256 || nout > 256) return tg_seterr("tg_jit_call: at most 256 inputs and outputs");
  for (int i = 0; i < nin; i++) {
    if (!in[i]) { tensor_null_input("tg_jit_call"); return -1; }
    inb[i] = input_buffer(in[i]);
    if (!inb[i]) return -1;
    for (int k = 0; k < i; k++)
      if (inb[k] == inb[i]) return tg_seterr("tg_jit_call: inputs %d and %d share memory; the JIT needs distinct inputs", k, i);
  }
  if (j->calls == 0 && !j->capture_first) {
    if (run_step(j, in, nin, out, nout) < 0) return -1;
    j->calls = 1;
    return 0;
  }
  /* call 2: capture */
  kernel_capture_free(&j->cap);
  j->cap.keep_memory = j->prune;   /* pruned kernels' results stay in their captured buffers */
  engine_capture_begin(&j->cap);
  int rc = run_step(j, in, nin, out, nout);
  engine_capture_end();
  if (rc < 0) { kernel_capture_free(&j->cap); return -1; }
  j->nin = nin; j->nout = nout;
  j->in_sig = tg_xcalloc((size_t)(nin ? nin : 1), sizeof(tensor_sig));
  j->out_sig = tg_xcalloc((size_t)(nout ? nout : 1), sizeof(tensor_sig));
  for (int i = 0; i < nin; i++) j->in_sig[i] = sig_of(in[i]);
  for (int i = 0; i < nout; i++) {
    j->out_sig[i] = sig_of(out[i]);
    for (int a = 0; a < j->out_sig[i].shape.ndim; a++) { j->out_sig[i].var[a] = uop_dim_var(out[i]->u, a); uop_retain(j->out_sig[i].var[a]); }
    if (!uop_contiguous_buffer(out[i]->u)) return tg_seterr("tg_jit_call: output %d did not realize to memory", i);
  }
  if (j->prune) prune_constant_kernels(j, inb);
  plan(j, inb, out);
  j->captured_first = j->calls == 0;
  j->calls = 2;
  return 0;
}
