#!/usr/bin/env bash
# perf/plan_scale: planning time, memory and prediction on large clusters (issue 16).
set -euo pipefail

usage() {
  cat <<'EOF'
Usage: perf/run_plan_scale.sh [--build-dir DIR] [-h|--help]

Builds plan_scale_bench (DIR must already be configured), then runs from the
repository root, each case in a fresh child process (a few minutes on a quiet 2-core
machine):

  perf/results/plan_scale.csv / .md
      the whole plan::choosePlan (every candidate, baselines where built) on the
      bench's default cases: 64-GPU clusters, hgx-h100:128 AllReduce and AllGather,
      dgx1-v100:4, dgx2
  perf/results/plan_scale_hierarchical.csv / .md
      the hierarchical plan alone (--family hierarchical), 1 GiB: AllReduce on 2 to
      128 H100 nodes against the NIC bound, AllGather on 16 to 128 nodes

  --build-dir DIR   the CMake build folder (default: build)
  -h, --help        this text

Exit codes: 0 success, 1 a step failed, 2 bad command line.
EOF
}

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="build"
while [[ $# -gt 0 ]]; do
  case "$1" in
    -h | --help) usage; exit 0 ;;
    --build-dir)
      [[ $# -ge 2 ]] || { usage >&2; exit 2; }
      build_dir="$2"
      shift 2
      ;;
    *) usage >&2; exit 2 ;;
  esac
done

cd "$root"
cmake --build "$build_dir" --target plan_scale_bench -j2
bench="$build_dir/perf/plan_scale_bench"
mkdir -p perf/results
"$bench" --csv perf/results/plan_scale.csv --markdown perf/results/plan_scale.md
cases=()
for nodes in 2 8 16 32 128; do cases+=(--case "hgx-h100:$nodes,allreduce,1G"); done
for nodes in 16 32 64 128; do cases+=(--case "hgx-h100:$nodes,allgather,1G"); done
"$bench" --family hierarchical "${cases[@]}" \
  --csv perf/results/plan_scale_hierarchical.csv \
  --markdown perf/results/plan_scale_hierarchical.md
