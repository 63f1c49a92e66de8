/* test_io.c: the DISK device and state files (safetensors, .npy, GGUF):
 * loading goldens written by PyTorch/numpy/gguf-py (tests/gen/
 * gen_state_files.py), saving byte-identical files, and refusing corrupt
 * ones with clear errors. */
#include <dirent.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>
#include "test.h"
#include "io/disk_map.h"

/* ---------------------------------------------------------------- helpers */

static char tmpdir[64];
static void rm_tmpdir(void) {
  DIR *d = opendir(tmpdir);
  if (!d) return;
  struct dirent *e;
  char path[512];
  while ((e = readdir(d)))
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) { snprintf(path, sizeof path, "%s/%s", tmpdir, e->d_name); unlink(path); }
  closedir(d);
  rmdir(tmpdir);
}
static const char *tmp_path(const char *name) {
  static char buf[4][256];
  static int k;
  if (!tmpdir[0]) {
    snprintf(tmpdir, sizeof tmpdir, "/tmp/tg_test_io.XXXXXX");
    if (!mkdtemp(tmpdir)) { tmpdir[0] = 0; return "/nonexistent/tg_test_io"; }
    atexit(rm_tmpdir);
  }
  char *b = buf[k++ % 4];
  snprintf(b, 256, "%s/%s", tmpdir, name);
  return b;
}

static bool write_file(const char *path, const void *p, size_t n) {
  FILE *f = fopen(path, "wb");
  if (!f) return false;
  bool ok = fwrite(p, 1, n, f) == n;
  return fclose(f) == 0 && ok;
}

/* The tensor's values as float64 (through a cast kernel). */
static bool values_f64(tg_tensor *t, double *out, size_t n) {
  tg_scope_begin();
  tg_tensor *c = tg_cast(t, TG_F64);
  int rc = c ? tg_data(c, out, n * sizeof(double)) : -1;
  tg_scope_end();
  return rc == 0;
}

static bool shape_is(tg_tensor *t, tg_shape s) {
  tg_shape g = tg_shape_of(t);
  if (g.ndim != s.ndim) return false;
  for (int i = 0; i < s.ndim; i++) if (g.d[i] != s.d[i]) return false;
  return true;
}

static bool files_equal(const char *a, const char *b) {
  size_t na, nb;
  unsigned char *pa = test_read_file(a, &na), *pb = test_read_file(b, &nb);
  bool eq = pa && pb && na == nb && memcmp(pa, pb, na) == 0;
  if (pa && pb && !eq) {
    size_t i = 0;
    while (i < na && i < nb && pa[i] == pb[i]) i++;
    printf("  %s (%zu bytes) and %s (%zu bytes) differ first at byte %zu\n", a, na, b, nb, i);
  }
  free(pa); free(pb);
  return eq;
}

/* The load must fail, naming the file and saying `what`. */
#define CHECK_LOAD_FAILS(call, path, what) do { \
  tg_clear_error(); \
  int rc_ = (call); \
  CHECK_MSG(rc_ < 0, "%s: loading %s succeeded", what, path); \
  CHECK_MSG(strstr(tg_error(), path) != NULL, "error does not name the file: %s", tg_error()); \
  CHECK_MSG(strstr(tg_error(), what) != NULL, "expected '%s' in: %s", what, tg_error()); \
} while (0)

static int st_load(const char *path) {
  tg_tensor_list l;
  tg_scope_begin();
  int rc = tg_safetensors_load(path, NULL, &l);
  tg_tensor_list_free(&l);
  tg_scope_end();
  return rc;
}
static int npy_load(const char *path) {
  tg_scope_begin();
  int rc = tg_npy_load(path, NULL) ? 0 : -1;
  tg_scope_end();
  return rc;
}
static int gguf_load(const char *path) {
  tg_tensor_list l;
  tg_scope_begin();
  int rc = tg_gguf_load_tensors(path, NULL, &l);
  tg_tensor_list_free(&l);
  tg_scope_end();
  return rc;
}

/* A safetensors file with the given header and data bytes. */
static const char *make_st(const char *name, const char *json, size_t ndata) {
  size_t hl = strlen(json);
  unsigned char *buf = calloc(1, 8 + hl + ndata + 1);
  for (int i = 0; i < 8; i++) buf[i] = (unsigned char)((uint64_t)hl >> (8 * i));
  memcpy(buf + 8, json, hl);
  const char *p = tmp_path(name);
  write_file(p, buf, 8 + hl + ndata);
  free(buf);
  return p;
}

/* ---------------------------------------------------------------- safetensors */

typedef struct { const char *name; tg_dtype dt; tg_shape shape; } expect;
static const expect torch_tensors[] = {   /* TENSORS of gen_state_files.py, in order */
  { "w.f32", TG_F32, { 2, { 2, 3 } } }, { "w.f64", TG_F64, { 1, { 3 } } },
  { "w.f16", TG_F16, { 2, { 2, 2 } } }, { "w.bf16", TG_BF16, { 1, { 4 } } },
  { "i.i64", TG_I64, { 1, { 2 } } }, { "i.i32", TG_I32, { 0, { 0 } } },
  { "i.i16", TG_I16, { 1, { 3 } } }, { "i.i8", TG_I8, { 2, { 2, 2 } } },
  { "u.u8", TG_U8, { 1, { 5 } } }, { "u.u16", TG_U16, { 1, { 3 } } },
  { "u.u32", TG_U32, { 1, { 2 } } }, { "u.u64", TG_U64, { 1, { 2 } } },
  { "b.bool", TG_BOOL, { 1, { 3 } } }, { "f8.e4m3", TG_FP8E4M3, { 1, { 4 } } },
  { "f8.e5m2", TG_FP8E5M2, { 1, { 4 } } }, { "empty", TG_F32, { 2, { 0, 3 } } },
  { "scalar.f32", TG_F32, { 0, { 0 } } },
};
#define N_TORCH ((int)(sizeof torch_tensors / sizeof torch_tensors[0]))
#define ST_GOLDEN "goldens/state_torch.safetensors"

static void check_torch_values(const tg_tensor_list *l) {
  size_t nexp;
  double *want = test_read_file("goldens/state_torch_expected.bin", &nexp);
  CHECK_MSG(want != NULL, "missing goldens/state_torch_expected.bin");
  if (!want) return;
  nexp /= sizeof(double);
  size_t at = 0;
  for (int i = 0; i < N_TORCH; i++) {
    const expect *e = &torch_tensors[i];
    tg_tensor *t = tg_tensor_list_get(l, e->name);
    CHECK_MSG(t != NULL, "tensor %s missing", e->name);
    if (!t) continue;
    CHECK_MSG(tg_dtype_of(t) == e->dt, "%s: dtype %s", e->name, tg_dtype_name(tg_dtype_of(t)));
    CHECK_MSG(shape_is(t, e->shape), "%s: wrong shape", e->name);
    size_t n = (size_t)tg_numel(t);
    CHECK(at + n <= nexp);
    if (at + n > nexp) break;
    double got[16] = { 0 };
    CHECK(n <= 16);
    if (n) {
      CHECK_MSG(values_f64(t, got, n), "%s: %s", e->name, tg_error());
      for (size_t k = 0; k < n; k++) CHECK_MSG(got[k] == want[at + k], "%s[%zu]: %g != %g", e->name, k, got[k], want[at + k]);
    }
    at += n;
  }
  CHECK_EQ_INT(at, nexp);
  free(want);
}

TEST(io_safetensors_load_torch) {
  tg_scope_begin();
  tg_tensor_list l;
  int rc = tg_safetensors_load(ST_GOLDEN, NULL, &l);
  CHECK_MSG(rc == 0, "%s", tg_error());
  CHECK_EQ_INT(l.n, N_TORCH);
  CHECK_EQ_INT(l.nmeta, 1);
  if (l.nmeta == 1) { CHECK(strcmp(l.meta_keys[0], "format") == 0); CHECK(strcmp(l.meta_values[0], "pt") == 0); }
  for (int i = 0; i < l.n; i++) CHECK_MSG(strcmp(tg_device_of(l.t[i]), "CPU") == 0, "%s on %s", l.names[i], tg_device_of(l.t[i]));
  check_torch_values(&l);
  CHECK(tg_tensor_list_get(&l, "nope") == NULL);
  tg_tensor_list_free(&l);
  CHECK(l.n == 0 && l.names == NULL);
  tg_scope_end();
}

TEST(io_safetensors_disk_tensors) {
  int live0 = disk_maps_live();
  const char *old = getenv("TG_ALLOC_CACHE_MB");
  char *saved = old ? strdup(old) : NULL;
  setenv("TG_ALLOC_CACHE_MB", "0", 1);   /* freed DISK memory goes back at once */
  tg_scope_begin();
  tg_tensor_list l;
  CHECK_MSG(tg_safetensors_load(ST_GOLDEN, "DISK", &l) == 0, "%s", tg_error());
  CHECK_EQ_INT(disk_maps_live(), live0 + 1);
  tg_tensor *w = tg_tensor_list_get(&l, "w.f32");
  CHECK(w && strcmp(tg_device_of(w), "DISK") == 0);
  if (w) {
    float v[6];
    CHECK_MSG(tg_data(w, v, sizeof v) == 0, "%s", tg_error());   /* copyout straight from the mapping */
    CHECK(v[0] == -1.0f && v[5] == 0.25f);
    /* kernels do not run on DISK ... */
    tg_clear_error();
    tg_tensor *bad = tg_adds(w, 1);
    CHECK(bad == NULL || tg_realize(bad) < 0);
    CHECK_MSG(strstr(tg_error(), "DISK") != NULL, "error: %s", tg_error());
    /* ... on the CPU they do */
    tg_tensor *c = tg_to(w, "CPU");
    tg_tensor *s = tg_sum(tg_adds(c, 1), TG_ALL, false);
    CHECK_NEAR(tg_item(s), -2.25 + 6, 1e-6);
    /* writing to DISK is refused */
    tg_clear_error();
    tg_tensor *d = tg_to(tg_ones(TG_SHAPE(2), TG_F32), "DISK");
    CHECK(d != NULL && tg_realize(d) < 0);
    CHECK_MSG(strstr(tg_error(), "DISK") != NULL, "error: %s", tg_error());
  }
  tg_tensor_list_free(&l);
  tg_scope_end();
  CHECK_EQ_INT(disk_maps_live(), live0);   /* the last buffer unmapped the file */
  if (saved) { setenv("TG_ALLOC_CACHE_MB", saved, 1); free(saved); } else unsetenv("TG_ALLOC_CACHE_MB");
}

TEST(io_safetensors_mapping_outlives_loader) {
  /* the CPU tensors copy lazily: the file must stay mapped after the load
   * returns, until they are realized */
  const char *p = tmp_path("outlive.safetensors");
  float a[4] = { 1, 2, 3, 4 };
  tg_scope_begin();
  tg_tensor *t = tg_from_data(a, TG_SHAPE(2, 2), TG_F32);
  const char *names[] = { "a" };
  CHECK_MSG(tg_safetensors_save(p, names, &t, 1, NULL) == 0, "%s", tg_error());
  tg_tensor_list l;
  CHECK_MSG(tg_safetensors_load(p, "CPU", &l) == 0, "%s", tg_error());
  unlink(p);   /* the mapping keeps the data */
  float b[4] = { 0 };
  CHECK(l.n == 1 && tg_data(l.t[0], b, sizeof b) == 0);
  CHECK(memcmp(a, b, sizeof a) == 0);
  tg_tensor_list_free(&l);
  tg_scope_end();
}

TEST(io_safetensors_save_matches_python) {
  /* tg writes the bytes the Python package wrote for the same tensors */
  tg_scope_begin();
  tg_tensor_list l;
  CHECK_MSG(tg_safetensors_load(ST_GOLDEN, NULL, &l) == 0, "%s", tg_error());
  const char *p = tmp_path("resave.safetensors");
  const char *meta[] = { "format", "pt", NULL };
  CHECK_MSG(tg_safetensors_save(p, (const char *const *)l.names, l.t, l.n, meta) == 0, "%s", tg_error());
  CHECK(files_equal(p, ST_GOLDEN));
  /* and reads back */
  tg_tensor_list l2;
  CHECK_MSG(tg_safetensors_load(p, NULL, &l2) == 0, "%s", tg_error());
  check_torch_values(&l2);
  tg_tensor_list_free(&l2);
  tg_tensor_list_free(&l);
  unlink(p);
  tg_scope_end();
}

TEST(io_safetensors_escaping_matches_python) {
  tg_scope_begin();
  float v[3] = { 0, 1, 2 };
  tg_tensor *t = tg_from_data(v, TG_SHAPE(3), TG_F32);
  const char *names[] = { "a\"b" };
  const char *meta[] = { "k\\", "tab\tnl\n\"\xc3\xa9\x1f\x7f/", NULL };
  const char *p = tmp_path("meta.safetensors");
  CHECK_MSG(tg_safetensors_save(p, names, &t, 1, meta) == 0, "%s", tg_error());
  CHECK(files_equal(p, "goldens/state_meta.safetensors"));
  tg_tensor_list l;
  CHECK_MSG(tg_safetensors_load("goldens/state_meta.safetensors", NULL, &l) == 0, "%s", tg_error());
  CHECK(l.n == 1 && strcmp(l.names[0], names[0]) == 0);
  CHECK(l.nmeta == 1 && strcmp(l.meta_keys[0], meta[0]) == 0 && strcmp(l.meta_values[0], meta[1]) == 0);
  tg_tensor_list_free(&l);
  unlink(p);
  tg_scope_end();
}

TEST(io_safetensors_save_views_and_metadata) {
  tg_scope_begin();
  float a[6] = { 1, 2, 3, 4, 5, 6 };
  tg_tensor *x = tg_from_data(a, TG_SHAPE(2, 3), TG_F32);
  tg_tensor *ts[3] = { tg_T(x), tg_muls(x, 2), tg_cast(x, TG_BF16) };   /* a view, a computation, bf16 */
  const char *names[3] = { "xt", "x2", "xb" };
  const char *meta[] = { "a", "line\n\"q\"\x01", "b", "", NULL };
  const char *p = tmp_path("views.safetensors");
  CHECK_MSG(tg_safetensors_save(p, names, ts, 3, meta) == 0, "%s", tg_error());
  tg_tensor_list l;
  CHECK_MSG(tg_safetensors_load(p, NULL, &l) == 0, "%s", tg_error());
  CHECK_EQ_INT(l.n, 3);
  CHECK_EQ_INT(l.nmeta, 2);
  if (l.nmeta == 2) CHECK(strcmp(l.meta_values[0], "line\n\"q\"\x01") == 0);
  /* file order: by dtype (F32 before BF16), then name */
  if (l.n == 3) { CHECK(strcmp(l.names[0], "x2") == 0); CHECK(strcmp(l.names[1], "xt") == 0); CHECK(strcmp(l.names[2], "xb") == 0); }
  float got[6];
  tg_tensor *xt = tg_tensor_list_get(&l, "xt");
  CHECK(xt && shape_is(xt, TG_SHAPE(3, 2)) && tg_data(xt, got, sizeof got) == 0);
  if (xt) { CHECK(got[0] == 1 && got[1] == 4 && got[2] == 2 && got[5] == 6); }
  double d[6];
  tg_tensor *xb = tg_tensor_list_get(&l, "xb");
  CHECK(xb && tg_dtype_of(xb) == TG_BF16 && values_f64(xb, d, 6) && d[5] == 6);
  tg_tensor_list_free(&l);
  /* errors */
  const char *dup[2] = { "a", "a" };
  tg_tensor *two[2] = { x, x };
  CHECK(tg_safetensors_save(p, dup, two, 2, NULL) < 0 && strstr(tg_error(), "twice"));
  const char *mn[1] = { "__metadata__" };
  CHECK(tg_safetensors_save(p, mn, two, 1, NULL) < 0);
  tg_tensor *nul[1] = { NULL };
  CHECK(tg_safetensors_save(p, names, nul, 1, NULL) < 0);
  CHECK(tg_safetensors_save("/nonexistent/dir/x.safetensors", names, two, 1, NULL) < 0 &&
        strstr(tg_error(), "/nonexistent/dir/x.safetensors"));
  unlink(p);
  /* an empty file list is a valid file */
  CHECK_MSG(tg_safetensors_save(p, NULL, NULL, 0, NULL) == 0, "%s", tg_error());
  CHECK(tg_safetensors_load(p, NULL, &l) == 0 && l.n == 0);
  tg_tensor_list_free(&l);
  unlink(p);
  tg_scope_end();
}

TEST(io_safetensors_corrupt) {
  tg_clear_error();
  CHECK_LOAD_FAILS(st_load("goldens/nonexistent.safetensors"), "goldens/nonexistent.safetensors", "cannot open");
  const char *p = tmp_path("empty.safetensors");
  write_file(p, "", 0);
  CHECK_LOAD_FAILS(st_load(p), p, "truncated");
  p = tmp_path("short.safetensors");
  write_file(p, "\x10\x00\x00", 3);
  CHECK_LOAD_FAILS(st_load(p), p, "truncated");
  p = tmp_path("hugehdr.safetensors");
  write_file(p, "\xff\xff\xff\xff\xff\xff\xff\x7f{}", 10);
  CHECK_LOAD_FAILS(st_load(p), p, "past the end");
  CHECK_LOAD_FAILS(st_load(p = make_st("notobj.safetensors", "[1, 2]", 0)), p, "not a JSON object");
  CHECK_LOAD_FAILS(st_load(p = make_st("badjson.safetensors", "{\"a\": {", 0)), p, "not valid JSON");
  CHECK_LOAD_FAILS(st_load(p = make_st("entry.safetensors", "{\"a\": 3}", 0)), p, "not an object");
  CHECK_LOAD_FAILS(st_load(p = make_st("nodtype.safetensors", "{\"a\": {\"shape\": [1], \"data_offsets\": [0, 4]}}", 4)), p, "dtype");
  CHECK_LOAD_FAILS(st_load(p = make_st("unkdt.safetensors", "{\"a\": {\"dtype\": \"C64\", \"shape\": [1], \"data_offsets\": [0, 8]}}", 8)), p, "unknown or unsupported dtype");
  CHECK_LOAD_FAILS(st_load(p = make_st("range.safetensors", "{\"a\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 8]}}", 4)), p, "out of range");
  CHECK_LOAD_FAILS(st_load(p = make_st("backw.safetensors", "{\"a\": {\"dtype\": \"F32\", \"shape\": [0], \"data_offsets\": [4, 0]}}", 4)), p, "out of range");
  CHECK_LOAD_FAILS(st_load(p = make_st("overlap.safetensors",
    "{\"a\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 8]}, \"b\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [4, 8]}}", 8)), p, "overlap");
  CHECK_LOAD_FAILS(st_load(p = make_st("mismatch.safetensors", "{\"a\": {\"dtype\": \"F32\", \"shape\": [3], \"data_offsets\": [0, 8]}}", 8)), p, "needs 12 bytes");
  CHECK_LOAD_FAILS(st_load(p = make_st("absurd.safetensors",
    "{\"a\": {\"dtype\": \"F32\", \"shape\": [4000000000000, 4000000000000, 4000000000000], \"data_offsets\": [0, 8]}}", 8)), p, "absurdly large");
  CHECK_LOAD_FAILS(st_load(p = make_st("negdim.safetensors", "{\"a\": {\"dtype\": \"F32\", \"shape\": [-1], \"data_offsets\": [0, 0]}}", 0)), p, "shape entry");
  CHECK_LOAD_FAILS(st_load(p = make_st("fracdim.safetensors", "{\"a\": {\"dtype\": \"F32\", \"shape\": [1.5], \"data_offsets\": [0, 0]}}", 0)), p, "shape entry");
  CHECK_LOAD_FAILS(st_load(p = make_st("dims.safetensors",
    "{\"a\": {\"dtype\": \"F32\", \"shape\": [1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1], \"data_offsets\": [0, 4]}}", 4)), p, "dimensions");
  CHECK_LOAD_FAILS(st_load(p = make_st("dup.safetensors",
    "{\"a\": {\"dtype\": \"U8\", \"shape\": [1], \"data_offsets\": [0, 1]}, \"a\": {\"dtype\": \"U8\", \"shape\": [1], \"data_offsets\": [1, 2]}}", 2)), p, "twice");
  CHECK_LOAD_FAILS(st_load(p = make_st("meta.safetensors", "{\"__metadata__\": {\"k\": 1}}", 0)), p, "__metadata__");
  CHECK_LOAD_FAILS(st_load(p = make_st("offs.safetensors", "{\"a\": {\"dtype\": \"U8\", \"shape\": [1], \"data_offsets\": [0]}}", 1)), p, "data_offsets");
  /* every truncation of a real file is refused, none crashes */
  size_t n;
  unsigned char *g = test_read_file(ST_GOLDEN, &n);
  CHECK(g != NULL);
  p = tmp_path("trunc.safetensors");
  int fails = 0;
  for (size_t k = 0; g && k < n; k++) {
    write_file(p, g, k);
    if (st_load(p) < 0 && strstr(tg_error(), p)) fails++;
  }
  CHECK_EQ_INT(fails, g ? (int)n : 0);
  /* a flipped byte anywhere in the header never crashes either */
  for (size_t k = 0; g && k < 8 + 200; k++) {
    unsigned char c = g[k];
    g[k] ^= 0x5a;
    write_file(p, g, n);
    tg_clear_error();
    if (st_load(p) < 0) CHECK_MSG(tg_error()[0] != 0, "byte %zu: failed without a message", k);
    g[k] = c;
  }
  free(g);
  unlink(p);
}

/* ---------------------------------------------------------------- npy */

typedef struct { const char *name; tg_dtype dt; tg_shape shape; } npy_expect;
static const npy_expect npys[] = {   /* NPY of gen_state_files.py, in order */
  { "f32", TG_F32, { 2, { 2, 3 } } }, { "f64", TG_F64, { 0, { 0 } } }, { "f16", TG_F16, { 1, { 4 } } },
  { "i8", TG_I8, { 2, { 2, 2 } } }, { "i16", TG_I16, { 1, { 3 } } }, { "i32", TG_I32, { 3, { 2, 1, 2 } } },
  { "i64", TG_I64, { 1, { 3 } } }, { "u8", TG_U8, { 1, { 5 } } }, { "u16", TG_U16, { 1, { 2 } } },
  { "u32", TG_U32, { 1, { 2 } } }, { "u64", TG_U64, { 1, { 2 } } }, { "bool", TG_BOOL, { 1, { 3 } } },
  { "empty", TG_F32, { 2, { 0, 2 } } }, { "v2", TG_F32, { 1, { 3 } } },
};
#define N_NPY ((int)(sizeof npys / sizeof npys[0]))

TEST(io_npy_load_and_save) {
  size_t nexp;
  double *want = test_read_file("goldens/state_npy_expected.bin", &nexp);
  CHECK(want != NULL);
  if (!want) return;
  nexp /= sizeof(double);
  size_t at = 0;
  tg_scope_begin();
  for (int i = 0; i < N_NPY; i++) {
    char path[128];
    snprintf(path, sizeof path, "goldens/state_npy_%s.npy", npys[i].name);
    tg_tensor *t = tg_npy_load(path, NULL);
    CHECK_MSG(t != NULL, "%s: %s", path, tg_error());
    if (!t) continue;
    CHECK_MSG(tg_dtype_of(t) == npys[i].dt && shape_is(t, npys[i].shape), "%s: dtype or shape", path);
    size_t n = (size_t)tg_numel(t);
    double got[16];
    if (n && n <= 16 && at + n <= nexp) {
      CHECK_MSG(values_f64(t, got, n), "%s: %s", path, tg_error());
      for (size_t k = 0; k < n; k++) CHECK_MSG(got[k] == want[at + k], "%s[%zu]: %g != %g", path, k, got[k], want[at + k]);
    }
    at += n;
    /* numpy.save writes the same bytes (v2 was written as 2.0 on purpose) */
    if (strcmp(npys[i].name, "v2") != 0) {
      const char *out = tmp_path("resave.npy");
      CHECK_MSG(tg_npy_save(out, t) == 0, "%s", tg_error());
      CHECK_MSG(files_equal(out, path), "%s: tg_npy_save differs from numpy.save", path);
      unlink(out);
    }
  }
  CHECK_EQ_INT(at + 6, nexp);   /* the fortran file's 6 values come last */
  free(want);
  /* DISK */
  tg_tensor *d = tg_npy_load("goldens/state_npy_f32.npy", "DISK");
  CHECK(d && strcmp(tg_device_of(d), "DISK") == 0);
  /* no npy dtype for bfloat16 */
  tg_tensor *b = tg_cast(tg_ones(TG_SHAPE(2), TG_F32), TG_BF16);
  CHECK(tg_npy_save(tmp_path("bf.npy"), b) < 0 && strstr(tg_error(), "cast"));
  tg_scope_end();
}

TEST(io_npy_corrupt) {
  CHECK_LOAD_FAILS(npy_load("goldens/state_npy_fortran.npy"), "goldens/state_npy_fortran.npy", "fortran_order");
  const char *p = tmp_path("bad.npy");
  write_file(p, "\x93NUMPX\x01\x00\x00\x00", 10);
  CHECK_LOAD_FAILS(npy_load(p), p, "bad magic");
  write_file(p, "", 0);
  CHECK_LOAD_FAILS(npy_load(p), p, "too short");
  static const struct { const char *hdr, *what; } bad[] = {
    { "{'descr': '>f4', 'fortran_order': False, 'shape': (1,), }", "big-endian" },
    { "{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }", "unsupported dtype" },
    { "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }", "structured" },
    { "{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }", "non-negative" },
    { "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }", "absurdly large" },
    { "{'descr': '<f4', 'fortran_order': False, 'shape': (4000000000, 4000000000, 4000000000), }", "absurdly large" },
    { "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", "needs 8 data bytes" },
    { "{'descr': '<f4', 'shape': (1,), }", "lacks 'fortran_order'" },
    { "[1, 2]", "not a dict" },
    { "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'x': 1}", "unexpected key" },
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    unsigned char buf[256] = { 0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0 };
    size_t hl = strlen(bad[i].hdr);
    buf[8] = (unsigned char)hl;
    memcpy(buf + 10, bad[i].hdr, hl);
    memcpy(buf + 10 + hl, "\x00\x00\x80\x3f", 4);   /* one float32 of data */
    write_file(p, buf, 10 + hl + 4);
    CHECK_LOAD_FAILS(npy_load(p), p, bad[i].what);
  }
  /* header length past the end */
  write_file(p, "\x93NUMPY\x01\x00\xff\x00{}", 12);
  CHECK_LOAD_FAILS(npy_load(p), p, "past the end");
  size_t n;
  unsigned char *g = test_read_file("goldens/state_npy_i32.npy", &n);
  int fails = 0;
  for (size_t k = 0; g && k < n; k++) {
    write_file(p, g, k);
    if (npy_load(p) < 0 && strstr(tg_error(), p)) fails++;
  }
  CHECK_EQ_INT(fails, g ? (int)n : 0);
  free(g);
  unlink(p);
}

/* ---------------------------------------------------------------- gguf */

#define GGUF_GOLDEN "goldens/state_small.gguf"

TEST(io_gguf_load) {
  static const struct { const char *name; tg_dtype dt; tg_shape shape; } want[] = {
    { "tok.weight", TG_F32, { 2, { 3, 4 } } }, { "blk.0.attn", TG_F16, { 2, { 2, 5 } } },
    { "blk.0.bf", TG_BF16, { 1, { 6 } } }, { "out.vec", TG_F32, { 1, { 1 } } },
  };
  size_t nexp;
  double *vals = test_read_file("goldens/state_gguf_expected.bin", &nexp);
  CHECK(vals != NULL);
  if (!vals) return;
  nexp /= sizeof(double);
  tg_scope_begin();
  tg_tensor_list l;
  CHECK_MSG(tg_gguf_load_tensors(GGUF_GOLDEN, NULL, &l) == 0, "%s", tg_error());
  CHECK_EQ_INT(l.n, 4);
  size_t at = 0;
  for (int i = 0; i < l.n && i < 4; i++) {
    CHECK_MSG(strcmp(l.names[i], want[i].name) == 0, "tensor %d is %s", i, l.names[i]);
    CHECK_MSG(tg_dtype_of(l.t[i]) == want[i].dt && shape_is(l.t[i], want[i].shape), "%s: dtype or shape", l.names[i]);
    size_t n = (size_t)tg_numel(l.t[i]);
    double got[16];
    if (n <= 16 && at + n <= nexp && values_f64(l.t[i], got, n))
      for (size_t k = 0; k < n; k++) CHECK_MSG(got[k] == vals[at + k], "%s[%zu]: %g != %g", l.names[i], k, got[k], vals[at + k]);
    else CHECK_MSG(false, "%s: %s", l.names[i], tg_error());
    at += n;
  }
  CHECK_EQ_INT(at, nexp);
  tg_tensor_list_free(&l);
  tg_scope_end();
  free(vals);
}

/* A minimal GGUF: header, one u32 kv (general.alignment), one tensor info. */
static size_t make_gguf(unsigned char *b, uint32_t version, uint64_t nt, uint64_t nkv, uint32_t kvtype, uint32_t ggml_type,
                        uint32_t ndims, uint64_t ne0, uint64_t off, size_t data) {
  size_t k = 0;
#define P32(v) do { uint32_t v_ = (v); for (int i_ = 0; i_ < 4; i_++) b[k++] = (unsigned char)(v_ >> (8 * i_)); } while (0)
#define P64(v) do { uint64_t v_ = (v); for (int i_ = 0; i_ < 8; i_++) b[k++] = (unsigned char)(v_ >> (8 * i_)); } while (0)
  memcpy(b, "GGUF", 4); k = 4;
  P32(version); P64(nt); P64(nkv);
  if (nkv) { P64(17); memcpy(b + k, "general.alignment", 17); k += 17; P32(kvtype); P32(16); }
  if (nt) { P64(1); b[k++] = 'w'; P32(ndims); for (uint32_t i = 0; i < ndims; i++) P64(ne0); P32(ggml_type); P64(off); }
  k = (k + 15) / 16 * 16;
  memset(b + k, 0, data);
  return k + data;
#undef P32
#undef P64
}

TEST(io_gguf_corrupt) {
  const char *p = tmp_path("bad.gguf");
  unsigned char b[512];
  size_t n = make_gguf(b, 3, 1, 1, 4, 0, 1, 4, 0, 16);
  write_file(p, b, n);
  CHECK_MSG(gguf_load(p) == 0, "the minimal file loads: %s", tg_error());
  write_file(p, "GGUX", 4);
  CHECK_LOAD_FAILS(gguf_load(p), p, "bad magic");
  n = make_gguf(b, 1, 1, 1, 4, 0, 1, 4, 0, 16);
  write_file(p, b, n);
  CHECK_LOAD_FAILS(gguf_load(p), p, "version 1");
  n = make_gguf(b, 3, 1, 1, 4, 2, 1, 32, 0, 64);   /* Q4_0: loads (dequantized lazily) */
  write_file(p, b, n);
  CHECK_MSG(gguf_load(p) == 0, "a Q4_0 tensor loads: %s", tg_error());
  n = make_gguf(b, 3, 1, 1, 4, 9, 1, 32, 0, 64);   /* Q8_1: ggml's internal format, not loaded */
  write_file(p, b, n);
  CHECK_LOAD_FAILS(gguf_load(p), p, "Q8_1");
  n = make_gguf(b, 3, 1, 1, 4, 0, 1, 5, 0, 16);   /* 20 bytes in 16 */
  write_file(p, b, n);
  CHECK_LOAD_FAILS(gguf_load(p), p, "past the end of the data section");
  n = make_gguf(b, 3, 1, 1, 4, 0, 5, 1, 0, 16);   /* 5 dims */
  write_file(p, b, n);
  CHECK_LOAD_FAILS(gguf_load(p), p, "dimensions");
  n = make_gguf(b, 3, 1, 1, 4, 0, 4, 1ull << 40, 0, 16);
  write_file(p, b, n);
  CHECK_LOAD_FAILS(gguf_load(p), p, "absurdly large");
  n = make_gguf(b, 3, 1, 1, 4, 0, 1, 1, 4, 16);   /* offset 4, alignment 16 */
  write_file(p, b, n);
  CHECK_LOAD_FAILS(gguf_load(p), p, "not a multiple of the alignment");
  n = make_gguf(b, 3, 1, 1, 8, 0, 1, 1, 0, 16);   /* alignment given as a string */
  write_file(p, b, n);
  CHECK_LOAD_FAILS(gguf_load(p), p, "general.alignment");
  n = make_gguf(b, 3, 1ull << 60, 0, 4, 0, 1, 1, 0, 16);
  write_file(p, b, n);
  CHECK_LOAD_FAILS(gguf_load(p), p, "tensor count");
  n = make_gguf(b, 3, 0, 1ull << 60, 4, 0, 1, 1, 0, 16);
  write_file(p, b, n);
  CHECK_LOAD_FAILS(gguf_load(p), p, "metadata count");
  n = make_gguf(b, 3, 1, 1, 13, 0, 1, 1, 0, 16);   /* unknown value type */
  write_file(p, b, n);
  CHECK_LOAD_FAILS(gguf_load(p), p, "general.alignment");
  /* truncations of the real file: all refused before its last tensor's data,
   * none crashes after */
  size_t gn;
  unsigned char *g = test_read_file(GGUF_GOLDEN, &gn);
  CHECK(g != NULL);
  int fails = 0, early = 0;
  for (size_t k = 0; g && k < gn; k++) {
    write_file(p, g, k);
    tg_clear_error();
    if (gguf_load(p) < 0) { fails++; CHECK(strstr(tg_error(), p) != NULL); }
    if (k + 64 <= gn) early++;
  }
  CHECK_MSG(fails >= early, "%d of %d early truncations loaded", early - fails, early);
  /* flipped bytes in the metadata never crash */
  for (size_t k = 4; g && k < 600 && k < gn; k++) {
    unsigned char c = g[k];
    g[k] ^= 0xa5;
    write_file(p, g, gn);
    tg_clear_error();
    if (gguf_load(p) < 0) CHECK_MSG(tg_error()[0] != 0, "byte %zu: failed without a message", k);
    g[k] = c;
  }
  free(g);
  unlink(p);
}

/* ---------------------------------------------------------------- raw regions */

TEST(io_from_file) {
  const char *p = tmp_path("raw.bin");
  float v[8] = { 0, 1, 2, 3, 4, 5, 6, 7 };
  CHECK(write_file(p, v, sizeof v));
  tg_scope_begin();
  tg_tensor *t = tg_from_file(p, 8, TG_SHAPE(2, 3), TG_F32);
  CHECK_MSG(t != NULL, "%s", tg_error());
  if (t) {
    CHECK(strcmp(tg_device_of(t), "DISK") == 0);
    float got[6];
    CHECK(tg_data(t, got, sizeof got) == 0 && got[0] == 2 && got[5] == 7);
    tg_tensor *s = tg_sum(tg_to(t, "CPU"), TG_AXES(1), false);
    CHECK(s && tg_data(s, got, 2 * sizeof(float)) == 0 && got[0] == 9 && got[1] == 18);
  }
  CHECK(tg_from_file(p, 8, TG_SHAPE(3, 3), TG_F32) == NULL && strstr(tg_error(), "past the end"));
  CHECK(tg_from_file(p, -1, TG_SHAPE(1), TG_F32) == NULL);
  CHECK(tg_from_file("/nonexistent/raw.bin", 0, TG_SHAPE(1), TG_F32) == NULL && strstr(tg_error(), "/nonexistent/raw.bin"));
  tg_scope_end();
  unlink(p);
}
