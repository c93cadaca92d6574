#!/usr/bin/env python3
"""A whole GRPO step in plain eager PyTorch: the reference for
`grpo bench --grpo-step` (issue 14's whole-step bar).

What one step does, as a PyTorch user writes it (TRL's GRPOTrainer without
its machinery):

  generate  --prompts prompts of --prompt-len random tokens, each repeated
            --rollouts times (as generate(num_return_sequences=R) repeats
            input_ids: every rollout prefills its prompt), one batched
            prefill that keeps the last position's logits only, then
            --new-tokens - 1 batched decode steps through a preallocated
            KV cache (index writes, no torch.cat), temperature-1 sampling
            with torch.multinomial and the sampled tokens' log-probs kept
            as the old policy's. No stop token: every rollout yields
            exactly --new-tokens tokens, as on grpo's side.
  train     rewards (the share of completion tokens below vocab/2, the
            same rule as grpo's bench), group advantages (mean/std within
            each group), one forward with autograd over prompt+completion
            (LM head on the completion rows only, as TRL's logits_to_keep),
            the clipped-ratio GRPO loss (epsilon 0.2, token mean over the
            batch: "dapo", grpo's default), backward, clip_grad_norm_(1.0),
            torch.optim.AdamW (lr 1e-4) on the LoRA A/B matrices only.

The model is Qwen3 of the chosen shape (q/k norms, RoPE, GQA, SwiGLU, tied
embeddings), float32, random weights (bench_torch.random_model), with LoRA
rank --lora-rank (alpha 2r, B = 0 at the start as PEFT does) on all seven
projections; base weights have requires_grad False. Prints one JSON line:
best generate, train and step seconds over --repeats steps after one
warm-up step (each phase its own best).

With --impl peft the model is transformers' Qwen3ForCausalLM (sdpa
attention) with PEFT's LoRA on the same seven projections, behind the same
interface, so generate and train run unchanged: issue 18's "PyTorch + PEFT"
twin on the GPU (--device cuda --dtype bf16 --preset qwen3-8b, built inside
`with torch.device("cuda")` so the 8B random init takes seconds, not the
CPU's minutes). Before timing it checks, on a tiny shape, that this model
computes the independent reference's logits, whole-sequence and through the
KV cache. No gradient checkpointing: the step trains 32 sequences of 96
tokens (≈3k tokens), whose activations at 8B are a few GiB of the H200's 141.

    /usr/bin/python3 scripts/grpo_step_torch.py --preset qwen3-30m --threads 1
    /usr/bin/python3 scripts/grpo_step_torch.py --check     # tiny shape, asserts the work is done
    python3 scripts/grpo_step_torch.py --impl peft --device cuda --dtype bf16 --preset qwen3-8b   # the GPU machine
    python3 scripts/grpo_step_torch.py --impl peft --check  # tiny shape through transformers + PEFT (needs both)
"""

import argparse
import json
import os
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_torch  # noqa: E402  (same directory: PRESETS, random_model, blas_info)

# The CPU presets, and Qwen/Qwen3-8B's shape (untied LM head: --impl peft only).
SHAPES = dict(bench_torch.PRESETS, **{
    "qwen3-8b": dict(hidden=4096, layers=36, heads=32, kv_heads=8, head_dim=128, intermediate=12288, vocab=151936, tied=False),
})

PROJS = ["self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj",
         "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj"]


class LoRAQwen3:
    """A batched Qwen3 forward over [B, T] tokens with a preallocated KV
    cache and LoRA on every projection."""

    def __init__(self, shape, weights, rank, seed=5):
        self.s = shape
        self.w = {k: v.detach().float().contiguous() for k, v in weights.items()}
        hd = shape["head_dim"]
        self.inv_freq = 1.0 / (1e6 ** (torch.arange(0, hd, 2, dtype=torch.float32) / hd))
        g = torch.Generator().manual_seed(seed)
        self.lora, self.params = {}, []
        self.scale = 2.0  # alpha / rank with alpha = 2r
        for l in range(shape["layers"]):
            for p in PROJS:
                out_f, in_f = self.w[f"model.layers.{l}.{p}.weight"].shape
                bound = 1 / in_f ** 0.5  # PEFT: kaiming_uniform(a=√5) on A, zeros on B
                a = ((torch.rand(rank, in_f, generator=g) * 2 - 1) * bound).requires_grad_()
                b = torch.zeros(out_f, rank).requires_grad_()
                self.lora[f"model.layers.{l}.{p}"] = (a, b)
                self.params += [a, b]

    def linear(self, x, name):
        a, b = self.lora[name]
        return F.linear(x, self.w[name + ".weight"]) + F.linear(F.linear(x, a), b) * self.scale

    @staticmethod
    def rms(x, w, eps=1e-6):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w

    def rope(self, x, pos):  # x [B, heads, T, hd], pos [T]
        f = pos[:, None].float() * self.inv_freq[None]
        emb = torch.cat([f, f], -1)
        cos, sin = emb.cos(), emb.sin()
        h = x.shape[-1] // 2
        rot = torch.cat([-x[..., h:], x[..., :h]], -1)
        return x * cos + rot * sin

    def new_cache(self, batch, max_len):
        s = self.s
        return [(torch.empty(batch, s["kv_heads"], max_len, s["head_dim"]),
                 torch.empty(batch, s["kv_heads"], max_len, s["head_dim"])) for _ in range(s["layers"])]

    def hidden(self, tokens, pos0=0, cache=None):
        """Final-norm hidden states [B, T, H] of tokens at positions
        pos0..pos0+T-1; with cache, their keys and values are written into it
        and attention reads every cached position before them."""
        s, w = self.s, self.w
        B, T = tokens.shape
        nh, kvh, hd = s["heads"], s["kv_heads"], s["head_dim"]
        grp = nh // kvh
        pos = torch.arange(pos0, pos0 + T)
        S = pos0 + T
        mask = None
        if T > 1:
            mask = torch.full((T, S), float("-inf")).triu(pos0 + 1)
        x = w["model.embed_tokens.weight"][tokens]
        for l in range(s["layers"]):
            p = f"model.layers.{l}."
            h = self.rms(x, w[p + "input_layernorm.weight"])
            q = self.linear(h, p + "self_attn.q_proj").view(B, T, nh, hd)
            k = self.linear(h, p + "self_attn.k_proj").view(B, T, kvh, hd)
            v = self.linear(h, p + "self_attn.v_proj").view(B, T, kvh, hd).transpose(1, 2)
            q = self.rope(self.rms(q, w[p + "self_attn.q_norm.weight"]).transpose(1, 2), pos)
            k = self.rope(self.rms(k, w[p + "self_attn.k_norm.weight"]).transpose(1, 2), pos)
            if cache is not None:
                kc, vc = cache[l]
                kc[:, :, pos0:S] = k
                vc[:, :, pos0:S] = v
                k, v = kc[:, :, :S], vc[:, :, :S]
            # GQA without copying the keys: the query heads of one KV head
            # as an extra dimension.
            qg = q.reshape(B, kvh, grp, T, hd)
            att = qg @ k[:, :, None].transpose(-1, -2) * hd ** -0.5
            if mask is not None:
                att = att + mask
            o = (att.softmax(-1) @ v[:, :, None]).reshape(B, nh, T, hd).transpose(1, 2).reshape(B, T, nh * hd)
            x = x + self.linear(o, p + "self_attn.o_proj")
            h = self.rms(x, w[p + "post_attention_layernorm.weight"])
            x = x + self.linear(F.silu(self.linear(h, p + "mlp.gate_proj")) * self.linear(h, p + "mlp.up_proj"), p + "mlp.down_proj")
        return self.rms(x, w["model.norm.weight"])

    def logits(self, h):
        return h @ self.w["model.embed_tokens.weight"].T  # tied LM head


class PeftQwen3:
    """transformers' Qwen3ForCausalLM (sdpa attention) with PEFT's LoRA on all
    seven projections (rank r, alpha 2r, no dropout, B = 0 at the start),
    behind LoRAQwen3's interface (hidden, logits, new_cache, params). Random
    init by transformers, or weights (a reference state dict) when given."""

    def __init__(self, shape, rank, device, dtype, weights=None):
        import peft
        import transformers
        self.versions = {"transformers": transformers.__version__, "peft": peft.__version__}
        cfg = transformers.Qwen3Config(
            hidden_size=shape["hidden"], intermediate_size=shape["intermediate"], num_hidden_layers=shape["layers"],
            num_attention_heads=shape["heads"], num_key_value_heads=shape["kv_heads"], head_dim=shape["head_dim"],
            vocab_size=shape["vocab"], rms_norm_eps=1e-6, rope_theta=1e6, tie_word_embeddings=shape.get("tied", True),
            max_position_embeddings=40960)
        if isinstance(getattr(cfg, "rope_parameters", None), dict):
            cfg.rope_parameters["rope_theta"] = 1e6  # transformers 5 reads theta from here
        torch.manual_seed(0)
        with torch.device(device):  # initialised where it runs: seconds at 8B
            try:
                m = transformers.AutoModelForCausalLM.from_config(cfg, dtype=dtype, attn_implementation="sdpa")
            except TypeError:  # transformers 4 before `dtype`
                m = transformers.AutoModelForCausalLM.from_config(cfg, torch_dtype=dtype, attn_implementation="sdpa")
        m = m.to(device=device, dtype=dtype)
        if weights is not None:
            missing, unexpected = m.load_state_dict({k: v.to(dtype) for k, v in weights.items()}, strict=False)
            assert not unexpected and set(missing) <= {"lm_head.weight"}, (missing, unexpected)
        targets = sorted({p.split(".")[-1] for p in PROJS})
        self.pm = peft.get_peft_model(m, peft.LoraConfig(r=rank, lora_alpha=2 * rank, lora_dropout=0.0, target_modules=targets))
        self.pm.train()
        base = self.pm.get_base_model()
        self.inner, self.head = base.model, base.lm_head  # the LoRA layers are injected into these in place
        self.params = [p for p in self.pm.parameters() if p.requires_grad]
        assert len(self.params) == 2 * len(targets) * shape["layers"], len(self.params)
        self.cache_type = transformers.DynamicCache

    def new_cache(self, batch, max_len):
        return self.cache_type()

    def hidden(self, tokens, pos0=0, cache=None):
        """Final-norm hidden states; with cache, positions follow what it holds."""
        assert cache is None or cache.get_seq_length() == pos0, (cache.get_seq_length(), pos0)
        return self.inner(input_ids=tokens, past_key_values=cache, use_cache=cache is not None).last_hidden_state

    def logits(self, h):
        return self.head(h).float()  # log-softmax in f32, as grpo's sampler and loss


def generate(model, prompts, new_tokens, gen):
    """Sampled tokens [B, N] and their log-probs [B, N] (temperature 1)."""
    B, P = prompts.shape
    cache = model.new_cache(B, P + new_tokens)
    toks, lps = [], []
    with torch.no_grad():
        h = model.hidden(prompts, 0, cache)[:, -1]
        for i in range(new_tokens):
            logp = torch.log_softmax(model.logits(h), -1)
            t = torch.multinomial(logp.exp(), 1, generator=gen)
            toks.append(t)
            lps.append(logp.gather(1, t))
            if i + 1 < new_tokens:  # the last token is never fed back
                h = model.hidden(t, P + i, cache)[:, -1]
    return torch.cat(toks, 1), torch.cat(lps, 1)


def train(model, opt, prompts, completion, old_logp, rollouts, vocab, eps=0.2):
    """One policy update; returns (loss, grad norm)."""
    B, P = prompts.shape
    rewards = (completion < vocab // 2).float().mean(1)
    g = rewards.view(-1, rollouts)
    adv = ((g - g.mean(1, keepdim=True)) / (g.std(1, keepdim=True) + 1e-4)).view(B, 1)
    full = torch.cat([prompts, completion], 1)
    h = model.hidden(full[:, :-1])[:, P - 1:]  # rows that predict completion tokens
    logp = torch.log_softmax(model.logits(h), -1).gather(2, completion[..., None])[..., 0]
    ratio = torch.exp(logp - old_logp)
    pg = -torch.min(ratio * adv, ratio.clamp(1 - eps, 1 + eps) * adv)
    loss = pg.sum() / pg.numel()  # token mean over the batch
    loss.backward()
    norm = torch.nn.utils.clip_grad_norm_(model.params, 1.0)
    opt.step()
    opt.zero_grad(set_to_none=True)
    return float(loss), float(norm)


def check_forward(model, ref, shape):
    """The batched forward (B = 0: the base model) against the independent
    reference (testdata/reference), for a whole sequence and for decode
    steps through the cache, so the timed model is the right model: within
    1e-4 absolute and 1e-5 of the logits' norm (f32 both sides)."""
    g = torch.Generator().manual_seed(2)
    seq = torch.randint(0, shape["vocab"], (2, 9), generator=g)

    def close(got, want, what):
        got = got.detach().float().cpu()
        err = (got - want).norm() / want.norm()
        assert torch.allclose(got, want, atol=1e-4) and err <= 1e-5, (what, float(err), float((got - want).abs().max()))

    with torch.no_grad():
        want = torch.stack([ref.forward(s.tolist()) for s in seq])
        dev = seq.to(device_of(model))
        close(model.logits(model.hidden(dev)), want, "whole sequence")
        cache = model.new_cache(2, 9)
        model.hidden(dev[:, :5], 0, cache)
        for i in range(5, 9):
            close(model.logits(model.hidden(dev[:, i:i + 1], i, cache))[:, 0], want[:, i], f"decode position {i}")


def device_of(model):
    return model.params[0].device


TINY = dict(hidden=16, layers=2, heads=2, kv_heads=1, head_dim=8, intermediate=32, vocab=64)


def tiny_peft_check(device):
    """PeftQwen3 with the reference's tiny random weights (f32) computes the
    reference's logits: transformers' model, its config (RoPE theta, norms,
    GQA) and its cache are the model grpo runs."""
    base, _ = bench_torch.random_model(TINY)
    check_forward(PeftQwen3(TINY, 4, device, torch.float32, base.w), base, TINY)


def main():
    ap = argparse.ArgumentParser(description="one GRPO step in eager PyTorch (one JSON line)")
    ap.add_argument("--preset", choices=sorted(SHAPES), default="qwen3-30m")
    ap.add_argument("--impl", choices=["own", "peft"], default="own", help="own: the plain-PyTorch Qwen3 above (CPU); peft: transformers + PEFT")
    ap.add_argument("--device", default="cpu", help="cpu, or cuda (--impl peft)")
    ap.add_argument("--dtype", choices=["f32", "bf16"], default="f32", help="weights and activations (the LoRA matrices stay f32, as PEFT keeps them)")
    ap.add_argument("--threads", type=int, default=os.cpu_count(), help="torch.set_num_threads (OpenBLAS's own threads: OPENBLAS_NUM_THREADS)")
    ap.add_argument("--prompts", type=int, default=4)
    ap.add_argument("--rollouts", type=int, default=8)
    ap.add_argument("--prompt-len", type=int, default=32)
    ap.add_argument("--new-tokens", type=int, default=64)
    ap.add_argument("--lora-rank", type=int, default=16)
    ap.add_argument("--repeats", type=int, default=2, help="measured steps after one warm-up; each phase's best is reported")
    ap.add_argument("--give-up", type=float, metavar="S", help="if the warm-up step takes more than S seconds, report it as the figure and stop "
                    "(scripts/bench.sh passes 3× the best step so far: such a thread setting cannot be PyTorch's best)")
    ap.add_argument("--check", action="store_true", help="tiny shape: assert token counts, a finite loss and a changed adapter")
    args = ap.parse_args()
    if args.impl == "own" and args.device != "cpu":
        ap.error(f"--impl own --device {args.device}: the plain-PyTorch model runs on the CPU only; use --impl peft on a GPU")
    shape = dict(SHAPES[args.preset])
    if args.impl == "own" and not shape.get("tied", True):
        ap.error(f"--preset {args.preset} has an untied LM head, which --impl own lacks; use --impl peft")
    torch.set_num_threads(args.threads)
    dtype = {"f32": torch.float32, "bf16": torch.bfloat16}[args.dtype]
    if args.check:
        shape = dict(TINY)
        args.prompts, args.rollouts, args.prompt_len, args.new_tokens, args.lora_rank, args.repeats = 2, 3, 5, 7, 4, 1
    sync = torch.cuda.synchronize if args.device.startswith("cuda") else (lambda: None)
    versions = {}
    if args.impl == "peft":
        t0 = time.perf_counter()
        tiny_peft_check(args.device)  # seconds; a wrong twin must not be timed
        model = PeftQwen3(shape, args.lora_rank, args.device, dtype)
        sync()
        versions = dict(model.versions, build_s=round(time.perf_counter() - t0, 2))
        params = sum(p.numel() for p in model.pm.parameters() if not p.requires_grad)
    else:
        base, params = bench_torch.random_model(shape)
        model = LoRAQwen3(shape, base.w, args.lora_rank)
        if args.check:
            check_forward(model, base, shape)
        del base
    opt = torch.optim.AdamW(model.params, lr=1e-4, betas=(0.9, 0.999), eps=1e-8, weight_decay=0)
    gen = torch.Generator(device=args.device).manual_seed(7)
    one = torch.randint(0, shape["vocab"], (args.prompts, args.prompt_len), generator=gen, device=args.device)
    prompts = one.repeat_interleave(args.rollouts, 0)  # [prompts × rollouts, prompt_len]
    before = [p.detach().clone() for p in model.params]
    gave_up = False
    best = {"generate_s": float("inf"), "train_s": float("inf"), "step_s": float("inf")}
    for i in range(args.repeats + 1):  # step 0 is the warm-up
        sync()
        t0 = time.perf_counter()
        completion, old_logp = generate(model, prompts, args.new_tokens, gen)
        sync()
        t1 = time.perf_counter()
        loss, norm = train(model, opt, prompts, completion, old_logp, args.rollouts, shape["vocab"])
        sync()
        t2 = time.perf_counter()
        assert completion.shape == (args.prompts * args.rollouts, args.new_tokens), completion.shape
        assert torch.isfinite(torch.tensor([loss, norm])).all(), (loss, norm)
        if i > 0:
            for k, v in (("generate_s", t1 - t0), ("train_s", t2 - t1), ("step_s", t2 - t0)):
                best[k] = min(best[k], v)
        if i == 0 and args.give_up and t2 - t0 > args.give_up:
            gave_up = True
            for k, v in (("generate_s", t1 - t0), ("train_s", t2 - t1), ("step_s", t2 - t0)):
                best[k] = v
            break
    changed = gave_up or any(not torch.equal(a, b.detach()) for a, b in zip(before, model.params))
    assert changed, "AdamW left the adapter unchanged"
    out = {"engine": "torch-eager" if args.impl == "own" else "torch-peft", "torch": torch.__version__, "threads": args.threads,
           "openblas_threads_env": os.environ.get("OPENBLAS_NUM_THREADS"), "omp_threads_env": os.environ.get("OMP_NUM_THREADS"),
           "blas": bench_torch.blas_info(), "preset": None if args.check else args.preset, "params": params,
           "impl": args.impl, "device": args.device, "dtype": args.dtype, "gradient_checkpointing": False,
           "prompts": args.prompts, "rollouts": args.rollouts, "prompt_len": args.prompt_len, "new_tokens": args.new_tokens,
           "lora_rank": args.lora_rank, "gen_tokens": completion.numel(), "repeats": args.repeats,
           "loss": loss, "grad_norm": norm, "gave_up": gave_up}
    out.update(versions)
    out.update({k: round(v, 4) for k, v in best.items()})
    print(json.dumps(out))


if __name__ == "__main__":
    main()
