/* cmd_devices.c: `tg devices`: the devices present, with their properties,
 * and why the absent backends are absent. */
#include <stdio.h>
#include "tg.h"
#include "commands.h"

static void human_bytes(int64_t b, char *buf, size_t n) {
  if (b <= 0) snprintf(buf, n, "-");
  else if (b >= (int64_t)1 << 30) snprintf(buf, n, "%.1f GiB", (double)b / (double)(1 << 30));
  else if (b >= 1 << 20) snprintf(buf, n, "%.1f MiB", (double)b / (double)(1 << 20));
  else snprintf(buf, n, "%.0f KiB", (double)b / 1024.0);
}

int cmd_devices(int argc, char **argv) {
  (void)argc; (void)argv;
  tg_device_info info[64];
  const char *absent = NULL;
  int n = tg_devices(info, 64, &absent);
  printf("%-8s %-8s %-10s %-10s %-6s %s\n", "device", "kernels", "memory", "local mem", "group", "description");
  for (int i = 0; i < n && i < 64; i++) {
    char mem[32], lmem[32], grp[16];
    human_bytes(info[i].memory, mem, sizeof mem);
    human_bytes(info[i].local_memory, lmem, sizeof lmem);
    if (info[i].max_local) snprintf(grp, sizeof grp, "%d", info[i].max_local);
    else snprintf(grp, sizeof grp, "%s", info[i].threads ? "cores" : "-");
    printf("%-8s %-8s %-10s %-10s %-6s %s\n", info[i].name, info[i].renderer, mem, lmem, grp, info[i].description);
  }
  if (absent && *absent) printf("absent:\n%s", absent);
  return 0;
}
