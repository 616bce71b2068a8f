/* plan_show.h -- `c4plan flows PLAN`: a plan's flows as text lines, so that a script reads the
 * plan (docs/plan-format.md) without parsing its JSON. */
#ifndef C4_PLAN_SHOW_H
#define C4_PLAN_SHOW_H

/* `c4plan flows ...` with argv[0] == "flows". Returns the exit code: 0, 1 (the plan could not be
 * read: the message names the file and the field), 2 (bad usage). */
int c4plan_flows_main(int argc, char **argv);

#endif
