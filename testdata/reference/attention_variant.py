#!/usr/bin/env python3
"""Golden attention with sinks and a sliding window, written from
transformers' gpt-oss eager attention (models/gpt_oss/modeling_gpt_oss.py:
scaled scores plus the mask, each head's sink logit concatenated as a last
column, the row max subtracted, softmax, the sink column dropped, times V)
and masking_utils (causal kv_idx <= q_idx, sliding_window_overlay
kv_idx > q_idx - sliding_window), in float64 with autograd.

One sequence of 7 tokens, 4 query heads over 2 KV heads (GQA 2), head dim
3, scale 0.7: the outputs, the log-sum-exp over the combined logits (sink
included) and the gradients of sum(r * out) with respect to q, k and v,
for windows 0 (full), 1, 3 and 7, with and without sinks. Writes
testdata/golden/attention_variant.json; kernels/kerneltest's
TestRefAttentionVariantMatchesTorch holds RefAttentionVariant and
RefAttentionBackwardVariant to it.

Run from the repository root:  /usr/bin/python3 testdata/reference/attention_variant.py
"""
import json
import os

import numpy as np
import torch

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
rng = np.random.Generator(np.random.PCG64(2026))
T, NH, NKV, HD, SCALE = 7, 4, 2, 3, 0.7
q0 = rng.normal(0, 1.5, size=(T, NH, HD))
k0 = rng.normal(0, 1.5, size=(T, NKV, HD))
v0 = rng.normal(0, 1.0, size=(T, NKV, HD))
r = rng.normal(0, 1.0, size=(T, NH, HD))
sinks0 = rng.normal(0, 2.0, size=(NH,))


def attend(window, with_sinks):
    q = torch.tensor(q0, requires_grad=True)
    k = torch.tensor(k0, requires_grad=True)
    v = torch.tensor(v0, requires_grad=True)
    # [heads, T, HD], the KV heads repeated for their query heads.
    qh = q.permute(1, 0, 2)
    kh = k.permute(1, 0, 2).repeat_interleave(NH // NKV, dim=0)
    vh = v.permute(1, 0, 2).repeat_interleave(NH // NKV, dim=0)
    w = qh @ kh.transpose(1, 2) * SCALE
    qi = torch.arange(T)[:, None]
    ki = torch.arange(T)[None, :]
    allowed = ki <= qi
    if window > 0:
        allowed = allowed & (ki > qi - window)
    w = w.masked_fill(~allowed, float("-inf"))
    if with_sinks:
        s = torch.tensor(sinks0).reshape(NH, 1, 1).expand(NH, T, 1)
        combined = torch.cat([w, s], dim=-1)
    else:
        combined = w
    lse = torch.logsumexp(combined, dim=-1)  # [heads, T]
    combined = combined - combined.max(dim=-1, keepdim=True).values
    probs = torch.softmax(combined, dim=-1)
    if with_sinks:
        probs = probs[..., :-1]
    out = (probs @ vh).permute(1, 0, 2)  # [T, heads, HD]
    (out * torch.tensor(r)).sum().backward()
    return {
        "window": window,
        "sinks": with_sinks,
        "out": out.detach().reshape(-1).tolist(),
        "lse": lse.detach().permute(1, 0).reshape(-1).tolist(),
        "dq": q.grad.reshape(-1).tolist(),
        "dk": k.grad.reshape(-1).tolist(),
        "dv": v.grad.reshape(-1).tolist(),
    }


golden = {
    "tokens": T, "heads": NH, "kv_heads": NKV, "head_dim": HD, "scale": SCALE,
    "q": q0.reshape(-1).tolist(), "k": k0.reshape(-1).tolist(), "v": v0.reshape(-1).tolist(),
    "r": r.reshape(-1).tolist(), "sink_logits": sinks0.tolist(),
    "cases": [attend(w, s) for w in (0, 1, 3, 7) for s in (False, True)],
}
path = os.path.join(ROOT, "testdata", "golden", "attention_variant.json")
with open(path, "w") as f:
    json.dump(golden, f)
print("wrote", path)
