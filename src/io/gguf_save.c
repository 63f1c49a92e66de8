/* gguf_save.c: tg_gguf_save, a state dict as a GGUF file (gguf_writer.c),
 * realizing and writing one tensor at a time. */
#include "io/gguf_writer.h"
#include "util/util.h"
#include "tg.h"

/* The ggml type of a tg dtype GGUF can hold unconverted, or -1. */
static int ggml_type_of_dtype(tg_dtype dt) {
  switch (dt) {
    case TG_F32: return GGML_TYPE_F32;
    case TG_F16: return GGML_TYPE_F16;
    case TG_BF16: return GGML_TYPE_BF16;
    case TG_F64: return GGML_TYPE_F64;
    case TG_I8: return GGML_TYPE_I8;
    case TG_I16: return GGML_TYPE_I16;
    case TG_I32: return GGML_TYPE_I32;
    case TG_I64: return GGML_TYPE_I64;
    default: return -1;
  }
}

typedef struct { tg_tensor *const *tensors; } save_ctx;

static int fill_tensor(void *ctx, int i, gguf_w_sink *s) {
  tg_tensor *t = ((save_ctx *)ctx)->tensors[i];
  size_t n = (size_t)tg_numel(t) * (size_t)tg_dtype_size(tg_dtype_of(t));
  void *buf = malloc(n ? n : 1);
  if (!buf) return tg_seterr("gguf: out of memory for a tensor of %zu bytes", n);
  int rc = tg_data(t, buf, n) < 0 ? -1 : gguf_w_sink_write(s, buf, n);
  free(buf);
  return rc;
}

int tg_gguf_save(const char *path, const char *const *names, tg_tensor *const *tensors, int n, const char *const *metadata) {
  if (!path || n < 0 || (n > 0 && (!names || !tensors)))
    return tg_seterr("tg_gguf_save: %s", !path ? "path is NULL" : n < 0 ? "negative tensor count" : "names or tensors is NULL");
  gguf_writer *w = gguf_writer_new();
  int rc = -1;
  for (int i = 0; metadata && metadata[i]; i += 2) {
    if (!metadata[i + 1]) { tg_seterr("%s: metadata key '%s' has no value (the list is key, value, ..., NULL)", path, metadata[i]); goto done; }
    if (gguf_w_set_str(w, metadata[i], metadata[i + 1]) < 0) goto done;
  }
  for (int i = 0; i < n; i++) {
    tg_dtype dt = tg_dtype_of(tensors[i]);
    int type = ggml_type_of_dtype(dt);
    if (type < 0) {
      tg_seterr("%s: tensor '%s': GGUF has no type for %s (use float32/16, bfloat16, float64 or int8..int64; cast first)", path,
                names[i], tg_dtype_name(dt));
      goto done;
    }
    /* GGUF lists dims innermost first; a 0-d tensor is stored as [1] */
    tg_shape s = tg_shape_of(tensors[i]);
    if (s.ndim > 4) { tg_seterr("%s: tensor '%s' has %d dims; GGUF holds at most 4", path, names[i], s.ndim); goto done; }
    int64_t ne[4] = { 1, 1, 1, 1 };
    for (int d = 0; d < s.ndim; d++) ne[d] = s.d[s.ndim - 1 - d];
    if (gguf_w_add_tensor(w, names[i], (uint32_t)type, s.ndim ? s.ndim : 1, ne, NULL) < 0) {
      char msg[512];
      snprintf(msg, sizeof msg, "%s", tg_error());
      tg_seterr("%s: %s", path, msg);
      goto done;
    }
  }
  save_ctx ctx = { tensors };
  rc = gguf_writer_write(w, path, fill_tensor, &ctx);
done:
  gguf_writer_free(w);
  return rc;
}
