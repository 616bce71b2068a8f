/* capture.c -- c4cap's packet sources: pcap_open_offline for a file; pcap_create/pcap_activate
 * (for its error codes: no device, no permission) and pcap_next_ex in non-blocking mode polled
 * together for live interfaces. */
#include "capture.h"
#include "c4_err.h"

#include <errno.h>
#include <pcap/pcap.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double pkt_time(const struct pcap_pkthdr *h) {
  return (double)h->ts.tv_sec + (double)h->ts.tv_usec * 1e-6;
}

static int known_link(int dlt) {
  return dlt == C4CAP_LINK_EN10MB || dlt == C4CAP_LINK_RAW || dlt == C4CAP_LINK_LINUX_SLL ||
         dlt == C4CAP_LINK_LINUX_SLL2;
}

int c4cap_read_file(struct c4cap_agg *a, const char *file, char *err, size_t errlen) {
  char ebuf[PCAP_ERRBUF_SIZE] = "";
  pcap_t *p = pcap_open_offline(file, ebuf);
  if (!p) {
    /* libpcap names the file itself when the system refused it, not when the format is bad */
    if (!strncmp(ebuf, file, strlen(file)))
      snprintf(err, errlen, "%s", ebuf);
    else
      snprintf(err, errlen, "%s: %s", file, ebuf);
    return C4_EINVAL;
  }
  int rc = -1, dlt = pcap_datalink(p);
  if (!known_link(dlt)) {
    snprintf(err, errlen,
             "%s: link type %s is not one c4cap reads (Ethernet, Linux cooked, raw IP)", file,
             pcap_datalink_val_to_name(dlt) ? pcap_datalink_val_to_name(dlt) : "unknown");
    goto out;
  }
  int iface = c4cap_agg_iface(a, file, dlt);
  if (iface < 0) goto nomem;
  struct pcap_pkthdr *h;
  const u_char *data;
  uint64_t n = 0;
  int got;
  while ((got = pcap_next_ex(p, &h, &data)) == 1) {
    if (c4cap_agg_add(a, iface, pkt_time(h), h->len, data, h->caplen)) goto nomem;
    n++;
  }
  if (got == PCAP_ERROR) {
    snprintf(err, errlen, "%s: corrupt after %llu packets: %s", file, (unsigned long long)n,
             pcap_geterr(p));
    goto out;
  }
  rc = 0;
  goto out;
nomem:
  snprintf(err, errlen, "%s: out of memory", file);
out:
  pcap_close(p);
  return rc;
}

/* Opens one interface for capture; NULL with a message naming it on failure. */
static pcap_t *open_live(const char *ifname, char *err, size_t errlen) {
  char ebuf[PCAP_ERRBUF_SIZE] = "";
  pcap_t *p = pcap_create(ifname, ebuf);
  if (!p) {
    snprintf(err, errlen, "cannot capture on %s: %s", ifname, ebuf);
    return NULL;
  }
  pcap_set_snaplen(p, C4CAP_SNAPLEN);
  pcap_set_promisc(p, 0);
  pcap_set_timeout(p, 100);
  pcap_set_immediate_mode(p, 1);
  pcap_set_buffer_size(p, 32 << 20); /* a burst at 100 Gbit/s outruns the default 2 MiB */
  int rc = pcap_activate(p);
  if (rc == PCAP_ERROR_PERM_DENIED || rc == PCAP_ERROR_PROMISC_PERM_DENIED) {
    snprintf(err, errlen,
             "capturing on %s needs CAP_NET_RAW: run as root, or setcap cap_net_raw+ep c4cap",
             ifname);
  } else if (rc == PCAP_ERROR_NO_SUCH_DEVICE) {
    snprintf(err, errlen, "no interface %s (see ip link)", ifname);
  } else if (rc < 0) {
    snprintf(err, errlen, "cannot capture on %s: %s", ifname, pcap_geterr(p));
  } else {
    /* "any" in cooked v2 names each packet's interface, so that c4cap can split it */
    if (pcap_datalink(p) == DLT_LINUX_SLL) pcap_set_datalink(p, DLT_LINUX_SLL2);
    if (!known_link(pcap_datalink(p))) {
      snprintf(err, errlen, "%s: link type %s is not one c4cap reads", ifname,
               pcap_datalink_val_to_name(pcap_datalink(p)));
    } else if (pcap_setnonblock(p, 1, ebuf) < 0) {
      snprintf(err, errlen, "%s: %s", ifname, ebuf);
    } else {
      return p;
    }
  }
  pcap_close(p);
  return NULL;
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int c4cap_live(struct c4cap_agg *a, char *const *ifs, int n, double seconds,
               volatile sig_atomic_t *stop, uint64_t *dropped, char *err, size_t errlen) {
  pcap_t **h = calloc((size_t)n, sizeof *h);
  int *idx = calloc((size_t)n, sizeof *idx);
  struct pollfd *fds = calloc((size_t)n, sizeof *fds);
  int rc = -1, opened = 0;
  *dropped = 0;
  a->name_ifindex = 1;
  if (!h || !idx || !fds) {
    snprintf(err, errlen, "out of memory");
    goto out;
  }
  for (; opened < n; opened++) {
    if (!(h[opened] = open_live(ifs[opened], err, errlen))) goto out;
    idx[opened] = c4cap_agg_iface(a, ifs[opened], pcap_datalink(h[opened]));
    if (idx[opened] < 0) {
      pcap_close(h[opened]);
      snprintf(err, errlen, "out of memory");
      goto out;
    }
    fds[opened] = (struct pollfd){.fd = pcap_get_selectable_fd(h[opened]), .events = POLLIN};
  }
  double end = now() + seconds;
  while (!*stop && (seconds <= 0 || now() < end)) {
    if (poll(fds, (nfds_t)n, 100) < 0 && errno != EINTR) {
      snprintf(err, errlen, "poll: %s", strerror(errno));
      goto out;
    }
    for (int i = 0; i < n; i++) {
      struct pcap_pkthdr *ph;
      const u_char *data;
      int got;
      while ((got = pcap_next_ex(h[i], &ph, &data)) == 1)
        if (c4cap_agg_add(a, idx[i], pkt_time(ph), ph->len, data, ph->caplen)) {
          snprintf(err, errlen, "out of memory");
          goto out;
        }
      if (got == PCAP_ERROR) {
        snprintf(err, errlen, "capture on %s failed: %s", ifs[i], pcap_geterr(h[i]));
        goto out;
      }
    }
  }
  rc = 0;
out:
  for (int i = 0; i < opened; i++) {
    struct pcap_stat st;
    if (pcap_stats(h[i], &st) == 0) *dropped += (uint64_t)st.ps_drop + st.ps_ifdrop;
    pcap_close(h[i]);
  }
  free(h);
  free(idx);
  free(fds);
  return rc;
}
