#!/usr/bin/env bash
# Installs the CUDA toolkit (nvcc, ptxas, headers, libcudart/libcublas) from
# Debian's contrib/non-free components. Needed to regenerate the committed
# PTX (make ptx), to check it is current, and to build/vet with -tags cuda;
# the default build and `go test ./...` need none of it (they use kernels/emu).
# Idempotent: does nothing when nvcc is already on PATH.
set -euo pipefail

if command -v nvcc >/dev/null 2>&1; then
	echo "install-cuda: nvcc already present: $(nvcc --version | tail -1)"
	exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
	SUDO="sudo"
fi

# nvidia-cuda-toolkit lives in contrib (it depends on non-free libraries).
# Debian 12 ships deb822 sources; older images use sources.list.
SRC=/etc/apt/sources.list.d/debian.sources
if [ -f "$SRC" ]; then
	if ! grep -q '^Components:.*contrib' "$SRC"; then
		$SUDO sed -i -E 's/^Components:.*$/Components: main contrib non-free non-free-firmware/' "$SRC"
	fi
elif [ -f /etc/apt/sources.list ]; then
	if ! grep -Eq '^deb .* contrib' /etc/apt/sources.list; then
		$SUDO sed -i -E 's/^(deb .* main)$/\1 contrib non-free non-free-firmware/' /etc/apt/sources.list
	fi
else
	echo "install-cuda: found neither $SRC nor /etc/apt/sources.list; enable Debian's contrib and non-free components by hand, then rerun" >&2
	exit 1
fi

export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends nvidia-cuda-toolkit nvidia-cuda-dev
echo "install-cuda: $(nvcc --version | tail -1)"
