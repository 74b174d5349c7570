#!/usr/bin/env bash
# Installs, with Debian's apt, everything Blink's build, tests and scripts need.
# Idempotent: when every package is already present it does no apt work at all.
# Usage: scripts/install-deps.sh [--check] [--help]
set -euo pipefail

usage() {
  cat <<'TXT'
Usage: scripts/install-deps.sh [--check] [--help]

Installs Blink's build and test dependencies with apt-get (Debian 12 or newer).
  --check   only report which packages are missing; exit 1 if any are
  --help    this text

Nothing is done when every package is already installed. Runs as root without
prompts; as another user it uses sudo when available. The CUDA toolkit is not
installed by this script: it is used when found at /usr/local/cuda.
TXT
}

check_only=0
for arg in "$@"; do
  case "$arg" in
    --check) check_only=1 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "install-deps.sh: unknown argument '$arg' (see --help)" >&2; exit 2 ;;
  esac
done

packages=(
  build-essential cmake ninja-build pkg-config git
  libopenmpi-dev openmpi-bin
  libucx-dev
  libhwloc-dev
  libboost-graph-dev
  libgtest-dev googletest
  nlohmann-json3-dev
  graphviz
  python3-mpi4py python3-numpy python3-matplotlib
  clang-format
  clang libclang-rt-dev  # libFuzzer, for the fuzz tests (tests/fuzz)
  gfortran  # Open MPI's mpifort, for the Fortran interposer tests (tests/e2e/fortran)
)

missing=()
for pkg in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q '^install ok installed$'; then
    missing+=("$pkg")
  fi
done

if [ "${#missing[@]}" -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present, nothing to do"
  exit 0
fi

echo "install-deps: missing: ${missing[*]}"
if [ "$check_only" -eq 1 ]; then
  exit 1
fi

if ! command -v apt-get >/dev/null 2>&1; then
  echo "install-deps: apt-get not found; install the packages above by hand" >&2
  exit 1
fi

sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then
    sudo_cmd=(sudo)
  else
    echo "install-deps: not root and no sudo; install the packages above by hand" >&2
    exit 1
  fi
fi

export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -q
"${sudo_cmd[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
echo "install-deps: installed ${#missing[@]} packages"
