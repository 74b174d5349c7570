#!/usr/bin/env bash
# The whole test suite, from a fresh Debian machine: installs missing packages,
# configures, builds and runs ctest. Exits non-zero on any failure.
#
# Usage: scripts/test.sh [-L LABEL] [-R REGEX] [--help]
#   -L LABEL   only tests with this label: unit, mpi, e2e, fault, multihost, lint or fuzz
#              (multihost: hosts emulated with network namespaces, scripts/emulate-hosts.sh;
#              run as root where `ip netns` works, reported as skipped elsewhere)
#   -R REGEX   only tests whose name matches
# Environment: BLINK_BUILD_DIR (default build/), BLINK_BUILD_JOBS (default nproc),
#              BLINK_SANITIZE=address|undefined|thread (a separate build-<sanitizer>/ tree),
#              BLINK_FUZZ_SECONDS (default 60: how long each fuzz target runs),
#              BLINK_FUZZ_SEED (default 1: the fuzzers' fixed seed; 0: random).
set -euo pipefail
source "$(dirname "$0")/common.sh"

ctest_args=()
while [ "$#" -gt 0 ]; do
  case "$1" in
    -h|--help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -L|-R) [ "$#" -ge 2 ] || { echo "test.sh: $1 needs a value" >&2; exit 2; }
           ctest_args+=("$1" "$2"); shift 2 ;;
    *) echo "test.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done

extra=()
if [ -n "${BLINK_SANITIZE:-}" ]; then
  blink_build_dir=${BLINK_BUILD_DIR:-$blink_root/build-$BLINK_SANITIZE}
  extra=(-DBLINK_SANITIZE="$BLINK_SANITIZE")
fi
blink_setup_and_build "${extra[@]}"

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
if [ "${BLINK_SANITIZE:-}" = "address" ]; then
  # Full stacks so that suppressions (third-party libraries only) can match.
  export ASAN_OPTIONS=${ASAN_OPTIONS:-fast_unwind_on_malloc=0:detect_leaks=1}
  export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$blink_root/tests/sanitizers/lsan.supp:print_suppressions=0}
fi
if [ "${BLINK_SANITIZE:-}" = "thread" ]; then
  # Open MPI is not instrumented: its internal synchronisation is suppressed, Blink's is not.
  export TSAN_OPTIONS=${TSAN_OPTIONS:-suppressions=$blink_root/tests/sanitizers/tsan.supp:report_signal_unsafe=0}
fi
if [ "${BLINK_SANITIZE:-}" = "undefined" ]; then
  export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
fi
if ! why=$("$blink_root/scripts/emulate-hosts.sh" check); then
  echo "test.sh: the multihost tests will be skipped: $why"
fi
cd "$blink_build_dir"
ctest --output-on-failure --parallel "$(nproc)" --timeout 600 "${ctest_args[@]+"${ctest_args[@]}"}"
