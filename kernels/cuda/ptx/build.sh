#!/usr/bin/env bash
# Regenerates the committed PTX from kernels/cuda/*.cu: one file per source
# and virtual architecture (compute_80: A100; compute_90: H100/H200), and
# ptxas's cubin of each for the real architecture (sm_80, sm_90), which the
# driver loads without compiling; the PTX is what it JIT-compiles for a GPU
# the cubins do not fit. Then runs ptxas for sm_90 on
# every file and writes the per-kernel registers/spills/shared memory to
# ptx/ptxas-sm90.txt (quoted in CUDA.md). Needs nvcc (scripts/install-cuda.sh).
#
#   kernels/cuda/ptx/build.sh           regenerate
#   kernels/cuda/ptx/build.sh -check    fail if the committed files differ
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v nvcc >/dev/null 2>&1; then
	echo "ptx/build.sh: nvcc not found; run scripts/install-cuda.sh" >&2
	exit 1
fi
out=ptx
check=0
if [ "${1:-}" = "-check" ]; then
	check=1
	out=$(mktemp -d)
	trap 'rm -rf "$out"' EXIT
fi

# No --use_fast_math: expf/logf/sincosf keep their full-precision
# versions, which the conformance tolerances assume.
NVCCFLAGS=(-O3 -std=c++17)
# cicc's output depends on where the heap lands: under address-space
# randomisation about 1 build in 70 of moe.cu numbers its registers
# differently (3 of 200 runs; 0 of 500 with it off), which made -check fail
# at random. So nvcc runs with randomisation off where the kernel allows it.
norand=()
if setarch "$(uname -m)" -R true 2>/dev/null; then
	norand=(setarch "$(uname -m)" -R)
fi
# One nvcc per source and architecture, all at once: 18 files take 20 s
# one after another on 2 cores.
pids=()
for cu in *.cu; do
	base=${cu%.cu}
	for arch in 80 90; do
		"${norand[@]}" nvcc -ptx "${NVCCFLAGS[@]}" -arch=compute_$arch -o "$out/$base.sm$arch.ptx" "$cu" &
		pids+=($!)
	done
done
for p in "${pids[@]}"; do
	wait "$p"
done

# Cubins for the real architectures (sm_80: A100; sm_90: H100/H200): the
# driver loads them as they are, with no JIT at start; the PTX stays the
# fallback for a GPU they do not fit (a newer architecture).
pids=()
for ptx in "$out"/*.ptx; do
	base=${ptx%.ptx}
	arch=${base##*.sm}
	"${norand[@]}" ptxas -arch=sm_$arch -O3 -o "$base.cubin" "$ptx" &
	pids+=($!)
done
for p in "${pids[@]}"; do
	wait "$p"
done

{
	echo "# ptxas -arch=sm_90 -v, per kernel: registers, stack frame, spill stores/loads, static shared memory, __launch_bounds__ (.maxntid)"
	echo "# $(nvcc --version | grep release)"
	for ptx in "$out"/*.sm90.ptx; do
		# The first input is the PTX itself, for each entry's .maxntid.
		ptxas -arch=sm_90 -v -o /dev/null "$ptx" 2>&1 |
			awk -v f="$(basename "$ptx")" '
				FNR == NR { if ($1 == ".visible" && $2 == ".entry") { e = $3; sub(/\(.*/, "", e) }
					if ($1 == ".maxntid") { v = $2; sub(/,/, "", v); ntid[e] = v }
					next }
				/Compiling entry function/ { k = $7; gsub(/['"'"'`]/, "", k) }
				/bytes stack frame/ { split($0, a, ","); fr = a[1]; st = a[2]; ld = a[3]; gsub(/^ +/, "", fr); gsub(/^ +/, "", st); gsub(/^ +/, "", ld) }
				/Used [0-9]+ registers/ { match($0, /Used [0-9]+ registers/); r = substr($0, RSTART + 5, RLENGTH - 15);
					sm = "0 bytes smem"; if (match($0, /[0-9]+ bytes smem/)) sm = substr($0, RSTART, RLENGTH);
					nt = (k in ntid) ? ntid[k] : "none"
					printf "%-32s %-29s %3s registers, %s, %s, %s, %s, maxntid %s\n", k, f, r, fr, st, ld, sm, nt }' "$ptx" -
	done
} >"$out/ptxas-sm90.txt"

if [ $check = 1 ]; then
	if ! diff -r -q --exclude='*.sh' ptx "$out" >/dev/null; then
		diff -r --exclude='*.sh' ptx "$out" | head -20 >&2
		echo "ptx/build.sh -check: committed PTX is stale; run make ptx and commit kernels/cuda/ptx" >&2
		exit 1
	fi
	echo "ptx/build.sh -check: committed PTX is current"
fi
