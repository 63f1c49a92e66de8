/* run_parallel.h: the suite's work items run by several worker processes.
 *
 * The tests spend most of their time waiting for the kernel compiler (one
 * process per kernel) or in small kernels that use one core; running JOBS
 * items at once keeps the machine busy. Each worker is a fork()ed process
 * that takes items from a shared queue and writes its output to a file of
 * its own; the parent prints each item's output whole, as items finish, so
 * lines of different tests never interleave. A worker that dies takes only
 * its current item with it (reported as a failure, with the signal); a new
 * worker takes its place. */
#ifndef TG_TESTS_RUN_PARALLEL_H
#define TG_TESTS_RUN_PARALLEL_H

enum { ITEM_PASSED, ITEM_FAILED, ITEM_SKIPPED };

/* Runs item i in a worker, printing its output and its "ok   NAME" line to
 * stdout; returns ITEM_*; *extra is a count the worker reports back (the
 * kernels the nvrtc pass compiled). */
typedef int (*item_runner)(int i, int *extra);

/* Runs items 0..n-1 in jobs workers; adds to counts[ITEM_*] and *extra.
 * name(i) names item i for a worker that dies running it. Must be called
 * before this process starts any thread or device (the workers are forks).
 * Returns -1 (nothing run) when the workers cannot be set up. */
int run_items_parallel(int n, int jobs, item_runner run, const char *(*name)(int), int counts[3], int *extra);

#endif
