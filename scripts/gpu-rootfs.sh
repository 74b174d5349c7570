#!/usr/bin/env bash
# Packs this machine's userspace that Blink's programs need (Open MPI with its plugins,
# UCX, hwloc, bash, coreutils, awk, and every library the given programs link) into a
# tarball of about 27 MB, for a GPU machine that lacks them (no MPI, no way to install):
# scripts/gpu-chroot.sh unpacks it there and runs gpu-check.sh inside it. Debian 12 paths.
#
# Usage: scripts/gpu-rootfs.sh OUT.tar.gz PROGRAM...
#   PROGRAM  programs and libraries whose `ldd` closure is added (e.g. the build's
#            tests/test_device_collectives, perf/blink_perf, mpi_glue/libblink_mpi.so);
#            files under /work/ (the build itself) are left out: the repository travels
set -euo pipefail
usage() { sed -n '2,/^set /p' "$0" | grep '^#' | sed 's/^# \{0,1\}//'; }
case "${1:-}" in -h | --help) usage; exit 0 ;; esac
if [ "$#" -lt 1 ]; then usage >&2; exit 2; fi
out=$1; shift
pk="base-files bash coreutils debianutils gawk gcc-12-base grep ibverbs-providers libacl1 libatomic1 libattr1 libbsd0 libbz2-1.0 libc6 libcap-ng0 libcrypt1 libedit2 libevent-core-2.1-7 libevent-pthreads-2.1-7 libfabric1 libgcc-s1 libgmp10 libhwloc15 libibverbs1 liblzma5 libmd0 libmpfr6 libmunge2 libnl-3-200 libnl-route-3-200 libnuma1 libopenmpi3 libpcre2-8-0 libpmix2 libpsm-infinipath1 libpsm2-2 librdmacm1 libreadline8 libselinux1 libssl3 libstdc++6 libtinfo6 libucx0 libudev1 libuuid1 libx11-6 libxau6 libxcb1 libxdmcp6 libxext6 libxnvctrl0 libzstd1 mawk ocl-icd-libopencl1 openmpi-bin openmpi-common sed tar zlib1g procps findutils hostname libproc2-0 libsystemd0 libgcrypt20 libgpg-error0 liblz4-1 libcap2 ncurses-base gzip"
stage=$(mktemp -d)
list=$(mktemp)
{
  for p in $pk; do dpkg -L "$p" 2>/dev/null || echo "make-rootfs: no package $p" >&2; done
  echo /usr/bin/mpirun; echo /usr/bin/mpiexec; echo /usr/bin/awk
  for prog in "$@"; do
    ldd "$prog" | awk '/=> \//{print $3}'
  done
} | grep -v -E '^/usr/share/(doc|man|info|locale|lintian)/|^/work/' | sort -u > "$list"
while read -r f; do
  if [ ! -e "$f" ] || [ -d "$f" ]; then continue; fi
  canon=$(sed -E 's#^/(lib|lib64|bin|sbin)/#/usr/\1/#' <<< "$f")
  mkdir -p "$stage$(dirname "$canon")"
  link=$(readlink "$f" || true)
  if [ -n "$link" ] && [ "${link#*/}" = "$link" ] && [ -e "$(dirname "$f")/$link" ]; then
    cp -a "$f" "$stage$canon"   # a link within its folder: keep it, and its target once
    [ -e "$stage$(dirname "$canon")/$link" ] || cp -L "$(dirname "$f")/$link" "$stage$(dirname "$canon")/$link"
  else
    cp -L "$f" "$stage$canon"
  fi
done < "$list"
for d in bin lib lib64 sbin; do ln -sfn "usr/$d" "$stage/$d"; done
mkdir -p "$stage"/{tmp,dev,proc,sys,out,hostdrv,work/main,root,etc}
chmod 1777 "$stage/tmp"
cp -a /etc/passwd /etc/group /etc/hosts /etc/nsswitch.conf /etc/ld.so.cache /etc/ld.so.conf /etc/ld.so.conf.d "$stage/etc/"
echo gpu > "$stage/etc/hostname"
tar -C "$stage" -czf "$out" .
rm -rf "$stage" "$list"
ls -la "$out"
