"""The loss landscape: curves between two models, the simplex of three, spectra of learned corrections."""

from __future__ import annotations

from symalign.cli.common import (
    Bar,
    add_data_flag,
    add_run_flags,
    add_split_flag,
    add_universe_flags,
    align_config,
    check_html,
    data_for,
    print_json,
    store_for,
)
from symalign.errors import SymalignError


def add_barrier(sub) -> None:
    p = sub.add_parser("barrier", help="loss along the straight line between two models, and its barrier")
    p.add_argument("a")
    p.add_argument("b")
    add_data_flag(p, "data spec; default: the models' own recipe data")
    p.add_argument("--points", type=int, default=21)
    p.add_argument("--max-examples", type=int, default=None)
    add_split_flag(p)
    p.add_argument("--device", default="auto")
    p.add_argument("--form", choices=("canonical", "raw"), default="canonical",
                   help="interpolate canonical forms (default) or the raw parameters")
    p.add_argument("--no-record", action="store_true", help="do not record the run in the run history")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_barrier)


def cmd_barrier(args) -> None:
    from symalign.runs.execute import barrier_run

    with Bar("interpolate") as bar:
        run_id, curve = barrier_run(args.a, args.b, data=args.data, points=args.points,
                                    max_examples=args.max_examples, device=args.device, form=args.form,
                                    store=store_for(args), source="cli", progress=bar.phases, split=args.split)
    if args.json:
        print_json(dict(curve.to_json(), run=run_id))
        return
    print(f"barrier {curve.barrier:.4f} (vs. mean of endpoints: {curve.barrier_mean:.4f}); endpoint losses "
          f"{curve.endpoint_loss[0]:.4f}, {curve.endpoint_loss[1]:.4f}; {curve.examples} examples, {curve.form} form")
    print(f"accuracy barrier {curve.accuracy_barrier:.2f} pp (vs. mean of endpoints: "
          f"{curve.accuracy_barrier_mean:.2f} pp); endpoint accuracies {curve.endpoint_accuracy[0]:.3f}, "
          f"{curve.endpoint_accuracy[1]:.3f}")
    for lam, loss, acc in zip(curve.lambdas, curve.loss, curve.accuracy):
        print(f"  λ = {lam:.2f}  loss {loss:.4f}  accuracy {acc:.3f}")
    if run_id:
        print(f"recorded as run {run_id}")


def add_simplex(sub) -> None:
    p = sub.add_parser("simplex", help="loss over the simplex of three models (after universe alignment)")
    add_universe_flags(p, default_method="none")
    p.add_argument("--resolution", type=int, default=10, help="grid steps per edge: (r+1)(r+2)/2 points")
    p.add_argument("--epsilon", type=float, default=0.05, help="near-zero region: loss ≤ corner plane + ε")
    p.add_argument("--max-examples", type=int, default=None)
    add_run_flags(p, "data spec; default: the models' own recipe data")
    add_split_flag(p)
    p.add_argument("--html", default=None, help="write the ternary figure to this HTML file")
    p.set_defaults(func=cmd_simplex)


def cmd_simplex(args) -> None:
    from symalign.runs.many import simplex_run

    check_html(args.html)
    if len(args.models) != 3:
        raise SymalignError(f"simplex needs exactly three models (got {len(args.models)})")
    config = align_config(args, data_for(args, args.models))
    with Bar(f"simplex ({args.method})") as bar:
        run_id, surface = simplex_run(args.models, config, resolution=args.resolution, epsilon=args.epsilon,
                                      max_examples=args.max_examples, store=store_for(args), source="cli",
                                      progress=bar.phases, split=args.split)
    if args.html:
        from symalign.plots import simplex_figure

        title = f"{args.method}: A = {args.models[0]}, B = {args.models[1]}, C = {args.models[2]}"
        simplex_figure(surface.to_json(), title).write_html(args.html, include_plotlyjs=True)
    out = dict(surface.to_json(), method=args.method, run=run_id)
    if args.json:
        print_json(out)
        return
    print(f"simplex of {', '.join(args.models)} ({args.method}), resolution {args.resolution} "
          f"({len(surface.weights)} points, {surface.examples} examples each)")
    print(f"  corner losses {', '.join(f'{c:.4f}' for c in surface.corner_loss)}; max loss {surface.max_loss:.4f}")
    print(f"  max barrier above the corner plane {surface.max_barrier:.4f}; near-zero region (≤ ε = "
          f"{surface.epsilon:g}) {100 * surface.near_zero_fraction:.0f}% of the simplex")
    if args.html:
        print(f"  figure: {args.html}")
    if run_id:
        print(f"recorded as run {run_id}")


def add_spectrum(sub) -> None:
    p = sub.add_parser("spectrum", help="eigen-angles of a learned alignment's orthogonal corrections")
    p.add_argument("alignment", metavar="ALIGNMENT_DIR")
    p.add_argument("--html", default=None, help="write the histograms to this HTML file")
    p.add_argument("--no-record", action="store_true", help="do not record the run in the run history")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_spectrum)


def cmd_spectrum(args) -> None:
    from symalign.runs.execute import spectrum_run

    check_html(args.html)
    run_id, result = spectrum_run(args.alignment, store=store_for(args), source="cli")
    if args.html:
        from symalign.plots import spectrum_figure

        spectrum_figure(result).write_html(args.html, include_plotlyjs=True)
    if args.json:
        print_json(dict(result, run=run_id))
        return
    print(f"eigen-angles of the learned corrections in {args.alignment} ({result.get('method')}):")
    for kind, s in result["summary"].items():
        print(f"  {kind:<9} median {s['median']:.3f} rad, 90th percentile {s['p90']:.3f}, "
              f"{100 * s['share_below_0.1']:.0f}% below 0.1 rad ({s['count']} eigenvalues)")
    for space, share in result["permutation_stability"].items():
        print(f"  {space}: {100 * share:.1f}% of the permutation left where weight matching put it")
    if args.html:
        print(f"  figure: {args.html}")
    if run_id:
        print(f"recorded as run {run_id}")


COMMANDS = (add_barrier, add_simplex, add_spectrum,)
