"""Curved paths on a GPU (issue #57): the bend fitted on `cuda` beside `cpu`, and the plane's points.

    python -m benchmarks.curve_cuda [--steps 400] [--families vit-digits gpt-shakespeare]

For each zoo family's seeds 0 ↔ 1 (canonical forms, no alignment): fit the Bézier bend at the default
options on each device, print the fit's seconds and the curve's barrier (the two differ in the last
digits: CUDA's reductions are not the CPU's), then the plane through A, B and the CUDA bend on a
5 × 5 grid on both devices, and the largest difference of the three points' losses."""

from __future__ import annotations

import argparse
import time
from dataclasses import replace

import torch

from symalign.data import load_data
from symalign.landscape.curve import CurveOptions, curve_loss, fit_bend
from symalign.landscape.plane import three_point_plane
from symalign.models import canonicalize, load_model
from symalign.models.io import default_data_spec


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=CurveOptions().steps)
    parser.add_argument("--families", nargs="+", default=["vit-digits", "gpt-shakespeare"])
    parser.add_argument("--devices", nargs="+", default=["cpu", "cuda"] if torch.cuda.is_available() else ["cpu"])
    parser.add_argument("--max-examples", type=int, default=256)
    args = parser.parse_args()
    options = replace(CurveOptions(), steps=args.steps)
    rows = []
    for family in args.families:
        a = canonicalize(load_model(f"zoo:{family}/0"))
        b = canonicalize(load_model(f"zoo:{family}/1"))
        data = load_data(default_data_spec(a))
        bends = {}
        for device in args.devices:
            began = time.perf_counter()
            fit = fit_bend(a, b, data, options, device)
            if device == "cuda":
                torch.cuda.synchronize()
            seconds = time.perf_counter() - began
            curve = curve_loss("bezier", a, fit.control, b, data, 21, args.max_examples, device)
            bends[device] = fit.control
            rows.append((family, device, seconds, curve.barrier, curve.loss[10]))
            print(f"{family} {device}: fit {seconds:.1f} s ({args.steps / seconds:.1f} steps/s), curve barrier "
                  f"{curve.barrier:.4f}, loss at t = 0.5 {curve.loss[10]:.4f}", flush=True)
        c = a.with_tensors(bends[args.devices[-1]])
        planes = {d: three_point_plane(a, b, c, data, 5, 0.2, max_examples=args.max_examples, device=d)[0]
                  for d in args.devices}
        if len(planes) == 2:
            p, q = planes.values()
            diff = max(abs(p.points[n]["loss"] - q.points[n]["loss"]) for n in p.points)
            grid = max(abs(x - y) for r, s in zip(p.loss, q.loss) for x, y in zip(r, s))
            print(f"{family} plane cpu vs cuda: points' losses differ by {diff:.2e}, grid by {grid:.2e}", flush=True)
    print("\n| family | device | fit s | steps/s | curve barrier | loss at t = 0.5 |\n|---|---|---|---|---|---|")
    for family, device, seconds, barrier, middle in rows:
        print(f"| {family} | {device} | {seconds:.1f} | {args.steps / seconds:.1f} | {barrier:.4f} | {middle:.4f} |")


if __name__ == "__main__":
    main()
