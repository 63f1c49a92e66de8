/* uop_call.h: what a CALL node points at. CALL(args...) is output `out` of a
 * function body (schedule/call.h) applied to args; the node's shape and
 * dtype are those of the body's output. The IR holds the body through
 * these hooks (the function layer registers them), so a CALL node keeps its
 * body alive however long the tensors built on it live. */
#ifndef TG_UOP_CALL_H
#define TG_UOP_CALL_H

struct uop;

typedef struct uop_call_target {
  struct uop *value;     /* the body's output: its graph over the parameters */
  void *body;            /* the body, opaque to the IR */
  int out;               /* which output */
} uop_call_target;

typedef struct {
  void (*retain)(void *body);
  void (*release)(void *body);
  const char *(*name)(void *body);   /* for the printer */
} uop_call_hooks;

void uop_set_call_hooks(const uop_call_hooks *h);
#endif
