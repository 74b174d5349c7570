#!/usr/bin/env bash
# perf/blink_perf: Blink's AllReduce against Open MPI's in the same jobs, several runs
# per rank count, summarised by the median of each run's own ratio.
set -euo pipefail

usage() {
  cat <<'EOF2'
Usage: perf/run_blink_perf.sh [--build-dir DIR] [--ranks "2 4"] [--runs N] [-h|--help]
                              [-- BLINK_PERF_ARGS...]

Builds blink_perf in DIR (default: build; it must be configured) and, for each rank
count, runs `blink_perf --baseline mpi` N times (default 5) in CSV, then once as the
text table. blink_perf times Blink and then MPI size by size, so each run's ratio at a
size compares the two under the same machine load; on a shared VM whose speed swings
from one second to the next, the median of those per-run ratios is the figure to
trust, more than a ratio of medians. BLINK_PERF_ARGS default to
`-b 1K -e 64M -n 30 -w 5` (AllReduce, float32, sum; see blink_perf --help). Writes:

  perf/results/blink_perf_npN.csv  run, then blink_perf's CSV columns (every run)
  perf/results/blink_perf_npN.txt  one run's nccl-tests-style table
  perf/results/blink_perf.md       per rank count and size, out of place and in place:
                                   median bus GB/s of Blink and MPI, median per-run
                                   ratio, lowest and highest per-run ratio

Exit codes: 0 success, 1 a step failed (a wrong element included), 2 bad command line.
EOF2
}

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir=build ranks="2 4" runs=5
perf_args=(-b 1K -e 64M -n 30 -w 5)
while [[ $# -gt 0 ]]; do
  case "$1" in
    -h | --help) usage; exit 0 ;;
    --build-dir) [[ $# -ge 2 ]] || { echo "run_blink_perf.sh: --build-dir needs a value" >&2; exit 2; }; build_dir=$2; shift 2 ;;
    --ranks) [[ $# -ge 2 ]] || { echo "run_blink_perf.sh: --ranks needs a value" >&2; exit 2; }; ranks=$2; shift 2 ;;
    --runs) [[ $# -ge 2 && $2 =~ ^[1-9][0-9]*$ ]] || { echo "run_blink_perf.sh: --runs needs a positive integer" >&2; exit 2; }; runs=$2; shift 2 ;;
    --) shift; perf_args=("$@"); break ;;
    *) echo "run_blink_perf.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
cd "$root"
cmake --build "$build_dir" --target blink_perf >/dev/null
perf="$build_dir/perf/blink_perf"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_mpi_yield_when_idle=1
mpirun_flags=(--oversubscribe --bind-to none)
mkdir -p perf/results

csvs=()
for np in $ranks; do
  csv="perf/results/blink_perf_np$np.csv"
  csvs+=("$csv")
  header=0
  : >"$csv"
  for run in $(seq 1 "$runs"); do
    echo "blink_perf: $np ranks, run $run of $runs" >&2
    mpirun "${mpirun_flags[@]}" -np "$np" "$perf" "${perf_args[@]}" --baseline mpi --format csv \
      >"$csv.run"
    if [[ $header -eq 0 ]]; then
      sed -n '1s/^/run,/p' "$csv.run" >>"$csv"
      header=1
    fi
    sed -n "2,\$s/^/$run,/p" "$csv.run" >>"$csv"
  done
  rm -f "$csv.run"
  mpirun "${mpirun_flags[@]}" -np "$np" "$perf" "${perf_args[@]}" --baseline mpi \
    >"perf/results/blink_perf_np$np.txt"
done

/usr/bin/python3 - "$(hostname)" "${csvs[@]}" >perf/results/blink_perf.md <<'PY'
import csv, statistics, subprocess, sys
from collections import defaultdict

cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
print(f"Machine: {subprocess.getoutput('nproc')} cores, {cpu}. AllReduce through "
      "`blink_perf --baseline mpi`; bus bandwidth in GB/s (medians over runs); ratio = "
      "Blink / MPI within one run, median (lowest-highest) over runs.\n")
wrong = 0
for path in sys.argv[2:]:
    rows = list(csv.DictReader(open(path)))
    ranks = path.rsplit("np", 1)[1].split(".")[0]
    bus = defaultdict(list)
    per_run = {}
    memcpy = []
    for r in rows:
        if r["impl"] == "memcpy":
            memcpy.append(float(r["busbw_gbps"]))
            continue
        key = (int(r["bytes"]), r["inplace"])
        bus[(r["impl"], key)].append(float(r["busbw_gbps"]))
        per_run[(r["run"], r["impl"], key)] = float(r["busbw_gbps"])
        wrong += int(r["wrong"]) if r["impl"] == "blink" else 0
    ratios = defaultdict(list)
    for (run, impl, key), v in per_run.items():
        if impl == "blink" and (run, "mpi", key) in per_run:
            ratios[key].append(v / per_run[(run, "mpi", key)])
    runs = len({r["run"] for r in rows})
    print(f"### {ranks} ranks ({runs} runs; memcpy of the largest size: median "
          f"{statistics.median(memcpy):.2f} GB/s)\n")
    print("| bytes | Blink out | MPI out | ratio out | Blink in | MPI in | ratio in |")
    print("|---:|---:|---:|---|---:|---:|---|")
    for size in sorted({k[0] for k in ratios}):
        cells = []
        for ip in ("0", "1"):
            k = (size, ip)
            rs = ratios[k]
            cells += [f"{statistics.median(bus[('blink', k)]):.2f}",
                      f"{statistics.median(bus[('mpi', k)]):.2f}",
                      f"**{statistics.median(rs):.2f}** ({min(rs):.2f}-{max(rs):.2f})"]
        print(f"| {size} | " + " | ".join(cells) + " |")
    print()
print(f"Wrong Blink elements in all runs: {wrong}.")
sys.exit(1 if wrong else 0)
PY
echo "wrote perf/results/blink_perf.md" >&2
