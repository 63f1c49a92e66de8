#include "util/stop_signal.h"
#include <pthread.h>
#include <time.h>
#include "util/util.h"

static volatile sig_atomic_t stop_signal;
static void on_stop_signal(int sig) { stop_signal = sig; }
static struct sigaction old_int, old_term;

void stop_signals_block(sigset_t *old) {
  struct sigaction act = { .sa_handler = on_stop_signal };
  sigemptyset(&act.sa_mask);
  stop_signal = 0;
  sigaction(SIGINT, &act, &old_int);
  sigaction(SIGTERM, &act, &old_term);
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGINT);
  sigaddset(&sigs, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &sigs, old);
}

int stop_signals_wait(double seconds, const sigset_t *old) {
  /* a signal that came while blocked is pending; unblocking delivers it to the handler */
  pthread_sigmask(SIG_SETMASK, old, NULL);
  double deadline = seconds > 0 ? tg_now_seconds() + seconds : 0;
  while (!stop_signal && (deadline == 0 || tg_now_seconds() < deadline)) {
    struct timespec nap = { 0, 20 * 1000 * 1000 };
    nanosleep(&nap, NULL);
  }
  int sig = stop_signal;
  stop_signals_restore(old);
  return sig;
}

void stop_signals_restore(const sigset_t *old) {
  pthread_sigmask(SIG_SETMASK, old, NULL);
  sigaction(SIGINT, &old_int, NULL);
  sigaction(SIGTERM, &old_term, NULL);
}
