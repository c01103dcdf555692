"""The field's baselines on a GPU (issue #45): OT fusion and the rescale add-on give the CPU's numbers
on `--device`, and the `peers` table's cost there.

    python -m benchmarks.field_cuda [--device cuda] [--steps N] [--json FILE]

Prints, for vit-digits seeds 0 ↔ 1: merged loss of OT-ACTS / OT-WTS (exact and Sinkhorn) on the CPU and
on the device (plans are solved by POT on the CPU either way; activations and evaluation run on the
device), weight matching's distance with and without `orthogonal+rescale` on both, learned matching
with it on the device (the aligned model must stay B's function), and the peers table's seconds per
method on the device."""

from __future__ import annotations

import argparse
import json
import time

import torch

from symalign.match.align import align
from symalign.match.config import CLASS_PRESETS, AlignConfig
from symalign.merge.merging import merge_models
from symalign.merge.ot_fusion import OTSettings
from symalign.models import canonicalize, load_model, outputs, random_inputs
from symalign.sweeps.peers import peers_cells, peers_summary, peers_text

WITH = {**CLASS_PRESETS["all"], "qk": "orthogonal+rescale", "vo": "orthogonal+rescale"}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--steps", type=int, default=None, help="learned steps (default: the data's)")
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    a, b = load_model("zoo:vit-digits/0"), load_model("zoo:vit-digits/1")
    out: dict = {"device": torch.cuda.get_device_name(0) if args.device == "cuda" else args.device}
    for how in ("ot-acts", "ot-wts"):
        for solver in ("emd", "sinkhorn"):
            row = {}
            for device in ("cpu", args.device):
                began = time.perf_counter()
                merged = merge_models([a, b], how, "average", "digits", ot=OTSettings(solver), device=device)
                row[device] = {**merged.report["merged"], "seconds": time.perf_counter() - began}
            out[f"{how} {solver}"] = row
            print(f"{how} {solver}: {row}", flush=True)
    for name, classes in (("all", CLASS_PRESETS["all"]), ("all + rescale", WITH)):
        row = {d: align(a, b, AlignConfig(method="weight", classes=classes, device=d)).report.distance_after
               for d in ("cpu", args.device)}
        out[f"weight {name} distance"] = row
        print(f"weight ({name}) distance: {row}", flush=True)
    began = time.perf_counter()
    learned = align(a, b, AlignConfig(method="learned", classes=WITH, data="digits", steps=args.steps or 100,
                                      device=args.device))
    x = random_inputs(learned.aligned, n=4)
    gap = float((outputs(canonicalize(b), x) - outputs(learned.aligned, x)).abs().max())
    out["learned all + rescale"] = {"seconds": time.perf_counter() - began, "function gap": gap,
                                    "kind": learned.transform["layer.0.qk"].kind}
    print(f"learned (all + rescale) on {args.device}: {out['learned all + rescale']}", flush=True)
    began = time.perf_counter()
    cells = peers_cells("vit-digits", steps=args.steps, device=args.device,
                        progress=lambda d, t, r: print(f"[{d}/{t}] {r['method']}: {r['loss']:.4f} "
                                                       f"({r['seconds']:.1f} s)", flush=True))
    out["peers seconds"] = time.perf_counter() - began
    out["peers"] = cells.to_dict(orient="records")
    print(peers_text(peers_summary(cells), cells))
    print(f"peers on {args.device}: {out['peers seconds']:.1f} s")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=2)


if __name__ == "__main__":
    main()
