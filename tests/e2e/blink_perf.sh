#!/usr/bin/env bash
# perf/blink_perf from outside: --help names every option, a bad command line exits 2,
# and small sweeps at 2 ranks with --baseline mpi give the stable CSV (exact header,
# one row per impl, size and in-place mode, numeric fields, no wrong Blink element)
# and the nccl-tests-style text table.
# Usage: blink_perf.sh BLINK_PERF MPIEXEC [MPIEXEC_FLAGS...]
set -euo pipefail
perf=$1 mpiexec=$2
shift 2
flags=("$@")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

fail() {
  echo "FAIL: $*"
  for f in "$work"/*; do echo "== $f"; cat "$f"; done
  exit 1
}

# ---- --help: exit 0, every option named ------------------------------------------
"$perf" --help >"$work/help.out" 2>"$work/help.err" || fail "--help exited $?"
"$perf" -h >"$work/h.out" 2>&1 || fail "-h exited $?"
cmp -s "$work/help.out" "$work/h.out" || fail "-h and --help differ"
for opt in -b --minbytes -e --maxbytes -f --stepfactor -n --iters -w --warmup_iters \
           -c --check -o --op -d --datatype --collective -r --root --inplace --baseline \
           --format -m --memory --version -h --help --timed-bytes --warmup-bytes --setup-calls; do
  grep -q -- "$opt\b" "$work/help.out" || fail "--help does not mention $opt"
done
for word in allreduce broadcast reduce allgather reducescatter bfloat16 float64 csv busbw \
            algbw impl,collective,bytes,dtype,op,inplace,time_us,algbw_gbps,busbw_gbps,wrong; do
  grep -q -- "$word" "$work/help.out" || fail "--help does not mention $word"
done

# ---- bad command lines: exit 2 with a message naming the problem ------------------
expect_usage() {  # expect_usage PATTERN ARGS...: exit 2, PATTERN on stderr, nothing on stdout
  local pattern=$1 rc=0
  shift
  "$perf" "$@" >"$work/bad.out" 2>"$work/bad.err" || rc=$?
  [ "$rc" -eq 2 ] || fail "'$*' exited $rc, not 2"
  grep -q -- "$pattern" "$work/bad.err" || fail "'$*': no '$pattern' on stderr"
  [ ! -s "$work/bad.out" ] || fail "'$*' printed on stdout"
}
expect_usage "unknown option '--bogus'" --bogus
expect_usage "unknown option '-x'" -x 1
expect_usage "float33" -d float33
expect_usage "not a size" -b 1X
expect_usage "needs a value" -e
expect_usage "stepfactor" -f 1
expect_usage "avg needs a floating-point" -o avg -d int32
expect_usage "larger than --maxbytes" -b 2M -e 1M
expect_usage "inplace" --inplace 2
expect_usage "unexpected argument" stray
expect_usage "not a size" --timed-bytes 1X
expect_usage "needs a value" --warmup-bytes
expect_usage "setup-calls" --setup-calls -1
# A root that is not a rank is found once MPI runs: still exit 2 from every rank.
rc=0
"$mpiexec" "${flags[@]}" -np 2 "$perf" --collective broadcast -r 2 -b 1K -e 1K \
  >"$work/root.out" 2>"$work/root.err" || rc=$?
[ "$rc" -eq 2 ] || fail "--root 2 at 2 ranks exited $rc, not 2"
[ "$(grep -c 'is not a rank' "$work/root.err")" -eq 1 ] || fail "--root 2: one message, from rank 0"

# ---- CSV sweeps at 2 ranks --------------------------------------------------------
header="impl,collective,bytes,dtype,op,inplace,time_us,algbw_gbps,busbw_gbps,wrong"
num='^-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?$'
for coll in allreduce reducescatter; do
  out=$work/$coll.csv
  "$mpiexec" "${flags[@]}" -np 2 "$perf" --collective "$coll" --format csv --baseline mpi \
    -b 1K -e 64K -n 2 -w 1 >"$out" 2>"$work/$coll.err" || fail "$coll: exited $?"
  [ "$(head -n 1 "$out")" = "$header" ] || fail "$coll: the CSV header is '$(head -n 1 "$out")'"
  # 1K..64K is 7 sizes; blink and mpi, out of place and in place: 28 rows, plus memcpy.
  [ "$(tail -n +2 "$out" | wc -l)" -eq 29 ] || fail "$coll: expected 29 rows"
  [ "$(grep -c '^memcpy,memcpy,65536,float32,none,0,' "$out")" -eq 1 ] || fail "$coll: no memcpy row"
  for impl in blink mpi; do
    for inplace in 0 1; do
      for bytes in 1024 2048 4096 8192 16384 32768 65536; do
        n=$(awk -F, -v i="$impl" -v c="$coll" -v b="$bytes" -v p="$inplace" \
              '$1 == i && $2 == c && $3 == b && $4 == "float32" && $5 == "sum" && $6 == p' "$out" | wc -l)
        [ "$n" -eq 1 ] || fail "$coll: $n rows for $impl $bytes inplace=$inplace"
      done
    done
  done
  tail -n +2 "$out" | while IFS=, read -r impl c bytes dtype op inplace t alg bus wrong extra; do
    [ -z "$extra" ] || fail "$coll: more than 10 columns"
    for v in "$bytes" "$t" "$alg" "$bus" "$wrong"; do
      [[ $v =~ $num ]] || fail "$coll: '$v' is not a number ($impl $bytes)"
    done
    awk -v t="$t" 'BEGIN { exit !(t > 0) }' || fail "$coll: time $t is not positive"
    if [ "$impl" = blink ] && [ "$wrong" != 0 ]; then fail "$coll: $wrong wrong elements at $bytes"; fi
  done
done

# ---- The text table -----------------------------------------------------------------
"$mpiexec" "${flags[@]}" -np 2 "$perf" --collective broadcast -r 1 -d float16 --baseline mpi \
  -b 1K -e 4K -n 1 -w 1 >"$work/text.out" 2>"$work/text.err" || fail "text: exited $?"
grep -q '^# memcpy GB/s: [0-9]' "$work/text.out" || fail "text: no memcpy bandwidth"
grep -q '^# 2 rank(s) on 1 MPI host(s)' "$work/text.out" || fail "text: no rank count"
grep -q '^# Blink sees 1 node(s) by \(host name\|BLINK_NODE_ID\)' "$work/text.out" ||
  fail "text: not the nodes Blink sees"
grep -q '^#   node 0 (.*): 2 rank(s): 0 1' "$work/text.out" || fail "text: no node with its ranks"
grep -q 'blink out-of-place' "$work/text.out" || fail "text: no blink out-of-place block"
grep -q 'mpi in-place' "$work/text.out" || fail "text: no mpi in-place block"
grep -q '^# Out of bounds values : 0 OK' "$work/text.out" || fail "text: wrong values"
grep -q '^# Avg bus bandwidth    : [0-9]' "$work/text.out" || fail "text: no average bus bandwidth"
grep -q '^# Ratio blink/mpi busbw' "$work/text.out" || fail "text: no ratio"
[ "$(grep -c '^ *[0-9]* *[0-9]* *float16 *none *1 ' "$work/text.out")" -eq 3 ] || fail "text: expected 3 rows"
"$mpiexec" "${flags[@]}" -np 2 "$perf" -b 1K -e 2K -n 1 -w 0 --timed-bytes 8K --warmup-bytes 4K \
  >"$work/bytes.out" 2>"$work/bytes.err" || fail "--timed-bytes: exited $?"
grep -q '^# more calls where those move less: at least 8192 bytes timed and 4096 warmed up' \
  "$work/bytes.out" || fail "--timed-bytes: the header does not say so"
grep -q '^# Out of bounds values : 0 OK' "$work/bytes.out" || fail "--timed-bytes: wrong values"
grep -q '^# 100 untimed Blink calls before its first timing' "$work/bytes.out" ||
  fail "--setup-calls: the header does not give the default"
"$mpiexec" "${flags[@]}" -np 2 "$perf" -b 1K -e 1K -n 1 -w 0 --setup-calls 0 \
  >"$work/setup.out" 2>"$work/setup.err" || fail "--setup-calls 0: exited $?"
! grep -q 'untimed Blink calls' "$work/setup.out" || fail "--setup-calls 0: still in the header"

# ---- nccl-tests' names: -d all -o all, half/float/double, -m ------------------------
"$mpiexec" "${flags[@]}" -np 2 "$perf" -d all -o all -b 1K -e 1K -n 1 -w 1 --baseline mpi \
  --format csv >"$work/all.csv" 2>"$work/all.err" || fail "-d all -o all: exited $?"
[ "$(grep -c '^impl,' "$work/all.csv")" -eq 1 ] || fail "-d all -o all: not one CSV header"
# 12 types x sum, prod, min, max, and avg on the 4 floating types: 52 sweeps.
[ "$(grep '^blink,' "$work/all.csv" | cut -d, -f4,5 | sort -u | wc -l)" -eq 52 ] ||
  fail "-d all -o all: not 52 type/op sweeps"
awk -F, '$1 == "blink" && $10 != 0 {bad = 1} END {exit bad}' "$work/all.csv" ||
  fail "-d all -o all: wrong Blink elements"
for name in half:float16 float:float32 double:float64 int8:int8 uint64:uint64; do
  "$mpiexec" "${flags[@]}" -np 2 "$perf" -d "${name%%:*}" -o max -b 1K -e 1K -n 1 -w 1 \
    --format csv >"$work/name.csv" 2>"$work/name.err" || fail "-d ${name%%:*}: exited $?"
  grep -q "^blink,allreduce,1024,${name#*:},max,0," "$work/name.csv" ||
    fail "-d ${name%%:*} did not run ${name#*:}"
done
"$perf" -m elsewhere >/dev/null 2>"$work/memory.err" && fail "-m elsewhere accepted"
# Without a GPU and without BLINK_DEVICE=EMULATED there is no device: refused with a reason.
BLINK_DEVICE=OFF "$perf" -m device >/dev/null 2>"$work/device.err" &&
  fail "-m device succeeded without a device"
grep -q -- '--memory device, but' "$work/device.err" || fail "-m device: no reason given"
"$perf" --version | grep -q '^blink_perf: Blink [0-9]' || fail "--version: no build line"
echo "blink_perf: OK"
