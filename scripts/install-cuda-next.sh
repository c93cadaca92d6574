#!/usr/bin/env bash
# Fetches the CUDA generation after the build machine's — cuda.h of CUDA
# 12.4 and libcuda.so.1 of driver 550 from Debian's next release (trixie) —
# and a real NCCL (trixie contrib's libnccl2; Debian 12 has none) into
# ${GRPO_CUDA_NEXT:-/opt/grpo-cuda-next}, for CI's "build against the
# GPU's generation" step (.ci/cuda-next.sh), which checks the symbols the
# binaries bind against both libraries. Nothing is installed: apt runs
# with a private source list (trixie, used for this fetch only) and private
# lists and cache, downloads the three pinned package versions and this
# script unpacks the files it needs, so the system keeps Debian 12's CUDA
# 11.8 for make ptx. (trixie's libnccl2 needs glibc 2.38, so on Debian 12 it
# is only read by nm, never loaded.) Idempotent. Fails, saying why, if a
# package cannot be had (a changed pin: update the versions below from
# https://packages.debian.org/trixie/nvidia-cuda-dev, …/libcuda1 and
# …/libnccl2).
set -euo pipefail
DEST=${GRPO_CUDA_NEXT:-/opt/grpo-cuda-next}
CUDA_DEV=nvidia-cuda-dev=12.4.127~12.4.1-2 # 934 MB: the only trixie package holding cuda.h
LIBCUDA=libcuda1=550.163.01-2
LIBNCCL=libnccl2=2.22.3-1-1 # 115 MB, contrib
LIBDIR=$DEST/usr/lib/x86_64-linux-gnu/nvidia/current
NCCLDIR=$DEST/usr/lib/x86_64-linux-gnu

if [ -f "$DEST/usr/include/cuda.h" ] && [ -f "$LIBDIR/libcuda.so.1" ] && [ -f "$NCCLDIR/libnccl.so.2" ] && [ -f "$DEST/versions" ] &&
	[ "$(cat "$DEST/versions")" = "$CUDA_DEV $LIBCUDA $LIBNCCL" ]; then
	echo "install-cuda-next: present in $DEST ($(cat "$DEST/versions"))"
	exit 0
fi
for tool in apt-get dpkg-deb tar; do
	command -v $tool >/dev/null || { echo "install-cuda-next: $tool not found (a Debian machine is assumed)" >&2; exit 1; }
done
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/lists/partial" "$work/cache/archives/partial" "$work/debs"
echo "deb http://deb.debian.org/debian trixie main contrib non-free" >"$work/sources.list"
APT=(-q -o Dir::Etc::SourceList="$work/sources.list" -o Dir::Etc::SourceParts=/dev/null
	-o Dir::State::Lists="$work/lists" -o Dir::Cache="$work/cache" -o APT::Sandbox::User=root)
if ! apt-get "${APT[@]}" update >"$work/update.log" 2>&1; then
	tail -5 "$work/update.log" >&2
	echo "install-cuda-next: apt-get update of Debian trixie failed (above); this step needs deb.debian.org" >&2
	exit 1
fi
if ! (cd "$work/debs" && apt-get "${APT[@]}" download "$CUDA_DEV" "$LIBCUDA" "$LIBNCCL") >"$work/download.log" 2>&1; then
	tail -5 "$work/download.log" >&2
	echo "install-cuda-next: cannot download $CUDA_DEV, $LIBCUDA and $LIBNCCL from trixie (above)" >&2
	exit 1
fi
$SUDO mkdir -p "$DEST"
# Only cuda.h from the toolkit package (the driver API header is
# self-contained); decompressing the package takes about a minute.
dpkg-deb --fsys-tarfile "$work"/debs/nvidia-cuda-dev_*.deb | $SUDO tar -x -C "$DEST" ./usr/include/cuda.h
$SUDO dpkg-deb -x "$work"/debs/libcuda1_*.deb "$DEST"
$SUDO dpkg-deb -x "$work"/debs/libnccl2_*.deb "$DEST"
# The linker's -lcuda wants the unversioned name.
$SUDO ln -sf libcuda.so.1 "$LIBDIR/libcuda.so"
echo "$CUDA_DEV $LIBCUDA $LIBNCCL" | $SUDO tee "$DEST/versions" >/dev/null
grep -m1 '#define CUDA_VERSION' "$DEST/usr/include/cuda.h" >/dev/null || { echo "install-cuda-next: $DEST/usr/include/cuda.h has no CUDA_VERSION" >&2; exit 1; }
[ -f "$NCCLDIR/libnccl.so.2" ] || { echo "install-cuda-next: $LIBNCCL has no libnccl.so.2 in $NCCLDIR" >&2; exit 1; }
echo "install-cuda-next: $(grep -m1 '#define CUDA_VERSION' "$DEST/usr/include/cuda.h"), $(basename "$(readlink -f "$LIBDIR/libcuda.so.1")"), $(basename "$(readlink -f "$NCCLDIR/libnccl.so.2")") in $DEST"
