/* Waiting for Ctrl-C or SIGTERM in a server loop (tg serve, tg viz --serve,
 * VIZ=1's page at exit). */
#pragma once
#include <signal.h>

/* From here on SIGINT and SIGTERM only set a flag (in whichever thread they
 * land), and the calling thread blocks them, so threads it starts next (an
 * HTTP daemon's) inherit the mask; *old receives the mask to restore. One
 * server at a time per process. */
void stop_signals_block(sigset_t *old);

/* Waits until SIGINT or SIGTERM arrives, or `seconds` pass (<= 0: no limit),
 * then restores the thread's mask to *old and the signals' actions. A handler sets a flag, rather
 * than sigwait: the process may hold threads nobody here started (an OpenCL
 * runtime's), and a signal delivered to one of those with the default action
 * would kill the process instead of stopping the server. Returns the signal,
 * or 0 when the time ran out. */
int stop_signals_wait(double seconds, const sigset_t *old);

/* Undoes stop_signals_block without waiting (a server that failed to start). */
void stop_signals_restore(const sigset_t *old);
