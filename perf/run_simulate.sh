#!/usr/bin/env bash
# perf/simulate: builds simulate_bench if needed, runs it, then plots the result.
set -euo pipefail

usage() {
  cat <<'EOF'
Usage: perf/run_simulate.sh [--build-dir DIR] [--quick] [-h|--help]

Builds the simulate_bench target (cmake --build DIR --target simulate_bench; DIR must
already be configured, e.g. by scripts/test.sh), runs it from the repository root,
then plots with Debian's /usr/bin/python3:

  perf/results/simulate.csv   one row per machine, allocation, collective and size
  perf/results/simulate.md    the summary tables
  perf/results/simulate.png   speedup over rings at 1 GiB, and the size sweep

  --build-dir DIR   the CMake build folder (default: build)
  --quick           pass --quick to simulate_bench (a smoke run; overwrites the results)
  -h, --help        this text

Exit codes: 0 success, 1 a step failed, 2 bad command line.
EOF
}

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="build"
bench_args=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    -h | --help) usage; exit 0 ;;
    --build-dir)
      [[ $# -ge 2 ]] || { echo "run_simulate.sh: --build-dir needs a value" >&2; exit 2; }
      build_dir="$2"; shift 2 ;;
    --build-dir=*) build_dir="${1#*=}"; shift ;;
    --quick) bench_args+=(--quick); shift ;;
    *) echo "run_simulate.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done

cd "$root"
if [[ ! -f "$build_dir/CMakeCache.txt" ]]; then
  echo "run_simulate.sh: $build_dir is not a configured build folder (run scripts/test.sh or" \
       "cmake -S . -B $build_dir first)" >&2
  exit 1
fi
cmake --build "$build_dir" --target simulate_bench
mkdir -p perf/results
start=$(date +%s)
"$build_dir/perf/simulate_bench" "${bench_args[@]}" >/dev/null
/usr/bin/python3 perf/plot_simulate.py --csv perf/results/simulate.csv \
  --output perf/results/simulate.png
echo "run_simulate.sh: done in $(( $(date +%s) - start )) s:"
echo "  $root/perf/results/simulate.csv"
echo "  $root/perf/results/simulate.md"
echo "  $root/perf/results/simulate.png"
