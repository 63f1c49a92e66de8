/* settings.c: the table of settings.h and its accessors, the one place
 * tg calls getenv. */
#include <stdlib.h>
#include "util/settings.h"

const setting_info settings_table[SETTING_COUNT] = {
#define TG_SETTING_ROW(name, type, dflt, doc) { #name, type, dflt, doc },
  TG_SETTINGS(TG_SETTING_ROW)
#undef TG_SETTING_ROW
};

const char *setting_str(setting_id id) {
  return id >= 0 && id < SETTING_COUNT ? getenv(settings_table[id].name) : NULL;
}

const char *setting_str_or(setting_id id, const char *dflt) {
  const char *s = setting_str(id);
  return s && *s ? s : dflt;
}

int64_t setting_int(setting_id id) {
  if (id < 0 || id >= SETTING_COUNT) return 0;
  return strtoll(setting_str_or(id, settings_table[id].dflt), NULL, 10);
}

/* A flag (or text) is on when set, with any value, as documented; a number
 * when not 0, so an int setting read as a flag cannot take "0" for on. */
bool setting_on(setting_id id) {
  if (id < 0 || id >= SETTING_COUNT) return false;
  return settings_table[id].type == SETTING_INT ? setting_int(id) != 0 : setting_str(id) != NULL;
}
