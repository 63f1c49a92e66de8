/* build_id.c: see build_id.h. */
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <pthread.h>
#include <sys/stat.h>
#include "util/build_id.h"
#include "util/util.h"

typedef struct { uintptr_t addr; char hex[2 * 64 + 1]; } build_id_search;

/* The NT_GNU_BUILD_ID note of the loaded object holding s->addr. */
static int find_build_id(struct dl_phdr_info *info, size_t size, void *p) {
  (void)size;
  build_id_search *s = p;
  bool mine = false;
  for (int i = 0; i < info->dlpi_phnum && !mine; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
    mine = ph->p_type == PT_LOAD && s->addr >= lo && s->addr < lo + ph->p_memsz;
  }
  if (!mine) return 0;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_NOTE) continue;
    const unsigned char *q = (const unsigned char *)(info->dlpi_addr + ph->p_vaddr), *end = q + ph->p_memsz;
    while (q + sizeof(ElfW(Nhdr)) <= end) {
      const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)q;
      size_t name_sz = (nh->n_namesz + 3u) & ~3u, desc_sz = (nh->n_descsz + 3u) & ~3u;
      const unsigned char *name = q + sizeof *nh, *desc = name + name_sz;
      if (desc + desc_sz > end) break;
      if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && !memcmp(name, "GNU", 4) && nh->n_descsz && nh->n_descsz <= 64) {
        for (unsigned k = 0; k < nh->n_descsz; k++) snprintf(s->hex + 2 * k, 3, "%02x", desc[k]);
        return 1;
      }
      q = desc + desc_sz;
    }
  }
  return 1;   /* our object, without a build id */
}

static char build_identity[256];
static pthread_once_t build_identity_once = PTHREAD_ONCE_INIT;

static void read_build_identity(void) {
  build_id_search s = { (uintptr_t)(void *)&tg_build_identity, "" };
  dl_iterate_phdr(find_build_id, &s);
  if (s.hex[0]) { snprintf(build_identity, sizeof build_identity, "build-id %s", s.hex); return; }
  Dl_info di;
  struct stat st;
  if (dladdr((void *)&tg_build_identity, &di) && di.dli_fname && stat(di.dli_fname, &st) == 0)
    snprintf(build_identity, sizeof build_identity, "file %s %lld %lld.%09ld", di.dli_fname, (long long)st.st_size,
             (long long)st.st_mtim.tv_sec, (long)st.st_mtim.tv_nsec);
  else
    snprintf(build_identity, sizeof build_identity, "unknown %s %s", __DATE__, __TIME__);
}

const char *tg_build_identity(void) {
  pthread_once(&build_identity_once, read_build_identity);
  return build_identity;
}

