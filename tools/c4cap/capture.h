/* capture.h -- c4cap's packet sources through libpcap: a capture file, or live interfaces. */
#ifndef C4CAP_CAPTURE_H
#define C4CAP_CAPTURE_H

#include <signal.h>
#include <stdint.h>

#include "aggregate.h"

#define C4CAP_SNAPLEN 256 /* enough for Ethernet, 4 VLAN tags, IPv6 extensions, UDP and the BTH */

/* Reads every packet of a pcap or pcapng file (as tcpdump -w writes it) into a, as one interface
 * named after the file. 0; or -1 with a message naming the file in err when it cannot be opened,
 * its link type is not one c4cap parses, or it is corrupt (the packets before are counted). */
int c4cap_read_file(struct c4cap_agg *a, const char *file, char *err, size_t errlen);

/* Captures on interfaces ifs[0..n) (no promiscuous mode, C4CAP_SNAPLEN bytes a packet) into a,
 * until seconds have passed (seconds <= 0: no limit) or *stop is set (a signal handler's flag).
 * *dropped gets the packets the kernel dropped. 0; or -1 with a message in err naming the
 * interface (no such device, or no permission: CAP_NET_RAW). */
int c4cap_live(struct c4cap_agg *a, char *const *ifs, int n, double seconds,
               volatile sig_atomic_t *stop, uint64_t *dropped, char *err, size_t errlen);

#endif
