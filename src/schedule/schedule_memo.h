/* schedule_memo.h: whole schedules kept by the structure of their graph.
 *
 * A program realizes graphs of the same structure again and again: a model
 * loader packs each layer's weights with the same graph over other memory,
 * every prefill chunk size of an LLM step is one graph per process run, and
 * each run of a program meets the same graphs as the run before. The
 * structure of a graph is its text with every buffer made anonymous (a
 * number by first appearance, with its dtype, size, device and whether it
 * is a parameter placeholder or a view), a creation op's identity dropped,
 * and a function call named by its body's structure. schedule_create
 * (schedule.c) looks the structure up before it does any work: a schedule
 * made before, in this process or in an earlier one (kept on disk beside
 * the compile cache, ".sched" files), is instantiated over this graph's
 * buffers (fresh ones for its intermediates) with the same kernel ASTs, and
 * the graph's nodes become what the first graph's nodes became. The
 * scheduler's choices read only what the text holds (and the settings that
 * steer it, which are part of the key), so equal text is an equal schedule.
 *
 * Off with TG_NO_SCHEDULE_CACHE, and while VIZ or TRACK_REWRITES record
 * (they want to see every rewrite). */
#ifndef TG_SCHEDULE_MEMO_H
#define TG_SCHEDULE_MEMO_H

#include "schedule/call.h"

typedef VEC(tg_buffer *) memo_buffers;

typedef struct {
  bool keyed;                 /* the graph has a structure (no unnamed pointer in it) */
  strbuf text;                /* the structure: the key */
  uint64_t hash;
  memo_buffers ext;           /* the graph's buffers by number (borrowed: the graph holds them) */
  int64_t first_id;           /* buffers made after the lookup have ids from here */
} schedule_memo_key;

/* Looks topo's schedule up (topo: the toposort of the SINK of the roots).
 * true: a hit, with out filled and becomes given node -> replacement for
 * the graph's realized nodes (borrowed from the caller's pool), as
 * schedule_create. false: key says how to record the schedule the caller
 * makes (schedule_memo_add); free it with schedule_memo_key_free either way. */
bool schedule_memo_find(const uop_list *topo, tg_device *default_dev, schedule_memo_key *key, schedule *out, ptrmap *becomes);
/* Records out and becomes (what schedule_create made for topo) under key. */
void schedule_memo_add(schedule_memo_key *key, const uop_list *topo, const schedule *out, const ptrmap *becomes);
void schedule_memo_key_free(schedule_memo_key *key);
/* Names body b's structure now from topo (the toposort of the SINK of its
 * outputs), which its builder has at hand; otherwise it is made the first
 * time a graph calling b is looked up. */
void schedule_memo_body(call_body *b, const uop_list *topo);
/* Aborts with a report unless found (a cached schedule of topo, with what
 * its nodes became) is made (scheduled anew) up to the names of fresh
 * buffers: TG_SCHEDULE_CACHE_CHECK=1, for testing the structure keys. */
void schedule_memo_check(const uop_list *topo, const schedule *found, const ptrmap *found_becomes, const schedule *made, const ptrmap *made_becomes);
/* Forgets the schedules kept in memory (not those on disk). */
void schedule_memo_forget(void);
/* How many schedules were found (in memory or on disk) since the start. */
int64_t schedule_memo_hits(void);

#endif
