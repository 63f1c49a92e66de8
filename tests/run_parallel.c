/* run_parallel.c: see run_parallel.h.
 *
 * The queue is a pipe filled with every item's index before the workers
 * start; a worker reads one int at a time (reads of 4 bytes from a pipe
 * written in 4-byte units never split an item) until the pipe is empty.
 * Workers report on a second pipe in fixed-size records (one write each,
 * smaller than PIPE_BUF, so records of different workers never mix): START
 * with the item and where its output begins in the worker's file, DONE with
 * where it ends and the result. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "run_parallel.h"

enum { REC_START, REC_DONE };
typedef struct { int kind, worker, item, status, extra; long long off0, off1; } record;

typedef struct {
  pid_t pid;           /* 0: not running */
  int out;             /* the file its stdout and stderr go to */
  int item;            /* the item it runs now, or -1 */
  long long off;       /* where the current item's output, or what follows the last one, begins */
} worker;

static void copy_output(int fd, long long from, long long to) {
  char buf[65536];
  while (from < to) {
    size_t want = (size_t)(to - from) < sizeof buf ? (size_t)(to - from) : sizeof buf;
    ssize_t got = pread(fd, buf, want, (off_t)from);
    if (got <= 0) break;
    fwrite(buf, 1, (size_t)got, stdout);
    from += got;
  }
  fflush(stdout);
}

static long long file_end(int fd) {
  struct stat st;
  return fstat(fd, &st) == 0 ? (long long)st.st_size : 0;
}

static void send_record(int fd, record r) {
  while (write(fd, &r, sizeof r) < 0 && errno == EINTR) {}
}

static void worker_main(int w, int queue, int results, int out, item_runner run) {
  if (dup2(out, 1) < 0 || dup2(out, 2) < 0) _exit(99);
  for (;;) {
    int i;
    ssize_t got;
    while ((got = read(queue, &i, sizeof i)) < 0 && errno == EINTR) {}
    if (got != (ssize_t)sizeof i) break;
    fflush(stdout);
    long long off0 = (long long)lseek(1, 0, SEEK_CUR);
    send_record(results, (record){ REC_START, w, i, 0, 0, off0, off0 });
    int extra = 0, status = run(i, &extra);
    fflush(stdout);
    send_record(results, (record){ REC_DONE, w, i, status, extra, off0, (long long)lseek(1, 0, SEEK_CUR) });
  }
  fflush(stdout);
  exit(0);   /* not _exit: atexit handlers (and LeakSanitizer) run */
}

static pid_t start_worker(worker *ws, int w, int queue, int results, item_runner run) {
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid == 0) worker_main(w, queue, results, ws[w].out, run);
  ws[w].pid = pid > 0 ? pid : 0;
  ws[w].item = -1;
  ws[w].off = file_end(ws[w].out);
  return pid;
}

static void handle(worker *ws, const record *r, int counts[3], int *extra, int *ndone) {
  worker *k = &ws[r->worker];
  if (r->kind == REC_START) { k->item = r->item; k->off = r->off0; return; }
  copy_output(k->out, r->off0, r->off1);
  if (r->status >= ITEM_PASSED && r->status <= ITEM_SKIPPED) counts[r->status]++;
  *extra += r->extra;
  (*ndone)++;
  k->item = -1;
  k->off = r->off1;
}

/* every record waiting in the pipe, without blocking */
static void drain(int results, worker *ws, int counts[3], int *extra, int *ndone) {
  struct pollfd p = { results, POLLIN, 0 };
  record r;
  while (poll(&p, 1, 0) > 0 && (p.revents & POLLIN) && read(results, &r, sizeof r) == (ssize_t)sizeof r)
    handle(ws, &r, counts, extra, ndone);
}

int run_items_parallel(int n, int jobs, item_runner run, const char *(*name)(int), int counts[3], int *extra) {
  int q[2], res[2];
  if (pipe(q) < 0) return -1;
  if (pipe(res) < 0) { close(q[0]); close(q[1]); return -1; }
#ifdef F_SETPIPE_SZ
  if ((size_t)n * sizeof(int) > 32768) fcntl(q[1], F_SETPIPE_SZ, (int)((size_t)n * sizeof(int) + 4096));
#endif
  int filled = 1;
  for (int i = 0; i < n && filled; i++) filled = write(q[1], &i, sizeof i) == (ssize_t)sizeof i;
  close(q[1]);
  worker *ws = calloc((size_t)jobs, sizeof *ws);
  const char *tmp = getenv("TMPDIR");
  for (int w = 0; w < jobs && filled; w++) {
    char path[4096];
    snprintf(path, sizeof path, "%s/tg_tests_out_XXXXXX", tmp && *tmp ? tmp : "/tmp");
    ws[w].out = mkstemp(path);
    if (ws[w].out < 0) filled = 0;
    else unlink(path);
  }
  if (!filled) {
    for (int w = 0; w < jobs; w++) if (ws[w].out > 0) close(ws[w].out);
    free(ws);
    close(q[0]); close(res[0]); close(res[1]);
    return -1;
  }
  int alive = 0, ndone = 0;
  for (int w = 0; w < jobs; w++) alive += start_worker(ws, w, q[0], res[1], run) > 0;
  while (alive > 0) {
    struct pollfd p = { res[0], POLLIN, 0 };
    record r;
    if (poll(&p, 1, 200) > 0 && (p.revents & POLLIN) && read(res[0], &r, sizeof r) == (ssize_t)sizeof r)
      handle(ws, &r, counts, extra, &ndone);
    for (int w = 0; w < jobs; w++) {
      int st;
      if (!ws[w].pid || waitpid(ws[w].pid, &st, WNOHANG) != ws[w].pid) continue;
      drain(res[0], ws, counts, extra, &ndone);   /* what it sent before it ended */
      ws[w].pid = 0;
      alive--;
      bool clean = WIFEXITED(st) && WEXITSTATUS(st) == 0;
      copy_output(ws[w].out, ws[w].off, file_end(ws[w].out));
      if (ws[w].item >= 0) {
        char how[64];
        if (WIFSIGNALED(st)) snprintf(how, sizeof how, "signal %d, %s", WTERMSIG(st), strsignal(WTERMSIG(st)));
        else snprintf(how, sizeof how, "exit status %d", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
        printf("FAIL %s (its test process died: %s)\n", name(ws[w].item), how);
        counts[ITEM_FAILED]++;
        ndone++;
        if (ndone < n && start_worker(ws, w, q[0], res[1], run) > 0) alive++;
      } else if (!clean) {
        /* after its last test: a sanitizer's leak report, printed above */
        printf("FAIL (a test process exited with status %d after its tests)\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
        counts[ITEM_FAILED]++;
      }
      fflush(stdout);
    }
  }
  drain(res[0], ws, counts, extra, &ndone);
  for (int w = 0; w < jobs; w++) close(ws[w].out);
  free(ws);
  close(q[0]); close(res[0]); close(res[1]);
  return 0;
}
