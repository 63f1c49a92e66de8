/* fuzz_chat.c: real chat templates (the test data's chat/templates, and the
 * built-in presets) applied to untrusted conversations: what a client of
 * `tg serve` controls. The first byte picks the template, the second the
 * flags. Then either (flag 1) the rest, split at NUL bytes, is the
 * messages, tools and extra-variables JSON given as is, or the rest builds
 * a well-formed conversation (roles, contents, tool calls, tools and extra
 * variables from the bytes), so the templates' own logic is what gets
 * explored. */
#include <dirent.h>
#include <cjson/cJSON.h>
#include "fuzz.h"
#include "tg_chat.h"

#define MAX_T 96
static tg_chat_template *tmpl[MAX_T];
static int nt;

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  const char *dir = fuzz_testdata("chat/templates");
  char *names[MAX_T];
  int nn = 0;
  DIR *d = opendir(dir);
  for (struct dirent *e; d && (e = readdir(d)) && nn < MAX_T / 2;)
    if (strstr(e->d_name, ".jinja")) names[nn++] = strdup(e->d_name);
  if (d) closedir(d);
  qsort(names, (size_t)nn, sizeof *names, by_name);   /* the same index picks the same template */
  for (int i = 0; i < nn; i++) {
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", fuzz_testdata("chat/templates"), names[i]);
    char *text = fuzz_slurp(path, NULL);
    tg_chat_template *t = text ? tg_chat_template_new(text, NULL, "<s>", "</s>") : NULL;
    if (t) { tg_chat_set_time(t, 1700000000); tmpl[nt++] = t; }
    else fprintf(stderr, "fuzz_chat: %s: %s\n", names[i], tg_error());
    free(text);
    free(names[i]);
  }
  if (!nt) fprintf(stderr, "fuzz_chat: no template files (set TG_FUZZ_TESTDATA): the presets only\n");
  for (const char *const *p = tg_chat_preset_names(); *p && nt < MAX_T; p++) {
    tg_chat_template *t = tg_chat_template_new(NULL, *p, "<s>", "</s>");
    if (t) tmpl[nt++] = t;
  }
  return 0;
}

static const char *const roles[] = { "system", "user", "assistant", "tool", "developer", "ipython", "" };
static const char *const keys[] = { "name", "content", "tool_call_id", "reasoning_content", "type", "role" };

/* A value of a few kinds from the bytes, strings of up to 24 bytes. */
static cJSON *value(fuzz_in *in, int depth) {
  switch (fuzz_u8(in) % (depth < 3 ? 8 : 5)) {
  case 0: return cJSON_CreateNull();
  case 1: return cJSON_CreateBool(fuzz_u8(in) & 1);
  case 2: return cJSON_CreateNumber((double)(int16_t)fuzz_u16(in));
  case 3: case 4: { char *s = fuzz_take_str(in, fuzz_u8(in) % 25); cJSON *v = cJSON_CreateString(s); free(s); return v; }
  case 5: { cJSON *a = cJSON_CreateArray(); for (unsigned n = fuzz_u8(in) % 4; n--;) cJSON_AddItemToArray(a, value(in, depth + 1)); return a; }
  default: {
    cJSON *o = cJSON_CreateObject();
    for (unsigned n = fuzz_u8(in) % 4; n--;) cJSON_AddItemToObject(o, keys[fuzz_u8(in) % 6], value(in, depth + 1));
    return o;
  }
  }
}

static char *conversation(fuzz_in *in, char **tools, char **extra) {
  cJSON *msgs = cJSON_CreateArray();
  for (unsigned n = 1 + fuzz_u8(in) % 6; n--;) {
    unsigned k = fuzz_u8(in);
    cJSON *m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "role", roles[k % 7]);
    if (k & 8) cJSON_AddItemToObject(m, "content", value(in, 1));
    else { char *s = fuzz_take_str(in, fuzz_u8(in) % 40); cJSON_AddStringToObject(m, "content", s); free(s); }
    if (k & 16) {
      cJSON *calls = cJSON_AddArrayToObject(m, "tool_calls"), *c = cJSON_CreateObject(), *f = cJSON_CreateObject();
      cJSON_AddStringToObject(c, "type", "function");
      cJSON_AddStringToObject(c, "id", "call_1");
      char *name = fuzz_take_str(in, fuzz_u8(in) % 12);
      cJSON_AddStringToObject(f, "name", name);
      free(name);
      cJSON_AddItemToObject(f, "arguments", value(in, 1));
      cJSON_AddItemToObject(c, "function", f);
      cJSON_AddItemToArray(calls, c);
    }
    if (k & 32) cJSON_AddItemToObject(m, keys[fuzz_u8(in) % 6], value(in, 1));
    cJSON_AddItemToArray(msgs, m);
  }
  *tools = *extra = NULL;
  if (fuzz_u8(in) & 1) {
    cJSON *tl = cJSON_CreateArray(), *t = cJSON_CreateObject(), *f = cJSON_CreateObject();
    cJSON_AddStringToObject(t, "type", "function");
    char *name = fuzz_take_str(in, fuzz_u8(in) % 12);
    cJSON_AddStringToObject(f, "name", name);
    free(name);
    cJSON_AddItemToObject(f, "parameters", value(in, 0));
    cJSON_AddItemToObject(t, "function", f);
    cJSON_AddItemToArray(tl, t);
    *tools = cJSON_PrintUnformatted(tl);
    cJSON_Delete(tl);
  }
  if (fuzz_u8(in) & 1) {
    cJSON *x = value(in, 0);
    if (!cJSON_IsObject(x)) { cJSON *o = cJSON_CreateObject(); cJSON_AddItemToObject(o, "extra", x); x = o; }
    *extra = cJSON_PrintUnformatted(x);
    cJSON_Delete(x);
  }
  char *s = cJSON_PrintUnformatted(msgs);
  cJSON_Delete(msgs);
  return s;
}

/* The next NUL-separated part, or NULL when there is none. */
static char *part(fuzz_in *in) {
  if (!in->n) return NULL;
  const uint8_t *z = memchr(in->p, 0, in->n);
  size_t n = z ? (size_t)(z - in->p) : in->n;
  char *s = fuzz_str(in->p, n);
  in->p += n + (z != NULL), in->n -= n + (z != NULL);
  return s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 2) return 0;
  const tg_chat_template *t = tmpl[data[0] % nt];
  unsigned flags = data[1];
  fuzz_in in = { data + 2, size - 2 };
  char *msgs, *tools, *extra;
  if (flags & 1) msgs = part(&in), tools = part(&in), extra = part(&in);
  else msgs = conversation(&in, &tools, &extra);
  free(tg_chat_apply_json(t, msgs ? msgs : "[]", tools, extra, flags & 2, flags & 4));
  free(msgs);
  free(tools);
  free(extra);
  return 0;
}
