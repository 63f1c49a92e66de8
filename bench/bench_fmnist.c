/* bench_fmnist.c: the Fashion-MNIST training step (examples/fashion_mnist.c,
 * the beautiful_mnist CNN, Adam, batch 512, JIT'd) against PyTorch on the CPU
 * (bench/fmnist_torch.py, same model, same steps, 2 threads). Both print
 * samples/s after three warm-up steps and the test accuracy after the run.
 *   bench fmnist_train steps=S tg_samples_s=.. torch_samples_s=.. tg_acc=.. torch_acc=.. acc_diff=.. ratio=tg/torch
 * FMNIST_STEPS sets the steps (default 200, the demo's: about a minute for
 * each side here; after only a few steps the two test accuracies differ by
 * their random initializations more than by anything else, 10 points at
 * 10 steps). acc_diff = tg_acc - torch_acc in points. Skipped without the
 * dataset, the example binary, or torch. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int run(const char *cmd, double *rate, double *acc, char *extra, size_t n) {
  FILE *p = popen(cmd, "r");
  if (!p) return -1;
  char line[1024];
  int found = -1;
  while (fgets(line, sizeof line, p)) {
    char *r = strstr(line, "result ");
    if (!r) continue;
    char *s = strstr(r, "samples_per_s="), *a = strstr(r, "accuracy="), *t = strstr(r, "torch=");
    if (s && a) { *rate = atof(s + 14); *acc = atof(a + 9); found = 0; }
    if (t && extra) { snprintf(extra, n, "%s", t + 6); extra[strcspn(extra, "\n")] = 0; }
  }
  pclose(p);
  return found;
}

int main(void) {
  const char *dir = "/usr/share/datasets/fashion-mnist";
  int steps = getenv("FMNIST_STEPS") ? atoi(getenv("FMNIST_STEPS")) : 200;
  if (access(dir, R_OK) != 0) { printf("bench fmnist_train skipped reason=no-dataset (make train installs it)\n"); return 0; }
  if (access("build/examples/fashion_mnist", X_OK) != 0) { printf("bench fmnist_train skipped reason=no-example (make build/examples/fashion_mnist)\n"); return 0; }
  char cmd[512];
  double tg_rate = 0, tg_acc = 0, t_rate = 0, t_acc = 0;
  char ver[64] = "";
  snprintf(cmd, sizeof cmd, "./build/examples/fashion_mnist %d 2>/dev/null", steps);
  if (run(cmd, &tg_rate, &tg_acc, NULL, 0) < 0) { printf("bench FAIL fmnist_train: the tg run printed no result\n"); return 1; }
  snprintf(cmd, sizeof cmd, "python3 bench/fmnist_torch.py --steps %d --threads 2 2>/dev/null", steps);
  if (run(cmd, &t_rate, &t_acc, ver, sizeof ver) < 0) {
    printf("bench fmnist_train steps=%d tg_samples_s=%.1f tg_acc=%.4f torch=skipped ratio=n/a\n", steps, tg_rate, tg_acc);
    return 0;
  }
  printf("bench fmnist_train steps=%d tg_samples_s=%.1f torch_samples_s=%.1f tg_acc=%.4f torch_acc=%.4f acc_diff=%+.2f torch=%s ratio=%.3f\n",
         steps, tg_rate, t_rate, tg_acc, t_acc, 100 * (tg_acc - t_acc), ver, t_rate > 0 ? tg_rate / t_rate : 0);
  return 0;
}
