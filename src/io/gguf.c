/* gguf.c: GGUF tensors as tg tensors (tg_gguf_load_tensors). The parsing is
 * in gguf_file.c; here each tensor's bytes become a DISK tensor moved to the
 * requested device. Types with a tg dtype (F32 F16 BF16 F64 I8 I16 I32 I64)
 * load as that dtype. */
#include <strings.h>
#include "io/gguf_loader.h"
#include "io/io.h"
#include "util/util.h"

/* The tg dtype of a plain (unquantized) ggml type, or -1. */
static int plain_dtype(uint32_t t) {
  switch (t) {
  case GGML_TYPE_F32: return TG_F32;
  case GGML_TYPE_F16: return TG_F16;
  case GGML_TYPE_BF16: return TG_BF16;
  case GGML_TYPE_F64: return TG_F64;
  case GGML_TYPE_I8: return TG_I8;
  case GGML_TYPE_I16: return TG_I16;
  case GGML_TYPE_I32: return TG_I32;
  case GGML_TYPE_I64: return TG_I64;
  default: return -1;
  }
}

/* tg's shape of a GGUF tensor: ne[] reversed. */
static tg_shape gguf_shape(const gguf_tensor_info *g) {
  tg_shape s = { .ndim = g->n_dims };
  for (int k = 0; k < g->n_dims; k++) s.d[g->n_dims - 1 - k] = g->ne[k];
  return s;
}

bool gguf_tensor_load_supported(const gguf_tensor_info *g) { return plain_dtype(g->type) >= 0; }

tg_tensor *gguf_tensor_load(const gguf_tensor_info *g, const char *device) {
  int dt = plain_dtype(g->type);
  if (dt < 0) {
    tg_seterr("%s: tensor '%s' has ggml type %s, which tg does not load yet", g->map->path, g->name, ggml_type_info(g->type)->name);
    return NULL;
  }
  tg_tensor *t = disk_tensor(g->map, g->file_offset, gguf_shape(g), (tg_dtype)dt);
  if (t && !(device && strcasecmp(device, "DISK") == 0)) t = disk_tensor_to(t, device);
  return t;
}

int tg_gguf_load_tensors(const char *path, const char *device, tg_tensor_list *out) {
  if (!out) return tg_seterr("tg_gguf_load_tensors: no output list");
  memset(out, 0, sizeof *out);
  gguf_file *f = gguf_open(path);
  if (!f) return -1;
  int rc = -1;
  for (int i = 0; i < f->n_tensors; i++) {
    if (plain_dtype(f->tensors[i].type) < 0) {
      tg_seterr("%s: tensor '%s' has ggml type %s, which tg_gguf_load_tensors does not load yet", path, f->tensors[i].name, ggml_type_info(f->tensors[i].type)->name);
      goto done;
    }
  }
  for (int i = 0; i < f->n_tensors; i++) {
    tg_tensor *t = gguf_tensor_load(&f->tensors[i], device);
    if (!t) goto done;
    io_list_push(out, f->tensors[i].name, t);
  }
  rc = 0;
done:
  if (rc != 0) io_list_discard(out);
  gguf_close(f);
  return rc;
}
