"""What the golden-writing reference scripts share: packing float32 arrays
into a golden file pair, and checking autograd's gradients by central finite
differences in float64.

Golden files: testdata/golden/NAME.f32 holds little-endian float32 arrays end
to end; NAME.json's manifest names each by its offset and shape (in float32
elements), as internal/golden reads them.
"""

import json
import os

import numpy as np
import torch


class Golden:
    """The float32 arrays of one golden file pair, in the order put."""

    def __init__(self):
        self.chunks, self.offset = [], 0

    def put(self, a):
        """Appends a (rounded to float32) and returns its manifest entry."""
        a = np.ascontiguousarray(np.asarray(a, dtype="<f4"))
        self.chunks.append(a.tobytes())
        entry = {"offset": self.offset, "shape": list(a.shape)}
        self.offset += a.size
        return entry

    def write(self, root, name, manifest):
        """Writes testdata/golden/NAME.{f32,json} below root."""
        out = os.path.join(root, "testdata", "golden")
        with open(os.path.join(out, name + ".f32"), "wb") as f:
            f.write(b"".join(self.chunks))
        with open(os.path.join(out, name + ".json"), "w") as f:
            json.dump(manifest, f, indent=1)
            f.write("\n")
        print(f"wrote testdata/golden/{name}.{{json,f32}} ({self.offset * 4} bytes)")


def finite_differences(loss_fn, params, rng, step, entries):
    """Central differences of loss_fn()[0] (float64) against the gradients
    autograd left in each tensor of params ((name, which, tensor) triples):
    at up to `entries` entries of each tensor drawn from rng, and along one
    random unit direction over all of them. Returns the number of entries,
    their NMSE and the direction's relative error. Call under
    torch.no_grad(); every tensor is restored."""
    fd, ad = [], []
    for _, _, t in params:
        flat = t.view(-1)
        for i in rng.choice(flat.numel(), size=min(entries, flat.numel()), replace=False):
            old = flat[i].item()
            flat[i] = old + step
            up = loss_fn()[0].item()
            flat[i] = old - step
            down = loss_fn()[0].item()
            flat[i] = old
            fd.append((up - down) / (2 * step))
            ad.append(t.grad.view(-1)[i].item())
    fd, ad = np.array(fd), np.array(ad)
    nmse = float(((fd - ad) ** 2).sum() / (ad ** 2).sum())
    dirs = [torch.tensor(rng.normal(size=tuple(t.shape))) for _, _, t in params]
    norm = sum(float((d ** 2).sum()) for d in dirs) ** 0.5
    dirs = [d / norm for d in dirs]
    for (_, _, t), d in zip(params, dirs):
        t += step * d
    up = loss_fn()[0].item()
    for (_, _, t), d in zip(params, dirs):
        t -= 2 * step * d
    down = loss_fn()[0].item()
    for (_, _, t), d in zip(params, dirs):
        t += step * d
    dir_fd = (up - down) / (2 * step)
    dir_ad = sum(float((t.grad * d).sum()) for (_, _, t), d in zip(params, dirs))
    return len(fd), nmse, abs(dir_fd - dir_ad) / abs(dir_ad)
