#!/usr/bin/env bash
# grpo against eager PyTorch on this CPU, fairly (issue 14): per-op figures
# (scripts/bench_torch.py) and a whole GRPO step (scripts/grpo_step_torch.py
# against `grpo bench --grpo-step`), interleaved rounds, best of each, grpo at
# its defaults and PyTorch at every thread setting (torch threads × OpenBLAS
# threads), its best kept per figure. Prints Markdown for BENCHMARKS.md;
# scripts/bench_compare.py says exactly what runs.
#   scripts/bench.sh [SHAPE]                 (default qwen3-30m)
#   ROUNDS=5 PRUNE=0 scripts/bench.sh        (more rounds; no pruning of slow settings)
set -euo pipefail
cd "$(dirname "$0")/.."
# Always rebuild: a stale bin/grpo would measure old code.
go build -o bin/grpo ./cmd/grpo
exec /usr/bin/python3 scripts/bench_compare.py "$@"
