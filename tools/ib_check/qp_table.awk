# qp_table.awk -- `make ib-check`'s table of how a verbs send comm spread its bytes over its QPs,
# from the INFO lines the plugin logs when the comm closes (nccl_net_plugin/ib/ib_comm.c):
#   ... verbs send comm 0123456789abcdef to HOST: QP 1 flow label 4660 (UDP port 53812): 33554432
#   bytes in 512 writes, 3071.2 MB/s, weight 1.000; 0 messages re-measured a QP
# (InfiniBand: "QP 1 path bits 2: ..."). Prints one row per QP of each comm: the path, the part of
# the comm's bytes the QP carried, its rate estimate and weight. Lines that are not such lines are
# skipped; exit 1 when there was none.
function field_after(s, key, rest) {
  rest = substr(s, index(s, key) + length(key))
  sub(/^ +/, "", rest)
  return rest
}

/verbs send comm [0-9a-f]+ to .*: QP [0-9]+ / {
  line = $0
  comm = field_after(line, "verbs send comm ")
  sub(/ .*/, "", comm)
  rest = field_after(line, ": QP ")
  qp = rest
  sub(/ .*/, "", qp)
  path = field_after(rest, qp " ")
  sub(/:.*/, "", path)
  stats = field_after(rest, path ": ")
  if (split(stats, w, " ") < 9 || w[2] != "bytes" || w[7] != "MB/s,") next
  key = comm SUBSEP qp
  if (!(key in bytes)) {
    order[++n] = key
    if (!(comm in total)) comms[++ncomm] = comm
  }
  bytes[key] = w[1] + 0
  where[key] = path
  rate[key] = w[6] + 0
  weight[key] = w[9] + 0
  total[comm] += w[1]
}

END {
  if (n == 0) exit 1
  printf "   %-16s %3s  %-32s %7s %10s %7s\n", "comm", "QP", "path", "bytes", "MB/s", "weight"
  for (i = 1; i <= n; i++) {
    split(order[i], k, SUBSEP)
    share = total[k[1]] > 0 ? 100 * bytes[order[i]] / total[k[1]] : 0
    printf "   %-16s %3s  %-32s %6.1f%% %10.1f %7.3f\n", k[1], k[2], where[order[i]], share,
           rate[order[i]], weight[order[i]]
  }
}
