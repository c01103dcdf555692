"""TransFusion's transport experiments on the zoo (`symalign sweep --preset transfusion-table3 |
transfusion-fig4`): a fine-tune's task vector τ carried into another seed by each head strategy.

Table 3 compares how heads are paired before the task vector moves: no head alignment (heads in order,
the maps inside them still aligned), brute force (every head pair aligned inside, then the Hungarian
pairing), TransFusion's spectral distance, and symalign's circuits. It reports the change in the
fine-tune task's accuracy and in the support set's (the original task's) against θ_B's own. Fig. 4
sweeps α in [0.01, 2] for θ_B + α·τ (no π) against θ_B + α·π(τ), on both accuracies.

The zoo's transport pair: base zoo:BASE/0, its fine-tunes zoo:FINE_TUNE/s (s = 0, 1, 2; vit-digits
fine-tuned on flipped digits), received by zoo:BASE/1 and /2: six (fine-tune, receiver) combinations,
each transported once per strategy at every α, so both presets read the same runs."""

from __future__ import annotations

import time
from collections.abc import Callable

import pandas as pd

from symalign.errors import SymalignError

STRATEGIES = ("without π", "none", "brute-force", "spectral", "circuit")  # without π: `transport --align none`
LABELS = {"without π": "θ_B + α·τ (no alignment)", "none": "no head alignment (heads in order)",
          "brute-force": "brute force", "spectral": "spectral (TransFusion's)", "circuit": "circuits (symalign's)"}
ALPHAS = (0.0, 0.01, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 2.0)  # 0 is θ_B itself: the zero-shot reference
TABLE3_ALPHA = 1.0
TRANSPORT_PAIRS = {"vit-digits": "vit-digits-flipped", "gpt-shakespeare": "gpt-shakespeare-upper"}
Progress = Callable[[int, int, dict], None]
SETTING = {"vit-digits": "digit ViTs trained further on flipped digits",
           "gpt-shakespeare": "character-level GPT-2s trained further on the plays in capitals"}


def setting(cells: pd.DataFrame) -> str:
    """The one line that says how the zoo's transports differ from TransFusion's."""
    family = cells["b"].iloc[0].split(":")[-1].rsplit("/", 1)[0]
    return ("not comparable in size: TransFusion transports fine-tunes of CLIP ViT-B/16 between pre-trainings on "
            f"image-classification tasks; the zoo's fine-tunes are {SETTING.get(family, family)}")


def transport_combinations(family: str, fine_tunes: list[int] | None = None,
                           receivers: list[int] | None = None) -> list[tuple[str, str, str]]:
    """(A, A_FT, B) for every fine-tune seed and receiving seed of the family's transport pair."""
    if family not in TRANSPORT_PAIRS:
        raise SymalignError(f"the transport presets run on {', '.join(TRANSPORT_PAIRS)} (the zoo's fine-tunes); "
                            f"got --family {family or '(none)'}")
    tuned = TRANSPORT_PAIRS[family]
    return [(f"zoo:{family}/0", f"zoo:{tuned}/{s}", f"zoo:{family}/{r}")
            for s in (fine_tunes or [0, 1, 2]) for r in (receivers or [1, 2])]


def transfusion_cells(family: str, fine_tunes: list[int] | None = None, receivers: list[int] | None = None,
                      alphas: tuple[float, ...] = ALPHAS, strategies: tuple[str, ...] = STRATEGIES,
                      max_examples: int | None = None, device: str = "cpu",
                      progress: Progress | None = None) -> pd.DataFrame:
    """One row per (strategy, fine-tune, receiver, α): both tasks' accuracy and loss."""
    from symalign.barrier import default_data_spec
    from symalign.match.config import AlignConfig
    from symalign.merge.task_vectors import transport, with_head_strategy
    from symalign.models import load_model

    combos = transport_combinations(family, fine_tunes, receivers)
    rows, total = [], len(combos) * len(strategies)
    for a_ref, ft_ref, b_ref in combos:
        a, ft, b = load_model(a_ref), load_model(ft_ref), load_model(b_ref)
        data_task, data_base = default_data_spec(ft), default_data_spec(a)
        for strategy in strategies:
            began = time.perf_counter()
            how = "none" if strategy == "without π" else "weight"
            config = None if how == "none" else with_head_strategy(
                AlignConfig(method="weight", preset="all", data=data_base, device=device), strategy)
            result = transport(a, ft, b, list(alphas), data_task, data_base, how, max_examples=max_examples,
                               device=device, config=config)
            seconds = time.perf_counter() - began
            for i, alpha in enumerate(alphas):
                rows.append({"strategy": strategy, "a_ft": ft_ref, "b": b_ref, "alpha": alpha,
                             "task_accuracy": result.task_accuracy[i], "support_accuracy": result.base_accuracy[i],
                             "task_loss": result.task_loss[i], "support_loss": result.base_loss[i],
                             "seconds": seconds})
            if progress:
                progress(len(rows) // len(alphas), total, rows[-1])
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


def fig4_summary(cells: pd.DataFrame) -> pd.DataFrame:
    """Per strategy and α: both accuracies, mean ± std over the combinations."""
    grouped = cells.groupby(["strategy", "alpha"], sort=False)
    out = grouped[["task_accuracy", "support_accuracy"]].mean().add_suffix("_mean")
    spread = grouped[["task_accuracy", "support_accuracy"]].std(ddof=1).fillna(0.0).add_suffix("_std")
    return out.join(spread).reset_index()


def _pp(mean: float, std: float) -> str:
    return f"{100 * mean:+.1f} ± {100 * std:.1f} pp"


def table3_text(summary: pd.DataFrame, cells: pd.DataFrame, markdown: bool = False) -> str:
    """Table 3 as a person reads it, then what the numbers say of TransFusion's claims (per combination
    where one goes the other way)."""
    head = ("strategy", f"Δ task accuracy (α = {summary['alpha'].iloc[0]:g})", "Δ support accuracy", "paper")
    lines = ["| " + " | ".join(head) + " |", "|---|---|---|---|"] if markdown else [
        f"{head[0]:<38}{head[1]:>30}{head[2]:>24}"]
    for _, r in summary.iterrows():
        task, support = _pp(r["task_delta_mean"], r["task_delta_std"]), _pp(r["support_delta_mean"],
                                                                             r["support_delta_std"])
        lines.append(f"| {r['label']} | {task} | {support} | not transcribed |" if markdown else
                     f"{r['label']:<38}{task:>30}{support:>24}")
    lines += ["", f"({setting(cells)}; the paper's values are not transcribed here)", ""]
    lines += [("- " if markdown else "") + v for v in table3_verdicts(cells, summary["alpha"].iloc[0])]
    return "\n".join(lines)


def table3_verdicts(cells: pd.DataFrame, alpha: float = TABLE3_ALPHA) -> list[str]:
    """TransFusion's reading of Table 3 checked per combination: aligning heads (brute force, spectral)
    carries more of the task than keeping them in order, and spectral comes close to brute force."""
    at = cells[cells["alpha"] == alpha].set_index(["strategy", "a_ft", "b"])["task_accuracy"]
    present = set(cells["strategy"])
    lines = []
    for better, worse in (("brute-force", "none"), ("spectral", "none"), ("circuit", "none"),
                          ("spectral", "brute-force")):
        if not {better, worse} <= present:
            continue
        gain = at.loc[better] - at.loc[worse]
        against = [f"{ft.split(':')[-1]} → {b.split(':')[-1]} ({100 * g:+.1f} pp)" for (ft, b), g in gain.items()
                   if g < 0]
        lines.append(f"{LABELS[better]} against {LABELS[worse]}: task accuracy {100 * gain.mean():+.1f} pp on "
                     f"average ({'higher' if gain.mean() > 0 else 'not higher'}"
                     + (f"; lower on {', '.join(against)}" if against else "; on every combination") + ")")
    return lines


def fig4_text(summary: pd.DataFrame, markdown: bool = False,
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
    lines += ["", fig4_verdict(summary)]
    return "\n".join(lines)


def fig4_verdict(summary: pd.DataFrame, aligned: str = "spectral") -> str:
    """TransFusion's Fig. 4 claim from the numbers: with π the task accuracy climbs higher over α than
    without, at a support accuracy no lower."""
    def best(strategy: str) -> tuple[float, float, float]:
        part = summary[summary["strategy"] == strategy]
        top = part.loc[part["task_accuracy_mean"].idxmax()]
        return float(top["alpha"]), float(top["task_accuracy_mean"]), float(top["support_accuracy_mean"])

    if not {"without π", aligned} <= set(summary["strategy"]):
        return ""
    a0, t0, s0 = best("without π")
    a1, t1, s1 = best(aligned)
    return (f"best task accuracy without π {t0:.1%} (α {a0:g}, support {s0:.1%}); with π ({LABELS[aligned]}) "
            f"{t1:.1%} (α {a1:g}, support {s1:.1%}): π carries more of the task: "
            f"{'agrees' if t1 > t0 else 'does not agree'}; at no cost to the support set: "
            f"{'agrees' if s1 >= s0 else 'does not agree'}")
