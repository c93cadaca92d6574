#!/usr/bin/env python3
"""PyTorch eager baseline for grpo's forward-pass throughput.

Builds a randomly initialised Qwen3-shaped model with the very forward pass of
testdata/reference/reference.py (so grpo and PyTorch run the same model), in
float32 on the CPU, and measures batch-1 prefill tokens/s (one forward over
--prefill tokens, logits at every position as training needs them) and decode
tokens/s (one token at a time through the KV cache), plus matmul GFLOP/s.
Prints one JSON line.

    /usr/bin/python3 scripts/bench_torch.py --preset qwen3-30m --threads 2
    /usr/bin/python3 scripts/bench_torch.py --hidden 256 --layers 4 --heads 4 --kv-heads 2 \\
        --head-dim 64 --intermediate 768 --vocab 4096

With --swiglu N it measures only the SwiGLU op, silu(gate)·up over N
elements, forward and autograd backward, in ns per element (beside
kernels/cpu's BenchmarkSwiGLU and BenchmarkSwiGLUBackward, same N):

    /usr/bin/python3 scripts/bench_torch.py --swiglu 1048576 --threads 1
"""

import argparse
import json
import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "testdata", "reference"))
import reference  # noqa: E402  (path set just above)

PRESETS = {
    # ≈29.6M parameters, tied: embeddings 4.2M + 8 layers × 3.15M.
    "qwen3-30m": dict(hidden=512, layers=8, heads=8, kv_heads=4, head_dim=64, intermediate=1536, vocab=8192),
    # The real Qwen3-0.6B shape (≈596M parameters, tied).
    "qwen3-0.6b": dict(hidden=1024, layers=28, heads=16, kv_heads=8, head_dim=128, intermediate=3072, vocab=151936),
}


def random_model(s, seed=0):
    cfg = reference.Config({
        "model_type": "qwen3", "hidden_size": s["hidden"], "num_hidden_layers": s["layers"],
        "num_attention_heads": s["heads"], "num_key_value_heads": s["kv_heads"], "head_dim": s["head_dim"],
        "intermediate_size": s["intermediate"], "vocab_size": s["vocab"], "rms_norm_eps": 1e-6,
        "rope_theta": 1000000, "tie_word_embeddings": True,
    })
    g = torch.Generator().manual_seed(seed)
    H, q, kv, I = s["hidden"], s["heads"] * s["head_dim"], s["kv_heads"] * s["head_dim"], s["intermediate"]

    def rnd(*shape, std=0.02):
        return torch.randn(*shape, generator=g, dtype=torch.float32) * std

    w = {"model.embed_tokens.weight": rnd(s["vocab"], H), "model.norm.weight": torch.ones(H)}
    for l in range(s["layers"]):
        p = f"model.layers.{l}."
        w.update({
            p + "input_layernorm.weight": torch.ones(H), p + "post_attention_layernorm.weight": torch.ones(H),
            p + "self_attn.q_proj.weight": rnd(q, H), p + "self_attn.k_proj.weight": rnd(kv, H),
            p + "self_attn.v_proj.weight": rnd(kv, H), p + "self_attn.o_proj.weight": rnd(H, q),
            p + "self_attn.q_norm.weight": torch.ones(s["head_dim"]),
            p + "self_attn.k_norm.weight": torch.ones(s["head_dim"]),
            p + "mlp.gate_proj.weight": rnd(I, H), p + "mlp.up_proj.weight": rnd(I, H),
            p + "mlp.down_proj.weight": rnd(H, I),
        })
    params = sum(t.numel() for t in w.values())
    return reference.Model(cfg, w, dtype=torch.float32), params


def best_time(fn, repeats):
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def matmul_gflops(m, k, n, repeats):
    a, b = torch.randn(m, k), torch.randn(k, n)
    a @ b  # warm-up: first call pays allocation and thread start-up
    return 2 * m * k * n / best_time(lambda: a @ b, repeats) / 1e9


def lora_train_step(model, shape, args):
    """Best time of one LoRA train step: forward and autograd backward of
    sum(log p(next token)) over --train-seqs sequences of --train-len tokens,
    with rank --lora-rank adapters (A random, B non-zero) on all seven
    projections of every layer and gradients for them only, as grpo does."""
    g = torch.Generator().manual_seed(3)
    r = args.lora_rank
    lora = {}
    for name, w in model.w.items():
        if name.endswith("_proj.weight"):
            out_f, in_f = w.shape
            a = (torch.randn(r, in_f, generator=g) / in_f ** 0.5).requires_grad_()
            b = (torch.randn(out_f, r, generator=g) * 0.01).requires_grad_()
            lora[name] = (a, b, 2.0)
    model.lora = lora
    seqs = [torch.randint(0, shape["vocab"], (args.train_len + 1,), generator=g).tolist() for _ in range(args.train_seqs)]

    def step():
        for seq in seqs:
            logits = model.forward(seq[:-1])
            lp = torch.log_softmax(logits, -1).gather(1, torch.tensor(seq[1:])[:, None]).sum()
            lp.backward()

    step()  # warm-up
    t = best_time(step, args.repeats)
    model.lora = {}
    return t


def swiglu_ns_per_element(n, repeats, calls=10):
    """ns per element of SwiGLU as the reference model computes it,
    F.silu(gate) * up, and of its autograd backward (d/dgate and d/dup for
    a given dy), over n elements with gates spread over [-8, 8] as in
    kernels/cpu's benchmark: the mean over `calls` calls, as a Go benchmark
    reports it, best of `repeats` such blocks."""
    gate = (8 * torch.sin(torch.arange(n, dtype=torch.float32) * 0.7)).requires_grad_()
    up = torch.sin(torch.arange(n, dtype=torch.float32)).requires_grad_()
    dy = torch.sin(torch.arange(n, dtype=torch.float32) * 1.3)
    silu = torch.nn.functional.silu
    with torch.no_grad():
        silu(gate) * up  # warm-up
        fwd = best_time(lambda: [silu(gate) * up for _ in range(calls)], repeats) / calls
    out = silu(gate) * up

    def backward():
        gate.grad = up.grad = None
        out.backward(dy, retain_graph=True)

    backward()  # warm-up
    bwd = best_time(lambda: [backward() for _ in range(calls)], repeats) / calls
    return fwd / n * 1e9, bwd / n * 1e9


def main():
    ap = argparse.ArgumentParser(description="PyTorch eager forward baseline (one JSON line)")
    ap.add_argument("--preset", choices=sorted(PRESETS), help="model shape; explicit shape flags override it")
    for name in ["hidden", "layers", "heads", "kv-heads", "head-dim", "intermediate", "vocab"]:
        ap.add_argument("--" + name, type=int)
    ap.add_argument("--threads", type=int, default=os.cpu_count(), help="torch.set_num_threads")
    ap.add_argument("--prefill", type=int, default=512, help="prompt tokens for the prefill measurement")
    ap.add_argument("--decode", type=int, default=32, help="tokens decoded one at a time after the prompt")
    ap.add_argument("--repeats", type=int, default=3, help="prefill/matmul runs; the best is reported")
    ap.add_argument("--train-seqs", type=int, default=4, help="sequences in the LoRA train-step measurement (0 skips it)")
    ap.add_argument("--train-len", type=int, default=256, help="tokens per sequence in the train step")
    ap.add_argument("--lora-rank", type=int, default=16, help="LoRA rank on every projection for the train step")
    ap.add_argument("--swiglu", type=int, metavar="N", help="measure only SwiGLU forward/backward over N elements")
    args = ap.parse_args()
    if args.swiglu:
        torch.set_num_threads(args.threads)
        fwd, bwd = swiglu_ns_per_element(args.swiglu, max(args.repeats, 5))
        print(json.dumps({"engine": "torch-eager", "torch": torch.__version__, "threads": args.threads, "n": args.swiglu,
                          "swiglu_ns_per_element": round(fwd, 3), "swiglu_backward_ns_per_element": round(bwd, 3)}))
        return

    shape = dict(PRESETS[args.preset]) if args.preset else {}
    for key in ["hidden", "layers", "heads", "kv_heads", "head_dim", "intermediate", "vocab"]:
        if getattr(args, key) is not None:
            shape[key] = getattr(args, key)
    missing = [k for k in PRESETS["qwen3-30m"] if k not in shape]
    if missing:
        ap.error("give --preset or every shape flag; missing: " + ", ".join("--" + m.replace("_", "-") for m in missing))
    if shape["heads"] % shape["kv_heads"]:
        ap.error(f"--heads {shape['heads']} is not a multiple of --kv-heads {shape['kv_heads']}")
    if args.threads < 1 or args.prefill < 1 or args.decode < 0 or args.repeats < 1:
        ap.error("--threads, --prefill and --repeats must be >= 1, --decode >= 0")

    torch.set_num_threads(args.threads)
    model, params = random_model(shape)
    prompt = torch.randint(0, shape["vocab"], (args.prefill,), generator=torch.Generator().manual_seed(1)).tolist()
    with torch.no_grad():
        model.forward(prompt[:8])  # warm-up
        prefill_s = best_time(lambda: model.forward(prompt), args.repeats)
        cache = []
        logits = model.forward(prompt, cache=cache)
        tok = int(logits[-1].argmax())
        t0 = time.perf_counter()
        for _ in range(args.decode):
            tok = int(model.forward([tok], cache=cache)[-1].argmax())
        decode_s = time.perf_counter() - t0
    train_s = lora_train_step(model, shape, args) if args.train_seqs else None
    print(json.dumps({
        "engine": "torch-eager", "torch": torch.__version__, "dtype": "float32", "threads": args.threads,
        "preset": args.preset, "shape": shape, "params": params,
        "prefill_tokens": args.prefill, "prefill_tokens_per_s": round(args.prefill / prefill_s, 2),
        "decode_tokens": args.decode,
        "decode_tokens_per_s": round(args.decode / decode_s, 2) if args.decode else None,
        "train_tokens": args.train_seqs * args.train_len, "lora_rank": args.lora_rank,
        "train_tokens_per_s": round(args.train_seqs * args.train_len / train_s, 2) if train_s else None,
        "matmul_gflops": {
            "512x512x512": round(matmul_gflops(512, 512, 512, args.repeats * 3), 2),
            "512x2048x512": round(matmul_gflops(512, 2048, 512, args.repeats * 3), 2),
        },
    }))


if __name__ == "__main__":
    main()
