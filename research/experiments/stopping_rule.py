"""Where weight matching may stop (issue #58): the barrier after every sweep, against the rule that
stops when a sweep shrinks the distance by less than a tolerance.

    python -m research.experiments.stopping_rule [--families vit-digits gpt-shakespeare] [--classes all permutations]
        [--points 7] [--tols 1e-2 3e-3 1e-3 3e-4 1e-4 1e-5] [--json FILE]

Each zoo pair is weight-matched to convergence by the old rule (relative improvement below 1e-5,
30 sweeps at most: the reference run) with `barrier_per_sweep` on, which measures the
barrier on the eval split of the family's data after every sweep. For each candidate tolerance the
script finds the sweep where that rule would have stopped (the same run's history: the sweeps are
deterministic, so a run with that tolerance is this run cut short) and prints how far that sweep's
barrier is from the converged one, in percent of the converged barrier. The default rule is the
loosest tolerance whose barrier stays within 1% on every pair."""

from __future__ import annotations

import argparse
import json
from itertools import combinations

from symalign.match.align import align
from symalign.match.config import AlignConfig
from symalign.match.weight.descent import looser_stop
from symalign.models import load_model
from symalign.train.recipes import DEMO_DATA


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--families", nargs="+", default=list(DEMO_DATA))
    parser.add_argument("--classes", nargs="+", default=["all", "permutations"])
    parser.add_argument("--points", type=int, default=7)
    parser.add_argument("--tols", nargs="+", type=float, default=[1e-2, 3e-3, 1e-3, 3e-4, 1e-4, 1e-5])
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    rows = []
    for family in args.families:
        models = [load_model(f"zoo:{family}/{i}") for i in range(3)]
        for preset in args.classes:
            for i, j in combinations(range(3), 2):
                config = AlignConfig(method="weight", preset=preset, data=DEMO_DATA[family], max_sweeps=30,
                                     options={"barrier_per_sweep": args.points, "min_improvement": 1e-5})
                result = align(models[i], models[j], config)
                # the start (after the residual's boundary step, where the first sweep is compared) and each sweep
                history = result.report.sweeps
                sweeps = [[s for s in history if s.sweep == 0][-1]] + [s for s in history if s.sweep > 0]
                dist = [s.distance for s in sweeps]
                barrier = [s.barrier for s in sweeps]
                converged = barrier[-1]
                row = {"family": family, "classes": preset, "pair": f"{i}-{j}", "sweeps": len(sweeps) - 1,
                       "distance": dist, "barrier": barrier, "seconds": [s.seconds for s in sweeps], "stops": {}}
                for tol in args.tols:
                    stop = looser_stop(history, tol)  # the package's own reading of the rule
                    k = len(sweeps) - 1 if stop is None else sweeps.index(stop)
                    row["stops"][f"{tol:g}"] = {"sweep": k, "barrier": barrier[k],
                                                "off_percent": 100 * abs(barrier[k] - converged) / abs(converged),
                                                "seconds": sweeps[k].seconds}
                rows.append(row)
                print(f"{family} {preset} {i}-{j}: {len(sweeps) - 1} sweeps, barrier {barrier[0]:.4f} -> "
                      f"{converged:.4f}; " + ", ".join(f"{t}: sweep {s['sweep']} ({s['off_percent']:.2f}%)"
                                                     for t, s in row["stops"].items()), flush=True)
    print("\n| tolerance | " + " | ".join(f"{r['family']} {r['classes']} {r['pair']}" for r in rows) + " | worst |")
    print("|---" * (len(rows) + 2) + "|")
    for tol in args.tols:
        key = f"{tol:g}"
        cells = [f"{r['stops'][key]['sweep']} ({r['stops'][key]['off_percent']:.2f}%)" for r in rows]
        worst = max(r["stops"][key]["off_percent"] for r in rows)
        print(f"| {key} | " + " | ".join(cells) + f" | {worst:.2f}% |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
