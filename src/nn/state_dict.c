/* state_dict.c: named tensors (tg_state_dict) and parameter ownership. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "nn/nn_layers.h"
#include "tensor/tensor.h"
#include "util/util.h"

tg_tensor *nn_own(tg_tensor *t, bool grad) {
  if (!t) return NULL;
  tg_tensor *c = tg_contiguous(t);
  if (!c || tg_realize(c) < 0) { tg_free(c); tg_free(t); return NULL; }
  if (c != t) tg_free(t);
  tg_requires_grad(c, grad);
  tensor_adopt(NULL, c);
  return c;
}

int nn_state_add(tg_state_dict *sd, const char *prefix, const char *name, tg_tensor *t) {
  if (!t) return 0;   /* absent (no bias): nothing to add */
  char buf[512];
  int k = prefix && *prefix ? snprintf(buf, sizeof buf, "%s.%s", prefix, name) : snprintf(buf, sizeof buf, "%s", name);
  if (k < 0 || (size_t)k >= sizeof buf)
    return tg_seterr("state dict: the name '%.40s...' of %d bytes is longer than %zu", buf, k, sizeof buf - 1);
  return tg_state_dict_add(sd, buf, t);
}

int nn_state_args(const char *fn, const void *layer, const tg_state_dict *sd) {
  if (!layer) return tg_seterr("%s: layer is NULL", fn);
  if (!sd) return tg_seterr("%s: state dict sd is NULL", fn);
  return 0;
}

tg_state_dict *tg_state_dict_new(void) {
  return tg_xcalloc(1, sizeof(tg_state_dict));
}

void tg_state_dict_free(tg_state_dict *sd) {
  if (!sd) return;
  for (int i = 0; i < sd->n; i++) free(sd->names[i]);
  free(sd->names);
  free(sd->tensors);
  free(sd);
}

int tg_state_dict_add(tg_state_dict *sd, const char *name, tg_tensor *t) {
  if (!sd || !name || !t) return tg_seterr("tg_state_dict_add: %s is NULL", !sd ? "the state dict" : !name ? "the name" : "the tensor");
  if (tg_state_dict_get(sd, name)) return tg_seterr("tg_state_dict_add: '%s' is already in the state dict", name);
  if (sd->n == sd->cap) {
    sd->cap = sd->cap ? sd->cap * 2 : 16;
    sd->names = tg_xrealloc(sd->names, sizeof(char *) * (size_t)sd->cap);
    sd->tensors = tg_xrealloc(sd->tensors, sizeof(tg_tensor *) * (size_t)sd->cap);
  }
  size_t len = strlen(name) + 1;
  sd->names[sd->n] = memcpy(tg_xmalloc(len), name, len);
  sd->tensors[sd->n++] = t;
  return 0;
}

tg_tensor *tg_state_dict_get(const tg_state_dict *sd, const char *name) {
  if (!sd || !name) TG_FAIL("tg_state_dict_get: %s is NULL", !sd ? "state dict sd" : "name");
  for (int i = 0; i < sd->n; i++) if (!strcmp(sd->names[i], name)) return sd->tensors[i];
  return NULL;
}

int tg_state_dict_parameters(const tg_state_dict *sd, tg_tensor **out, int max) {
  if (!sd) return tg_seterr("tg_state_dict_parameters: state dict sd is NULL");
  if (max < 0) return tg_seterr("tg_state_dict_parameters: max is negative (%d)", max);
  int n = 0;
  for (int i = 0; i < sd->n; i++)
    if (tg_get_requires_grad(sd->tensors[i])) { if (out && n < max) out[n] = sd->tensors[i]; n++; }
  return n;
}

int tg_state_dict_realize(const tg_state_dict *sd) {
  if (!sd) return tg_seterr("tg_state_dict_realize: state dict sd is NULL");
  if (sd->n == 0) return 0;
  return tg_realize_all(sd->tensors, sd->n);
}
