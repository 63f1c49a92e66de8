/* llm_pack_cache.c: a model's row-packed weights kept in a file beside the
 * compiled kernels, so a later load maps them instead of packing again.
 *
 * Packing (tg_quant_pack_rows) reads every quantized matrix of the file
 * and writes a copy into fresh memory: a 125M model's ~80 MB were about
 * half of its load, and a 7B model's 4 GB take seconds at every start. The
 * first load that packs writes the packed tensors to
 * $TG_CACHE_DIR/packed/<sha256 of the model's real path>.gguf (a GGUF file
 * used as a container: each weight's scales and quants by the weight's
 * name, with the types and shapes tg_quant_pack_rows gives them); a later
 * load of the same file, unchanged (its size, modification time, inode
 * and device recorded in the cache), by the same build of tg with the
 * same packing settings, reads them where the cache's mapping has them,
 * as it reads the model's own bytes: no packing kernels, no fresh pages
 * (the page cache's pages, shared between processes and given back under
 * memory pressure like the model's), and the model's bytes under those
 * weights are never touched. One cache file per model path: a changed
 * model's replaces it. Only on devices whose buffers are host memory
 * (the CPUs); models whose packed weights are smaller than
 * TG_PACK_CACHE_MIN_MB (default 16) pack as before; TG_PACK_CACHE=0 turns
 * it off; a cache is not written where its size would leave less than a
 * GiB free. The cached weights are the same bytes the packing would
 * write (test llm_pack_cache_same_bytes). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>
#include "llm/llm.h"
#include "io/disk_map.h"
#include "io/ggml_types.h"
#include "io/gguf_writer.h"
#include "runtime/cpu_compiler.h"
#include "runtime/device.h"
#include "util/build_id.h"
#include "util/settings.h"
#include "util/sha256.h"
#include "util/util.h"

#define PACK_CACHE_FORMAT "tg packed weights v1"

/* What a cache must record to serve this load: the model file's identity,
 * tg's build and the settings that change the packed forms. */
static char *source_identity(const tg_llm *m) {
  struct stat st;
  if (stat(m->file->path, &st) != 0) return NULL;
  strbuf sb = { 0 };
  sb_printf(&sb, "%s|%s|size %lld|mtime %lld.%09ld|ino %llu|dev %llu|rows_k %lld", PACK_CACHE_FORMAT, tg_build_identity(),
            (long long)st.st_size, (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec, (unsigned long long)st.st_ino,
            (unsigned long long)st.st_dev, (long long)setting_int(SET_TG_LLM_ROWS_K));
  return sb.s;
}

char *llm_pack_cache_path(const char *model_path) {
  char *real = realpath(model_path, NULL), *dir = compile_cache_dir();
  char *path = NULL;
  if (real && dir) {
    strbuf sb = { 0 };
    sb_printf(&sb, "%s/packed", dir);
    if (tg_mkdir_p(sb.s) == 0) {
      uint8_t d[32];
      char hex[65];
      sha256_ctx c;
      sha256_init(&c);
      sha256_field(&c, PACK_CACHE_FORMAT);
      sha256_field(&c, real);
      sha256_final(&c, d);
      sha256_hex(d, hex);
      sb_printf(&sb, "/%.32s.gguf", hex);
      path = sb.s;
    } else sb_free(&sb);
  }
  free(real);
  free(dir);
  return path;
}

void llm_pack_cache_open(tg_llm *m) {
  m->pack_cache = NULL;
  m->pack_cache_write = false;
  tg_device *dev = device_get(m->device);
  if (!setting_int(SET_TG_PACK_CACHE) || setting_on(SET_TG_LLM_NO_ROWS) || !dev || !dev->host_memory) { tg_clear_error(); return; }
  char *id = source_identity(m), *path = id ? llm_pack_cache_path(m->file->path) : NULL;
  gguf_file *f = path && access(path, R_OK) == 0 ? gguf_open(path) : NULL;
  char *have = f ? gguf_get_str(f, "tg.pack.source") : NULL;
  if (f && have && !strcmp(have, id)) m->pack_cache = f;
  else {
    if (f) gguf_close(f);
    m->pack_cache_write = id && path;
  }
  free(have);
  free(id);
  free(path);
  tg_clear_error();   /* no cache is not an error */
}

void llm_pack_cache_close(tg_llm *m) {
  if (m->pack_cache) gguf_close(m->pack_cache);
  m->pack_cache = NULL;
}

/* The cache's tensor name.s or name.q, or NULL. */
static const gguf_tensor_info *cached(const tg_llm *m, const char *key, char part) {
  char name[LLM_PACK_KEY + 4];
  snprintf(name, sizeof name, "%s.%c", key, part);
  return m->pack_cache ? gguf_find_tensor(m->pack_cache, name) : NULL;
}

bool llm_pack_cache_has(const tg_llm *m, const char *key) {
  return key && *key && cached(m, key, 's') && cached(m, key, 'q');
}

/* A cached tensor read where the mapping has it, as dt (scales F16 or
 * F32, quants bytes), in tg's shape (ne reversed). */
static tg_tensor *mapped(const tg_llm *m, const gguf_tensor_info *g, tg_dtype dt) {
  tg_shape s = { .ndim = g->n_dims };
  for (int i = 0; i < g->n_dims; i++) s.d[i] = g->ne[g->n_dims - 1 - i];
  int64_t n = 1;
  for (int i = 0; i < s.ndim; i++) n *= s.d[i];
  if ((uint64_t)n * tg_dtype_size(dt) != g->nbytes) return NULL;
  return disk_tensor_in_place(disk_tensor(g->map, g->file_offset, s, dt), m->device);
}

bool llm_pack_cache_get(const tg_llm *m, const char *key, tg_tensor **scales, tg_tensor **quants) {
  *scales = *quants = NULL;
  if (!llm_pack_cache_has(m, key)) return false;
  const gguf_tensor_info *s = cached(m, key, 's'), *q = cached(m, key, 'q');
  tg_dtype sdt = s->type == GGML_TYPE_F16 ? TG_F16 : s->type == GGML_TYPE_F32 ? TG_F32 : TG_U8;
  if (sdt == TG_U8 || q->type != GGML_TYPE_I8) return false;
  *scales = mapped(m, s, sdt);
  *quants = *scales ? mapped(m, q, TG_U8) : NULL;
  if (*quants) return true;
  tg_free(*scales);
  *scales = NULL;
  tg_clear_error();
  return false;
}

/* ---- writing */

/* The writer's tensor index: part index % 2 (scales, quants) of packed
 * entry index / 2 of those arg lists. */
static int fill_tensor(void *arg, int index, gguf_w_sink *s) {
  const llm_packed *pk = &((const llm_packed *)arg)[index / 2];
  tg_tensor *t = index % 2 ? pk->row_quants : pk->row_scales;
  size_t n = (size_t)tg_numel(t) * tg_dtype_size(tg_dtype_of(t));
  void *buf = tg_xmalloc(n ? n : 1);
  int rc = tg_data(t, buf, n) == 0 && gguf_w_sink_write(s, buf, n) == 0 ? 0 : -1;
  free(buf);
  return rc;
}

/* Adds t (packed entry's part) to w as type, its dims reversed. */
static int add_part(gguf_writer *w, const char *key, char part, uint32_t type, tg_tensor *t) {
  char name[LLM_PACK_KEY + 4];
  snprintf(name, sizeof name, "%s.%c", key, part);
  tg_shape s = tg_shape_of(t);
  if (s.ndim < 1 || s.ndim > 4) return -1;
  int64_t ne[4];
  for (int i = 0; i < s.ndim; i++) ne[i] = s.d[s.ndim - 1 - i];
  return gguf_w_add_tensor(w, name, type, s.ndim, ne, NULL) < 0 ? -1 : 0;
}

void llm_pack_cache_save(tg_llm *m) {
  if (!m->pack_cache_write) return;
  m->pack_cache_write = false;
  int64_t bytes = 0;
  int n = 0;
  for (int i = 0; i < m->npacked; i++) {
    const llm_packed *pk = &m->packed[i];
    if (!pk->row_scales) continue;
    if (!pk->key[0]) return;   /* a packed weight without a name: the cache could not serve it all */
    bytes += tg_numel(pk->row_scales) * (int64_t)tg_dtype_size(tg_dtype_of(pk->row_scales)) + tg_numel(pk->row_quants);
    n++;
  }
  if (!n || bytes < setting_int(SET_TG_PACK_CACHE_MIN_MB) * ((int64_t)1 << 20)) return;
  char *id = source_identity(m), *path = id ? llm_pack_cache_path(m->file->path) : NULL;
  struct statvfs vs;
  char *slash = path ? strrchr(path, '/') : NULL;
  if (slash) *slash = '\0';
  bool fits = slash && statvfs(path, &vs) == 0 && (double)vs.f_bavail * (double)vs.f_frsize > (double)bytes + (double)(1LL << 30);
  if (slash) *slash = '/';
  gguf_writer *w = fits ? gguf_writer_new() : NULL;
  int rc = w && gguf_w_set_str(w, "tg.pack.source", id) == 0 ? 0 : -1;
  for (int i = 0; i < m->npacked && rc == 0; i++) {
    const llm_packed *pk = &m->packed[i];
    if (!pk->row_scales) continue;
    uint32_t st = tg_dtype_of(pk->row_scales) == TG_F16 ? GGML_TYPE_F16 : GGML_TYPE_F32;
    rc = add_part(w, pk->key, 's', st, pk->row_scales) < 0 || add_part(w, pk->key, 'q', GGML_TYPE_I8, pk->row_quants) < 0 ? -1 : 0;
  }
  /* the writer's tensors in the order added: the k-th packed entry that
   * has a row-packed form gives 2k and 2k + 1 */
  if (rc == 0) {
    llm_packed *only = tg_xmalloc(sizeof *only * (size_t)n);
    int k = 0;
    for (int i = 0; i < m->npacked; i++) if (m->packed[i].row_scales) only[k++] = m->packed[i];
    rc = gguf_writer_write(w, path, fill_tensor, only);
    free(only);
  }
  if (rc < 0 && setting_int(SET_DEBUG) >= 1) fprintf(stderr, "tg: packed weights not cached (%s): %s\n", path ? path : "no cache directory", tg_error());
  if (w) gguf_writer_free(w);
  free(id);
  free(path);
  tg_clear_error();   /* the model loaded; the cache is only for the next load */
}
