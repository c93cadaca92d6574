#!/usr/bin/env python3
"""Golden LoRA gradients for gpt-oss (gpt_oss-tiny), by autograd in float64.

An adapter as PEFT builds it on transformers' GptOssForCausalLM with
target_modules = [q_proj, k_proj, v_proj, o_proj] and target_parameters =
[mlp.experts.gate_up_proj, mlp.experts.down_proj] (rank 4, alpha 8, A and B
both non-zero), written in PEFT's layout under
testdata/lora/gpt_oss-tiny-experts/ and in
testdata/golden/gpt_oss_lora_grad.{json,f32}:

    L = Σ_{t=0}^{62} w_t · log softmax(logits_t)[tokens[t+1]]

over reference.py's len64 token case, with fixed weights w_t; the 63
log-probs, L, and dL/d(every lora_A and lora_B).

PEFT's expert adapters (lora.ParamWrapper over a 3-D Parameter [E, d1, d2];
GptOssExperts sets is_transposed, so in = d1 and out = d2): lora_A.weight
[E·r, in] and lora_B.weight [out, r·E], expert e's update scale·B_e·A_e with
A_e rows e·r … e·r+r−1 and B_e columns k·E+e, added to the Parameter as
its transpose (einsum "o r e, e r i -> e i o"). Both Parameters of a layer
wrapped: gate_up_proj's wrapper is the inner one, keys
…mlp.experts.base_layer.lora_{A,B}.weight, down_proj's
…mlp.experts.lora_{A,B}.weight. gate_up_proj's out index interleaves gate
(2j) and up (2j+1), so B's rows do too.

Self-check: central finite differences in float64 of L against autograd,
for sampled entries of every A and B and along one random direction.

Run from the repository root:  /usr/bin/python3 testdata/reference/gpt_oss_lora_grad.py
"""

import json
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpt_oss_reference import Model, load_model  # noqa: E402
from peft_check import write_safetensors  # noqa: E402
from qwen3_5_lora_grad import adapter_config  # noqa: E402
from common import Golden, finite_differences  # noqa: E402
from reference import MIN_ROUTING_MARGIN, ROOT, token_cases  # noqa: E402

MODEL = "gpt_oss-tiny"
RANK, ALPHA = 4, 8
SCALE = ALPHA / RANK
SEED = 20261206
FD_STEP = 1e-5
FD_ENTRIES = 2
MAX_NMSE = 1e-10
# The clamps make L piecewise smooth: a step along a random direction of
# every parameter at once may cross a kink of some clamped value, which
# costs up to ~step relative, hence 1e-6 (1e-8 for smooth families).
MAX_DIR_REL = 1e-6
PARAMS = ("gate_up_proj", "down_proj")


def run(put, cfg, weights, lora, expert_lora, rng):
    tokens = token_cases(512)[2][1]
    weights_t = rng.normal(0, 1, size=63).astype(np.float32)
    wt = torch.tensor(weights_t, dtype=torch.float64)
    tgt = torch.tensor(tokens[1:])
    model = Model(cfg, weights, lora=lora, expert_lora=expert_lora)

    def loss_fn():
        lp = torch.log_softmax(model.forward(tokens), -1)[torch.arange(63), tgt]
        return (lp * wt).sum(), lp

    for t in [t for a, b, _ in list(lora.values()) + list(expert_lora.values()) for t in (a, b)]:
        t.grad = None
    loss, logp = loss_fn()
    loss.backward()
    params = [(m, which, t) for m, (a, b, _) in list(lora.items()) + list(expert_lora.items()) for which, t in (("A", a), ("B", b))]
    with torch.no_grad():
        base = Model(cfg, weights).forward(tokens)
        moved = (model.forward(tokens) - base).abs().max().item()
    assert moved > 0.05, f"the adapter moves the logits by only {moved}"
    with torch.no_grad():
        n_fd, nmse, dir_rel = finite_differences(loss_fn, params, rng, FD_STEP, FD_ENTRIES)
    assert nmse < MAX_NMSE and dir_rel < MAX_DIR_REL, f"gradient vs finite differences: NMSE {nmse:.3g}, direction rel {dir_rel:.3g}"
    assert model.min_margin >= MIN_ROUTING_MARGIN, f"a routing decision within {model.min_margin:.3g} of a tie"
    zero = [f"{m}.{w}" for m, w, t in params if not t.grad.abs().max() > 0]
    assert not zero, f"zero gradients {zero}"

    def entry(key, name, a, b):
        return {key: name, "A": put(a.detach().numpy()), "B": put(b.detach().numpy()),
                "grad_A": put(a.grad.numpy()), "grad_B": put(b.grad.numpy())}

    out = {
        "model": MODEL, "model_dir": f"testdata/models/{MODEL}",
        "weights": put(weights_t), "logprobs": put(logp.detach().numpy()), "loss": float(loss),
        "max_abs_logit_change_from_base": round(moved, 6),
        "finite_difference_check": {"step": FD_STEP, "entries": n_fd, "nmse": nmse, "direction_relative_error": dir_rel},
        "lora": [entry("module", m, a, b) for m, (a, b, _) in lora.items()],
        "experts": [entry("parameter", m, a, b) for m, (a, b, _) in expert_lora.items()],
    }
    print(f"{MODEL}: {len(lora)} modules, {len(expert_lora)} expert Parameters, "
          f"L = {float(loss):.6f}, adapter moves logits by {moved:.3f}; finite differences: NMSE {nmse:.2e} over {n_fd} "
          f"entries, random direction rel. error {dir_rel:.2e}; min routing margin {model.min_margin:.3g}")
    return out


def main():
    torch.set_num_threads(1)
    cfg, weights = load_model(MODEL)
    rng = np.random.Generator(np.random.PCG64(SEED))
    lora, expert_lora, arrays = {}, {}, {}
    E = cfg.experts
    for l in range(cfg.layers):
        for x in ("q_proj", "k_proj", "v_proj", "o_proj"):
            m = f"model.layers.{l}.self_attn.{x}"
            out_f, in_f = weights[m + ".weight"].shape
            a = rng.normal(0, 0.1, size=(RANK, in_f)).astype(np.float32)
            b = rng.normal(0, 0.05, size=(out_f, RANK)).astype(np.float32)
            lora[m] = (torch.tensor(a, dtype=torch.float64, requires_grad=True), torch.tensor(b, dtype=torch.float64, requires_grad=True), SCALE)
            arrays[f"base_model.model.{m}.lora_A.weight"] = ("F32", a.shape, a.tobytes())
            arrays[f"base_model.model.{m}.lora_B.weight"] = ("F32", b.shape, b.tobytes())
        for param in PARAMS:
            m = f"model.layers.{l}.mlp.experts.{param}"
            _, in_f, out_f = weights[m].shape
            a = rng.normal(0, 0.1, size=(E * RANK, in_f)).astype(np.float32)
            b = rng.normal(0, 0.05, size=(out_f, RANK * E)).astype(np.float32)
            expert_lora[m] = (torch.tensor(a, dtype=torch.float64, requires_grad=True), torch.tensor(b, dtype=torch.float64, requires_grad=True), SCALE)
            mod = f"base_model.model.model.layers.{l}.mlp.experts" + (".base_layer" if param == "gate_up_proj" else "")
            arrays[f"{mod}.lora_A.weight"] = ("F32", a.shape, a.tobytes())
            arrays[f"{mod}.lora_B.weight"] = ("F32", b.shape, b.tobytes())
    adir = os.path.join(ROOT, "testdata", "lora", f"{MODEL}-experts")
    os.makedirs(adir, exist_ok=True)
    write_safetensors(os.path.join(adir, "adapter_model.safetensors"), arrays)
    conf = adapter_config(MODEL, ["k_proj", "o_proj", "q_proj", "v_proj"])
    conf["target_parameters"] = ["mlp.experts.gate_up_proj", "mlp.experts.down_proj"]
    with open(os.path.join(adir, "adapter_config.json"), "w") as f:
        json.dump(conf, f, indent=2, sort_keys=True)
        f.write("\n")
    for name in ["gpt_oss_lora_grad"]:
        golden = Golden()

        manifest = {
            "format": "little-endian float32; offset and shape count float32 elements; arrays are row-major",
            "computed_in": "float64 by testdata/reference/gpt_oss_lora_grad.py (gpt_oss_reference.py's model), rounded to float32",
            "loss": "L = sum over t = 0..62 of weights[t] * log_softmax(logits[t])[tokens[t+1]], logits of the 64-token forward",
            "experts_layout": "PEFT target_parameters: A [experts*rank, in], B [out, rank*experts]; expert e: A rows e*rank.., B columns k*experts+e; gate_up_proj's out interleaves gate (2j) and up (2j+1)",
            "rank": RANK, "lora_alpha": ALPHA, "scale": SCALE, "tokens": token_cases(512)[2][1],
            "data": name + ".f32",
            "models": [run(golden.put, cfg, weights, lora, expert_lora, np.random.Generator(np.random.PCG64(SEED + 1)))],
        }
        golden.write(ROOT, name, manifest)


if __name__ == "__main__":
    sys.exit(main())
