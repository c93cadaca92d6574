#!/usr/bin/env python3
"""Golden LoRA gradients for Qwen3.5 and Qwen3.5-MoE, by autograd in float64.

For qwen3_5-tiny and qwen3_5-moe-tiny: an adapter on every linear layer of
the language model that PEFT's target_modules="all-linear" adapts (rank 4,
alpha 8, A and B both non-zero so that dL/dA is non-zero too), written in
PEFT's layout under testdata/lora/<model>-all-linear/, and in
testdata/golden/qwen3_5_lora_grad.{json,f32}:

    L = Σ_{t=0}^{62} w_t · log softmax(logits_t)[tokens[t+1]]

over reference.py's len64 token case (logits of the 64-token forward, row t
scored against the next token), with fixed weights w_t; the 63 log-probs, L,
and dL/d(every lora_A and lora_B).

Which modules "all-linear" adapts (PEFT's _maybe_include_all_linear_layers):
every torch.nn.Linear (or Conv1D) module of the model except the output
embedding (lm_head). On Qwen3_5ForConditionalGeneration / Qwen3_5Moe... that
is, in the language model: self_attn.{q,k,v,o}_proj; linear_attn.in_proj_qkv,
in_proj_z, in_proj_b, in_proj_a, out_proj; the dense mlp.{gate,up,down}_proj;
mlp.shared_expert.{gate,up,down}_proj and mlp.shared_expert_gate (a Linear
with out_features 1 is still a Linear: PEFT adapts it). Not adapted: lm_head,
the router mlp.gate (a Qwen3_5MoeTopKRouter holding a bare Parameter, not a
Linear), the routed experts (3-D Parameters mlp.experts.gate_up_proj /
down_proj, not Linears), the conv1d (a Conv1d), norms, A_log, dt_bias. PEFT
would also adapt the vision tower's Linears (model.visual.blocks.N.attn.qkv,
...proj, ...mlp.linear_fc1/2, merger.linear_fc1/2); they never touch a
text-only forward pass (zero gradient), and a text-only trainer leaves them
out, so this adapter does too. mtp.* is not a module of the HF model at all.

Module names: PEFT prefixes the HF module path with "base_model.model."; the
language model of the conditional-generation class is model.language_model,
so keys read base_model.model.model.language_model.layers.N.<module>.lora_A.weight.

Self-check: central finite differences in float64 of L against autograd, for
sampled entries of every A and B and along one random direction through all
of them (NMSE printed and stored).

Run from the repository root:  /usr/bin/python3 testdata/reference/qwen3_5_lora_grad.py
"""

import json
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from peft_check import read_adapter, write_safetensors  # noqa: E402
from qwen3_5_reference import PREFIX, Model, load_model  # noqa: E402
from reference import MIN_ROUTING_MARGIN, ROOT, token_cases  # noqa: E402

MODELS = ["qwen3_5-tiny", "qwen3_5-moe-tiny"]
RANK, ALPHA = 4, 8
SCALE = ALPHA / RANK
SEED = 20260305
FD_STEP = 1e-5
FD_ENTRIES = 2          # sampled entries per A and per B
MAX_NMSE = 1e-10


def modules(cfg):
    """The adapted modules, in layer order, as (full module name, PEFT suffix)."""
    out = []
    for l in range(cfg.layers):
        p = f"{PREFIX}layers.{l}."
        if cfg.layer_types[l] == "full_attention":
            mixer = [f"self_attn.{x}" for x in ("q_proj", "k_proj", "v_proj", "o_proj")]
        else:
            mixer = [f"linear_attn.{x}" for x in ("in_proj_qkv", "in_proj_z", "in_proj_b", "in_proj_a", "out_proj")]
        if cfg.moe:
            mlp = [f"mlp.shared_expert.{x}" for x in ("gate_proj", "up_proj", "down_proj")] + ["mlp.shared_expert_gate"]
        else:
            mlp = [f"mlp.{x}" for x in ("gate_proj", "up_proj", "down_proj")]
        out += [p + m for m in mixer + mlp]
    return out


def adapter_config(name, targets):
    return {
        "alpha_pattern": {},
        "auto_mapping": None,
        "base_model_name_or_path": f"testdata/models/{name}",
        "bias": "none",
        "fan_in_fan_out": False,
        "inference_mode": True,
        "init_lora_weights": True,
        "layers_pattern": None,
        "layers_to_transform": None,
        "lora_alpha": ALPHA,
        "lora_dropout": 0.0,
        "modules_to_save": None,
        "peft_type": "LORA",
        "r": RANK,
        "rank_pattern": {},
        "revision": None,
        "target_modules": targets,
        "task_type": "CAUSAL_LM",
        "use_dora": False,
        "use_rslora": False,
    }


def main():
    torch.set_num_threads(1)
    tokens = token_cases(512)[2][1]
    assert len(tokens) == 64
    chunks, offset = [], 0

    def put(a):
        nonlocal offset
        a = np.ascontiguousarray(np.asarray(a, dtype="<f4"))
        chunks.append(a.tobytes())
        entry = {"offset": offset, "shape": list(a.shape)}
        offset += a.size
        return entry

    manifest = {
        "format": "little-endian float32; offset and shape count float32 elements; arrays are row-major",
        "computed_in": "float64 by testdata/reference/qwen3_5_lora_grad.py (qwen3_5_reference.py's model), rounded to float32",
        "loss": "L = sum over t = 0..62 of weights[t] * log_softmax(logits[t])[tokens[t+1]], logits of the 64-token forward",
        "rank": RANK, "lora_alpha": ALPHA, "scale": SCALE, "tokens": tokens,
        "data": "qwen3_5_lora_grad.f32", "models": [],
    }
    for mi, name in enumerate(MODELS):
        cfg, weights = load_model(name)
        rng = np.random.Generator(np.random.PCG64(SEED + mi))
        mods = modules(cfg)
        lora, arrays = {}, {}
        for m in mods:
            out_f, in_f = weights[m + ".weight"].shape
            a = rng.normal(0, 0.1, size=(RANK, in_f)).astype(np.float32)
            b = rng.normal(0, 0.05, size=(out_f, RANK)).astype(np.float32)
            lora[m] = (torch.tensor(a, dtype=torch.float64, requires_grad=True),
                       torch.tensor(b, dtype=torch.float64, requires_grad=True), SCALE)
            key = "base_model.model." + m
            arrays[key + ".lora_A.weight"] = ("F32", a.shape, a.astype("<f4").tobytes())
            arrays[key + ".lora_B.weight"] = ("F32", b.shape, b.astype("<f4").tobytes())
        adir = os.path.join(ROOT, "testdata", "lora", f"{name}-all-linear")
        os.makedirs(adir, exist_ok=True)
        write_safetensors(os.path.join(adir, "adapter_model.safetensors"), arrays)
        suffixes = sorted({m.rsplit(".", 1)[-1] for m in mods})
        with open(os.path.join(adir, "adapter_config.json"), "w") as f:
            json.dump(adapter_config(name, suffixes), f, indent=2, sort_keys=True)
            f.write("\n")

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
        assert moved > 0.05, f"{name}: the adapter moves the logits by only {moved}"
        # The adapter as written, read back by peft_check.py's PEFT-convention
        # reader (over the language model's tensors: a suffix target list
        # would also name mtp.* tensors, which are not modules of the HF
        # model), gives the same logits, and equals merging W + scale·B·A.
        text_weights = {k: v for k, v in weights.items() if k.startswith(PREFIX)}
        back = {k[:-len(".weight")]: v for k, v in read_adapter(adir, text_weights).items()}
        assert sorted(back) == sorted(mods)
        merged = dict(weights)
        for m, (a, b, sc) in back.items():
            merged[m + ".weight"] = weights[m + ".weight"] + sc * b @ a
        with torch.no_grad():
            adapted = model.forward(tokens)
            err_back = (Model(cfg, weights, lora=back).forward(tokens) - adapted).abs().max().item()
            err_merge = (Model(cfg, merged).forward(tokens) - adapted).abs().max().item()
        assert err_back < 1e-12 and err_merge < 1e-10, f"{name}: read-back {err_back}, merged {err_merge}"

        # Finite differences, float64: sampled entries, then one direction.
        fd, ad = [], []
        with torch.no_grad():
            for _, _, t in params:
                flat = t.view(-1)
                for i in rng.choice(flat.numel(), size=min(FD_ENTRIES, flat.numel()), replace=False):
                    old = flat[i].item()
                    flat[i] = old + FD_STEP
                    up = loss_fn()[0].item()
                    flat[i] = old - FD_STEP
                    down = loss_fn()[0].item()
                    flat[i] = old
                    fd.append((up - down) / (2 * FD_STEP))
                    ad.append(t.grad.view(-1)[i].item())
            fd, ad = np.array(fd), np.array(ad)
            nmse = float(((fd - ad) ** 2).sum() / (ad ** 2).sum())
            dirs = [torch.tensor(rng.normal(size=tuple(t.shape))) for _, _, t in params]
            norm = sum(float((d ** 2).sum()) for d in dirs) ** 0.5
            dirs = [d / norm for d in dirs]             # a unit step through all of them
            for (_, _, t), d in zip(params, dirs):
                t += FD_STEP * d
            up = loss_fn()[0].item()
            for (_, _, t), d in zip(params, dirs):
                t -= 2 * FD_STEP * d
            down = loss_fn()[0].item()
            for (_, _, t), d in zip(params, dirs):
                t += FD_STEP * d
            dir_fd = (up - down) / (2 * FD_STEP)
            dir_ad = sum(float((t.grad * d).sum()) for (_, _, t), d in zip(params, dirs))
            dir_rel = abs(dir_fd - dir_ad) / abs(dir_ad)
        assert nmse < MAX_NMSE and dir_rel < 1e-8, f"{name}: gradient vs finite differences: NMSE {nmse:.3g}, direction rel {dir_rel:.3g}"
        if cfg.moe:
            assert model.min_margin >= MIN_ROUTING_MARGIN, f"{name}: a routing decision within {model.min_margin:.3g} of a tie"
        zero = [f"{m}.{w}" for m, w, t in params if not t.grad.abs().max() > 0]
        assert not zero, f"{name}: zero gradients {zero}"

        entries = [{"module": m,
                    "A": put(lora[m][0].detach().numpy()), "B": put(lora[m][1].detach().numpy()),
                    "grad_A": put(lora[m][0].grad.numpy()), "grad_B": put(lora[m][1].grad.numpy())}
                   for m in mods]
        manifest["models"].append({
            "model": name,
            "model_dir": f"testdata/models/{name}",
            "adapter": os.path.relpath(adir, ROOT),
            "peft_key": "base_model.model.<module>.lora_A.weight / .lora_B.weight",
            "weights": put(weights_t),
            "logprobs": put(logp.detach().numpy()),
            "loss": float(loss),
            "max_abs_logit_change_from_base": round(moved, 6),
            "finite_difference_check": {"step": FD_STEP, "entries": int(len(fd)), "nmse": nmse,
                                        "direction_relative_error": dir_rel},
            "lora": entries,
        })
        print(f"{name}: {len(mods)} adapted modules, L = {float(loss):.6f}, adapter moves logits by {moved:.3f}; "
              f"finite differences: NMSE {nmse:.2e} over {len(fd)} entries, random direction rel. error {dir_rel:.2e}")

    out = os.path.join(ROOT, "testdata", "golden")
    with open(os.path.join(out, "qwen3_5_lora_grad.f32"), "wb") as f:
        f.write(b"".join(chunks))
    with open(os.path.join(out, "qwen3_5_lora_grad.json"), "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")
    print(f"wrote testdata/golden/qwen3_5_lora_grad.{{json,f32}} ({offset * 4} bytes)")


if __name__ == "__main__":
    sys.exit(main())
