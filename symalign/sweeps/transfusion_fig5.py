"""TransFusion's Fig. 5 on the zoo (`symalign paper transfusion-fig5 --run`): the loss along the straight path
from A to B after each alignment the figure compares: none (vanilla), TransFusion (permutations only, one
P_attn per head for Q, K and V, the spectral head distance), the same without the residual's permutation,
Git Re-Basin (MLP units and whole heads) and OT (OT-WTS with exact plans on the FFN). The figure's reading of
OT and Git Re-Basin is that they lose B's function; here every alignment is applied as a symmetry of the
model, so the aligned end's loss is B's own, and the claim is decided on that gap."""

from __future__ import annotations

from collections.abc import Callable

from symalign.papers.table import verdict
from symalign.papers.transfusion import FIG5, PERMUTATION_ONLY
from symalign.sweeps.transfusion import GIT_RE_BASIN
from symalign.sweeps.zhang_figures import row_curves

# (label, how B is aligned: None, "ot-ffn", or weight matching's (classes, options))
ROWS: tuple[tuple[str, object], ...] = (
    ("vanilla", None),
    ("TransFusion", (dict(PERMUTATION_ONLY), {"shared_qkv": True, "head_cost": "spectral"})),
    ("no residual", ({**PERMUTATION_ONLY, "residual": "none"}, {"shared_qkv": True, "head_cost": "spectral"})),
    ("Git Re-Basin", (GIT_RE_BASIN, {})),
    ("OT (OT-WTS, exact, FFN)", "ot-ffn"),
)
PRESERVED = 1e-3  # nats: an aligned end whose loss is further than this from B's own has lost B's function
Progress = Callable[[int, int, dict], None]


def _aligned(a, b, how, device: str):
    from symalign.match.align import align
    from symalign.match.config import AlignConfig
    from symalign.merge.ot_fusion import OTSettings, fuse_members
    from symalign.models import canonicalize

    if how is None:
        return canonicalize(b)
    if how == "ot-ffn":
        return fuse_members([a, b], "ot-wts", settings=OTSettings("emd"), kinds=("mlp",))[1]
    classes, options = how
    return align(a, b, AlignConfig.from_options(options, method="weight", classes=classes, device=device)).aligned


def fig5_curves(family: str, seeds: list[int] | None = None, points: int = 21, max_examples: int | None = None,
                device: str = "cpu", progress: Progress | None = None) -> dict[str, list[dict]]:
    """Per row, the loss along A → aligned B on each pair's evaluation split."""
    return row_curves(family, ROWS, _aligned, seeds, points, max_examples, device, progress)


def _pair(c: dict) -> str:
    return f"{c['a'].rsplit('/', 1)[-1]} ↔ {c['b'].rsplit('/', 1)[-1]}"


def fig5_text(curves: dict[str, list[dict]]) -> str:
    """The barrier and the aligned end's loss gap per row (mean ± spread over the pairs), and the three claims
    decided per pair by the one verdict rule."""
    import statistics

    def spread(values: list[float]) -> str:
        return f"{statistics.fmean(values):.4f} ± {statistics.stdev(values) if len(values) > 1 else 0:.4f}"

    own = {_pair(c): c["loss"][-1] for c in curves["vanilla"]}  # B's own loss: the unaligned path's end
    lines = ["| row | barrier | aligned end's loss − B's own |", "|---|---|---|"]
    for label, runs in curves.items():
        lines.append(f"| {label} | {spread([c['barrier'] for c in runs])} | "
                     f"{spread([c['loss'][-1] - own[_pair(c)] for c in runs])} |")
    barrier = {label: {_pair(c): c["barrier"] for c in runs} for label, runs in curves.items()}
    ours = barrier["TransFusion"]
    lines += ["", f"({FIG5.zoo})", "",
              f"- \"{FIG5.claims[0].quote}\": vanilla − TransFusion, barrier per pair: "
              + verdict({p: barrier["vanilla"][p] - ours[p] for p in ours}, digits=3),
              f"- \"{FIG5.claims[1].quote}\": no residual − TransFusion, barrier per pair: "
              + verdict({p: barrier["no residual"][p] - ours[p] for p in ours}, digits=3)]
    lost = {f"{label}, {_pair(c)}": abs(c["loss"][-1] - own[_pair(c)]) - PRESERVED
            for label in ("Git Re-Basin", "OT (OT-WTS, exact, FFN)") for c in curves[label]}
    lines.append(f"- \"{FIG5.claims[2].quote}\": |aligned end's loss − B's own| − {PRESERVED:g} nats, per pair and "
                 "method: " + verdict(lost, digits=4))
    return "\n".join(lines)
