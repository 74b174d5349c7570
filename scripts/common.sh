# Shared by scripts/test.sh and scripts/demo.sh: install what is missing, then
# configure and build Blink in $BLINK_BUILD_DIR (default: build/ at the top).
# shellcheck shell=bash

blink_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
blink_build_dir=${BLINK_BUILD_DIR:-$blink_root/build}

blink_setup_and_build() {
  "$blink_root/scripts/install-deps.sh"
  local cmake_args=(-G Ninja -DBLINK_WERROR=ON)
  # Re-configure only when there is no configured tree (keeps a second run fast).
  if [ ! -f "$blink_build_dir/build.ninja" ]; then
    cmake -S "$blink_root" -B "$blink_build_dir" "${cmake_args[@]}" "$@"
  elif [ "$#" -gt 0 ]; then
    cmake "$blink_build_dir" "$@"
  fi
  # Two compile jobs: the heavy Boost translation units need ~1 GiB each, and
  # machines this runs on often have two cores.
  cmake --build "$blink_build_dir" --parallel "${BLINK_BUILD_JOBS:-$(nproc)}"
}
