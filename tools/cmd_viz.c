/* cmd_viz.c: `tg viz`: reads a VIZ trace (src/viz/cli.c does the work;
 * docs/viz.md). */
#include <stdio.h>
#include "tg.h"
#include "commands.h"
#include "viz/viz.h"

int cmd_viz(int argc, char **argv) {
  viz_discard();   /* started under VIZ=-1: this command records nothing of its own */
  return viz_cli(argc, argv, stdout, stderr);
}
