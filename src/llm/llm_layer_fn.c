/* llm_layer_fn.c: a model's layers as calls of tg_functions
 * (docs/functions.md). Layers of one kind (the same tensors, quantized and
 * packed the same way, sliding or not, with equal shapes) share a body, so
 * a model's N layers are built, scheduled and compiled once per kind
 * instead of N times. A call's inputs are the residual stream, the rope
 * tables and the layer's tensors as memory: a quantized weight goes in as
 * its packed bytes (or row-packed copy), and the body rebuilds its lazy
 * values and registers them as packed, so linear() takes the same paths as
 * inline. TG_LLM_FUNCTIONS=0 builds layers inline. */
#include "llm/llm.h"
#include "tensor/tensor.h"
#include "util/util.h"

#define LAYER_MAX_INPUTS 64

typedef struct llm_layer_fn {
  tg_llm *m;
  char *key;          /* per slot: '0' absent, 'f' memory, 'r' packed bytes, 'p' row-packed, 'c' float panels; then the flags */
  tg_function *fn;
  int current;        /* the layer being called: its non-tensor fields and shapes build a new body */
} llm_layer_fn;

/* l's distinct tensor slots in table order, then the caches (two ids may
 * share a field) */
static int layer_slots(llm_layer *l, tg_tensor ***slots) {
  int n = 0;
  for (int id = 0; id < LT_COUNT; id++) {
    tg_tensor **s = llm_layer_slot(l, (llm_tensor)id);
    bool dup = false;
    for (int k = 0; k < n; k++) dup |= slots[k] == s;
    if (!dup) slots[n++] = s;
  }
  slots[n++] = &l->k_cache;
  slots[n++] = &l->v_cache;
  return n;
}

static int body(void *ctx, tg_tensor *const *in, int nin, tg_tensor **out, int nout) {
  (void)nout;
  llm_layer_fn *lf = ctx;
  tg_llm *m = lf->m;
  llm_layer proto = m->layers[lf->current], *l = &proto;
  tg_tensor **slots[LT_COUNT + 2], **orig[LT_COUNT + 2];
  int ns = layer_slots(l, slots);
  layer_slots(&m->layers[lf->current], orig);
  int k = 3, saved = m->npacked;
  for (int j = 0; j < ns; j++) {
    char code = lf->key[j];
    const llm_packed *pk = code == 'r' || code == 'p' || code == 'c' ? llm_packed_of(m, *orig[j]) : NULL;
    if (code == '0') { *slots[j] = NULL; continue; }
    if (k >= nin) return tg_seterr("internal: layer function: too few inputs");
    if (code == 'f') { *slots[j] = in[k++]; continue; }
    /* a quantized weight: its lazy values over the parameters, registered
     * as packed so linear() finds them (until the body is built) */
    llm_packed p = { NULL, NULL, pk->type, NULL, NULL, NULL, "" };
    tg_shape ws = tg_shape_of(*orig[j]);
    if (code == 'c') { p.panels = in[k++]; p.w = tensor_rows_of_panels(p.panels); }
    else if (code == 'p') { p.row_scales = in[k++]; p.row_quants = in[k++]; p.w = tg_dequantize_rows(p.row_scales, p.row_quants, pk->type, ws); }
    else { p.raw = in[k++]; p.w = tg_dequantize(p.raw, pk->type, ws); }
    if (!p.w) { m->npacked = saved; return -1; }
    m->packed = tg_xrealloc(m->packed, sizeof *m->packed * (size_t)(m->npacked + 1));
    m->packed[m->npacked++] = p;
    *slots[j] = p.w;
  }
  out[0] = llm_layer_forward(m, l, in[0], in[1], in[2]);
  m->npacked = saved;   /* the registrations served the build */
  return out[0] ? 0 : -1;
}

tg_tensor *llm_layer_call(tg_llm *m, int i, tg_tensor *x, tg_tensor *cos_table, tg_tensor *sin_table) {
  llm_layer *l = &m->layers[i];
  tg_tensor **slots[LT_COUNT + 2];
  int ns = layer_slots(l, slots);
  tg_tensor *in[LAYER_MAX_INPUTS] = { x, cos_table, sin_table };
  int nin = 3;
  char key[LT_COUNT + 2 + 32];
  for (int j = 0; j < ns; j++) {
    tg_tensor *t = *slots[j];
    const llm_packed *pk = t ? llm_packed_of(m, t) : NULL;
    if (nin + 2 > LAYER_MAX_INPUTS) { tg_seterr("internal: a layer with more than %d tensors", LAYER_MAX_INPUTS); return NULL; }
    if (!t) key[j] = '0';
    else if (!pk) { key[j] = 'f'; in[nin++] = t; }
    else if (pk->panels) { key[j] = 'c'; in[nin++] = pk->panels; }
    else if (pk->row_quants) { key[j] = 'p'; in[nin++] = pk->row_scales; in[nin++] = pk->row_quants; }
    else { key[j] = 'r'; in[nin++] = pk->raw; }
  }
  snprintf(key + ns, sizeof key - (size_t)ns, "|%d|%d", l->swa, l->ring);
  llm_layer_fn *lf = NULL;
  for (int f = 0; f < m->nlayer_fns && !lf; f++) if (!strcmp(m->layer_fns[f]->key, key)) lf = m->layer_fns[f];
  if (!lf) {
    lf = tg_xcalloc(1, sizeof *lf);
    lf->m = m;
    lf->key = tg_xstrdup(key);
    char name[32];
    snprintf(name, sizeof name, "layer%d", m->nlayer_fns);
    lf->fn = tg_function_new(name, body, lf, nin, 1);
    m->layer_fns = tg_xrealloc(m->layer_fns, sizeof *m->layer_fns * (size_t)(m->nlayer_fns + 1));
    m->layer_fns[m->nlayer_fns++] = lf;
  }
  lf->current = i;
  tg_tensor *out = NULL;
  return tg_function_call(lf->fn, in, &out) == 0 ? out : NULL;
}

void llm_layer_fns_free(tg_llm *m) {
  for (int f = 0; f < m->nlayer_fns; f++) {
    tg_function_free(m->layer_fns[f]->fn);
    free(m->layer_fns[f]->key);
    free(m->layer_fns[f]);
  }
  free(m->layer_fns);
  m->layer_fns = NULL;
  m->nlayer_fns = 0;
}
