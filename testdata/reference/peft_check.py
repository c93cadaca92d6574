#!/usr/bin/env python3
"""Independent PEFT-convention reader and writer of LoRA adapters for grpo.

No `peft` library is used: this file implements the conventions PEFT's
save_pretrained / from_pretrained follow, from their documented behaviour:

  * adapter_model.safetensors keys "base_model.model.<module>.lora_A.weight"
    (shape [r, in_features]) and ".lora_B.weight" ([out_features, r]), where
    <module> is the module's name in the HF model ("model.layers.0.self_attn.q_proj");
  * adapter_config.json: r, lora_alpha, use_rslora, target_modules (a list
    matches a module named exactly so or ending in "." + entry),
    rank_pattern / alpha_pattern (first key equal to the module name, else
    the first key k with re.match(rf"(.*\.)?({k})$", module));
  * scaling = lora_alpha / r, or lora_alpha / sqrt(r) with use_rslora, and
    y = x W^T + scaling * (x A^T) B^T.

It then runs reference.py's float64 model and writes, under testdata/lora:

  (a) ours.{json,f32}: the logits of qwen3-tiny with the adapter grpo's Go
      code wrote to testdata/lora/ours (regenerate that first with
      `go test ./lora -run TestOursAdapterFiles -update`);
  (b) theirs/ (adapter_config.json + adapter_model.safetensors, written here
      in PEFT's layout: BF16 tensors, rsLoRA, only q_proj, v_proj, down_proj,
      a rank_pattern and an alpha_pattern, random non-zero A and B) and
      theirs.{json,f32}: qwen2-tiny's logits with it.

Run from the repository root:  /usr/bin/python3 testdata/reference/peft_check.py
"""

import json
import math
import os
import re
import struct
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reference  # noqa: E402  (the float64 model and safetensors reader)

ROOT = reference.ROOT
OUT = os.path.join(ROOT, "testdata", "lora")
TOKEN_SEED = 20250301
N_TOKENS = 12


def tokens(vocab):
    rng = np.random.Generator(np.random.PCG64(TOKEN_SEED))
    return rng.integers(0, vocab, size=N_TOKENS).tolist()


# ---------------------------------------------------------------- reading

def pattern_value(patterns, module):
    for k, v in patterns.items():
        if k == module:
            return v
    for k, v in patterns.items():
        if re.match(rf"(.*\.)?({k})$", module):
            return v
    return None


def targeted(target_modules, module):
    if isinstance(target_modules, str):
        return re.fullmatch(target_modules, module) is not None
    return any(module == t or module.endswith("." + t) for t in target_modules)


def read_adapter(adapter_dir, model_weights):
    """Returns reference.Model's lora dict {weight name: (A, B, scale)}."""
    with open(os.path.join(adapter_dir, "adapter_config.json")) as f:
        cfg = json.load(f)
    assert cfg["peft_type"] == "LORA" and cfg.get("task_type") == "CAUSAL_LM", cfg
    for key, ok in [("use_dora", False), ("fan_in_fan_out", False), ("bias", "none"), ("modules_to_save", None)]:
        assert cfg.get(key, ok) == ok, f"{key}={cfg.get(key)}"
    tensors = reference.read_safetensors(os.path.join(adapter_dir, "adapter_model.safetensors"))
    pairs = {}
    for name, t in tensors.items():
        m = re.fullmatch(r"base_model\.model\.(.+)\.lora_([AB])\.weight", name)
        assert m, f"unexpected key {name}"
        pairs.setdefault(m.group(1), {})[m.group(2)] = t
    lora = {}
    for module, ab in sorted(pairs.items()):
        assert targeted(cfg["target_modules"], module), module
        w = model_weights[module + ".weight"]
        r = pattern_value(cfg.get("rank_pattern") or {}, module) or cfg["r"]
        alpha = pattern_value(cfg.get("alpha_pattern") or {}, module) or cfg["lora_alpha"]
        a, b = ab["A"], ab["B"]
        assert tuple(a.shape) == (r, w.shape[1]) and tuple(b.shape) == (w.shape[0], r), (module, a.shape, b.shape, w.shape)
        scale = alpha / math.sqrt(r) if cfg.get("use_rslora") else alpha / r
        lora[module + ".weight"] = (a, b, scale)
    # Every targeted linear of every layer must have its pair (each
    # expert's projections and the routers, mlp.gate, of a MoE model too).
    for wname in model_weights:
        mod = wname[: -len(".weight")]
        linear = wname.endswith("_proj.weight") or wname.endswith(".mlp.gate.weight")
        if linear and targeted(cfg["target_modules"], mod):
            assert wname in lora, f"adapter misses {mod}"
    return lora


# ---------------------------------------------------------------- writing

def bf16_bits(t):
    """Round-to-nearest-even float32 -> bfloat16 bit patterns."""
    u = t.to(torch.float32).numpy().view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    return u.astype("<u2")


def write_safetensors(path, arrays):
    """arrays: {name: (dtype string, shape, raw bytes)}; PEFT's layout."""
    header, offset, blobs = {"__metadata__": {"format": "pt"}}, 0, []
    for name in sorted(arrays):
        dtype, shape, raw = arrays[name]
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + len(raw)]}
        offset += len(raw)
        blobs.append(raw)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def write_theirs_moe(cfg, weights):
    """A PEFT-layout adapter for qwen3-moe-tiny: F16 tensors, q_proj, every
    expert's gate_proj and down_proj, and the routers ("gate", which PEFT's
    suffix match finds only in mlp.gate), rank_pattern {"down_proj": 2}
    (every expert's) and alpha_pattern {"gate": 3} (the routers', not
    gate_proj's: the pattern must end the module name)."""
    d = os.path.join(OUT, "theirs-moe")
    os.makedirs(d, exist_ok=True)
    config = {
        "alpha_pattern": {"gate": 3},
        "auto_mapping": None,
        "base_model_name_or_path": "testdata/models/qwen3-moe-tiny",
        "bias": "none",
        "fan_in_fan_out": False,
        "inference_mode": True,
        "init_lora_weights": True,
        "layers_pattern": None,
        "layers_to_transform": None,
        "lora_alpha": 8,
        "lora_dropout": 0.0,
        "modules_to_save": None,
        "peft_type": "LORA",
        "r": 4,
        "rank_pattern": {"down_proj": 2},
        "revision": None,
        "target_modules": ["gate", "down_proj", "q_proj", "gate_proj"],
        "task_type": "CAUSAL_LM",
        "use_dora": False,
        "use_rslora": False,
    }
    g = torch.Generator().manual_seed(4321)
    arrays = {}
    for l in range(cfg.layers):
        modules = ["self_attn.q_proj", "mlp.gate"] + [f"mlp.experts.{e}.{p}" for e in range(cfg.num_experts) for p in ("gate_proj", "down_proj")]
        for module in modules:
            full = f"model.layers.{l}.{module}"
            out_f, in_f = weights[full + ".weight"].shape
            r = pattern_value(config["rank_pattern"], full) or config["r"]
            a = (torch.rand(r, in_f, generator=g, dtype=torch.float64) * 2 - 1) / math.sqrt(in_f)
            b = (torch.rand(out_f, r, generator=g, dtype=torch.float64) * 2 - 1) * 0.3
            for which, t in (("A", a), ("B", b)):
                arrays[f"base_model.model.{full}.lora_{which}.weight"] = ("F16", t.shape, t.numpy().astype("<f2").tobytes())
    write_safetensors(os.path.join(d, "adapter_model.safetensors"), arrays)
    with open(os.path.join(d, "adapter_config.json"), "w") as f:
        json.dump(config, f, indent=2, sort_keys=True)
        f.write("\n")
    return d


def write_theirs(cfg, weights):
    """A PEFT-layout adapter for qwen2-tiny, as save_pretrained writes it."""
    d = os.path.join(OUT, "theirs")
    os.makedirs(d, exist_ok=True)
    config = {
        "alpha_pattern": {"model.layers.1.self_attn.q_proj": 3},
        "auto_mapping": None,
        "base_model_name_or_path": "testdata/models/qwen2-tiny",
        "bias": "none",
        "fan_in_fan_out": False,
        "inference_mode": True,
        "init_lora_weights": True,
        "layers_pattern": None,
        "layers_to_transform": None,
        "lora_alpha": 12,
        "lora_dropout": 0.05,
        "modules_to_save": None,
        "peft_type": "LORA",
        "r": 6,
        "rank_pattern": {"down_proj": 2},
        "revision": None,
        "target_modules": ["v_proj", "q_proj", "down_proj"],  # a set in PEFT: any order
        "task_type": "CAUSAL_LM",
        "use_dora": False,
        "use_rslora": True,
    }
    g = torch.Generator().manual_seed(1234)
    arrays = {}
    for l in range(cfg.layers):
        for module in ("self_attn.q_proj", "self_attn.v_proj", "mlp.down_proj"):
            full = f"model.layers.{l}.{module}"
            out_f, in_f = weights[full + ".weight"].shape
            r = pattern_value(config["rank_pattern"], full) or config["r"]
            a = (torch.rand(r, in_f, generator=g, dtype=torch.float64) * 2 - 1) / math.sqrt(in_f)
            b = (torch.rand(out_f, r, generator=g, dtype=torch.float64) * 2 - 1) * 0.1
            for which, t in (("A", a), ("B", b)):
                arrays[f"base_model.model.{full}.lora_{which}.weight"] = ("BF16", t.shape, bf16_bits(t).tobytes())
    write_safetensors(os.path.join(d, "adapter_model.safetensors"), arrays)
    with open(os.path.join(d, "adapter_config.json"), "w") as f:
        json.dump(config, f, indent=2, sort_keys=True)
        f.write("\n")
    return d


# ---------------------------------------------------------------- logits

def write_logits(name, model_name, adapter_dir):
    cfg, weights = reference.load_model(os.path.join(ROOT, "testdata", "models", model_name))
    # Read back what is on disk, so BF16 rounding is part of the reference.
    lora = read_adapter(adapter_dir, weights)
    toks = tokens(cfg.vocab)
    with torch.no_grad():
        base = reference.Model(cfg, weights).forward(toks)
        adapted = reference.Model(cfg, weights, lora=lora).forward(toks)
        # Self-check: the adapter equals merging W + scale B A.
        merged_w = dict(weights)
        for wname, (a, b, s) in lora.items():
            merged_w[wname] = weights[wname] + s * b @ a
        merged = reference.Model(cfg, merged_w).forward(toks)
    err = (adapted - merged).abs().max().item()
    assert err < 1e-10, f"{name}: adapter and merged weights differ by {err}"
    delta = (adapted - base).abs().max().item()
    assert delta > 0.05, f"{name}: adapter moves logits by only {delta}"
    a = adapted.numpy().astype("<f4")
    with open(os.path.join(OUT, name + ".f32"), "wb") as f:
        f.write(a.tobytes())
    manifest = {
        "model": model_name,
        "adapter": os.path.relpath(adapter_dir, ROOT),
        "tokens": toks,
        "shape": list(a.shape),
        "data": name + ".f32",
        "format": "little-endian float32 logits [tokens, vocab], row-major; positions 0..T-1 of one sequence",
        "computed_in": "float64 by testdata/reference/peft_check.py (reference.py's model), rounded to float32",
        "modules": len(lora),
        "max_abs_logit_change_from_base": round(delta, 6),
    }
    with open(os.path.join(OUT, name + ".json"), "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")
    print(f"wrote testdata/lora/{name}.{{json,f32}}: {len(lora)} adapted modules, max |logit change| {delta:.3f}")


def main():
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    ours = os.path.join(OUT, "ours")
    if not os.path.exists(os.path.join(ours, "adapter_config.json")):
        sys.exit("testdata/lora/ours is missing; run: go test ./lora -run TestOursAdapterFiles -update")
    write_logits("ours", "qwen3-tiny", ours)
    cfg, weights = reference.load_model(os.path.join(ROOT, "testdata", "models", "qwen2-tiny"))
    write_logits("theirs", "qwen2-tiny", write_theirs(cfg, weights))
    # Qwen3-MoE: grpo's adapter on every expert and the routers, and PEFT's.
    ours_moe = os.path.join(OUT, "ours-moe")
    if not os.path.exists(os.path.join(ours_moe, "adapter_config.json")):
        sys.exit("testdata/lora/ours-moe is missing; run: go test ./lora -run TestOursAdapterFiles -update")
    write_logits("ours-moe", "qwen3-moe-tiny-dense", ours_moe)
    cfg, weights = reference.load_model(os.path.join(ROOT, "testdata", "models", "qwen3-moe-tiny"))
    write_logits("theirs-moe", "qwen3-moe-tiny", write_theirs_moe(cfg, weights))


if __name__ == "__main__":
    sys.exit(main())
