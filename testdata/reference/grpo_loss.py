#!/usr/bin/env python3
"""Golden GRPO loss and LoRA gradients, by PyTorch autograd in float64.

For a tiny model with a LoRA adapter on every projection and a fixed batch of
rollouts (prompt, completion, advantage, behaviour log-probs, model-token mask,
truncation flag), computes for several [loss] settings the batch loss, the
gradient of every LoRA A and B, and the mean entropy and KL over trained
tokens, and writes testdata/golden/grpo_loss.{json,f32}. trainer's golden test
reproduces them with the explicit Go backward.

Semantics (the specification the Go code follows):
  sequence     s = prompt + completion; the forward runs on s[:-1] and row t
               predicts s[t+1], so completion token j is scored at row P-1+j.
  trained      completion token j of sample i is trained if mask[i][j] and not
               (mask_truncated and truncated[i]).
  weights      dapo: 1 / (trained tokens in the batch);
               grpo: 1 / (trained tokens of the sample) / (samples);
               dr_grpo: 1 / (samples * max_tokens).
  token loss   ratio = exp(logp - old); pg = -min(ratio*A, clip(ratio, 1-eps, 1+eps_high)*A);
               kl = exp(ref - logp) - (ref - logp) - 1 (ref = base model, adapter off);
               loss = sum over trained tokens of weight * (pg + beta*kl).

Run from the repository root:  /usr/bin/python3 testdata/reference/grpo_loss.py
                          and:  /usr/bin/python3 testdata/reference/grpo_loss.py --moe
                          and:  /usr/bin/python3 testdata/reference/grpo_loss.py --family
"""

import json
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from reference import MIN_ROUTING_MARGIN, ROOT, Model, load_model  # noqa: E402
import policy_loss  # noqa: E402

PROJ = ["self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj",
        "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj"]
RANK, SCALE = 4, 2.0
MODELS = ["qwen3-tiny", "llama-tiny"]
# With --moe: the Qwen3-MoE models, adapters on attention, on every
# expert's gate/up/down (PEFT's ...mlp.experts.{e}.gate_proj) and on the
# routers (mlp.gate), into grpo_loss_moe.{json,f32}; the extra cases add
# aux_coef × HF's load-balancing loss over the batch's tokens and sparse
# layers: num_experts · Σ_e f_e·P_e, f_e the fraction of (layer, token)
# top-k assignments to e, P_e the mean router probability of e.
MOE_MODELS = ["qwen3-moe-tiny", "qwen3-moe-tiny-dense"]
MOE_AUX_CASES = [
    {"name": "dapo-aux", "loss_type": "dapo", "epsilon": 0.2, "epsilon_high": 0.2, "beta": 0.0, "mask_truncated": False, "aux_coef": 0.5},
    {"name": "grpo-kl-aux", "loss_type": "grpo", "epsilon": 0.2, "epsilon_high": 0.28, "beta": 0.05, "mask_truncated": False, "aux_coef": 0.2},
]
CASES = [
    {"name": "dapo", "loss_type": "dapo", "epsilon": 0.2, "epsilon_high": 0.2, "beta": 0.0, "mask_truncated": False},
    {"name": "grpo-cliphigh", "loss_type": "grpo", "epsilon": 0.2, "epsilon_high": 0.28, "beta": 0.0, "mask_truncated": False},
    {"name": "dr_grpo-kl-masktrunc", "loss_type": "dr_grpo", "epsilon": 0.1, "epsilon_high": 0.3, "beta": 0.05, "mask_truncated": True},
    {"name": "dapo-kl", "loss_type": "dapo", "epsilon": 0.2, "epsilon_high": 0.2, "beta": 0.1, "mask_truncated": False},
]
MAX_TOKENS = 12
# With --family: the loss family beyond the PPO clip (GSPO, CISPO,
# prime-rl's DPPO+KL, the behaviour corrections) on qwen3-tiny, into
# grpo_loss_family.{json,f32}; the per-token terms are policy_loss.py's.
FAMILY_MODELS = ["qwen3-tiny"]
FAMILY_CASES = [dict(policy_loss.BASE, **c) for c in [
    {"name": "gspo-grpo", "loss_type": "grpo", "level": "sequence", "epsilon": 0.05, "epsilon_high": 0.08},
    {"name": "gspo-dapo-kl-sequence_mask", "loss_type": "dapo", "level": "sequence", "beta": 0.05, "is": "sequence_mask", "is_min": 0.6, "is_max": 1.6},
    {"name": "ppo-dapo-token_truncate", "loss_type": "dapo", "is": "token_truncate", "is_max": 1.2},
    {"name": "ppo-grpo-kl-sequence_truncate-masktrunc", "loss_type": "grpo", "beta": 0.05, "mask_truncated": True, "is": "sequence_truncate", "is_min": 0.5, "is_max": 1.5},
    {"name": "cispo", "loss_type": "cispo", "epsilon_high": 1.2},
    {"name": "cispo-token_mask", "loss_type": "cispo", "epsilon_high": 5.0, "is": "token_mask", "is_min": 0.8, "is_max": 1.25},
    {"name": "dppo", "loss_type": "dppo"},
    {"name": "dppo-kl-taus", "loss_type": "dppo", "beta": 0.05, "adv_tau": 0.5, "kl_tau": 0.1, "dppo_mask_low": 0.1, "dppo_mask_high": 0.3},
]]


def proj_dims(cfg, p):
    q, kv, h = cfg.heads * cfg.head_dim, cfg.kv_heads * cfg.head_dim, cfg.hidden
    inter = None
    return {"self_attn.q_proj": (h, q), "self_attn.k_proj": (h, kv), "self_attn.v_proj": (h, kv),
            "self_attn.o_proj": (q, h)}.get(p)


def modules(cfg, l):
    """The adapted modules of layer l: the seven projections, or in a
    sparse layer attention plus each expert's three."""
    if not cfg.sparse(l):
        return PROJ
    return PROJ[:4] + ["mlp.gate"] + [f"mlp.experts.{e}.{p}" for e in range(cfg.num_experts) for p in ("gate_proj", "up_proj", "down_proj")]


def load_balancing_loss(router_logits, cfg):
    """HF's load_balancing_loss_func over every (layer, token) row."""
    logits = torch.cat(router_logits)                            # [layers · tokens, experts]
    probs = torch.softmax(logits, -1)
    chosen = torch.topk(probs, cfg.top_k, dim=-1).indices
    mask = torch.nn.functional.one_hot(chosen, cfg.num_experts).to(probs.dtype)  # [N, k, E]
    return cfg.num_experts * (mask.mean(0) * probs.mean(0)[None, :]).sum()


def main():
    moe, family = "--moe" in sys.argv[1:], "--family" in sys.argv[1:]
    models, out_name = (MOE_MODELS, "grpo_loss_moe") if moe else (MODELS, "grpo_loss")
    if family:
        models, out_name = FAMILY_MODELS, "grpo_loss_family"
    out_dir = os.path.join(ROOT, "testdata", "golden")
    chunks, offset = [], 0

    def put(a):
        nonlocal offset
        a = np.ascontiguousarray(np.asarray(a, dtype="<f4"))
        entry = {"offset": offset, "shape": list(a.shape)}
        chunks.append(a.tobytes())
        offset += a.size
        return entry

    manifest = {"rank": RANK, "scale": SCALE, "max_tokens": MAX_TOKENS, "models": []}
    for mi, name in enumerate(models):
        cfg, weights = load_model(os.path.join(ROOT, "testdata", "models", name))
        rng = np.random.Generator(np.random.PCG64(4242 + mi))
        lora, lora_entries = {}, []
        for l in range(cfg.layers):
            for p in modules(cfg, l):
                key = f"model.layers.{l}.{p}"
                out_f, in_f = weights[key + ".weight"].shape
                a = rng.normal(0, 0.1, size=(RANK, in_f)).astype(np.float32)
                b = rng.normal(0, 0.1, size=(out_f, RANK)).astype(np.float32)
                lora_entries.append({"module": key, "A": put(a), "B": put(b)})
                lora[key + ".weight"] = (torch.tensor(a, dtype=torch.float64, requires_grad=True),
                                         torch.tensor(b, dtype=torch.float64, requires_grad=True), SCALE)
        policy = Model(cfg, weights, lora=lora)
        base = Model(cfg, weights)

        # The batch: 2 groups of 2 rollouts; one multi-turn (env tokens
        # masked), one truncated.
        samples = []
        for i in range(4):
            P, C = int(rng.integers(3, 7)), int(rng.integers(4, 10))
            s = {"prompt": rng.integers(0, cfg.vocab, size=P).tolist(),
                 "completion": rng.integers(0, cfg.vocab, size=C).tolist(),
                 "advantage": float(np.float32(rng.normal())),
                 "truncated": i == 2,
                 "model_mask": [True] * C}
            if i == 1:
                s["model_mask"] = [j < 2 or j >= 5 for j in range(C)]
            samples.append(s)

        def logps(model, s):
            seq = s["prompt"] + s["completion"]
            logits = model.forward(seq[:-1])
            lp = torch.log_softmax(logits, -1)
            rows = torch.arange(len(s["prompt"]) - 1, len(seq) - 1)
            tgt = torch.tensor(s["completion"])
            full = torch.log_softmax(logits[rows], -1)
            ent = -(full.exp() * full).sum(-1)
            return lp[rows, tgt], ent

        # Behaviour log-probs: the current policy's plus noise, so that some
        # ratios leave the clip range on either side.
        for s in samples:
            with torch.no_grad():
                lp, _ = logps(policy, s)
            noise = rng.normal(0, 0.25, size=len(s["completion"]))
            s["old_logp"] = [float(np.float32(x)) for x in (lp.numpy() + noise)]

        cases = []
        for case in FAMILY_CASES if family else CASES + (MOE_AUX_CASES if moe else []):
            for a, b, _ in lora.values():
                a.grad, b.grad = None, None
            aux_coef = case.get("aux_coef", 0.0)
            policy.router_logits = [] if aux_coef else None
            trained = [[m and not (case["mask_truncated"] and s["truncated"]) for m in s["model_mask"]] for s in samples]
            total = sum(sum(t) for t in trained)
            loss = torch.zeros((), dtype=torch.float64)
            ent_sum, kl_sum = 0.0, 0.0
            for s, tr in zip(samples, trained):
                lp, ent = logps(policy, s)
                with torch.no_grad():
                    ref, _ = logps(base, s)
                old = torch.tensor(s["old_logp"], dtype=torch.float64)
                adv = s["advantage"]
                ratio = torch.exp(lp - old)
                clipped = torch.clamp(ratio, 1 - case["epsilon"], 1 + case["epsilon_high"])
                pg = -torch.minimum(ratio * adv, clipped * adv)
                d = ref - lp
                kl = torch.exp(d) - d - 1
                tok = pg + case["beta"] * kl
                if family:
                    m = torch.tensor(tr, dtype=torch.float64)
                    toks = {"behaviour": s["old_logp"], "ref": ref.tolist(), "advantage": adv}
                    frozen = {"old": lp.detach().clone() if case["is"] != "none" else old}
                    tok = policy_loss.token_terms(case, lp, toks, m, frozen)[0] if sum(tr) else tok
                if case["loss_type"] in ("dapo", "cispo", "dppo"):
                    w = 1.0 / total
                elif case["loss_type"] == "grpo":
                    w = 1.0 / sum(tr) / len(samples) if sum(tr) else 0.0
                else:
                    w = 1.0 / (len(samples) * MAX_TOKENS)
                m = torch.tensor(tr, dtype=torch.float64)
                loss = loss + (tok * m).sum() * w
                ent_sum += float((ent.detach() * m).sum())
                kl_sum += float((kl.detach() * m).sum())
            aux = None
            if aux_coef:
                aux = load_balancing_loss(policy.router_logits, cfg)
                loss = loss + aux_coef * aux
                policy.router_logits = None
            loss.backward()
            grads = [{"module": e["module"], "A": put(lora[e["module"] + ".weight"][0].grad.numpy()),
                      "B": put(lora[e["module"] + ".weight"][1].grad.numpy())} for e in lora_entries]
            extra = {"aux_loss": float(aux)} if aux is not None else {}
            cases.append(dict(case, loss=float(loss), trained_tokens=total,
                              entropy_mean=ent_sum / total, kl_mean=kl_sum / total, grads=grads, **extra))
        # No golden may hinge on a routing decision float32 could flip.
        assert policy.min_margin >= MIN_ROUTING_MARGIN and base.min_margin >= MIN_ROUTING_MARGIN, \
            f"{name}: router logits within {min(policy.min_margin, base.min_margin):.3g} of a top-k tie"
        manifest["models"].append({"model": name, "lora": lora_entries, "samples": samples, "cases": cases})

    manifest["data"] = out_name + ".f32"
    with open(os.path.join(out_dir, out_name + ".f32"), "wb") as f:
        f.write(b"".join(chunks))
    with open(os.path.join(out_dir, out_name + ".json"), "w") as f:
        json.dump(manifest, f, indent=1)
    print(f"wrote {out_name}.json/.f32 ({offset * 4} bytes)")


if __name__ == "__main__":
    main()
