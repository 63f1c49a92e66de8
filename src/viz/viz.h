/* viz.h: VIZ, a trace of what the compiler did and where the time went.
 *
 * The recorder (record.c) writes one trace file per recording,
 * DIR/trace-PID-N.jsonl: JSON lines, the first a header naming the format
 * version, the last an "end" record. Each line is one event: a rewrite
 * pass with the rules that fired in it, a schedule with its tensor graph
 * and kernel list, a kernel with its AST, opts, linearized program and
 * source, and the profile (kernel runs with device time, copies, buffer
 * allocations and frees, schedule/compile/run spans, markers). docs/viz.md
 * describes every record.
 *
 * The invariant the hooks keep: when viz_on is 0 nothing here runs. Each
 * hook in the rest of tg is one predictable branch on viz_on; the work is
 * behind it. Events are written as they happen (memory stays bounded), and
 * detail records (rewrites, graphs, source) stop at TG_VIZ_MAX_MB of file
 * (default 256), counted in the end record as dropped.
 *
 * The reader (trace_read.c) loads a trace into arrays of small records, with
 * file offsets for the big ones; the CLI (cli.c, `tg viz`) and the Chrome
 * trace export (chrome.c) work from it. */
#ifndef TG_VIZ_H
#define TG_VIZ_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include "uop/uop.h"
#include "util/util.h"

#define VIZ_FORMAT_VERSION 1

/* ---- recording hooks (record.c) */

/* Nonzero while a trace is being recorded: the one flag every hook tests. */
extern int viz_on;

/* Stops recording and removes the file (the `tg viz` command, started
 * under VIZ=-1, records nothing of its own). */
void viz_discard(void);

/* graph_rewrite: begin returns whether this pass is recorded (pass the
 * result to step and end). A pass where no rule fired leaves no record. */
bool viz_pass_begin(const char *matcher_name);
void viz_pass_step(const char *rule, const uop *before, const uop *after);
/* A step whose result is text (a render rule's code), not a node: the
 * result recorded as a NOOP of before with the text as its arg. */
void viz_pass_step_text(const char *rule, const uop *before, const char *after);
void viz_pass_end(void);

/* engine_realize: a schedule's id (0 when not recording); the tensor graph
 * is recorded at begin, the kernel list and the span at scheduled. */
int viz_schedule_begin(uop *const *roots, int n);
void viz_schedule_scheduled(int sched, const void *schedule /* schedule* */, bool ok);
void viz_schedule_end(int sched);
/* The kernel whose codegen runs now, by name and index in its schedule
 * (rewrites are filed under it); NULL when it is done. */
void viz_kernel_context(const char *name, int item);
/* A kernel milestone: its AST, the opts chosen and the final source. */
void viz_kernel(const char *name, int item, const char *device, uop *ast, const char *opts, const char *src, double render_s);
void viz_compiled(const char *name, double seconds);
/* Whether this trace has not yet seen the kernel of this program key (a
 * kernel compiled before the trace began is recorded once per trace). */
bool viz_first_sight(const void *key);
/* Profile: a span of host time that ended now, a kernel run (dt: device
 * time, ended now), a copy between buffers, an allocation (+) or free (-). */
void viz_span(const char *name, int sched, double t0_s);
void viz_run(const char *device, const char *name, double dt, double flops, double bytes);
void viz_copy(const char *dst_device, const char *src_device, size_t nbytes, double dt);
void viz_mem(const char *device, int64_t buf_id, int64_t nbytes);

/* codegen_program's lowered kernel, just before linearize and render:
 * printed at DEBUG>=5 (linearized) / 6 (also the graph), and recorded with
 * the kernel. viz_codegen_hook is set (viz_final_codegen) only around the
 * final codegen of a kernel, so BEAM's candidates stay quiet. */
extern _Thread_local int viz_codegen_hook;
void viz_final_codegen(int debug /* -1: done */);
void viz_codegen_lowered(uop *ast, const char *name);
/* DEBUG=7: the disassembly of a compiled kernel (CPU: objdump of its
 * loaded shared object; other devices say what they have instead). */
struct tg_program;
void viz_debug_disasm(const struct tg_program *p, const char *name);

/* The linearized program as text, one instruction a line (malloc'd). */
char *viz_linear_text(uop *ast);

/* ---- reading a trace (trace_read.c) */

typedef struct { char *name, *device; int sched; double ts, dur, flops, bytes; bool copy; } viz_run_rec;
typedef struct { int id; double ts, sched_us, compile_us, run_us; int nkernels, ncopies; long off; } viz_sched_rec;
typedef struct { char *name; int sched, item; long off; } viz_kernel_rec;
typedef struct { char *name, *ctx; int sched, item, depth, nsteps; double ts, dur; long off; } viz_pass_rec;   /* item -1: not a kernel's */
typedef struct { char *name; double ts; } viz_marker_rec;
typedef struct { char *device; double ts; int64_t delta; } viz_mem_rec;
typedef struct { char *name; int sched; double ts, dur; } viz_span_rec;

typedef struct {
  char *path;
  int version;
  bool ended;            /* the end record is there */
  double end_ts;
  long dropped;          /* detail records the recorder left out (size cap) */
  VEC(viz_sched_rec) scheds;
  VEC(viz_kernel_rec) kernels;
  VEC(viz_pass_rec) passes;
  VEC(viz_run_rec) runs;
  VEC(viz_marker_rec) markers;
  VEC(viz_mem_rec) mems;
  VEC(viz_span_rec) spans;
  int *first_run;        /* per schedule id: the index of its first run record, -1 none */
  int nsched_ids;
} viz_trace;

/* Loads path (a trace file, or a directory: its newest trace-*.jsonl). A
 * file that is not a trace, of another format version, or cut off (no end
 * record, a partial line) is an error naming the file and line; with
 * partial, a cut-off file gives what was complete. 0, or -1 + tg_error. */
int viz_trace_load(const char *path, bool partial, viz_trace *out);
void viz_trace_free(viz_trace *t);
/* The record at a file offset (a viz_*_rec's off), parsed; NULL + tg_error.
 * A cJSON* the caller frees with cJSON_Delete. */
void *viz_trace_record(const viz_trace *t, long off);
/* The run record of item `item` of schedule `sched` (the engine runs a
 * schedule's items in order, each once: the schedule's item-th run record),
 * or NULL when it did not run. */
const viz_run_rec *viz_item_run(const viz_trace *t, int sched, int item);

/* ---- the CLI (cli.c) and the Chrome export (chrome.c) */

/* `tg viz` with its arguments (argv[0] is "viz"), printing to out and err.
 * Returns the exit status: 0, 1 (an error, said on err), 2 (usage). */
int viz_cli(int argc, char **argv, FILE *out, FILE *err);
/* Writes the profile of t between ts [t0, t1] (µs) as Chrome trace-event
 * JSON; the number of events, or -1 + tg_error. */
int viz_chrome_write(const viz_trace *t, double t0, double t1, const char *path);

/* ---- the web page (web.c serves, web_api.c answers its JSON, web/ the page) */

typedef struct {
  const char *host;      /* NULL: 127.0.0.1 */
  int port;              /* 0: any free port */
  bool partial;          /* read a cut-off trace as far as it is whole */
  double seconds;        /* > 0: stop after this long (tests); 0: until SIGINT/SIGTERM */
} viz_web_options;

/* Serves the page for the trace at path (a file, or a directory's newest)
 * until SIGINT/SIGTERM (or opt->seconds), printing its URL on err. A trace
 * that does not load is said on err and shown in the page's error panel.
 * 0, or -1 + tg_error (cannot listen). */
int viz_web_serve(const char *path, const viz_web_options *opt, FILE *err);

/* The JSON answers (web_api.c), malloc'd; NULL + *status (400, 404, 500)
 * and tg_error on a bad request. `arg` is the request's id= parameter. */
char *viz_api_trace(const viz_trace *t);
char *viz_api_kernel(const viz_trace *t, const char *arg, int *status);
char *viz_api_profile(const viz_trace *t);
/* The markers as a JSON array of {name, ts_us} (a cJSON*; `tg viz --json`
 * and the page). */
void *viz_markers_json(const viz_trace *t);

#endif
