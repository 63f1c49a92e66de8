/* test_llm_pack_cache.c: the packed-weights cache (src/llm/llm_pack_cache.c).
 * A load that packs writes the row-packed weights (a float file's panels)
 * to the cache; a later load of the same file reads them from there (its
 * mapping is then alive beside the model's) and is the same model: every
 * packed tensor the same bytes as packing gives, the same logits bit for
 * bit. A changed model file, a damaged cache or TG_PACK_CACHE=0 are never
 * served from it, and a deleted model's cache (and a killed writer's
 * partial file) goes when another is written. */
#include "test.h"
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "io/disk_map.h"
#include "io/gguf_llama_init.h"
#include "llm/llm.h"
#include "quant/quantize.h"

static const int32_t prompt[] = { 1, 5, 9, 13, 17, 21, 25 };

static bool write_model_typed(const char *path, uint64_t seed, const char *ftype) {
  llama_init_params p = llama_init_defaults();
  p.dim = 256; p.layers = 2; p.heads = 4; p.kv_heads = 2; p.ffn = 512; p.vocab = 300; p.ctx = 64; p.seed = seed;
  p.ft = quant_ftype_by_name(ftype);
  return p.ft && llama_init_write(path, &p, NULL) >= 0;
}
static bool write_model(const char *path, uint64_t seed) { return write_model_typed(path, seed, "Q4_K_M"); }

/* The model's packed tensors' bytes, one after another, and its logits
 * for the prompt; the live mappings while it is loaded. */
typedef struct { unsigned char *bytes; size_t n; float *logits; int vocab, maps, packed; } snapshot;

static bool load_snapshot(const char *path, snapshot *s) {
  memset(s, 0, sizeof *s);
  tg_llm *m = tg_llm_load(path, &(tg_llm_opts){ .n_ctx = 32 });
  CHECK_MSG(m != NULL, "load: %s", tg_error());
  if (!m) return false;
  s->maps = disk_maps_live();
  for (int i = 0; i < m->npacked; i++) {
    tg_tensor *t[3] = { m->packed[i].row_scales, m->packed[i].row_quants, m->packed[i].panels };
    for (int k = 0; k < 3; k++) {
      if (!t[k]) continue;
      size_t n = (size_t)tg_numel(t[k]) * tg_dtype_size(tg_dtype_of(t[k]));
      s->bytes = realloc(s->bytes, s->n + n);
      CHECK_OK(tg_data(t[k], s->bytes + s->n, n) == 0);
      s->n += n;
    }
    s->packed += t[0] || t[2];
  }
  s->vocab = m->cfg.n_vocab;
  s->logits = malloc(sizeof(float) * (size_t)s->vocab);
  CHECK_OK(tg_llm_eval(m, prompt, 7, s->logits) == 0);
  tg_llm_free(m);
  return true;
}

static void snapshot_free(snapshot *s) { free(s->bytes), free(s->logits); }

static void check_same(const snapshot *a, const snapshot *b, const char *what) {
  CHECK_MSG(a->n == b->n && a->packed == b->packed && a->n && !memcmp(a->bytes, b->bytes, a->n), "%s: packed bytes differ (%zu, %zu)", what, a->n, b->n);
  CHECK_MSG(a->vocab == b->vocab && !memcmp(a->logits, b->logits, sizeof(float) * (size_t)a->vocab), "%s: logits differ", what);
}

TEST(llm_pack_cache_same_model) {
  char path[96];
  snprintf(path, sizeof path, "/tmp/tg_test_pack_cache_%d.gguf", (int)getpid());
  CHECK_MSG(write_model(path, 3), "%s", tg_error());
  char *cache = llm_pack_cache_path(path);
  CHECK(cache != NULL);
  if (!cache) return;
  unlink(cache);
  setenv("TG_PACK_CACHE_MIN_MB", "0", 1);
  int before = disk_maps_live();
  snapshot packed, cached, again;
  /* off: nothing written */
  setenv("TG_PACK_CACHE", "0", 1);
  if (load_snapshot(path, &packed)) snapshot_free(&packed);
  CHECK_MSG(access(cache, F_OK) != 0, "TG_PACK_CACHE=0 wrote %s", cache);
  unsetenv("TG_PACK_CACHE");
  /* the first load packs and writes the cache; the second reads it */
  if (load_snapshot(path, &packed)) {
    CHECK_MSG(access(cache, R_OK) == 0, "no cache at %s", cache);
    CHECK_EQ_INT(packed.maps, before + 1);   /* the model's mapping */
    if (load_snapshot(path, &cached)) {
      CHECK_EQ_INT(cached.maps, before + 2);   /* and the cache's */
      check_same(&packed, &cached, "from the cache");
      snapshot_free(&cached);
    }
    /* a damaged cache is not read (and is replaced) */
    FILE *f = fopen(cache, "r+b");
    CHECK(f != NULL);
    if (f) { fwrite("XXXX", 1, 4, f); fclose(f); }
    if (load_snapshot(path, &again)) {
      CHECK_EQ_INT(again.maps, before + 1);
      check_same(&packed, &again, "with a damaged cache");
      snapshot_free(&again);
    }
    if (load_snapshot(path, &again)) {
      CHECK_EQ_INT(again.maps, before + 2);   /* rewritten, read again */
      snapshot_free(&again);
    }
    snapshot_free(&packed);
  }
  /* another model at the same path: the old cache is not read */
  sleep(1);   /* (a modification time of its own, even on coarse clocks) */
  CHECK_MSG(write_model(path, 4), "%s", tg_error());
  snapshot other, other_cached;
  if (load_snapshot(path, &other)) {
    CHECK_EQ_INT(other.maps, before + 1);
    if (load_snapshot(path, &other_cached)) {
      CHECK_EQ_INT(other_cached.maps, before + 2);
      check_same(&other, &other_cached, "the new model from the cache");
      snapshot_free(&other_cached);
    }
    snapshot_free(&other);
  }
  unsetenv("TG_PACK_CACHE_MIN_MB");
  unlink(cache);
  unlink(path);
  free(cache);
}

/* A float file's panels come from the cache too; the cache of a model that
 * is gone is removed when another model's is written. */
TEST(llm_pack_cache_panels_and_stale) {
  char f16[96], q[96];
  snprintf(f16, sizeof f16, "/tmp/tg_test_pack_cache_f16_%d.gguf", (int)getpid());
  snprintf(q, sizeof q, "/tmp/tg_test_pack_cache_q_%d.gguf", (int)getpid());
  CHECK_MSG(write_model_typed(f16, 5, "F16") && write_model(q, 6), "%s", tg_error());
  char *cf = llm_pack_cache_path(f16), *cq = llm_pack_cache_path(q);
  CHECK(cf && cq);
  if (!cf || !cq) { free(cf), free(cq); return; }
  unlink(cf), unlink(cq);
  setenv("TG_PACK_CACHE_MIN_MB", "0", 1);
  int before = disk_maps_live();
  snapshot a, b;
  if (load_snapshot(f16, &a)) {
    CHECK_MSG(a.packed > 0 && access(cf, R_OK) == 0, "%d panels, cache %s", a.packed, cf);
    if (load_snapshot(f16, &b)) {
      CHECK_EQ_INT(b.maps, before + 2);
      check_same(&a, &b, "F16 panels from the cache");
      snapshot_free(&b);
    }
    snapshot_free(&a);
  }
  unlink(f16);
  /* and a killed writer's partial file, two hours old */
  char partial[512];
  snprintf(partial, sizeof partial, "%s.tmp.abcdef", cq);
  FILE *pf = fopen(partial, "wb");
  if (pf) fclose(pf);
  struct timespec old[2] = { { time(NULL) - 7200, 0 }, { time(NULL) - 7200, 0 } };
  CHECK_OK(utimensat(AT_FDCWD, partial, old, 0) == 0);
  if (load_snapshot(q, &a)) snapshot_free(&a);   /* writes q's cache, and drops f16's */
  CHECK_MSG(access(cq, R_OK) == 0, "no cache at %s", cq);
  CHECK_MSG(access(cf, F_OK) != 0, "the deleted model's cache %s is still there", cf);
  CHECK_MSG(access(partial, F_OK) != 0, "the old partial file %s is still there", partial);
  unsetenv("TG_PACK_CACHE_MIN_MB");
  unlink(cq), unlink(q);
  free(cf), free(cq);
}
