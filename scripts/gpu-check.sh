#!/usr/bin/env bash
# The CUDA backend's check on a lent GPU machine (an H200 with driver 580 /
# CUDA 13, no network, maybe no Go), in two halves:
#
#   scripts/gpu-check.sh build   here: build the -tags cuda test binary of
#                                kernels/cuda and the grpo binary, stripped
#                                and gzipped (about 20 MB together, under the
#                                run tool's 64 MiB carry limit), into
#                                bin/gpu-check/ (needs the CUDA headers:
#                                scripts/install-cuda.sh)
#   scripts/gpu-check.sh run     there, from the repository root (the run
#                                tool carries bin/gpu-check): record the GPU
#                                and driver, then
#                                  1. the conformance suites on the GPU
#                                  2. the full-model check (tiny models'
#                                     logits, GRPO loss, LoRA gradients
#                                     against the CPU backend and PyTorch)
#                                  3. a short `grpo train --device cuda` of
#                                     examples/demo.toml (max_steps 5)
#                                  4. `grpo bench --device cuda --shape
#                                     qwen3-0.6b` at batch 1 (prefill,
#                                     decode, LoRA train step, matmul) and
#                                     batch 128 (prefill, decode)
#                                each step under its own timeout, 8 minutes
#                                in all; a step that fails is recorded and
#                                the next one still runs
#
# Results go to ${OUT:-bin/gpu-check}/gpu-check-results.txt (the bench's
# JSON lines and the train run's metrics beside it); the exit status is 0
# only if every step passed.
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=bin/gpu-check

case "${1:-}" in
build)
	mkdir -p "$DIR"
	# -s -w: no symbol tables; the binaries go to the GPU machine only to run.
	go test -tags cuda -ldflags='-s -w' -c -o "$DIR/cuda.test" ./kernels/cuda
	go build -tags cuda -ldflags='-s -w' -o "$DIR/grpo-cuda" ./cmd/grpo
	gzip -9 -f "$DIR/cuda.test" "$DIR/grpo-cuda"
	{
		echo "built $(date -u +%FT%TZ) from $(git describe --always --dirty 2>/dev/null || echo unknown)"
		go version
	} >"$DIR/build-info.txt"
	ls -l "$DIR"
	echo "gpu-check: built $DIR; on the GPU machine run: scripts/gpu-check.sh run (carry $DIR)"
	;;
run)
	OUTDIR="${OUT:-$DIR}"
	RES="$OUTDIR/gpu-check-results.txt"
	mkdir -p "$OUTDIR"
	if [ ! -f "$DIR/cuda.test.gz" ] || [ ! -f "$DIR/grpo-cuda.gz" ]; then
		echo "gpu-check: $DIR/cuda.test.gz or grpo-cuda.gz missing; run scripts/gpu-check.sh build on the build machine and carry $DIR" | tee "$RES" >&2
		exit 2
	fi
	BIN="$(mktemp -d)"
	trap 'rm -rf "$BIN"' EXIT
	gunzip -c "$DIR/cuda.test.gz" >"$BIN/cuda.test"
	gunzip -c "$DIR/grpo-cuda.gz" >"$BIN/grpo"
	chmod +x "$BIN/cuda.test" "$BIN/grpo"
	{
		echo "# gpu-check $(date -u +%FT%TZ)"
		cat "$DIR/build-info.txt" 2>/dev/null || true
		nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv 2>&1 || echo "nvidia-smi failed"
		ls /usr/lib/x86_64-linux-gnu/libcublas.so* /usr/local/cuda*/lib64/libcublas.so* 2>/dev/null || true
	} >"$RES"
	failed=()
	# step NAME TIMEOUT CMD...: run CMD under TIMEOUT seconds, output and
	# status into the results file.
	step() {
		local name=$1 limit=$2 rc=0 t0=$SECONDS
		shift 2
		echo "## $name (limit ${limit}s): $*" >>"$RES"
		timeout "$limit" "$@" >>"$RES" 2>&1 || rc=$?
		echo "## $name: exit status $rc after $((SECONDS - t0)) s" >>"$RES"
		echo "gpu-check: $name: exit status $rc after $((SECONDS - t0)) s"
		[ "$rc" = 0 ] || failed+=("$name")
	}
	# Test binaries run from their package directory: the full-model check
	# reads ../../testdata.
	step conformance 180 bash -c "cd kernels/cuda && '$BIN/cuda.test' -test.v -test.run '^TestConformanceOnGPU\$' -test.timeout 170s"
	step full-model 90 bash -c "cd kernels/cuda && '$BIN/cuda.test' -test.v -test.run '^TestFullModelOnGPU\$' -test.timeout 80s"

	if [ -f examples/demo.toml ]; then
		cfg="$BIN/demo-short.toml"
		if grep -q '^max_steps *=' examples/demo.toml; then
			sed 's/^max_steps *=.*/max_steps = 5/' examples/demo.toml >"$cfg"
		else
			{ echo "max_steps = 5"; cat examples/demo.toml; } >"$cfg"
		fi
		step train 90 "$BIN/grpo" train "$cfg" --device cuda --output "$OUTDIR/train-run"
	else
		echo "## train: skipped, examples/demo.toml is not in this checkout" >>"$RES"
		failed+=("train (no examples/demo.toml)")
	fi

	# Batch 1: every figure. Batch 128: prefill 128 (logits for 16k tokens
	# of a 152k vocabulary are 10 GB in f32) and decode; the train step and
	# matmul figures do not depend on --batch.
	step bench-batch1 60 bash -c "set -o pipefail; '$BIN/grpo' bench --device cuda --shape qwen3-0.6b --batch 1 --json | tee '$OUTDIR/bench-batch1.json'"
	step bench-batch128 60 bash -c "set -o pipefail; '$BIN/grpo' bench --device cuda --shape qwen3-0.6b --batch 128 --prefill 128 --decode 16 --train-seqs 0 --no-matmul --json | tee '$OUTDIR/bench-batch128.json'"

	echo "# failed steps: ${failed[*]:-none}" >>"$RES"
	grep -E '^(--- FAIL|FAIL|ok|PASS|## )' "$RES" | tail -30 || true
	echo "gpu-check: results in $RES; failed: ${failed[*]:-none}"
	[ ${#failed[@]} = 0 ]
	;;
*)
	echo "usage: scripts/gpu-check.sh build|run" >&2
	exit 2
	;;
esac
