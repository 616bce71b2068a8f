/* net_path_report.h -- tells c4mon what each data socket's path delivered (path records). */
#ifndef C4_NET_PATH_REPORT_H
#define C4_NET_PATH_REPORT_H

#include "net_comm.h"

/* Emits a path record (common/c4_record.h) for data socket sock of sending comm c: bytes
 * acknowledged over busy_ns of its busy time, the sample the multipath weights just took. Never
 * blocks: a full telemetry ring drops it and counts the drop. */
void c4_path_report(const struct c4_comm *c, int sock, double bytes, double busy_ns);

#endif
