#!/usr/bin/env bash
# Side-by-side CPU benchmark: grpo bench and PyTorch eager (scripts/bench_torch.py,
# the same Qwen3-shaped model written in torch), in the same run, same threads.
# Prints a Markdown table of throughput and grpo/PyTorch ratios.
#   scripts/bench.sh [SHAPE] [THREADS]        (default qwen3-30m, nproc)
set -euo pipefail
cd "$(dirname "$0")/.."
shape=${1:-qwen3-30m}
threads=${2:-$(nproc)}
[ -x bin/grpo ] || go build -o bin/grpo ./cmd/grpo
# Interleave the two engines and keep each one's best of three rounds, so
# background load on a shared machine hurts both alike.
for round in 1 2 3; do
  GOMAXPROCS=$threads ./bin/grpo bench --shape "$shape" --json --decode 16 --repeat 3 --prefill-logits all --dtype f32 >"/tmp/grpo-bench.$round.json"
  /usr/bin/python3 scripts/bench_torch.py --preset "$shape" --threads "$threads" --decode 16 --repeats 3 >"/tmp/torch-bench.$round.json"
done
/usr/bin/python3 - "$shape" "$threads" <<'PY'
import json, sys
shape, threads = sys.argv[1], sys.argv[2]
g = [json.load(open(f"/tmp/grpo-bench.{r}.json")) for r in (1, 2, 3)]
t = [json.load(open(f"/tmp/torch-bench.{r}.json")) for r in (1, 2, 3)]
def gbest(prefix):
    return max(next(x["value"] for x in run["results"] if x["name"].startswith(prefix)) for run in g)
def tbest(key, sub=None):
    return max((run[key][sub] if sub else run[key]) for run in t)
rows = [
    ("prefill 512 tokens (logits at every position)", gbest("prefill"), tbest("prefill_tokens_per_s"), "tok/s"),
    ("decode, batch 1 (KV cache)", gbest("decode"), tbest("decode_tokens_per_s"), "tok/s"),
    ("LoRA train step 4×256, rank 16, all projections", gbest("lora train"), tbest("train_tokens_per_s"), "tok/s"),
    ("matmul 512×512×512", gbest("matmul 512x512x512"), tbest("matmul_gflops", "512x512x512"), "GFLOP/s"),
    ("matmul 512×2048×512", gbest("matmul 512x2048x512"), tbest("matmul_gflops", "512x2048x512"), "GFLOP/s"),
]
print(f"Model `{shape}` ({g[0]['params']/1e6:.1f}M parameters), {threads} threads, float32, best of 3 interleaved rounds; PyTorch {t[0]['torch']} eager.\n")
print("| figure | grpo | PyTorch | grpo / PyTorch |")
print("|---|---:|---:|---:|")
for name, a, b, unit in rows:
    print(f"| {name} | {a:.1f} {unit} | {b:.1f} {unit} | **{a/b:.2f}×** |")
PY
