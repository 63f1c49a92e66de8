/* uop_buffer.h: how a BUFFER node holds its payload. The IR does not know what
 * a device buffer is; the runtime registers these hooks at start-up. */
#ifndef TG_UOP_BUFFER_H
#define TG_UOP_BUFFER_H
#include <stdint.h>

typedef struct {
  int64_t (*numel)(void *buf);
  void (*retain)(void *buf);
  void (*release)(void *buf);
  const char *(*describe)(void *buf);   /* short text for the printer */
} uop_buffer_hooks;

void uop_set_buffer_hooks(const uop_buffer_hooks *h);
#endif
