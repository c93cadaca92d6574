#!/usr/bin/env python3
"""Independent float64 PyTorch reference for Qwen3.5 / Qwen3.5-MoE (Qwen3.6).

Reads the tiny checkpoints testdata/gen writes (qwen3_5-tiny, qwen3_5-tiny-bf16,
qwen3_5-moe-tiny, qwen3_5-moe-tiny-perexpert) with reference.py's safetensors
parser, runs the hybrid model written out here by hand (not transformers) and
writes goldens to testdata/golden in reference.py's format.

What this file commits to (read from transformers' modeling_qwen3_5.py /
modeling_qwen3_5_moe.py, written independently):
  * Checkpoint: config.json nests the language model's keys in text_config;
    its tensors are model.language_model.{embed_tokens,layers.N...,norm},
    the head lm_head.weight (or the embedding when tie_word_embeddings);
    model.visual.* and mtp.* are not part of the text forward pass.
  * Decoder norms (input_layernorm, post_attention_layernorm, final norm,
    q_norm, k_norm) are zero-centred: x · rsqrt(mean(x²) + eps) · (1 + w).
  * layer_types[l] picks the token mixer: "full_attention" or
    "linear_attention"; every layer has the same channel mixer.
  * Gated attention: q_proj yields per head [query (head_dim) | gate
    (head_dim)]; q_norm/k_norm per head before RoPE; RoPE rotate-half over
    the first int(head_dim · partial_rotary_factor) dims only, inv_freq[i] =
    theta^(-2i/rot) (mRoPE with text positions = plain RoPE: all three
    position rows are equal); scale head_dim^-0.5, causal, GQA; the
    attention output (heads · head_dim) times sigmoid(gate), then o_proj.
  * Gated DeltaNet: mixed = in_proj_qkv(h) [T, 2·key_dim + value_dim];
    depthwise causal conv1d (kernel K, weight [C, 1, K], no bias) then SiLU;
    split contiguous q | k | v; q, k per key head l2-normalised
    (x · rsqrt(Σx² + 1e-6)), q scaled by dk^-0.5, key heads
    repeat_interleave'd to value heads (value head h reads key head
    h // (Hv/Hk)); beta = sigmoid(in_proj_b(h)); g = -exp(A_log) ·
    softplus(in_proj_a(h) + dt_bias); gated delta rule per value head with
    state S [dk, dv]:  S ← exp(g_t)·S;  S ← S + k_t ⊗ beta_t(v_t − Sᵀk_t);
    o_t = Sᵀq_t; then per value head RMSNorm (eps rms_norm_eps) times the
    plain weight (ones-init, not zero-centred) times silu(z), z =
    in_proj_z(h); out_proj.
  * Dense MLP: down(silu(gate(h)) · up(h)).
  * MoE (qwen3_5_moe, every layer): router logits h·Wᵀ (mlp.gate.weight),
    softmax, top num_experts_per_tok, always renormalised to sum 1; experts
    fused as mlp.experts.gate_up_proj [E, 2·I, H] (rows 0..I-1 gate, I..2I-1
    up) and mlp.experts.down_proj [E, H, I], or per expert as
    mlp.experts.{e}.{gate,up,down}_proj.weight; plus the shared expert (a
    SwiGLU MLP of shared_expert_intermediate_size) times
    sigmoid(mlp.shared_expert_gate(h)) (a [1, H] linear).  Written as every
    expert applied to every token, weighted densely: no grouping.

Self-checks before anything is written: the chunked gated delta rule (chunk
64, the UT-transform form implemented here) equals the token-by-token
recurrence (< 1e-10) at lengths 1, 63, 64, 65, 200 with a non-zero initial
state; incremental decode (conv state + recurrent state + KV cache) equals the
one-shot forward (< 1e-12); the fused and per-expert MoE checkpoints give the
same logits; a LoRA adapter equals its merged weights; routing margins.

Run from the repository root:
    /usr/bin/python3 testdata/reference/qwen3_5_reference.py            # goldens
    /usr/bin/python3 testdata/reference/qwen3_5_reference.py --features # README's Δlogit table
"""

import argparse
import json
import math
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from reference import MIN_ROUTING_MARGIN, ROOT, read_safetensors, token_cases  # noqa: E402

MODELS = ["qwen3_5-tiny", "qwen3_5-tiny-bf16", "qwen3_5-moe-tiny", "qwen3_5-moe-tiny-perexpert"]
PREFIX = "model.language_model."
CHUNK = 64
L2_EPS = 1e-6


# ---------------------------------------------------------------- loading

class Config:
    """The text model's settings, from config.json's text_config."""

    def __init__(self, c):
        self.model_type = c["model_type"]
        if self.model_type not in ("qwen3_5", "qwen3_5_moe"):
            raise ValueError(f"model_type {self.model_type!r} is not Qwen3.5")
        t = c["text_config"]
        self.hidden = t["hidden_size"]
        self.layers = t["num_hidden_layers"]
        self.layer_types = t["layer_types"]
        assert len(self.layer_types) == self.layers
        self.heads = t["num_attention_heads"]
        self.kv_heads = t["num_key_value_heads"]
        self.head_dim = t["head_dim"]
        self.eps = t["rms_norm_eps"]
        rp = t["rope_parameters"]
        assert rp["rope_type"] == "default", rp
        self.theta = float(rp["rope_theta"])
        self.rot_dim = int(self.head_dim * rp.get("partial_rotary_factor", t.get("partial_rotary_factor", 1.0)))
        self.vocab = t["vocab_size"]
        self.tied = c.get("tie_word_embeddings", t.get("tie_word_embeddings", False))
        assert t.get("attn_output_gate", True) and not t.get("attention_bias", False)
        self.hk = t["linear_num_key_heads"]
        self.hv = t["linear_num_value_heads"]
        self.dk = t["linear_key_head_dim"]
        self.dv = t["linear_value_head_dim"]
        self.conv_k = t["linear_conv_kernel_dim"]
        self.moe = self.model_type == "qwen3_5_moe"
        self.num_experts = t.get("num_experts", 0) if self.moe else 0
        self.top_k = t.get("num_experts_per_tok", 0)


def load_model(name):
    model_dir = os.path.join(ROOT, "testdata", "models", name)
    with open(os.path.join(model_dir, "config.json")) as f:
        cfg = Config(json.load(f))
    index = os.path.join(model_dir, "model.safetensors.index.json")
    weights = {}
    if os.path.exists(index):
        with open(index) as f:
            for shard in sorted(set(json.load(f)["weight_map"].values())):
                weights.update(read_safetensors(os.path.join(model_dir, shard)))
    else:
        weights = read_safetensors(os.path.join(model_dir, "model.safetensors"))
    return cfg, weights


# ---------------------------------------------------------------- the gated delta rule

def delta_rule_recurrent(q, k, v, g, beta, state):
    """Token by token. q, k: [T, H, dk] (already normalised, scaled and
    repeated to the value heads); v: [T, H, dv]; g, beta: [T, H];
    state: [H, dk, dv]. Returns (o [T, H, dv], final state)."""
    out = []
    for t in range(q.shape[0]):
        state = state * g[t].exp()[:, None, None]
        pred = torch.einsum("hkv,hk->hv", state, k[t])
        state = state + k[t][:, :, None] * (beta[t][:, None] * (v[t] - pred))[:, None, :]
        out.append(torch.einsum("hkv,hk->hv", state, q[t]))
    return torch.stack(out), state


def unit_lower_inverse(a):
    """(I + a)^-1 for a strictly lower-triangular [..., C, C] by forward
    substitution: row i of the inverse is e_i − Σ_{j<i} a[i, j] · row j."""
    C = a.shape[-1]
    inv = torch.zeros_like(a)
    eye = torch.eye(C, dtype=a.dtype)
    rows = []
    for i in range(C):
        r = eye[i].expand(a.shape[:-2] + (C,)).clone()
        if i:
            r = r - torch.einsum("...j,...jc->...c", a[..., i, :i], torch.stack(rows, -2))
        rows.append(r)
    inv = torch.stack(rows, -2)
    return inv


def delta_rule_chunked(q, k, v, g, beta, state, chunk=CHUNK):
    """The same recurrence, a chunk of C tokens at a time (the UT transform).

    Inside a chunk starting from state S0, with c_t = Σ_{s≤t} g_s (cumulative
    log decay) and u_t the value actually written at t:
        u_t = beta_t (v_t − e^{c_t} S0ᵀk_t − Σ_{j<t} e^{c_t−c_j} (k_t·k_j) u_j)
    i.e. (I + A) U = beta ⊙ (V − e^{c} ⊙ K S0) with A[t, j] = beta_t
    e^{c_t−c_j} k_t·k_j (j < t), solved by the unit-lower inverse; then
        o_t   = e^{c_t} S0ᵀq_t + Σ_{j≤t} e^{c_t−c_j} (q_t·k_j) u_j
        S_end = e^{c_C} S0 + Σ_j e^{c_C−c_j} k_j u_jᵀ.
    """
    T = q.shape[0]
    outs = []
    for s in range(0, T, chunk):
        qc, kc, vc = (x[s:s + chunk].transpose(0, 1) for x in (q, k, v))   # [H, C, d]
        gc, bc = g[s:s + chunk].T, beta[s:s + chunk].T                     # [H, C]
        C = qc.shape[1]
        c = gc.cumsum(-1)                                                  # [H, C]
        diff = c[:, :, None] - c[:, None, :]                               # c_t − c_j
        lower = torch.ones(C, C, dtype=torch.bool).tril(-1)
        incl = torch.ones(C, C, dtype=torch.bool).tril()
        decay_strict = torch.where(lower, diff, torch.full_like(diff, -math.inf)).exp()
        decay_incl = torch.where(incl, diff, torch.full_like(diff, -math.inf)).exp()
        a = bc[:, :, None] * decay_strict * (kc @ kc.transpose(-1, -2))
        rhs = bc[:, :, None] * (vc - c.exp()[:, :, None] * (kc @ state))
        u = unit_lower_inverse(a) @ rhs                                    # [H, C, dv]
        o = c.exp()[:, :, None] * (qc @ state) + (decay_incl * (qc @ kc.transpose(-1, -2))) @ u
        outs.append(o.transpose(0, 1))
        end = c[:, -1:]                                                    # [H, 1]
        state = end.exp()[:, :, None] * state + ((end - c).exp()[:, :, None] * kc).transpose(-1, -2) @ u
    return torch.cat(outs), state


# ---------------------------------------------------------------- the model

def rms(x, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)


class Model:
    """A Qwen3.5 text model over one sequence (batch 1), float64.

    lora: {module name (full, as in the checkpoint, without .weight):
    (A [r, in], B [out, r], scale)}: y = x Wᵀ + scale (x Aᵀ) Bᵀ.
    ablate: names of features to switch off (for the README's table):
    conv (identity taps), decay (g = 0), beta (= 1), gated_norm (no
    silu(z)), qk_l2norm, qk_head_tiling (value head h reads key head h % Hk
    instead of h // (Hv/Hk)), output_gate, rope (none), partial_rotary
    (over all head_dim dims), zero_centred_norms (w instead of 1 + w),
    shared_expert_gate (= 1).
    """

    def __init__(self, cfg, weights, lora=None, ablate=(), dtype=torch.float64):
        self.cfg = cfg
        self.w = {k: v.to(dtype) for k, v in weights.items()
                  if k.startswith(PREFIX) or k == "lm_head.weight"}
        self.lora = lora or {}
        self.ablate = set(ablate)
        self.min_margin = math.inf
        rot = cfg.head_dim if "partial_rotary" in self.ablate else cfg.rot_dim
        self.inv_freq = (1.0 / cfg.theta ** (torch.arange(0, rot, 2, dtype=torch.float64) / rot)).to(dtype)

    def linear(self, x, name):
        y = x @ self.w[name + ".weight"].T
        if name in self.lora:
            a, b, scale = self.lora[name]
            y = y + scale * ((x @ a.T) @ b.T)
        return y

    def norm(self, x, name):
        w = self.w[name + ".weight"]
        scale = w if "zero_centred_norms" in self.ablate else 1.0 + w
        return rms(x, self.cfg.eps) * scale

    def rope(self, x, pos):
        """Rotate-half RoPE over the first len(inv_freq)·2 dims of x [T, n, d]."""
        rot = 2 * self.inv_freq.shape[0]
        ang = pos.to(self.inv_freq.dtype)[:, None] * self.inv_freq[None, :]
        cos = torch.cat([ang.cos(), ang.cos()], -1)[:, None, :]
        sin = torch.cat([ang.sin(), ang.sin()], -1)[:, None, :]
        xr, xp = x[..., :rot], x[..., rot:]
        half = rot // 2
        rotated = torch.cat([-xr[..., half:], xr[..., :half]], -1)
        return torch.cat([xr * cos + rotated * sin, xp], -1)

    # -------- token mixers

    def attention(self, h, p, pos, cache):
        c = self.cfg
        T = h.shape[0]
        qg = self.linear(h, p + "q_proj").view(T, c.heads, 2 * c.head_dim)
        q, gate = qg[..., :c.head_dim], qg[..., c.head_dim:].reshape(T, c.heads * c.head_dim)
        k = self.linear(h, p + "k_proj").view(T, c.kv_heads, c.head_dim)
        v = self.linear(h, p + "v_proj").view(T, c.kv_heads, c.head_dim)
        q, k = self.norm(q, p + "q_norm"), self.norm(k, p + "k_norm")
        if "rope" not in self.ablate:
            q, k = self.rope(q, pos), self.rope(k, pos)
        if cache is not None:
            if "k" in cache:
                k, v = torch.cat([cache["k"], k]), torch.cat([cache["v"], v])
            cache["k"], cache["v"] = k, v
        group = c.heads // c.kv_heads
        qh = q.view(T, c.kv_heads, group, c.head_dim)
        scores = torch.einsum("tjgd,sjd->jgts", qh, k) * c.head_dim ** -0.5
        mask = torch.arange(k.shape[0])[None, :] > pos[:, None]
        att = torch.einsum("jgts,sjd->tjgd", scores.masked_fill(mask, -math.inf).softmax(-1), v)
        att = att.reshape(T, c.heads * c.head_dim)
        if "output_gate" not in self.ablate:
            att = att * torch.sigmoid(gate)
        return self.linear(att, p + "o_proj")

    def deltanet(self, h, p, cache):
        c = self.cfg
        T = h.shape[0]
        kd, vd = c.hk * c.dk, c.hv * c.dv
        mixed = self.linear(h, p + "in_proj_qkv")                         # [T, 2kd + vd]
        K = c.conv_k
        past = cache.get("conv") if cache is not None else None
        if past is None:
            past = torch.zeros(K - 1, mixed.shape[1], dtype=mixed.dtype)
        padded = torch.cat([past, mixed])                                  # [K-1+T, C]
        if cache is not None:
            cache["conv"] = padded[-(K - 1):]
        wconv = self.w[p + "conv1d.weight"][:, 0, :]                       # [C, K]
        if "conv" in self.ablate:
            wconv = torch.zeros_like(wconv)
            wconv[:, -1] = 1.0
        # out[t] = Σ_i w[:, i] · x[t − (K−1) + i]
        conv = sum(wconv[:, i] * padded[i:i + T] for i in range(K))
        mixed = F.silu(conv)
        q = mixed[:, :kd].reshape(T, c.hk, c.dk)
        k = mixed[:, kd:2 * kd].reshape(T, c.hk, c.dk)
        v = mixed[:, 2 * kd:].reshape(T, c.hv, c.dv)
        if "qk_l2norm" not in self.ablate:
            q = q * torch.rsqrt(q.pow(2).sum(-1, keepdim=True) + L2_EPS)
            k = k * torch.rsqrt(k.pow(2).sum(-1, keepdim=True) + L2_EPS)
        q = q * c.dk ** -0.5
        rep = c.hv // c.hk
        if "qk_head_tiling" in self.ablate:      # the wrong mapping: value head h reads key head h % Hk
            q, k = q.repeat(1, rep, 1), k.repeat(1, rep, 1)
        else:
            q, k = q.repeat_interleave(rep, dim=1), k.repeat_interleave(rep, dim=1)
        beta = torch.sigmoid(self.linear(h, p + "in_proj_b"))
        if "beta" in self.ablate:
            beta = torch.ones_like(beta)
        a = self.linear(h, p + "in_proj_a")
        g = -self.w[p + "A_log"].exp() * F.softplus(a + self.w[p + "dt_bias"])
        if "decay" in self.ablate:
            g = torch.zeros_like(g)
        state = cache.get("state") if cache is not None else None
        if state is None:
            state = torch.zeros(c.hv, c.dk, c.dv, dtype=h.dtype)
        if T == 1 and cache is not None:
            o, state = delta_rule_recurrent(q, k, v, g, beta, state)
        else:
            o, state = delta_rule_chunked(q, k, v, g, beta, state)
        if cache is not None:
            cache["state"] = state
        z = self.linear(h, p + "in_proj_z").view(T, c.hv, c.dv)
        o = rms(o, c.eps) * self.w[p + "norm.weight"]
        if "gated_norm" not in self.ablate:
            o = o * F.silu(z)
        return self.linear(o.reshape(T, vd), p + "out_proj")

    # -------- channel mixers

    def swiglu(self, h, p):
        return self.linear(F.silu(self.linear(h, p + "gate_proj")) * self.linear(h, p + "up_proj"), p + "down_proj")

    def expert_weights(self, p, e):
        """(gate [I, H], up [I, H], down [H, I]) of expert e, from either layout."""
        fused = self.w.get(p + "experts.gate_up_proj")
        if fused is not None:
            I = fused.shape[1] // 2
            return fused[e, :I], fused[e, I:], self.w[p + "experts.down_proj"][e]
        x = f"{p}experts.{e}."
        return self.w[x + "gate_proj.weight"], self.w[x + "up_proj.weight"], self.w[x + "down_proj.weight"]

    def moe(self, h, p):
        c = self.cfg
        logits = self.linear(h, p + "gate")
        ranked = torch.sort(logits.detach(), -1, descending=True).values
        self.min_margin = min(self.min_margin, float((ranked[:, c.top_k - 1] - ranked[:, c.top_k]).min()))
        top_p, top_i = torch.topk(torch.softmax(logits, -1), c.top_k, dim=-1)
        top_p = top_p / top_p.sum(-1, keepdim=True)
        dense = (top_p[..., None] * F.one_hot(top_i, c.num_experts).to(h.dtype)).sum(1)   # [T, E]
        out = torch.zeros_like(h)
        for e in range(c.num_experts):
            wg, wu, wd = self.expert_weights(p, e)
            out = out + dense[:, e:e + 1] * ((F.silu(h @ wg.T) * (h @ wu.T)) @ wd.T)
        shared = self.swiglu(h, p + "shared_expert.")
        if "shared_expert_gate" not in self.ablate:
            shared = shared * torch.sigmoid(self.linear(h, p + "shared_expert_gate"))
        return out + shared

    # -------- the stack

    def forward(self, tokens, cache=None, hidden_states=None):
        """Logits [T, vocab] of tokens continuing cache (None: a fresh
        sequence; a dict: per-layer states, filled in and reused)."""
        c, w = self.cfg, self.w
        tokens = torch.as_tensor(tokens, dtype=torch.long)
        T = tokens.shape[0]
        past = cache.get("len", 0) if cache is not None else 0
        pos = torch.arange(past, past + T)
        x = w[PREFIX + "embed_tokens.weight"][tokens]
        if hidden_states is not None:
            hidden_states.append(x)
        for l in range(c.layers):
            p = f"{PREFIX}layers.{l}."
            lc = cache.setdefault(l, {}) if cache is not None else None
            h = self.norm(x, p + "input_layernorm")
            if c.layer_types[l] == "full_attention":
                x = x + self.attention(h, p + "self_attn.", pos, lc)
            elif c.layer_types[l] == "linear_attention":
                x = x + self.deltanet(h, p + "linear_attn.", lc)
            else:
                raise ValueError(f"layer {l}: layer type {c.layer_types[l]!r}")
            h = self.norm(x, p + "post_attention_layernorm")
            x = x + (self.moe(h, p + "mlp.") if c.moe else self.swiglu(h, p + "mlp."))
            if hidden_states is not None:
                hidden_states.append(x)
        if cache is not None:
            cache["len"] = past + T
        x = self.norm(x, PREFIX + "norm")
        if hidden_states is not None:
            hidden_states.append(x)
        head = w[PREFIX + "embed_tokens.weight"] if c.tied else w["lm_head.weight"]
        return x @ head.T


# ---------------------------------------------------------------- self-checks

def check_delta_rule():
    """Chunked == recurrent, from a non-zero initial state, dk ≠ dv."""
    g = torch.Generator().manual_seed(5)
    worst = 0.0
    for T in (1, 63, 64, 65, 200):
        H, dk, dv = 3, 16, 24
        q = F.normalize(torch.randn(T, H, dk, generator=g, dtype=torch.float64), dim=-1) * dk ** -0.5
        k = F.normalize(torch.randn(T, H, dk, generator=g, dtype=torch.float64), dim=-1)
        v = torch.randn(T, H, dv, generator=g, dtype=torch.float64)
        gg = -torch.rand(T, H, generator=g, dtype=torch.float64) * 0.5
        beta = torch.rand(T, H, generator=g, dtype=torch.float64)
        s0 = torch.randn(H, dk, dv, generator=g, dtype=torch.float64)
        o1, s1 = delta_rule_recurrent(q, k, v, gg, beta, s0)
        o2, s2 = delta_rule_chunked(q, k, v, gg, beta, s0)
        err = max((o1 - o2).abs().max().item(), (s1 - s2).abs().max().item())
        assert err < 1e-10, f"chunked gated delta rule differs from the recurrence at T={T} by {err}"
        worst = max(worst, err)
    return worst


def check_decode(cfg, model, name):
    tokens = token_cases(cfg.vocab)[2][1]
    with torch.no_grad():
        full = model.forward(tokens)
        cache = {}
        parts = [model.forward(tokens[:40], cache=cache)]
        for t in tokens[40:]:
            parts.append(model.forward([t], cache=cache))
        # And a second multi-token chunk after single steps (chunked path with an initial state).
        cache2 = {}
        parts2 = [model.forward(tokens[:5], cache=cache2), model.forward([tokens[5]], cache=cache2),
                  model.forward(tokens[6:64], cache=cache2)]
    err = (full - torch.cat(parts)).abs().max().item()
    err2 = (full - torch.cat(parts2)).abs().max().item()
    assert max(err, err2) < 1e-12, f"{name}: incremental decode differs from one-shot forward by {err}, {err2}"
    return max(err, err2)


def check_lora(cfg, weights, name):
    tokens = token_cases(cfg.vocab)[2][1]
    g = torch.Generator().manual_seed(0)
    lora, merged = {}, dict(weights)
    for mod in (f"{PREFIX}layers.0.linear_attn.in_proj_qkv", f"{PREFIX}layers.1.linear_attn.in_proj_a",
                f"{PREFIX}layers.3.self_attn.q_proj", f"{PREFIX}layers.2.mlp.shared_expert.up_proj"
                if cfg.moe else f"{PREFIX}layers.2.mlp.up_proj"):
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


# ---------------------------------------------------------------- goldens

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

    logits_by_case = {}
    for case_name, tokens in token_cases(cfg.vocab):
        hs = []
        with torch.no_grad():
            logits = model.forward(tokens, hidden_states=hs)
        logits_by_case[case_name] = logits
        case = {"name": case_name, "tokens": tokens, "logits": put(logits)}
        if len(tokens) <= 64:
            case["hidden_states"] = put(torch.stack(hs))
        cases.append(case)
    if cfg.moe:
        assert model.min_margin >= MIN_ROUTING_MARGIN, f"{name}: router logits within {model.min_margin:.3g} of a top-k tie"
    with open(os.path.join(out_dir, name + ".f32"), "wb") as f:
        f.write(b"".join(chunks))
    manifest = {
        "model": name,
        "model_dir": f"testdata/models/{name}",
        "data": name + ".f32",
        "format": "little-endian float32; offset and shape count float32 elements; arrays are row-major",
        "computed_in": "float64 by testdata/reference/qwen3_5_reference.py, rounded to float32",
        "hidden_states": "(cases up to 64 tokens) [num_hidden_layers + 2, T, hidden_size]: residual stream after the embedding, after each decoder layer, and after the final norm",
        "cases": cases,
    }
    with open(os.path.join(out_dir, name + ".json"), "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")
    return cfg, weights, model, logits_by_case


FEATURES = ["conv", "decay", "beta", "gated_norm", "qk_l2norm", "qk_head_tiling", "output_gate", "rope",
            "partial_rotary", "zero_centred_norms", "shared_expert_gate"]


def feature_effects(name):
    """max |Δlogit| over the 256-token case when each feature is switched off."""
    cfg, weights = load_model(name)
    tokens = token_cases(cfg.vocab)[3][1]
    with torch.no_grad():
        base = Model(cfg, weights).forward(tokens)
        out = {}
        for f in FEATURES:
            if f == "shared_expert_gate" and not cfg.moe:
                continue
            out[f] = (Model(cfg, weights, ablate=[f]).forward(tokens) - base).abs().max().item()
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(ROOT, "testdata", "golden"))
    ap.add_argument("--features", action="store_true", help="print max |Δlogit| per feature and exit")
    ap.add_argument("models", nargs="*", default=MODELS)
    args = ap.parse_args()
    torch.set_num_threads(1)
    if args.features:
        for name in args.models:
            print(name, {k: round(v, 3) for k, v in feature_effects(name).items()})
        return
    print(f"chunked vs recurrent gated delta rule (T = 1, 63, 64, 65, 200): max |diff| {check_delta_rule():.2e}")
    os.makedirs(args.out, exist_ok=True)
    written = {}
    for name in args.models:
        cfg, weights, model, logits = write_golden(name, args.out)
        written[name] = logits
        dec = check_decode(cfg, model, name)
        lo = check_lora(cfg, weights, name)
        extra = f", min routing margin {model.min_margin:.3f}" if cfg.moe else ""
        print(f"wrote testdata/golden/{name}.{{json,f32}}: decode vs one-shot {dec:.1e}, LoRA vs merged {lo:.1e}{extra}")
    if "qwen3_5-moe-tiny" in written and "qwen3_5-moe-tiny-perexpert" in written:
        a, b = written["qwen3_5-moe-tiny"], written["qwen3_5-moe-tiny-perexpert"]
        err = max((a[k] - b[k]).abs().max().item() for k in a)
        with open(os.path.join(args.out, "qwen3_5-moe-tiny.f32"), "rb") as fa, \
                open(os.path.join(args.out, "qwen3_5-moe-tiny-perexpert.f32"), "rb") as fb:
            same = fa.read() == fb.read()
        assert err == 0.0 and same, f"fused and per-expert checkpoints differ by {err} (same golden bytes: {same})"
        print("fused vs per-expert experts: identical logits and hidden states (max |diff| 0)")


if __name__ == "__main__":
    sys.exit(main())
