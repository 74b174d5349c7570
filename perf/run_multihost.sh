#!/usr/bin/env bash
# Blink against Open MPI across emulated hosts (scripts/emulate-hosts.sh; root and
# `ip netns` needed), every NIC rate-limited with tc tbf.
#
# Usage:
#   perf/run_multihost.sh --criterion [--build-dir DIR] [--reps N] [--prefix P]
#   perf/run_multihost.sh --matrix [--build-dir DIR] [--reps N] [--prefix P]
#       [--layouts "1,1 2,2 1,1,1,1 2,2,2,2"] [--nics "1 2"] [--rate 1gbit]
#       [--collectives "allreduce broadcast allgather"] [--sizes "1K 256M"] [--out NAME]
#   perf/run_multihost.sh --calls [--build-dir DIR] [--reps N] [--prefix P] [--sizes "64K 1M"]
#   perf/run_multihost.sh --pacing [--build-dir DIR] [--reps N] [--prefix P]
#       [--transport pmpi|ucx] [--sizes "1M 64M"] [--piece BYTES]
#   perf/run_multihost.sh [--ranks 2,2] [--nics K] [--rate RATE] [--transport pmpi|ucx]
#       [-- BLINK_PERF_ARGS...]          (one blink_perf job, its table on stdout)
#
# Every measurement is blink_perf --baseline mpi (Blink's C API, then PMPI_*, size by
# size in the same job, out of place). Configurations, alternated (the order reversed
# every other repetition):
#   ucx+ob1   Blink's streams between nodes over UCX (one worker per NIC, the plan's
#             NIC per rank); MPI pml ob1 with btl tcp over every NIC (+ vader, self)
#   pmpi+ucx  Blink's streams over PMPI; MPI pml ucx (UCX_TLS=tcp over every NIC)
# so each job gives one Blink and one Open MPI configuration. BLINK_PROBE_LINKS=1 in
# every job (the plan sees the tc rate, not the veth's 10 Gbit/s).
#
# --criterion (about 4-5 minutes): 2 hosts x 2 ranks, 1gbit per NIC, AllReduce
#   64K-64M, 1 NIC against 2 NICs per host, --reps 3 by default. Writes
#   perf/results/multihost_criterion.csv and .md: per size Blink's busbw with 1 and 2
#   NICs and their ratio, blink-sim's predicted time on the 2-NIC job's graph (its
#   INFO listing, probed rates included, as perf/results/multihost_criterion_topology.json)
#   and measured/predicted, and each
#   Open MPI configuration with Blink's ratio to the best. The criterion (issue 17):
#   at >= 16 MiB 2 NICs >= 1.8x one NIC and >= 90% of the prediction; at every
#   size >= 64 KiB Blink at least as fast as the best Open MPI.
#   What it measures is the rate-limited link, not tc's burst: tbf lets 256 KB per NIC
#   pass at the veth's speed before the rate applies, which at -n 3 is all a 64 KiB
#   call moves. So every measurement, Blink's and Open MPI's alike, first warms up
#   with at least 2 MiB of calls (the bucket drained: 4x its size per NIC) and then
#   times at least 8 MiB of calls (blink_perf --warmup-bytes 2M --timed-bytes 8M: 32
#   warm-ups and 128 timed calls at 64 KiB, -n 3 from 4 MiB up), so a bucket refilled
#   during the barrier is at most 1/16 of what a NIC carries while timed.
# --calls (about a minute per repetition): 2 hosts x 2 ranks, 2 NICs at 1gbit, AllReduce
#   float32 at --sizes (default "64K 128K 256K 1M"), perf/multihost_call_times: 100 calls
#   each alone (a 3 ms pause before each refills tc's bucket), Blink and PMPI
#   alternated call by call, in both configurations, --reps 3 by default. Writes
#   perf/results/multihost_calls.csv and .md: per size and configuration the median
#   over the repetitions of each one's minimum and median call time, and their ratios.
#   The minimum is what a call costs when the machine lets it run: on a loaded machine
#   it says more than blink_perf's averages of three calls.
# --pacing (about 3 minutes at --reps 2): issue 17 item 7, 2 hosts x 2 ranks, 2 NICs
#   per host at 1gbit, AllReduce and Broadcast 1M-64M over --transport (pmpi by
#   default), no MPI baseline. Plans alternated in one run: hier (the planner's
#   choice, the hierarchical plan), trees (BLINK_ALGO=trees, flat trees across the
#   nodes, streams unpaced), and each of them paced (hier-paced, trees-paced:
#   BLINK_PACE_BETWEEN_NODES=1, pieces of --piece bytes, BLINK_PACE_PIECE_BYTES,
#   32768 by default),
#   and blink-sim's prediction of both plans on the job's graph (--candidates).
#   Writes perf/results/multihost_pacing[_ucx][_pieceNk].csv and .md (medians,
#   ratios to hier; _ucx over ucx, _pieceNk for another --piece).
# --matrix: every layout x NIC count x collective (default sizes 1K-256M, --reps 1),
#   perf/results/NAME.csv, .md and .png (perf/plot_multihost.py; NAME multihost unless
#   --out says), the .md with each Blink configuration's lowest and highest busbw over
#   the repetitions, and NAME_tcp.csv: per job the TCP counters of the emulated hosts
#   (retransmitted segments, retransmission timeouts, tail loss probes; nstat, summed
#   over the hosts), which tell a stalled connection from a starved process.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build mode=single ranks=2,2 nics=1 rate='' transport=pmpi reps=''
prefix=nc out=multihost
layouts="1,1 2,2 1,1,1,1 2,2,2,2" nic_counts="1 2" collectives="allreduce broadcast allgather"
sizes="1K 256M" piece=32768
args=(-b 8 -e 4K -n 200 -w 20)
while [[ $# -gt 0 ]]; do
  case "$1" in
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
    --criterion) mode=criterion; shift ;;
    --matrix) mode=matrix; shift ;;
    --calls) mode=calls; shift ;;
    --pacing) mode=pacing; shift ;;
    --build-dir) build=$2; shift 2 ;;
    --ranks) ranks=$2; shift 2 ;;
    --nics) nics=$2; nic_counts=$2; shift 2 ;;
    --rate) rate=$2; shift 2 ;;
    --transport) transport=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --prefix) prefix=$2; shift 2 ;;
    --layouts) layouts=$2; shift 2 ;;
    --piece) piece=$2; shift 2 ;;
    --collectives) collectives=$2; shift 2 ;;
    --sizes) sizes=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --) shift; args=("$@"); break ;;
    *) echo "run_multihost.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
emulate=$root/scripts/emulate-hosts.sh
why=$("$emulate" check) || { echo "run_multihost.sh: $why" >&2; exit 1; }
perf=$build/perf/blink_perf
[[ -x $perf ]] || { echo "run_multihost.sh: no $perf (build blink_perf)" >&2; exit 1; }
hosts_of() { echo $(($(tr -cd , <<<"$1" | wc -c) + 1)); }
set_up=()
cleanup() { local p; for p in "${set_up[@]}"; do "$emulate" teardown --prefix "$p"; done; }
trap cleanup EXIT

if [[ $mode == single ]]; then
  p=${prefix:0:6}s
  set_up+=("$p")
  "$emulate" setup --prefix "$p" --hosts "$(hosts_of "$ranks")" --nics "$nics" ${rate:+--rate "$rate"}
  "$emulate" run --prefix "$p" --ranks "$ranks" -x BLINK_TRANSPORT=between="$transport" \
    "$perf" --baseline mpi "${args[@]}"
  exit
fi

# job PREFIX LAYOUT NICS CONFIG COLLECTIVE MIN MAX ITERS [BLINK_PERF_ARGS...]: one
# blink_perf job, its CSV rows on stdout (prefixed by the configuration), Blink's INFO
# log in $log.
job() {
  local p=$1 layout=$2 k=$3 config=$4 coll=$5 lo=$6 hi=$7 iters=$8
  shift 8
  local devices='' i
  for ((i = 0; i < k; ++i)); do devices+=${devices:+,}eth$i; done
  local blink_transport=ucx mpi=(--mca pml ob1 --mca btl tcp,vader,self)
  if [[ $config == pmpi+ucx ]]; then
    blink_transport=pmpi
    mpi=(--mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any --mca btl ^tcp
      -x UCX_NET_DEVICES="$devices")
  fi
  "$emulate" run --prefix "$p" --ranks "$layout" "${mpi[@]}" \
    -x BLINK_TRANSPORT=between=$blink_transport -x BLINK_PROBE_LINKS=1 -x BLINK_DEBUG=INFO \
    "$perf" --baseline mpi --collective "$coll" -b "$lo" -e "$hi" -n "$iters" -w 1 \
    --inplace 0 --format csv "$@" 2>>"$log" |
    awk -v pre="${layout//,/+},$k,$config" -F, 'NR > 1 && ($1 == "blink" || $1 == "mpi") { print pre "," $0 }'
}

mkdir -p "$root/perf/results"
log=$(mktemp)
if [[ $mode == criterion ]]; then
  reps=${reps:-3} rate=${rate:-1gbit}
  csv=$root/perf/results/multihost_criterion.csv
  for k in 1 2; do
    set_up+=("${prefix:0:6}c$k")
    "$emulate" setup --prefix "${prefix:0:6}c$k" --hosts 2 --nics "$k" --rate "$rate"
  done
  echo "layout,nics,config,impl,collective,bytes,dtype,op,inplace,time_us,algbw_gbps,busbw_gbps,wrong,rep" >"$csv"
  for ((rep = 1; rep <= reps; ++rep)); do
    order=("1 ucx+ob1" "2 ucx+ob1" "2 pmpi+ucx" "1 pmpi+ucx")
    ((rep % 2 == 0)) && order=("1 pmpi+ucx" "2 pmpi+ucx" "2 ucx+ob1" "1 ucx+ob1")
    for item in "${order[@]}"; do
      read -r k config <<<"$item"
      echo "criterion: rep $rep, $k NIC(s), $config" >&2
      : >"$log"
      job "${prefix:0:6}c$k" 2,2 "$k" "$config" allreduce 64K 64M 3 --warmup-bytes 2M \
        --timed-bytes 8M | sed "s/\$/,$rep/" >>"$csv"
      # blink-sim's prediction for each size on the graph this job planned on (2 NICs,
      # the probed rates), from rank 0's INFO listing.
      if [[ $k == 2 && $config == ucx+ob1 ]]; then
        topology=$root/perf/results/multihost_criterion_topology.json
        /usr/bin/python3 "$root/perf/multihost_topology.py" "$log" >"$topology"
        for ((bytes = 64 << 10; bytes <= 64 << 20; bytes *= 2)); do
          "$build/src/tools/blink-sim" --topo "$topology" --collective allreduce --bytes $bytes \
            --format json | /usr/bin/python3 -c 'import json, sys
d = json.load(sys.stdin)
t = [a["time_us"] for a in d["algorithms"] if a["name"] == "blink"][0]
print("2+2,2,predicted,predicted,allreduce,%d,float32,sum,0,%s,,,,%s" % (d["bytes"], t, sys.argv[1]))' \
            "$rep" >>"$csv"
        done
        grep -h "rank -> NIC\|NICs of node 0\|  n0\.nic\|BLINK_PROBE" "$log" | head -8 >&2 || true
      fi
    done
  done
  /usr/bin/python3 "$root/perf/summarize_multihost.py" --criterion "$csv" \
    >"$root/perf/results/multihost_criterion.md"
  cat "$root/perf/results/multihost_criterion.md"
  exit
fi

if [[ $mode == pacing ]]; then
  reps=${reps:-2} rate=${rate:-1gbit}
  [[ $sizes == "1K 256M" ]] && sizes="1M 64M"
  read -r lo hi <<<"$sizes"
  p=${prefix:0:6}p
  set_up+=("$p")
  "$emulate" setup --prefix "$p" --hosts 2 --nics 2 --rate "$rate"
  name=multihost_pacing
  [[ $transport == pmpi ]] || name+=_$transport
  [[ $piece == 32768 ]] || name+=_piece$((piece >> 10))k
  csv=$root/perf/results/$name.csv
  topology=$root/perf/results/multihost_pacing_topology.json
  rm -f "$topology"  # this run's graph: the first job's probed rates
  echo "layout,nics,config,impl,collective,bytes,dtype,op,inplace,time_us,algbw_gbps,busbw_gbps,wrong,rep" >"$csv"
  for ((rep = 1; rep <= reps; ++rep)); do
    order=(hier hier-paced trees trees-paced)
    ((rep % 2 == 0)) && order=(trees-paced trees hier-paced hier)
    for coll in allreduce broadcast; do
      for config in "${order[@]}"; do
        echo "pacing: rep $rep, $coll, $config over $transport" >&2
        plan=()
        [[ $config == trees* ]] && plan+=(-x BLINK_ALGO=trees)
        [[ $config == *-paced ]] &&
          plan+=(-x BLINK_PACE_BETWEEN_NODES=1 -x BLINK_PACE_PIECE_BYTES="$piece")
        : >"$log"
        "$emulate" run --prefix "$p" --ranks 2,2 --mca pml ob1 --mca btl tcp,vader,self \
          -x BLINK_TRANSPORT=between="$transport" -x BLINK_PROBE_LINKS=1 -x BLINK_DEBUG=INFO \
          "${plan[@]}" "$perf" --collective "$coll" -b "$lo" -e "$hi" -n 3 -w 1 --inplace 0 \
          --format csv 2>>"$log" |
          awk -v pre="2+2,2,$config" -v rep="$rep" -F, \
            'NR > 1 && $1 == "blink" { print pre "," $0 "," rep }' >>"$csv"
        grep -m1 -h "decided" "$log" >&2 || true
        [[ -s $topology ]] || /usr/bin/python3 "$root/perf/multihost_topology.py" "$log" >"$topology"
      done
    done
  done
  # blink-sim's prediction of both plans on the graph the jobs planned on.
  for coll in allreduce broadcast; do
    for ((bytes = $(numfmt --from=iec "$lo"); bytes <= $(numfmt --from=iec "$hi"); bytes *= 2)); do
      "$build/src/tools/blink-sim" --topo "$topology" --collective "$coll" --bytes $bytes \
        --candidates --format json | /usr/bin/python3 -c 'import json, sys
d = json.load(sys.stdin)
for c in d["candidates"]:
    name = {"blink-trees": "predicted-trees", "blink-hierarchical": "predicted-hier"}.get(c["name"])
    if name:
        print("2+2,2,%s,predicted,%s,%d,float32,sum,0,%s,,,,1" % (name, d["collective"], d["bytes"], c["time_us"]))' \
        >>"$csv"
    done
  done
  /usr/bin/python3 "$root/perf/summarize_pacing.py" "$csv" >"$root/perf/results/$name.md"
  cat "$root/perf/results/$name.md"
  exit
fi

# --matrix
if [[ $mode == calls ]]; then
  reps=${reps:-3} rate=${rate:-1gbit} p=${prefix:0:6}k
  [[ $sizes == "1K 256M" ]] && sizes="64K 128K 256K 1M"
  calls_bin=$build/perf/multihost_call_times
  [[ -x $calls_bin ]] || { echo "run_multihost.sh: no $calls_bin (build it)" >&2; exit 1; }
  set_up+=("$p")
  "$emulate" setup --prefix "$p" --hosts 2 --nics 2 --rate "$rate"
  csv=$root/perf/results/multihost_calls.csv
  echo "config,impl,bytes,calls,min_us,median_us,wrong,rep" >"$csv"
  for ((rep = 1; rep <= reps; ++rep)); do
    order=(ucx+ob1 pmpi+ucx)
    ((rep % 2 == 0)) && order=(pmpi+ucx ucx+ob1)
    for config in "${order[@]}"; do
      echo "calls: rep $rep, $config" >&2
      blink_transport=ucx mpi=(--mca pml ob1 --mca btl tcp,vader,self)
      if [[ $config == pmpi+ucx ]]; then
        blink_transport=pmpi
        mpi=(--mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any --mca btl ^tcp
          -x UCX_NET_DEVICES=eth0,eth1)
      fi
      "$emulate" run --prefix "$p" --ranks 2,2 "${mpi[@]}" \
        -x BLINK_TRANSPORT=between=$blink_transport -x BLINK_PROBE_LINKS=1 \
        "$calls_bin" $sizes 2>>"$log" |
        awk -F, -v pre="$config" -v rep="$rep" 'NR > 1 { print pre "," $0 "," rep }' >>"$csv"
    done
  done
  /usr/bin/python3 "$root/perf/summarize_multihost.py" --calls "$csv" \
    >"$root/perf/results/multihost_calls.md"
  cat "$root/perf/results/multihost_calls.md"
  exit
fi

reps=${reps:-1} rate=${rate:-1gbit}
read -r lo hi <<<"$sizes"
csv=$root/perf/results/$out.csv tcp_csv=$root/perf/results/${out}_tcp.csv
echo "layout,nics,config,impl,collective,bytes,dtype,op,inplace,time_us,algbw_gbps,busbw_gbps,wrong,rep" >"$csv"
echo "layout,nics,config,collective,rep,retransmitted_segments,timeouts,loss_probes" >"$tcp_csv"
# tcp_counters PREFIX HOSTS: the emulated hosts' TCP counters, summed (nstat -a: since boot
# of each namespace).
tcp_counters() {
  local i
  for ((i = 0; i < $2; ++i)); do
    ip netns exec "$1-h$i" nstat -az TcpRetransSegs TcpExtTCPTimeouts TcpExtTCPLossProbes
  done | awk '$1 == "TcpRetransSegs" { r += $2 } $1 == "TcpExtTCPTimeouts" { t += $2 }
    $1 == "TcpExtTCPLossProbes" { l += $2 } END { print r + 0, t + 0, l + 0 }'
}
for layout in $layouts; do
  for k in $nic_counts; do
    p=${prefix:0:6}m$k
    set_up+=("$p")
    "$emulate" setup --prefix "$p" --hosts "$(hosts_of "$layout")" --nics "$k" --rate "$rate"
    for coll in $collectives; do
      for ((rep = 1; rep <= reps; ++rep)); do
        order=(ucx+ob1 pmpi+ucx)
        ((rep % 2 == 0)) && order=(pmpi+ucx ucx+ob1)
        for config in "${order[@]}"; do
          echo "matrix: $layout, $k NIC(s), $coll, $config, rep $rep" >&2
          : >"$log"
          read -r r0 t0 l0 < <(tcp_counters "$p" "$(hosts_of "$layout")")
          job "$p" "$layout" "$k" "$config" "$coll" "$lo" "$hi" 5 | sed "s/\$/,$rep/" >>"$csv"
          read -r r1 t1 l1 < <(tcp_counters "$p" "$(hosts_of "$layout")")
          echo "${layout//,/+},$k,$config,$coll,$rep,$((r1 - r0)),$((t1 - t0)),$((l1 - l0))" >>"$tcp_csv"
        done
      done
    done
    "$emulate" teardown --prefix "$p"
  done
done
/usr/bin/python3 "$root/perf/summarize_multihost.py" "$csv" >"$root/perf/results/$out.md"
/usr/bin/python3 "$root/perf/plot_multihost.py" "$csv" "$root/perf/results/$out.png" || true
cat "$root/perf/results/$out.md"
