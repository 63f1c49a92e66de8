/* llm_export.c: a model's one-token decode step as one C file
 * (tg_llm_export, `tg export`): the step's JIT, captured if it has not run
 * twice yet, written by tg_jit_export. */
#include "llm/llm.h"
#include "util/util.h"

int tg_llm_export(tg_llm *m, const char *path) {
  if (!m) return tg_seterr("tg_llm_export: model is NULL");
  if (llm_pp_refuse(m, "tg_llm_export") < 0) return -1;
  if (!path) return tg_seterr("tg_llm_export: path is NULL");
  int which = -1;
  for (int i = 0; i < LLM_NCHUNKS; i++) if (m->chunk[i] == 1) which = i;
  if (which < 0) return tg_seterr("internal: tg_llm_export: no one-token step");
  /* the JIT captures on its second call: decode placeholder tokens until it
   * has, then forget them (the cache rows they wrote are past n_past) */
  int saved = m->n_past;
  int32_t tok = 0;
  while (!m->jit[which] || tg_jit_stats(m->jit[which]).calls < 2) {
    if (m->n_past >= m->cfg.n_ctx) { tg_llm_rewind(m, saved); return tg_seterr("tg_llm_export: no room in the context to capture the decode step"); }
    if (tg_llm_eval(m, &tok, 1, NULL) < 0) { tg_llm_rewind(m, saved); return -1; }
  }
  tg_llm_rewind(m, saved);
  return tg_jit_export(m->jit[which], path);
}
