/* gguf.c: GGUF tensors as tg tensors (tg_gguf_load_tensors). The parsing is
 * in gguf_file.c; here each tensor's bytes become a DISK tensor moved to the
 * requested device. Types with a tg dtype (F32 F16 BF16 F64 I8 I16 I32 I64)
 * load as that dtype; quantized types load as their packed bytes (U8, moved
 * to the device once) under the lazy dequantization graph of tg_dequantize,
 * so the weights stay packed in memory and consumers fuse the decoding. */
#include <strings.h>
#include "io/gguf_loader.h"
#include "io/io.h"
#include "tg_quant.h"
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

tg_shape gguf_tensor_shape(const gguf_tensor_info *g) {
  tg_shape s = { .ndim = g->n_dims };
  for (int k = 0; k < g->n_dims; k++) s.d[g->n_dims - 1 - k] = g->ne[k];
  return s;
}

bool gguf_tensor_quantized(const gguf_tensor_info *g) { return plain_dtype(g->type) < 0; }
bool gguf_tensor_loadable(const gguf_tensor_info *g) { return !gguf_tensor_quantized(g) || tg_ggml_type_dequantizable((int)g->type); }

static tg_tensor *stored_on(const gguf_tensor_info *g, const char *device, bool in_place) {
  if (!gguf_tensor_loadable(g)) {
    tg_seterr("%s: tensor '%s' has ggml type %s, which tg cannot load", g->map->path, g->name, ggml_type_info(g->type)->name);
    return NULL;
  }
  int dt = plain_dtype(g->type);
  tg_tensor *t = disk_tensor(g->map, g->file_offset, dt >= 0 ? gguf_tensor_shape(g) : TG_SHAPE((int64_t)g->nbytes), dt >= 0 ? (tg_dtype)dt : TG_U8);
  if (!t || (device && strcasecmp(device, "DISK") == 0)) return t;
  return in_place ? disk_tensor_in_place(t, device) : disk_tensor_to(t, device);
}

tg_tensor *gguf_tensor_stored(const gguf_tensor_info *g, const char *device) { return stored_on(g, device, false); }
tg_tensor *gguf_tensor_stored_in_place(const gguf_tensor_info *g, const char *device) { return stored_on(g, device, true); }

void gguf_tensor_drop_pages(const gguf_tensor_info *g) { disk_map_drop_pages(g->map, g->file_offset, g->nbytes); }
void gguf_tensor_prefault(const gguf_tensor_info *g) { disk_map_prefault(g->map, g->file_offset, g->nbytes); }

tg_tensor *gguf_tensor_load(const gguf_tensor_info *g, const char *device) {
  if (gguf_tensor_quantized(g) && device && strcasecmp(device, "DISK") == 0) {
    tg_seterr("%s: tensor '%s' has ggml type %s, which tg cannot load on DISK (its values are computed)", g->map->path, g->name,
              ggml_type_info(g->type)->name);
    return NULL;
  }
  tg_tensor *t = gguf_tensor_stored(g, device);
  if (t && gguf_tensor_quantized(g)) {
    tg_tensor *raw = t;
    t = tg_dequantize(raw, (int)g->type, gguf_tensor_shape(g));
    tg_free(raw);   /* the graph of t holds the bytes */
  }
  return t;
}

int tg_gguf_load_tensors(const char *path, const char *device, tg_tensor_list *out) {
  if (!out) return tg_seterr("tg_gguf_load_tensors: no output list");
  memset(out, 0, sizeof *out);
  gguf_file *f = gguf_open(path);
  if (!f) return -1;
  int rc = -1;
  const bool on_disk = device && strcasecmp(device, "DISK") == 0;
  for (int i = 0; i < f->n_tensors; i++) {
    const gguf_tensor_info *g = &f->tensors[i];
    bool quant = gguf_tensor_quantized(g);
    if (!gguf_tensor_loadable(g)) {
      tg_seterr("%s: tensor '%s' has ggml type %s, which tg_gguf_load_tensors does not load", path, g->name, ggml_type_info(g->type)->name);
      goto done;
    }
    if (quant && on_disk) {
      tg_seterr("%s: tensor '%s' is quantized (%s): its values are computed, which needs a compute device, not DISK "
                "(tg_from_file gives its raw bytes)", path, g->name, ggml_type_info(g->type)->name);
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
