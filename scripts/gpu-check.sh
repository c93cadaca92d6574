#!/usr/bin/env bash
# The CUDA backend's check on a lent GPU machine (an H200 with driver 580 /
# CUDA 13, no network, no Go), in two halves:
#
#   scripts/gpu-check.sh build   here: the -tags cuda test binary of
#                                kernels/cuda and the grpo binary, stripped
#                                and gzipped (about 20 MB, under the run
#                                tool's 64 MiB carry limit), into
#                                bin/gpu-check/ (needs the CUDA headers:
#                                scripts/install-cuda.sh)
#   scripts/gpu-check.sh run     there, from the repository root, with
#                                carry ["bin/gpu-check"]
#
# `run` writes exactly two files under $OUT (the run tool returns at most 8,
# small): gpu-check-results.txt, one line per step — name, PASS/FAIL,
# seconds, key figures or the reason it failed — at most 10,000 characters,
# and gpu-check-log.txt, the tail of each step's output (at most 4,000
# characters a step). Run directories, full outputs and the unpacked
# binaries live in a temporary directory outside $OUT. The results file is
# the last thing written to stdout, so it also comes back in the tool's
# last 12,000 characters of output. Every step has its own time limit and
# all steps together at most GPU_CHECK_BUDGET seconds (360): a step that
# fails or times out is recorded and the next one runs. Each conformance
# suite is its own process (a fault poisons a CUDA context); one that fails
# is rerun once with CUDA_LAUNCH_BLOCKING=1, so the error names the kernel.
# The exit status is 0 only if every step passed. CUDA.md ("The GPU check")
# and BENCHMARKS.md ("On the GPU machine") say what each line means.
set -uo pipefail
cd "$(dirname "$0")/.."
DIR=${GPU_CHECK_DIR:-bin/gpu-check}

build() {
	set -e
	mkdir -p "$DIR"
	# -s -w: no symbol tables; the binaries go to the GPU machine only to run.
	go test -tags cuda -ldflags='-s -w' -c -o "$DIR/cuda.test" ./kernels/cuda
	go build -tags cuda -ldflags='-s -w' -o "$DIR/grpo-cuda" ./cmd/grpo
	gzip -9 -f "$DIR/cuda.test" "$DIR/grpo-cuda"
	{
		echo "built $(date -u +%FT%TZ) from $(git describe --always --dirty 2>/dev/null || echo unknown)"
		go version
		nvcc --version 2>/dev/null | grep release || true
	} >"$DIR/build-info.txt"
	ls -l "$DIR"
	echo "gpu-check: built $DIR; on the GPU machine run: scripts/gpu-check.sh run (carry $DIR)"
}

# find_lib VAR NAME...: the first file named NAME (in order) in $VAR (a file
# or a directory), LD_LIBRARY_PATH, the loader cache, the CUDA toolkit
# directories and every python's pip wheels (nvidia/*/lib) — the search of
# kernels/cuda/libfind.go — or nothing.
find_lib() {
	local var=$1 n d p
	shift
	local ov=${!var:-}
	if [ -n "$ov" ] && [ -f "$ov" ]; then echo "$ov"; return; fi
	local dirs=()
	[ -n "$ov" ] && dirs+=("$ov")
	local IFS=:
	for d in ${LD_LIBRARY_PATH:-}; do [ -n "$d" ] && dirs+=("$d"); done
	unset IFS
	for n in "$@"; do
		for d in "${dirs[@]}"; do [ -f "$d/$n" ] && { echo "$d/$n"; return; }; done
		p=$( (ldconfig -p 2>/dev/null || /sbin/ldconfig -p 2>/dev/null) | awk -v n="$n" '$1 == n { print $NF; exit }')
		[ -n "$p" ] && [ -f "$p" ] && { echo "$p"; return; }
	done
	local pys=()
	local IFS=:
	for d in ${PATH:-}; do compgen -G "$d/python3*" >/dev/null && pys+=("$(dirname "$d")"); done
	unset IFS
	for n in "$@"; do
		for d in /usr/local/cuda/lib64 /usr/local/cuda-*/lib64 /usr/local/cuda/targets/*/lib /usr/local/cuda-*/targets/*/lib \
			/usr/lib/x86_64-linux-gnu /usr/lib/wsl/lib; do
			[ -f "$d/$n" ] && { echo "$d/$n"; return; }
		done
		for pre in "${pys[@]}" /usr /usr/local /opt/conda ${VIRTUAL_ENV:-} ${CONDA_PREFIX:-} "${HOME:-/nonexistent}/.local"; do
			for d in "$pre"/lib/python3*/{site,dist}-packages/nvidia/*/lib; do
				[ -f "$d/$n" ] && { echo "$d/$n"; return; }
			done
		done
	done
}

# clip N: at most N characters of stdin on one line.
clip() { tr '\n\t' '  ' | sed 's/  */ /g; s/^ //; s/ $//' | cut -c "1-$1"; }

run() {
	local OUTDIR=${OUT:-$DIR/out}
	mkdir -p "$OUTDIR"
	RES=$OUTDIR/gpu-check-results.txt
	LOG=$OUTDIR/gpu-check-log.txt
	WORK=$(mktemp -d)
	trap 'rm -rf "$WORK"' EXIT
	BUDGET=${GPU_CHECK_BUDGET:-360}
	START=$SECONDS
	FAILED=()
	: >"$LOG"
	{
		echo "# gpu-check $(date -u +%FT%TZ) on $(hostname 2>/dev/null || echo '?'); step | result | seconds | figures or reason"
		head -2 "$DIR/build-info.txt" 2>/dev/null | sed 's/^/# /' || true
	} >"$RES"

	# record NAME STATUS SECONDS TEXT: one results line (at most 600
	# characters) and the step into FAILED unless it passed.
	record() {
		printf '%s | %s | %ss | %s\n' "$1" "$2" "$3" "$(printf '%s' "$4" | clip 560)" >>"$RES"
		[ "$2" = PASS ] || FAILED+=("$1")
	}
	# step NAME LIMIT CMD...: run CMD with its output in $WORK/NAME.out,
	# under min(LIMIT, what is left of the budget). Sets RC and SECS.
	step() {
		local name=$1 limit=$2 left
		shift 2
		left=$((BUDGET - (SECONDS - START)))
		[ "$left" -lt "$limit" ] && limit=$left
		if [ "$limit" -le 0 ]; then
			RC=124 SECS=0
			echo "no time left of the ${BUDGET}s budget" >"$WORK/$name.out"
			return
		fi
		local t0=$SECONDS
		timeout -k 5 "$limit" "$@" >"$WORK/$name.out" 2>&1
		RC=$?
		SECS=$((SECONDS - t0))
		[ "$RC" = 124 ] || [ "$RC" = 137 ] && echo "timed out after ${limit}s" >>"$WORK/$name.out"
		{
			echo "=== $name (exit $RC, ${SECS}s): $*"
			tail -40 "$WORK/$name.out" | cut -c 1-300 | tail -c 4000
		} >>"$LOG"
	}
	# reason NAME: the most telling line of a failed step's output.
	reason() {
		local f=$WORK/$1.out r
		r=$(grep -E 'timed out after|no time left|panic:|Error in initialization|cannot load|CUDA_ERROR|CUresult|cuda: |--- FAIL|error|Error|not found|No such file' "$f" | grep -v '^=== RUN' | head -3)
		[ -n "$r" ] || r=$(grep -v '^\s*$' "$f" | tail -2)
		printf 'exit %s: %s' "$RC" "${r:-no output}"
	}
	# figures FILE: "name value unit; ..." from a grpo bench --json line.
	figures() {
		grep -o '"name":"[^"]*","value":[-0-9.e+]*,"unit":"[^"]*"' "$1" 2>/dev/null |
			sed -E 's/"name":"([^"]*)","value":([-0-9.e+]*),"unit":"([^"]*)"/\1 \2 \3/' |
			awk '{ v = $(NF-1); $(NF-1) = sprintf("%.4g", v); print }' | paste -sd ';' - | sed 's/;/; /g'
	}

	# --- 1. environment: recorded before anything runs on the GPU.
	local t0=$SECONDS env="" gpu=1
	if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >"$WORK/smi" 2>&1; then
		env="$(nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv,noheader 2>&1 | head -1)"
		env="$env; $(nvidia-smi 2>/dev/null | grep -o 'CUDA Version: [0-9.]*' | head -1)"
		nvidia-smi >>"$LOG" 2>&1
	else
		gpu=0
		env="no GPU: nvidia-smi $(command -v nvidia-smi >/dev/null && clip 120 <"$WORK/smi" || echo 'not found')"
	fi
	local libcuda cublas
	libcuda=$(find_lib GRPO_LIBCUDA libcuda.so.1)
	cublas=$(find_lib GRPO_CUBLAS libcublas.so.13 libcublas.so.12 libcublas.so.11 libcublas.so)
	env="$env; libcuda ${libcuda:-not found}; cuBLAS ${cublas:-not found}"
	env="$env; nvcc $(nvcc --version 2>/dev/null | grep -o 'release [0-9.]*' || echo 'not found')"
	env="$env; compute-sanitizer $(compute-sanitizer --version 2>/dev/null | grep -o 'Version [0-9.]*' | head -1 || true)"
	if [ $gpu = 1 ]; then
		env="$env; $(timeout 20 python3 -c 'import torch, transformers, peft; print("torch", torch.__version__, "cuda", torch.version.cuda, "transformers", transformers.__version__, "peft", peft.__version__)' 2>&1 | tail -1)"
	fi
	local st=PASS
	[ $gpu = 1 ] && [ -n "$libcuda" ] && [ -n "$cublas" ] || st=FAIL
	record environment $st $((SECONDS - t0)) "$env"
	# libcuda is linked (NEEDED libcuda.so.1): put the directory it is in
	# on the loader path before a binary starts.
	[ -n "$libcuda" ] && export LD_LIBRARY_PATH="$(dirname "$libcuda")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

	local have=1 missing=""
	for f in cuda.test.gz grpo-cuda.gz; do
		if [ -f "$DIR/$f" ]; then gunzip -c "$DIR/$f" >"$WORK/${f%.gz}" && chmod +x "$WORK/${f%.gz}"; else have=0 missing="$missing $DIR/$f"; fi
	done
	local BIN=$WORK/cuda.test GRPO=$WORK/grpo-cuda
	# nobin NAME: the step cannot run: the build was not carried.
	nobin() { record "$1" FAIL 0 "not run:$missing missing (run scripts/gpu-check.sh build here and carry $DIR)"; }

	# --- 2. conformance, one process per suite; a failure is rerun with
	# CUDA_LAUNCH_BLOCKING=1 so the failing launch names its kernel.
	local s
	for s in forward:45 train:30 sample:30; do
		local suite=${s%%:*} lim=${s##*:} name=conformance-${s%%:*}
		[ $have = 1 ] || { nobin "$name"; continue; }
		step "$name" "$lim" bash -c "cd kernels/cuda && exec '$BIN' -test.v -test.run '^TestConformanceOnGPU\$/^$suite\$' -test.timeout ${lim}s"
		if [ "$RC" = 0 ]; then
			record "$name" PASS "$SECS" "$(grep -c -- '--- PASS' "$WORK/$name.out") cases passed; $(grep -o 'cuBLAS: .*' "$WORK/$name.out" | head -1); $(grep -o 'device memory: .*' "$WORK/$name.out" | head -1)"
		else
			local first rc1=$RC secs1=$SECS
			first=$(reason "$name")
			step "$name-blocking" "$lim" bash -c "cd kernels/cuda && CUDA_LAUNCH_BLOCKING=1 exec '$BIN' -test.v -test.run '^TestConformanceOnGPU\$/^$suite\$' -test.timeout ${lim}s"
			record "$name" FAIL $((secs1 + SECS)) "$first; rerun with CUDA_LAUNCH_BLOCKING=1: $(reason "$name-blocking"); failed cases: $(grep -o -- '--- FAIL: [^ ]*' "$WORK/$name.out" | sed 's/--- FAIL: //' | head -8 | paste -sd ' ' -)"
			RC=$rc1
		fi
	done

	# --- 3. full-model check: tiny models on the GPU against the CPU
	# backend and the PyTorch goldens, every golden length.
	if [ $have = 1 ]; then
		step full-model 45 bash -c "cd kernels/cuda && exec '$BIN' -test.v -test.run '^TestFullModelOnGPU\$' -test.timeout 45s"
		if [ "$RC" = 0 ]; then record full-model PASS "$SECS" "$(grep -c -- '--- PASS' "$WORK/full-model.out") cases passed"; else record full-model FAIL "$SECS" "$(reason full-model)"; fi
	else nobin full-model; fi

	# --- 4. grpo bench at batch 1, 64, 128 and 256 (bf16 weights, logits
	# at the last prompt token, sampling on the device); batch 1 also the
	# LoRA train step and matmul. Figures: tok/s and the roofline shares.
	local b args
	for b in 1 64 128 256; do
		local name=bench-b$b
		[ $have = 1 ] || { nobin "$name"; continue; }
		args="--batch $b --prefill 512 --decode 32 --repeat 2 --train-seqs 0 --no-matmul"
		[ "$b" = 1 ] && args="--batch 1 --prefill 512 --decode 32 --repeat 2"
		step "$name" 40 bash -c "exec '$GRPO' bench --device cuda --shape qwen3-0.6b $args --json"
		if [ "$RC" = 0 ]; then record "$name" PASS "$SECS" "$(figures "$WORK/$name.out")"; else record "$name" FAIL "$SECS" "$(reason "$name")"; fi
	done

	# --- 5. PyTorch + PEFT on the same random-init shape, bf16 on the GPU:
	# prefill 1×512 (last-token logits), decode 32 (KV cache), LoRA r16 on
	# all seven projections, train step 4×256.
	if [ $gpu = 1 ]; then
		step torch-ref 45 python3 - <<'PY'
import json, time, torch, transformers, peft
cfg = transformers.Qwen3Config(hidden_size=1024, intermediate_size=3072, num_hidden_layers=28, num_attention_heads=16,
    num_key_value_heads=8, head_dim=128, vocab_size=151936, rms_norm_eps=1e-6, rope_theta=1e6, tie_word_embeddings=True,
    max_position_embeddings=4096)
torch.manual_seed(0)
with torch.device("cuda"):
    m = transformers.AutoModelForCausalLM.from_config(cfg, torch_dtype=torch.bfloat16, attn_implementation="sdpa").eval()
res = []
def best(f, n=3):
    f(); torch.cuda.synchronize(); ts = []
    for _ in range(n):
        t = time.perf_counter(); f(); torch.cuda.synchronize(); ts.append(time.perf_counter() - t)
    return min(ts)
ids = torch.randint(0, cfg.vocab_size, (1, 512), device="cuda")
with torch.no_grad():
    d = best(lambda: m(ids, logits_to_keep=1))
    res.append({"name": "torch prefill 1x512", "value": 512 / d, "unit": "tok/s"})
    d = best(lambda: m.generate(ids, max_new_tokens=32, min_new_tokens=32, do_sample=True, top_k=0, pad_token_id=0), 1)
    res.append({"name": "torch decode batch 1", "value": 32 / d, "unit": "tok/s"})
pm = peft.get_peft_model(m, peft.LoraConfig(r=16, lora_alpha=32, target_modules=["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]))
pm.train()
x = torch.randint(0, cfg.vocab_size, (4, 256), device="cuda")
def step():
    logp = torch.log_softmax(pm(x).logits.float(), -1).gather(-1, x[:, :, None]).sum()
    logp.backward()
d = best(step, 2)
res.append({"name": "torch lora train 4x256 r16", "value": 1024 / d, "unit": "tok/s"})
print(json.dumps({"results": res}))
PY
		if [ "$RC" = 0 ]; then record torch-ref PASS "$SECS" "$(figures "$WORK/torch-ref.out")"; else record torch-ref FAIL "$SECS" "$(reason torch-ref)"; fi
	else
		record torch-ref FAIL 0 "not run: no GPU (nvidia-smi)"
	fi

	# --- 6. a short subset of the conformance suite under compute-sanitizer's
	# memcheck (out-of-bounds and misaligned device accesses) and racecheck
	# (shared-memory hazards).
	local tool
	for tool in memcheck:40 racecheck:30; do
		local t=${tool%%:*} lim=${tool##*:} name=sanitizer-${tool%%:*}
		if [ $have = 0 ]; then nobin "$name"; continue; fi
		if ! command -v compute-sanitizer >/dev/null 2>&1; then record "$name" FAIL 0 "not run: compute-sanitizer not found"; continue; fi
		step "$name" "$lim" bash -c "cd kernels/cuda && exec compute-sanitizer --tool $t --error-exitcode 3 '$BIN' -test.v -test.run '^TestConformanceOnGPU\$/^forward\$/^(RMSNorm|Attention|LogSoftmaxGather)\$' -test.timeout ${lim}s"
		if [ "$RC" = 0 ]; then record "$name" PASS "$SECS" "$(grep -o 'ERROR SUMMARY: [0-9]* error[s]*' "$WORK/$name.out" | tail -1); $(grep -c -- '--- PASS' "$WORK/$name.out") cases"; else record "$name" FAIL "$SECS" "$(grep -m2 -E '=+ (Invalid|Race|Error|.*hazard)' "$WORK/$name.out" | clip 200) $(reason "$name")"; fi
	done

	# --- 7. a short `grpo train --device cuda` of the demo config; its run
	# directory stays in $WORK (11 files: too many to come back).
	if [ $have = 0 ]; then nobin train; elif [ ! -f examples/demo.toml ]; then record train FAIL 0 "not run: examples/demo.toml is not in this checkout"; else
		local cfg=$WORK/demo-short.toml
		if grep -q '^max_steps *=' examples/demo.toml; then sed 's/^max_steps *=.*/max_steps = 3/' examples/demo.toml >"$cfg"; else { echo "max_steps = 3"; cat examples/demo.toml; } >"$cfg"; fi
		step train 45 "$GRPO" train "$cfg" --device cuda --output "$WORK/train-run"
		if [ "$RC" = 0 ]; then
			record train PASS "$SECS" "$(tail -1 "$WORK"/train-run/metrics.jsonl 2>/dev/null | clip 300)"
		else record train FAIL "$SECS" "$(reason train)"; fi
	fi

	echo "# total $((SECONDS - START))s of a ${BUDGET}s budget; failed: ${FAILED[*]:-none}" >>"$RES"
	# Bound the file (the tool keeps 12,000 characters of output).
	head -c 10000 "$RES" >"$WORK/res" && cp "$WORK/res" "$RES"
	echo "gpu-check: log in $LOG"
	echo "===== $RES"
	cat "$RES"
	[ ${#FAILED[@]} = 0 ]
}

case "${1:-}" in
build) build ;;
run) run ;;
*)
	echo "usage: scripts/gpu-check.sh build|run" >&2
	exit 2
	;;
esac
