#!/usr/bin/env bash
# deps.sh -- installs the Debian packages c4's build, tests and bench need (make deps).
set -euo pipefail
PKGS=(build-essential pkg-config check libsubunit-dev libjansson-dev libssl-dev libmicrohttpd-dev libcairo2-dev libopenblas-dev iperf3 iproute2 iputils-ping clang libclang-rt-14-dev clang-format util-linux libpcap-dev tcpdump python3 libibverbs-dev jq curl prometheus help2man)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "deps: all present (${PKGS[*]})"
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "deps: missing ${missing[*]}; run as root:" >&2
  echo "  apt-get update && apt-get install -y ${missing[*]}" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"
