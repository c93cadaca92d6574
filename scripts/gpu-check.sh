#!/usr/bin/env bash
# The CUDA backend's check on a lent GPU machine (an H200 with driver 580 /
# CUDA 13, no network, no Go), in two halves:
#
#   scripts/gpu-check.sh build     here: the -tags cuda test binaries of
#                                  kernels/cuda (conformance) and
#                                  internal/modeltest (full model) and the
#                                  grpo binary, stripped and xz-compressed (about
#                                  20 MB, under the run tool's 64 MiB carry
#                                  limit), into
#                                  bin/gpu-check/ (needs the CUDA headers:
#                                  scripts/install-cuda.sh)
#   scripts/gpu-check.sh run bars  there, from the repository root, with
#   scripts/gpu-check.sh run       carry ["bin/gpu-check"]: `run bars` decides
#                                  the open performance bars (measured
#                                  ceilings, issue 13's decode roofline share,
#                                  issue 18's 8B train MFU and whole GRPO step
#                                  against PyTorch + PEFT); `run` is the
#                                  correctness check (conformance, full model,
#                                  sanitizers, benches, a kernel profile, a
#                                  short train)
#
# Each writes exactly three files under $OUT (the run tool returns at most 8,
# small): gpu-check-results.txt, one line per step — name, PASS/FAIL,
# seconds, key figures or the reason it failed — at most 10,000 characters,
# gpu-check-log.txt, the tail of each step's output (at most 4,000
# characters a step), and gpu-check-work.tar.gz, everything the steps
# wrote but the binaries; `run bars` names them gpu-check-bars-*, so one
# call can run both. A first step, smoke, says in seconds whether the
# machine can run grpo at all; a step that runs out of time gets SIGQUIT
# (a Go binary's goroutine stacks) and a failed one the driver's state
# (Xid lines of dmesg, nvidia-smi -q) in the archive. The steps work in a
# temporary directory outside $OUT. The results file is
# the last thing written to stdout, so it also comes back in the tool's
# last 12,000 characters of output. Every step has its own time limit and
# all steps together at most GPU_CHECK_BUDGET seconds (200 for `run bars`,
# 245 for `run`): a step that fails or times out is recorded and the next
# one runs. Each conformance suite is its own process (a fault poisons a
# CUDA context); one that fails is rerun once with CUDA_LAUNCH_BLOCKING=1,
# so the error names the kernel. The exit status is 0 only if every step
# passed (in `run bars`: every bar met). CUDA.md ("The GPU check") and BENCHMARKS.md
# ("On the GPU machine") say what each line means and the call plan that
# fits the 15-minute lease.
set -uo pipefail
cd "$(dirname "$0")/.."
DIR=${GPU_CHECK_DIR:-bin/gpu-check}

build() {
	set -e
	mkdir -p "$DIR"
	# -s -w: no symbol tables; the binaries go to the GPU machine only to run.
	go test -tags cuda -ldflags='-s -w' -c -o "$DIR/cuda.test" ./kernels/cuda
	go test -tags cuda -ldflags='-s -w' -c -o "$DIR/modeltest.test" ./internal/modeltest
	go build -tags cuda -ldflags='-s -w' -o "$DIR/grpo-cuda" ./cmd/grpo
	# xz, not gzip: the three binaries are 18 MB so, 31 MB gzipped, and the
	# run tool's 64 MiB covers the carry and the tracked tree (62 MiB, of
	# which kernels/cuda/ptx holds 19: see stash).
	rm -f "$DIR"/*.gz "$DIR"/*.xz
	xz -9 -T0 -f "$DIR/cuda.test" "$DIR/modeltest.test" "$DIR/grpo-cuda"
	{
		echo "built $(date -u +%FT%TZ) from $(git describe --always --dirty 2>/dev/null || echo unknown)"
		go version
		nvcc --version 2>/dev/null | grep release || true
	} >"$DIR/build-info.txt"
	ls -l "$DIR"
	echo "gpu-check: built $DIR; on the GPU machine run: scripts/gpu-check.sh run; scripts/gpu-check.sh run bars (carry $DIR; CUDA.md, \"The GPU check\")"
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
	local py
	for d in ${PATH:-}; do
		compgen -G "$d/python3*" >/dev/null || continue
		pys+=("$(dirname "$d")")
		# A python on PATH may be a link into another install
		# (kernels/cuda/libfind.go): that install's prefix too.
		for py in "$d"/python3*; do
			py=$(readlink -f "$py" 2>/dev/null) && pys+=("$(dirname "$(dirname "$py")")")
		done
	done
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

# check_steps: `run`'s steps after the environment, in run()'s scope
# (record, step, reason, figures, nobin; have, gpu, BIN, MBIN, GRPO, WORK).
check_steps() {
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
	# backend and the PyTorch goldens, every golden length; run from its
	# package directory, where ../../testdata is.
	if [ $have = 1 ]; then
		step full-model 45 bash -c "cd internal/modeltest && exec '$MBIN' -test.v -test.run '^TestFullModelOnGPU\$' -test.timeout 45s"
		if [ "$RC" = 0 ]; then record full-model PASS "$SECS" "$(grep -c -- '--- PASS' "$WORK/full-model.out") cases passed"; else record full-model FAIL "$SECS" "$(reason full-model)"; fi
	else nobin full-model; fi

	# --- 3b. NCCL: a communicator over every GPU (up to 4) in this
	# process, an exact all-reduce and a barrier; with two GPUs, a peer that
	# never joins ends the collective at the watchdog's timeout.
	if [ $have = 1 ]; then
		step nccl 45 bash -c "cd kernels/cuda && exec '$BIN' -test.v -test.run '^TestNCCLOnGPU\$' -test.timeout 45s"
		if [ "$RC" = 0 ]; then record nccl PASS "$SECS" "$(grep -o 'NCCL [0-9]* from .*' "$WORK/nccl.out" | head -1)"; else record nccl FAIL "$SECS" "$(reason nccl)"; fi
	else nobin nccl; fi

	# --- 4. grpo bench at batch 1, 64 and 256 (bf16 weights, logits
	# at the last prompt token, sampling on the device); batch 1 also the
	# LoRA train step and matmul. Figures: tok/s and the roofline shares.
	local b args
	# (batch 128 is `run bars`' bar13-decode)
	for b in 1 64 256; do
		local name=bench-b$b
		[ $have = 1 ] || { nobin "$name"; continue; }
		args="--batch $b --prefill 512 --decode 32 --repeat 2 --train-seqs 0 --no-matmul"
		[ "$b" = 1 ] && args="--batch 1 --prefill 512 --decode 32 --repeat 2"
		step "$name" 40 bash -c "exec '$GRPO' bench --device cuda --shape qwen3-0.6b $args --json"
		if [ "$RC" = 0 ]; then record "$name" PASS "$SECS" "$(figures "$WORK/$name.out")"; else record "$name" FAIL "$SECS" "$(reason "$name")"; fi
	done

	# --- 4b. a kernel profile (grpo bench --profile): where the GPU time of
	# one prefill (64 × 512), one decode step at batch 64 (the graph replay,
	# and op by op to see its kernels) and one LoRA train micro-batch
	# (4 × 1024) goes, kernel by kernel, from CUDA events around each op.
	# The line (scripts/profile-summary.sh, up to 900 characters): each
	# phase's wall, kernel and idle milliseconds, and the top 8 entries of
	# train and decode; every entry is in the JSON, in the work archive.
	if [ $have = 1 ]; then
		step profile 30 "$GRPO" bench --device cuda --shape qwen3-0.6b --batch 64 --prefill 512 --decode 16 --train-seqs 4 --train-len 1024 --repeat 1 --no-matmul --profile --json
		if [ "$RC" = 0 ] && grep -q '"profile"' "$WORK/profile.out"; then record profile PASS "$SECS" "$(bash scripts/profile-summary.sh "$WORK/profile.out" 8)" 900
		else record profile FAIL "$SECS" "$(failure profile profile)"; fi
	else nobin profile; fi

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

	# --- 6. a subset of the conformance suite under compute-sanitizer's
	# memcheck (out-of-bounds and misaligned device accesses) and racecheck
	# (shared-memory hazards): norms, attention (prefill, the split-KV
	# decode, the flash backward), log-softmax and sampling.
	# racecheck is the slower tool (the first H100 run: 92 cases in 40 s,
	# then LogSoftmaxGather's large-vocabulary cases ran out the limit),
	# so it takes the shared-memory-heavy kernels only: attention forward
	# and backward.
	local tool
	for tool in "memcheck:60:RMSNorm|Attention|LogSoftmaxGather|AttentionBackward|Sample|SampleStream" "racecheck:75:Attention|AttentionBackward"; do
		local t=${tool%%:*} rest=${tool#*:}
		local lim=${rest%%:*} ops=${rest#*:} name=sanitizer-${tool%%:*}
		if [ $have = 0 ]; then nobin "$name"; continue; fi
		if ! command -v compute-sanitizer >/dev/null 2>&1; then record "$name" FAIL 0 "not run: compute-sanitizer not found"; continue; fi
		step "$name" "$lim" bash -c "cd kernels/cuda && exec compute-sanitizer --tool $t --error-exitcode 3 '$BIN' -test.v -test.run '^TestConformanceOnGPU\$/^(forward|train|sample)\$/^($ops)\$' -test.timeout ${lim}s"
		if [ "$RC" = 0 ]; then record "$name" PASS "$SECS" "$(grep -o 'ERROR SUMMARY: [0-9]* error[s]*' "$WORK/$name.out" | tail -1); $(grep -c -- '--- PASS' "$WORK/$name.out") cases"; else record "$name" FAIL "$SECS" "$(grep -m2 -E '=+ (Invalid|Race|Error|.*hazard)' "$WORK/$name.out" | clip 200) $(reason "$name")"; fi
	done

	# --- 6b. Nsight Compute on the training attention kernels: time and
	# shared-memory bank conflicts of their first launches (profiling
	# counters may be off limits to this user: the line says so).
	name=ncu-attention
	if [ $have = 0 ]; then nobin $name
	elif [ $gpu = 0 ]; then record $name FAIL 0 "not run: no GPU (nvidia-smi)"
	elif ! command -v ncu >/dev/null 2>&1; then record $name FAIL 0 "not run: ncu not found"
	else
		step $name 60 bash -c "cd kernels/cuda && exec ncu --kernel-name regex:attention_flash --launch-count 6 --csv --metrics gpu__time_duration.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum '$BIN' -test.run '^TestConformanceOnGPU\$/^train\$/^AttentionBackward\$' -test.timeout 55s"
		if [ "$RC" = 0 ] && grep -q '"gpu__time_duration.sum"' "$WORK/$name.out"; then
			record $name PASS "$SECS" "$(awk -F'","' '/gpu__time_duration|bank_conflicts/ { k = $5; sub(/.*::/, "", k); m = $(NF-2); v = $NF; gsub(/"/, "", v); sub(/l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_/, "conflicts ", m); print k " " m " " v }' "$WORK/$name.out" | head -12 | paste -sd ';' -)"
		else record $name FAIL "$SECS" "$(reason $name)"; fi
	fi

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
}

# bar_steps: `run bars`' steps after the environment, in run()'s scope: the
# measured ceilings first (every later figure is read against them as well
# as the datasheet), then each open bar as its own line whose PASS means the
# bar is met: the decode roofline, the whole GRPO step against PyTorch,
# then training MFU at a small shape (no bar; seconds) before the 8B one,
# so a budget cut leaves the most decided. The
# 8B limits assume `grpo bench`'s bf16 random init of a --shape (seconds
# for 8B); the older f32-then-convert init takes minutes there and would
# time these steps out.
bar_steps() {
	local peakTF=989 peakTB=4.8 bw="" gemm="" name
	# --- ceilings: a 2 GiB device-to-device copy (bytes read + written)
	# and an 8192³ bf16 matrix product, random data, CUDA events, median
	# of 20 after a warm-up; the product is checked on a corner against
	# float64 so a wrong result cannot pass as a rate.
	if [ $gpu = 1 ]; then
		step ceilings 40 python3 - <<'PY'
import json, torch
def median_s(f, n=20):
    f(); torch.cuda.synchronize(); ts = []
    for _ in range(n):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record(); f(); b.record(); b.synchronize(); ts.append(a.elapsed_time(b) / 1e3)
    return sorted(ts)[n // 2]
src = torch.randn(1 << 30, device="cuda", dtype=torch.bfloat16)
dst = torch.empty_like(src)
copy = median_s(lambda: dst.copy_(src))
assert torch.equal(dst, src)
n = 8192
a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
gemm = median_s(lambda: a @ b)
c, ref = (a @ b)[:64, :64].double(), a[:64].double() @ b[:, :64].double()
err = float((c - ref).norm() / ref.norm())
assert err < 1e-2, err
print(json.dumps({"copy_TBps": 2 * 2 * src.numel() / copy / 1e12, "gemm_TFLOPs": 2 * n ** 3 / gemm / 1e12, "gemm_rel_err": err}))
PY
		bw=$(jnum "$WORK/ceilings.out" copy_TBps) gemm=$(jnum "$WORK/ceilings.out" gemm_TFLOPs)
		if [ "$RC" = 0 ] && [ -n "$bw" ] && [ -n "$gemm" ]; then
			record ceilings PASS "$SECS" "$(calc '%.2f' "$bw") TB/s D2D copy, read + write (datasheet $peakTB); $(calc '%.0f' "$gemm") TFLOP/s bf16 GEMM 8192³ (datasheet $peakTF), corner within $(calc '%.1g' "$(jnum "$WORK/ceilings.out" gemm_rel_err)") of float64"
		else
			record ceilings FAIL "$SECS" "$(reason ceilings)"
			bw="" gemm=""
		fi
	else
		record ceilings FAIL 0 "not run: no GPU (nvidia-smi); later lines give datasheet shares only"
	fi

	# --- issue 13: Qwen3-0.6B decode at batch 128 after 512-token prompts
	# (32 steps, context 512–544), bf16 weights: the share of HBM bandwidth
	# its weight and KV reads use, as estimate/perf counts them (its KV
	# bytes are moving to the sampler's bf16 paged cache on another branch;
	# this line reads whatever figure the merged bench reports).
	name=bar13-decode
	if [ $have = 1 ]; then
		step $name 40 "$GRPO" bench --device cuda --shape qwen3-0.6b --batch 128 --prefill 512 --decode 32 --repeat 2 --train-seqs 0 --no-matmul --json
		local pct gbs tok
		pct=$(value "$WORK/$name.out" 'decode batch 128 of HBM peak') gbs=$(value "$WORK/$name.out" 'decode batch 128 HBM') tok=$(value "$WORK/$name.out" 'decode batch 128')
		if [ "$RC" = 0 ] && [ -n "$pct" ] && [ -n "$gbs" ]; then
			record $name "$(verdict "$pct >= 60")" "$SECS" "$(calc '%.1f' "$pct") % of $peakTB TB/s$(measured "$gbs / 1000" "$bw" TB/s): $(calc '%.0f' "$gbs") GB/s of weight + KV reads, $(calc '%.0f' "${tok:-0}") tok/s; bar: ≥ 60 % of the HBM roofline"
		else record $name FAIL "$SECS" "$(failure $name 'decode batch 128 of HBM peak')"; fi
	else nobin $name; fi

	# --- issue 18: one whole GRPO step at the 8B shape, grpo (bench
	# --grpo-step: 4 prompts × 8 rollouts × 64 sampled tokens after 32-token
	# prompts, LoRA r16 on all seven projections, DAPO loss, AdamW) against
	# scripts/grpo_step_torch.py --impl peft doing the same in PyTorch +
	# PEFT (transformers' Qwen3, bf16, sdpa), each the best of 2 steps after
	# a warm-up. The bar: grpo's step takes less time.
	local gs="" ts="" why18=""
	name=bar18-step-grpo
	if [ $have = 1 ]; then
		step $name 60 "$GRPO" bench --device cuda --shape qwen3-8b --grpo-step --repeat 2 --json
		gs=$(jnum "$WORK/$name.out" step_s)
		if [ "$RC" = 0 ] && [ -n "$gs" ]; then
			record $name PASS "$SECS" "step $gs s: generate $(jnum "$WORK/$name.out" generate_s) s, train $(jnum "$WORK/$name.out" train_s) s; $(jnum "$WORK/$name.out" gen_tokens) tokens sampled, prefix sharing on (the trainer's default)"
		else
			gs="" why18="the grpo step failed"
			record $name FAIL "$SECS" "$(failure $name step_s)"
		fi
	else
		nobin $name
		why18="the grpo step did not run"
	fi
	name=bar18-step-torch
	if [ $gpu = 1 ]; then
		step $name 90 python3 scripts/grpo_step_torch.py --impl peft --device cuda --dtype bf16 --preset qwen3-8b --repeats 2
		ts=$(jnum "$WORK/$name.out" step_s)
		if [ "$RC" = 0 ] && [ -n "$ts" ]; then
			record $name PASS "$SECS" "step $ts s: generate $(jnum "$WORK/$name.out" generate_s) s, train $(jnum "$WORK/$name.out" train_s) s; $(grep -oE '"(torch|transformers|peft)": ?"[^"]*"' "$WORK/$name.out" | tr -d '"' | paste -sd ' ' -), bf16, sdpa, no gradient checkpointing, built in $(jnum "$WORK/$name.out" build_s) s after its tiny-shape check against the reference"
		else
			ts=""
			record $name FAIL "$SECS" "$(failure $name step_s)"
		fi
	else record $name FAIL 0 "not run: no GPU (nvidia-smi)"; fi
	[ -z "$ts" ] && why18="${why18:+$why18; }the PyTorch + PEFT step did not give a time"
	if [ -n "$gs" ] && [ -n "$ts" ]; then
		record bar18-step "$(verdict "$gs < $ts")" 0 "grpo $gs s against PyTorch + PEFT $ts s per GRPO step at the Qwen3-8B shape: $(calc '%.2f' "$gs / $ts")× PyTorch's time; bar: grpo < PyTorch"
	else record bar18-step FAIL 0 "not decided: $why18"; fi

	# --- MFU at a small shape first (Qwen3-0.6B, 4 × 1024, recompute
	# none): seconds, so a slow training path shows before the 8B step.
	name=mfu-small
	if [ $have = 1 ]; then
		step $name 40 "$GRPO" bench --device cuda --shape qwen3-0.6b --batch 1 --prefill 16 --decode 0 --train-seqs 4 --train-len 1024 --recompute none --repeat 2 --no-matmul --json
		local stps stf satt
		stps=$(value "$WORK/$name.out" 'lora train 4x1024 r16( recompute [^"]*)?') stf=$(value "$WORK/$name.out" 'lora train 4x1024 TFLOP/s at 4N')
		satt=$(value "$WORK/$name.out" 'lora train 4x1024 MFU of bf16 peak')
		if [ "$RC" = 0 ] && [ -n "$stps" ] && [ -n "$stf" ]; then
			record $name PASS "$SECS" "4N MFU $(calc '%.1f' "100 * $stf / $peakTF") % of $peakTF TFLOP/s$(measured "$stf" "$gemm" TFLOP/s): $(calc '%.1f' "$stf") TFLOP/s, $(calc '%.0f' "$stps") tok/s; with attention $(calc '%.1f' "${satt:-0}") %; no bar (Qwen3-0.6B, 4 × 1024)"
		else record $name FAIL "$SECS" "$(failure $name 'lora train 4x1024 r16…')"; fi
	else nobin $name; fi

	# --- issue 18: the LoRA train step of Qwen3-8B over 4 × 4096 tokens at
	# the recompute setting the trainer would choose on this GPU (grpo
	# estimate with recompute = "auto" on a 4096-token, 16384-token
	# micro-batch config, the free memory read there); model FLOPs 4N per
	# token (forward + input gradients; LoRA computes no weight gradients).
	name=bar18-mfu
	if [ $have = 1 ]; then
		local cfg=$WORK/bar18.toml rc why esecs
		cat >"$cfg" <<'TOML'
model = "Qwen/Qwen3-8B"
device = "cuda"
batch_size = 16
rollouts_per_example = 8
micro_batch_tokens = 16384
[sampling]
max_tokens = 3840
[[env]]
id = "reverse-text"
args = { dataset_name = "synthetic" }
TOML
		step bar18-estimate 20 "$GRPO" estimate "$cfg" --shape qwen3-8b --device cuda --no-measure --json
		esecs=$SECS
		rc=$(grep -oE '"recompute": ?"[^"]*"' "$WORK/bar18-estimate.out" | head -1 | sed -E 's/.*"([^"]*)"$/\1/')
		if [ "$RC" = 0 ] && [ -n "$rc" ]; then
			why="grpo estimate's choice here"
		else
			why="grpo estimate failed with exit $RC, its output in the log: its choice for 139 GiB free"
			rc=swiglu+layer:12
		fi
		step $name 90 "$GRPO" bench --device cuda --shape qwen3-8b --batch 1 --prefill 16 --decode 0 --train-seqs 4 --train-len 4096 --recompute "$rc" --repeat 2 --no-matmul --json
		# 4N from the bench's own figure: N the weights GEMMs multiply
		# (projections and LM head), not the parameter count, whose
		# embedding table is a gather (8 % of Qwen3-8B: counting it would
		# flatter the figure by that much).
		local tps tf4 att tf mfu
		tps=$(value "$WORK/$name.out" 'lora train 4x4096 r16( recompute [^"]*)?') tf4=$(value "$WORK/$name.out" 'lora train 4x4096 TFLOP/s at 4N')
		att=$(value "$WORK/$name.out" 'lora train 4x4096 MFU of bf16 peak')
		if [ "$RC" = 0 ] && [ -n "$tps" ] && [ -n "$tf4" ]; then
			tf=$(calc '%.1f' "$tf4")
			mfu=$(calc '%.1f' "100 * $tf / $peakTF")
			record $name "$(verdict "$mfu >= 45")" $((esecs + SECS)) "4N MFU $mfu % of $peakTF TFLOP/s$(measured "$tf" "$gemm" TFLOP/s): $tf TFLOP/s, $(calc '%.0f' "$tps") tok/s, recompute $rc ($why); with attention $(calc '%.1f' "${att:-0}") %; bar: ≥ 45 %"
		else record $name FAIL $((esecs + SECS)) "$(failure $name 'lora train 4x4096 r16…'); recompute $rc ($why)"; fi
	else nobin $name; fi
}

# value FILE NAME: the value of the first figure of a grpo bench --json
# line whose name matches NAME (an extended regular expression) exactly.
value() {
	grep -oE "\"name\":\"$2\",\"value\":[-0-9.e+]+" "$1" 2>/dev/null | head -1 | sed -E 's/.*"value"://'
}
# failure NAME FIGURE: why a bar step gave no figure: the command's
# failure, or, if it exited 0, that FIGURE was not in its output.
failure() {
	if [ "$RC" = 0 ]; then
		printf 'exit 0 but no %s in the output (a renamed figure?): %s' "$2" "$(tail -c 200 "$WORK/$1.out")"
	else reason "$1"; fi
}
# jnum FILE KEY: the number at KEY in a JSON line (the last one).
jnum() { grep -oE "\"$2\": ?[-0-9.e+]+" "$1" 2>/dev/null | tail -1 | sed -E 's/.*: ?//'; }
# calc FORMAT EXPR: awk's arithmetic, printed with FORMAT.
calc() { awk "BEGIN { printf \"$1\", $2 }"; }
# verdict EXPR: PASS if the awk condition holds, else FAIL.
verdict() { if awk "BEGIN { exit !($1) }"; then echo PASS; else echo FAIL; fi; }
# measured VALUE CEILING UNIT: " (N % of measured CEILING UNIT)", or nothing
# when the ceilings step gave none.
measured() { [ -n "$2" ] && calc " (%.1f %% of measured %.3g $3)" "100 * ($1) / $2, $2"; }

run() {
	local mode=${1:-check} OUTDIR=${OUT:-$DIR/out} prefix=gpu-check
	case $mode in check) ;; bars) prefix=gpu-check-bars ;; *)
		echo "gpu-check: run $mode: unknown; want 'run' (the correctness check) or 'run bars' (the performance bars)" >&2
		return 2
		;;
	esac
	mkdir -p "$OUTDIR"
	RES=$OUTDIR/$prefix-results.txt
	LOG=$OUTDIR/$prefix-log.txt
	WORK=$(mktemp -d)
	trap 'rm -rf "$WORK"' EXIT
	# Defaults that fit the lease's call plan (CUDA.md, "The GPU check").
	BUDGET=${GPU_CHECK_BUDGET:-245}
	[ "$mode" = bars ] && BUDGET=${GPU_CHECK_BUDGET:-200}
	START=$SECONDS
	FAILED=()
	: >"$LOG"
	{
		echo "# gpu-check $mode $(date -u +%FT%TZ) on $(hostname 2>/dev/null || echo '?'); step | result | seconds | figures or reason"
		head -2 "$DIR/build-info.txt" 2>/dev/null | sed 's/^/# /' || true
	} >"$RES"

	# record NAME STATUS SECONDS TEXT [CHARS]: one results line (TEXT cut
	# to CHARS, 560 unless given) and the step into FAILED unless it passed.
	record() {
		printf '%s | %s | %ss | %s\n' "$1" "$2" "$3" "$(printf '%s' "$4" | clip "${5:-560}")" >>"$RES"
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
		# SIGQUIT first: a Go binary that hangs prints every goroutine's
		# stack before it dies (kept in the work archive).
		timeout -s QUIT -k 5 "$limit" "$@" >"$WORK/$name.out" 2>&1
		RC=$?
		SECS=$((SECONDS - t0))
		[ "$RC" = 124 ] || [ "$RC" = 137 ] || [ "$RC" = 131 ] && echo "timed out after ${limit}s" >>"$WORK/$name.out"
		if [ "$RC" != 0 ] && [ "${gpu:-0}" = 1 ]; then
			# What the driver said of a failed step: Xid errors in the kernel
			# log and the GPU's state (clocks, ECC, retired pages, throttling).
			{
				echo "--- dmesg (NVRM/Xid) after $name"
				(dmesg 2>&1 || true) | grep -iE 'nvrm|xid' | tail -20
				echo "--- nvidia-smi -q after $name"
				nvidia-smi -q 2>&1 | head -150
			} >"$WORK/$name.driver.txt" 2>&1
		fi
		{
			echo "=== $name (exit $RC, ${SECS}s): $*"
			tail -40 "$WORK/$name.out" | cut -c 1-300 | tail -c 4000
			[ -f "$WORK/$name.driver.txt" ] && grep -iE 'xid' "$WORK/$name.driver.txt" | tail -3
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
		# Go's encoding/json writes no spaces, Python's json.dumps one after
		# each colon and comma (the torch-ref line): both match.
		grep -oE '"name": ?"[^"]*", ?"value": ?[-0-9.e+]*, ?"unit": ?"[^"]*"' "$1" 2>/dev/null |
			sed -E 's/"name": ?"([^"]*)", ?"value": ?([-0-9.e+]*), ?"unit": ?"([^"]*)"/\1 \2 \3/' |
			awk '{ v = $(NF-1); $(NF-1) = sprintf("%.4g", v); print }' | paste -sd ';' - | sed 's/;/; /g'
	}

	# --- 1. environment: found before anything runs on the GPU, recorded after the smoke step.
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
	{ echo "$env"; cat "$WORK/smi" 2>/dev/null; env | grep -E '^(CUDA|NVIDIA|LD_LIBRARY_PATH|GRPO)' ; } >"$WORK/environment.txt"
	local st=PASS envsecs=$((SECONDS - t0))
	[ $gpu = 1 ] && [ -n "$libcuda" ] && [ -n "$cublas" ] || st=FAIL
	# libcuda is linked (NEEDED libcuda.so.1): put the directory it is in
	# on the loader path before a binary starts.
	[ -n "$libcuda" ] && export LD_LIBRARY_PATH="$(dirname "$libcuda")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

	local have=1 missing=""
	for f in cuda.test modeltest.test grpo-cuda; do
		if [ -f "$DIR/$f.xz" ]; then
			# python3's lzma where the image has no xz.
			{ xz -dc "$DIR/$f.xz" 2>/dev/null || python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), sys.stdout.buffer)' "$DIR/$f.xz"; } >"$WORK/$f" && chmod +x "$WORK/$f"
		elif [ -f "$DIR/$f.gz" ]; then gunzip -c "$DIR/$f.gz" >"$WORK/$f" && chmod +x "$WORK/$f"
		else have=0 missing="$missing $DIR/$f.xz"; fi
	done
	local BIN=$WORK/cuda.test MBIN=$WORK/modeltest.test GRPO=$WORK/grpo-cuda
	# nobin NAME: the step cannot run: the build was not carried.
	nobin() { record "$1" FAIL 0 "not run:$missing missing (run scripts/gpu-check.sh build here and carry $DIR)"; }

	# --- 0. smoke, 15 s, before anything longer: the driver and device,
	# each PTX module's load time, one product, one graph captured and
	# replayed (kernels/cuda TestSmokeOnGPU).
	if [ $gpu = 0 ]; then record smoke FAIL 0 "not run: no GPU (nvidia-smi); $env"
	elif [ $have = 0 ]; then nobin smoke
	else
		step smoke 15 bash -c "cd kernels/cuda && exec '$BIN' -test.v -test.run '^TestSmokeOnGPU\$' -test.timeout 15s"
		if [ "$RC" = 0 ]; then record smoke PASS "$SECS" "$(grep -o 'smoke: .*' "$WORK/smoke.out" | sed 's/^smoke: //' | paste -sd ';' - | clip 540)"
		else record smoke FAIL "$SECS" "$(reason smoke)"; fi
	fi
	record environment $st $envsecs "$env"

	if [ "$mode" = bars ]; then bar_steps; else check_steps; fi

	echo "# total $((SECONDS - START))s of a ${BUDGET}s budget; failed: ${FAILED[*]:-none}" >>"$RES"
	# Everything the steps wrote (full outputs, goroutine dumps, driver
	# state after failures, the train run's directory) but the unpacked
	# binaries, as one archive beside the two files.
	tar -C "$WORK" --exclude=cuda.test --exclude=modeltest.test --exclude=grpo-cuda -czf "$OUTDIR/$prefix-work.tar.gz" . 2>>"$LOG" ||
		echo "# the work archive could not be written" >>"$RES"
	# Bound the file (the tool keeps 12,000 characters of output).
	head -c 10000 "$RES" >"$WORK/res" && cp "$WORK/res" "$RES"
	echo "gpu-check: log in $LOG"
	echo "===== $RES"
	cat "$RES"
	[ ${#FAILED[@]} = 0 ]
}

# stash / unstash: the run tool sends the tracked tree and the carry, 64 MiB
# together; the tree is 62 MiB, the carry 18. Before the `run` call, stash
# moves the tracked files no GPU step reads (the PTX and cubins, which the
# binaries embed; the tokenizer and rubric fixtures) to $STASH; unstash
# puts them back (git status is clean again).
STASH=${GPU_CHECK_STASH:-/tmp/grpo-gpu-check-stash}
LIGHT="kernels/cuda/ptx testdata/tokenizer testdata/rubric testdata/lora testdata/gsm8k"
stash() {
	set -e
	[ ! -e "$STASH" ] || { echo "gpu-check: $STASH exists: unstash first" >&2; exit 1; }
	local p
	for p in $LIGHT; do mkdir -p "$STASH/$(dirname "$p")"; mv "$p" "$STASH/$p"; done
	local tree carry
	tree=$( (git ls-files -z | xargs -0 stat -c %s 2>/dev/null || true) | awk '{s+=$1} END {print s}')
	carry=$(du -cb "$DIR" | tail -1 | cut -f1)
	echo "gpu-check: stashed $LIGHT in $STASH; tree $((tree >> 20)) MiB + carry $((carry >> 20)) MiB (limit 64)"
}
unstash() {
	set -e
	local p
	for p in $LIGHT; do [ -e "$STASH/$p" ] && { rm -rf "$p"; mv "$STASH/$p" "$p"; }; done
	rm -rf "$STASH"
	git status --short
}

case "${1:-}" in
build) build ;;
stash) stash ;;
unstash) unstash ;;
run) run "${2:-check}" ;;
*)
	echo "usage: scripts/gpu-check.sh build | stash | unstash | run [bars]" >&2
	exit 2
	;;
esac
