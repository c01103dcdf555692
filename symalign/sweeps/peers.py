"""The field's baselines side by side (`symalign sweep --preset peers`): one merged model per method on
each seed pair of a zoo recipe, its loss and accuracy, mean ± std over the pairs.

Why a table of merged models and not of barriers: OT fusion's soft plans change B's function, so
the interpolation path between A and "B" that a barrier measures is not defined for them; what
every method shares is the model it merges into (Zhang et al.'s Table 2 reports exactly that:
merged accuracy, averaging vs OT-ACTS vs matching). The rows: plain averaging, OT-ACTS and OT-WTS
(Imfeld et al.; Sinkhorn at their strengths, and exact EMD), then symalign's weight and learned
matching followed by averaging."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from itertools import combinations

import pandas as pd

from symalign.errors import SymalignError


@dataclass(frozen=True)
class Peer:
    name: str
    align: str  # merge --align
    solver: str | None = None  # OT fusion's plans (ot-acts / ot-wts)


PEERS: tuple[Peer, ...] = (
    Peer("average (no alignment)", "none"),
    Peer("OT-ACTS, Sinkhorn", "ot-acts", "sinkhorn"),
    Peer("OT-ACTS, exact", "ot-acts", "emd"),
    Peer("OT-WTS, Sinkhorn", "ot-wts", "sinkhorn"),
    Peer("OT-WTS, exact", "ot-wts", "emd"),
    Peer("weight (all) + average", "weight"),
    Peer("learned (all) + average", "learned"),
)
PEERS_HELP = ("merged-model loss and accuracy: averaging, OT-ACTS and OT-WTS (Imfeld et al.), weight and learned "
              "(all) + averaging, on each seed pair (Zhang et al. Table 2)")
Progress = Callable[[int, int, dict], None]  # done, total, the finished cell


def peer_pairs(family: str, seeds: list[int] | None = None) -> list[tuple[str, str]]:
    """Every pair of the recipe's zoo seeds (0, 1, 2 by default); a seed the zoo lacks is refused."""
    from symalign.zoo import manifest

    if not family:
        raise SymalignError("--preset peers needs --family RECIPE (e.g. vit-digits)")
    seeds = seeds or [0, 1, 2]
    built = {e["seed"] for e in manifest()["models"] if e["recipe"] == family}
    missing = [s for s in seeds if s not in built]
    if missing:
        raise SymalignError(f"the zoo has no {family} seed {', '.join(map(str, missing))}"
                            + ("" if built else f" (no recipe {family!r} at all: `symalign zoo list`)"))
    return [(f"zoo:{family}/{i}", f"zoo:{family}/{j}") for i, j in combinations(seeds, 2)]


def peers_cells(family: str, seeds: list[int] | None = None, peers: tuple[Peer, ...] = PEERS,
                steps: int | None = None, max_examples: int | None = None, device: str = "cpu",
                progress: Progress | None = None) -> pd.DataFrame:
    """One row per (method, pair): the merged model's loss and accuracy on the pair's own data, the
    inputs' mean beside it, and the seconds the alignment and merge took. `steps`: the learned row's."""
    from symalign.merge.merging import aligned_members, merge_models
    from symalign.merge.ot_fusion import OTSettings
    from symalign.models import load_model
    from symalign.models.io import default_data_spec

    pairs = peer_pairs(family, seeds)
    rows, total = [], len(pairs) * len(peers)
    for a_ref, b_ref in pairs:
        models = [load_model(a_ref), load_model(b_ref)]
        data = default_data_spec(models[0])
        for peer in peers:
            began = time.perf_counter()
            ot = OTSettings(peer.solver) if peer.solver else None
            members = aligned_members(models, peer.align, data, ot=ot, max_examples=max_examples, steps=steps,
                                      device=device)
            report = merge_models(models, peer.align, "average", data, max_examples=max_examples, members=members,
                                  device=device, ot=ot).report
            inputs = report["inputs"]
            rows.append({"method": peer.name, "a": a_ref, "b": b_ref, "loss": report["merged"]["loss"],
                         "accuracy": report["merged"]["accuracy"],
                         "inputs_loss": statistics.fmean(r["loss"] for r in inputs),
                         "inputs_accuracy": statistics.fmean(r["accuracy"] for r in inputs),
                         "seconds": time.perf_counter() - began})
            if progress:
                progress(len(rows), total, rows[-1])
    return pd.DataFrame(rows)


def peers_summary(cells: pd.DataFrame) -> pd.DataFrame:
    """Per method (in the table's order): merged loss and accuracy, mean and std over the pairs."""
    order = list(dict.fromkeys(cells["method"]))
    grouped = cells.groupby("method", sort=False)
    out = pd.DataFrame({"method": order, "pairs": [int(grouped.size()[m]) for m in order]})
    for column in ("loss", "accuracy"):
        out[f"{column}_mean"] = [grouped[column].mean()[m] for m in order]
        out[f"{column}_std"] = [grouped[column].std(ddof=1)[m] if grouped.size()[m] > 1 else 0.0 for m in order]
    return out


def peers_text(summary: pd.DataFrame, cells: pd.DataFrame, markdown: bool = False) -> str:
    """The table a person reads: loss and accuracy as mean ± std (n pairs), the inputs' own first."""
    inputs_loss, inputs_acc = cells["inputs_loss"].mean(), cells["inputs_accuracy"].mean()
    lines = [("| method | merged loss | merged accuracy |", "|---|---|---|") if markdown else
             (f"{'method':<26} {'merged loss':>16} {'merged accuracy':>18}",)]
    lines = [line for group in lines for line in group]

    def row(name: str, loss: str, acc: str) -> str:
        return f"| {name} | {loss} | {acc} |" if markdown else f"{name:<26} {loss:>16} {acc:>18}"

    lines.append(row("(the inputs themselves)", f"{inputs_loss:.3f}", f"{inputs_acc:.1%}"))
    for _, r in summary.iterrows():
        lines.append(row(r["method"], f"{r['loss_mean']:.3f} ± {r['loss_std']:.3f}",
                         f"{r['accuracy_mean']:.1%} ± {r['accuracy_std']:.1%}"))
    return "\n".join(lines)
