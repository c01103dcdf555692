"""Where a barrier lives: `symalign attribute` (which parameter groups hold it,
symalign.landscape.attribution) and `symalign correlations` (how alike the pair's features are per
layer, before and after alignment, and the head blocks: symalign.match.activation.correlations)."""

from __future__ import annotations

from symalign.cli.common import (
    Bar,
    add_class_flags,
    add_data_flag,
    add_option_flags,
    add_split_flag,
    align_config,
    at_least,
    check_html,
    print_json,
)
from symalign.errors import SymalignError
from symalign.match.matchers import method_names


def add_attribute(sub) -> None:
    p = sub.add_parser("attribute", help="the barrier when only one group moves: each block's attention, MLP, "
                                         "norms, the embeddings, the head")
    p.add_argument("a")
    p.add_argument("b")
    p.add_argument("--method", default="none", choices=method_names(),
                   help="align B to A first with this matcher (default none: where the vanilla barrier lives)")
    add_class_flags(p)
    add_option_flags(p, universe=False)
    add_data_flag(p, "data spec; default: the models' own recipe data")
    add_split_flag(p)
    p.add_argument("--points", type=int, default=11, help="λ points per curve (odd: λ = 0.5 is one of them)")
    p.add_argument("--eval-examples", type=at_least(1), default=None, metavar="N",
                   help="evaluation examples per curve point (default: the data's; --max-examples is activation "
                        "matching's own)")
    p.add_argument("--device", default="auto")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--swap", action="store_true",
                   help="with --method learned or soft: instead, start from the weight-matching transform the "
                        "learned run began with and switch one group (residual, a block's attention, a block's MLP) "
                        "to the learned run's, ranking groups by the share of learned matching's gain each carries")
    p.add_argument("--html", default=None, help="write the ranked bar chart to this HTML file")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_attribute)


def cmd_attribute(args) -> None:
    from symalign.data import load_data
    from symalign.data.splits import split_view
    from symalign.device import pick_device
    from symalign.landscape.attribution import attribute
    from symalign.match.align import align
    from symalign.models import canonicalize, load_model
    from symalign.models.io import default_data_spec
    from symalign.models.widen import check_pair
    from symalign.plots.attribution import attribution_figure
    from symalign.progress import phase

    check_html(args.html)
    if args.points < 3 or args.points % 2 == 0:
        raise SymalignError(f"--points must be odd and at least 3 (λ = 0.5 is read); got {args.points}")
    a, b = load_model(args.a), load_model(args.b)
    check_pair(a, b)
    spec = args.data or default_data_spec(a)
    data = split_view(load_data(spec), args.split)
    a = canonicalize(a)
    if args.swap:
        return _swaps(args, a, canonicalize(b), spec, data)
    with Bar(f"attribute ({args.method})") as bar:
        if args.method != "none":
            b = align(a, b, align_config(args, spec), progress=phase(bar.phases, "align")).aligned
        whole, groups = attribute(a, canonicalize(b), data, points=args.points, max_examples=args.eval_examples,
                                  device=pick_device(args.device), progress=phase(bar.phases, "groups"))
    out = {"a": args.a, "b": args.b, "method": args.method, "data": spec, "split": args.split, "barrier": whole,
           "groups": [g.to_json() for g in groups]}
    if _emitted(args, out, attribution_figure):
        return
    print(f"barrier of the whole path ({args.method}): {whole:.4f}; each group moving alone, the loss it adds "
          "halfway (λ = 0.5) above A's and B's own (and its path's barrier):")
    for g in groups:
        print(f"  {g.group:<24} rest at A {g.rise_at_a:+.4f} ({g.rest_at_a:.4f})   "
              f"rest at B {g.rise_at_b:+.4f} ({g.rest_at_b:.4f})")
    if args.html:
        print(f"figure: {args.html}")


def _emitted(args, out: dict, figure) -> bool:
    """Write --html's figure of `out`; print it as --json (True: the JSON was the output)."""
    if args.html:
        figure(out).write_html(args.html, include_plotlyjs=True)
    if args.json:
        print_json(out)
    return bool(args.json)


def _swaps(args, a, b, spec: str, data) -> None:
    """`attribute --swap`: which group's learned transform carries learned matching's gain."""
    from symalign.device import pick_device
    from symalign.landscape.swaps import swap_barriers
    from symalign.match.align import align
    from symalign.plots.attribution import swap_figure
    from symalign.progress import phase

    if args.method not in ("learned", "soft"):
        raise SymalignError(f"--swap compares learned matching with the weight matching it starts from: use "
                            f"--method learned or soft (got {args.method})")
    with Bar(f"attribute --swap ({args.method})") as bar:
        alignment = align(a, b, align_config(args, spec), progress=phase(bar.phases, "align"))
        if alignment.start is None:
            raise SymalignError("this learned run kept no start transform to swap from")
        weight, learned, swaps = swap_barriers(a, b, alignment.start, alignment.transform, data, points=args.points,
                                               max_examples=args.eval_examples, device=pick_device(args.device),
                                               progress=phase(bar.phases, "swaps"))
    out = {"a": args.a, "b": args.b, "method": args.method, "data": spec, "split": args.split,
           "weight_barrier": weight, "learned_barrier": learned, "swaps": [s.to_json() for s in swaps]}
    if _emitted(args, out, swap_figure):
        return
    print(f"barrier with weight matching's transform {weight:.4f}, with {args.method} matching's {learned:.4f}; "
          "each group switched alone to the learned one:")
    for s in swaps:
        print(f"  {s.group:<20} {s.barrier:.4f}  ({100 * s.closed:.0f}% of the gain)")
    if args.html:
        print(f"figure: {args.html}")


def add_correlations(sub) -> None:
    p = sub.add_parser("correlations", help="how alike two models' features are per layer, before and after "
                                            "alignment, and the head-output correlation map (head blocks)")
    p.add_argument("a")
    p.add_argument("b")
    p.add_argument("--method", default="activation", choices=[m for m in method_names() if m != "none"],
                   help="the matcher that aligns B (default activation: Verma & Elbayad's)")
    add_class_flags(p)
    add_option_flags(p, universe=False)
    add_data_flag(p, "data spec; default: the models' own recipe data")
    add_split_flag(p)
    p.add_argument("--examples", type=at_least(1), default=256, metavar="N",
                   help="evaluation examples whose features are correlated (default 256)")
    p.add_argument("--layer", type=int, default=0,
                   help="the block whose head map is drawn and kept in the JSON")
    p.add_argument("--device", default="auto")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--html", default=None, help="write the per-layer curve and the head map to this HTML file")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_correlations)


def cmd_correlations(args) -> None:
    from symalign.data import load_data
    from symalign.data.splits import split_view
    from symalign.device import pick_device
    from symalign.match.activation.correlations import feature_correlations
    from symalign.match.align import align
    from symalign.models import canonicalize, load_model
    from symalign.models.io import default_data_spec
    from symalign.models.widen import check_pair
    from symalign.plots.correlations import correlations_html
    from symalign.progress import phase

    check_html(args.html)
    a, b = load_model(args.a), load_model(args.b)
    check_pair(a, b)
    if not -a.dims.n_layer <= args.layer < a.dims.n_layer:
        raise SymalignError(f"--layer {args.layer}: the models have blocks 0-{a.dims.n_layer - 1}")
    layer = args.layer % a.dims.n_layer
    spec = args.data or default_data_spec(a)
    data = split_view(load_data(spec), args.split)
    a, b = canonicalize(a), canonicalize(b)
    with Bar(f"correlations ({args.method})") as bar:
        aligned = align(a, b, align_config(args, spec), progress=phase(bar.phases, "align")).aligned
        report = feature_correlations(a, b, aligned, data, args.examples, pick_device(args.device))
    out = {"a": args.a, "b": args.b, "method": args.method, "data": spec, "split": args.split,
           "examples": args.examples, "heatmap_layer": layer} | report.to_json(matrices_of=layer)
    if args.html:
        from pathlib import Path

        Path(args.html).write_text(correlations_html(out, layer, f"Matched-feature correlation ({args.method}): "
                                                                 f"{args.a} ↔ {args.b}"), encoding="utf-8")
    if args.json:
        print_json(out)
        return
    print(f"mean correlation of unit i of A with unit i of B, before → after {args.method} alignment:")
    for r in report.layers:
        print(f"  block {r.layer} {r.kind:<9} {r.before:+.3f} → {r.after:+.3f}")
    print("head-output |corr| inside the head blocks vs across them, before → after:")
    for h in report.heads:
        print(f"  block {h.layer}: within {h.within_before:.3f} → {h.within_after:.3f}, "
              f"across {h.across_before:.3f} → {h.across_after:.3f}")
    if args.html:
        print(f"figure: {args.html}")


COMMANDS = (add_attribute, add_correlations)
