#!/usr/bin/env bash
# Several hosts on one machine, for tests and benchmarks that cross a network.
#
# Usage:
#   emulate-hosts.sh setup    --prefix P --hosts N [--nics K] [--rate RATE[,RATE...]]
#   emulate-hosts.sh run      --prefix P --ranks R0,R1,... [--] [MPIRUN_OPTIONS...] PROGRAM [ARGS...]
#   emulate-hosts.sh exec     --prefix P --host I [--] COMMAND [ARGS...]
#   emulate-hosts.sh teardown --prefix P
#   emulate-hosts.sh check                 (exit 0 when this machine can emulate hosts)
#
# setup: network namespaces P-sw (a bridge per NIC) and P-h0 .. P-h(N-1), each host
#   with K NICs eth0 .. eth(K-1), NIC k of host i at 10.77.k.(i+1)/24 (one subnet per
#   NIC), joined by veth pairs to bridge k. --rate puts a tc tbf limit (e.g. 1gbit) on
#   both directions of each NIC (one rate for all, or one per NIC; this kernel has no
#   netem, so no delay). Idempotent: an existing set-up of P is torn down first.
# run: Open MPI started inside host 0 with R_i ranks on host i, through a
#   plm_rsh_agent that enters the other hosts. Every process of host i runs in its own
#   UTS namespace named P-hI (so Open MPI and Blink see distinct nodes) and its own
#   mount namespace whose /dev/shm is /dev/shm/emuhosts-P/hI of the machine: ranks of
#   different hosts share no shared memory, as on real hosts, and what a host left in
#   /dev/shm stays visible there after the run. Open MPI's TCP traffic uses every NIC
#   and its out-of-band traffic NIC 0; UCX_TLS defaults to tcp,self. MPIRUN_OPTIONS
#   (e.g. -x VAR=VALUE) go to mpirun before the program. Returns mpirun's status.
# exec: COMMAND inside host I (its network, hostname and /dev/shm).
# teardown: kills what still runs in P's namespaces, deletes them and their files.
# Needs root and `ip netns`; `check` says why not when it cannot.
set -euo pipefail

usage() { sed -n '2,/^[^#]/p' "$0" | grep '^#' | sed 's/^# \{0,1\}//'; }
die() {
  echo "emulate-hosts.sh: $*" >&2
  exit 2
}

check_machine() {
  [[ $(id -u) -eq 0 ]] || { echo "emulated hosts need root (network namespaces)"; return 1; }
  command -v ip >/dev/null || { echo "emulated hosts need iproute2 (ip netns)"; return 1; }
  command -v unshare >/dev/null || { echo "emulated hosts need unshare (util-linux)"; return 1; }
  local probe="emuhosts-probe-$$"
  if ! ip netns add "$probe" 2>/dev/null; then
    echo "emulated hosts need 'ip netns add' to work (a container without CAP_SYS_ADMIN?)"
    return 1
  fi
  ip netns del "$probe"
}

[[ $# -ge 1 ]] || { usage; exit 2; }
command=$1
shift
case "$command" in
  -h | --help | help) usage; exit 0 ;;
  check) check_machine; exit $? ;;
  setup | run | exec | teardown) ;;
  *) die "unknown command '$command' (see --help)" ;;
esac

prefix='' hosts='' nics=1 rates='' ranks='' host=''
while [[ $# -gt 0 ]]; do
  case "$1" in
    --prefix) prefix=$2; shift 2 ;;
    --hosts) hosts=$2; shift 2 ;;
    --nics) nics=$2; shift 2 ;;
    --rate) rates=$2; shift 2 ;;
    --ranks) ranks=$2; shift 2 ;;
    --host) host=$2; shift 2 ;;
    -h | --help) usage; exit 0 ;;
    --) shift; break ;;
    *) break ;;
  esac
done
[[ $prefix =~ ^[A-Za-z0-9][A-Za-z0-9_]{0,7}$ ]] ||
  die "--prefix must be 1-8 letters, digits or _ (it names interfaces of at most 15 characters)"

state=/tmp/emuhosts-$prefix         # hosts, hostfile, agent
shm_root=/dev/shm/emuhosts-$prefix  # each host's /dev/shm
switch_ns=$prefix-sw

host_ns() { echo "$prefix-h$1"; }
address() { echo "10.77.$2.$(($1 + 1))"; }  # host, nic

teardown() {
  local ns
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}'); do
    [[ $ns == "$prefix"-sw || $ns == "$prefix"-h* ]] || continue
    local pids
    pids=$(ip netns pids "$ns" 2>/dev/null || true)
    # shellcheck disable=SC2086  # one pid per word
    [[ -z $pids ]] || kill -KILL $pids 2>/dev/null || true
    ip netns del "$ns" 2>/dev/null || true
  done
  rm -rf "$state" "$shm_root"
}

# limit NS DEVICE RATE: a token bucket on DEVICE's egress.
limit() {
  [[ -n $3 ]] || return 0
  ip netns exec "$1" tc qdisc replace dev "$2" root tbf rate "$3" burst 256kb latency 100ms
}

setup() {
  [[ $hosts =~ ^[1-9][0-9]?$ && $hosts -le 200 ]] || die "--hosts must be 1..200"
  [[ $nics =~ ^[1-8]$ ]] || die "--nics must be 1..8"
  local rate_list=()
  IFS=, read -r -a rate_list <<<"$rates"
  check_machine >/dev/null || die "$(check_machine)"
  teardown
  mkdir -p "$state" "$shm_root"
  ip netns add "$switch_ns"
  local k i
  for ((k = 0; k < nics; ++k)); do
    ip -n "$switch_ns" link add "br$k" type bridge
    ip -n "$switch_ns" link set "br$k" up
  done
  : >"$state/hosts"
  for ((i = 0; i < hosts; ++i)); do
    local ns
    ns=$(host_ns "$i")
    ip netns add "$ns"
    ip -n "$ns" link set lo up
    mkdir -p "$shm_root/h$i"
    local line="$ns h$i"
    for ((k = 0; k < nics; ++k)); do
      local rate=${rate_list[$k]:-${rate_list[0]:-}}
      ip -n "$switch_ns" link add "h${i}n$k" type veth peer name "eth$k" netns "$ns"
      ip -n "$switch_ns" link set "h${i}n$k" master "br$k" up
      ip -n "$ns" addr add "$(address "$i" "$k")/24" dev "eth$k"
      ip -n "$ns" link set "eth$k" up
      limit "$ns" "eth$k" "$rate"
      limit "$switch_ns" "h${i}n$k" "$rate"
      line+=" $(address "$i" "$k")"
    done
    echo "$line" >>"$state/hosts"
  done
  echo "$nics" >"$state/nics"
  mkdir -p "$state/outer"
  # enter-host NS DIR COMMAND [ARGS...]: COMMAND in host NS with /dev/shm its DIR. The
  # machine's shm root is first bound at $state/outer, so that a host entered from
  # inside another (whose /dev/shm is already its own) still finds its directory.
  cat >"$state/enter-host" <<EOF
#!/bin/sh
ns=\$1 dir=\$2
shift 2
exec ip netns exec "\$ns" unshare --uts --mount sh -c '
  if [ -d "$shm_root" ]; then mount --bind "$shm_root" "$state/outer" || exit 255; fi
  hostname "\$0" && mount --bind "$state/outer/\$1" /dev/shm && shift && exec "\$@"' "\$ns" "\$dir" "\$@"
EOF
  # The agent Open MPI runs as `AGENT [ssh options] HOST COMMAND...`, like ssh.
  cat >"$state/agent" <<EOF
#!/bin/sh
while [ \$# -gt 0 ]; do case "\$1" in -*) shift ;; *) break ;; esac; done
entry=\$(awk -v a="\$1" '{ for (f = 3; f <= NF; ++f) if (\$f == a) { print \$1, \$2; exit } }' "$state/hosts")
[ -n "\$entry" ] || { echo "emulate-hosts agent: no emulated host has address \$1" >&2; exit 255; }
shift
exec "$state/enter-host" \$entry sh -c "\$*"
EOF
  chmod +x "$state/agent" "$state/enter-host"
}

need_setup() { [[ -f $state/hosts ]] || die "prefix '$prefix' is not set up (run setup first)"; }

# enter I COMMAND...: runs COMMAND as a process of host I.
enter() {
  local i=$1 ns dir
  shift
  read -r ns dir _ < <(sed -n "$((i + 1))p" "$state/hosts")
  [[ -n $ns ]] || die "there is no host $i"
  exec "$state/enter-host" "$ns" "$dir" "$@"
}

run() {
  need_setup
  [[ $# -ge 1 ]] || die "run: no program given"
  local counts=() total=0 i subnets=
  IFS=, read -r -a counts <<<"$ranks"
  local n_hosts
  n_hosts=$(wc -l <"$state/hosts")
  [[ ${#counts[@]} -ge 1 && ${#counts[@]} -le $n_hosts ]] ||
    die "--ranks needs 1..$n_hosts comma-separated counts"
  : >"$state/hostfile"
  for ((i = 0; i < ${#counts[@]}; ++i)); do
    [[ ${counts[$i]} =~ ^[1-9][0-9]*$ ]] || die "--ranks: '${counts[$i]}' is not a rank count"
    echo "$(address "$i" 0) slots=${counts[$i]}" >>"$state/hostfile"
    total=$((total + counts[i]))
  done
  local k
  for ((k = 0; k < $(cat "$state/nics"); ++k)); do subnets+=${subnets:+,}10.77.$k.0/24; done
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  export UCX_TLS=${UCX_TLS:-tcp,self}
  enter 0 mpirun --allow-run-as-root --oversubscribe --bind-to none --map-by slot \
    --mca mpi_yield_when_idle 1 --hostfile "$state/hostfile" \
    --mca plm_rsh_agent "$state/agent" --mca plm_rsh_no_tree_spawn 1 \
    --mca btl_tcp_if_include "$subnets" --mca oob_tcp_if_include 10.77.0.0/24 \
    -x UCX_TLS -np "$total" "$@"
}

case "$command" in
  setup) setup ;;
  teardown) teardown ;;
  run) run "$@" ;;
  exec)
    need_setup
    [[ $host =~ ^[0-9]+$ ]] || die "exec needs --host I"
    [[ $# -ge 1 ]] || die "exec: no command given"
    enter "$host" "$@"
    ;;
esac
