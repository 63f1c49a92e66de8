/* sha256.h: SHA-256, for the names of cache files (runtime/compile_cache.c)
 * and the digests of graphs kept in them (uop/uop_serial.h). */
#ifndef TG_UTIL_SHA256_H
#define TG_UTIL_SHA256_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct { uint32_t h[8]; uint8_t buf[64]; size_t nbuf; uint64_t total; } sha256_ctx;

void sha256_init(sha256_ctx *c);
void sha256_update(sha256_ctx *c, const void *data, size_t n);
void sha256_final(sha256_ctx *c, uint8_t out[32]);
/* A string with its length first, so ("ab","c") and ("a","bc") hash
 * differently (NULL as ""). */
void sha256_field(sha256_ctx *c, const char *s);
/* Whether the portable code runs even where the CPU has SHA instructions
 * (for tests: both must agree); returns the previous setting. */
bool sha256_set_portable(bool on);
/* d as 64 lowercase hex digits and a NUL. */
void sha256_hex(const uint8_t d[32], char out[65]);

#endif
