/* device.c: looking devices up by name. Devices are static singletons (cpu.c,
 * null_device.c); nothing here allocates. */
#include <strings.h>
#include "runtime/cpu_compiler.h"
#include "runtime/device.h"
#include "util/util.h"

struct tg_device *disk_device(void);   /* disk_device.c */

struct tg_device *device_get(const char *name) {
  if (!name) TG_FAIL("device_get: no device name given (known: CPU, NULL)");
  if (strcasecmp(name, "CPU") == 0) return cpu_device();
  if (strcasecmp(name, "NULL") == 0) return null_device();
  if (strcasecmp(name, "DISK") == 0) return disk_device();
  TG_FAIL("unknown device '%s' (known: CPU, NULL)", name);
}
