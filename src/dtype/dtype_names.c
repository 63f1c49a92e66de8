/* dtype_names.c: a dtype from its name, as tinygrad (`to_dtype`, the
 * attributes of `dtypes`) and numpy (`np.dtype`) spell it.
 *
 * Names are matched without case (tinygrad lowers them), after an optional
 * module prefix ("dtypes.", "np.", "numpy.", "torch."). numpy's one-letter
 * codes are the exception: 'b' is int8 and 'B' uint8, so they match exactly.
 * Where tinygrad and numpy disagree, tinygrad wins: "int" and "uint" are
 * 32-bit (numpy: 64-bit) and "float" is float32 (numpy: float64). */
#include <ctype.h>
#include <strings.h>
#include <string.h>
#include "dtype/dtype.h"
#include "util/util.h"

typedef struct { const char *name; tg_dtype dt; } dtype_alias;

static const dtype_alias aliases[] = {
  /* tg's own names (tg_dtype_name) */
  { "bool", TG_BOOL }, { "int8", TG_I8 }, { "uint8", TG_U8 }, { "int16", TG_I16 }, { "uint16", TG_U16 },
  { "int32", TG_I32 }, { "uint32", TG_U32 }, { "int64", TG_I64 }, { "uint64", TG_U64 },
  { "fp8e4m3", TG_FP8E4M3 }, { "fp8e5m2", TG_FP8E5M2 },
  { "float16", TG_F16 }, { "bfloat16", TG_BF16 }, { "float32", TG_F32 }, { "float64", TG_F64 },
  /* tinygrad's aliases (dtypes.half, dtypes.uint, ...) */
  { "half", TG_F16 }, { "float", TG_F32 }, { "double", TG_F64 },
  { "uchar", TG_U8 }, { "ushort", TG_U16 }, { "uint", TG_U32 }, { "ulong", TG_U64 },
  { "char", TG_I8 }, { "short", TG_I16 }, { "int", TG_I32 }, { "long", TG_I64 },
  /* numpy's names (np.dtype(...).name and the C-type names) */
  { "bool_", TG_BOOL }, { "single", TG_F32 }, { "byte", TG_I8 }, { "ubyte", TG_U8 },
  { "intc", TG_I32 }, { "uintc", TG_U32 }, { "longlong", TG_I64 }, { "ulonglong", TG_U64 },
  { "int_", TG_I64 }, { "intp", TG_I64 }, { "uintp", TG_U64 },
  /* numpy's sized codes ("<f4" and "=f4" name the same little-endian type) */
  { "b1", TG_BOOL }, { "i1", TG_I8 }, { "u1", TG_U8 }, { "i2", TG_I16 }, { "u2", TG_U16 },
  { "i4", TG_I32 }, { "u4", TG_U32 }, { "i8", TG_I64 }, { "u8", TG_U64 },
  { "f2", TG_F16 }, { "f4", TG_F32 }, { "f8", TG_F64 },
  /* torch / ml_dtypes fp8 names, and the short float names of ggml and others */
  { "float8_e4m3fn", TG_FP8E4M3 }, { "float8_e5m2", TG_FP8E5M2 },
  { "bf16", TG_BF16 }, { "f16", TG_F16 }, { "f32", TG_F32 }, { "f64", TG_F64 },
};

/* numpy's one-letter type codes, case-sensitive */
static const dtype_alias codes[] = {
  { "?", TG_BOOL }, { "b", TG_I8 }, { "B", TG_U8 }, { "h", TG_I16 }, { "H", TG_U16 },
  { "i", TG_I32 }, { "I", TG_U32 }, { "l", TG_I64 }, { "L", TG_U64 }, { "q", TG_I64 }, { "Q", TG_U64 },
  { "e", TG_F16 }, { "f", TG_F32 }, { "d", TG_F64 },
};

#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

static bool eq_nocase(const char *a, const char *b) {
  for (; *a && *b; a++, b++)
    if (tolower((unsigned char)*a) != tolower((unsigned char)*b)) return false;
  return *a == *b;
}

static const char *strip_prefix(const char *s) {
  static const char *const prefixes[] = { "dtypes.", "numpy.", "np.", "torch." };
  for (int i = 0; i < COUNT(prefixes); i++) {
    size_t n = strlen(prefixes[i]);
    if (strncasecmp(s, prefixes[i], n) == 0) return s + n;
  }
  return s;
}

int tg_dtype_from_name(const char *name) {
  if (!name) { tg_seterr("tg_dtype_from_name: name is NULL"); return -1; }
  const char *s = strip_prefix(name);
  if (strlen(s) == 1)
    for (int i = 0; i < COUNT(codes); i++)
      if (!strcmp(s, codes[i].name)) return codes[i].dt;
  if ((s[0] == '<' || s[0] == '=' || s[0] == '|') && s[1]) s++;   /* numpy byte order: little (the host) */
  else if (s[0] == '>' && s[1]) {
    tg_seterr("tg_dtype_from_name: \"%s\" is big-endian; tg's dtypes are little-endian", name);
    return -1;
  }
  for (int i = 0; i < COUNT(aliases); i++)
    if (eq_nocase(s, aliases[i].name)) return aliases[i].dt;
  tg_seterr("tg_dtype_from_name: unknown dtype name \"%s\" (known: bool, int8..int64, uint8..uint64, float16/half, "
            "bfloat16/bf16, float32/float, float64/double, fp8e4m3, fp8e5m2, numpy codes like \"f4\" or \"<i8\"; docs/dtypes.md lists all)", name);
  return -1;
}
