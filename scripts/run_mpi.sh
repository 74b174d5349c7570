#!/usr/bin/env bash
# Runs any MPI program under mpirun with Blink's interposer preloaded.
#
# Usage: scripts/run_mpi.sh [--no-blink] [--lib PATH] -np N [mpirun options...] -- PROGRAM [ARGS...]
#   --no-blink   run the same command without the interposer (the reference run)
#   --lib PATH   libblink_mpi.so to preload (default: $BLINK_BUILD_DIR/mpi_glue, then build/)
# Every BLINK_* variable set in the environment is passed to the ranks (-x), as are
# LD_PRELOAD and the Open MPI settings a root container needs. Extra mpirun options
# go before "--".
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
usage() { sed -n '2,/^[^#]/p' "$0" | grep '^#' | sed 's/^# \{0,1\}//'; }
preload=1 lib=""
mpirun_args=()
while [ "$#" -gt 0 ]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --no-blink) preload=0; shift ;;
    --lib) [ "$#" -ge 2 ] || { echo "run_mpi.sh: --lib needs a path" >&2; exit 2; }; lib=$2; shift 2 ;;
    --) shift; break ;;
    *) mpirun_args+=("$1"); shift ;;
  esac
done
[ "$#" -gt 0 ] || { echo "run_mpi.sh: no program given (put it after --; see --help)" >&2; exit 2; }
if [ "$preload" = 1 ] && [ -z "$lib" ]; then
  for candidate in "${BLINK_BUILD_DIR:-$root/build}/mpi_glue/libblink_mpi.so" "$root/build/mpi_glue/libblink_mpi.so"; do
    [ -f "$candidate" ] && { lib=$candidate; break; }
  done
  [ -n "$lib" ] || { echo "run_mpi.sh: libblink_mpi.so not found; build first or pass --lib" >&2; exit 2; }
fi
exports=()
while IFS='=' read -r name _; do
  case "$name" in BLINK_*) exports+=(-x "$name") ;; esac
done < <(env)
[ "$preload" = 1 ] && exports+=(-x "LD_PRELOAD=$lib")
flags=()
if [ "$(id -u)" = 0 ]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  flags+=(--allow-run-as-root)
fi
# More ranks than cores is normal on small machines: no busy polling, no pinning.
flags+=(--oversubscribe --bind-to none --mca mpi_yield_when_idle 1)
exec mpirun "${flags[@]}" "${exports[@]}" "${mpirun_args[@]}" "$@"
