#!/usr/bin/env python3
"""Golden LoRA gradients for GLM-4.5 (glm4_moe-tiny), by autograd in float64.

An adapter on every linear layer that PEFT's target_modules="all-linear"
adapts on transformers' Glm4MoeForCausalLM (rank 4, alpha 8, A and B both
non-zero so that dL/dA is non-zero too), written in PEFT's layout under
testdata/lora/glm4_moe-tiny-all-linear/ (keys
base_model.model.model.layers.N.<module>.lora_{A,B}.weight), and in
testdata/golden/glm4_moe_lora_grad.{json,f32}, in qwen3_5_lora_grad.py's
format:

    L = Σ_{t=0}^{62} w_t · log softmax(logits_t)[tokens[t+1]]

over reference.py's len64 token case, with fixed weights w_t; the 63
log-probs, L, and dL/d(every lora_A and lora_B).

Which modules "all-linear" adapts: every torch.nn.Linear except lm_head:
self_attn.{q,k,v,o}_proj (q/k/v with their frozen biases), the dense
layers' mlp.{gate,up,down}_proj and the sparse layers'
mlp.shared_experts.{gate,up,down}_proj. Not adapted: the router mlp.gate (a
Glm4MoeTopkRouter holding a bare Parameter), the routed experts (3-D
Parameters in transformers' fused layout; PEFT reaches them only through
target_parameters), norms. The gradient of the layers below a sparse layer
flows through its routing weights (sigmoid, renormalised, scaled) into the
router's input, so those gradients check the router's backward too.

Self-check: central finite differences in float64 of L against autograd, for
sampled entries of every A and B and along one random direction.

Run from the repository root:  /usr/bin/python3 testdata/reference/glm4_moe_lora_grad.py
"""

import json
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from glm4_moe_reference import Model, load_model  # noqa: E402
from peft_check import read_adapter, write_safetensors  # noqa: E402
from qwen3_5_lora_grad import adapter_config  # noqa: E402
from common import Golden, finite_differences  # noqa: E402
from reference import MIN_ROUTING_MARGIN, ROOT, token_cases  # noqa: E402

MODEL = "glm4_moe-tiny"
RANK, ALPHA = 4, 8
SCALE = ALPHA / RANK
SEED = 20261205
FD_STEP = 1e-5
FD_ENTRIES = 2
MAX_NMSE = 1e-10


def modules(cfg):
    out = []
    for l in range(cfg.layers):
        p = f"model.layers.{l}."
        mlp = "mlp." if l < cfg.first_dense else "mlp.shared_experts."
        out += [p + "self_attn." + x for x in ("q_proj", "k_proj", "v_proj", "o_proj")]
        out += [p + mlp + x for x in ("gate_proj", "up_proj", "down_proj")]
    return out


def main():
    torch.set_num_threads(1)
    tokens = token_cases(512)[2][1]
    assert len(tokens) == 64
    golden = Golden()
    put = golden.put

    manifest = {
        "format": "little-endian float32; offset and shape count float32 elements; arrays are row-major",
        "computed_in": "float64 by testdata/reference/glm4_moe_lora_grad.py (glm4_moe_reference.py's model), rounded to float32",
        "loss": "L = sum over t = 0..62 of weights[t] * log_softmax(logits[t])[tokens[t+1]], logits of the 64-token forward",
        "rank": RANK, "lora_alpha": ALPHA, "scale": SCALE, "tokens": tokens,
        "data": "glm4_moe_lora_grad.f32", "models": [],
    }
    cfg, weights = load_model(MODEL)
    rng = np.random.Generator(np.random.PCG64(SEED))
    mods = modules(cfg)
    lora = {}
    for m in mods:
        out_f, in_f = weights[m + ".weight"].shape
        a = rng.normal(0, 0.1, size=(RANK, in_f)).astype(np.float32)
        b = rng.normal(0, 0.05, size=(out_f, RANK)).astype(np.float32)
        lora[m] = (torch.tensor(a, dtype=torch.float64, requires_grad=True),
                   torch.tensor(b, dtype=torch.float64, requires_grad=True), SCALE)
    arrays = {}
    for m in mods:
        for which, t in (("A", lora[m][0]), ("B", lora[m][1])):
            v = t.detach().numpy().astype("<f4")
            arrays[f"base_model.model.{m}.lora_{which}.weight"] = ("F32", v.shape, v.tobytes())
    adir = os.path.join(ROOT, "testdata", "lora", f"{MODEL}-all-linear")
    os.makedirs(adir, exist_ok=True)
    write_safetensors(os.path.join(adir, "adapter_model.safetensors"), arrays)
    with open(os.path.join(adir, "adapter_config.json"), "w") as f:
        json.dump(adapter_config(MODEL, sorted({m.rsplit(".", 1)[-1] for m in mods})), f, indent=2, sort_keys=True)
        f.write("\n")
    # Read back by peft_check.py's PEFT-convention reader over the language
    # model's modules: the fused checkpoint's names (its experts are 3-D
    # Parameters, no *_proj.weight a suffix could claim), below the MTP layer.
    _, fused = load_model(MODEL + "-fused")
    text = {k: v for k, v in fused.items() if not k.startswith(f"model.layers.{cfg.layers}.")}
    back = read_adapter(adir, text)
    assert sorted(k[:-len(".weight")] for k in back) == sorted(mods), "the adapter read back adapts other modules"
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
        "model": MODEL,
        "model_dir": f"testdata/models/{MODEL}",
        "weights": put(weights_t),
        "logprobs": put(logp.detach().numpy()),
        "loss": float(loss),
        "max_abs_logit_change_from_base": round(moved, 6),
        "finite_difference_check": {"step": FD_STEP, "entries": n_fd, "nmse": nmse,
                                    "direction_relative_error": dir_rel},
        "lora": entries,
    })
    print(f"{MODEL}: {len(mods)} adapted modules, L = {float(loss):.6f}, adapter moves logits by {moved:.3f}; "
          f"finite differences: NMSE {nmse:.2e} over {n_fd} entries, random direction rel. error {dir_rel:.2e}; "
          f"min routing margin {model.min_margin:.3g} (groups {model.min_group_margin:.3g})")
    golden.write(ROOT, "glm4_moe_lora_grad", manifest)


if __name__ == "__main__":
    sys.exit(main())
