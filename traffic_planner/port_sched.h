/* port_sched.h -- one host's flows in one direction on its NIC ports: the placement that makes its
 * busiest port as light as it can be, by branch and bound (exact for the handful of flows a host
 * usually has). The planner uses it to place flows and to bound what any plan can do. */
#ifndef C4_PLAN_PORT_SCHED_H
#define C4_PLAN_PORT_SCHED_H

#define C4_PLAN_SCHED_TOL 1e-9

/* Places n flows of w[0..n-1] bytes, largest first, on m ports of inv[0..m-1] seconds per byte so
 * that the busiest port's load (seconds) is least: starts from largest-first greedy, then searches
 * at most `limit` nodes, stopping early at a load of `enough` or less (0: never). Writes the best
 * placement found to port[0..n-1] and returns its busiest load, with *exact 1 when the search
 * ended before the limit: that load is then at most the least possible or `enough`, times
 * 1 + C4_PLAN_SCHED_TOL (rounding). Returns C4_ENOMEM when out of memory. */
double c4_plan_sched_ports(const double *w, int n, const double *inv, int m, double enough,
                           long limit, int *port, int *exact);

#endif
