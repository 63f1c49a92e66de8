/* test_tensor_cores.c: the TC opt. Its kernels are checked three ways
 * where there is no NVIDIA GPU: rendered as CUDA C they call mma.sync and
 * compile with NVRTC; run on the CL device with the tensor cores emulated
 * through local memory (TG_CL_EMULATE_TC=1) they match the ops_matmul_tc
 * goldens (numpy); and opts that do not fit are refused with reasons. On a
 * GPU the CUDA pass of the suite runs the same goldens on real tensor
 * cores. */
#include <sys/wait.h>
#include <unistd.h>
#include "test.h"
#include "codegen/codegen.h"
#include "codegen/opts.h"
#include "engine/realize.h"
#include "runtime/cuda.h"

/* the kernel of one realize, captured (retained) */
typedef struct { uop *ast; char name[64]; } captured;
static void capture(uop *ast, const char *name, void *ctx) {
  captured *c = ctx;
  if (c->ast) return;
  uop_retain(ast);
  c->ast = ast;
  snprintf(c->name, sizeof c->name, "%s", name);
}

/* the AST of matmul(a (m x k), b (k x n)) in dtype dt, from the CPU */
static captured matmul_kernel(int m, int n, int k, tg_dtype dt) {
  captured c = { 0 };
  tg_scope_begin();
  tg_tensor *a = tg_cast(tg_ones(TG_SHAPE(m, k), TG_F32), dt), *b = tg_cast(tg_ones(TG_SHAPE(k, n), TG_F32), dt);
  tg_realize(a);
  tg_realize(b);
  engine_set_kernel_observer(capture, &c);
  tg_realize(tg_matmul(a, b));
  engine_set_kernel_observer(NULL, NULL);
  tg_scope_end();
  return c;
}

static int opts_of(const char *spec, kopt *o) { return kopts_parse(spec, o, 16); }

TEST(tc_cuda_kernels_call_mma_and_compile) {
  const char *why = NULL;
  bool nvrtc = cuda_nvrtc_available(&why);
  tg_dtype dts[2] = { TG_F16, TG_BF16 };
  for (int i = 0; i < 2; i++) {
    captured c = matmul_kernel(64, 64, 64, dts[i]);
    CHECK(c.ast != NULL);
    if (!c.ast) return;
    kopt o[16];
    int n = kernel_heuristic_opts(c.ast, &renderer_cuda, 1, o, 16);
    CHECK_MSG(n > 0 && o[0].op == OPT_TC, "the heuristic picks TC first for a %s matmul", tg_dtype_name(dts[i]));
    kernel_program kp;
    CHECK_MSG(codegen_program(c.ast, c.name, &renderer_cuda, o, n, false, &kp) == 0, "%s", tg_error());
    if (kp.src) {
      CHECK_MSG(strstr(kp.src, i ? "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32" : "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"), "%s", kp.src);
      CHECK_MSG(kp.local[0] == 32, "the warp is dimension 0 (local %lld)", (long long)kp.local[0]);
      if (nvrtc) CHECK_MSG(cuda_check_source(kp.src, c.name, 80) == 0, "%s", tg_error());
      free(kp.src);
    }
    /* a register tile and more warps, chosen by hand */
    int nn = opts_of("TC:-1:0,UPCAST:1:2,UPCAST:0:2,LOCAL:0:2", o);
    CHECK(codegen_program(c.ast, c.name, &renderer_cuda, o, nn, false, &kp) == 0);
    if (kp.src && nvrtc) CHECK_MSG(cuda_check_source(kp.src, c.name, 80) == 0, "%s", tg_error());
    free(kp.src);
    uop_release(c.ast);
  }
  if (!nvrtc) SKIP("rendered only; NVRTC absent: %s", why);
}

TEST(tc_refused_with_reasons) {
  captured c = matmul_kernel(64, 64, 64, TG_F16);
  captured f = matmul_kernel(64, 64, 64, TG_F32);
  captured odd = matmul_kernel(24, 12, 20, TG_F16);
  if (!c.ast || !f.ast || !odd.ast) { CHECK(false); return; }
  struct { captured *k; const tg_renderer *r; const char *spec, *want; } cases[] = {
    { &c, &renderer_c, "TC:-1:0", "kernels have none" },
    { &c, &renderer_opencl, "TC:-1:0", "kernels have none" },
    { &c, &renderer_cuda, "TC:5:0", "out of range" },
    { &c, &renderer_cuda, "TC:-1:3", "amount must be 0" },
    { &f, &renderer_cuda, "TC:-1:0", "f16 or bf16" },
    { &odd, &renderer_cuda, "TC:-1:0", "multiples" },
    { &c, &renderer_cuda, "UPCAST:0:2,TC:-1:0", "come first" },
    { &c, &renderer_cuda, "TC:-1:0,UNROLL:0:2", "tensor-core kernel" },
    { &c, &renderer_cuda, "TC:-1:0,GROUP:0:4", "tensor-core kernel" },
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    kopt o[16];
    int n = opts_of(cases[i].spec, o);
    kernel_program kp;
    int rc = codegen_program(cases[i].k->ast, cases[i].k->name, cases[i].r, o, n, false, &kp);
    CHECK_MSG(rc < 0, "%s on %s should be refused", cases[i].spec, cases[i].r->name);
    if (rc < 0) CHECK_MSG(strstr(tg_error(), cases[i].want), "%s: '%s' lacks '%s'", cases[i].spec, tg_error(), cases[i].want);
    else free(kp.src);
  }
  /* the heuristic leaves kernels a tensor core cannot take alone */
  kopt o[16];
  int n = kernel_heuristic_opts(odd.ast, &renderer_cuda, 1, o, 16);
  for (int i = 0; i < n; i++) CHECK(o[i].op != OPT_TC);
  uop_release(c.ast);
  uop_release(f.ast);
  uop_release(odd.ast);
}

static bool have_cl(void) {
  tg_device_info info[32];
  int n = tg_devices(info, 32, NULL);
  for (int i = 0; i < n && i < 32; i++) if (!strncmp(info[i].name, "CL", 2)) return true;
  return false;
}

/* The ops_matmul_tc goldens in a fresh process whose CL device emulates
 * the tensor cores (an environment variable read when the device opens);
 * DEBUG=3 shows the opts, so the run proves TC kernels ran. */
TEST(tc_cl_emulated_goldens) {
  if (!have_cl()) SKIP("no OpenCL device");
  int fd[2];
  if (pipe(fd) < 0) { CHECK(false); return; }
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(fd[1], 1);
    dup2(fd[1], 2);
    close(fd[0]);
    setenv("TG_DEVICE", "CL", 1);
    setenv("TG_CL_EMULATE_TC", "1", 1);
    setenv("TG_TEST_PASSES", "none", 1);
    setenv("DEBUG", "3", 1);
    execl("/proc/self/exe", "tg_tests", "ops_matmul_tc", (char *)NULL);
    _exit(127);
  }
  close(fd[1]);
  strbuf out = { 0 };
  char buf[4096];
  ssize_t r;
  while ((r = read(fd[0], buf, sizeof buf - 1)) > 0) { buf[r] = 0; sb_puts(&out, buf); }
  close(fd[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  const char *s = out.s ? out.s : "";
  int tc = 0;
  for (const char *p = s; (p = strstr(p, ": TC:-1:0")); p++) tc++;
  CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0 && strstr(s, "1 passed, 0 failed"), "the emulated run failed:\n%.4000s", s + (strlen(s) > 4000 ? strlen(s) - 4000 : 0));
  CHECK_MSG(tc >= 8, "%d kernels ran on (emulated) tensor cores, expected the 8 tileable matmuls", tc);
  sb_free(&out);
}
