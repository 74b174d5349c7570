#!/usr/bin/env bash
# Builds Blink's fuzz targets with clang and libFuzzer, and runs them.
#
# Usage: tests/fuzz/run_fuzz.sh [--build-dir DIR] build
#        tests/fuzz/run_fuzz.sh [--build-dir DIR] run TARGET [SECONDS]
#        tests/fuzz/run_fuzz.sh [--build-dir DIR] all
#   build    configure (once) and build tests/fuzz/libfuzzer in DIR (default build-fuzz/)
#   run      fuzz TARGET (topology_json, nccl_xml or plan) for SECONDS (default
#            $BLINK_FUZZ_SECONDS, else 60), starting from tests/fuzz/corpus/TARGET
#            and the regression files; exits non-zero on a finding, whose input is
#            saved as DIR/findings/TARGET/crash-* (or timeout-*, oom-*, leak-*)
#   all      build, then run every target
# New inputs libFuzzer finds go to DIR/corpus/TARGET, never into the source tree.
# Uses ccache when it is installed.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build_dir=$root/build-fuzz
targets=(topology_json nccl_xml plan)

usage() { sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; }

if [ "${1:-}" = "--build-dir" ]; then
  [ "$#" -ge 2 ] || { usage >&2; exit 2; }
  build_dir=$2
  shift 2
fi
command=${1:-}
[ -n "$command" ] || { usage >&2; exit 2; }
shift

build() {
  if [ ! -f "$build_dir/build.ninja" ]; then
    local launcher=()
    if command -v ccache >/dev/null 2>&1; then
      launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
    fi
    # No build type: the flags below are all there is (-O1: the usual trade
    # between execution speed and build time for fuzzing).
    CC=clang CXX=clang++ cmake -S "$here/libfuzzer" -B "$build_dir" -G Ninja \
      -DCMAKE_BUILD_TYPE= -DCMAKE_CXX_FLAGS=-O1 "${launcher[@]}"
  fi
  cmake --build "$build_dir" --parallel "${BLINK_BUILD_JOBS:-$(nproc)}"
}

run() {
  local target=${1:?run needs a target: ${targets[*]}}
  local seconds=${2:-${BLINK_FUZZ_SECONDS:-60}}
  local binary=$build_dir/fuzz_$target
  [ -x "$binary" ] || { echo "run_fuzz: $binary is not built (run_fuzz.sh build)" >&2; exit 1; }
  local work=$build_dir/corpus/$target findings=$build_dir/findings/$target
  mkdir -p "$work" "$findings"
  local dictionary=$build_dir/$target.dict
  case "$target" in
    plan) cat "$here/topology_json.dict" "$here/nccl_xml.dict" >"$dictionary" ;;
    *) cp "$here/$target.dict" "$dictionary" ;;
  esac
  # Readers warn about odd but acceptable files; thousands of inputs a second would
  # bury libFuzzer's own report in them.
  export BLINK_DEBUG=NONE
  # -seed: the same mutations on every run (BLINK_FUZZ_SEED, default 1), so that a CI
  # run repeats what was fuzzed before it landed and a finding reproduces; another
  # seed (0: random) explores further. -timeout: an input that takes 10 s is a hang;
  # -max_len: room for the largest seed (the zoo's exports) to be mutated; leaks are
  # findings too (ASan's default).
  "$binary" "$work" "$here/corpus/$target" "$here/regressions/$target" \
    -dict="$dictionary" -max_total_time="$seconds" -seed="${BLINK_FUZZ_SEED:-1}" -timeout=10 \
    -rss_limit_mb=2048 \
    -max_len=65536 -artifact_prefix="$findings/" -print_final_stats=1 -close_fd_mask=1
}

case "$command" in
  build) build ;;
  run) run "$@" ;;
  all)
    build
    for target in "${targets[@]}"; do run "$target" "$@"; done
    ;;
  -h | --help) usage ;;
  *)
    echo "run_fuzz: unknown command '$command'" >&2
    usage >&2
    exit 2
    ;;
esac
