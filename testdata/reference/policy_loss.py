#!/usr/bin/env python3
"""Golden policy losses and their token gradients, by PyTorch autograd in float64.

For a fixed batch of rollouts (per completion token: the policy's log-prob, the
sampler's log-prob, the KL reference's; per rollout: advantage, model-token mask,
truncation flag), computes for each [loss] setting the batch loss and
d loss / d logp for every completion token (the gradient the LoRA backward
starts from), with the metrics grpo reports, and writes
testdata/golden/policy_loss.json. loss's TestPolicyLossMatchesPyTorch
reproduces them with the PolicyLoss op. Each gradient is also checked here
against central differences of the loss (stop-gradient factors held fixed).

The formulas are written from the definitions the config keys name:
  trained      token j of rollout i if mask[i][j] and not (mask_truncated and truncated[i]).
  pi_old       TRL's old_per_token_logps: the sampler's log-probs without a correction
               (prime-rl's trainer-vs-inference ratio); with one, the trainer's own,
               detached (one update per batch).
  ppo          TRL loss_type dapo/grpo/dr_grpo, importance_sampling_level "token":
               -min(r*A, clamp(r, 1-eps, 1+eps_high)*A), r = exp(logp - old).
  gspo         importance_sampling_level "sequence": r = exp(masked mean of (logp - old)).
  cispo        TRL loss_type cispo: -clamp(r, max=eps_high).detach() * A * logp.
  dppo         prime-rl's default_loss_fn against the sampler's log-probs, with
               dppo_mask_low/high, adv_tau, kl_tau.
  correction   TRL's vllm_importance_sampling_mode: exp((old - sampler)), per token or
               summed over the rollout, truncated (clamp) or masked (0 outside the range),
               detached, multiplying the policy term.
  kl           beta * (exp(ref - logp) - (ref - logp) - 1), added after the correction.
  aggregation  dapo/cispo/dppo: sum / trained tokens of the batch; grpo: per rollout
               mean, then mean over rollouts; dr_grpo: sum / (rollouts * max_tokens).

Run from the repository root:  /usr/bin/python3 testdata/reference/policy_loss.py
"""

import json
import os

import numpy as np
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MAX_TOKENS = 12

BASE = {"epsilon": 0.2, "epsilon_high": 0.28, "beta": 0.0, "level": "token", "mask_truncated": False,
        "is": "none", "is_min": 0.0, "is_max": 3.0,
        "dppo_mask_low": 0.2, "dppo_mask_high": 0.2, "adv_tau": 1.0, "kl_tau": 1e-3}
CASES = [
    dict(BASE, name="ppo-dapo", loss_type="dapo"),
    dict(BASE, name="ppo-dapo-token_truncate", loss_type="dapo", **{"is": "token_truncate", "is_max": 1.2}),
    dict(BASE, name="ppo-grpo-token_mask-kl", loss_type="grpo", beta=0.05, **{"is": "token_mask", "is_min": 0.8, "is_max": 1.25}),
    dict(BASE, name="ppo-dr_grpo-sequence_truncate", loss_type="dr_grpo", **{"is": "sequence_truncate", "is_min": 0.5, "is_max": 1.5}),
    dict(BASE, name="ppo-dapo-sequence_mask-masktrunc", loss_type="dapo", mask_truncated=True, **{"is": "sequence_mask", "is_min": 0.6, "is_max": 1.6}),
    dict(BASE, name="gspo-grpo", loss_type="grpo", level="sequence", epsilon=0.05, epsilon_high=0.08),
    dict(BASE, name="gspo-dapo-kl", loss_type="dapo", level="sequence", epsilon=0.03, epsilon_high=0.04, beta=0.05),
    dict(BASE, name="gspo-dr_grpo-token_truncate", loss_type="dr_grpo", level="sequence", **{"is": "token_truncate", "is_max": 1.2}),
    dict(BASE, name="gspo-dapo-sequence_mask", loss_type="dapo", level="sequence", **{"is": "sequence_mask", "is_min": 0.6, "is_max": 1.6}),
    dict(BASE, name="cispo", loss_type="cispo", epsilon_high=1.2),
    dict(BASE, name="cispo-kl-token_mask", loss_type="cispo", epsilon_high=5.0, beta=0.05, **{"is": "token_mask", "is_min": 0.8, "is_max": 1.25}),
    dict(BASE, name="dppo", loss_type="dppo"),
    dict(BASE, name="dppo-kl-taus", loss_type="dppo", beta=0.05, adv_tau=0.5, kl_tau=0.1, dppo_mask_low=0.1, dppo_mask_high=0.3),
]


def make_samples(rng):
    """Six rollouts, advantages of alternating sign; rollout 1 has env tokens
    (masked), rollout 3 is truncated. Log-probs are near 0 for some tokens so
    that probability shifts cross DPPO's bands, and the sampler's differ by
    noise so that ratios leave the clip and correction ranges."""
    samples = []
    for i in range(6):
        c = int(rng.integers(3, 10))
        logp = np.where(rng.random(c) < 0.5, -rng.uniform(0.02, 0.8, c), -rng.uniform(0.8, 6, c))
        s = {"logp": logp, "behaviour": logp + rng.normal(0, 0.35, c), "ref": logp + rng.normal(0, 0.5, c),
             "advantage": abs(float(rng.normal())) * (1 if i % 2 == 0 else -1), "truncated": i == 3, "model_mask": [True] * c}
        if i == 1:
            s["model_mask"] = [j < 2 or j >= 4 for j in range(c)]
        for k in ("logp", "behaviour", "ref"):
            s[k] = [float(np.float32(x)) for x in s[k]]
        s["advantage"] = float(np.float32(s["advantage"]))
        samples.append(s)
    return samples


def correction(case, old, behaviour, m):
    """The detached behaviour correction per token, and its cut side."""
    d = (old - behaviour) * m
    if case["is"].startswith("sequence"):
        d = d.sum() * torch.ones_like(d)
    rho = torch.exp(d)
    side = torch.where(rho > case["is_max"], 1.0, torch.where(rho < case["is_min"], -1.0, 0.0))
    if case["is"] == "none":
        return torch.ones_like(rho), torch.zeros_like(rho)
    if case["is"].endswith("truncate"):
        return torch.clamp(rho, case["is_min"], case["is_max"]), side
    return torch.where(side == 0, rho, 0.0), side


def token_terms(case, lp, s, m, frozen):
    """Per-token loss (unweighted) of one rollout and its clip sides.
    frozen holds the stop-gradient values (pi_old, CISPO's weight) so that
    finite differences can keep them fixed."""
    behaviour = torch.tensor(s["behaviour"], dtype=torch.float64)
    ref = torch.tensor(s["ref"], dtype=torch.float64)
    a = s["advantage"]
    old = frozen["old"]
    rho, is_side = correction(case, old, behaviour, m)
    t = case["loss_type"]
    if t == "dppo":
        log_ratio = lp - behaviour
        ratio = torch.exp(log_ratio)
        dp = torch.exp(lp) - torch.exp(behaviour)
        high, low = dp > case["dppo_mask_high"], dp < -case["dppo_mask_low"]
        masked = torch.where(torch.tensor(a > 0), high, low)
        pg = -(~masked).double() * case["adv_tau"] * a * ratio + case["kl_tau"] * log_ratio ** 2
        side = torch.where(masked, 1.0 if a > 0 else -1.0, 0.0)
    elif t == "cispo":
        ratio = torch.exp(lp - old)
        w = frozen.get("cispo_w")
        if w is None:
            w = torch.clamp(ratio, max=case["epsilon_high"]).detach()
        pg = -w * a * lp
        side = (ratio > case["epsilon_high"]).double()
    else:
        log_ratio = lp - old
        if case["level"] == "sequence":
            log_ratio = ((log_ratio * m).sum() / m.sum()) * torch.ones_like(lp)
        ratio = torch.exp(log_ratio)
        lo, hi = 1 - case["epsilon"], 1 + case["epsilon_high"]
        clipped = torch.clamp(ratio, lo, hi)
        pg = -torch.minimum(ratio * a, clipped * a)
        side = torch.where(clipped * a < ratio * a, torch.where(ratio < lo, -1.0, 1.0), 0.0)
    d = ref - lp
    kl = torch.exp(d) - d - 1
    lb = lp - behaviour
    mismatch = torch.exp(lb) - lb - 1
    return rho * pg + case["beta"] * kl, side.detach(), is_side, mismatch.detach()


def batch_loss(case, samples, lps, frozens):
    trained = [torch.tensor([mm and not (case["mask_truncated"] and s["truncated"]) for mm in s["model_mask"]], dtype=torch.float64)
               for s in samples]
    total = sum(float(m.sum()) for m in trained)
    loss = torch.zeros((), dtype=torch.float64)
    sums = {"clip_low": 0.0, "clip_high": 0.0, "is_low": 0.0, "is_high": 0.0, "mismatch_kl": 0.0}
    for s, m, lp, fz in zip(samples, trained, lps, frozens):
        if m.sum() == 0:
            continue
        tok, side, is_side, mismatch = token_terms(case, lp, s, m, fz)
        if case["loss_type"] in ("dapo", "cispo", "dppo"):
            w = 1.0 / total
        elif case["loss_type"] == "grpo":
            w = 1.0 / float(m.sum()) / len(samples)
        else:
            w = 1.0 / (len(samples) * MAX_TOKENS)
        loss = loss + (tok * m).sum() * w
        sums["clip_low"] += float(((side < 0) * m).sum())
        sums["clip_high"] += float(((side > 0) * m).sum())
        sums["is_low"] += float(((is_side < 0) * m).sum())
        sums["is_high"] += float(((is_side > 0) * m).sum())
        sums["mismatch_kl"] += float((mismatch * m).sum())
    return loss, {k: v / total for k, v in sums.items()}, total


def frozen_values(case, samples, lps):
    out = []
    for s, lp in zip(samples, lps):
        fz = {"old": lp.detach().clone() if case["is"] != "none" else torch.tensor(s["behaviour"], dtype=torch.float64)}
        if case["loss_type"] == "cispo":
            fz["cispo_w"] = torch.clamp(torch.exp(lp.detach() - fz["old"]), max=case["epsilon_high"])
        out.append(fz)
    return out


def main():
    rng = np.random.Generator(np.random.PCG64(2929))
    samples = make_samples(rng)
    cases = []
    for case in CASES:
        lps = [torch.tensor(s["logp"], dtype=torch.float64, requires_grad=True) for s in samples]
        frozen = frozen_values(case, samples, lps)
        loss, metrics, total = batch_loss(case, samples, lps, frozen)
        loss.backward()
        grads = [lp.grad.tolist() if lp.grad is not None else [0.0] * len(lp) for lp in lps]
        # Central differences, with pi_old and CISPO's weight held where
        # the gradient stops; h = 1e-6 moves no decision of these inputs.
        h, worst = 1e-6, 0.0
        for i, lp in enumerate(lps):
            for j in range(len(lp)):
                def at(x):
                    moved = [l.detach().clone() for l in lps]
                    moved[i][j] = x
                    return float(batch_loss(case, samples, moved, frozen)[0])
                x = float(lp[j])
                fd = (at(x + h) - at(x - h)) / (2 * h)
                worst = max(worst, abs(fd - grads[i][j]) / max(1e-3, abs(grads[i][j])))
        assert worst < 1e-6, f"{case['name']}: autograd and central differences differ by {worst:.2g} relative"
        cases.append(dict(case, loss=float(loss), grads=grads, trained_tokens=total, fd_rel_err=worst, **metrics))
        print(f"{case['name']}: loss {float(loss):.6g}, fd rel err {worst:.1g}, clip {metrics['clip_low']:.2f}/{metrics['clip_high']:.2f}, "
              f"is {metrics['is_low']:.2f}/{metrics['is_high']:.2f}")
    out = os.path.join(ROOT, "testdata", "golden", "policy_loss.json")
    with open(out, "w") as f:
        json.dump({"max_tokens": MAX_TOKENS, "samples": samples, "cases": cases}, f, indent=1)
    print("wrote", out)


if __name__ == "__main__":
    main()
