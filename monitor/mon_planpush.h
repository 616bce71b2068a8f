/* mon_planpush.h -- `c4mon serve --plan FILE` pushes each rank the flows of its own host from the
 * traffic plan (docs/plan-format.md), when the rank connects and again whenever the file
 * changes, so the plugin pins its data sockets without a C4_PLAN file on every host. */
#ifndef C4_MON_PLANPUSH_H
#define C4_MON_PLANPUSH_H

#include <jansson.h>
#include <stddef.h>

/* Reads the plan at path (NULL: nothing is pushed) with the plan reader, its flows checked as the
 * plugin checks them (c4_planfile_read). Returns 0, or C4_EINVAL with what is wrong logged (file
 * and reason). */
int mon_planpush_load(const char *path);

/* Checks the file (identity, size, mtime); re-reads it when it changed. Returns 1 when a new
 * plan was read (a bad one is logged and the old one kept: returns 0). */
int mon_planpush_check(void);

/* The plan for host: {"v":1,"flows":[the flows whose src is host],"avoid":avoid} as a malloc'd
 * string (*len bytes; each flow with the fields the plugin reads, and its path; avoid: the paths
 * c4mon's `path` verdicts stand on, from mon_pathplan_avoid, whose reference this takes), or NULL
 * without a plan. The caller passes the list in, so that this file and mon_pathplan.c (which asks
 * it what flows a path carries) do not call into each other. */
char *mon_planpush_for_host(const char *host, json_t *avoid, size_t *len);

/* The plan's flows on path, by host pair: [{"src":S,"dst":D,"flows":N}, ...] in the plan's order
 * (a new reference; empty without a plan). */
json_t *mon_planpush_flows_on(const char *path);

void mon_planpush_reset(void);

#endif
