# shellcheck shell=bash
# figures.sh -- sourced by the bench scripts (tools/bench/lib/ is not run on its own): the
# functions that turn runs into the figures of `make bench`, and the per-rank CPU quotas that the
# trainer's benches give their ranks.

# median: the middle of the numbers on stdin, one a line (other lines are skipped), as written;
# of an even count the lower middle one. "nan" when there is none.
median() { grep -E '^[0-9.]+$' | sort -g | awk '{v[NR]=$1} END {if (NR) print v[int((NR+1)/2)]; else print "nan"}'; }

# median_mean FORMAT: the median of the numbers on stdin, one a word (other words are skipped),
# of an even count the mean of the two middle ones, printed with printf FORMAT. "nan" when none.
median_mean() { tr ' ' '\n' | grep -E '^[0-9.]+$' | sort -g | awk -v f="$1" '{v[NR]=$1} END {if (NR) printf f "\n", (v[int((NR+1)/2)] + v[int(NR/2)+1]) / 2; else print "nan"}'; }

# ratio A B: A / B to three decimals; "nan" when A is not a number or B is not above 0.
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {if (a ~ /^[0-9.]+$/ && b > 0) printf "%.3f", a / b; else print "nan"}'; }

# verdict VALUE TARGET [ge|le]: "met" when VALUE >= TARGET (le: <=), else "MISSED"; "not
# measured" when VALUE is not a number.
verdict() { awk -v r="$1" -v b="$2" -v op="${3:-ge}" 'BEGIN {if (r !~ /^[0-9.]+$/) print "not measured"; else if ((op == "ge" && r >= b) || (op == "le" && r <= b)) print "met"; else print "MISSED"}'; }

# num X: X for a JSON number field, or null when X is not a number.
num() { [[ $1 =~ ^[0-9.]+$ ]] && echo "$1" || echo null; }

# The CPU quotas: each rank of a local job stands for a machine of its own, so each gets its own
# share of a core (a cgroup: v1 cpu, or v2 with the cpu controller; needs root). cg_root is
# empty when there is no such controller to write to.
cg_root=""
[ -w /sys/fs/cgroup/cpu ] && cg_root=/sys/fs/cgroup/cpu
[ -z "$cg_root" ] && grep -qw cpu /sys/fs/cgroup/cgroup.subtree_control 2>/dev/null && [ -w /sys/fs/cgroup ] && cg_root=/sys/fs/cgroup

# confine PID N SHARE NAME: moves launcher PID's N rank processes (waiting up to 10 s for them)
# into cgroups NAME0, NAME1, ... of SHARE of a core each. Returns 1 when it cannot.
# The quota is enforced per period, and a rank that idled through part of one computes at a whole
# core until the period's quota is spent: with 10 ms periods, pipeline stages waiting behind a
# slow one computed 4 layers in 185 ms and, with none to wait for, 5 in 270 ms (1.46x the time
# for 1.25x the work), and healthy data-parallel ranks waiting at the allreduce ran faster than
# their share. A device does not speed up for having idled, so the period is the shortest the
# kernel takes for the quota (1 ms of quota; confine_period SHARE prints it).
confine_period() { awk -v s="$1" 'BEGIN {p = s < 1 ? int(1000 / s + 0.5) : 1000; print p}'; }
confine() {
  local pid=$1 n=$2 share=$3 name=$4 kids=() quota period
  for _ in $(seq 200); do
    mapfile -t kids < <(pgrep -P "$pid" | sort -n)
    [ ${#kids[@]} -ge "$n" ] && break
    sleep 0.05
  done
  period=$(confine_period "$share")
  quota=$(awk -v s="$share" -v p="$period" 'BEGIN {printf "%d", s * p}')
  for i in "${!kids[@]}"; do
    local g=$cg_root/$name$i
    mkdir -p "$g" || return 1
    if [ -f "$g/cpu.max" ]; then
      echo "$quota $period" >"$g/cpu.max"
    else
      echo "$period" >"$g/cpu.cfs_period_us" && echo "$quota" >"$g/cpu.cfs_quota_us"
    fi
    echo "${kids[$i]}" >"$g/cgroup.procs" || return 1
  done
}

# release NAME: removes the cgroups confine made under NAME (once their processes are gone).
release() { for g in "$cg_root"/"$1"*; do [ -d "$g" ] && rmdir "$g" 2>/dev/null; done; }
