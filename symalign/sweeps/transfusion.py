"""TransFusion's transport experiments on the zoo (`symalign sweep --preset transfusion-table3 |
transfusion-fig4`): a fine-tune's task vector τ carried into another seed by each head strategy.

Table 3 compares how heads are paired before the task vector moves, with permutations only, as the paper
runs it (residual stream, MLP units, heads, the features inside each head): No Att-Align (heads in order,
the features inside them still permuted), Brute Force (every head pair aligned inside, then the Hungarian
pairing), Ours (Full) (TransFusion's spectral distance), and symalign's circuits (not in the paper). It
reports the change in the fine-tune task's accuracy and in the support set's (the original task's) against
θ_B's own. Fig. 4 sweeps α in [0.01, 2] for θ_B + α·τ (no π) against θ_B + α·π(τ), on both accuracies.

The zoo's transport pair: base zoo:BASE/0, its fine-tunes zoo:FINE_TUNE/s (s = 0, 1, 2; vit-digits
fine-tuned on flipped digits), received by zoo:BASE/1 and /2: six (fine-tune, receiver) combinations,
each transported once per strategy. Fig. 4 evaluates every α; Table 3 only the two it reads (`PRESETS`),
the same numbers at those α (a transport's alignment does not depend on α), at a third of the cost."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import pandas as pd

from symalign.errors import SymalignError
from symalign.papers.table import verdict
from symalign.papers.transfusion import (
    FIG4,
    PERMUTATION_ONLY,
    TABLE1,
    TABLE1_TASKS,
    TABLE2,
    TABLE2_TASKS,
    TABLE3,
    TABLE4,
    TASKS,
)

# without π: `transport --align none`; separate: Ours (Full) with QK and VO solved apart (the ablation row)
# separate: Ours (Full) with QK and VO solved apart; whole-stream: Ours (Full) with one residual permutation for
# the whole stream (symalign's symmetry) in place of the paper's per block (both ablation rows)
STRATEGIES = ("without π", "none", "brute-force", "spectral", "circuit", "separate", "whole-stream")
ABLATIONS = {"separate": "spectral", "whole-stream": "spectral"}  # ablation row → the head strategy it runs
# Table 1's baselines: Optimal Transport (OT-WTS's exact plans) and Git Re-Basin (MLP units and whole heads)
TABLE1_STRATEGIES = ("without π", "ot", "git-rebasin", "spectral")
GIT_RE_BASIN = {"mlp": "perm", "heads": "perm", "qk": "none", "vo": "none", "residual": "none"}
# The rows as the paper names them (Table 3); the others are ours, and say so.
LABELS = {"without π": "θ_B + α·τ (no π)", "none": "No Att-Align", "brute-force": "Brute Force",
          "spectral": "Ours (Full)", "circuit": "circuits (symalign's; not in the paper)",
          "separate": "Ours (Full), QK and VO apart (ablation; not in the paper)",
          "whole-stream": "Ours (Full), one residual permutation for the whole stream (ablation; not in the paper)",
          "ot": "θ_B + π(τ) (Optimal Transport)", "git-rebasin": "θ_B + π(τ) (Git Re-Basin)"}
# Table 1's names for its rows (its last is Table 3's Ours (Full): the same numbers)
TABLE1_LABELS = {"without π": "θ_B + τ", "ot": LABELS["ot"], "git-rebasin": LABELS["git-rebasin"],
                 "spectral": "TransFusion (Ours)"}
# Table 2's names for the same rows (its θ_B row is its accuracy with the fine-tune's classifier)
TABLE2_LABELS = {"without π": "θ_B + τ", "ot": "θ_B + τ (OT)", "git-rebasin": "θ_B + τ (Git Re-Basin)",
                 "spectral": "TransFusion (Ours)"}
# Table 4's: τ as it is and TransFusion's π(τ), each scaled per layer by an α learned on few shots
TABLE4_STRATEGIES = ("without π", "spectral")
TABLE4_LABELS = {"without π": "θ_B + ατ", "spectral": "θ_B + απ(τ)"}
SHOTS = 10  # per class, as the paper
SHARED_QKV = True  # inside heads, one block permutation P_attn for W_q, W_k and W_v, as the paper (Step 2)
PAPER_ROWS = {"none": "No Att-Align", "brute-force": "Brute Force", "spectral": "Ours (Full)"}
ALPHAS = (0.0, 0.01, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 2.0)  # 0 is θ_B itself: the zero-shot reference
TABLE3_ALPHA = 1.0
TABLE3_ALPHAS = (0.0, TABLE3_ALPHA)  # θ_B's own and α = 1: all Table 3 reads


@dataclass(frozen=True)
class TransportPair:
    """A zoo family's fine-tunes: `fine_tune`'s seed s started from the base's seed 0 (`from_own_seed` False:
    every fine-tune moves from zoo:BASE/0 into seeds 1 and 2) or from the base's own seed s (True: the encoder
    of seed s moves into every other seed r, as TransFusion's Table 2 moves one release's into another)."""

    fine_tune: str
    from_own_seed: bool = False


TRANSPORT_PAIRS = {"vit-digits": TransportPair("vit-digits-flipped"),
                   "gpt-shakespeare": TransportPair("gpt-shakespeare-upper"),
                   "bert-shakespeare": TransportPair("bert-shakespeare-genre", from_own_seed=True)}
Progress = Callable[[int, int, dict], None]
SETTING = {"vit-digits": "digit ViTs trained further on flipped digits",
           "gpt-shakespeare": "character-level GPT-2s trained further on the plays in capitals",
           "bert-shakespeare": "masked-LM BERTs fine-tuned into speech-genre classifiers (a head of their own)"}


def setting(cells: pd.DataFrame) -> str:
    """The one line that says how the zoo's transports differ from TransFusion's."""
    family = cells["b"].iloc[0].split(":")[-1].rsplit("/", 1)[0]
    return ("not comparable in size or task: TransFusion transports fine-tunes of CLIP ViT-B/16 between "
            "pre-trainings (EuroSAT, GTSRB, SVHN; support set ImageNet-R); the zoo's fine-tunes are "
            f"{SETTING.get(family, family)}, the support set the original task. Inside heads as the paper: one "
            "block permutation per head moves W_q, W_k and W_v together (--shared-qkv; the QK-and-VO-apart row "
            "is the ablation). The residual as the paper (its eq. 12, I_i = P_W0 P_inᵀ on each skip connection): "
            "a permutation per residual stream from the weights that touch it (--residual-per-block; the "
            "whole-stream row, one permutation for the stream as symalign's symmetry, is the ablation): "
            + classes_line())


def classes_line() -> str:
    """The class of each component in every aligned row, the residual's included."""
    classes = {**PERMUTATION_ONLY, "residual": "perm per block"}
    return ", ".join(f"{kind} {cls}" for kind, cls in classes.items()) + " (No Att-Align: heads none, kept in order)"


def transport_combinations(family: str, fine_tunes: list[int] | None = None,
                           receivers: list[int] | None = None) -> list[tuple[str, str, str]]:
    """(A, A_FT, B) for every fine-tune seed and receiving seed of the family's transport pair."""
    if family not in TRANSPORT_PAIRS:
        raise SymalignError(f"the transport presets run on {', '.join(TRANSPORT_PAIRS)} (the zoo's fine-tunes); "
                            f"got --family {family or '(none)'}")
    pair = TRANSPORT_PAIRS[family]
    if pair.from_own_seed:
        return [(f"zoo:{family}/{s}", f"zoo:{pair.fine_tune}/{s}", f"zoo:{family}/{r}")
                for s in (fine_tunes or [0, 1, 2]) for r in (receivers or [0, 1, 2]) if r != s]
    return [(f"zoo:{family}/0", f"zoo:{pair.fine_tune}/{s}", f"zoo:{family}/{r}")
            for s in (fine_tunes or [0, 1, 2]) for r in (receivers or [1, 2])]


def transfusion_cells(family: str, fine_tunes: list[int] | None = None, receivers: list[int] | None = None,
                      alphas: tuple[float, ...] = ALPHAS, strategies: tuple[str, ...] = STRATEGIES,
                      max_examples: int | None = None, device: str = "cpu",
                      progress: Progress | None = None, shots: int = 0) -> pd.DataFrame:
    """One row per (strategy, fine-tune, receiver, α): both tasks' accuracy and loss, and the fine-tune's
    own task accuracy (A_ft as it is: what its head gives on its own encoder). `shots` > 0: one more row per
    transport, α learned per layer on that many examples per class (`fitted` True, its α NaN)."""
    from symalign.data import load_data
    from symalign.landscape.evaluate import evaluate
    from symalign.match.config import AlignConfig
    from symalign.merge.task_vectors import transport, with_head_strategy
    from symalign.models import load_model
    from symalign.models.io import default_data_spec

    combos = transport_combinations(family, fine_tunes, receivers)
    rows, total = [], len(combos) * len(strategies)
    for a_ref, ft_ref, b_ref in combos:
        a, ft, b = load_model(a_ref), load_model(ft_ref), load_model(b_ref)
        data_task, data_base = default_data_spec(ft), default_data_spec(a)
        own = evaluate(ft, load_data(data_task), max_examples, device).accuracy
        for strategy in strategies:
            began = time.perf_counter()
            how = {"without π": "none", "ot": "ot-wts"}.get(strategy, "weight")
            if strategy == "git-rebasin":
                config = AlignConfig(method="weight", classes=dict(GIT_RE_BASIN), data=data_base, device=device)
            elif how == "weight":
                config = with_head_strategy(AlignConfig.from_options(
                    {"shared_qkv": SHARED_QKV and strategy != "separate"}, method="weight",
                    classes=dict(PERMUTATION_ONLY), data=data_base, device=device),
                    ABLATIONS.get(strategy, strategy))
            else:
                config = None
            per_block = how == "weight" and strategy not in ("git-rebasin", "whole-stream")  # the paper's residual
            result = transport(a, ft, b, list(alphas), data_task, data_base, how, max_examples=max_examples,
                               device=device, config=config, shots=shots, per_block=per_block)
            seconds = time.perf_counter() - began
            for i, alpha in enumerate(alphas):
                rows.append({"strategy": strategy, "a_ft": ft_ref, "b": b_ref, "alpha": alpha,
                             "task_accuracy": result.task_accuracy[i], "support_accuracy": result.base_accuracy[i],
                             "task_loss": result.task_loss[i], "support_loss": result.base_loss[i],
                             "fine_tune_accuracy": own, "seconds": seconds} | ({"fitted": False} if shots else {}))
            if shots:
                f = result.fitted
                rows.append({"strategy": strategy, "a_ft": ft_ref, "b": b_ref, "alpha": float("nan"),
                             "task_accuracy": f["task_accuracy"], "support_accuracy": f["base_accuracy"],
                             "task_loss": f["task_loss"], "support_loss": f["base_loss"], "fine_tune_accuracy": own,
                             "seconds": seconds, "fitted": True})
            if progress:
                progress(len(rows) // (len(alphas) + bool(shots)), total, rows[-1])
    return pd.DataFrame(rows)


def _std(x: pd.Series) -> float:
    return float(x.std(ddof=1)) if len(x) > 1 else 0.0


def table3_summary(cells: pd.DataFrame, alpha: float = TABLE3_ALPHA) -> pd.DataFrame:
    """Per strategy: Δ task and Δ support accuracy at α against θ_B's own (α = 0), mean ± std over the
    (fine-tune, receiver) combinations."""
    base = cells[cells["alpha"] == 0].set_index(["strategy", "a_ft", "b"])
    at = cells[cells["alpha"] == alpha].set_index(["strategy", "a_ft", "b"])
    delta = at[["task_accuracy", "support_accuracy"]] - base[["task_accuracy", "support_accuracy"]]
    out = []
    for strategy in dict.fromkeys(cells["strategy"]):
        d = delta.loc[strategy]
        out.append({"strategy": strategy, "label": LABELS[strategy], "alpha": alpha, "combinations": len(d),
                    "task_delta_mean": d["task_accuracy"].mean(), "task_delta_std": _std(d["task_accuracy"]),
                    "support_delta_mean": d["support_accuracy"].mean(),
                    "support_delta_std": _std(d["support_accuracy"])})
    return pd.DataFrame(out)


def table4_summary(cells: pd.DataFrame) -> pd.DataFrame:
    """Per strategy: Δ task and Δ support accuracy of the few-shot fitted transport against θ_B's own,
    mean ± std over the combinations (alpha NaN: one α per layer, learned)."""
    fitted = cells[cells["fitted"]].copy()
    fitted["alpha"] = 1.0  # so table3_summary reads the fitted rows as its α
    summary = table3_summary(pd.concat([cells[cells["alpha"] == 0], fitted]), alpha=1.0)
    summary["alpha"] = float("nan")
    return summary


def fig4_summary(cells: pd.DataFrame) -> pd.DataFrame:
    """Per strategy and α: both accuracies, mean ± std over the combinations."""
    grouped = cells.groupby(["strategy", "alpha"], sort=False)
    out = grouped[["task_accuracy", "support_accuracy"]].mean().add_suffix("_mean")
    spread = grouped[["task_accuracy", "support_accuracy"]].std(ddof=1).fillna(0.0).add_suffix("_std")
    return out.join(spread).reset_index()


def _pp(mean: float, std: float) -> str:
    return f"{100 * mean:+.1f} ± {100 * std:.1f} pp"


def _paper_cells(strategy: str) -> str:
    """The paper's Table 3 row for a strategy, task/support per task (pp), or "(not in the paper)"."""
    return _printed(TABLE3, TASKS, PAPER_ROWS[strategy]) if strategy in PAPER_ROWS else "(not in the paper)"


def _transport_text(summary: pd.DataFrame, cells: pd.DataFrame, markdown: bool, first: str, width: int,
                    labels: dict[str, str], printed: Callable[[str], str], zero: str, note: str,
                    verdicts: list[str], own: bool = False) -> str:
    """A transport table as a person reads it: θ_B's own accuracy, then our rows under the paper's names beside
    its printed cells (`printed(strategy)`, `zero` for θ_B's), the setting note, and each claim's verdict."""
    alpha = summary["alpha"].iloc[0]
    base = cells[cells["alpha"] == 0]
    paper = "paper: Δ task / Δ support (pp), per task" if "/" in zero else "paper: Δ task (pp), per task"
    at = f"α = {alpha:g}" if alpha == alpha else "α per layer, few-shot"
    head = (first, f"Δ task accuracy ({at})", "Δ support accuracy", paper)
    lines = ["| " + " | ".join(head) + " |", "|---|---|---|---|"] if markdown else [
        f"{head[0]:<{width}}{head[1]:>24}{head[2]:>22}   {head[3]}"]
    rows = [("θ_B zero-shot (accuracy)", f"{100 * base['task_accuracy'].mean():.2f}%",
             f"{100 * base['support_accuracy'].mean():.2f}%", zero)]
    if own:  # the fine-tune on its own encoder: what its head is worth where it was trained
        tuned = cells.drop_duplicates(["a_ft", "b"])["fine_tune_accuracy"]
        rows.append(("A_ft as fine-tuned (accuracy)", f"{100 * tuned.mean():.2f}%", "", "(not printed)"))
    rows += [(labels[r["strategy"]], _pp(r["task_delta_mean"], r["task_delta_std"]),
              _pp(r["support_delta_mean"], r["support_delta_std"]), printed(r["strategy"]))
             for _, r in summary.iterrows()]
    for label, task, support, paper in rows:
        lines.append(f"| {label} | {task} | {support} | {paper} |" if markdown else
                     f"{label:<{width}}{task:>24}{support:>22}   {paper}")
    lines += ["", f"({note})", ""]
    lines += [("- " if markdown else "") + v for v in verdicts]
    return "\n".join(lines)


def _printed(table, tasks: tuple[str, ...], name: str, fmt: str = "+.2f", unit: str = "") -> str:
    """A printed row's cells task by task: task/support where the table prints both, else the task's alone."""
    n = table.row(name).numbers
    if len(n) == len(tasks):
        return " · ".join(f"{t} {v:{fmt}}{unit}" for t, v in zip(tasks, n))
    return " · ".join(f"{t} {n[2 * k]:{fmt}}{unit} / {n[2 * k + 1]:{fmt}}{unit}" for k, t in enumerate(tasks))


def table3_text(summary: pd.DataFrame, cells: pd.DataFrame, markdown: bool = False) -> str:
    """Table 3: our rows named as the paper's, beside its nine task/support cells, then its claims' verdicts."""
    return _transport_text(summary, cells, markdown, "strategy", 40, LABELS, _paper_cells,
                           _printed(TABLE3, TASKS, "θ_B zero-shot (accuracy %)", ".2f", "%"), setting(cells),
                           table3_verdicts(cells, summary["alpha"].iloc[0]))


def table1_text(summary: pd.DataFrame, cells: pd.DataFrame, markdown: bool = False) -> str:
    """Table 1: our rows under the paper's names, beside its eight task/support cells (four tasks), then its
    claims' verdicts."""
    return _transport_text(summary, cells, markdown, "method", 34, TABLE1_LABELS,
                           lambda strategy: _printed(TABLE1, TABLE1_TASKS, TABLE1_LABELS[strategy]),
                           _printed(TABLE1, TABLE1_TASKS, "θ_B zero-shot (accuracy %)", ".2f", "%"), TABLE1.zoo,
                           table1_verdicts(cells, summary["alpha"].iloc[0]))


def table2_text(summary: pd.DataFrame, cells: pd.DataFrame, markdown: bool = False) -> str:
    """Table 2: the classifier's body moved, its head re-used; our rows under the paper's names beside its
    four task cells, the fine-tune's own accuracy (what 'poor' is read against), then the claims' verdicts."""
    return _transport_text(summary, cells, markdown, "method", 34, TABLE2_LABELS,
                           lambda strategy: _printed(TABLE2, TABLE2_TASKS, TABLE2_LABELS[strategy]),
                           _printed(TABLE2, TABLE2_TASKS, "θ_B (accuracy %)", ".2f", "%"), TABLE2.zoo,
                           table2_verdicts(cells, summary["alpha"].iloc[0]), own=True)


def table4_text(summary: pd.DataFrame, cells: pd.DataFrame, markdown: bool = False) -> str:
    """Table 4: θ_B + ατ and θ_B + απ(τ) with α learned per layer on few shots, beside the paper's four task
    cells, then its claims' verdicts."""
    return _transport_text(summary, cells, markdown, "method", 34, TABLE4_LABELS,
                           lambda strategy: _printed(TABLE4, TABLE1_TASKS, TABLE4_LABELS[strategy]),
                           _printed(TABLE4, TABLE1_TASKS, "θ_B zero-shot (accuracy %)", ".2f", "%"), TABLE4.zoo,
                           table4_verdicts(cells))


def table4_verdicts(cells: pd.DataFrame) -> list[str]:
    """Table 4's claims in the paper's words, per (fine-tune, receiver) combination by the one rule."""
    if "fitted" not in cells or not set(TABLE4_STRATEGIES) <= set(cells["strategy"]):
        return []
    fitted = cells[cells["fitted"]].set_index(["strategy", "a_ft", "b"]).sort_index()["task_accuracy"]
    zero = cells[cells["alpha"] == 0].set_index(["strategy", "a_ft", "b"]).sort_index()["task_accuracy"]
    claims = TABLE4.claims
    return [f"\"{claims[0].quote}\": θ_B + απ(τ) − θ_B, task accuracy: "
            + verdict(_named(fitted.loc["spectral"] - zero.loc["spectral"]), " pp", 100, 1),
            f"\"{claims[1].quote}\": θ_B + απ(τ) − (θ_B + ατ), task accuracy: "
            + verdict(_named(fitted.loc["spectral"] - fitted.loc["without π"]), " pp", 100, 1)]


def _named(series: pd.Series) -> dict[str, float]:
    """Per (fine-tune, receiver) values keyed as a reader names the combination."""
    return {f"{ft.split(':')[-1]} → {b.split(':')[-1]}": float(v) for (ft, b), v in series.items()}


def _changes(cells: pd.DataFrame, alpha: float) -> Callable[..., pd.Series]:
    """change(strategy, column): per (fine-tune, receiver), the column at `alpha` minus at α = 0 (θ_B's own)."""
    at = cells[cells["alpha"] == alpha].set_index(["strategy", "a_ft", "b"]).sort_index()
    zero = cells[cells["alpha"] == 0].set_index(["strategy", "a_ft", "b"]).sort_index()
    return lambda strategy, column="task_accuracy": at.loc[strategy, column] - zero.loc[strategy, column]


def table2_verdicts(cells: pd.DataFrame, alpha: float = TABLE3_ALPHA) -> list[str]:
    """Table 2's claims in the paper's words, per (fine-tune, receiver) combination by the one rule."""
    if not set(TABLE1_STRATEGIES) <= set(cells["strategy"]):
        return []
    change = _changes(cells, alpha)
    plain = cells[(cells["alpha"] == 0) & (cells["strategy"] == "without π")].set_index(["a_ft", "b"]).sort_index()
    poor = plain["fine_tune_accuracy"] - plain["task_accuracy"]
    best_other = pd.concat([change(s) for s in ("without π", "ot", "git-rebasin")], axis=1).max(axis=1)
    claims = TABLE2.claims
    return [f"\"{claims[0].quote}\": the fine-tune's own accuracy − θ_B's with its head: "
            + verdict(_named(poor), " pp", 100, 1),
            f"\"{claims[1].quote}\": TransFusion's Δ task − the largest of θ_B + τ's, OT's and Git Re-Basin's: "
            + verdict(_named(change("spectral") - best_other), " pp", 100, 1)]


def table1_verdicts(cells: pd.DataFrame, alpha: float = TABLE3_ALPHA) -> list[str]:
    """Table 1's claims in the paper's words, decided per (fine-tune, receiver) combination by the one rule."""
    if not set(TABLE1_STRATEGIES) <= set(cells["strategy"]):
        return []
    change = _changes(cells, alpha)
    ours_task, ours_support = change("spectral", "task_accuracy"), change("spectral", "support_accuracy")
    best_other = pd.concat([change("ot", "task_accuracy"), change("git-rebasin", "task_accuracy")], axis=1).max(axis=1)
    claims = TABLE1.claims
    return [f"\"{claims[0].quote}\": TransFusion's Δ task: " + verdict(_named(ours_task), " pp", 100, 1),
            f"\"{claims[1].quote}\": 1 pp − |TransFusion's Δ support|: "
            + verdict(_named(0.01 - ours_support.abs()), " pp", 100, 1),
            f"\"{claims[2].quote}\": TransFusion's Δ task − the larger of OT's and Git Re-Basin's: "
            + verdict(_named(ours_task - best_other), " pp", 100, 1)]


def _per_combination(cells: pd.DataFrame, alpha: float, column: str, better: str, worse: str) -> dict[str, float]:
    at = cells[cells["alpha"] == alpha].set_index(["strategy", "a_ft", "b"])[column]
    return _named(at.loc[better] - at.loc[worse])


def table3_verdicts(cells: pd.DataFrame, alpha: float = TABLE3_ALPHA) -> list[str]:
    """Each Table 3 claim in the paper's words, decided per (fine-tune, receiver) combination by the one
    verdict rule (symalign.papers.table)."""
    present = set(cells["strategy"])
    tests = [(0, "task_accuracy", "spectral", "brute-force", 0.0), (0, "task_accuracy", "spectral", "none", 0.0),
             (1, "task_accuracy", "none", "brute-force", 0.0),
             (2, "support_accuracy", "spectral", "brute-force", 0.01)]  # comparable: within 1 pp
    lines = []
    for claim, column, better, worse, slack in tests:
        if not {better, worse} <= present:
            continue
        diff = _per_combination(cells, alpha, column, better, worse)
        what = "task" if column == "task_accuracy" else "support"
        if slack:  # "comparable" either way: holds where the two are within `slack` of each other
            diff = {k: slack - abs(v) for k, v in diff.items()}
            compared = f"{100 * slack:g} pp − |{LABELS[better]} − {LABELS[worse]}|, Δ {what}"
        else:
            compared = f"{LABELS[better]} − {LABELS[worse]}, Δ {what}"
        lines.append(f"\"{TABLE3.claims[claim].quote}\": {compared}: " + verdict(diff, " pp", 100, 1))
    return lines


def fig4_text(summary: pd.DataFrame, cells: pd.DataFrame | None = None, markdown: bool = False,
              strategies: tuple[str, ...] = ("without π", "spectral", "circuit")) -> str:
    """Fig. 4 as a table: per α, task and support accuracy without π and with π (mean over combinations)."""
    shown = [s for s in strategies if s in set(summary["strategy"])]
    head = ["α"] + [f"{LABELS[s]}: {what}" for s in shown for what in ("task", "support")]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)] if markdown else [" | ".join(head)]
    for alpha in dict.fromkeys(summary["alpha"]):
        row = summary[summary["alpha"] == alpha].set_index("strategy")
        values = [f"{row.loc[s, f'{w}_accuracy_mean']:.1%}" for s in shown for w in ("task", "support")]
        lines.append("| " + " | ".join([f"{alpha:g}", *values]) + " |" if markdown else
                     " | ".join([f"{alpha:g}", *values]))
    lines += ["", f"({setting(cells)})"] if cells is not None else []
    lines += ["", fig4_verdict(cells)] if cells is not None else []
    return "\n".join(lines)


def fig4_verdict(cells: pd.DataFrame, aligned: str = "spectral") -> str:
    """Fig. 4's two claims in the paper's words, per combination: with π the task accuracy at α = 1 above
    without π; at every α ≥ 0.5 the support accuracy with π above without π (one pair = one α on one
    combination)."""
    if not {"without π", aligned} <= set(cells["strategy"]):
        return ""
    task = _per_combination(cells, 1.0, "task_accuracy", aligned, "without π") if 1.0 in set(cells["alpha"]) else {}
    support = {}
    for alpha in sorted(a for a in set(cells["alpha"]) if a >= 0.5):
        support |= {f"{k}, α {alpha:g}": v
                    for k, v in _per_combination(cells, alpha, "support_accuracy", aligned, "without π").items()}
    return "\n".join([f"\"{FIG4.claims[0].quote}\": {LABELS[aligned]} − no π, Δ task at α = 1: "
                      + verdict(task, " pp", 100, 1),
                      f"\"{FIG4.claims[1].quote}\": {LABELS[aligned]} − no π, Δ support at each α ≥ 0.5: "
                      + verdict(support, " pp", 100, 1)])


@dataclass(frozen=True)
class PresetView:
    """What one preset evaluates and shows: its α, its summary of the cells, its text, and the heading the
    command line prints above that text. One view per preset, read by `symalign sweep --preset` and by the
    recorded `paper` runs, so the two never drift apart."""

    alphas: tuple[float, ...]  # Table 3 reads θ_B (α = 0) and α = 1 only; Fig. 4 is a curve over all of them
    summary: Callable[[pd.DataFrame], pd.DataFrame]
    text: Callable[..., str]
    heading: str  # .format(family=..., n=...)
    strategies: tuple[str, ...] = STRATEGIES  # the rows it transports
    shots: int = 0  # > 0: each transport's α also learned per layer on that many examples per class


PRESETS = {
    "transfusion-table1": PresetView(TABLE3_ALPHAS, table3_summary, table1_text,
                                     "TransFusion Table 1 on {family}: accuracy change against θ_B, mean ± std "
                                     "over {n} (fine-tune, receiver) combinations", TABLE1_STRATEGIES),
    "transfusion-table2": PresetView(TABLE3_ALPHAS, table3_summary, table2_text,
                                     "TransFusion Table 2 on {family}: accuracy change against θ_B, mean ± std "
                                     "over {n} (fine-tune, receiver) combinations", TABLE1_STRATEGIES),
    "transfusion-table3": PresetView(TABLE3_ALPHAS, table3_summary, table3_text,
                                     "TransFusion Table 3 on {family}: accuracy change against θ_B, mean ± std "
                                     "over {n} (fine-tune, receiver) combinations"),
    "transfusion-table4": PresetView((0.0,), table4_summary, table4_text,
                                     "TransFusion Table 4 on {family}: accuracy change against θ_B after a per-layer "
                                     "α learned on few shots, mean ± std over {n} (fine-tune, receiver) "
                                     "combinations", TABLE4_STRATEGIES, SHOTS),
    "transfusion-fig4": PresetView(ALPHAS, fig4_summary, fig4_text,
                                   "TransFusion Fig. 4 on {family}: task and support accuracy against α, mean over "
                                   "{n} combinations"),
}


def preset_view(preset: str) -> PresetView:
    if preset not in PRESETS:
        raise SymalignError(f"unknown TransFusion preset {preset!r}; known: {', '.join(PRESETS)}")
    return PRESETS[preset]
