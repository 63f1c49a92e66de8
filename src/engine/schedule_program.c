/* schedule_program.c: tg_schedule, a schedule kept as a program (linear.h): built
 * once, inspected, run again with other variable values. The tensors it
 * was made from become views of its outputs at its first run. */
#include "engine/linear.h"
#include "engine/realize.h"
#include "runtime/buffer.h"
#include "tensor/shard.h"
#include "tensor/tensor.h"

struct tg_schedule {
  linear l;
  uop **from, **to;   /* what realized nodes become (retained), applied at the first run */
  int nbecomes;
  bool ran;
};

tg_schedule *tg_schedule_new(tg_tensor *const *ts, int n) {
  if (n < 1 || !ts) TG_FAIL("tg_schedule_new: %s (n %d)", ts ? "no tensors" : "NULL tensor array", n);
  for (int i = 0; i < n; i++) if (!ts[i]) { tensor_null_input("tg_schedule_new"); return NULL; }
  uop_pool_push();
  uop **roots = tg_xmalloc(sizeof(uop *) * (size_t)n);
  for (int i = 0; i < n; i++) roots[i] = ts[i]->u;
  tg_schedule *lin = NULL;
  ptrmap becomes = { 0 };
  lin = tg_xcalloc(1, sizeof *lin);
  /* sharded tensors: lowered to each device's graph, their allreduces and
   * copies calls of the linear like its kernels */
  int rc = shard_graph_has_multi(roots, n) ? shard_linearize(roots, n, ts[0]->device, &becomes, &lin->l)
                                           : engine_linearize(roots, n, shard_first_device(ts[0]->device), &becomes, &lin->l);
  if (rc < 0) { linear_free(&lin->l); free(lin); lin = NULL; }
  if (lin) {
    lin->from = tg_xmalloc(sizeof(uop *) * (becomes.n ? becomes.n : 1));
    lin->to = tg_xmalloc(sizeof(uop *) * (becomes.n ? becomes.n : 1));
    for (size_t k = 0; k < becomes.cap; k++)
      if (becomes.e[k].key) {
        lin->from[lin->nbecomes] = becomes.e[k].key;
        lin->to[lin->nbecomes] = becomes.e[k].val;
        uop_retain(lin->from[lin->nbecomes]);
        uop_retain(lin->to[lin->nbecomes++]);
      }
  }
  pm_free(&becomes);
  free(roots);
  uop_pool_pop();
  return lin;
}

void tg_schedule_free(tg_schedule *lin) {
  if (!lin) return;
  linear_free(&lin->l);
  for (int i = 0; i < lin->nbecomes; i++) { uop_release(lin->from[i]); uop_release(lin->to[i]); }
  free(lin->from); free(lin->to);
  free(lin);
}

int tg_schedule_count(const tg_schedule *lin) { return lin ? linear_count(&lin->l) : tg_seterr("tg_schedule_count: no schedule"); }

int tg_schedule_call(const tg_schedule *lin, int i, tg_schedule_entry *out) {
  if (!lin || !out) return tg_seterr("tg_schedule_call: %s", lin ? "NULL output" : "no schedule");
  int n = linear_count(&lin->l);
  if (i < 0 || i >= n) return tg_seterr("tg_schedule_call: call %d of %d", i, n);
  /* listed kernel by kernel: a function call's entry becomes its kernels,
   * each with buffers of its own (the same program, run the same way) */
  linear_flatten((linear *)&lin->l);
  const linear_call *c = &lin->l.v[i];
  schedule_entry_fill(out, c->name, c->dev, c->bufs, c->nbufs, !c->prog);
  return 0;
}

static int cmp_name(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

int tg_schedule_vars(const tg_schedule *lin, const char **names, int max) {
  if (!lin) return tg_seterr("tg_schedule_vars: no schedule");
  if (max < 0 || (max > 0 && !names)) return tg_seterr("tg_schedule_vars: %s (max %d)", names ? "negative max" : "NULL names", max);
  VEC(const char *) all = { 0 };
  for (int i = 0; i < lin->l.n; i++) {
    const linear_call *c = &lin->l.v[i];
    for (int k = 0; k < (c->call ? c->body->nk : 1); k++) {   /* a function call's: its body's kernels */
      const linear_call *kc = c->call ? &c->body->k[k] : c;
      for (int v = 0; v < kc->nvars; v++) {
        bool seen = false;
        for (int q = 0; q < all.n && !seen; q++) seen = !strcmp(all.v[q], kc->varnames[v]);
        if (!seen) VEC_PUSH(all, kc->varnames[v]);
      }
    }
  }
  if (all.n) qsort(all.v, (size_t)all.n, sizeof(const char *), cmp_name);
  for (int k = 0; k < all.n && k < max; k++) names[k] = all.v[k];
  int n = all.n;
  VEC_FREE(all);
  return n;
}

int tg_schedule_run(tg_schedule *lin, const char *const *names, const int64_t *values, int n) {
  if (!lin) return tg_seterr("tg_schedule_run: no schedule");
  var_values given = { names, values, n };
  if (vars_check_given("tg_schedule_run", &given) < 0) return -1;
  if (linear_run(&lin->l, &given) < 0) return -1;
  if (!lin->ran) {   /* the tensors become views of the outputs */
    ptrmap becomes = { 0 };
    for (int i = 0; i < lin->nbecomes; i++) pm_put(&becomes, lin->from[i], lin->to[i]);
    autograd_note_realized(&becomes);
    tensors_substitute(&becomes);
    pm_free(&becomes);
    lin->ran = true;
  }
  return 0;
}
