/* net_tcp_rate.h -- a TCP socket's delivery rate as the kernel measures it from its ACKs
 * (TCP_INFO's tcpi_delivery_rate): what the path carried, not what the send buffer took. */
#ifndef C4_NET_TCP_RATE_H
#define C4_NET_TCP_RATE_H

/* Sets *bytes_per_ns to fd's latest delivery rate sample and *app_limited to 1 when the sender
 * had too little data in flight for the sample to show the path's capacity. Returns 0, or -1
 * when the kernel does not report it (then the caller measures by itself). */
int c4_tcp_delivery_rate(int fd, double *bytes_per_ns, int *app_limited);

#endif
