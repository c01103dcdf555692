"""First assignment solves (no hint): certified from zero potentials against scipy's dense solver (issue #73).

    python benchmarks/first_solves.py [--work DIR] [--costs 12]

Captures the first `--costs` MLP costs that GPT-2-small weight matching hands its solver (the two random
checkpoints of benchmarks/memory.py, built there once and cached; the run stops once it has them), then times
on one thread, per cost, `certified_assignment(cost)` with no hint (what a first sweep and a one-pass run do)
and scipy alone, and checks that both give the same permutation. Then the same on synthetic costs, the
degenerate ones included (rank 8, integer ties), where the rounds give up and scipy decides.
Run it on an idle machine; compare two versions with PYTHONPATH pointing at each (docs/benchmarks.md)."""

from __future__ import annotations

import argparse
import sys
from functools import partial
from pathlib import Path

from cuda import timed  # benchmarks/cuda.py: seconds of one call (synchronised on a GPU)
from memory import ORG, use_gpt2_pair  # benchmarks/memory.py: the same checkpoints


class Enough(Exception):
    """Raised inside the run once the costs are captured: the rest of the matching is not needed."""


def captured_costs(work: Path, count: int) -> list:
    """The first `count` MLP costs (float32, 3072²) the GPT-2-small run submits, with their hints."""
    use_gpt2_pair(work)
    from symalign.match import deferred
    from symalign.match.align import align
    from symalign.match.config import AlignConfig
    from symalign.models import load_model

    costs = []
    solve = deferred.certified_assignment

    def capture(cost, guess, hint):
        if len(costs) >= count:
            raise Enough
        costs.append(cost.clone())
        return solve(cost, guess, hint)

    deferred.certified_assignment = capture
    try:
        align(load_model(f"{ORG}/gpt2-small-0"), load_model(f"{ORG}/gpt2-small-1"),
              AlignConfig.from_options({}, method="weight", preset="all"))
    except Enough:
        pass
    finally:
        deferred.certified_assignment = solve
    return costs[:count]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", default="/tmp/symalign-memory")
    parser.add_argument("--costs", type=int, default=12)
    args = parser.parse_args()
    costs = captured_costs(Path(args.work), args.costs)
    import numpy as np
    import torch

    from symalign.match import certified
    from symalign.match.certified import certified_assignment, dense_assignment

    torch.set_num_threads(1)
    first, dense = [], []
    for cost in costs:
        (perm, _), t1 = timed(partial(certified_assignment, cost))
        reference, t2 = timed(partial(dense_assignment, cost))
        assert np.array_equal(perm, reference), "a first solve differs from scipy's"
        first.append(t1)
        dense.append(t2)
    print(f"GPT-2-small's first {len(costs)} MLP costs ({costs[0].shape[0]}², {costs[0].dtype}), one thread: "
          f"first solve {np.mean(first):.3f} ± {np.std(first):.3f} s, scipy alone {np.mean(dense):.3f} ± "
          f"{np.std(dense):.3f} s, the same permutations")
    g = torch.Generator().manual_seed(0)
    synthetic = {"iid Gaussian 3072²": torch.randn(3072, 3072, generator=g),
                 "rank 8, 3072²": torch.randn(3072, 8, generator=g) @ torch.randn(8, 3072, generator=g),
                 "integers 0-9, 2048²": torch.randint(0, 10, (2048, 2048), generator=g).float(),
                 "planted permutation + noise, 3072²":
                     torch.eye(3072)[torch.randperm(3072, generator=g)] * 3 + torch.randn(3072, 3072, generator=g)}
    print("\n| cost | first solve s | scipy alone s | rounds, outcome | same |")
    print("|---|---|---|---|---|")
    for name, cost in synthetic.items():
        certified.STATS.clear()
        (perm, _), t1 = timed(partial(certified_assignment, cost))
        stats = dict(certified.STATS)
        reference, t2 = timed(partial(dense_assignment, cost))
        outcome = "certified" if stats.get("certified") else "dense"
        print(f"| {name} | {t1:.3f} | {t2:.3f} | {stats.get('rounds', 0)}, {outcome} | "
              f"{np.array_equal(perm, reference)} |")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
