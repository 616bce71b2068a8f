#!/usr/bin/env bash
# man.sh -- writes c4's man pages from the programs' own --help and --version (help2man), so the
# pages never drift from the programs: one page per program and one per c4mon subcommand.
# Usage: tools/install/man.sh BIN_DIR OUT_DIR (OUT_DIR receives the man1/*.1 files).
set -euo pipefail
BIN=$1
OUT=$2/man1
mkdir -p "$OUT"
command -v help2man >/dev/null || {
  echo "man.sh: help2man is missing (Debian package help2man: make deps)" >&2
  exit 1
}
page() { # NAME "COMMAND" DESCRIPTION
  help2man --no-info --section 1 --name "$3" --output "$OUT/$1.1" "$2"
}
page c4mon "$BIN/c4mon" "watch NCCL jobs that run the c4 plugin: stragglers, slow links, hangs, lost ranks"
page c4perf "$BIN/c4perf" "bandwidth, latency and allreduce through an NCCL net plugin between processes"
page c4train "$BIN/c4train" "train a small GPT-2-style model data-parallel, re-splitting around slow ranks"
page c4plan "$BIN/c4plan" "place a job's flows on a leaf-spine fabric's paths"
page c4cap "$BIN/c4cap" "per-flow, per-interface and per-path bytes of a packet capture"
page c4scen "$BIN/c4scen" "generate fault scenarios as c4 traces and score c4mon's verdicts on them"
# c4mon's subcommands, as its --help lists them ("  NAME    SUMMARY")
"$BIN/c4mon" --help | sed -n 's/^  \([a-z]\+\) \+\([a-z].*\)$/\1\t\2/p' | while IFS=$'\t' read -r sub summary; do
  page "c4mon-$sub" "$BIN/c4mon $sub" "$summary"
  sed -i "s/^\.TH C4MON /.TH C4MON-${sub^^} /; s/^c4mon \\\\- /c4mon-$sub \\\\- /" "$OUT/c4mon-$sub.1"
done
