/* llm_pack_cache.c: a model's row-packed weights kept in a file beside the
 * compiled kernels, so a later load maps them instead of packing again.
 *
 * Packing (tg_quant_pack_rows; a float file's panels,
 * tensor_panels_of_rows) reads every matrix it applies to and writes a
 * copy into fresh memory: a 125M Q4_K_M model's 63 MiB were about
 * half of its load, and a 7B model's 4 GB take seconds at every start. The
 * first load that packs writes the packed tensors to
 * $TG_CACHE_DIR/packed/<sha256 of the model's real path>.gguf (a GGUF file
 * used as a container: each weight's scales and quants, or panels, by the
 * weight's name, with the types and shapes packing gives them); a later
 * load of the same file, unchanged (its size, modification time, inode
 * and device recorded in the cache), by the same build of tg with the
 * same packing settings, reads them where the cache's mapping has them,
 * as it reads the model's own bytes: no packing kernels, no fresh pages
 * (the page cache's pages, shared between processes and given back under
 * memory pressure like the model's), and the model's bytes under those
 * weights are never touched. One cache file per model path: a changed
 * model's replaces it, and writing one removes those whose model is gone
 * or changed. Only on devices whose buffers are host memory
 * (the CPUs); models whose packed weights are smaller than
 * TG_PACK_CACHE_MIN_MB (default 16) pack as before; TG_PACK_CACHE=0 turns
 * it off; a cache is not written where its size would leave less than a
 * GiB free. The cached weights are the same bytes the packing would
 * write (tests/test_llm_pack_cache.c). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>
#include "llm/llm.h"
#include "io/disk_map.h"
#include "io/ggml_types.h"
#include "io/gguf_writer.h"
#include "runtime/cache_dir.h"
#include "runtime/device.h"
#include "util/build_id.h"
#include "util/settings.h"
#include "util/sha256.h"
#include "util/util.h"

#define PACK_CACHE_FORMAT "tg packed weights v1"

/* What a cache must record to serve this load: the model file's identity,
 * tg's build and the settings that change the packed forms. */
static char *source_identity(const char *model_path) {
  struct stat st;
  if (stat(model_path, &st) != 0) return NULL;
  strbuf sb = { 0 };
  sb_printf(&sb, "%s|%s|size %lld|mtime %lld.%09ld|ino %llu|dev %llu|rows_k %lld", PACK_CACHE_FORMAT, tg_build_identity(),
            (long long)st.st_size, (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec, (unsigned long long)st.st_ino,
            (unsigned long long)st.st_dev, (long long)setting_int(SET_TG_LLM_ROWS_K));
  return sb.s;
}

char *llm_pack_cache_path(const char *model_path) {
  char *real = realpath(model_path, NULL), *dir = cache_dir();
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
  /* (layers split over ranks: each rank packs its own, one file's cache would not hold them) */
  if (!setting_int(SET_TG_PACK_CACHE) || setting_on(SET_TG_LLM_NO_ROWS) || !dev || !dev->host_memory || m->pp_size > 1) { tg_clear_error(); return; }
  char *id = source_identity(m->file->path), *path = id ? llm_pack_cache_path(m->file->path) : NULL;
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

/* The cache's tensor key.part, or NULL. */
static const gguf_tensor_info *cached(const tg_llm *m, const char *key, char part) {
  char name[LLM_PACK_KEY + 4];
  snprintf(name, sizeof name, "%s.%c", key, part);
  return m->pack_cache && key && *key ? gguf_find_tensor(m->pack_cache, name) : NULL;
}

bool llm_pack_cache_has(const tg_llm *m, const char *key, char part) { return cached(m, key, part) != NULL; }

/* GGUF's type of a cached part's dtype, and back (quants, bytes, as I8). */
static uint32_t ggml_of(tg_dtype dt) {
  return dt == TG_F16 ? GGML_TYPE_F16 : dt == TG_BF16 ? GGML_TYPE_BF16 : dt == TG_F32 ? GGML_TYPE_F32 : GGML_TYPE_I8;
}
static tg_dtype dtype_of(uint32_t t) {
  return t == GGML_TYPE_F16 ? TG_F16 : t == GGML_TYPE_BF16 ? TG_BF16 : t == GGML_TYPE_F32 ? TG_F32 : TG_U8;
}

tg_tensor *llm_pack_cache_tensor(const tg_llm *m, const char *key, char part) {
  const gguf_tensor_info *g = cached(m, key, part);
  if (!g || (g->type != GGML_TYPE_F16 && g->type != GGML_TYPE_BF16 && g->type != GGML_TYPE_F32 && g->type != GGML_TYPE_I8)) return NULL;
  tg_dtype dt = dtype_of(g->type);
  tg_shape s = { .ndim = g->n_dims };
  int64_t n = 1;
  for (int i = 0; i < g->n_dims; i++) s.d[i] = g->ne[g->n_dims - 1 - i], n *= s.d[i];
  if ((uint64_t)n * tg_dtype_size(dt) != g->nbytes) return NULL;
  tg_tensor *t = disk_tensor_in_place(disk_tensor(g->map, g->file_offset, s, dt), m->device);
  if (!t) tg_clear_error();
  return t;
}

/* ---- writing */

/* The writer's tensor index is arg's (the tensors, in the order added). */
static int fill_tensor(void *arg, int index, gguf_w_sink *s) {
  tg_tensor *t = ((tg_tensor **)arg)[index];
  size_t n = (size_t)tg_numel(t) * tg_dtype_size(tg_dtype_of(t));
  void *buf = tg_xmalloc(n ? n : 1);
  int rc = tg_data(t, buf, n) == 0 && gguf_w_sink_write(s, buf, n) == 0 ? 0 : -1;
  free(buf);
  return rc;
}

/* Adds t (a packed entry's part) to w as its type, its dims reversed. */
static int add_part(gguf_writer *w, const char *key, char part, tg_tensor *t) {
  char name[LLM_PACK_KEY + 4];
  snprintf(name, sizeof name, "%s.%c", key, part);
  tg_shape s = tg_shape_of(t);
  if (s.ndim < 1 || s.ndim > 4) return -1;
  int64_t ne[4];
  for (int i = 0; i < s.ndim; i++) ne[i] = s.d[s.ndim - 1 - i];
  return gguf_w_add_tensor(w, name, ggml_of(tg_dtype_of(t)), s.ndim, ne, NULL) < 0 ? -1 : 0;
}

/* The cache files in dir whose model is gone or changed (their recorded
 * path no longer names a file of the identity they hold) are removed: one
 * file per model path is written, and nothing else would ever drop them;
 * so are the partial files of writes that stopped an hour ago or more (a
 * killed process's). */
static void prune_stale(const char *dir) {
  DIR *d = opendir(dir);
  struct dirent *e;
  while (d && (e = readdir(d))) {
    size_t n = strlen(e->d_name);
    strbuf p = { 0 };
    sb_printf(&p, "%s/%s", dir, e->d_name);
    struct stat st;
    if (strstr(e->d_name, ".gguf.tmp.") && stat(p.s, &st) == 0 && time(NULL) - st.st_mtime > 3600) unlink(p.s);
    if (n < 6 || strcmp(e->d_name + n - 5, ".gguf")) { sb_free(&p); continue; }
    gguf_file *f = gguf_open(p.s);
    char *model = f ? gguf_get_str(f, "tg.pack.model") : NULL, *have = f ? gguf_get_str(f, "tg.pack.source") : NULL;
    char *now = model ? source_identity(model) : NULL;
    if (f && (!now || !have || strcmp(now, have))) unlink(p.s);
    if (f) gguf_close(f);
    free(model), free(have), free(now);
    sb_free(&p);
  }
  if (d) closedir(d);
  tg_clear_error();
}

void llm_pack_cache_save(tg_llm *m) {
  if (!m->pack_cache_write) return;
  m->pack_cache_write = false;
  int64_t bytes = 0;
  int n = 0;
  tg_tensor **parts = tg_xmalloc(sizeof *parts * (size_t)(3 * m->npacked + 1));
  for (int i = 0; i < m->npacked; i++) {
    const llm_packed *pk = &m->packed[i];
    tg_tensor *t[3] = { pk->row_scales, pk->row_quants, pk->panels };
    if (!t[0] && !t[2]) continue;
    if (!pk->key[0]) { free(parts); return; }   /* a packed weight without a name: the cache could not serve it all */
    for (int k = 0; k < 3; k++)
      if (t[k]) parts[n++] = t[k], bytes += tg_numel(t[k]) * (int64_t)tg_dtype_size(tg_dtype_of(t[k]));
  }
  char *real = realpath(m->file->path, NULL), *id = real ? source_identity(real) : NULL, *path = id ? llm_pack_cache_path(real) : NULL;
  char *slash = path ? strrchr(path, '/') : NULL;
  struct statvfs vs;
  if (slash) *slash = '\0';
  bool fits = slash && n && bytes >= setting_int(SET_TG_PACK_CACHE_MIN_MB) * ((int64_t)1 << 20) && statvfs(path, &vs) == 0 &&
              (double)vs.f_bavail * (double)vs.f_frsize > (double)bytes + (double)(1LL << 30);
  if (fits) prune_stale(path);
  if (slash) *slash = '/';
  gguf_writer *w = fits ? gguf_writer_new() : NULL;
  int rc = w && gguf_w_set_str(w, "tg.pack.source", id) == 0 && gguf_w_set_str(w, "tg.pack.model", real) == 0 ? 0 : -1;
  for (int i = 0; i < m->npacked && rc == 0; i++) {
    const llm_packed *pk = &m->packed[i];
    if (pk->row_scales) rc = add_part(w, pk->key, 's', pk->row_scales) < 0 || add_part(w, pk->key, 'q', pk->row_quants) < 0 ? -1 : 0;
    if (pk->panels && rc == 0) rc = add_part(w, pk->key, 'p', pk->panels);
  }
  if (rc == 0) rc = gguf_writer_write(w, path, fill_tensor, parts);   /* (the parts in the order added) */
  if (fits && rc < 0 && setting_int(SET_DEBUG) >= 1) fprintf(stderr, "tg: packed weights not cached (%s): %s\n", path, tg_error());
  if (w) gguf_writer_free(w);
  free(parts);
  free(real), free(id), free(path);
  tg_clear_error();   /* the model loaded; the cache is only for the next load */
}
