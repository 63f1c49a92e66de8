/* chat_msg.h: an assistant reply's text split the way OpenAI clients want
 * it: reasoning ("<think>...</think>" and the families' equivalents) into
 * reasoning_content, tool calls (in the format the model's template taught
 * it) into tool_calls, the rest into content. The same parse serves a
 * finished reply and a stream: on a text that may still grow (final false)
 * it returns only what is decided, and what it returns then is always a
 * prefix of what it returns later (reasoning and content grow at their
 * ends; calls are appended, the last one possibly still being written:
 * its name is final and its arguments are a prefix of its final ones), so
 * a stream sends the differences (chat_stream.c). The one exception is
 * text that looked like a call, name and arguments begun, and then broke
 * the format: the final parse has it as content, while what a stream sent
 * of it was the model's own arguments text. Pure functions of the text: no
 * server, no model. */
#ifndef TG_SERVE_CHAT_MSG_H
#define TG_SERVE_CHAT_MSG_H

#include <stdbool.h>
#include <stddef.h>
#include <cjson/cJSON.h>
#include "util/util.h"

/* How a model writes its tool calls (llama.cpp's common/chat.cpp formats):
 * HERMES   <tool_call>{"name": .., "arguments": {..}}</tool_call> (Hermes 2/3,
 *          Qwen 2.5/3; also <function=NAME>{..}</function>, wrappers such
 *          as <tools>, <response>, ```json fences, a bare leading object)
 * QWEN3_CODER  <tool_call><function=NAME><parameter=P>value</parameter>
 *          </function></tool_call> (values typed by the tool's schema)
 * LLAMA3   a leading {"name": .., "parameters": {..}}, or <|python_tag|>
 *          followed by such an object, NAME.call(k=v, ..), or code
 * MISTRAL  [TOOL_CALLS][{"name": .., "arguments": {..}, "id": ..}, ..], or
 *          [TOOL_CALLS]NAME[ARGS]{..} (newer Mistral templates) */
typedef enum { SERVE_TOOLS_HERMES, SERVE_TOOLS_QWEN3_CODER, SERVE_TOOLS_LLAMA3, SERVE_TOOLS_MISTRAL } serve_tool_format;

/* llama-server's reasoning_format: AUTO (the default) and DEEPSEEK move
 * reasoning to reasoning_content; NONE leaves it inline in content;
 * DEEPSEEK_LEGACY fills reasoning_content and keeps the tags in content. */
typedef enum { SERVE_REASONING_AUTO, SERVE_REASONING_NONE, SERVE_REASONING_DEEPSEEK, SERVE_REASONING_DEEPSEEK_LEGACY }
  serve_reasoning_format;

typedef struct {
  char *id;          /* from the model's output (Mistral), else NULL: the server names it */
  char *name;
  char *arguments;   /* a JSON object as compact text */
} serve_tool_call;

typedef struct {
  strbuf reasoning, content;   /* NUL-terminated (s may be NULL when empty) */
  serve_tool_call *calls;
  int n_calls, cap_calls;
} serve_chat_msg;

/* What decides the parse of one reply. */
typedef struct {
  bool parse_tools;                 /* the request has tools and tool_choice is not "none" */
  serve_tool_format tool_format;
  const cJSON *tools;               /* the request's tools (Qwen3-Coder values are typed by them) */
  serve_reasoning_format reasoning;
  bool thinking_open;               /* the prompt ended inside an opened <think> */
} serve_chat_syntax;

/* Parses len bytes of text into *out (zeroed first). final false: text may
 * grow; only what is decided comes out. */
void serve_chat_parse(const serve_chat_syntax *syn, const char *text, size_t len, bool final, serve_chat_msg *out);
void serve_chat_msg_free(serve_chat_msg *m);
/* Drops the calls past the first n. */
void serve_chat_msg_keep_calls(serve_chat_msg *m, int n);

/* ---- tool_calls.c */
/* The format a chat template teaches (its source text; NULL: HERMES, the
 * most common one, also for templates that name no format). */
serve_tool_format serve_tool_format_detect(const char *template_text);
const char *serve_tool_format_name(serve_tool_format f);
/* Appends text's content pieces to out->content (untrimmed) and its calls
 * to out->calls; final false leaves out anything undecided, but for the
 * calls in a region still being written (tool_calls_open.c): each once
 * its name is known, with the decided part of its arguments. */
void serve_tool_calls_parse(serve_tool_format f, const cJSON *tools, const char *text, size_t len, bool final,
                            serve_chat_msg *out);
/* The text that opens a tool call in format f, for tool_choice "required"
 * (name NULL) or a named function: appended to the prompt so that the model
 * must go on with a call. malloc'd. */
char *serve_tool_call_prefix(serve_tool_format f, const char *name);
/* For a named function in a JSON format (not Qwen3-Coder): GBNF for what
 * follows serve_tool_call_prefix: the arguments valid for the function's
 * parameters schema, then the call's closing. The sampler then can only
 * finish the call. NULL when there is none to give (malloc'd otherwise). */
char *serve_tool_call_grammar(serve_tool_format f, const cJSON *tools, const char *name);
/* Adds a call (taking the strings). */
void serve_chat_msg_add_call(serve_chat_msg *m, char *id, char *name, char *arguments);

/* ---- json_prefix.c: JSON text still being written */
/* The end of the whole JSON value at p (white space first allowed), or
 * NULL while the text ends inside it (a number or literal is whole only
 * once a delimiter follows). Structure only: cJSON says if it is valid. */
const char *serve_json_value_end(const char *p, const char *end);
/* Appends to out (made non-NULL) the part of cJSON_PrintUnformatted of the
 * value at p that the text [p, end) already decides, whatever valid text
 * follows; true when the value is whole. */
bool serve_json_compact_prefix(const char *p, const char *end, strbuf *out);
/* Appends the JSON string of the text s[0..n) as cJSON prints it, without
 * its closing quote (as far as the text goes: a UTF-8 sequence cut short
 * at its end waits). */
void serve_json_string_prefix(const char *s, size_t n, strbuf *out);

/* ---- chat_stream.c: what a stream sends of successive parses */
/* One tool_calls entry of a streamed chunk: a call's head (index, id,
 * "type", name, "arguments": "") when first seen, then pieces of its
 * arguments (just index and arguments). */
typedef struct {
  int index;
  const serve_tool_call *call;    /* head: the call (its id may be NULL: the server names it) */
  bool head;
  const char *args;               /* a piece: args[0..args_len) */
  size_t args_len;
} serve_call_delta;

/* What a stream has sent: reasoning and content bytes, and each call's
 * name and the arguments sent so far. */
typedef struct {
  size_t reasoning, content;
  serve_chat_msg calls;
} serve_chat_sent;

/* What one parse adds to what was sent (pointing into that parse). */
typedef struct {
  const char *reasoning, *content;
  size_t rlen, clen;
  serve_call_delta *calls;        /* malloc'd (free it) */
  int n_calls;
} serve_chat_delta;

/* What msg (the parse of all text so far) adds to what was sent, recorded
 * as sent. A call whose parse no longer extends what was sent of it (a
 * broken call) gets no more. */
void serve_chat_sent_next(serve_chat_sent *sent, const serve_chat_msg *msg, serve_chat_delta *d);
void serve_chat_sent_free(serve_chat_sent *sent);

/* ---- reasoning.c */
/* Splits off leading reasoning. Returns the offset where the rest (content
 * and tool calls) starts, or (size_t)-1 while that is undecided (inside an
 * unclosed block, or on a possible opening tag); the reasoning decided so
 * far goes to *reasoning (trimmed). open: the block is already open (the
 * prompt opened it). */
size_t serve_reasoning_split(const char *text, size_t len, bool open, bool final, strbuf *reasoning);
/* Whether a rendered prompt ends with an opening reasoning tag (DeepSeek R1,
 * QwQ and Qwen3's thinking templates open the block for the model). */
bool serve_reasoning_opened(const char *prompt);
/* "none", "auto", "deepseek", "deepseek-legacy"; -1 when unknown. */
int serve_reasoning_format_parse(const char *name);

#endif
