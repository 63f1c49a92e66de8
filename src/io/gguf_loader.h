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

/* The pieces of gguf_tensor_load, for loaders that keep the stored bytes
 * themselves (the LLM runner realizes them once and stacks matrices):
 * whether tg can load g's type, whether it is a quantized (block) type,
 * tg's shape of g (ne reversed), and g's stored form moved to device: its
 * dtype and shape for plain types, its nbytes as a 1-D U8 tensor for
 * quantized ones (tg_dequantize gives their values). */
bool gguf_tensor_loadable(const gguf_tensor_info *g);
bool gguf_tensor_quantized(const gguf_tensor_info *g);
tg_shape gguf_tensor_shape(const gguf_tensor_info *g);
tg_tensor *gguf_tensor_stored(const gguf_tensor_info *g, const char *device);
/* The same read in place from the file's mapping on host-memory devices
 * (disk_tensor_in_place: no copy, read-only): for a model's weights. */
tg_tensor *gguf_tensor_stored_in_place(const gguf_tensor_info *g, const char *device);
/* Gives back the process's pages of g's bytes in the mapping
 * (disk_map_drop_pages): after they were copied out for good. */
void gguf_tensor_drop_pages(const gguf_tensor_info *g);
/* The tensor's pages mapped in at once, before all of it is read (a
 * row-packing pass): see disk_map_prefault. */
void gguf_tensor_prefault(const gguf_tensor_info *g);

#endif
