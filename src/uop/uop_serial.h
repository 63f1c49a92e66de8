/* uop_serial.h: a uop graph as text, exactly, and back, for caches that
 * outlive the process (engine/program_cache.c keys by it, the scheduler's
 * lowered kernels are stored in it).
 *
 * One line per node, children first: op, dtype bits, sources by line
 * number, argument (integers in decimal, floats as C99 hex, strings with
 * their length). A node is those four, as uops are hash-consed on them, so
 * equal text is an equal graph. Pointer arguments (a BUFFER's tg_buffer, a
 * CALL's body) mean nothing in another process: such graphs have no text. */
#ifndef TG_UOP_SERIAL_H
#define TG_UOP_SERIAL_H

#include "uop/uop.h"
#include "util/util.h"

/* Appends root's graph to sb; false (sb partly written) when a node holds
 * a pointer argument. */
bool uop_serialize(strbuf *sb, uop *root);
/* The same for the nodes of l (a toposort: sources before their users),
 * with arg, when given, asked first for each node: it writes the node's
 * argument itself (" ..." on the line) and returns 1, returns 0 for the
 * usual form, or -1 to give up (false). For keys that name what a pointer
 * argument stands for (schedule/schedule_memo.c). */
typedef int (*uop_arg_writer)(strbuf *sb, const uop *u, void *ctx);
bool uop_serialize_nodes(strbuf *sb, const uop_list *l, uop_arg_writer arg, void *ctx);
/* " N": an integer as the serializer writes it (no printf) */
void uop_put_int(strbuf *sb, int64_t v);
/* The SHA-256 of root's uop_serialize text as 64 hex digits (out), for
 * keys of caches that outlive the process; false when the graph has no
 * text. Remembered for the process (root is retained), and
 * uop_text_digest_note records the digest of a graph read back from a
 * file that kept it, so neither is serialized again. */
bool uop_text_digest(uop *root, char out[65]);
void uop_text_digest_note(uop *root, const char digest[65]);
/* The graph of text[0..n) (uop_serialize's): its last node, borrowed (pool),
 * or NULL when the text is not one (a bad op, source or argument). */
uop *uop_deserialize(const char *text, size_t n);

#endif
