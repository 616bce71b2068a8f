/* ib_props.h -- pure translations for the verbs transport: link speed from the IB spec's width and
 * speed codes, NCCL_IB_HCA device selection, RoCEv2 flow label <-> UDP source port, and the LID
 * that pins an InfiniBand path. No I/O, no allocation. */
#ifndef C4_IB_PROPS_H
#define C4_IB_PROPS_H

#include <stdbool.h>
#include <stdint.h>

/* The port's data rate in Mbps: lanes (ibv_port_attr.active_width: 1 = 1x, 2 = 4x, 4 = 8x,
 * 8 = 12x, 16 = 2x) times the per-lane rate (active_speed: 1 SDR 2.5 Gbps, 2 DDR 5, 4 QDR 10,
 * 8 FDR10 10, 16 FDR 14, 32 EDR 25, 64 HDR 50, 128 NDR 100, 256 XDR 200). An unknown width counts
 * as 1x and an unknown speed as SDR, so a new code never yields 0 (NCCL does the same). */
int c4_ib_speed_mbps(unsigned active_width, unsigned active_speed);

/* Does port `port` of device `dev` pass `list`, written in NCCL_IB_HCA syntax? Comma-separated
 * entries "name" or "name:port"; a name matches every device it is a prefix of ("mlx5" passes
 * mlx5_0 and mlx5_12), and an entry without a port passes every port. A leading '^' makes it an
 * exclusion list; a '=' next (or first) makes names exact ("=mlx5_1" does not pass mlx5_10).
 * NULL or a list naming nothing ("", ",", "=") passes everything; its '^' form passes nothing. */
bool c4_ib_hca_matches(const char *list, const char *dev, int port);

/* The UDP source port a RoCEv2 NIC uses for a QP with GRH flow label fl (the 20 bits fl &
 * 0xfffff): the low 14 bits XOR the high 6, with the top two bits set, as rdma-core defines it
 * (libibverbs ibv_flow_label_to_udp_sport). Always in 49152..65535. */
uint16_t c4_ib_flow_label_to_sport(uint32_t fl);

/* The smallest flow label that makes the NIC send from sport (sport - 0xc000: its high 6 bits
 * zero), or -1 when no flow label reaches sport (below 49152). */
int32_t c4_ib_sport_to_flow_label(uint16_t sport);

/* The destination LID that takes path `path_bits` to a port whose base LID is base and whose LMC
 * is lmc (the port answers on base .. base + 2^lmc - 1, and the subnet manager routes each of
 * them its own way). path_bits < 0 (not planned) or >= 2^lmc (the port has no such LID) gives
 * base; *ok (may be NULL) then says whether the plan's bits were taken. */
uint16_t c4_ib_dlid(uint16_t base, unsigned lmc, int path_bits, bool *ok);

#endif
