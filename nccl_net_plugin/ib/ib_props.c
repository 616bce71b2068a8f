/* ib_props.c -- the verbs transport's pure translations: speed, HCA lists, flow labels, LIDs. */
#include "ib_props.h"

#include <stdlib.h>
#include <string.h>

int c4_ib_speed_mbps(unsigned active_width, unsigned active_speed) {
  int lanes;
  switch (active_width) {
  case 2: lanes = 4; break;
  case 4: lanes = 8; break;
  case 8: lanes = 12; break;
  case 16: lanes = 2; break;
  default: lanes = 1;
  }
  int lane_mbps;
  switch (active_speed) {
  case 2: lane_mbps = 5000; break;
  case 4:
  case 8: lane_mbps = 10000; break;
  case 16: lane_mbps = 14000; break;
  case 32: lane_mbps = 25000; break;
  case 64: lane_mbps = 50000; break;
  case 128: lane_mbps = 100000; break;
  case 256: lane_mbps = 200000; break;
  default: lane_mbps = 2500;
  }
  return lanes * lane_mbps;
}

/* One list entry [start, end) against dev and port. */
static bool entry_matches(const char *start, const char *end, bool exact, const char *dev,
                          int port) {
  const char *colon = memchr(start, ':', (size_t)(end - start));
  const char *name_end = colon ? colon : end;
  size_t n = (size_t)(name_end - start);
  if (strncmp(dev, start, n) != 0) return false;
  if (exact && dev[n] != '\0') return false;
  if (!colon) return true;
  char digits[16];
  size_t k = (size_t)(end - colon - 1);
  if (k == 0 || k >= sizeof digits) return false;
  memcpy(digits, colon + 1, k);
  digits[k] = '\0';
  char *stop = NULL;
  long p = strtol(digits, &stop, 10);
  return *stop == '\0' && p == port;
}

bool c4_ib_hca_matches(const char *list, const char *dev, int port) {
  if (!list) return true;
  bool exclude = false, exact = false;
  if (*list == '^') exclude = true, list++;
  if (*list == '=') exact = true, list++;
  bool any_entry = false, hit = false;
  for (const char *p = list; *p;) {
    const char *end = strchr(p, ',');
    if (!end) end = p + strlen(p);
    if (end > p) {
      any_entry = true;
      if (entry_matches(p, end, exact, dev, port)) hit = true;
    }
    p = *end ? end + 1 : end;
  }
  if (!any_entry) return !exclude;
  return exclude ? !hit : hit;
}

uint16_t c4_ib_flow_label_to_sport(uint32_t fl) {
  uint32_t low = fl & 0x3fffu, high = (fl & 0xfc000u) >> 14;
  return (uint16_t)((low ^ high) | 0xc000u);
}

int32_t c4_ib_sport_to_flow_label(uint16_t sport) {
  return sport >= 0xc000u ? (int32_t)(sport - 0xc000u) : -1;
}

uint16_t c4_ib_dlid(uint16_t base, unsigned lmc, int path_bits, bool *ok) {
  bool take = path_bits >= 0 && lmc <= 7 && path_bits < (1 << lmc);
  if (ok) *ok = take;
  return take ? (uint16_t)(base + (uint16_t)path_bits) : base;
}
