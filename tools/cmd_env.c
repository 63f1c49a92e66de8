/* cmd_env.c: `tg env`: every environment variable tg reads (the table of
 * src/util/settings.h), its value now, its default and what it does.
 * `tg env --markdown` prints the rows of docs/debugging.md's table. */
#include <stdio.h>
#include <string.h>
#include "util/settings.h"
#include "commands.h"

static const char *type_name(setting_type t) {
  return t == SETTING_INT ? "int" : t == SETTING_FLAG ? "flag" : "text";
}

int cmd_env(int argc, char **argv) {
  bool markdown = argc == 2 && strcmp(argv[1], "--markdown") == 0;
  if (argc > 1 && !markdown) {
    fprintf(stderr, "usage: tg env [--markdown]\n");
    return 2;
  }
  if (markdown) {
    printf("| variable | type | default | what it does |\n|----------|------|---------|--------------|\n");
    for (int i = 0; i < SETTING_COUNT; i++) {
      const setting_info *s = &settings_table[i];
      printf("| `%s` | %s | %s%s%s | %s |\n", s->name, type_name(s->type), *s->dflt ? "`" : "", s->dflt,
             *s->dflt ? "`" : "", s->doc);
    }
    return 0;
  }
  printf("%-28s %-5s %-16s %-12s %s\n", "variable", "type", "now", "default", "what it does");
  for (int i = 0; i < SETTING_COUNT; i++) {
    const setting_info *s = &settings_table[i];
    const char *now = setting_str((setting_id)i);
    printf("%-28s %-5s %-16s %-12s %s\n", s->name, type_name(s->type), now ? (*now ? now : "(empty)") : "-",
           *s->dflt ? s->dflt : "-", s->doc);
  }
  return 0;
}
