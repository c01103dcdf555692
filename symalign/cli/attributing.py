"""`symalign attribute`: which parameter groups hold a pair's barrier (symalign.landscape.attribution)."""

from __future__ import annotations

from symalign.cli.common import (
    Bar,
    add_class_flags,
    add_data_flag,
    add_option_flags,
    add_split_flag,
    align_config,
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
    p.add_argument("--eval-examples", type=int, default=None, metavar="N",
                   help="evaluation examples per curve point (default: the data's; --max-examples is activation "
                        "matching's own)")
    p.add_argument("--device", default="auto")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--html", default=None, help="write the ranked bar chart to this HTML file")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_attribute)


def cmd_attribute(args) -> None:
    from symalign.barrier import default_data_spec
    from symalign.data import load_data
    from symalign.data.splits import split_view
    from symalign.device import pick_device
    from symalign.landscape.attribution import attribute
    from symalign.match.align import align
    from symalign.models import canonicalize, load_model
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
    with Bar(f"attribute ({args.method})") as bar:
        if args.method != "none":
            b = align(a, b, align_config(args, spec), progress=phase(bar.phases, "align")).aligned
        whole, groups = attribute(a, canonicalize(b), data, points=args.points, max_examples=args.eval_examples,
                                  device=pick_device(args.device), progress=phase(bar.phases, "groups"))
    out = {"a": args.a, "b": args.b, "method": args.method, "data": spec, "split": args.split, "barrier": whole,
           "groups": [g.to_json() for g in groups]}
    if args.html:
        attribution_figure(out).write_html(args.html, include_plotlyjs=True)
    if args.json:
        print_json(out)
        return
    print(f"barrier of the whole path ({args.method}): {whole:.4f}; each group moving alone, the loss it adds "
          "halfway (λ = 0.5) above A's and B's own (and its path's barrier):")
    for g in groups:
        print(f"  {g.group:<24} rest at A +{g.rise_at_a:.4f} ({g.rest_at_a:.4f})   "
              f"rest at B +{g.rise_at_b:.4f} ({g.rest_at_b:.4f})")
    if args.html:
        print(f"figure: {args.html}")


COMMANDS = (add_attribute,)
