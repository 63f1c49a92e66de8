/* test_dist_nccl.c: the NCCL path of tg_dist (src/dist/dist_nccl.c) without
 * a GPU: tg's declarations compiled against NVIDIA's nccl.h, the calls tg
 * makes checked against a stand-in library that records them
 * (tests/dist/fake_nccl.c), and the real libnccl loaded, its version read
 * and a communicator refused with NCCL's own error where no GPU is
 * present. The collectives of CUDA tensors across ranks run in a GPU
 * session (tools/gpu_check.sh). */
#include <dlfcn.h>
#include <sys/wait.h>
#include <glob.h>
#include <stdlib.h>
#include <unistd.h>
#include "test.h"
#include "tg_dist.h"
#include "dist/dist_nccl.h"
#include "dist/fake_nccl.h"
#include "engine/realize.h"
#include "runtime/buffer.h"
#include "runtime/device.h"
#include "tensor/tensor.h"

/* Whether dir holds file; then dir is copied to out (n bytes). */
static bool holds(const char *dir, const char *file, char *out, size_t n) {
  size_t dl = strlen(dir), fl = strlen(file);
  char *p = malloc(dl + fl + 2);
  memcpy(p, dir, dl);
  p[dl] = '/';
  memcpy(p + dl + 1, file, fl + 1);
  bool ok = access(p, R_OK) == 0 && dl < n;
  free(p);
  if (ok) memcpy(out, dir, dl + 1);
  return ok;
}

/* The first directory that holds `file`: $CUDA_PATH/include, the CUDA
 * toolkit's, the system's; NULL when none. */
static const char *include_dir_of(const char *file, char *dir, size_t n) {
  const char *cuda = getenv("CUDA_PATH");
  if (cuda && *cuda) {
    char *inc = malloc(strlen(cuda) + 9);
    sprintf(inc, "%s/include", cuda);
    bool ok = holds(inc, file, dir, n);
    free(inc);
    if (ok) return dir;
  }
  if (holds("/usr/local/cuda/include", file, dir, n)) return dir;
  glob_t g;
  bool found = false;
  if (glob("/usr/local/cuda-*/include", 0, NULL, &g) == 0) {
    for (size_t i = 0; i < g.gl_pathc && !found; i++) found = holds(g.gl_pathv[i], file, dir, n);
    globfree(&g);
  }
  if (found || holds("/usr/include", file, dir, n) || holds("/usr/local/include", file, dir, n)) return dir;
  return NULL;
}

TEST(dist_nccl_header_matches) {
  char nccl_dir[512], cuda_dir[512];
  if (!include_dir_of("nccl.h", nccl_dir, sizeof nccl_dir)) SKIP("no nccl.h (NVIDIA's NCCL headers; CUDA_PATH names the toolkit)");
  if (!include_dir_of("cuda_runtime.h", cuda_dir, sizeof cuda_dir)) SKIP("no cuda_runtime.h, which nccl.h includes (the CUDA toolkit)");
  char cmd[1536];
  static char out[16384];
  snprintf(cmd, sizeof cmd, "cc -fsyntax-only -std=c11 -Wall -Wextra -Werror -I../include -I../src -isystem %s -isystem %s dist/nccl_check.c 2>&1", nccl_dir, cuda_dir);
  int rc = test_run_capture(cmd, out, sizeof out);
  CHECK_MSG(rc == 0, "src/dist/dist_nccl.h does not match %s/nccl.h:\n%s", nccl_dir, out);
}

TEST(dist_nccl_calls_with_a_fake_library) {
  const char *bd = test_build_dir();
  if (!bd) SKIP("TG_BIN does not name the tg binary (make test sets it)");
  char fake[1200];
  snprintf(fake, sizeof fake, "%s/tests/libfake_nccl.so", bd);
  if (access(fake, R_OK) != 0) SKIP("%s is not built (make %s)", fake, fake + 3);
  setenv("TG_NCCL_LIB", fake, 1);
  dist_nccl_unload();
  CHECK_OK(tg_dist_init() == 0);
  CHECK_MSG(dist_nccl_load() == 0, "%s", tg_error());
  CHECK_MSG(dist_nccl_version() && !strcmp(dist_nccl_version(), "NCCL 2.18.9"), "version %s", dist_nccl_version() ? dist_nccl_version() : "-");
  void *h = dlopen(fake, RTLD_NOW | RTLD_NOLOAD);
  fake_nccl_log_t *log = h ? dlsym(h, "fake_nccl_log") : NULL;
  CHECK_MSG(log != NULL, "the fake library's record: %s", dlerror());
  if (!log) goto out;
  /* the communicator: rank 0's id, the world's size and rank */
  CHECK_MSG(dist_nccl_comm_init(3, 0, 1) == 0, "%s", tg_error());
  CHECK(log->nranks == 1 && log->rank == 0 && !strcmp(log->id, "fake nccl id") && log->made);
  /* allreduce: in place, the count, NCCL's type and op for each, on the default stream */
  static const struct { tg_dtype dt; tg_dist_op op; int type, nop; } cases[] = {
    { TG_F32, TG_DIST_SUM, TG_NCCL_FLOAT32, TG_NCCL_SUM }, { TG_F64, TG_DIST_MAX, TG_NCCL_FLOAT64, TG_NCCL_MAX },
    { TG_I32, TG_DIST_SUM, TG_NCCL_INT32, TG_NCCL_SUM }, { TG_I64, TG_DIST_MAX, TG_NCCL_INT64, TG_NCCL_MAX },
    { TG_F32, TG_DIST_MEAN, TG_NCCL_FLOAT32, TG_NCCL_AVG },
  };
  double buf[8];
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    int calls = log->calls;
    CHECK_MSG(dist_nccl_allreduce_raw(3, buf, 5, cases[i].dt, cases[i].op) == 0, "case %zu: %s", i, tg_error());
    CHECK_MSG(log->calls == calls + 1 && log->send == buf && log->recv == buf && log->count == 5 && log->type == cases[i].type &&
              log->op == cases[i].nop && log->comm == log->made && !log->stream, "case %zu: type %d op %d count %zu", i, log->type, log->op, log->count);
  }
  CHECK(dist_nccl_allreduce_raw(3, buf, 5, TG_F16, TG_DIST_SUM) < 0 && strstr(tg_error(), "no NCCL type for"));
  CHECK_MSG(dist_nccl_allreduce_raw(3, buf, 13, TG_F32, TG_DIST_SUM) < 0 && strstr(tg_error(), "NCCL: ncclAllReduce failed: invalid argument (fake) (code 4)"),
            "%s", tg_error());
  CHECK(dist_nccl_allreduce_raw(4, buf, 5, TG_F32, TG_DIST_SUM) < 0 && strstr(tg_error(), "no communicator in slot 4"));
  /* broadcast: bytes from root */
  CHECK_MSG(dist_nccl_broadcast_raw(3, buf, 12, 0) == 0 && log->type == TG_NCCL_UINT8 && log->count == 12 && log->root == 0 && log->send == buf &&
            log->recv == buf && log->comm == log->made, "broadcast: type %d count %zu root %d", log->type, log->count, log->root);
  CHECK(dist_nccl_broadcast_raw(3, buf, 12, 7) < 0 && strstr(tg_error(), "ncclBroadcast failed"));
  /* host memory never takes the NCCL path; the communicators go with the library */
  CHECK(!dist_nccl_use(device_get("CPU"), 0, 2));
  dist_nccl_unload();
  CHECK(log->destroyed == 1);
out:
  if (h) dlclose(h);
  unsetenv("TG_NCCL_LIB");
  tg_dist_finalize();
}

/* The real libnccl in a child process: NCCL leaves threads behind (its
 * bootstrap's, made with an id), which the test process should not carry
 * into its leak check. The child reports one line through a pipe:
 * "version|made" or "version|the error". */
static void real_library_child(int fd) {
  char line[1024];
  if (dist_nccl_load() < 0 || tg_dist_init() < 0) {
    snprintf(line, sizeof line, "-|%s", tg_error());
  } else {
    int rc = dist_nccl_comm_init(0, 0, 1);
    snprintf(line, sizeof line, "%s|%s", dist_nccl_version(), rc == 0 ? "made" : tg_error());
    tg_device *gpu = rc == 0 ? device_get("CUDA") : NULL;
    if (gpu) {
      /* a GPU session: NCCL's calls on a CUDA tensor's memory, in a world
       * of one (a sum, a max and a broadcast leave the values as they are) */
      float x[6] = { 1, -2, 3.5f, 4, 5, -6 }, got[6];
      const char *prev = tensor_device_begin("CUDA");
      tg_tensor *t = tg_from_data(x, TG_SHAPE(6), TG_F32);
      tensor_device_end(prev);
      tg_buffer *b = t && tg_realize(t) == 0 ? uop_contiguous_buffer(t->u) : NULL;
      bool ok = b && b->ptr && dist_nccl_allreduce(gpu, b->ptr, 6, TG_F32, TG_DIST_SUM) == 0 &&
                dist_nccl_allreduce(gpu, b->ptr, 6, TG_F32, TG_DIST_MAX) == 0 && dist_nccl_broadcast(gpu, b->ptr, sizeof x, 0) == 0 &&
                tg_data(t, got, sizeof got) == 0;
      if (!ok) snprintf(line, sizeof line, "%s|a CUDA tensor through NCCL: %s", dist_nccl_version(), tg_error());
      else if (memcmp(got, x, sizeof x)) snprintf(line, sizeof line, "%s|a CUDA tensor through NCCL: the values changed", dist_nccl_version());
      else snprintf(line, sizeof line, "%s|made, and a CUDA tensor reduced and broadcast through it", dist_nccl_version());
    }
  }
  ssize_t w = write(fd, line, strlen(line));
  (void)w;
  _exit(0);   /* no exit handlers or leak check with NCCL's threads running */
}

TEST(dist_nccl_real_library) {
  void *h = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
  if (!h) SKIP("no libnccl.so.2 (NVIDIA's NCCL, with the CUDA toolkit)");
  dlclose(h);
  int fds[2];
  CHECK_OK(pipe(fds) == 0);
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    unsetenv("TG_NCCL_LIB");
    real_library_child(fds[1]);
  }
  close(fds[1]);
  char line[1024] = "";
  size_t n = 0;
  ssize_t r;
  while ((r = read(fds[0], line + n, sizeof line - 1 - n)) > 0) n += (size_t)r;
  close(fds[0]);
  int st = 0;
  waitpid(pid, &st, 0);
  CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the child ended with status %d: %s", st, line);
  /* the version, then the communicator: made on a GPU, else refused with NCCL's own error */
  CHECK_MSG(!strncmp(line, "NCCL 2.", 7), "%s", line);
  const char *rest = strchr(line, '|');
  CHECK_MSG(rest && (!strncmp(rest + 1, "made", 4) || strstr(rest, "NCCL: ncclCommInitRank failed: ")), "%s", line);
  printf("  info: %s\n", line);
}
