/* fuzz_npy.c: a NumPy .npy file from untrusted bytes: magic, version, the
 * header dict (descr, fortran_order, shape), the data's size. The tensor
 * loads on DISK and, when small, is read back. */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  int fd;
  char path[64];
  if (!fuzz_file(data, size, &fd, path, sizeof path)) return 0;
  tg_scope_begin();
  tg_tensor *t = tg_npy_load(path, "DISK");
  if (t) {
    unsigned char buf[4096];
    int64_t nb = tg_numel(t) * tg_dtype_size(tg_dtype_of(t));
    if (nb <= (int64_t)sizeof buf) tg_data(t, buf, (size_t)nb);
  }
  tg_scope_end();
  close(fd);
  return 0;
}
