#!/usr/bin/env bash
# Runs a command in the userspace scripts/gpu-rootfs.sh packed, on a GPU machine without
# MPI: unpacks it to /tmp/blinkroot, binds /dev, /proc, /sys, this repository (at
# /work/main, where the build's run paths point) and $OUT (at /out), copies in the
# driver's libraries (libcuda, NVML; where ldconfig or /usr, /opt find them), NCCL from
# Python's nvidia-nccl package if present, and nvidia-smi, then chroots (root needed).
# CUDA_MPS_PIPE_DIRECTORY passes through (an MPS daemon outside, its pipes in /dev/shm).
#
# Usage: scripts/gpu-chroot.sh ROOTFS.tar.gz COMMAND...   (run from the repository root)
# e.g.   scripts/gpu-chroot.sh rootfs.tar.gz scripts/gpu-check.sh --no-build --build-dir /work/main/build-gpu
set -uo pipefail
usage() { sed -n '2,/^set /p' "$0" | grep '^#' | sed 's/^# \{0,1\}//'; }
case "${1:-}" in -h | --help) usage; exit 0 ;; esac
if [ "$#" -lt 2 ]; then usage >&2; exit 2; fi
tarball=$1; shift
r=/tmp/blinkroot
repo=$(pwd)
if ! { mkdir -p "$r" && tar -C "$r" -xzf "$tarball"; }; then echo "gpu-chroot: unpack failed"; exit 3; fi
for d in dev proc sys; do mount --rbind "/$d" "$r/$d" || { echo "gpu-chroot: mount $d failed"; exit 3; }; done
mount --bind "$repo" "$r/work/main" || { echo "gpu-chroot: mount repo failed"; exit 3; }
mkdir -p "${OUT:-/tmp/out}"
mount --bind "${OUT:-/tmp/out}" "$r/out" || { echo "gpu-chroot: mount out failed"; exit 3; }
cuda=$(ldconfig -p | awk '/libcuda\.so\.1 /{print $NF; exit}')
[ -n "$cuda" ] || cuda=$(find /usr /lib /lib64 /opt -name libcuda.so.1 2>/dev/null | head -n1)
if [ -n "$cuda" ]; then
  drv=$(dirname "$(readlink -f "$cuda")")
  cp -a "$drv"/libcuda.so* "$drv"/libnvidia-*.so* "$r/hostdrv/" 2>/dev/null
  cp -a "$(dirname "$cuda")"/libcuda.so* "$(dirname "$cuda")"/libnvidia-*.so* "$r/hostdrv/" 2>/dev/null
  echo "gpu-chroot: driver libraries from $drv: $(find "$r/hostdrv" -mindepth 1 | wc -l) files"
fi
nccl=$(python3 -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib"))' 2>/dev/null)
[ -n "$nccl" ] && cp -a "$nccl"/libnccl.so* "$r/hostdrv/" && echo "gpu-chroot: NCCL from $nccl"
smi=$(command -v nvidia-smi) && cp "$smi" "$r/usr/bin/"
chroot "$r" /usr/bin/env -i PATH=/usr/bin:/usr/sbin HOME=/root OUT=/out LD_LIBRARY_PATH=/hostdrv OMPI_MCA_plm_rsh_agent=/usr/bin/false OMPI_MCA_mtl=^psm,ofi OMPI_MCA_btl=^openib ${CUDA_MPS_PIPE_DIRECTORY:+CUDA_MPS_PIPE_DIRECTORY=$CUDA_MPS_PIPE_DIRECTORY} \
  /bin/bash -c 'cd /work/main && "$@"' bash "$@"
rc=$?
umount -l "$r/out" "$r/work/main" "$r/sys" "$r/proc" "$r/dev" 2>/dev/null
exit $rc
