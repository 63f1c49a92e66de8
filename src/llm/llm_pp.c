/* llm_pp.c: pipeline parallel over the ranks of tg_dist's world
 * (tg_llm_opts.split_layers; `mpirun -np 2 tg run --split layers`), for a
 * model that does not fit one machine's memory. Rank r of n loads, packs
 * and runs layers [r L/n, (r + 1) L/n) only (their weights and caches; the
 * file's other bytes stay unread in its mapping), the first rank the
 * embedding, the last the final norm and the output. Each rank's chunk
 * step is a JIT as on one process, with the layer range's graph: the first
 * takes the tokens, the others the hidden rows (T, dim) the rank before
 * sent; all but the last send theirs on; the last rank's logits go to
 * every rank (a broadcast), so each samples the same next token and the
 * callers' loops run alike. The ranks run one after another (one
 * sequence: no micro-batches to overlap); a rank that dies or hangs ends
 * the others through mpirun or the collectives' watchdog. */
#include <stdlib.h>
#include <string.h>
#include "llm/llm.h"
#include "tg_dist.h"
#include "util/util.h"

int llm_pp_setup(tg_llm *m, const tg_llm_opts *o) {
  int L = m->cfg.n_layers;
  m->pp_rank = 0, m->pp_size = 1, m->layer_lo = 0, m->layer_hi = L;
  if (!o->split_layers) return 0;
  const char *path = m->file->path;
  int size = tg_dist_size(), rank = tg_dist_rank();
  if (m->n_tp > 1) return tg_seterr("%s: split layers over ranks or shard over devices, not both", path);
  if (o->n_seq > 1) return tg_seterr("%s: layers split over ranks run one sequence (n_seq %d)", path, o->n_seq);
  if (size > L) return tg_seterr("%s: %d layers cannot split over %d ranks", path, L, size);
  m->pp_rank = rank, m->pp_size = size;
  m->layer_lo = (int)((int64_t)rank * L / size);
  m->layer_hi = (int)((int64_t)(rank + 1) * L / size);
  return 0;
}

int llm_pp_refuse(const tg_llm *m, const char *fn) {
  if (!m || m->pp_size <= 1) return 0;
  return tg_seterr("%s: not with the model's layers split over ranks (split_layers): tg_llm_eval only", fn);
}

/* Each chunk's rows go after a header, the chunk's size and position, so a
 * rank whose calls went another way than the rank before's (a program
 * that does not make the same calls on every rank) fails saying so
 * instead of reading rows of another chunk. */
typedef struct { int64_t T, pos; } chunk_header;

tg_tensor *llm_pp_input(tg_llm *m, const int32_t *tokens, int T) {
  if (llm_pp_first(m)) return tg_from_data(tokens, TG_SHAPE(T), TG_I32);
  chunk_header want = { T, m->n_past }, got;
  if (tg_dist_recv_host(&got, sizeof got, m->pp_rank - 1) < 0) return NULL;
  if (got.T != want.T || got.pos != want.pos)
    return tg_seterr("tg_llm_eval: rank %d ran a chunk of %lld tokens at position %lld, rank %d one of %lld at %lld: the ranks' calls differ "
                     "(with split layers every rank makes the same calls)", m->pp_rank - 1, (long long)got.T, (long long)got.pos, m->pp_rank,
                     (long long)want.T, (long long)want.pos), NULL;
  int64_t dim = m->cfg.dim;
  size_t nbytes = sizeof(float) * (size_t)T * (size_t)dim;
  float *h = tg_xmalloc(nbytes);
  tg_tensor *in = tg_dist_recv_host(h, nbytes, m->pp_rank - 1) == 0 ? tg_from_data(h, TG_SHAPE(T, dim), TG_F32) : NULL;
  free(h);
  return in;
}

int llm_pp_output(tg_llm *m, tg_tensor *out, int T, float *logits) {
  if (m->pp_size <= 1) return logits ? tg_data(out, logits, sizeof(float) * (size_t)m->cfg.n_vocab) : tg_realize(out);
  if (!llm_pp_last(m)) {
    size_t nbytes = sizeof(float) * (size_t)T * (size_t)m->cfg.dim;
    float *h = tg_xmalloc(nbytes);
    int rc = tg_data(out, h, nbytes);
    chunk_header head = { T, m->n_past };
    if (rc == 0) rc = tg_dist_send_host(&head, sizeof head, m->pp_rank + 1);
    if (rc == 0) rc = tg_dist_send_host(h, nbytes, m->pp_rank + 1);
    free(h);
    if (rc < 0) return -1;
  } else if (logits ? tg_data(out, logits, sizeof(float) * (size_t)m->cfg.n_vocab) : tg_realize(out)) {
    return -1;
  }
  return logits ? tg_dist_broadcast_host(logits, sizeof(float) * (size_t)m->cfg.n_vocab, m->pp_size - 1) : 0;
}
