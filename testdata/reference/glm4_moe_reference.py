#!/usr/bin/env python3
"""Independent float64 PyTorch reference for GLM-4.5 / INTELLECT-3 (glm4_moe).

Reads the tiny checkpoints testdata/gen writes (glm4_moe-tiny with per-expert
tensors, glm4_moe-tiny-fused with transformers' 3-D expert tensors, the same
values) with reference.py's safetensors parser, runs the model written out
here by hand (not transformers) and writes goldens to testdata/golden in
reference.py's format.

What this file commits to (read from transformers' modeling_glm4_moe.py,
written independently):
  * Checkpoint: model.{embed_tokens,layers.N...,norm}, lm_head.weight; the
    multi-token-prediction layer(s) stored as model.layers.N.* for N ≥
    num_hidden_layers are not part of the forward pass.
  * Norms: plain RMSNorm x · rsqrt(mean(x²) + eps) · w.
  * Attention: q/k/v projections with biases when attention_bias, o_proj
    never; with use_qk_norm a per-head RMSNorm of q and k before RoPE; RoPE
    rotate-half (NeoX) over the first int(head_dim · partial_rotary_factor)
    dims only, inv_freq[i] = theta^(-2i/rot); scale head_dim^-0.5, causal,
    GQA.
  * Layers below first_k_dense_replace: dense SwiGLU MLP of
    intermediate_size.  The others: a mixture of experts.
  * Router: logits = h·Wᵀ (mlp.gate.weight); s = sigmoid(logits); choice
    scores c = s + e_score_correction_bias; experts in n_group groups of
    consecutive experts, each group scored by the sum of its two largest c;
    the topk_group best groups kept, the others' c set to 0; the top
    num_experts_per_tok of c chosen; weights = s at the chosen experts
    (never c), divided by their sum + 1e-20 when norm_topk_prob, times
    routed_scaling_factor.
  * Experts per expert as mlp.experts.{e}.{gate,up,down}_proj.weight, or
    fused as mlp.experts.gate_up_proj [E, 2·I, H] (rows 0..I-1 gate) and
    mlp.experts.down_proj [E, H, I]; plus the shared experts, a SwiGLU MLP
    of moe_intermediate_size · n_shared_experts (mlp.shared_experts.*),
    added ungated.  Written as every expert applied to every token,
    weighted densely: no grouping.

Self-checks before anything is written: incremental decode through a KV
cache equals the one-shot forward; a LoRA adapter equals its merged weights;
the fused and per-expert checkpoints give identical goldens; routing margins
(chosen vs next choice score, kept vs next group score) are at least
MIN_ROUTING_MARGIN; and the correction bias changes some tokens' experts and
group-limited selection differs from plain top-k on some tokens (so the
goldens depend on both).

Run from the repository root:
    /usr/bin/python3 testdata/reference/glm4_moe_reference.py
"""

import argparse
import json
import math
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from reference import MIN_ROUTING_MARGIN, ROOT, read_safetensors, token_cases  # noqa: E402

MODELS = ["glm4_moe-tiny", "glm4_moe-tiny-fused"]


class Config:
    def __init__(self, c):
        assert c["model_type"] == "glm4_moe", c["model_type"]
        self.hidden = c["hidden_size"]
        self.layers = c["num_hidden_layers"]
        self.heads = c["num_attention_heads"]
        self.kv_heads = c["num_key_value_heads"]
        self.head_dim = c.get("head_dim") or self.hidden // self.heads
        self.eps = c["rms_norm_eps"]
        self.theta = float(c["rope_theta"])
        self.rot_dim = int(self.head_dim * c.get("partial_rotary_factor", 0.5))
        self.vocab = c["vocab_size"]
        self.tied = c.get("tie_word_embeddings", False)
        self.attention_bias = c.get("attention_bias", False)
        self.qk_norm = c.get("use_qk_norm", False)
        self.first_dense = c.get("first_k_dense_replace", 1)
        self.num_experts = c["n_routed_experts"]
        self.top_k = c["num_experts_per_tok"]
        self.n_group = c.get("n_group", 1)
        self.topk_group = c.get("topk_group", 1)
        self.norm_topk = c.get("norm_topk_prob", True)
        self.scale = float(c.get("routed_scaling_factor", 1.0))


def load_model(name):
    model_dir = os.path.join(ROOT, "testdata", "models", name)
    with open(os.path.join(model_dir, "config.json")) as f:
        cfg = Config(json.load(f))
    return cfg, read_safetensors(os.path.join(model_dir, "model.safetensors"))


def rms(x, eps):
    return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + eps)


class Model:
    """GLM-4.5 in float64 (or dtype). lora: {module name (without .weight):
    (A [r, in], B [out, r], scale)}: y = x Wᵀ + b + scale (x Aᵀ) Bᵀ.
    ablate: "bias" (no correction bias), "groups" (plain top-k)."""

    def __init__(self, cfg, weights, lora=None, ablate=(), dtype=torch.float64):
        self.cfg = cfg
        self.w = {k: v.to(dtype) for k, v in weights.items()}
        self.lora = lora or {}
        self.ablate = set(ablate)
        self.min_margin = math.inf
        self.min_group_margin = math.inf
        self.chosen = []  # per sparse layer, [T, k] experts (sorted), for the ablation checks
        rot = cfg.rot_dim
        self.inv_freq = (1.0 / cfg.theta ** (torch.arange(0, rot, 2, dtype=torch.float64) / rot)).to(dtype)

    def linear(self, x, name):
        y = x @ self.w[name + ".weight"].T
        if name + ".bias" in self.w:
            y = y + self.w[name + ".bias"]
        if name in self.lora:
            a, b, scale = self.lora[name]
            y = y + scale * ((x @ a.T) @ b.T)
        return y

    def norm(self, x, name):
        return rms(x, self.cfg.eps) * self.w[name + ".weight"]

    def rope(self, x, pos):
        """Rotate-half RoPE over the first rot_dim dims of x [T, n, d]."""
        rot = 2 * self.inv_freq.shape[0]
        ang = pos.to(self.inv_freq.dtype)[:, None] * self.inv_freq[None, :]
        cos = torch.cat([ang.cos(), ang.cos()], -1)[:, None, :]
        sin = torch.cat([ang.sin(), ang.sin()], -1)[:, None, :]
        xr, xp = x[..., :rot], x[..., rot:]
        half = rot // 2
        rotated = torch.cat([-xr[..., half:], xr[..., :half]], -1)
        return torch.cat([xr * cos + rotated * sin, xp], -1)

    def attention(self, h, p, pos, cache):
        c = self.cfg
        T = h.shape[0]
        q = self.linear(h, p + "q_proj").view(T, c.heads, c.head_dim)
        k = self.linear(h, p + "k_proj").view(T, c.kv_heads, c.head_dim)
        v = self.linear(h, p + "v_proj").view(T, c.kv_heads, c.head_dim)
        if c.qk_norm:
            q, k = self.norm(q, p + "q_norm"), self.norm(k, p + "k_norm")
        q, k = self.rope(q, pos), self.rope(k, pos)
        if cache is not None:
            if "k" in cache:
                k, v = torch.cat([cache["k"], k]), torch.cat([cache["v"], v])
            cache["k"], cache["v"] = k, v
        S = k.shape[0]
        group = c.heads // c.kv_heads
        kk = k.repeat_interleave(group, dim=1)  # query head h reads key head h // group
        vv = v.repeat_interleave(group, dim=1)
        scores = torch.einsum("thd,shd->hts", q, kk) * c.head_dim ** -0.5
        past = S - T
        mask = torch.arange(S)[None, :] > (torch.arange(T)[:, None] + past)
        scores = scores.masked_fill(mask[None], float("-inf"))
        o = torch.einsum("hts,shd->thd", torch.softmax(scores, -1), vv)
        return self.linear(o.reshape(T, c.heads * c.head_dim), p + "o_proj")

    def swiglu(self, h, p):
        return self.linear(F.silu(self.linear(h, p + "gate_proj")) * self.linear(h, p + "up_proj"), p + "down_proj")

    def expert_weights(self, p, e):
        fused = self.w.get(p + "experts.gate_up_proj")
        if fused is not None:
            I = fused.shape[1] // 2
            return fused[e, :I], fused[e, I:], self.w[p + "experts.down_proj"][e]
        x = f"{p}experts.{e}."
        return self.w[x + "gate_proj.weight"], self.w[x + "up_proj.weight"], self.w[x + "down_proj.weight"]

    def route(self, logits, bias):
        """(experts [T, k], weights [T, k]) as the docstring says."""
        c = self.cfg
        s = torch.sigmoid(logits)
        choice = s.detach() + (0 if "bias" in self.ablate else bias)
        T, E = choice.shape
        groups = 1 if "groups" in self.ablate else c.n_group
        keep_groups = 1 if "groups" in self.ablate else c.topk_group
        per = E // groups
        gs = choice.view(T, groups, per).sort(-1, descending=True).values[..., :2].sum(-1)
        if keep_groups < groups:
            ranked = gs.sort(-1, descending=True).values
            self.min_group_margin = min(self.min_group_margin,
                                        float((ranked[:, keep_groups - 1] - ranked[:, keep_groups]).min()))
        kept = torch.zeros(T, groups, dtype=torch.bool)
        kept.scatter_(1, gs.topk(keep_groups, -1).indices, True)
        masked = torch.where(kept.repeat_interleave(per, 1), choice, torch.zeros_like(choice))
        ranked = masked.sort(-1, descending=True).values
        self.min_margin = min(self.min_margin, float((ranked[:, c.top_k - 1] - ranked[:, c.top_k]).min()))
        experts = masked.topk(c.top_k, -1).indices
        w = s.gather(1, experts)
        if c.norm_topk:
            w = w / (w.sum(-1, keepdim=True) + 1e-20)
        return experts, w * c.scale

    def moe(self, h, p):
        c = self.cfg
        logits = h @ self.w[p + "gate.weight"].T
        if p + "gate" in self.lora:
            a, b, scale = self.lora[p + "gate"]
            logits = logits + scale * ((h @ a.T) @ b.T)
        experts, w = self.route(logits, self.w[p + "gate.e_score_correction_bias"])
        self.chosen.append(experts.sort(-1).values)
        dense = (w[..., None] * F.one_hot(experts, c.num_experts).to(h.dtype)).sum(1)  # [T, E]
        out = torch.zeros_like(h)
        for e in range(c.num_experts):
            wg, wu, wd = self.expert_weights(p, e)
            out = out + dense[:, e:e + 1] * ((F.silu(h @ wg.T) * (h @ wu.T)) @ wd.T)
        return out + self.swiglu(h, p + "shared_experts.")

    def forward(self, tokens, cache=None, hidden_states=None):
        c, w = self.cfg, self.w
        tokens = torch.as_tensor(tokens, dtype=torch.long)
        T = tokens.shape[0]
        past = cache.get("len", 0) if cache is not None else 0
        pos = torch.arange(past, past + T)
        x = w["model.embed_tokens.weight"][tokens]
        if hidden_states is not None:
            hidden_states.append(x)
        for l in range(c.layers):
            p = f"model.layers.{l}."
            lc = cache.setdefault(l, {}) if cache is not None else None
            x = x + self.attention(self.norm(x, p + "input_layernorm"), p + "self_attn.", pos, lc)
            h = self.norm(x, p + "post_attention_layernorm")
            x = x + (self.swiglu(h, p + "mlp.") if l < c.first_dense else self.moe(h, p + "mlp."))
            if hidden_states is not None:
                hidden_states.append(x)
        if cache is not None:
            cache["len"] = past + T
        x = self.norm(x, "model.norm")
        if hidden_states is not None:
            hidden_states.append(x)
        head = w["model.embed_tokens.weight"] if c.tied else w["lm_head.weight"]
        return x @ head.T


def check_decode(model, name):
    tokens = token_cases(model.cfg.vocab)[2][1]
    with torch.no_grad():
        full = model.forward(tokens)
        cache = {}
        parts = [model.forward(tokens[:40], cache=cache)] + [model.forward([t], cache=cache) for t in tokens[40:]]
    err = (full - torch.cat(parts)).abs().max().item()
    assert err < 1e-12, f"{name}: incremental decode differs from the one-shot forward by {err}"
    return err


def check_lora(cfg, weights, name):
    tokens = token_cases(cfg.vocab)[2][1]
    g = torch.Generator().manual_seed(0)
    lora, merged = {}, dict(weights)
    for mod in ("model.layers.0.self_attn.q_proj", "model.layers.1.self_attn.o_proj", "model.layers.0.mlp.up_proj",
                "model.layers.2.mlp.shared_experts.down_proj"):
        out_dim, in_dim = weights[mod + ".weight"].shape
        a = torch.randn(4, in_dim, generator=g, dtype=torch.float64) * 0.1
        b = torch.randn(out_dim, 4, generator=g, dtype=torch.float64) * 0.1
        lora[mod] = (a, b, 2.0)
        merged[mod + ".weight"] = weights[mod + ".weight"].to(torch.float64) + 2.0 * b @ a
    with torch.no_grad():
        base = Model(cfg, weights).forward(tokens)
        with_lora = Model(cfg, weights, lora=lora).forward(tokens)
        m = Model(cfg, merged).forward(tokens)
    err = (with_lora - m).abs().max().item()
    moved = (with_lora - base).abs().max().item()
    assert err < 1e-12 and moved > 1e-3, f"{name}: LoRA path wrong ({err}, moved {moved})"
    return err


def routing_effects(cfg, weights):
    """Fraction of (token, sparse layer) pairs whose experts change without
    the correction bias, and with plain top-k instead of group-limited."""
    tokens = token_cases(cfg.vocab)[3][1]
    out = {}
    with torch.no_grad():
        base = Model(cfg, weights)
        base.forward(tokens)
        for ab in ("bias", "groups"):
            m = Model(cfg, weights, ablate=[ab])
            m.forward(tokens)
            changed = sum(int((a != b).any(-1).sum()) for a, b in zip(base.chosen, m.chosen))
            out[ab] = changed / (len(tokens) * len(base.chosen))
    return out


def write_golden(name, out_dir):
    cfg, weights = load_model(name)
    model = Model(cfg, weights)
    chunks, cases, offset = [], [], 0

    def put(t):
        nonlocal offset
        a = t.detach().numpy().astype("<f4")
        chunks.append(a.tobytes())
        entry = {"offset": offset, "shape": list(a.shape)}
        offset += a.size
        return entry

    for case_name, tokens in token_cases(cfg.vocab):
        hs = []
        with torch.no_grad():
            logits = model.forward(tokens, hidden_states=hs)
        case = {"name": case_name, "tokens": tokens, "logits": put(logits)}
        if len(tokens) <= 64:
            case["hidden_states"] = put(torch.stack(hs))
        cases.append(case)
    assert model.min_margin >= MIN_ROUTING_MARGIN, f"{name}: choice scores within {model.min_margin:.3g} of a top-k tie"
    assert model.min_group_margin >= MIN_ROUTING_MARGIN, f"{name}: group scores within {model.min_group_margin:.3g} of a tie"
    data = b"".join(chunks)
    with open(os.path.join(out_dir, name + ".f32"), "wb") as f:
        f.write(data)
    manifest = {
        "model": name,
        "model_dir": f"testdata/models/{name}",
        "data": name + ".f32",
        "format": "little-endian float32; offset and shape count float32 elements; arrays are row-major",
        "computed_in": "float64 by testdata/reference/glm4_moe_reference.py, rounded to float32",
        "hidden_states": "(cases up to 64 tokens) [num_hidden_layers + 2, T, hidden_size]: residual stream after the embedding, after each decoder layer, and after the final norm",
        "cases": cases,
    }
    with open(os.path.join(out_dir, name + ".json"), "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")
    return cfg, weights, model, data


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(ROOT, "testdata", "golden"))
    args = ap.parse_args()
    torch.set_num_threads(1)
    os.makedirs(args.out, exist_ok=True)
    data = {}
    for name in MODELS:
        cfg, weights, model, data[name] = write_golden(name, args.out)
        dec = check_decode(model, name)
        lo = check_lora(cfg, weights, name)
        eff = routing_effects(cfg, weights)
        assert eff["bias"] > 0 and eff["groups"] > 0, f"{name}: routing ablations change nothing: {eff}"
        print(f"wrote testdata/golden/{name}.{{json,f32}}: decode vs one-shot {dec:.1e}, LoRA vs merged {lo:.1e}, "
              f"min routing margin {model.min_margin:.3g} (groups {model.min_group_margin:.3g}); experts changed "
              f"without the bias {eff['bias']:.1%}, with plain top-k {eff['groups']:.1%}")
    assert data[MODELS[0]] == data[MODELS[1]], "fused and per-expert checkpoints give different goldens"
    print("fused vs per-expert experts: identical goldens")


if __name__ == "__main__":
    sys.exit(main())
