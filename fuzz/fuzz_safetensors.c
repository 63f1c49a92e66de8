/* fuzz_safetensors.c: a safetensors file from untrusted bytes: its JSON
 * header, offsets and dtypes. The tensors load on DISK (the file's bytes)
 * and the small ones are read back with tg_data. */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  int fd;
  char path[64];
  if (!fuzz_file(data, size, &fd, path, sizeof path)) return 0;
  tg_scope_begin();
  tg_tensor_list l = { 0 };
  if (tg_safetensors_load(path, "DISK", &l) == 0) {
    unsigned char buf[4096];
    for (int i = 0; i < l.n; i++) {
      tg_tensor_list_get(&l, l.names[i]);
      int64_t nb = tg_numel(l.t[i]) * tg_dtype_size(tg_dtype_of(l.t[i]));
      if (nb <= (int64_t)sizeof buf) tg_data(l.t[i], buf, (size_t)nb);
    }
    tg_tensor_list_free(&l);
  }
  tg_scope_end();
  close(fd);
  return 0;
}
