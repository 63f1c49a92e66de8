/* test_library.c: the library as a user gets it. libtg.so exports exactly
 * the functions of include/ (tests/check_exports.py), and `make install`
 * puts headers, libraries and tg.pc where pkg-config finds them, so that
 * `cc prog.c $(pkg-config --cflags --libs tg)` builds a program that runs. */
#include <limits.h>
#include <unistd.h>
#include "test.h"

/* What a program linked against a sanitized libtg.so must be built with. */
#if defined(__SANITIZE_ADDRESS__)
#define PROG_SAN " -fsanitize=address,undefined"
#elif defined(__SANITIZE_THREAD__)
#define PROG_SAN " -fsanitize=thread"
#else
#define PROG_SAN ""
#endif

static bool have(const char *tool) {
  char cmd[256];
  snprintf(cmd, sizeof cmd, "command -v %s >/dev/null 2>&1", tool);
  return system(cmd) == 0;
}

TEST(exports_match_headers) {
  const char *bd = test_build_dir();
  if (!bd) SKIP("TG_BIN does not name the tg binary (make test sets it)");
  if (!have("python3") || !have("nm")) SKIP("needs python3 and nm (binutils)");
  char cmd[2048], out[16384];
  snprintf(cmd, sizeof cmd, "python3 check_exports.py %s/libtg.so ../include", bd);
  int st = test_run_capture(cmd, out, sizeof out);
  CHECK_MSG(st == 0, "libtg.so's exports and include/ disagree (exit %d):\n%s", st, out);
}

TEST(install_pkg_config) {
  const char *bd = test_build_dir();
  if (!bd) SKIP("TG_BIN does not name the tg binary (make test sets it)");
  if (!have("pkg-config") || !have("make") || !have("cc")) SKIP("needs pkg-config, make and cc");
  char build[PATH_MAX], tmp[] = "/tmp/tg_install_XXXXXX";
  if (!realpath(bd, build)) SKIP("%s: no such build directory", bd);
  CHECK(mkdtemp(tmp) != NULL);
  char cmd[16384], out[16384];
  /* -o all: install what this build holds, never rebuilding it mid-suite */
  snprintf(cmd, sizeof cmd, "make -s -C .. BUILD=%s -o all install PREFIX=%s/usr && "
           "make -s -C .. BUILD=%s -o all install PREFIX=/opt/tg DESTDIR=%s/stage", build, tmp, build, tmp);
  int st = test_run_capture(cmd, out, sizeof out);
  CHECK_MSG(st == 0, "make install failed (exit %d):\n%s", st, out);

  /* DESTDIR stages the tree; tg.pc names the final prefix */
  const char *staged[] = { "include/tg.h", "include/tg_api.h", "lib/libtg.a", "lib/libtg.so", "lib/libtg.so.0",
                           "lib/libtg.so.0.2.0", "bin/tg", "lib/pkgconfig/tg.pc" };
  for (size_t i = 0; i < sizeof staged / sizeof staged[0]; i++) {
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/stage/opt/tg/%s", tmp, staged[i]);
    CHECK_MSG(access(path, F_OK) == 0, "make install DESTDIR= did not install %s", path);
  }
  snprintf(cmd, sizeof cmd, "PKG_CONFIG_PATH=%s/stage/opt/tg/lib/pkgconfig pkg-config --variable=prefix tg", tmp);
  CHECK(test_run_capture(cmd, out, sizeof out) == 0 && strcmp(out, "/opt/tg\n") == 0);

  /* examples/hello.c built the README's way against the installed copy:
   * 1+10, 2+20, 3+30; the program records libtg.so.0, the soname */
  snprintf(cmd, sizeof cmd, "export PKG_CONFIG_PATH=%s/usr/lib/pkgconfig && "
           "cc -std=c11" PROG_SAN " ../examples/hello.c $(pkg-config --cflags --libs tg) -o %s/hello && "
           "LD_LIBRARY_PATH=%s/usr/lib %s/hello", tmp, tmp, tmp, tmp);
  st = test_run_capture(cmd, out, sizeof out);
  CHECK_MSG(st == 0 && strstr(out, "[11, 22, 33]"), "the installed hello (exit %d) said:\n%s", st, out);
  snprintf(cmd, sizeof cmd, "readelf -d %s/hello | grep NEEDED", tmp);
  if (have("readelf")) CHECK(test_run_capture(cmd, out, sizeof out) == 0 && strstr(out, "[libtg.so.0]"));

  snprintf(cmd, sizeof cmd, "rm -rf %s", tmp);
  CHECK(system(cmd) == 0);
}

/* The layers below the scheduler (the IR, codegen, renderers, runtimes)
 * share the kernel vocabulary through uop/kernel_ir.h, not schedule.h. */
TEST(layers_include_no_scheduler_internals) {
  if (system("command -v grep >/dev/null 2>&1") != 0) SKIP("no grep");
  static char out[8192];
  int st = test_run_capture("grep -rn --include='*.c' --include='*.h' '#include \"schedule/' "
                            "../src/codegen ../src/renderer ../src/uop ../src/runtime", out, sizeof out);
  CHECK_MSG(st == 1 && out[0] == 0, "includes of the scheduler below it (use uop/kernel_ir.h):\n%s", out);
}
