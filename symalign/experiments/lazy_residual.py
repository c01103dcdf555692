"""Weight matching with every MLP tensor rotated at each residual step (eager) and with each MLP lagging
until it next reads its tensors (lazy, symalign.match.lazy_residual; the default since issue #73): per zoo
pair and update-order seed, the sweeps, the floating-point work of the whole run, the final distance and
barrier, and the work to a barrier within 1% of where the run ends.

    python -m symalign.experiments.lazy_residual [--seeds 0 1 2] [--points 7] [--inner-passes N] [--pairs R:I:J ...]

Work is every matrix product the run makes (torch's FlopCounterMode: the cost products, applying steps to
B, the lagging groups' updates), in units of one eager sweep of the same pair (eager total / its sweeps).
Lazy takes the same steps, so its sweeps, distances and barriers must equal eager's (to round-off); only
the work differs. Written up in docs/benchmarks.md ("MLPs that lag")."""

from __future__ import annotations

import argparse
import statistics
from functools import partial

from torch.utils.flop_counter import FlopCounterMode

from symalign.experiments.inner_passes import PAIRS, to_one_percent
from symalign.match import weight
from symalign.match.align import align
from symalign.match.config import AlignConfig
from symalign.models import canonicalize, load_model
from symalign.models.io import default_data_spec


def run(a, b, data_spec: str, lazy: bool, seed: int, points: int, inner_passes: int | None) -> dict:
    """One run; its work leaves out the per-sweep barriers' own products (their forward passes)."""
    plain_match, plain_barrier = weight.weight_match, weight.sweep_barrier
    flops = FlopCounterMode(display=False)
    spent = {"barriers": 0, "at_sweep": []}  # barrier work so far; matching work at each barrier

    def barrier_off_the_count(inputs, n):
        measure = plain_barrier(inputs, n)

        def measured(transform):
            before = flops.get_total_flops()
            spent["at_sweep"].append(before - spent["barriers"])
            out = measure(transform)
            spent["barriers"] += flops.get_total_flops() - before
            return out
        return measured

    weight.weight_match = partial(plain_match, lazy_residual=lazy)
    weight.sweep_barrier = barrier_off_the_count
    options = {"barrier_per_sweep": points, "seed": seed}
    if inner_passes is not None:
        options["inner_passes"] = inner_passes
    try:
        with flops:
            report = align(a, b, AlignConfig.from_options(options, method="weight", preset="all",
                                                          data=data_spec)).report
    finally:
        weight.weight_match, weight.sweep_barrier = plain_match, plain_barrier
    barriers = [s.barrier for s in report.sweeps if s.barrier is not None]
    return {"sweeps": report.sweeps[-1].sweep, "flops": flops.get_total_flops() - spent["barriers"],
            "distance": report.distance_after, "barrier": barriers[-1],
            "to_1pct": to_one_percent(barriers, spent["at_sweep"][-len(barriers):]),
            "inner": sum(s.inner_passes or 0 for s in report.sweeps)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--points", type=int, default=7)
    parser.add_argument("--inner-passes", type=int, default=None, help="default: by size (none at zoo scale)")
    parser.add_argument("--pairs", nargs="+", default=None, help="only these, as RECIPE:I:J (gpt-shakespeare:0:2)")
    args = parser.parse_args()
    print("| pair | sweeps (inner passes) | work: eager → lazy, eager sweeps | to 1%: eager → lazy | "
          "distance, eager | distance, lazy | barrier, eager | barrier, lazy |\n|---|---|---|---|---|---|---|---|")
    pairs = PAIRS if args.pairs is None else [(r, int(i), int(j)) for r, i, j in (p.split(":") for p in args.pairs)]
    for family, i, j in pairs:
        a, b = canonicalize(load_model(f"zoo:{family}/{i}")), canonicalize(load_model(f"zoo:{family}/{j}"))
        data_spec = default_data_spec(a)
        rows = {(lazy, s): run(a, b, data_spec, lazy, s, args.points, args.inner_passes)
                for lazy in (False, True) for s in args.seeds}
        unit = statistics.mean(rows[(False, s)]["flops"] / rows[(False, s)]["sweeps"] for s in args.seeds)
        for s in args.seeds:
            eager, lazy = rows[(False, s)], rows[(True, s)]
            same = eager["sweeps"] == lazy["sweeps"] and eager["inner"] == lazy["inner"]
            to_1 = [r["to_1pct"] for r in (eager, lazy)]
            print(f"| {family} {i}↔{j}, seed {s} | {eager['sweeps']} ({eager['inner']})"
                  f"{'' if same else ' vs ' + str(lazy['sweeps']) + ' (' + str(lazy['inner']) + ')'} | "
                  f"{eager['flops'] / unit:.1f} → {lazy['flops'] / unit:.1f} | "
                  f"{to_1[0] / unit:.1f} → {to_1[1] / unit:.1f} | {eager['distance']:.9f} | {lazy['distance']:.9f} | "
                  f"{eager['barrier']:.4f} | {lazy['barrier']:.4f} |",
                  flush=True)


if __name__ == "__main__":
    main()
