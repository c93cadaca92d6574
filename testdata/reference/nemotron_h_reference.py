#!/usr/bin/env python3
"""Independent float64 PyTorch reference for Nemotron-3 (nemotron_h).

Reads the tiny checkpoint testdata/gen writes (nemotron_h-tiny, the published
backbone.* layout) with reference.py's safetensors parser, runs the model
written out here by hand (not transformers) and writes goldens to
testdata/golden in reference.py's format.

What this file commits to (read from transformers' modeling_nemotron_h.py
and configuration_nemotron_h.py, written independently):
  * Checkpoint: backbone.{embeddings,layers.N.{norm,mixer.*},norm_f},
    lm_head.weight (untied).
  * Layers by hybrid_override_pattern, each x = x + mixer(rmsnorm(x)) with
    one norm (layer_norm_epsilon): M Mamba-2, * attention, E MoE, - MLP.
  * Mamba-2: in_proj -> z [d] | xBC [d + 2·G·N] | dt [H] (d = H·P); xBC
    through the depthwise causal conv1d (kernel K, with bias) then SiLU;
    x | B | C with B, C in G groups of N, head h reading group
    h // (H/G); dt = softplus(dt + dt_bias) (no clamp: vLLM's and the fused
    kernels'; time_step_limit (0, inf)); A = -exp(A_log); the SSD written as
    the plain recurrence per head: S = exp(dt·A)·S + dt·x ⊗ B,
    y = S·C + D·x; then the gated norm: u = y·silu(z), RMS over groups of
    d/G columns, times norm.weight; out_proj.
  * Attention: q/k/v/o without biases, no RoPE, scale head_dim^-0.5,
    causal, GQA.
  * MLP: down(relu(up(h))²).
  * MoE: router logits h·gate.weightᵀ, s = sigmoid; choice c = s +
    e_score_correction_bias; n_group groups of consecutive experts scored by
    their two largest c, the topk_group best kept; top num_experts_per_tok
    of c among kept; weights = s there, / (sum + 1e-20) when norm_topk_prob,
    × routed_scaling_factor; experts down(relu(up h)²) per expert
    (experts.{e}.{up,down}_proj), densely weighted; plus the shared experts'
    relu² MLP, unweighted.
  * Latent MoE (moe_latent_size set: Nemotron-3-Super, NemotronHMoE's
    fc1_latent_proj / fc2_latent_proj, Linears without bias as mlp_bias is
    false): the router and the shared experts read h itself; the routed
    experts read x = fc1_latent_proj(h) (latent wide, their up_proj
    [inter, latent], down_proj [latent, inter]) and their weighted sum goes
    through fc2_latent_proj back to the hidden size before the shared
    experts' output is added.

Self-checks before anything is written: incremental decode (conv and SSM
states, KV cache) equals the one-shot forward; a LoRA adapter equals its
merged weights; routing margins are at least MIN_ROUTING_MARGIN; the
correction bias and group-limited selection each change some tokens'
experts.

Run from the repository root:
    /usr/bin/python3 testdata/reference/nemotron_h_reference.py
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

MODELS = ["nemotron_h-tiny", "nemotron_h-latent-tiny"]


class Config:
    def __init__(self, c):
        assert c["model_type"] == "nemotron_h", c["model_type"]
        self.hidden = c["hidden_size"]
        self.pattern = c["hybrid_override_pattern"]
        self.layers = len(self.pattern)
        assert self.layers == c["num_hidden_layers"]
        self.heads = c["num_attention_heads"]
        self.kv_heads = c["num_key_value_heads"]
        self.head_dim = c["head_dim"]
        self.eps = c["layer_norm_epsilon"]
        self.vocab = c["vocab_size"]
        self.m_heads = c["mamba_num_heads"]
        self.m_dim = c["mamba_head_dim"]
        self.state = c["ssm_state_size"]
        self.groups = c["n_groups"]
        self.conv_k = c["conv_kernel"]
        self.num_experts = c["n_routed_experts"]
        self.top_k = c["num_experts_per_tok"]
        self.n_group = c["n_group"]
        self.topk_group = c["topk_group"]
        self.norm_topk = c["norm_topk_prob"]
        self.scale = c["routed_scaling_factor"]
        self.latent = c.get("moe_latent_size")


def load_model(name):
    model_dir = os.path.join(ROOT, "testdata", "models", name)
    with open(os.path.join(model_dir, "config.json")) as f:
        cfg = Config(json.load(f))
    return cfg, read_safetensors(os.path.join(model_dir, "model.safetensors"))


def rms(x, eps):
    return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + eps)


def relu2(x):
    return torch.relu(x) ** 2


class Model:
    """Nemotron-H in float64 (or dtype). lora: {module name (without .weight):
    (A [r, in], B [out, r], scale)}. ablate: "bias", "groups"."""

    def __init__(self, cfg, weights, lora=None, ablate=(), dtype=torch.float64):
        self.cfg = cfg
        self.w = {k: v.to(dtype) for k, v in weights.items()}
        self.lora = lora or {}
        self.ablate = set(ablate)
        self.min_margin = math.inf
        self.min_group_margin = math.inf
        self.chosen = []

    def linear(self, x, name):
        y = x @ self.w[name + ".weight"].T
        if name in self.lora:
            a, b, scale = self.lora[name]
            y = y + scale * ((x @ a.T) @ b.T)
        return y

    def mamba(self, h, p, cache):
        c = self.cfg
        T = h.shape[0]
        H, P, N, G, K = c.m_heads, c.m_dim, c.state, c.groups, c.conv_k
        d = H * P
        conv = d + 2 * G * N
        proj = self.linear(h, p + "in_proj")
        z, xbc, dt = proj[:, :d], proj[:, d:d + conv], proj[:, d + conv:]
        prev = cache.get("conv") if cache is not None else None
        if prev is None:
            prev = torch.zeros(K - 1, conv, dtype=h.dtype)
        full = torch.cat([prev, xbc])  # [K-1+T, conv]
        wc = self.w[p + "conv1d.weight"][:, 0, :]  # [conv, K]
        out = torch.stack([(full[t:t + K] * wc.T).sum(0) for t in range(T)]) + self.w[p + "conv1d.bias"]
        xbc = F.silu(out)
        x = xbc[:, :d].view(T, H, P)
        B = xbc[:, d:d + G * N].view(T, G, N)
        C = xbc[:, d + G * N:].view(T, G, N)
        dt = F.softplus(dt + self.w[p + "dt_bias"])
        A = -torch.exp(self.w[p + "A_log"])
        D = self.w[p + "D"]
        S = cache.get("ssm") if cache is not None else None
        if S is None:
            S = torch.zeros(H, P, N, dtype=h.dtype)
        per = H // G
        ys = []
        for t in range(T):
            g = torch.arange(H) // per
            Bt, Ct = B[t][g], C[t][g]  # [H, N]
            S = torch.exp(dt[t] * A)[:, None, None] * S + (dt[t][:, None] * x[t])[:, :, None] * Bt[:, None, :]
            ys.append(torch.einsum("hpn,hn->hp", S, Ct) + D[:, None] * x[t])
        y = torch.stack(ys).reshape(T, d)
        if cache is not None:
            cache["conv"], cache["ssm"] = full[-(K - 1):], S
        u = (y * F.silu(z)).view(T, G, d // G)
        normed = rms(u, c.eps).reshape(T, d) * self.w[p + "norm.weight"]
        return self.linear(normed, p + "out_proj")

    def attention(self, h, p, cache):
        c = self.cfg
        T = h.shape[0]
        q = self.linear(h, p + "q_proj").view(T, c.heads, c.head_dim)
        k = self.linear(h, p + "k_proj").view(T, c.kv_heads, c.head_dim)
        v = self.linear(h, p + "v_proj").view(T, c.kv_heads, c.head_dim)
        if cache is not None:
            if "k" in cache:
                k, v = torch.cat([cache["k"], k]), torch.cat([cache["v"], v])
            cache["k"], cache["v"] = k, v
        S = k.shape[0]
        group = c.heads // c.kv_heads
        kk, vv = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
        scores = torch.einsum("thd,shd->hts", q, kk) * c.head_dim ** -0.5
        mask = torch.arange(S)[None, :] > (torch.arange(T)[:, None] + S - T)
        o = torch.einsum("hts,shd->thd", torch.softmax(scores.masked_fill(mask[None], float("-inf")), -1), vv)
        return self.linear(o.reshape(T, c.heads * c.head_dim), p + "o_proj")

    def mlp(self, h, p):
        return self.linear(relu2(self.linear(h, p + "up_proj")), p + "down_proj")

    def route(self, logits, bias):
        c = self.cfg
        s = torch.sigmoid(logits)
        choice = s.detach() + (0 if "bias" in self.ablate else bias)
        T, E = choice.shape
        groups = 1 if "groups" in self.ablate else c.n_group
        keep = 1 if "groups" in self.ablate else c.topk_group
        per = E // groups
        gs = choice.view(T, groups, per).sort(-1, descending=True).values[..., :2].sum(-1)
        if keep < groups:
            ranked = gs.sort(-1, descending=True).values
            self.min_group_margin = min(self.min_group_margin, float((ranked[:, keep - 1] - ranked[:, keep]).min()))
        kept = torch.zeros(T, groups, dtype=torch.bool)
        kept.scatter_(1, gs.topk(keep, -1).indices, True)
        masked = torch.where(kept.repeat_interleave(per, 1), choice, torch.full_like(choice, -math.inf))
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
        experts, w = self.route(logits, self.w[p + "gate.e_score_correction_bias"])
        self.chosen.append(experts.sort(-1).values)
        dense = (w[..., None] * F.one_hot(experts, c.num_experts).to(h.dtype)).sum(1)
        x = self.linear(h, p + "fc1_latent_proj") if c.latent is not None else h
        out = torch.zeros_like(x)
        for e in range(c.num_experts):
            out = out + dense[:, e:e + 1] * self.mlp(x, f"{p}experts.{e}.")
        if c.latent is not None:
            out = self.linear(out, p + "fc2_latent_proj")
        return out + self.mlp(h, p + "shared_experts.")

    def forward(self, tokens, cache=None, hidden_states=None):
        c, w = self.cfg, self.w
        tokens = torch.as_tensor(tokens, dtype=torch.long)
        x = w["backbone.embeddings.weight"][tokens]
        if hidden_states is not None:
            hidden_states.append(x)
        for l, kind in enumerate(c.pattern):
            p = f"backbone.layers.{l}."
            lc = cache.setdefault(l, {}) if cache is not None else None
            h = rms(x, c.eps) * w[p + "norm.weight"]
            m = p + "mixer."
            if kind == "M":
                x = x + self.mamba(h, m, lc)
            elif kind == "*":
                x = x + self.attention(h, m, lc)
            elif kind == "E":
                x = x + self.moe(h, m)
            else:
                x = x + self.mlp(h, m)
            if hidden_states is not None:
                hidden_states.append(x)
        x = rms(x, c.eps) * w["backbone.norm_f.weight"]
        if hidden_states is not None:
            hidden_states.append(x)
        return x @ w["lm_head.weight"].T


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
    mods = ["backbone.layers.0.mixer.in_proj", "backbone.layers.1.mixer.o_proj", "backbone.layers.4.mixer.up_proj",
            "backbone.layers.3.mixer.shared_experts.down_proj", "backbone.layers.5.mixer.out_proj"]
    if cfg.latent is not None:
        mods += ["backbone.layers.3.mixer.fc1_latent_proj", "backbone.layers.3.mixer.fc2_latent_proj"]
    for mod in mods:
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
    with open(os.path.join(out_dir, name + ".f32"), "wb") as f:
        f.write(b"".join(chunks))
    manifest = {
        "model": name,
        "model_dir": f"testdata/models/{name}",
        "data": name + ".f32",
        "format": "little-endian float32; offset and shape count float32 elements; arrays are row-major",
        "computed_in": "float64 by testdata/reference/nemotron_h_reference.py, rounded to float32",
        "hidden_states": "(cases up to 64 tokens) [num_hidden_layers + 2, T, hidden_size]: residual stream after the embedding, after each decoder layer, and after the final norm",
        "cases": cases,
    }
    with open(os.path.join(out_dir, name + ".json"), "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")
    return cfg, weights, model


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(ROOT, "testdata", "golden"))
    args = ap.parse_args()
    torch.set_num_threads(1)
    os.makedirs(args.out, exist_ok=True)
    for name in MODELS:
        cfg, weights, model = write_golden(name, args.out)
        dec = check_decode(model, name)
        lo = check_lora(cfg, weights, name)
        eff = routing_effects(cfg, weights)
        assert eff["bias"] > 0 and eff["groups"] > 0, f"{name}: routing ablations change nothing: {eff}"
        print(f"wrote testdata/golden/{name}.{{json,f32}}: decode vs one-shot {dec:.1e}, LoRA vs merged {lo:.1e}, "
              f"min routing margin {model.min_margin:.3g} (groups {model.min_group_margin:.3g}); experts changed "
              f"without the bias {eff['bias']:.1%}, with plain top-k {eff['groups']:.1%}")


if __name__ == "__main__":
    sys.exit(main())
