#!/usr/bin/env bash
# The CUDA backend's check on a lent GPU machine (an H200 with driver 580 /
# CUDA 13, no network, maybe no Go), in two halves:
#
#   scripts/gpu-check.sh build   here: build the -tags cuda test binary of
#                                kernels/cuda and the grpo binary into
#                                bin/gpu-check/ (needs the CUDA headers:
#                                scripts/install-cuda.sh)
#   scripts/gpu-check.sh run     there (the run tool carries bin/gpu-check):
#                                record the GPU and driver, run the
#                                conformance suite on the GPU, write one
#                                results file; under 8 minutes in all
#
# Results go to ${OUT:-bin/gpu-check}/gpu-check-results.txt; the exit status
# is the test binary's.
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=bin/gpu-check

case "${1:-}" in
build)
	mkdir -p "$DIR"
	go test -tags cuda -c -o "$DIR/cuda.test" ./kernels/cuda
	go build -tags cuda -o "$DIR/grpo-cuda" ./cmd/grpo
	echo "gpu-check: built $DIR/cuda.test and $DIR/grpo-cuda; on the GPU machine run: scripts/gpu-check.sh run (carry $DIR)"
	;;
run)
	RES="${OUT:-$DIR}/gpu-check-results.txt"
	mkdir -p "$(dirname "$RES")"
	if [ ! -x "$DIR/cuda.test" ]; then
		echo "gpu-check: $DIR/cuda.test missing; run scripts/gpu-check.sh build on the build machine and carry $DIR" | tee "$RES" >&2
		exit 2
	fi
	{
		echo "# gpu-check $(date -u +%FT%TZ)"
		nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv 2>&1 || echo "nvidia-smi failed"
		ls /usr/lib/x86_64-linux-gnu/libcublas.so* /usr/local/cuda*/lib64/libcublas.so* 2>/dev/null || true
	} >"$RES"
	rc=0
	# The test binary must run from its package directory: nothing there
	# reads files, but keep go test's convention.
	(cd kernels/cuda && timeout 420 "../../$DIR/cuda.test" -test.v -test.run 'TestConformanceOnGPU' -test.timeout 400s) >>"$RES" 2>&1 || rc=$?
	echo "# exit status $rc" >>"$RES"
	grep -E '^(--- FAIL|FAIL|ok|PASS)' "$RES" | tail -20 || true
	echo "gpu-check: results in $RES"
	exit $rc
	;;
*)
	echo "usage: scripts/gpu-check.sh build|run" >&2
	exit 2
	;;
esac
