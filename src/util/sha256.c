/* sha256.c: see sha256.h (FIPS 180-4). */
#include <stdbool.h>
#include <string.h>
#include "util/sha256.h"

static const uint32_t K256[64] = {
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
  0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
  0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
  0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
  0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
  0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
  0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
  0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

static inline uint32_t ror32(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

static void block_portable(uint32_t *st, const uint8_t *p) {
  uint32_t w[64];
  for (int i = 0; i < 16; i++)
    w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 | (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
  for (int i = 16; i < 64; i++) {
    uint32_t s0 = ror32(w[i - 15], 7) ^ ror32(w[i - 15], 18) ^ (w[i - 15] >> 3);
    uint32_t s1 = ror32(w[i - 2], 17) ^ ror32(w[i - 2], 19) ^ (w[i - 2] >> 10);
    w[i] = w[i - 16] + s0 + w[i - 7] + s1;
  }
  uint32_t a = st[0], b = st[1], cc = st[2], d = st[3], e = st[4], f = st[5], g = st[6], h = st[7];
  for (int i = 0; i < 64; i++) {
    uint32_t t1 = h + (ror32(e, 6) ^ ror32(e, 11) ^ ror32(e, 25)) + ((e & f) ^ (~e & g)) + K256[i] + w[i];
    uint32_t t2 = (ror32(a, 2) ^ ror32(a, 13) ^ ror32(a, 22)) + ((a & b) ^ (a & cc) ^ (b & cc));
    h = g; g = f; f = e; e = d + t1; d = cc; cc = b; b = a; a = t1 + t2;
  }
  st[0] += a; st[1] += b; st[2] += cc; st[3] += d;
  st[4] += e; st[5] += f; st[6] += g; st[7] += h;
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#include <immintrin.h>
/* The SHA extensions (x86: Goldmont, Zen, Ice Lake and later): 4 rounds an
 * instruction pair, several times the portable code's speed. The compile
 * cache hashes every kernel's source (a few KB each, some hundred per
 * model), so this is a few ms of a first token. State order in the
 * registers: ABEF and CDGH. */
__attribute__((target("sha,sse4.1"))) static void blocks_sha_ni(uint32_t *st, const uint8_t *p, size_t n) {
  const __m128i bswap = _mm_set_epi64x(0x0c0d0e0f08090a0bULL, 0x0405060700010203ULL);
  __m128i t = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)&st[0]), 0xB1);   /* CDAB */
  __m128i s1 = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)&st[4]), 0x1B);  /* EFGH */
  __m128i s0 = _mm_alignr_epi8(t, s1, 8);                                           /* ABEF */
  s1 = _mm_blend_epi16(s1, t, 0xF0);                                                /* CDGH */
  for (; n; n--, p += 64) {
    __m128i abef = s0, cdgh = s1, w[4];
    for (int i = 0; i < 4; i++) w[i] = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(p + 16 * i)), bswap);
    for (int i = 0; i < 16; i++) {
      __m128i cur = w[i & 3];
      if (i >= 4) {   /* the next 4 message words from the last 16 */
        cur = _mm_sha256msg2_epu32(_mm_add_epi32(_mm_sha256msg1_epu32(w[i & 3], w[(i + 1) & 3]), _mm_alignr_epi8(w[(i + 3) & 3], w[(i + 2) & 3], 4)),
                                   w[(i + 3) & 3]);
        w[i & 3] = cur;
      }
      __m128i m = _mm_add_epi32(cur, _mm_loadu_si128((const __m128i *)&K256[4 * i]));
      s1 = _mm_sha256rnds2_epu32(s1, s0, m);
      s0 = _mm_sha256rnds2_epu32(s0, s1, _mm_shuffle_epi32(m, 0x0E));
    }
    s0 = _mm_add_epi32(s0, abef);
    s1 = _mm_add_epi32(s1, cdgh);
  }
  t = _mm_shuffle_epi32(s0, 0x1B);                  /* FEBA */
  s1 = _mm_shuffle_epi32(s1, 0xB1);                 /* DCHG */
  _mm_storeu_si128((__m128i *)&st[0], _mm_blend_epi16(t, s1, 0xF0));   /* DCBA */
  _mm_storeu_si128((__m128i *)&st[4], _mm_alignr_epi8(s1, t, 8));      /* HGFE */
}
static bool have_sha_ni(void) {
  static int known = -1;   /* cpuid is slow in a VM: asked once (a race only asks twice) */
  int k = __atomic_load_n(&known, __ATOMIC_RELAXED);
  if (k < 0) {
    unsigned a, b, c, d;
    k = __get_cpuid_count(7, 0, &a, &b, &c, &d) && (b >> 29 & 1);   /* CPUID.7.0:EBX.SHA */
    __atomic_store_n(&known, k, __ATOMIC_RELAXED);
  }
  return k;
}
#else
static bool have_sha_ni(void) { return false; }
static void blocks_sha_ni(uint32_t *st, const uint8_t *p, size_t n) { (void)st, (void)p, (void)n; }
#endif

static bool portable_only;
bool sha256_set_portable(bool on) { bool prev = portable_only; portable_only = on; return prev; }

/* n whole 64-byte blocks */
static void sha256_blocks(sha256_ctx *c, const uint8_t *p, size_t n) {
  if (!portable_only && have_sha_ni()) blocks_sha_ni(c->h, p, n);
  else for (; n; n--, p += 64) block_portable(c->h, p);
}

void sha256_init(sha256_ctx *c) {
  static const uint32_t iv[8] = { 0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                  0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19 };
  memcpy(c->h, iv, sizeof iv);
  c->nbuf = 0; c->total = 0;
}

void sha256_update(sha256_ctx *c, const void *data, size_t n) {
  const uint8_t *p = data;
  c->total += n;
  while (n) {
    if (!c->nbuf && n >= 64) {   /* whole blocks in place */
      size_t k = n / 64;
      sha256_blocks(c, p, k);
      p += 64 * k, n -= 64 * k;
      continue;
    }
    size_t take = 64 - c->nbuf < n ? 64 - c->nbuf : n;
    memcpy(c->buf + c->nbuf, p, take);
    c->nbuf += take; p += take; n -= take;
    if (c->nbuf == 64) { sha256_blocks(c, c->buf, 1); c->nbuf = 0; }
  }
}

void sha256_final(sha256_ctx *c, uint8_t out[32]) {
  uint64_t bits = c->total * 8;
  uint8_t pad = 0x80;
  sha256_update(c, &pad, 1);
  pad = 0;
  while (c->nbuf != 56) sha256_update(c, &pad, 1);
  uint8_t len[8];
  for (int i = 0; i < 8; i++) len[i] = (uint8_t)(bits >> (56 - 8 * i));
  sha256_update(c, len, 8);
  for (int i = 0; i < 8; i++) {
    out[4 * i] = (uint8_t)(c->h[i] >> 24); out[4 * i + 1] = (uint8_t)(c->h[i] >> 16);
    out[4 * i + 2] = (uint8_t)(c->h[i] >> 8); out[4 * i + 3] = (uint8_t)c->h[i];
  }
}

/* Each field goes in with its length first, so ("ab","c") and ("a","bc")
 * hash differently. */
void sha256_field(sha256_ctx *c, const char *s) {
  if (!s) s = "";
  uint64_t n = strlen(s);
  uint8_t len[8];
  for (int i = 0; i < 8; i++) len[i] = (uint8_t)(n >> (8 * i));
  sha256_update(c, len, 8);
  sha256_update(c, s, (size_t)n);
}

void sha256_hex(const uint8_t d[32], char out[65]) {
  static const char hex[] = "0123456789abcdef";
  for (int i = 0; i < 32; i++) out[2 * i] = hex[d[i] >> 4], out[2 * i + 1] = hex[d[i] & 15];
  out[64] = 0;
}
