#!/usr/bin/env bash
# include_graph.sh -- checks that the tree's arrows point down (docs/architecture.md): builds the
# include graph from the compiler's own dependency output (the -MMD files every compile of BUILD
# writes, the -MM list with the exact include paths of each folder) and the call graph from the
# objects' symbols (nm), then fails on
#   - a source that reaches a header of a folder it may not use (common/ uses nothing above it,
#     include/c4/ is for all, nothing uses monitor/ or trainer/, inside the plugin the API layer
#     reaches a transport only through core/backend.h, no transport uses another);
#   - files that call into each other, two directly or more round a cycle (A calls B calls C
#     calls A), each named.
# Tests (tests/) may use anything; the benchmarks (tools/bench/) may drive the plugin's core and
# socket transport and c4mon's library directly, as their tests do. Usage: include_graph.sh [BUILD_DIR] (default $C4_BUILD_DIR).
set -u
BUILD=${1:-${C4_BUILD_DIR:-build}}
BUILD=${BUILD%/}
fail() {
  echo "include_graph: FAILED: $*"
  exit 1
}

# The folder a path belongs to: the plugin's and the tools' sub-folders count on their own.
folder_of() {
  case $1 in
  nccl_net_plugin/*/* | tools/*/* | include/*/*) echo "${1%/*}" | cut -d/ -f1-2 ;;
  */*) echo "${1%%/*}" ;;
  *) echo . ;;
  esac
}

# The folders a source folder may include from, as one extended regular expression.
allowed() {
  local base='common|include/c4'
  case $1 in
  include/c4) echo '^include/c4$' ;;
  common) echo "^($base)$" ;;
  kernels) echo '^kernels$' ;;
  nccl_net_plugin/core) echo "^(nccl_net_plugin/core|$base)$" ;;
  nccl_net_plugin/api) echo "^(nccl_net_plugin/api|nccl_net_plugin/core|$base)$" ;;
  nccl_net_plugin/sock | nccl_net_plugin/ib | nccl_net_plugin/wrap)
    echo "^($1|nccl_net_plugin/core|$base)$" ;;
  nccl_net_plugin/prof | nccl_net_plugin/preload) echo "^($1|$base)$" ;;
  traffic_planner) echo "^(traffic_planner|$base)$" ;;
  monitor) echo "^(monitor|traffic_planner|$base)$" ;;
  trainer) echo "^(trainer|kernels|traffic_planner|$base)$" ;;
  tools/bench) echo "^(tools/bench|traffic_planner|monitor|nccl_net_plugin/core|nccl_net_plugin/sock|$base)$" ;;
  tools/*) echo "^($1|traffic_planner|kernels|$base)$" ;;
  *) echo '' ;; # a folder nobody described: every include from it is reported
  esac
}

cd "$(dirname "$0")/../.." || fail "cannot find the repository"
[ -d "$BUILD/obj" ] || fail "no objects in $BUILD/obj: build first (make test builds build/san)"
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  sources=$(git ls-files --cached --others --exclude-standard '*.c' | grep -v '^tests/')
else # an exported tree (git archive): every C source but the tests
  sources=$(find . -name '*.c' -not -path './tests/*' -not -path "./$BUILD/*" | sed 's|^\./||' | sort)
fi
[ -n "$sources" ] || fail "no C sources found"

# ---- includes ---------------------------------------------------------------------------------
bad=0
checked=0
for src in $sources; do
  dep="$BUILD/obj/${src%.c}.d"
  [ -f "$dep" ] || continue # not built here (e.g. the CUDA host code without nvcc)
  checked=$((checked + 1))
  from=$(folder_of "$src")
  ok=$(allowed "$from")
  # The first rule of the .d file: target, the source, then every header it reaches.
  for h in $(sed -e ':a' -e '/\\$/{N;s/\\\n//;ba' -e '}' -e 'q' "$dep" | cut -d: -f2-); do
    case $h in /*) continue ;; esac # system and pkg-config headers
    h=$(realpath -m --relative-to=. "$h")
    [ "$h" = "$src" ] && continue
    to=$(folder_of "$h")
    if [ -z "$ok" ] || ! [[ $to =~ $ok ]]; then
      echo "include_graph: $src ($from) reaches $h ($to), which $from may not use"
      bad=$((bad + 1))
    fi
  done
done
[ "$checked" -gt 0 ] || fail "no dependency files (.d) under $BUILD/obj: build first"
echo "include_graph: $checked sources checked against the folder rules, $bad bad includes"

# ---- calls ------------------------------------------------------------------------------------
syms=$(mktemp)
trap 'rm -f "$syms"' EXIT
for src in $sources; do
  obj="$BUILD/obj/${src%.c}.o"
  [ -f "$obj" ] || continue
  nm "$obj" | awk -v f="$src" '$1 == "U" {print "U", f, $2} NF == 3 && $2 ~ /^[TDBRC]$/ {print "D", f, $3}'
done >"$syms"
# Files on a cycle of calls: prune files that call no file still left until none can go; what
# stays calls round a cycle (or into one). Then name each file that is on a cycle, with a file
# it calls on the way round.
cycles=$(awk '$1 == "D" {def[$3] = def[$3] " " $2}
              $1 == "U" {use[n++] = $2 " " $3}
              END {
                for (i = 0; i < n; i++) {
                  split(use[i], u, " ")
                  if (!(u[2] in def)) continue
                  k = split(def[u[2]], d, " ")
                  for (j = 1; j <= k; j++)
                    if (d[j] != u[1] && !((u[1] " " d[j]) in edge)) {
                      edge[u[1] " " d[j]] = 1
                      out[u[1]]++
                      left[u[1]] = left[d[j]] = 1
                    }
                }
                do {
                  gone = 0
                  for (f in left)
                    if (!out[f]) {
                      delete left[f]
                      gone = 1
                      for (e in edge) {
                        split(e, a, " ")
                        if (a[2] == f) { out[a[1]]--; delete edge[e] }
                      }
                    }
                } while (gone)
                for (e in edge) {
                  split(e, a, " ")
                  if ((a[1] in left) && (a[2] in left)) print a[1], "calls", a[2]
                }
              }' "$syms" | sort)
if [ -n "$cycles" ]; then
  echo "include_graph: files that call round a cycle (or into one), with the calls between them:"
  sed 's/^/include_graph:   /' <<<"$cycles"
  bad=$((bad + $(wc -l <<<"$cycles")))
fi

[ "$bad" -eq 0 ] || fail "$bad arrows point the wrong way (see above)"
echo "include_graph: ok"
