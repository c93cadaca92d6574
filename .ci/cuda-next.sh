#!/usr/bin/env bash
# CI: build against the GPU's generation. The CUDA backend is built and
# vetted against CUDA 12.4's cuda.h and driver 550's libcuda
# (scripts/install-cuda-next.sh, from Debian trixie), and the cuda binaries'
# dynamic symbols are checked — those built here against 11.8 (what
# scripts/gpu-check.sh ships) and those built against 12.4:
#   - NEEDED is libcuda.so.1 and libc.so.6, nothing else (cuBLAS is
#     dlopen'd; libcudart is not used);
#   - every symbol they import from the driver is exported by the newer
#     libcuda.so.1.
#   - the NCCL entry points they bind at run time (dlsym, nccl_cuda.go's
#     grpo_nccl_names, read out of each binary) are the ones the source
#     lists, and a real libnccl.so.2 (Debian trixie's libnccl2) exports
#     every one.
# This checks symbol presence only; CUDA 13's API changes are covered on the
# GPU (scripts/gpu-check.sh run). The checker must reject a planted symbol
# the library lacks, or the step fails.
set -euo pipefail
cd "$(dirname "$0")/.."
DEST=${GRPO_CUDA_NEXT:-/opt/grpo-cuda-next}
bash scripts/install-cuda-next.sh
LIB=$DEST/usr/lib/x86_64-linux-gnu/nvidia/current
NCCL=$DEST/usr/lib/x86_64-linux-gnu/libnccl.so.2
export CGO_CFLAGS="-I$DEST/usr/include" CGO_LDFLAGS="-L$LIB"
# The headers in use are 12.x (not /usr/include's 11.8).
printf '#include <cuda.h>\n#if CUDA_VERSION < 12000\n#error cuda.h is older than 12.0\n#endif\n' | gcc $CGO_CFLAGS -fsyntax-only -x c -
go build -tags cuda ./...
go vet -tags cuda ./kernels/cuda/
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go test -tags cuda -c -o "$work/cuda.test.next" ./kernels/cuda
go build -tags cuda -o "$work/grpo-cuda.next" ./cmd/grpo
unset CGO_CFLAGS CGO_LDFLAGS
go test -tags cuda -c -o "$work/cuda.test.11.8" ./kernels/cuda
go build -tags cuda -o "$work/grpo-cuda.11.8" ./cmd/grpo

nm -D --defined-only "$(readlink -f "$LIB/libcuda.so.1")" | awk '{ print $NF }' | sort -u >"$work/exported"
# missing SYMS_FILE: the imported driver symbols (unversioned, not weak)
# that the newer libcuda does not export.
missing() { comm -23 "$1" "$work/exported"; }
imports() { nm -D --undefined-only "$1" | awk '$1 == "U" && $2 !~ /@/ { print $2 }' | sort -u; }
status=0
for bin in "$work"/cuda.test.next "$work"/grpo-cuda.next "$work"/cuda.test.11.8 "$work"/grpo-cuda.11.8; do
	needed=$(readelf -d "$bin" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | sort | paste -sd ' ' -)
	if [ "$needed" != "libc.so.6 libcuda.so.1" ]; then
		echo "cuda-next: $(basename "$bin") needs [$needed], want only libc.so.6 and libcuda.so.1" >&2
		status=1
	fi
	imports "$bin" >"$work/imports"
	m=$(missing "$work/imports")
	if [ -n "$m" ]; then
		echo "cuda-next: $(basename "$bin") imports driver symbols libcuda $(basename "$(readlink -f "$LIB/libcuda.so.1")") lacks: $m" >&2
		status=1
	fi
	[ -n "$m" ] || echo "cuda-next: $(basename "$bin"): NEEDED $needed; $(wc -l <"$work/imports") driver symbols, all exported by the newer libcuda"
done
# The checker itself: a planted import the library lacks must be reported.
{ cat "$work/imports"; echo cuPlantedMissingSymbol_v9; } | sort -u >"$work/planted"
if [ "$(missing "$work/planted")" != cuPlantedMissingSymbol_v9 ]; then
	echo "cuda-next: the symbol check did not report a planted missing symbol" >&2
	status=1
fi

# NCCL: dlsym'd, so not in the dynamic symbol table; the names are C
# strings of their own in the binary.
nm -D --defined-only "$(readlink -f "$NCCL")" | awk '{ print $NF }' | sort -u >"$work/nccl-exported"
sed -n '/grpo_nccl_names\[\] = {/,/};/p' kernels/cuda/nccl_cuda.go | grep -o '"nccl[A-Za-z]*"' | tr -d '"' | sort -u >"$work/nccl-source"
[ "$(wc -l <"$work/nccl-source")" -ge 10 ] || { echo "cuda-next: found only $(wc -l <"$work/nccl-source") NCCL names in kernels/cuda/nccl_cuda.go's grpo_nccl_names" >&2; status=1; }
nccl_missing() { comm -23 "$1" "$work/nccl-exported"; }
for bin in "$work"/cuda.test.next "$work"/grpo-cuda.next "$work"/cuda.test.11.8 "$work"/grpo-cuda.11.8; do
	strings -a "$bin" | grep -xE 'nccl[A-Z][A-Za-z]*' | sort -u >"$work/nccl-bound"
	if ! cmp -s "$work/nccl-bound" "$work/nccl-source"; then
		echo "cuda-next: $(basename "$bin") holds the NCCL names [$(paste -sd ' ' "$work/nccl-bound")], the source binds [$(paste -sd ' ' "$work/nccl-source")]" >&2
		status=1
	fi
	m=$(nccl_missing "$work/nccl-bound")
	if [ -n "$m" ]; then
		echo "cuda-next: $(basename "$bin") binds NCCL symbols $(basename "$(readlink -f "$NCCL")") lacks: $m" >&2
		status=1
	else
		echo "cuda-next: $(basename "$bin"): $(wc -l <"$work/nccl-bound") NCCL symbols, all exported by $(basename "$(readlink -f "$NCCL")")"
	fi
done
{ cat "$work/nccl-bound"; echo ncclPlantedMissingSymbol; } | sort -u >"$work/nccl-planted"
if [ "$(nccl_missing "$work/nccl-planted")" != ncclPlantedMissingSymbol ]; then
	echo "cuda-next: the NCCL symbol check did not report a planted missing symbol" >&2
	status=1
fi
exit $status
