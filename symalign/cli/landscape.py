"""The loss landscape: curves between two models, the simplex of three, spectra of learned corrections."""

from __future__ import annotations

from symalign.cli.common import (
    Bar,
    add_class_flags,
    add_data_flag,
    add_max_examples_flag,
    add_run_flags,
    add_split_flag,
    add_universe_flags,
    align_config,
    at_least,
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
    p.add_argument("--points", type=at_least(2), default=21)
    add_max_examples_flag(p)
    add_split_flag(p)
    p.add_argument("--device", default="auto")
    p.add_argument("--form", choices=("canonical", "raw"), default="canonical",
                   help="interpolate canonical forms (default) or the raw parameters")
    p.add_argument("--no-record", action="store_true", help="do not record the run in the run history")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_barrier)


def cmd_barrier(args) -> None:
    from symalign.workflows.execute import barrier_run

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
    pseudo = curve.extra.get("pseudo_perplexity")
    if pseudo:  # a masked LM: Salazar et al.'s pseudo-perplexity too (not Verma & Elbayad's eq. 11)
        print(f"pseudo-perplexity barrier {curve.extra['pseudo_perplexity_barrier']:.3f}; endpoints "
              f"{pseudo[0]:.3f}, {pseudo[-1]:.3f} (every position masked in turn, "
              f"{curve.extra['pseudo_perplexity_tokens']} tokens)")
    for i, (lam, loss, acc) in enumerate(zip(curve.lambdas, curve.loss, curve.accuracy)):
        print(f"  λ = {lam:.2f}  loss {loss:.4f}  accuracy {acc:.3f}"
              + (f"  pseudo-perplexity {pseudo[i]:.3f}" if pseudo else ""))
    if run_id:
        print(f"recorded as run {run_id}")


def add_simplex(sub) -> None:
    p = sub.add_parser("simplex", help="loss over the simplex of three models (after universe alignment)")
    add_universe_flags(p, default_method="none")
    p.add_argument("--resolution", type=int, default=10, help="grid steps per edge: (r+1)(r+2)/2 points")
    p.add_argument("--epsilon", type=float, default=0.05, help="near-zero region: loss ≤ corner plane + ε")
    add_max_examples_flag(p)
    add_run_flags(p, "data spec; default: the models' own recipe data")
    add_split_flag(p)
    p.add_argument("--html", default=None, help="write the ternary figure to this HTML file")
    p.set_defaults(func=cmd_simplex)


def cmd_simplex(args) -> None:
    from symalign.workflows.many import simplex_run

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
    from symalign.workflows.execute import spectrum_run

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


def add_curve(sub) -> None:
    from symalign.landscape.curve_options import BENDS, CurveOptions
    from symalign.match.matchers import method_names

    defaults = CurveOptions()
    p = sub.add_parser("curve", help="fit a curved low-loss path from A to B (Garipov et al.), beside the straight "
                                     "line before and after alignment")
    p.add_argument("a")
    p.add_argument("b")
    p.add_argument("--align", default="none", metavar="METHOD|DIR|RUN",
                   help=f"align B to A first: a method ({', '.join(method_names())}; classes from --classes and the "
                        "per-kind flags, default all), an alignment folder (`symalign align --out`), or an align "
                        "run's id; none (default) fits the curve between the models as given")
    add_class_flags(p)
    p.add_argument("--bend", choices=BENDS, default=defaults.bend,
                   help="bezier: a quadratic Bézier curve through a fitted control point; polychain: two straight "
                        "segments through a fitted middle node")
    p.add_argument("--steps", type=int, default=defaults.steps,
                   help=f"Adam steps on the bend (default {defaults.steps})")
    p.add_argument("--lr", type=float, default=defaults.lr,
                   help=f"Adam's learning rate, cosine-decayed (default {defaults.lr})")
    p.add_argument("--batch-size", type=int, default=defaults.batch_size,
                   help=f"training examples per step, each step at a fresh t ~ U(0, 1) (default {defaults.batch_size})")
    p.add_argument("--points", type=at_least(2), default=21, help="points along each path where loss is measured")
    add_max_examples_flag(p)
    p.add_argument("--export-at", type=float, nargs="+", default=[], metavar="T",
                   help="also write the model at these t as checkpoints (OUT/t-0.50, ...)")
    p.add_argument("--out", default=None,
                   help="the curve's folder (endpoints, bend, curve.json); default: the run's own")
    add_run_flags(p, "data spec to fit and measure on; default: the models' own recipe data")
    p.set_defaults(func=cmd_curve)


def cmd_curve(args) -> None:
    from symalign.landscape.curve_options import CurveOptions
    from symalign.match.matchers import method_names
    from symalign.workflows.curves import curve_run

    align_with = args.align
    if args.align in method_names():
        args.method = args.align
        align_with = align_config(args, data_for(args, [args.a]), default_preset="all")  # as its help says
    options = CurveOptions(args.bend, args.steps, args.lr, args.batch_size, args.seed)
    with Bar(f"curve ({args.bend})") as bar:
        result = curve_run(args.a, args.b, align_with, options, data=args.data, points=args.points,
                           max_examples=args.max_examples, device=args.device, out=args.out,
                           export_at=args.export_at, store=store_for(args), source="cli", progress=bar.phases)
    s = dict(result.summary, run=result.run_id)
    if args.json:
        print_json(s)
        return
    print(f"{args.bend} curve from {args.a} to {args.b} ({alignment_words(s['method'])}), {s['steps']} steps in "
          f"{s['fit_seconds']:.0f} s; barriers (loss above the line between the endpoint losses; accuracy in pp):")
    print(f"  straight line           {s['line_barrier']:.4f}   {s['line_accuracy_barrier']:6.2f} pp")
    if "aligned_line_barrier" in s:
        print(f"  aligned straight line   {s['aligned_line_barrier']:.4f}   "
              f"{s['aligned_line_accuracy_barrier']:6.2f} pp")
    print(f"  curve{' (aligned)' if 'aligned_line_barrier' in s else '':<19}{s['barrier']:.4f}   "
          f"{s['accuracy_barrier']:6.2f} pp")
    print(f"wrote {result.out}: a/, b/, bend/ (the control point, a checkpoint), curve.json"
          + "".join(f", t-{t:.2f}/" for t in args.export_at))
    if result.run_id:
        print(f"recorded as run {result.run_id}")


def alignment_words(method: str) -> str:
    return "no alignment" if method == "none" else f"{method} alignment"


def add_plane(sub) -> None:
    p = sub.add_parser("plane", help="loss over the plane through three models (or Li et al.'s random plane "
                                     "around one), with the paths drawn on it")
    p.add_argument("models", nargs="+", metavar="MODEL", help="A B C (C: a third model, aligned B, or a curve's "
                                                             "bend/), or one model with --random")
    p.add_argument("--curve", default=None, metavar="DIR", help="draw this curve folder's path on the plane")
    p.add_argument("--random", action="store_true",
                   help="Li et al.'s plane: two filter-normalised random directions around one model")
    p.add_argument("--span", type=float, default=1.0,
                   help="--random: the grid covers [-span, span] in each direction")
    p.add_argument("--resolution", type=int, default=21, help="grid points per axis")
    p.add_argument("--margin", type=float, default=0.2, help="how far the grid extends beyond the three points, "
                                                             "as a share of their span")
    add_max_examples_flag(p)
    add_data_flag(p, "data spec; default: the models' own recipe data")
    p.add_argument("--device", default="auto")
    p.add_argument("--seed", type=int, default=0, help="--random: the directions' seed")
    p.add_argument("--html", default=None, help="write the figure to this HTML file")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_plane)


def cmd_plane(args) -> None:
    from symalign.workflows.curves import plane_run

    check_html(args.html)
    with Bar("plane") as bar:
        plane = plane_run(args.models, data=args.data, resolution=args.resolution, margin=args.margin,
                          curve=args.curve, random=args.random, span=args.span, seed=args.seed,
                          max_examples=args.max_examples, device=args.device, progress=bar.phases)
    if args.html:
        from symalign.plots.plane import plane_figure

        plane_figure(plane.to_json()).write_html(args.html, include_plotlyjs=True)
    if args.json:
        print_json(plane.to_json())
        return
    flat = [v for row in plane.loss for v in row]
    print(f"{plane.kind} plane, {len(plane.xs)} x {len(plane.ys)} grid, {plane.examples} examples a point; "
          f"loss {min(flat):.4f} to {max(flat):.4f}")
    for name, p in plane.points.items():
        print(f"  {name} at ({p['x']:.3f}, {p['y']:.3f}): loss {p['loss']:.4f}, accuracy {p['accuracy']:.3f}")
    if "curve_off_plane" in plane.extra:
        print(f"  the curve leaves the plane by at most {plane.extra['curve_off_plane']:.3g}")
    if args.html:
        print(f"  figure: {args.html}")


COMMANDS = (add_barrier, add_simplex, add_spectrum, add_curve, add_plane,)
