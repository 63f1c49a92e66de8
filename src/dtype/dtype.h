/* dtype.h: element types inside tg. The public tg_dtype names a scalar;
 * codegen also needs vectors (float4) and pointers with an address space.
 * A dtype_t packs all of it in 32 bits and compares with ==. */
#ifndef TG_DTYPE_H
#define TG_DTYPE_H

#include <stdbool.h>
#include <stdint.h>
#include "tg.h"

#define TG_VOID TG_DTYPE_COUNT        /* no value (STORE, SINK, RANGE ends) */
#define TG_NSCALAR (TG_DTYPE_COUNT + 1)

typedef enum { ADDR_NONE = 0, ADDR_GLOBAL = 1, ADDR_LOCAL = 2, ADDR_REG = 3 } addrspace;

typedef union {
  struct {
    uint8_t scalar;   /* tg_dtype or TG_VOID */
    uint8_t count;    /* vector width, 1 for a scalar */
    uint8_t addr;     /* ADDR_NONE for a value; else a pointer into that space */
    uint8_t pad;
  };
  uint32_t bits;
} dtype_t;

static inline dtype_t dt_scalar(int s) { dtype_t d = {{ (uint8_t)s, 1, 0, 0 }}; return d; }
static inline dtype_t dt_vec(dtype_t d, int n) { d.count = (uint8_t)n; return d; }
static inline dtype_t dt_ptr(dtype_t d, addrspace a) { d.addr = (uint8_t)a; return d; }
static inline dtype_t dt_base(dtype_t d) { return dt_scalar(d.scalar); }   /* drop vector and pointer */
static inline bool dt_eq(dtype_t a, dtype_t b) { return a.bits == b.bits; }
static inline bool dt_is_ptr(dtype_t d) { return d.addr != ADDR_NONE; }
#define DT_VOID dt_scalar(TG_VOID)
#define DT_BOOL dt_scalar(TG_BOOL)
#define DT_I32 dt_scalar(TG_I32)
#define DT_I64 dt_scalar(TG_I64)
#define DT_U32 dt_scalar(TG_U32)
#define DT_U64 dt_scalar(TG_U64)
#define DT_F32 dt_scalar(TG_F32)
#define DT_F64 dt_scalar(TG_F64)
/* Index arithmetic in kernels is done in this type. */
#define DT_INDEX DT_I64

bool dt_is_float(dtype_t d);      /* by scalar, ignoring vector/pointer */
bool dt_is_int(dtype_t d);        /* signed or unsigned integers (not bool) */
bool dt_is_unsigned(dtype_t d);
int dt_itemsize(dtype_t d);       /* bytes of one scalar; 0 for void */
/* Smallest and largest finite value (integers exactly, as double). */
double dt_min(dtype_t d);
double dt_max(dtype_t d);
/* Writes a readable name like "float", "float.vec(4)", "float*" into buf. */
const char *dt_str(dtype_t d, char *buf, int n);

/* Round a double to what dtype can hold, as the hardware would cast:
 * floats round to nearest even, ints wrap (two's complement), bool is != 0. */
double dt_cast_value(double v, dtype_t to);
/* Store / load one scalar of dtype d at p, through double. */
void dt_store_scalar(void *p, tg_dtype d, double v);
double dt_load_scalar(const void *p, tg_dtype d);

#endif
