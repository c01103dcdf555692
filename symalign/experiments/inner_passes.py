"""Weight matching with and without inner passes (issue #73 item 1): per zoo pair and update-order seed,
the sweeps, the inner passes, the cost products spent, the final distance and barrier, and the cost to
a barrier within 1% of where the run ends.

    python -m symalign.experiments.inner_passes [--passes 0 10] [--seeds 0 1 2] [--points 7]

Cost is counted as the multiply-adds of every correlation weight matching forms (the cost products of
the assignments and Procrustes solves, the held tensors' one product per hold included; applying steps
is not counted), in units of one plain sweep of the same pair (plain run's total / its sweeps). "To 1%":
the first point after which the barrier (measured after every sweep, `barrier_per_sweep`) stays within
1% of the run's last. Written up in docs/benchmarks.md ("Inner passes")."""

from __future__ import annotations

import argparse
import statistics

from symalign.match import mapped, weight
from symalign.match.align import align
from symalign.match.config import AlignConfig
from symalign.models import canonicalize, load_model
from symalign.models.io import default_data_spec

PAIRS = (("vit-digits", 0, 1), ("vit-digits", 0, 2), ("vit-digits", 1, 2), ("gpt-shakespeare", 0, 1),
         ("gpt-shakespeare", 0, 2), ("gpt-shakespeare", 1, 2))


class CostCounter:
    """Multiply-adds of every correlation weight matching forms, and the running total at each barrier."""

    def __init__(self):
        self.total, self.at_sweep = 0, []
        self._plain = mapped.correlation, weight.sweep_barrier

    def __enter__(self):
        def counting(a, b, spec, space, *args, **kwargs):
            self.total += sum(2 * t.numel() * spec.spaces[space].size for t in b.values())
            return self._plain[0](a, b, spec, space, *args, **kwargs)

        def barrier_with_cost(inputs, points):
            measure = self._plain[1](inputs, points)

            def measured(transform):
                self.at_sweep.append(self.total)
                return measure(transform)
            return measured

        mapped.correlation = counting  # every product, the held tensors' K included, is formed there
        weight.sweep_barrier = barrier_with_cost
        return self

    def __exit__(self, *exc):
        mapped.correlation, weight.sweep_barrier = self._plain


def to_one_percent(barriers: list[float], costs: list[float]) -> float:
    """The cost at the first point after which every barrier stays within 1% of the last."""
    last = barriers[-1]
    index = len(barriers) - 1
    while index > 0 and abs(barriers[index - 1] - last) <= 0.01 * abs(last):
        index -= 1
    return costs[index]


def run(a, b, data_spec: str, passes: int, seed: int, points: int) -> dict:
    with CostCounter() as counter:
        report = align(a, b, AlignConfig.from_options({"inner_passes": passes, "barrier_per_sweep": points,
                                                       "seed": seed}, method="weight", preset="all",
                                                      data=data_spec)).report
    barriers = [s.barrier for s in report.sweeps if s.barrier is not None]
    sweeps = report.sweeps[-1].sweep
    return {"sweeps": sweeps, "inner": sum(s.inner_passes or 0 for s in report.sweeps), "cost": counter.total,
            "distance": report.distance_after, "barrier": barriers[-1],
            "to_1pct": to_one_percent(barriers, counter.at_sweep[-len(barriers):])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--passes", type=int, nargs="+", default=[0, 10])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--points", type=int, default=7)
    args = parser.parse_args()
    print("| pair | inner passes | seed | sweeps (inner passes) | cost, plain sweeps | to 1% of the end | distance | "
          "barrier |\n|---|---|---|---|---|---|---|---|")
    for family, i, j in PAIRS:
        a, b = canonicalize(load_model(f"zoo:{family}/{i}")), canonicalize(load_model(f"zoo:{family}/{j}"))
        data_spec = default_data_spec(a)
        rows = {(k, s): run(a, b, data_spec, k, s, args.points) for k in args.passes for s in args.seeds}
        plain = [rows[(args.passes[0], s)] for s in args.seeds]
        unit = statistics.mean(r["cost"] / r["sweeps"] for r in plain)  # one plain sweep of this pair
        for (k, s), r in rows.items():
            print(f"| {family} {i}↔{j} | {k} | {s} | {r['sweeps']} ({r['inner']}) | {r['cost'] / unit:.1f} | "
                  f"{r['to_1pct'] / unit:.1f} | {r['distance']:.6f} | {r['barrier']:.3f} |", flush=True)
        for k in args.passes:
            runs = [rows[(k, s)] for s in args.seeds]
            summary = {key: (statistics.mean(r[key] for r in runs), statistics.stdev(r[key] for r in runs))
                       for key in ("distance", "barrier")}
            cost = statistics.mean(r["cost"] / unit for r in runs)
            print(f"| {family} {i}↔{j} | {k} | mean ± std | {statistics.mean(r['sweeps'] for r in runs):.1f} | "
                  f"{cost:.1f} | {statistics.mean(r['to_1pct'] / unit for r in runs):.1f} | "
                  f"{summary['distance'][0]:.6f} ± {summary['distance'][1]:.6f} | "
                  f"{summary['barrier'][0]:.3f} ± {summary['barrier'][1]:.3f} |", flush=True)


if __name__ == "__main__":
    main()
