#!/usr/bin/env python3
"""Independent PyTorch reference for grpo's model forward pass.

Reads the tiny Hugging Face-layout models under testdata/models with its own
safetensors parser (no `safetensors`, no `transformers`), runs Qwen3, Qwen2
and Llama 3 written out by hand, and stores golden logits and hidden states
under testdata/golden. The maths is done in float64 so the goldens are the
model's exact outputs to ~1e-15; the Go forward pass, computing in float32,
is compared against them with a float32-sized tolerance.

Architecture details this file commits to (checked against the HF modeling
code, written independently):
  * RMSNorm: x * rsqrt(mean(x^2) + eps) * weight (HF computes the normalisation
    in float32 and multiplies the weight after casting back; in float64 the
    order is immaterial).
  * Qwen3: RMSNorm over each head's head_dim vector of q and k (weights
    q_norm / k_norm, shape [head_dim]) after the projection and before RoPE.
  * Qwen2: q/k/v projections always have a bias (its config has no key for it).
  * RoPE is the "rotate half" form: the pair of a dimension i < d/2 is i + d/2,
    cos/sin are cat(freqs, freqs); inv_freq[i] = theta^(-2i/d).
  * Llama 3 rope_scaling ("llama3"): wavelengths longer than
    original_max_position_embeddings / low_freq_factor are divided by factor,
    shorter than original / high_freq_factor are kept, those in between are
    blended with smooth = (original / wavelen - low) / (high - low).
  * GQA: query head h reads kv head h // (heads / kv_heads).
  * Attention scale head_dim^-0.5, causal mask, SwiGLU MLP down(silu(gate) * up).
  * Qwen3-MoE (sparse layers): router logits h @ mlp.gate.weight^T, softmax
    over the experts, the top num_experts_per_tok probabilities as weights
    (divided by their sum when norm_topk_prob), output = sum of the weights
    times each chosen expert's SwiGLU MLP (mlp.experts.{e}.*). Written here
    as every expert applied to every token, weighted by a dense
    [tokens, experts] weight matrix that is zero off the top-k: no grouping.

Run from the repository root:  /usr/bin/python3 testdata/reference/reference.py
"""

import argparse
import json
import math
import os
import struct
import sys

import numpy as np
import torch

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
MODELS = ["qwen3-tiny", "qwen3-tiny-bf16", "qwen2-tiny", "llama-tiny", "llama-tiny-bf16-sharded",
          "qwen3-moe-tiny", "qwen3-moe-tiny-dense", "qwen3-moe-tiny-bf16"]
# A golden's routing must not hinge on float32 rounding: the k-th and
# (k+1)-th router logits of every token differ by at least this (a float32
# forward gets them right to ~1e-6, so its probabilities keep the order).
MIN_ROUTING_MARGIN = 1e-4
# Token sequences: one per length, drawn once from a fixed seed and shared by
# every model (all tiny models have vocab 512).
CASE_LENGTHS = [1, 7, 64, 256]
TOKEN_SEED = 20250101


# ---------------------------------------------------------------- loading

def read_safetensors(path):
    """Returns {name: float64 torch tensor} from one safetensors file."""
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
        if e["dtype"] == "F32":
            a = np.frombuffer(raw, dtype="<f4")
        elif e["dtype"] == "F16":
            a = np.frombuffer(raw, dtype="<f2")
        elif e["dtype"] == "BF16":
            # bfloat16 is the high half of a float32: shift the bits up.
            a = (np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16).view(np.float32)
        else:
            raise ValueError(f"{path}: tensor {name}: dtype {e['dtype']} is not a float")
        out[name] = torch.from_numpy(a.astype(np.float64).reshape(e["shape"]))
    return out


def load_model(model_dir):
    with open(os.path.join(model_dir, "config.json")) as f:
        cfg = json.load(f)
    index = os.path.join(model_dir, "model.safetensors.index.json")
    weights = {}
    if os.path.exists(index):
        with open(index) as f:
            shards = sorted(set(json.load(f)["weight_map"].values()))
        for s in shards:
            weights.update(read_safetensors(os.path.join(model_dir, s)))
    else:
        weights = read_safetensors(os.path.join(model_dir, "model.safetensors"))
    return Config(cfg), weights


class Config:
    def __init__(self, c):
        self.model_type = c["model_type"]
        if self.model_type not in ("qwen3", "qwen2", "llama", "qwen3_moe"):
            raise ValueError(f"model_type {self.model_type!r} not supported")
        self.hidden = c["hidden_size"]
        self.layers = c["num_hidden_layers"]
        self.heads = c["num_attention_heads"]
        self.kv_heads = c.get("num_key_value_heads", self.heads)
        self.head_dim = c.get("head_dim") or self.hidden // self.heads
        self.eps = c["rms_norm_eps"]
        self.theta = float(c.get("rope_theta", 10000.0))
        self.rope_scaling = c.get("rope_scaling")
        self.vocab = c["vocab_size"]
        self.tied = c.get("tie_word_embeddings", False)
        self.qkv_bias = self.model_type == "qwen2" or c.get("attention_bias", False)
        self.qk_norm = self.model_type in ("qwen3", "qwen3_moe")
        # Qwen3-MoE (Qwen3MoeConfig's keys and defaults).
        moe = self.model_type == "qwen3_moe"
        self.num_experts = c.get("num_experts", 128) if moe else 0
        self.top_k = c.get("num_experts_per_tok", 8)
        self.norm_topk = c.get("norm_topk_prob", False)
        self.sparse_step = c.get("decoder_sparse_step", 1)
        self.mlp_only = set(c.get("mlp_only_layers", []))

    def sparse(self, l):
        """HF's rule: layer l is a mixture of experts unless listed in
        mlp_only_layers, when (l + 1) is a multiple of decoder_sparse_step."""
        return self.num_experts > 0 and l not in self.mlp_only and (l + 1) % self.sparse_step == 0


# ---------------------------------------------------------------- model

def rope_inv_freq(cfg, dtype=torch.float64):
    d = cfg.head_dim
    inv = 1.0 / (cfg.theta ** (torch.arange(0, d, 2, dtype=torch.float64) / d))
    rs = cfg.rope_scaling
    if rs and rs.get("rope_type", rs.get("type")) == "llama3":
        factor, low, high = rs["factor"], rs["low_freq_factor"], rs["high_freq_factor"]
        orig = rs["original_max_position_embeddings"]
        wavelen = 2 * math.pi / inv
        smooth = (orig / wavelen - low) / (high - low)
        scaled = torch.where(wavelen > orig / low, inv / factor, inv)
        blended = (1 - smooth) * inv / factor + smooth * inv
        medium = (wavelen >= orig / high) & (wavelen <= orig / low)
        inv = torch.where(medium, blended, scaled)
    elif rs:
        raise ValueError(f"rope_scaling {rs} not supported")
    return inv.to(dtype)


def rms_norm(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def rope(x, pos, inv_freq):
    """x: [T, heads, d]; pos: [T] absolute positions."""
    ang = pos.to(inv_freq.dtype)[:, None] * inv_freq[None, :]          # [T, d/2]
    cos = torch.cat([ang.cos(), ang.cos()], -1)[:, None, :]
    sin = torch.cat([ang.sin(), ang.sin()], -1)[:, None, :]
    half = x.shape[-1] // 2
    rotated = torch.cat([-x[..., half:], x[..., :half]], -1)
    return x * cos + rotated * sin


class Model:
    """Weights plus a forward pass over one sequence (batch 1).

    lora: optional {full weight name: (A [r, in], B [out, r], scale)}; the
    linear then computes x W^T + scale * (x A^T) B^T, as PEFT does. It is the
    hook for LoRA gradient goldens (autograd through this forward).
    """

    def __init__(self, cfg, weights, dtype=torch.float64, lora=None):
        self.cfg = cfg
        self.w = {k: v.to(dtype) for k, v in weights.items()}
        self.inv_freq = rope_inv_freq(cfg, dtype)
        self.lora = lora or {}
        # Smallest gap between the k-th and (k+1)-th router logit of
        # any token seen by forward (sparse models), for the margin check.
        self.min_margin = math.inf
        # When a list, forward appends each sparse layer's router logits
        # (for the load-balancing loss).
        self.router_logits = None

    def linear(self, x, name):
        y = x @ self.w[name + ".weight"].T
        if name + ".weight" in self.lora:
            a, b, scale = self.lora[name + ".weight"]
            y = y + scale * ((x @ a.T) @ b.T)
        bias = self.w.get(name + ".bias")
        return y if bias is None else y + bias

    def mlp(self, h, p):
        gate = self.linear(h, p + "gate_proj")
        up = self.linear(h, p + "up_proj")
        return self.linear(torch.nn.functional.silu(gate) * up, p + "down_proj")

    def moe(self, h, p):
        c = self.cfg
        logits = self.linear(h, p + "gate")                       # [T, experts]; a LoRA on the router too
        if self.router_logits is not None:
            self.router_logits.append(logits)
        probs = torch.softmax(logits, -1)
        top_p, top_i = torch.topk(probs, c.top_k, dim=-1)
        if c.top_k < c.num_experts:
            ranked = torch.sort(logits.detach(), -1, descending=True).values
            self.min_margin = min(self.min_margin, float((ranked[:, c.top_k - 1] - ranked[:, c.top_k]).min()))
        if c.norm_topk:
            top_p = top_p / top_p.sum(-1, keepdim=True)
        chosen = torch.nn.functional.one_hot(top_i, c.num_experts).to(h.dtype)  # [T, k, experts]
        weight = (top_p[..., None] * chosen).sum(1)               # [T, experts]
        out = torch.zeros_like(h)
        for e in range(c.num_experts):
            out = out + weight[:, e:e + 1] * self.mlp(h, p + f"experts.{e}.")
        return out

    def forward(self, tokens, cache=None, hidden_states=None):
        """Logits [T, vocab] for tokens at positions len(cache)... .

        cache: None, or a list that receives / holds per-layer (k, v) so a
        later call continues the sequence (decode). hidden_states: a list
        that receives the residual stream after the embedding, after each
        layer, and after the final norm.
        """
        c, w = self.cfg, self.w
        tokens = torch.as_tensor(tokens, dtype=torch.long)
        T = tokens.shape[0]
        past = cache[0][0].shape[0] if cache else 0
        pos = torch.arange(past, past + T)
        x = w["model.embed_tokens.weight"][tokens]
        if hidden_states is not None:
            hidden_states.append(x)
        group = c.heads // c.kv_heads
        for l in range(c.layers):
            p = f"model.layers.{l}."
            h = rms_norm(x, w[p + "input_layernorm.weight"], c.eps)
            q = self.linear(h, p + "self_attn.q_proj").view(T, c.heads, c.head_dim)
            k = self.linear(h, p + "self_attn.k_proj").view(T, c.kv_heads, c.head_dim)
            v = self.linear(h, p + "self_attn.v_proj").view(T, c.kv_heads, c.head_dim)
            if c.qk_norm:
                q = rms_norm(q, w[p + "self_attn.q_norm.weight"], c.eps)
                k = rms_norm(k, w[p + "self_attn.k_norm.weight"], c.eps)
            q, k = rope(q, pos, self.inv_freq), rope(k, pos, self.inv_freq)
            if cache is not None:
                if len(cache) > l:
                    k = torch.cat([cache[l][0], k])
                    v = torch.cat([cache[l][1], v])
                    cache[l] = (k, v)
                else:
                    cache.append((k, v))
            S = k.shape[0]
            # Split query heads into [kv head, member]: head h = j*group + g
            # reads kv head j, without copying k and v per query head.
            qg = q.view(T, c.kv_heads, group, c.head_dim)
            scores = torch.einsum("tjgd,sjd->jgts", qg, k) * c.head_dim ** -0.5
            # Query t (absolute position past + t) may see keys 0..past + t.
            mask = torch.arange(S)[None, :] > pos[:, None]
            scores = scores.masked_fill(mask, float("-inf"))
            att = torch.einsum("jgts,sjd->tjgd", scores.softmax(-1), v).reshape(T, c.heads * c.head_dim)
            x = x + self.linear(att, p + "self_attn.o_proj")
            h = rms_norm(x, w[p + "post_attention_layernorm.weight"], c.eps)
            if c.sparse(l):
                x = x + self.moe(h, p + "mlp.")
            else:
                x = x + self.mlp(h, p + "mlp.")
            if hidden_states is not None:
                hidden_states.append(x)
        x = rms_norm(x, w["model.norm.weight"], c.eps)
        if hidden_states is not None:
            hidden_states.append(x)
        head = w["model.embed_tokens.weight"] if c.tied else w["lm_head.weight"]
        return x @ head.T


# ---------------------------------------------------------------- goldens

def token_cases(vocab):
    rng = np.random.Generator(np.random.PCG64(TOKEN_SEED))
    return [(f"len{n}", rng.integers(0, vocab, size=n).tolist()) for n in CASE_LENGTHS]


def write_golden(name, out_dir):
    cfg, weights = load_model(os.path.join(ROOT, "testdata", "models", name))
    model = Model(cfg, weights)
    chunks, cases, offset = [], [], 0

    def put(t):
        nonlocal offset
        a = t.detach().numpy().astype("<f4")
        entry = {"offset": offset, "shape": list(a.shape)}
        chunks.append(a.tobytes())
        offset += a.size
        return entry

    for case_name, tokens in token_cases(cfg.vocab):
        hs = []
        with torch.no_grad():
            logits = model.forward(tokens, hidden_states=hs)
        case = {"name": case_name, "tokens": tokens, "logits": put(logits)}
        # Hidden states help locate a mismatch; the short cases suffice, and
        # leaving them out of the 256-token case keeps the goldens small.
        if len(tokens) <= 64:
            case["hidden_states"] = put(torch.stack(hs))
        cases.append(case)
    data_file = name + ".f32"
    with open(os.path.join(out_dir, data_file), "wb") as f:
        f.write(b"".join(chunks))
    manifest = {
        "model": name,
        "model_dir": f"testdata/models/{name}",
        "data": data_file,
        "format": "little-endian float32; offset and shape count float32 elements; arrays are row-major",
        "computed_in": "float64 by testdata/reference/reference.py, rounded to float32",
        "hidden_states": "(cases up to 64 tokens) [num_hidden_layers + 2, T, hidden_size]: residual stream after the embedding, after each decoder layer, and after the final norm",
        "cases": cases,
    }
    with open(os.path.join(out_dir, name + ".json"), "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")
    return cfg, model


# ---------------------------------------------------------------- self-checks

def self_check(cfg, model, name):
    """Consistency checks of this reference that do not need HF:
    incremental decode through the KV cache reproduces the one-shot logits
    (positions, masks and GQA in decode), a LoRA adapter equals merging
    W + scale·B·A into the weight, and llama3 rope frequencies match values
    worked out by hand."""
    tokens = token_cases(cfg.vocab)[2][1]  # the 64-token case
    with torch.no_grad():
        full = model.forward(tokens)
        cache = []
        parts = [model.forward(tokens[:40], cache=cache)]
        for t in tokens[40:]:
            parts.append(model.forward([t], cache=cache))
        inc = torch.cat(parts)
    err = (full - inc).abs().max().item()
    assert err < 1e-12, f"{name}: KV-cache decode differs from one-shot forward by {err}"

    g = torch.Generator().manual_seed(0)
    wname = "model.layers.1.self_attn.v_proj.weight"
    out_dim, in_dim = model.w[wname].shape
    a = torch.randn(4, in_dim, generator=g, dtype=torch.float64) * 0.1
    b = torch.randn(out_dim, 4, generator=g, dtype=torch.float64) * 0.1
    with torch.no_grad():
        with_lora = Model(cfg, model.w, lora={wname: (a, b, 2.0)}).forward(tokens)
        merged_w = dict(model.w)
        merged_w[wname] = model.w[wname] + 2.0 * b @ a
        merged = Model(cfg, merged_w).forward(tokens)
    err = (with_lora - merged).abs().max().item()
    assert err < 1e-12 and (with_lora - full).abs().max().item() > 1e-6, f"{name}: LoRA path wrong ({err})"

    if cfg.num_experts:
        assert model.min_margin >= MIN_ROUTING_MARGIN, f"{name}: a token's k-th and (k+1)-th router logits differ by only {model.min_margin:.3g}"

    if cfg.rope_scaling:
        # head_dim 16, theta 5e5, factor 8, low 1, high 4, original 64:
        # wavelens 2π·theta^(i/8). i=0: 6.28 < 16 kept; i=1: 32.4 in [16, 64]
        # blended with smooth = (64/32.4 - 1)/3; i>=2: > 64, divided by 8.
        inv = rope_inv_freq(cfg)
        base = [5e5 ** (-i / 8) for i in range(8)]
        s = (64 / (2 * math.pi / base[1]) - 1) / 3
        want = [base[0], (1 - s) * base[1] / 8 + s * base[1]] + [f / 8 for f in base[2:]]
        assert torch.allclose(inv, torch.tensor(want, dtype=torch.float64), rtol=1e-14, atol=0), f"{name}: llama3 inv_freq {inv} != {want}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(ROOT, "testdata", "golden"))
    ap.add_argument("models", nargs="*", default=MODELS)
    args = ap.parse_args()
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    os.makedirs(args.out, exist_ok=True)
    for name in args.models:
        cfg, model = write_golden(name, args.out)
        self_check(cfg, model, name)
        print(f"wrote {os.path.relpath(os.path.join(args.out, name), ROOT)}.{{json,f32}} (self-checks passed)")


if __name__ == "__main__":
    sys.exit(main())
