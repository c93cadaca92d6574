#!/usr/bin/env python3
"""Golden LoRA gradients for Nemotron-3 (nemotron_h-tiny, nemotron_h-latent-tiny), by autograd in float64.

An adapter on every linear layer that PEFT's target_modules="all-linear"
adapts on transformers' NemotronHForCausalLM (rank 4, alpha 8, A and B both
non-zero so that dL/dA is non-zero too), in
testdata/golden/nemotron_h_lora_grad.{json,f32} (and for the latent MoE
nemotron_h_latent_lora_grad.{json,f32}), in qwen3_5_lora_grad.py's format:

    L = Σ_{t=0}^{62} w_t · log softmax(logits_t)[tokens[t+1]]

over reference.py's len64 token case, with fixed weights w_t; the 63
log-probs, L, and dL/d(every lora_A and lora_B).

Which modules "all-linear" adapts: every torch.nn.Linear except lm_head:
the Mamba-2 mixers' in_proj and out_proj, attention's q/k/v/o_proj, the
dense layers' up/down_proj and the MoE layers' shared_experts.up/down_proj
(and a latent MoE's fc1_latent_proj and fc2_latent_proj, nn.Linears too).
Not adapted: the router (NemotronHTopkRouter holds a bare Parameter), the
routed experts (NemotronHExperts holds 3-D up_proj/down_proj Parameters:
PEFT reaches them only through target_parameters), the conv1d (a Conv1d),
norms. The gradient of the layers below the MoE layer flows through its
routing weights into the router's input, and every gradient below a Mamba
layer through its scan and conv.

Self-check: central finite differences in float64 of L against autograd, for
sampled entries of every A and B and along one random direction.

Run from the repository root:  /usr/bin/python3 testdata/reference/nemotron_h_lora_grad.py
"""

import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from nemotron_h_reference import Model, load_model  # noqa: E402
from common import Golden, finite_differences  # noqa: E402
from reference import MIN_ROUTING_MARGIN, ROOT, token_cases  # noqa: E402

# Each model and the golden file it gets.
MODELS = [("nemotron_h-tiny", "nemotron_h_lora_grad"), ("nemotron_h-latent-tiny", "nemotron_h_latent_lora_grad")]
RANK, ALPHA = 4, 8
SCALE = ALPHA / RANK
SEED = 20261205
FD_STEP = 1e-5
FD_ENTRIES = 2
MAX_NMSE = 1e-10


def modules(cfg):
    out = []
    for l, kind in enumerate(cfg.pattern):
        p = f"backbone.layers.{l}.mixer."
        out += [p + x for x in {"M": ("in_proj", "out_proj"), "*": ("q_proj", "k_proj", "v_proj", "o_proj"),
                                "E": ("shared_experts.up_proj", "shared_experts.down_proj")
                                + (("fc1_latent_proj", "fc2_latent_proj") if cfg.latent is not None else ()),
                                "-": ("up_proj", "down_proj")}[kind]]
    return out


def main():
    torch.set_num_threads(1)
    for model, out_name in MODELS:
        write(model, out_name)


def write(model_name, out_name):
    tokens = token_cases(512)[2][1]
    assert len(tokens) == 64
    golden = Golden()
    put = golden.put

    manifest = {
        "format": "little-endian float32; offset and shape count float32 elements; arrays are row-major",
        "computed_in": "float64 by testdata/reference/nemotron_h_lora_grad.py (nemotron_h_reference.py's model), rounded to float32",
        "loss": "L = sum over t = 0..62 of weights[t] * log_softmax(logits[t])[tokens[t+1]], logits of the 64-token forward",
        "rank": RANK, "lora_alpha": ALPHA, "scale": SCALE, "tokens": tokens,
        "data": out_name + ".f32", "models": [],
    }
    cfg, weights = load_model(model_name)
    rng = np.random.Generator(np.random.PCG64(SEED))
    mods = modules(cfg)
    lora = {}
    for m in mods:
        out_f, in_f = weights[m + ".weight"].shape
        a = rng.normal(0, 0.1, size=(RANK, in_f)).astype(np.float32)
        b = rng.normal(0, 0.05, size=(out_f, RANK)).astype(np.float32)
        lora[m] = (torch.tensor(a, dtype=torch.float64, requires_grad=True),
                   torch.tensor(b, dtype=torch.float64, requires_grad=True), SCALE)
    weights_t = rng.normal(0, 1, size=63).astype(np.float32)
    wt = torch.tensor(weights_t, dtype=torch.float64)
    tgt = torch.tensor(tokens[1:])
    model = Model(cfg, weights, lora=lora)

    def loss_fn():
        lp = torch.log_softmax(model.forward(tokens), -1)[torch.arange(63), tgt]
        return (lp * wt).sum(), lp

    loss, logp = loss_fn()
    loss.backward()
    params = [(m, which, t) for m in mods for which, t in (("A", lora[m][0]), ("B", lora[m][1]))]
    with torch.no_grad():
        base = Model(cfg, weights).forward(tokens)
        moved = (model.forward(tokens) - base).abs().max().item()
    assert moved > 0.05, f"the adapter moves the logits by only {moved}"
    with torch.no_grad():
        n_fd, nmse, dir_rel = finite_differences(loss_fn, params, rng, FD_STEP, FD_ENTRIES)
    assert nmse < MAX_NMSE and dir_rel < 1e-8, f"gradient vs finite differences: NMSE {nmse:.3g}, direction rel {dir_rel:.3g}"
    assert model.min_margin >= MIN_ROUTING_MARGIN and model.min_group_margin >= MIN_ROUTING_MARGIN, \
        f"a routing decision within {min(model.min_margin, model.min_group_margin):.3g} of a tie"
    zero = [f"{m}.{w}" for m, w, t in params if not t.grad.abs().max() > 0]
    assert not zero, f"zero gradients {zero}"
    entries = [{"module": m,
                "A": put(lora[m][0].detach().numpy()), "B": put(lora[m][1].detach().numpy()),
                "grad_A": put(lora[m][0].grad.numpy()), "grad_B": put(lora[m][1].grad.numpy())}
               for m in mods]
    manifest["models"].append({
        "model": model_name,
        "model_dir": f"testdata/models/{model_name}",
        "weights": put(weights_t),
        "logprobs": put(logp.detach().numpy()),
        "loss": float(loss),
        "max_abs_logit_change_from_base": round(moved, 6),
        "finite_difference_check": {"step": FD_STEP, "entries": n_fd, "nmse": nmse,
                                    "direction_relative_error": dir_rel},
        "lora": entries,
    })
    print(f"{model_name}: {len(mods)} adapted modules, L = {float(loss):.6f}, adapter moves logits by {moved:.3f}; "
          f"finite differences: NMSE {nmse:.2e} over {n_fd} entries, random direction rel. error {dir_rel:.2e}; "
          f"min routing margin {model.min_margin:.3g} (groups {model.min_group_margin:.3g})")
    golden.write(ROOT, out_name, manifest)


if __name__ == "__main__":
    sys.exit(main())
