#!/usr/bin/env python3
"""Independent float64 PyTorch reference for gpt-oss (gpt_oss).

Reads the tiny checkpoints testdata/gen writes (gpt_oss-tiny with f32
experts, gpt_oss-tiny-bf16 with them bf16 and gpt_oss-tiny-mxfp4 with them
as MXFP4 blocks and scales, all three of the same values), runs the model written out here by hand (not
transformers) and writes goldens to testdata/golden in reference.py's
format.

What this file commits to (read from transformers' modeling_gpt_oss.py,
configuration_gpt_oss.py, modeling_rope_utils.py and integrations/mxfp4.py,
written independently):
  * Norms: RMSNorm in f32 (here f64), x · rsqrt(mean(x²) + eps) · w.
  * Attention: q/k/v/o projections with biases (attention_bias); RoPE
    rotate-half over whole heads with YaRN inverse frequencies
    (_compute_yarn_parameters: correction range from beta_fast/beta_slow
    over original_max_position_embeddings, rounded outward only with
    truncate, a linear ramp between interpolation (÷ factor) and
    extrapolation) and cos and sin multiplied by the attention factor
    0.1·ln(factor) + 1; scores · head_dim^-0.5, causal, GQA; in
    "sliding_attention" layers query i sees key j only when i − j <
    sliding_window; each head's sink logit (self_attn.sinks) joins every
    row's softmax and its probability is dropped.
  * Router mlp.router: logits = h·Wᵀ + b; the top num_experts_per_tok
    logits, softmax over them.
  * Experts: gate_up = h·gate_up_proj[e] + gate_up_proj_bias[e]
    (gate_up_proj [E, H, 2I]), gate = gate_up[..., 0::2], up =
    gate_up[..., 1::2]; gate clamped above at swiglu_limit, up to
    ±swiglu_limit; glu = gate·σ(1.702·gate); out = ((up + 1)·glu)·
    down_proj[e] + down_proj_bias[e], times the routing weight.  Written
    as every expert applied to every token, weighted densely.
  * MXFP4 (mxfp4.py's convert_moe_packed_tensors): *_blocks [E, out,
    in/32, 16] and *_scales [E, out, in/32]; byte k of a block holds
    elements 2k (low nibble) and 2k+1 (high), e2m1 codes
    [0, .5, 1, 1.5, 2, 3, 4, 6] with bit 3 the sign, times 2^(scale−127);
    [E, out, in] transposed to the Parameter's [E, in, out].
  * Untied lm_head.

Self-checks before anything is written: incremental decode through a KV
cache equals the one-shot forward; a LoRA adapter equals its merged
weights; the MXFP4 checkpoint dequantizes to exactly the f32 and bf16
checkpoints' experts; routing margins (k-th vs (k+1)-th logit) are at least
MIN_ROUTING_MARGIN; the sinks and the window each change the logits and
the clamps act on some values.

Run from the repository root:
    /usr/bin/python3 testdata/reference/gpt_oss_reference.py
"""

import argparse
import json
import math
import os
import struct
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from reference import MIN_ROUTING_MARGIN, ROOT, token_cases  # noqa: E402

MODELS = ["gpt_oss-tiny", "gpt_oss-tiny-bf16", "gpt_oss-tiny-mxfp4"]
ALPHA = 1.702


class Config:
    def __init__(self, c):
        assert c["model_type"] == "gpt_oss", c["model_type"]
        self.hidden = c["hidden_size"]
        self.layers = c["num_hidden_layers"]
        self.heads = c["num_attention_heads"]
        self.kv_heads = c["num_key_value_heads"]
        self.head_dim = c["head_dim"]
        self.eps = c["rms_norm_eps"]
        self.theta = float(c["rope_theta"])
        self.vocab = c["vocab_size"]
        self.experts = c["num_local_experts"]
        self.top_k = c["num_experts_per_tok"]
        self.inter = c["intermediate_size"]
        self.limit = float(c["swiglu_limit"])
        self.layer_types = c["layer_types"]
        self.window = c["sliding_window"]
        self.rope = c["rope_scaling"]
        self.mxfp4 = (c.get("quantization_config") or {}).get("quant_method") == "mxfp4"


def read_tensors(path):
    """{name: float64 tensor} for F32/BF16, {name: uint8 numpy array} for U8."""
    with open(path, "rb") as f:
        buf = f.read()
    (n,) = struct.unpack("<Q", buf[:8])
    header = json.loads(buf[8:8 + n])
    data = buf[8 + n:]
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        begin, end = e["data_offsets"]
        raw = data[begin:end]
        if e["dtype"] == "U8":
            out[name] = np.frombuffer(raw, dtype=np.uint8).reshape(e["shape"])
            continue
        if e["dtype"] == "F32":
            a = np.frombuffer(raw, dtype="<f4")
        elif e["dtype"] == "BF16":
            a = (np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16).view(np.float32)
        else:
            raise ValueError(f"{path}: {name}: dtype {e['dtype']}")
        out[name] = torch.from_numpy(a.astype(np.float64).reshape(e["shape"]))
    return out


E2M1 = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0])


def dequant_mxfp4(blocks, scales):
    """[E, out, in/32, 16] bytes and [E, out, in/32] exponents → [E, in, out] float64."""
    lo, hi = E2M1[blocks & 0x0F], E2M1[blocks >> 4]
    vals = np.stack([lo, hi], axis=-1).reshape(*blocks.shape[:-1], 32)  # element 2k low, 2k+1 high
    vals = vals * np.exp2(scales.astype(np.float64) - 127)[..., None]
    E, out = blocks.shape[0], blocks.shape[1]
    return torch.from_numpy(vals.reshape(E, out, -1)).transpose(1, 2).contiguous()


def load_model(name):
    model_dir = os.path.join(ROOT, "testdata", "models", name)
    with open(os.path.join(model_dir, "config.json")) as f:
        cfg = Config(json.load(f))
    w = read_tensors(os.path.join(model_dir, "model.safetensors"))
    for k in [k for k in w if k.endswith("_blocks")]:
        stem = k[: -len("_blocks")]
        w[stem] = dequant_mxfp4(w.pop(k), w.pop(stem + "_scales"))
    return cfg, w


def yarn(cfg):
    """(inv_freq [head_dim/2], attention factor) as _compute_yarn_parameters."""
    r, d, base = cfg.rope, cfg.head_dim, cfg.theta
    factor, orig = r["factor"], r["original_max_position_embeddings"]
    fast, slow = r.get("beta_fast") or 32, r.get("beta_slow") or 1

    def corr_dim(rot):
        return d * math.log(orig / (rot * 2 * math.pi)) / (2 * math.log(base))

    low, high = corr_dim(fast), corr_dim(slow)
    if r.get("truncate", True):
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, d - 1)
    if low == high:
        high += 0.001
    ramp = ((torch.arange(d // 2, dtype=torch.float64) - low) / (high - low)).clamp(0, 1)
    extrap = 1.0 / base ** (torch.arange(0, d, 2, dtype=torch.float64) / d)
    inv = extrap / factor * ramp + extrap * (1 - ramp)
    mscale = 0.1 * math.log(factor) + 1.0 if factor > 1 else 1.0
    return inv, mscale


class Model:
    """gpt-oss in float64. lora: {module (no .weight): (A [r, in], B [out, r],
    scale)}; expert_lora: {"model.layers.N.mlp.experts.<param>": (A [E·r, in],
    B [out, r·E], scale)} in PEFT's target_parameters layout, delta_e =
    scale · B_e A_e added to the Parameter [E, in, out] as its transpose.
    no_sinks: sinks at −inf; no_window: no sliding window (ablations)."""

    def __init__(self, cfg, weights, lora=None, expert_lora=None, no_sinks=False, no_window=False):
        self.cfg = cfg
        self.w = weights
        self.lora = lora or {}
        self.expert_lora = expert_lora or {}
        self.no_sinks = no_sinks
        self.no_window = no_window
        self.inv_freq, self.mscale = yarn(cfg)
        self.min_margin = math.inf
        self.clamped = 0

    def linear(self, x, name):
        y = x @ self.w[name + ".weight"].T + self.w[name + ".bias"]
        if name in self.lora:
            a, b, scale = self.lora[name]
            y = y + scale * ((x @ a.T) @ b.T)
        return y

    def norm(self, x, name):
        return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + self.cfg.eps) * self.w[name + ".weight"]

    def rope(self, x, pos):
        ang = pos.to(torch.float64)[:, None] * self.inv_freq[None, :]
        cos, sin = (ang.cos() * self.mscale)[:, None, :], (ang.sin() * self.mscale)[:, None, :]
        a, b = x.chunk(2, dim=-1)
        return torch.cat([a * cos - b * sin, b * cos + a * sin], -1)

    def attention(self, h, p, l, pos, cache):
        c = self.cfg
        T = h.shape[0]
        q = self.linear(h, p + "q_proj").view(T, c.heads, c.head_dim)
        k = self.linear(h, p + "k_proj").view(T, c.kv_heads, c.head_dim)
        v = self.linear(h, p + "v_proj").view(T, c.kv_heads, c.head_dim)
        q, k = self.rope(q, pos), self.rope(k, pos)
        if cache is not None:
            if "k" in cache:
                k, v = torch.cat([cache["k"], k]), torch.cat([cache["v"], v])
            cache["k"], cache["v"] = k, v
        S = k.shape[0]
        group = c.heads // c.kv_heads
        kk, vv = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
        scores = torch.einsum("thd,shd->hts", q, kk) * c.head_dim ** -0.5
        qi = torch.arange(T)[:, None] + (S - T)
        kj = torch.arange(S)[None, :]
        hidden = kj > qi
        if c.layer_types[l] == "sliding_attention" and not self.no_window:
            hidden = hidden | (qi - kj >= c.window)
        scores = scores.masked_fill(hidden[None], float("-inf"))
        sink = torch.full((c.heads,), float("-inf"), dtype=torch.float64) if self.no_sinks else self.w[p + "sinks"]
        both = torch.cat([scores, sink[:, None, None].expand(c.heads, T, 1)], -1)
        probs = torch.softmax(both, -1)[..., :-1]
        o = torch.einsum("hts,shd->thd", probs, vv)
        return self.linear(o.reshape(T, c.heads * c.head_dim), p + "o_proj")

    def expert_param(self, p, param):
        w = self.w[p + "experts." + param]
        if p + "experts." + param in self.expert_lora:
            a, b, scale = self.expert_lora[p + "experts." + param]
            E = self.cfg.experts
            a3 = a.reshape(E, -1, a.shape[-1])  # e, r, in
            b3 = b.reshape(b.shape[0], -1, E)  # out, r, e
            w = w + scale * torch.einsum("ore,eri->eio", b3, a3)
        return w

    def moe(self, h, p):
        c = self.cfg
        logits = self.linear(h, p + "router")
        ranked = logits.sort(-1, descending=True).values
        self.min_margin = min(self.min_margin, float((ranked[:, c.top_k - 1] - ranked[:, c.top_k]).min()))
        top, experts = logits.topk(c.top_k, -1)
        weights = torch.softmax(top, -1)
        dense = torch.zeros(h.shape[0], c.experts, dtype=h.dtype).scatter(1, experts, weights)
        gate_up, down = self.expert_param(p, "gate_up_proj"), self.expert_param(p, "down_proj")
        gu_b, down_b = self.w[p + "experts.gate_up_proj_bias"], self.w[p + "experts.down_proj_bias"]
        out = torch.zeros_like(h)
        for e in range(c.experts):
            gu = h @ gate_up[e] + gu_b[e]
            gate, up = gu[..., 0::2], gu[..., 1::2]
            self.clamped += int((gate > c.limit).sum() + (up.abs() > c.limit).sum())
            gate, up = gate.clamp(max=c.limit), up.clamp(-c.limit, c.limit)
            glu = gate * torch.sigmoid(ALPHA * gate)
            out = out + dense[:, e:e + 1] * (((up + 1) * glu) @ down[e] + down_b[e])
        return out

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
            x = x + self.attention(self.norm(x, p + "input_layernorm"), p + "self_attn.", l, pos, lc)
            x = x + self.moe(self.norm(x, p + "post_attention_layernorm"), p + "mlp.")
            if hidden_states is not None:
                hidden_states.append(x)
        if cache is not None:
            cache["len"] = past + T
        x = self.norm(x, "model.norm")
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
    """Attention LoRA against merged weights, and an expert adapter in PEFT's
    target_parameters layout against its merged Parameter."""
    tokens = token_cases(cfg.vocab)[2][1]
    g = torch.Generator().manual_seed(0)
    lora, merged = {}, dict(weights)
    for mod in ("model.layers.0.self_attn.q_proj", "model.layers.1.self_attn.o_proj"):
        out_dim, in_dim = weights[mod + ".weight"].shape
        a = torch.randn(4, in_dim, generator=g, dtype=torch.float64) * 0.1
        b = torch.randn(out_dim, 4, generator=g, dtype=torch.float64) * 0.1
        lora[mod] = (a, b, 2.0)
        merged[mod + ".weight"] = weights[mod + ".weight"] + 2.0 * b @ a
    expert_lora = {}
    E, r = cfg.experts, 2
    for param in ("model.layers.0.mlp.experts.gate_up_proj", "model.layers.1.mlp.experts.down_proj"):
        _, in_dim, out_dim = weights[param].shape
        a = torch.randn(E * r, in_dim, generator=g, dtype=torch.float64) * 0.1
        b = torch.randn(out_dim, r * E, generator=g, dtype=torch.float64) * 0.1
        expert_lora[param] = (a, b, 2.0)
        delta = torch.stack([b[:, e::E] @ a[e * r:(e + 1) * r] for e in range(E)])  # [E, out, in]
        merged[param] = weights[param] + 2.0 * delta.transpose(1, 2)
    with torch.no_grad():
        base = Model(cfg, weights).forward(tokens)
        with_lora = Model(cfg, weights, lora=lora, expert_lora=expert_lora).forward(tokens)
        m = Model(cfg, merged).forward(tokens)
    err = (with_lora - m).abs().max().item()
    moved = (with_lora - base).abs().max().item()
    assert err < 1e-12 and moved > 1e-3, f"{name}: LoRA path wrong ({err}, moved {moved})"
    return err


def write_golden(name, out_dir):
    cfg, weights = load_model(name)
    model = Model(cfg, weights)
    gname = name
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
    assert model.min_margin >= MIN_ROUTING_MARGIN, f"{name}: router logits within {model.min_margin:.3g} of a top-k tie"
    assert model.clamped > 0, f"{name}: the clamps never act"
    data = b"".join(chunks)
    with open(os.path.join(out_dir, gname + ".f32"), "wb") as f:
        f.write(data)
    manifest = {
        "model": name,
        "model_dir": f"testdata/models/{name}",
        "data": gname + ".f32",
        "format": "little-endian float32; offset and shape count float32 elements; arrays are row-major",
        "computed_in": "float64 by testdata/reference/gpt_oss_reference.py, rounded to float32",
        "hidden_states": "(cases up to 64 tokens) [num_hidden_layers + 2, T, hidden_size]: residual stream after the embedding, after each decoder layer, and after the final norm",
        "cases": cases,
    }
    with open(os.path.join(out_dir, gname + ".json"), "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")
    return cfg, weights, model, data


def attention_effects(cfg, weights):
    """Max |Δ logits| from dropping the sinks, and from dropping the window."""
    tokens = token_cases(cfg.vocab)[2][1]
    with torch.no_grad():
        base = Model(cfg, weights).forward(tokens)
        ns = Model(cfg, weights, no_sinks=True).forward(tokens)
        nw = Model(cfg, weights, no_window=True).forward(tokens)
    return (base - ns).abs().max().item(), (base - nw).abs().max().item()


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
        ds, dw = attention_effects(cfg, weights)
        assert ds > 1e-3 and dw > 1e-3, f"{name}: sinks ({ds}) or window ({dw}) change nothing"
        print(f"wrote testdata/golden/{name}.{{json,f32}}: decode vs one-shot {dec:.1e}, LoRA vs merged {lo:.1e}, "
              f"min routing margin {model.min_margin:.3g}, clamped values {model.clamped}; max |Δ logits| without sinks "
              f"{ds:.3g}, without the window {dw:.3g}")
    f32 = load_model(MODELS[0])[1]
    for name in MODELS[1:]:
        w = load_model(name)[1]
        assert f32.keys() == w.keys() and all(torch.equal(f32[k], w[k]) for k in f32), f"{name} does not hold gpt_oss-tiny's weights"
        assert data[MODELS[0]] == data[name]
    print("the bf16 and MXFP4 checkpoints hold exactly gpt_oss-tiny's weights: identical goldens")


if __name__ == "__main__":
    sys.exit(main())
