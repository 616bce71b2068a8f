/* mon_place.c -- a verdict's place in words: the job, then what its where names. */
#include "mon_place.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Appends to buf at *at, never past len. */
static void put(char *buf, size_t len, size_t *at, const char *fmt, ...) {
  if (*at >= len) return;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf + *at, len - *at, fmt, ap);
  va_end(ap);
  if (n > 0) *at += (size_t)n < len - *at ? (size_t)n : len - *at - 1;
}

/* "rank 5", "ranks 24-31" or "ranks 0, 3, 9" (runs of consecutive ranks folded, at most 8
 * items, then "..."). */
static void put_ranks(char *buf, size_t len, size_t *at, const json_t *ranks) {
  size_t n = json_array_size(ranks);
  if (!n) return;
  put(buf, len, at, n == 1 ? "rank " : "ranks ");
  int items = 0;
  for (size_t i = 0; i < n; items++) {
    json_int_t first = json_integer_value(json_array_get(ranks, i)), last = first;
    size_t j = i + 1;
    while (j < n && json_integer_value(json_array_get(ranks, j)) == last + 1)
      last = json_integer_value(json_array_get(ranks, j++));
    if (items == 8) {
      put(buf, len, at, ", ...");
      return;
    }
    put(buf, len, at, "%s%lld", items ? ", " : "", (long long)first);
    if (last > first) put(buf, len, at, "%s%lld", last == first + 1 ? ", " : "-", (long long)last);
    i = j;
  }
}

static void put_hosts(char *buf, size_t len, size_t *at, const json_t *hosts) {
  size_t n = json_array_size(hosts);
  for (size_t i = 0; i < n && i < 4; i++)
    put(buf, len, at, "%s%s", i ? ", " : " on ", json_string_value(json_array_get(hosts, i)));
  if (n > 4) put(buf, len, at, " and %zu more hosts", n - 4);
}

char *c4_mon_place(const json_t *ev, char *buf, size_t len) {
  size_t at = 0;
  buf[0] = 0;
  const char *job = json_string_value(json_object_get(ev, "job"));
  const json_t *what = json_object_get(ev, "cleared") ? json_object_get(ev, "cleared") : ev;
  const char *where = json_string_value(json_object_get(what, "where"));
  const json_t *nic = json_object_get(what, "nic"), *link = json_object_get(what, "link"),
               *devs = json_object_get(what, "link_devs"), *ranks = json_object_get(what, "ranks");
  put(buf, len, &at, "job %s", job ? job : "?");
  if (!where) return buf;
  if (json_is_object(nic)) {
    put(buf, len, &at, ", %s %s/%lld", where, json_string_value(json_object_get(nic, "host")),
        (long long)json_integer_value(json_object_get(nic, "dev")));
  } else if (json_array_size(link) == 2) {
    put(buf, len, &at, ", %s %s", !strcmp(where, "link") ? "link" : "between",
        json_string_value(json_array_get(link, 0)));
    if (json_array_size(devs) == 2)
      put(buf, len, &at, "/%lld", (long long)json_integer_value(json_array_get(devs, 0)));
    put(buf, len, &at, " -> %s", json_string_value(json_array_get(link, 1)));
    if (json_array_size(devs) == 2)
      put(buf, len, &at, "/%lld", (long long)json_integer_value(json_array_get(devs, 1)));
  } else if (json_is_string(json_object_get(what, "path"))) {
    put(buf, len, &at, ", path %s", json_string_value(json_object_get(what, "path")));
  } else {
    put(buf, len, &at, ", ");
    put_ranks(buf, len, &at, ranks);
    put_hosts(buf, len, &at, json_object_get(what, "hosts"));
    return buf;
  }
  if (json_array_size(ranks)) {
    put(buf, len, &at, " (");
    put_ranks(buf, len, &at, ranks);
    put(buf, len, &at, ")");
  }
  return buf;
}
