#!/usr/bin/env python3
"""Golden AdamW trajectory from torch.optim.AdamW and clip_grad_norm_.

Two parameter tensors, five steps of fixed gradients, weight decay, global
gradient-norm clipping (max_norm 1.0, which binds on some steps) and a linear
warm-up of 2 steps: writes testdata/golden/adamw.json with the parameters after
every step. trainer's optimizer test must reproduce them.

Run from the repository root:  /usr/bin/python3 testdata/reference/adamw.py
"""
import json
import os

import numpy as np
import torch

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
rng = np.random.Generator(np.random.PCG64(77))
shapes = [(3, 4), (5,)]
init = [rng.normal(0, 1, size=s).astype(np.float32) for s in shapes]
steps = 5
grads = [[(rng.normal(0, 0.6, size=s)).astype(np.float32) for s in shapes] for _ in range(steps)]
cfg = {"lr": 1e-2, "betas": [0.9, 0.95], "eps": 1e-8, "weight_decay": 0.1, "max_grad_norm": 1.0, "warmup_steps": 2}

params = [torch.tensor(p, dtype=torch.float64, requires_grad=True) for p in init]
opt = torch.optim.AdamW(params, lr=cfg["lr"], betas=tuple(cfg["betas"]), eps=cfg["eps"], weight_decay=cfg["weight_decay"])
sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / cfg["warmup_steps"]))
after, norms = [], []
for g in grads:
    for p, gi in zip(params, g):
        p.grad = torch.tensor(gi, dtype=torch.float64)
    norms.append(float(torch.nn.utils.clip_grad_norm_(params, cfg["max_grad_norm"])))
    opt.step()
    sched.step()
    after.append([p.detach().numpy().ravel().tolist() for p in params])

out = {"config": cfg, "shapes": shapes, "init": [p.ravel().tolist() for p in init],
       "grads": [[g.ravel().tolist() for g in gs] for gs in grads], "grad_norms": norms, "params_after": after}
with open(os.path.join(ROOT, "testdata", "golden", "adamw.json"), "w") as f:
    json.dump(out, f, indent=1)
print("wrote testdata/golden/adamw.json")
