/* gguf_loader.h: one GGUF tensor as a tg tensor (for loaders such as the
 * LLM runner that walk a gguf_file themselves). */
#ifndef TG_IO_GGUF_LOADER_H
#define TG_IO_GGUF_LOADER_H

#include "io/gguf_file.h"
#include "tg.h"

/* A lazy tensor of g's values moved to device (NULL: the default; "DISK":
 * the file bytes themselves), in tg's shape (ne reversed), in the current
 * scope. NULL + tg_error for a type tg cannot load. */
tg_tensor *gguf_tensor_load(const gguf_tensor_info *g, const char *device);
/* Whether gguf_tensor_load takes g's type as a plain dtype (no dequantizing). */
bool gguf_tensor_load_supported(const gguf_tensor_info *g);

#endif
