/* cpu.c: the CPU device. Memory is 64-byte aligned host memory; kernels are C
 * source compiled by the system C compiler into a shared object, cached on
 * disk (compile_cache.c) and loaded with dlopen.
 *
 * Compiling:
 *   compiler  $CC when set, else the first of clang, gcc, cc found on PATH.
 *             $CC may be a path (spaces allowed) or a command with words
 *             ("ccache gcc"); it runs without a shell.
 *   flags     cpu_compile_flags below, plus -lm when linking.
 *   cache key source + compiler (resolved path, extra words, `--version`
 *             output) + flags + this machine's CPU model and feature flags
 *             (kernels use -march=native, and ~/.cache may be shared by
 *             machines of different kinds).
 * A compile first looks in an in-process map (cache key -> dlopen handle), then
 * for the .so on disk (unless TG_NOCACHE=1), and only then runs the compiler:
 * into temp files in the cache directory, renamed into place atomically, so
 * processes sharing the cache never see half-written files. Shared state sits
 * behind one mutex that is never held while a compiler runs, so several
 * threads may compile at once.
 *
 * Loaded objects stay loaded until the process exits: a tg_program only
 * borrows the handle, and dlopen is called once per kernel and process. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "runtime/cpu_compiler.h"
#include "runtime/cpu_slab.h"
#include "runtime/page_populate.h"
#include "runtime/device.h"
#include "runtime/thread_pool.h"
#include "util/counters.h"
#include "util/util.h"
#include "util/settings.h"

extern char **environ;

/* -ffp-contract=off: no fused multiply-add unless the source asks for one, so
 * a*b+c rounds twice exactly as the reference loops (and numpy) compute it;
 * results then do not depend on the compiler or on -march=native.
 * -fno-math-errno lets sqrt & co. become single instructions (kernels never
 * read errno).
 * -mprefer-vector-width=512 (x86-64): on Intel CPUs with AVX-512 both gcc and
 * clang otherwise split 64-byte vectors into 32-byte halves; with it,
 * quantized matvecs run 1.2-1.4x faster (LLM decoding, Sapphire Rapids
 * class Xeon: Q8_0 130-140 -> 170-184 tok/s). */
#if defined(__x86_64__)
#define CPU_VECTOR_WIDTH_FLAG " -mprefer-vector-width=512"
#else
#define CPU_VECTOR_WIDTH_FLAG ""
#endif
#define CPU_COMPILE_FLAGS "-O2 -march=native" CPU_VECTOR_WIDTH_FLAG " -fPIC -shared -fno-math-errno -ffp-contract=off"
const char *const cpu_compile_flags = CPU_COMPILE_FLAGS;

#define CPU_ALIGN 64
#define MAX_COMPILER_OUTPUT 65536   /* what we keep of a compiler's output */
#define ERR_COMPILER_OUTPUT 2000    /* what of it goes into tg_error */

/* ---------------------------------------------------------------- memory */

/* Big buffers are mapped pages of their own (not ASan builds, whose
 * malloc keeps redzones around them): given back whole at free, and known
 * to read zero when fresh, so a buffer that starts as zeros (a KV cache,
 * optimizer state) costs nothing until its pages are touched, and the
 * pages never touched (the far end of a long context) are never faulted
 * in. Any other buffer is about to be written whole (a kernel's output, a
 * packed weight), so its pages are made at once (MADV_POPULATE_WRITE, one
 * call) rather than by a fault per 4 KiB page as a kernel first writes
 * them: a 125M model's packed weights took about 20,000 faults at load.
 * Those below 2 MiB share chunks of huge pages (cpu_slab.c). */
#if defined(__SANITIZE_ADDRESS__)
#define CPU_MAP_MIN SIZE_MAX
#else
#define CPU_MAP_MIN ((size_t)256 << 10)
#endif

static size_t cpu_rounded(size_t nbytes) {
  /* Round up to whole cache lines (and give zero-size buffers a real,
   * distinct pointer): vector code may then touch the tail line safely. */
  return nbytes ? (nbytes + CPU_ALIGN - 1) / CPU_ALIGN * CPU_ALIGN : CPU_ALIGN;
}

static void *cpu_alloc_pages(size_t nbytes, bool populate) {
  if (nbytes > SIZE_MAX - CPU_ALIGN) TG_FAIL("CPU: cannot allocate %zu bytes", nbytes);
  size_t n = cpu_rounded(nbytes);
  /* below 2 MiB, a buffer about to be written shares huge pages (cpu_slab.c) */
  void *p = populate && n >= CPU_MAP_MIN ? cpu_slab_alloc(n) : NULL;
  if (p) return p;
  if (n >= CPU_MAP_MIN) {
    p = populate ? cpu_map_populated(n) : tg_map_pages(n, false);
    if (!p) TG_FAIL("CPU: out of memory allocating %zu bytes", nbytes);
    return p;
  }
  if (posix_memalign(&p, CPU_ALIGN, n) != 0) TG_FAIL("CPU: out of memory allocating %zu bytes", nbytes);
  if (!populate) memset(p, 0, n);
  return p;
}

static void *cpu_alloc(struct tg_device *d, size_t nbytes) { return cpu_alloc_pages(nbytes, true); }
static void *cpu_alloc_zeroed(struct tg_device *d, size_t nbytes) { return cpu_alloc_pages(nbytes, false); }

static void cpu_free(struct tg_device *d, void *p, size_t nbytes) {
  size_t n = cpu_rounded(nbytes);
  if (!p || n < CPU_MAP_MIN) free(p);
  else if (!cpu_slab_free(p)) tg_unmap_pages(p, n);
}
static int cpu_copyin(struct tg_device *d, void *dst, const void *host, size_t n) { if (n) memcpy(dst, host, n); return 0; }
static int cpu_copyout(struct tg_device *d, void *host, const void *src, size_t n) { if (n) memcpy(host, src, n); return 0; }

/* ---------------------------------------------------------------- processes */

typedef VEC(char *) strvec;

static void strvec_free(strvec *v) {
  for (int i = 0; i < v->n; i++) free(v->v[i]);
  VEC_FREE(*v);
}

/* Runs argv (argv[0] a path) without a shell, stdin from /dev/null, stdout
 * and stderr into *out (the first MAX_COMPILER_OUTPUT bytes). *status gets the
 * wait status. -1 + tg_error when it could not start. */
static int run_cmd(char *const argv[], strbuf *out, int *status) {
  int fds[2];
  /* O_CLOEXEC: a process spawned by another thread must not inherit the write
   * end, or our read would wait for that process too. */
  if (pipe2(fds, O_CLOEXEC) != 0) return tg_seterr("CPU: pipe: %s", strerror(errno));
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 2);
  pid_t pid;
  int rc = posix_spawn(&pid, argv[0], &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  close(fds[1]);
  if (rc != 0) {
    close(fds[0]);
    return tg_seterr("CPU: cannot run '%s': %s", argv[0], strerror(rc));
  }
  char buf[4096];
  for (;;) {
    ssize_t k = read(fds[0], buf, sizeof buf);
    if (k > 0) {
      size_t room = out->n < MAX_COMPILER_OUTPUT ? MAX_COMPILER_OUTPUT - out->n : 0;
      if (room) sb_printf(out, "%.*s", (int)((size_t)k < room ? (size_t)k : room), buf);
    } else if (k == 0 || errno != EINTR) {
      break;
    }
  }
  close(fds[0]);
  int st = 0;
  while (waitpid(pid, &st, 0) < 0) {
    if (errno != EINTR) { st = -1; break; }   /* e.g. SIGCHLD ignored: status unknown */
  }
  *status = st;
  return 0;
}

static void describe_status(int st, char *buf, size_t n) {
  if (st == -1) snprintf(buf, n, "status unknown");
  else if (WIFEXITED(st)) snprintf(buf, n, "exit status %d", WEXITSTATUS(st));
  else if (WIFSIGNALED(st)) snprintf(buf, n, "killed by signal %d", WTERMSIG(st));
  else snprintf(buf, n, "wait status %d", st);
}

/* ---------------------------------------------------------------- the compiler */

static bool is_exec_file(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

/* A program name or path -> malloc'd path of an executable, or NULL. */
static char *find_exe(const char *name) {
  if (!*name) return NULL;
  if (strchr(name, '/')) return is_exec_file(name) ? tg_xstrdup(name) : NULL;
  const char *path = setting_str(SET_PATH);
  if (!path) path = "/usr/local/bin:/usr/bin:/bin";
  strbuf sb = { 0 };
  for (const char *p = path; ; ) {
    const char *e = strchr(p, ':');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    sb.n = 0;
    if (len) sb_printf(&sb, "%.*s/%s", (int)len, p, name);
    else sb_printf(&sb, "./%s", name);   /* an empty PATH entry is the cwd */
    if (is_exec_file(sb.s)) return sb.s;
    if (!e) break;
    p = e + 1;
  }
  sb_free(&sb);
  return NULL;
}

/* The compiler command (argv[0] resolved to a path) into *cmd; -1 + tg_error
 * when there is none. Resolved at every compile: $CC may change at run time. */
static int resolve_compiler(strvec *cmd) {
  const char *cc = setting_str(SET_CC);
  if (cc && *cc) {
    char *exe = find_exe(cc);   /* the whole value first: paths may hold spaces */
    if (exe) { VEC_PUSH(*cmd, exe); return 0; }
    /* else words: "ccache gcc", "gcc -m64" */
    char *copy = tg_xstrdup(cc), *save = NULL;
    for (char *w = strtok_r(copy, " \t", &save); w; w = strtok_r(NULL, " \t", &save)) VEC_PUSH(*cmd, tg_xstrdup(w));
    free(copy);
    if (cmd->n) {
      exe = find_exe(cmd->v[0]);
      if (exe) { free(cmd->v[0]); cmd->v[0] = exe; return 0; }
    }
    strvec_free(cmd);
    return tg_seterr("C compiler '%s' (from $CC) not found or not executable", cc);
  }
  static const char *const names[] = { "clang", "gcc", "cc" };
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    char *exe = find_exe(names[i]);
    if (exe) { VEC_PUSH(*cmd, exe); return 0; }
  }
  return tg_seterr("no C compiler found (tried clang, gcc, cc); set CC");
}

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;   /* guards the tables below */

/* `compiler --version`, asked once per process and compiler. */
typedef struct { char *exe, *version; } version_entry;
static VEC(version_entry) versions;

/* Where the compile cache keeps exe's version text: keyed by the binary
 * itself (resolved path, device, inode, size, modification time), so a
 * process start reads a file instead of running `clang --version` (tens of
 * milliseconds, a large part of a small model's first token), and an
 * upgraded compiler gets a new key. NULL when exe cannot be stat'ed. */
static char *version_cache_path(const char *exe) {
  char *real = realpath(exe, NULL);
  struct stat st;
  if (!real || stat(real, &st) != 0) { free(real); return NULL; }
  strbuf id = { 0 };
  sb_printf(&id, "%s\x1f%llu\x1f%llu\x1f%lld\x1f%lld.%09ld", real, (unsigned long long)st.st_dev, (unsigned long long)st.st_ino,
            (long long)st.st_size, (long long)st.st_mtim.tv_sec, (long)st.st_mtim.tv_nsec);
  free(real);
  char *path = compile_cache_path(id.s, "compiler --version", "", ".version");
  sb_free(&id);
  return path;
}

static char *compiler_version(const char *exe) {
  char *r = NULL;
  pthread_mutex_lock(&lock);
  for (int i = 0; i < versions.n && !r; i++)
    if (strcmp(versions.v[i].exe, exe) == 0) r = tg_xstrdup(versions.v[i].version);
  pthread_mutex_unlock(&lock);
  if (r) return r;
  char *vpath = version_cache_path(exe);
  size_t n = 0;
  char *cached = vpath ? cache_read_file(vpath, &n) : NULL;
  char *v;
  if (cached) {
    v = tg_xmalloc(n + 1);
    memcpy(v, cached, n);
    v[n] = 0;
    free(cached);
  } else {
    strbuf out = { 0 };
    int st = 0;
    char *argv[] = { (char *)exe, "--version", NULL };
    if (run_cmd(argv, &out, &st) != 0 || st != 0) out.n = 0;   /* unknown: still usable */
    v = tg_xstrdup(out.s && out.n ? out.s : "");
    sb_free(&out);
    if (vpath && *v) cache_write_file(vpath, v, strlen(v));
  }
  free(vpath);
  pthread_mutex_lock(&lock);
  bool known = false;
  for (int i = 0; i < versions.n && !known; i++) known = strcmp(versions.v[i].exe, exe) == 0;
  if (!known) VEC_PUSH(versions, ((version_entry){ tg_xstrdup(exe), tg_xstrdup(v) }));
  pthread_mutex_unlock(&lock);
  return v;
}

/* What -march=native means here: the first CPU's model and feature lines. */
static char *cpu_ident;
static pthread_once_t cpu_ident_once = PTHREAD_ONCE_INIT;

static void read_cpu_ident(void) {
  static const char *const keys[] = { "vendor_id", "cpu family", "model", "model name", "stepping",
    "flags", "Features", "CPU implementer", "CPU architecture", "CPU variant", "CPU part", "isa", "uarch" };
  strbuf sb = { 0 };
  sb_puts(&sb, "");
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (f) {
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, f) > 0) {
      if (line[0] == '\n') { if (sb.n) break; continue; }   /* only the first processor */
      char *colon = strchr(line, ':');
      if (!colon) continue;
      size_t klen = (size_t)(colon - line);
      while (klen && (line[klen - 1] == ' ' || line[klen - 1] == '\t')) klen--;
      for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        if (strlen(keys[i]) == klen && strncmp(line, keys[i], klen) == 0) { sb_puts(&sb, line); break; }
    }
    free(line);
    fclose(f);
  }
  cpu_ident = sb.s;
}

/* ---------------------------------------------------------------- loaded kernels */

typedef struct { char *key; void *handle; } loaded_entry;
static VEC(loaded_entry) loaded;   /* by cache file name (the hash) */

static void *loaded_get_locked(const char *key) {
  for (int i = 0; i < loaded.n; i++)
    if (strcmp(loaded.v[i].key, key) == 0) return loaded.v[i].handle;
  return NULL;
}

/* Keys some thread is compiling now. Devices that share a compiler (CPU,
 * CPU:1 ...) get the same source for the same kernel, often in the same
 * batch of parallel compiles: the second waits for the first's file
 * instead of compiling it again. */
static VEC(char *) compiling;
static pthread_cond_t compiled_cond = PTHREAD_COND_INITIALIZER;

static int compiling_index_locked(const char *key) {
  for (int i = 0; i < compiling.n; i++)
    if (strcmp(compiling.v[i], key) == 0) return i;
  return -1;
}

/* The loaded handle of key, waiting while another thread compiles it; NULL
 * with *claimed set when this thread is now the one to build it. */
static void *loaded_or_claim(const char *key, bool *claimed) {
  pthread_mutex_lock(&lock);
  void *h = loaded_get_locked(key);
  while (!h && compiling_index_locked(key) >= 0) {
    pthread_cond_wait(&compiled_cond, &lock);
    h = loaded_get_locked(key);
  }
  *claimed = !h;
  if (!h) VEC_PUSH(compiling, tg_xstrdup(key));
  pthread_mutex_unlock(&lock);
  return h;
}

static void release_claim_locked(const char *key) {
  int i = compiling_index_locked(key);
  if (i < 0) return;
  free(compiling.v[i]);
  compiling.v[i] = compiling.v[--compiling.n];
  pthread_cond_broadcast(&compiled_cond);
}

void cpu_forget_loaded(void) {
  pthread_mutex_lock(&lock);
  for (int i = 0; i < loaded.n; i++) free(loaded.v[i].key);   /* handles stay open */
  VEC_FREE(loaded);
  pthread_mutex_unlock(&lock);
}

/* ---------------------------------------------------------------- compiling */

/* Compiles src into `path` (through temp files next to it) and loads it. */
static void *compile_and_load(const char *path, const strvec *cc, const char *src, const char *name) {
  strbuf tc = { 0 }, to = { 0 };
  sb_printf(&tc, "%s.XXXXXX.c", path);
  int fd = mkstemps(tc.s, 2);
  if (fd < 0) {
    tg_seterr("CPU: compiling kernel '%s': cannot create %s: %s", name, tc.s, strerror(errno));
    sb_free(&tc);
    return NULL;
  }
  size_t len = strlen(src), off = 0;
  while (off < len) {
    ssize_t k = write(fd, src + off, len - off);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) break;
    off += (size_t)k;
  }
  if (close(fd) != 0 || off < len) {
    tg_seterr("CPU: compiling kernel '%s': cannot write %s: %s", name, tc.s, strerror(errno));
    unlink(tc.s);
    sb_free(&tc);
    return NULL;
  }
  /* The output's name derives from the exclusively created source's name, so
   * it is unique too. */
  sb_printf(&to, "%.*s.tmp", (int)(tc.n - 2), tc.s);

  strvec argv = { 0 };
  for (int i = 0; i < cc->n; i++) VEC_PUSH(argv, cc->v[i]);
  char *flags = tg_xstrdup(cpu_compile_flags), *save = NULL;
  for (char *w = strtok_r(flags, " ", &save); w; w = strtok_r(NULL, " ", &save)) VEC_PUSH(argv, w);
  VEC_PUSH(argv, "-o");
  VEC_PUSH(argv, to.s);
  VEC_PUSH(argv, tc.s);
  VEC_PUSH(argv, "-lm");
  VEC_PUSH(argv, NULL);

  strbuf out = { 0 };
  int st = 0;
  void *h = NULL;
  int rc = run_cmd(argv.v, &out, &st);
  unlink(tc.s);
  if (rc != 0) {
    /* tg_error says why the compiler could not start */
  } else if (st != 0) {
    char how[64];
    describe_status(st, how, sizeof how);
    tg_seterr("CPU: compiling kernel '%s' failed (%s, %s):\n%.*s", name, cc->v[0], how,
              ERR_COMPILER_OUTPUT, out.s ? out.s : "(no output)");
    unlink(to.s);
  } else if (rename(to.s, path) == 0) {
    h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) tg_seterr("CPU: cannot load kernel '%s' from %s: %s", name, path, dlerror());
  } else {
    /* Cannot put it in place (read-only cache?): load it from the temp file,
     * which may go once it is mapped. */
    h = dlopen(to.s, RTLD_NOW | RTLD_LOCAL);
    if (!h) tg_seterr("CPU: cannot load kernel '%s' from %s: %s", name, to.s, dlerror());
    unlink(to.s);
  }
  sb_free(&out);
  free(flags);
  VEC_FREE(argv);
  sb_free(&tc);
  sb_free(&to);
  return h;
}

static tg_program *cpu_compile(struct tg_device *d, const char *src, const char *name) {
  if (!src || !name || !*name) TG_FAIL("CPU: compile needs a source and a kernel name");
  strvec cc = { 0 };
  if (resolve_compiler(&cc) != 0) return NULL;
  pthread_once(&cpu_ident_once, read_cpu_ident);

  /* Everything that decides the compiler's output goes into the key. */
  char *version = compiler_version(cc.v[0]);
  strbuf id = { 0 };
  for (int i = 0; i < cc.n; i++) sb_printf(&id, "%s\x1f", cc.v[i]);
  sb_printf(&id, "\n%s\n%s", version, cpu_ident ? cpu_ident : "");
  free(version);
  char *path = compile_cache_path(src, id.s, cpu_compile_flags, ".so");
  sb_free(&id);
  if (!path) { strvec_free(&cc); return NULL; }
  const char *slash = strrchr(path, '/');
  const char *key = slash ? slash + 1 : path;

  bool nocache = setting_int(SET_TG_NOCACHE) == 1;
  bool cached = false, claimed = false;
  void *h = NULL;
  if (!nocache) {
    h = loaded_or_claim(key, &claimed);
    if (!h && access(path, R_OK) == 0) {
      h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
      if (!h && setting_int(SET_DEBUG) >= 1)   /* e.g. a truncated file: build it anew */
        fprintf(stderr, "tg: cached kernel %s does not load (%s); recompiling\n", path, dlerror());
    }
    cached = h != NULL;
  }
  if (!h) h = compile_and_load(path, &cc, src, name);
  strvec_free(&cc);

  /* One handle per key and process. dlopen of a path already loaded returns
   * the same handle, so `old != h` only when two threads raced through
   * different files (TG_NOCACHE); keep the first. */
  pthread_mutex_lock(&lock);
  void *old = h ? loaded_get_locked(key) : NULL;
  if (h && !old) VEC_PUSH(loaded, ((loaded_entry){ tg_xstrdup(key), h }));
  if (claimed) release_claim_locked(key);   /* a waiter that finds no handle (failed) tries itself */
  pthread_mutex_unlock(&lock);
  if (!h) { free(path); return NULL; }
  if (old && old != h) { dlclose(h); h = old; }
  counters_add_compile(cached);

  dlerror();
  void *sym = dlsym(h, name);
  if (!sym) {
    const char *e = dlerror();
    tg_seterr("CPU: kernel '%s' not found in %s: %s", name, path, e ? e : "symbol is NULL");
    free(path);
    return NULL;
  }
  free(path);
  tg_program *p = tg_xcalloc(1, sizeof *p);
  p->dev = d;
  p->name = tg_xstrdup(name);
  /* POSIX guarantees that a data pointer from dlsym converts to a function
   * pointer; go through memcpy to keep -Wpedantic quiet. */
  memcpy(&p->fn, &sym, sizeof p->fn);
  p->handle = h;
  return p;
}

static void cpu_program_free(struct tg_device *d, tg_program *p) {
  if (!p) return;
  /* The handle belongs to the loaded-kernels map; it stays open. */
  free(p->name);
  free(p);
}

/* ---------------------------------------------------------------- launching */

/* Kernels split their outermost parallel loop by (core, ncores); the pool
 * (thread_pool.c) calls them once per core, the calling thread being core 0. */
typedef struct { tg_kernel_fn fn; void **bufs; const int64_t *vars; } launch_args;

static void launch_core(void *arg, int core, int ncores) {
  const launch_args *l = arg;
  l->fn(l->bufs, l->vars, core, ncores);
}

static int cpu_launch(struct tg_device *d, tg_program *p, void **bufs, int nbufs, const int64_t *vars, int nvars) {
  if (!p || !p->fn) return tg_seterr("CPU: launch of a program with no function ('%s')", p && p->name ? p->name : "?");
  int n = tg_pool_threads();
  if (p->max_cores > 0 && p->max_cores < n) n = p->max_cores;
  if (n <= 1) {
    p->fn(bufs, vars, 0, 1);
  } else {
    launch_args l = { p->fn, bufs, vars };
    tg_pool_run(launch_core, &l, n);
  }
  return 0;
}

/* A batch: every core runs the kernels in order, with a barrier between
 * two kernels unless both run on core 0 alone (a kernel limited to fewer
 * cores than the pool's skips the others). One pool hand-off per batch. */
typedef struct {
  tg_program *const *progs;
  void **const *bufs;
  const int64_t *const *vars;
  int n;
  tg_pool_barrier barrier;
} batch_args;

static int batch_cores(const tg_program *p, int ncores) { return p->max_cores > 0 && p->max_cores < ncores ? p->max_cores : ncores; }

static void batch_core(void *arg, int core, int ncores) {
  batch_args *a = arg;
  for (int i = 0; i < a->n; i++) {
    int kn = batch_cores(a->progs[i], ncores);
    if (i > 0 && (kn > 1 || batch_cores(a->progs[i - 1], ncores) > 1)) tg_pool_barrier_wait(&a->barrier, ncores);
    if (core < kn) a->progs[i]->fn(a->bufs[i], a->vars[i], core, kn);
  }
}

static int cpu_launch_batch(struct tg_device *d, tg_program *const *progs, void **const *bufs, const int64_t *const *vars, int n) {
  for (int i = 0; i < n; i++)
    if (!progs[i] || !progs[i]->fn) return tg_seterr("CPU: launch of a program with no function ('%s')", progs[i] && progs[i]->name ? progs[i]->name : "?");
  batch_args a = { progs, bufs, vars, n, { 0, 0 } };
  /* kernels that all run on one core need no workers */
  int wide = 0, t = tg_pool_threads();
  for (int i = 0; i < n && !wide; i++) wide = batch_cores(progs[i], t) > 1;
  if (!wide) { batch_core(&a, 0, 1); return 0; }
  if (tg_pool_run_together(batch_core, &a, 0) > 0) return 0;
  /* the pool is busy (a launch from another thread): one by one */
  for (int i = 0; i < n; i++) if (cpu_launch(d, progs[i], bufs[i], 0, vars[i], 0) < 0) return -1;
  return 0;
}

/* ---------------------------------------------------------------- the device */

static struct tg_device cpu_dev = {
  .name = "CPU",
  .alloc = cpu_alloc,
  .alloc_zeroed = cpu_alloc_zeroed,
  .free = cpu_free,
  .copyin = cpu_copyin,
  .copyout = cpu_copyout,
  .compile = cpu_compile,
  .program_free = cpu_program_free,
  .launch = cpu_launch,
  .launch_batch = cpu_launch_batch,
  .renderer = &renderer_c,
  .compile_flags = CPU_COMPILE_FLAGS,
  .host_memory = true,
};

/* what tg_devices says: the model name of the first CPU, the core count,
 * the memory */
static void cpu_describe(void) {
  pthread_once(&cpu_ident_once, read_cpu_ident);
  const char *m = cpu_ident ? strstr(cpu_ident, "model name") : NULL;
  const char *colon = m ? strchr(m, ':') : NULL;
  char model[100] = "unknown CPU";
  if (colon) {
    colon++;
    while (*colon == ' ' || *colon == '\t') colon++;
    snprintf(model, sizeof model, "%.*s", (int)strcspn(colon, "\n"), colon);
  }
  snprintf(cpu_dev.description, sizeof cpu_dev.description, "%s, %d threads", model, tg_pool_threads());
  long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
  cpu_dev.memory = pages > 0 && psz > 0 ? (int64_t)pages * psz : 0;
}

struct tg_device *cpu_device(void) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, cpu_describe);
  return &cpu_dev;
}

/* ---------------------------------------------------------------- CPU:1, CPU:2, ...
 * More CPU devices in one process, for sharding and data-parallel work
 * without a second machine: each is a device of its own (its own name, its
 * buffers and allocator cache, copies to and from the others scheduled like
 * any cross-device copy), with the same compiler and kernels. They share
 * the process's thread pool: one launch at a time gets its workers, a launch
 * from another thread while it is busy runs its cores in turn on that thread
 * (thread_pool.h). $TG_CPU_DEVICES (1..16, default 2) says how many exist. */
#define CPU_DEVICES_MAX 16

int cpu_count(const char **why) {
  long n = setting_int(SET_TG_CPU_DEVICES);
  return n < 1 ? 1 : n > CPU_DEVICES_MAX ? CPU_DEVICES_MAX : (int)n;
}

struct tg_device *cpu_open(int index) {
  tg_device *base = cpu_device();
  if (index == 0) return base;
  tg_device *d = device_new(base, "CPU", index, base->renderer, base->compile_flags, base->memory, NULL);
  snprintf(d->description, sizeof d->description, "%.90s (the process's cores)", base->description);
  return d;
}
