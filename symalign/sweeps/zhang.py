"""Zhang et al.'s Table 2 in its own shape (`symalign sweep --preset zhang-table2`): six fusion methods
× three states of matching, merged accuracy and loss, mean ± std over the zoo's seed pairs.

Why its own table and not `peers`: in the paper matching is a plug-in *before* the fusion. Each
fusion method (simple average, Fisher, RegMean, OT-ACTS-EMD, OT-ACTS, OT-WTS) runs on the pair as it
is, on the pair after their matching without rescaling, and after their matching: FFN permutations and
rotations inside heads (QK and VO), heads kept in order, no residual map; "matching" adds their
per-head rescaling to the rotations (`orthogonal+rescale`). The matchings run once per pair and every
fusion method reads the same aligned members. Paper values are those transcribed into this repository
(ZHANG_TABLE2); a value not transcribed says so."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import pandas as pd

from symalign.papers.table import verdict
from symalign.papers.zhang import FIG3, FIG6, TABLE1, TABLE2
from symalign.sweeps.peers import peer_pairs


@dataclass(frozen=True)
class Fusion:
    name: str  # the paper's
    how: str  # merge --how
    solver: str | None = None  # OT plans (the ot-* rules)


FUSIONS: tuple[Fusion, ...] = (
    Fusion("Simple Avg", "average"),
    Fusion("Fisher", "fisher"),
    Fusion("RegMean", "regmean"),
    Fusion("OT-ACTS-EMD", "ot-acts", "emd"),
    Fusion("OT-ACTS", "ot-acts", "sinkhorn"),
    Fusion("OT-WTS", "ot-wts", "sinkhorn"),
)
# Their matching's classes: FFN permutations and within-head rotations; heads in order, no residual map.
ROTATIONS = {"mlp": "perm", "heads": "none", "qk": "orthogonal", "vo": "orthogonal", "residual": "none"}
MATCHING = {**ROTATIONS, "qk": "orthogonal+rescale", "vo": "orthogonal+rescale"}  # their full matching
STATES: dict[str, dict[str, str] | None] = {
    "w/o matching": None,
    "matching w/o rescaling": ROTATIONS,
    "matching": MATCHING,
}
# Zhang Fig. 3: their matching with one part taken out (attention maps, FFN permutations, rescaling).
FIG3_STATES: dict[str, dict[str, str] | None] = {
    "matching": MATCHING,
    "w/o ATTN": {**MATCHING, "qk": "none", "vo": "none"},
    "w/o FFN": {**MATCHING, "mlp": "none"},
    "w/o rescaling": ROTATIONS,
}
# The claims each preset decides, in the paper's words (symalign.papers.zhang): Table 2, matching improves
# every fusion method; Fig. 3, which part contributes more (comparisons) and rescaling across most settings.
# Rescaling is not claimed for Table 2: the paper's own cells lower Simple and Fisher with it.
CLAIMS = {
    "zhang-table2": (("matching", "w/o matching", TABLE2.claims[0].quote),),
    "zhang-fig3": (("w/o FFN", "w/o ATTN", FIG3.claims[0].quote, ("Fisher", "RegMean")),
                   ("w/o ATTN", "w/o FFN", FIG3.claims[1].quote, ("OT-ACTS-EMD", "OT-ACTS", "OT-WTS")),
                   ("matching", "w/o rescaling", FIG3.claims[2].quote, None)),
}
MOST = (FIG3.claims[2].quote,)  # claims about "most settings": decided by a count of the methods' verdicts
# Zhang Table 1: "We match only the parameters within the attention layers": QK and VO rotations with rescaling.
ATTENTION_MATCHING = {**MATCHING, "mlp": "none"}
TABLE1_STATES: dict[str, dict[str, str] | None] = {"w/o matching": None, "+match": ATTENTION_MATCHING}
CLAIMS["zhang-table1"] = (("+match", "w/o matching", TABLE1.claims[0].quote),)
# Zhang Fig. 6 on the zoo's 2-layer classifiers: the first attention layer alone, the last alone (Tail-Layers,
# k = 1), both (k = 2); `layers` below says which block each state's matching may touch
FIG6_STATES: dict[str, dict[str, str] | None] = {"w/o matching": None, "first layer only": ATTENTION_MATCHING,
                                                 "last layer only (tail 1)": ATTENTION_MATCHING,
                                                 "both layers (tail 2)": ATTENTION_MATCHING}
CLAIMS["zhang-fig6"] = (("first layer only", "last layer only (tail 1)", FIG6.claims[0].quote),)


@dataclass(frozen=True)
class ZhangPreset:
    """What one of Zhang et al.'s fusion tables runs and reads: its columns (states of matching), its rows (fusion
    methods), the merged model's score it reports, whether the classifier is copied from A rather than merged, and
    the claim that Simple averaging gains most (its quote, the two states compared) where the table makes it."""

    table: object  # its PaperTable (symalign.papers.zhang)
    states: dict[str, dict[str, str] | None]
    fusions: tuple[str, ...] = tuple(f.name for f in FUSIONS)
    measure: str = "accuracy"  # or "macro_f1" (Table 1's Emotion column)
    keep_head: bool = False
    largest: tuple[str, str, str] | None = None  # (quote, with, without)
    families: tuple[str, ...] = ("vit-digits",)
    layers: dict[str, str] = field(default_factory=dict)  # state → the blocks its matching may touch ("0", "-1")


PRESETS: dict[str, ZhangPreset] = {
    "zhang-table2": ZhangPreset(TABLE2, STATES, largest=(TABLE2.claims[1].quote, "matching", "w/o matching")),
    "zhang-fig3": ZhangPreset(FIG3, FIG3_STATES),
    "zhang-table1": ZhangPreset(TABLE1, TABLE1_STATES, ("Simple Avg", "Fisher", "RegMean"), "macro_f1",
                                keep_head=True, largest=(TABLE1.claims[2].quote, "+match", "w/o matching"),
                                families=("bert-shakespeare-genre",)),
    "zhang-fig6": ZhangPreset(FIG6, FIG6_STATES, ("Simple Avg",), "loss", keep_head=True,
                              families=("bert-shakespeare-genre",),
                              layers={"first layer only": "0", "last layer only (tail 1)": "-1"}),
}
# measure → (what, unit, display scale, sign): a gain is sign × (better − worse), positive where the claim holds
MEASURES = {"accuracy": ("merged accuracy", " pp", 100, 1), "macro_f1": ("merged macro F1", " F1 points", 100, 1),
            "loss": ("merged evaluation loss", " nats", 1, -1)}
# Zhang et al., Table 2 (two CIFAR-10 ViTs merged), merged accuracy, all 18 cells from the paper's registry
# entry (checked against its text by tests/test_papers.py), in our row and column names.
PAPER_ROWS = {"Simple Avg": "Simple", "Fisher": "Fisher", "RegMean": "Regmean", "OT-ACTS-EMD": "OT-ACTS-EMD",
              "OT-ACTS": "OT-ACTS", "OT-WTS": "OT-WTS"}
PAPER_COLUMNS = {"w/o matching": "w/o match", "matching w/o rescaling": "w/o rescale", "matching": "match",
                 "w/o rescaling": "w/o rescale"}  # Fig. 3's column is Table 2's
ZHANG_TABLE2 = {(fusion, state): TABLE2.value(row, column) / 100
                for fusion, row in PAPER_ROWS.items() for state, column in PAPER_COLUMNS.items()}
_PER_LAYER = ("not run here: the paper matches each layer separately and keeps the merged model with the best "
              "validation accuracy; the zoo matches all layers in one pass and reports that one merge")
PROTOCOL = {"zhang-table2": _PER_LAYER, "zhang-fig3": _PER_LAYER,
            "zhang-table1": "the paper averages the merged models' macro F1 over every pair of five Emotion "
                            "fine-tunes; "
                            "the zoo's three seed pairs, each merged once, the head copied from A",
            "zhang-fig6": "the zoo's three seed pairs, each merged once by Simple averaging, the head copied from A"}
SETTING = {"vit-digits": "not comparable in size: the paper merges two CIFAR-10 ViTs; the zoo's vit-digits pairs are "
                         "8×8 digit ViTs (3 seed pairs), the only image setting the CPU zoo has",
           "": "not comparable: the paper merges two CIFAR-10 ViTs; these pairs are {family}, another setting"}


def setting(cells: pd.DataFrame, preset: str = "zhang-table2") -> str:
    """The one line that says how the pairs differ from the paper's (by the family the cells are of): a table
    registered for that family says it in its own words."""
    family = cells["a"].iloc[0].split(":")[-1].rsplit("/", 1)[0]
    spec = PRESETS[preset]
    if family in spec.families and family not in SETTING:
        return spec.table.zoo.rstrip(".")
    return SETTING.get(family, SETTING[""].format(family=family)).rstrip(".")


def paper_cell(preset: str, fusion: str, state: str) -> str | None:
    """What the paper printed for this fusion method and state, as shown beside ours (None: nothing printed)."""
    if preset == "zhang-table1":
        row = PAPER_ROWS[fusion] + (" +match" if state == "+match" else "")
        return ", ".join(f"{column.split()[1]} {TABLE1.value(row, column):.2f}"
                         for column in ("Emotion RoBERTa", "Emotion DeBERTa"))
    if PRESETS[preset].table not in (TABLE2, FIG3):  # Table 2's cells are Fig. 3's too; no other table's
        return None
    value = ZHANG_TABLE2.get((fusion, state))
    return None if value is None else f"{100 * value:.2f}%"
Progress = Callable[[int, int, dict], None]


def zhang_cells(family: str, seeds: list[int] | None = None, examples: int = 64, max_examples: int | None = None,
                device: str = "cpu", progress: Progress | None = None,
                states: dict[str, dict[str, str] | None] | None = None, preset: str = "zhang-table2") -> pd.DataFrame:
    """One row per (fusion, state, pair): the merged model's loss, accuracy (and macro F1 for a classifier)
    on the pair's data. `states`: the columns, each a class set for weight matching (None: no matching);
    the preset's by default, whose fusion methods and head rule (PRESETS) the merges follow."""
    from symalign.match.config import AlignConfig
    from symalign.merge.merging import aligned_members, merge_models
    from symalign.merge.ot_fusion import OTSettings
    from symalign.models import load_model
    from symalign.models.io import default_data_spec

    spec = PRESETS[preset]
    states = spec.states if states is None else states
    fusions = [f for f in FUSIONS if f.name in spec.fusions]
    pairs = peer_pairs(family, seeds)
    rows, total = [], len(pairs) * len(states) * len(fusions)
    for a_ref, b_ref in pairs:
        models = [load_model(a_ref), load_model(b_ref)]
        data = default_data_spec(models[0])
        for state, classes in states.items():
            began = time.perf_counter()
            config = None if classes is None else AlignConfig(method="weight", classes=classes, device=device,
                                                               layers=spec.layers.get(state))
            how_align = "none" if config is None else "weight"
            members = aligned_members(models, how_align, data, device=device, config=config)
            aligning = time.perf_counter() - began
            for fusion in fusions:
                began = time.perf_counter()
                report = merge_models(models, how_align, fusion.how, data, examples=examples,
                                      max_examples=max_examples, members=members, device=device,
                                      ot=OTSettings(fusion.solver) if fusion.solver else None,
                                      keep_head=spec.keep_head).report
                rows.append({"fusion": fusion.name, "state": state, "a": a_ref, "b": b_ref,
                             "loss": report["merged"]["loss"], "accuracy": report["merged"]["accuracy"],
                             "macro_f1": report["merged"].get("macro_f1"),
                             "inputs_accuracy": statistics.fmean(r["accuracy"] for r in report["inputs"]),
                             "seconds": time.perf_counter() - began, "align_seconds": aligning})
                if progress:
                    progress(len(rows), total, rows[-1])
    return pd.DataFrame(rows)


def zhang_summary(cells: pd.DataFrame) -> pd.DataFrame:
    """Per (fusion, state), in the paper's order: merged accuracy, loss (and macro F1 where measured), mean
    and std over the pairs, and Table 2's accuracy where it is transcribed."""
    out = []
    scores = [m for m in ("accuracy", "loss", "macro_f1") if m in cells and cells[m].notna().any()]
    for fusion in FUSIONS:
        for state in dict.fromkeys(cells["state"]):
            part = cells[(cells["fusion"] == fusion.name) & (cells["state"] == state)]
            if part.empty:
                continue
            n = len(part)
            line = {"fusion": fusion.name, "state": state, "pairs": n}
            for m in scores:
                line |= {f"{m}_mean": part[m].mean(), f"{m}_std": part[m].std(ddof=1) if n > 1 else 0.0}
            out.append(line | {"paper_accuracy": ZHANG_TABLE2.get((fusion.name, state))})
    return pd.DataFrame(out)


def pp(share: float) -> str:
    """A difference of accuracies in percentage points; under 0.1 pp with two decimals (not "-0.0")."""
    return f"{100 * share:+.2f} pp" if abs(100 * share) < 0.1 else f"{100 * share:+.1f} pp"


def _by_state(part: pd.DataFrame, measure: str = "accuracy") -> dict[str, pd.Series]:
    return {s: part[part["state"] == s].set_index(["a", "b"])[measure] for s in dict.fromkeys(part["state"])}


def _pair(a: str, b: str) -> str:
    return f"{a.split(':')[-1]} ↔ {b.split(':')[-1]}"


def verdicts(cells: pd.DataFrame, preset: str = "zhang-table2") -> list[str]:
    """Each claim in the paper's words, decided per fusion method over the pairs by the one verdict rule
    (symalign.papers.table): every pair, or a mean beyond 2 SE; else k of n. Comparative claims (Fig. 3:
    which part contributes more) are tested as comparisons."""
    spec = PRESETS[preset]
    what, unit, scale, sign = MEASURES[spec.measure]
    digits = 2 if scale == 100 else 3  # hundredths of a point; thousandths of a nat
    lines = []
    decided: dict[str, list[str]] = {}  # per claim, each fusion method's verdict word
    for better, worse, quote, *only in CLAIMS[preset]:
        methods = only[0] if only and only[0] else spec.fusions
        for fusion in methods:
            by = _by_state(cells[cells["fusion"] == fusion], spec.measure)
            if better not in by or worse not in by:
                continue
            gain = (sign * (by[better] - by[worse])).dropna()
            if not gain.empty:
                said = verdict({_pair(a, b): g for (a, b), g in gain.items()}, unit, scale, digits)
                decided.setdefault(quote, []).append(said.split(" ", 1)[0])
                compared = f"{better} − {worse}" if sign > 0 else f"{worse} − {better}"  # positive: the claim's way
                lines.append(f"\"{quote}\" — {fusion}: {compared}, {what}: {said}")
        if quote in MOST and quote in decided:  # "across most settings": a count of the methods, more than half
            words = decided[quote]
            agree, n = words.count("agrees"), len(words)
            lines.append(f"\"{quote}\" — counted over the {n} fusion methods: {agree} agree, "
                         f"{words.count('contradicted')} contradicted, {words.count('not')} not separable; "
                         + ("most settings (more than half): agrees" if 2 * agree > n else
                            "not most settings (half or fewer agree): not supported here"))
    if spec.largest and set(spec.largest[1:]) <= set(cells["state"]):
        quote, with_, without = spec.largest
        # each method's gain in the claim's direction (sign), so "largest" is the best whatever the measure
        gains = {name: (lambda by: sign * (by[with_] - by[without]))(_by_state(cells[cells["fusion"] == name],
                                                                               spec.measure))
                 for name in spec.fusions if name in set(cells["fusion"])}
        if "Simple Avg" in gains and len(gains) > 1:
            others = pd.concat([g for name, g in gains.items() if name != "Simple Avg"], axis=1).max(axis=1)
            lead = (gains["Simple Avg"] - others).dropna()
            lines.append(f"\"{quote}\": Simple Avg's gain − the largest other method's gain, {what}: "
                         + verdict({_pair(a, b): g for (a, b), g in lead.items()}, unit, scale, digits))
    lines += [f"\"{c.quote}\": {c.decided_by}" for c in spec.table.claims if not c.testable]
    return lines


def _score(rows: pd.DataFrame, state: str, measure: str, markdown: bool) -> str:
    """Ours in one cell: the table's measure, mean ± std over the pairs (loss, or accuracy beside F1, when
    there is room)."""
    mean, std = rows.loc[state, f"{measure}_mean"], rows.loc[state, f"{measure}_std"]
    if measure == "loss":
        return f"loss {mean:.3f} ± {std:.3f}" + (f" (accuracy {rows.loc[state, 'accuracy_mean']:.1%})" if markdown
                                                 else "")
    if measure == "macro_f1":  # as the paper prints F1: ×100
        return f"F1 {100 * mean:.2f} ± {100 * std:.2f}" + (
            f" (accuracy {rows.loc[state, 'accuracy_mean']:.1%})" if markdown else "")
    return f"{mean:.1%} ± {std:.1%}" + (f" (loss {rows.loc[state, 'loss_mean']:.3f})" if markdown else "")


def zhang_text(summary: pd.DataFrame, cells: pd.DataFrame, markdown: bool = False, preset: str = "zhang-table2") -> str:
    """The table a person reads: a row per fusion method, a column per state, the table's measure mean ± std
    (loss or accuracy beside it in the markdown form), the paper's value beside each where printed; then the
    verdicts."""
    spec = PRESETS[preset]
    states = list(dict.fromkeys(cells["state"]))
    head = ["fusion"] + [f"{s}" for s in states] + [f"paper: {s}" for s in states]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)] if markdown else [
        f"{'fusion':<13}" + "".join(f"{s:>26}" for s in states)]
    unprinted = f"({spec.table.name}: a figure, no values printed)"
    for fusion in dict.fromkeys(summary["fusion"]):
        rows = summary[summary["fusion"] == fusion].set_index("state")
        ours = [_score(rows, s, spec.measure, markdown) if s in rows.index else "–" for s in states]
        paper = [paper_cell(preset, fusion, s) or unprinted for s in states]
        lines.append("| " + " | ".join([fusion, *ours, *paper]) + " |" if markdown else
                     f"{fusion:<13}" + "".join(f"{o:>26}" for o in ours))
        if not markdown:
            cells_printed = [f"{s} {paper_cell(preset, fusion, s)}" for s in states if paper_cell(preset, fusion, s)]
            printed = ("; " if any("," in c for c in cells_printed) else ", ").join(cells_printed)
            lines.append(f"  paper ({spec.table.name}), {fusion}: {printed or '(no values printed)'}")
    inputs = cells["inputs_accuracy"].mean()
    lines += ["", f"(the inputs themselves: {inputs:.1%} accuracy on average; {setting(cells, preset)}; protocol: "
                  f"{PROTOCOL[preset]})", ""]
    lines += [("- " if markdown else "") + f"({note})" for note in spec.table.notes]
    lines += [("- " if markdown else "") + v for v in verdicts(cells, preset)]
    return "\n".join(lines)
