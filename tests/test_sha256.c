/* test_sha256.c: SHA-256 (util/sha256.c: the cache keys) against Python's
 * hashlib (tests/gen/gen_sha256.py), on the SHA instructions where the CPU
 * has them and in portable code, whole and fed in uneven pieces. */
#include "test.h"
#include "util/sha256.h"

static void digest(const uint8_t *m, size_t n, size_t piece, char hex[65]) {
  sha256_ctx c;
  sha256_init(&c);
  for (size_t at = 0; at < n; at += piece) sha256_update(&c, m + at, n - at < piece ? n - at : piece);
  uint8_t d[32];
  sha256_final(&c, d);
  sha256_hex(d, hex);
}

TEST(sha256_matches_hashlib) {
  FILE *f = fopen("goldens/sha256_digests.txt", "r");
  CHECK_MSG(f != NULL, "goldens/sha256_digests.txt is missing");
  if (!f) return;
  size_t n;
  char want[80];
  int cases = 0;
  while (fscanf(f, "%zu %79s", &n, want) == 2) {
    uint8_t *m = malloc(n + 1);
    for (size_t i = 0; i < n; i++) m[i] = (uint8_t)((31 * i + 7) % 256);
    const size_t pieces[] = { n ? n : 1, 1, 7, 64, 100 };
    for (int portable = 0; portable < 2; portable++) {
      bool prev = sha256_set_portable(portable);
      for (size_t k = 0; k < sizeof pieces / sizeof pieces[0]; k++) {
        char got[65];
        digest(m, n, pieces[k], got);
        CHECK_MSG(!strcmp(got, want), "length %zu, pieces of %zu, portable %d: %s, hashlib %s", n, pieces[k], portable, got, want);
      }
      sha256_set_portable(prev);
    }
    free(m);
    cases++;
  }
  fclose(f);
  CHECK(cases == 18);
}
