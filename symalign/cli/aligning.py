"""Alignment: two models (align) or three and more into one basis (align-many)."""

from __future__ import annotations

from symalign.cli.common import (
    Bar,
    add_alignment_flags,
    add_data_flag,
    add_dtype_flag,
    add_run_flags,
    add_split_flag,
    add_universe_flags,
    align_config,
    at_least,
    data_for,
    print_json,
    store_for,
)
from symalign.match.matchers import matchers, method_names


def add_align(sub) -> None:
    p = sub.add_parser("align", help="find the symmetry transform that brings B into A's basis")
    add_dtype_flag(p)
    p.add_argument("a")
    p.add_argument("b")
    p.add_argument("--method", default="weight", choices=method_names(),
                   help="; ".join(f"{name}: {m.help}" for name, m in matchers().items()))
    add_alignment_flags(p)
    add_data_flag(p, "data the matcher learns on (activation, learned, soft) and --barrier measures on; "
                     "default: A's own training data")
    p.add_argument("--device", default="auto")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", required=True)
    p.add_argument("--barrier", action="store_true", help="also measure the barrier between A and aligned B")
    p.add_argument("--points", type=at_least(2), default=None,
                   help="with --barrier: λ points on the curve (default: as the barrier command)")
    add_split_flag(p)
    p.add_argument("--canonical-a", default=None, metavar="DIR",
                   help="also write A's canonical form to DIR: the basis aligned B is in (hand both to a merger such "
                        "as mergekit; the raw A is a different basis)")
    p.add_argument("--no-record", action="store_true", help="do not record the run in the run history")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_align)


def plan_checks(config, n_models: int = 2) -> None:
    """Learned and soft matching: say on stderr what the run's checks cost beside its steps (on a
    terminal, like the progress bar: an error then prints alone, and logs and --json stay clean)."""
    import sys

    if config.method in ("learned", "soft") and sys.stderr.isatty():
        from symalign.match.learned.optimisation import check_plan

        print(f"{config.method}: {check_plan(config.learned_options(), n_models)}", file=sys.stderr)


def cmd_align(args) -> None:
    from symalign.match.learned.checks import learned_hint
    from symalign.match.weight.descent import stop_hint
    from symalign.models.towers import two_towers_of
    from symalign.workflows.execute import align_run, align_summary

    if two_towers_of(args.a) or two_towers_of(args.b):
        return align_two_towers(args, align_config(args))
    # a matcher that learns on data takes A's own training data unless --data names other, as align-many, simplex,
    # attribute and barrier do (before, `align zoo:A zoo:B --method learned` alone said "needs --data")
    config = align_config(args, data_for(args, [args.a]))
    plan_checks(config)
    with Bar(f"align ({args.method})") as bar:
        points = {} if args.points is None else {"points": args.points}  # else align_run's default
        result = align_run(args.a, args.b, config, out=args.out, measure=args.barrier, store=store_for(args),
                           split=args.split, source="cli", progress=bar.phases, canonical_a=args.canonical_a,
                           **points)
    r = result.alignment.report
    summary = dict(align_summary(result.alignment), out=str(result.out), method=args.method,
                   classes=r.config["classes"],
                   run=result.run_id)
    if result.curve is not None:
        summary.update(barrier=result.curve.barrier, barrier_mean=result.curve.barrier_mean,
                       accuracy_barrier=result.curve.accuracy_barrier,
                       accuracy_barrier_mean=result.curve.accuracy_barrier_mean)
    if result.streamed:
        summary.update(streamed=result.streamed, function_check=result.function_check)
    if args.json:
        print_json(summary)
        return
    checked = f"; {result.function_check}" if result.function_check else ""
    print(f"wrote {result.out}: B in A's basis ({args.method}); weight distance {r.distance_before:.3f} -> "
          f"{r.distance_after:.3f} in {r.sweeps_run} sweeps, {r.seconds:.1f} s; "
          f"same function as B (max |Δlogit| {r.function_gap_vs_b:.1e}{checked})")
    if result.streamed:
        print(result.streamed)
    if summary.get("stopped"):
        start = " (learned matching's start)" if r.learned_summary is not None else ""
        print(f"weight matching{start} stopped: {summary['stopped']}")
        hint = stop_hint(r.sweeps)
        if hint:
            print(f"  {hint}")
    if r.learned_summary is not None and r.learned_summary.steps:
        s = r.learned_summary
        print(f"{args.method} matching: {s.steps} steps ({s.stopped}); path check {s.start_check:.4f} -> "
              f"{s.best_check:.4f} (best at step {s.best_step})")
        hint = learned_hint(r.learned, s)
        if hint:
            print(f"  {hint}")
    for h in r.barrier_per_sweep:
        print(f"  after sweep {h.sweep}{f' ({h.step})' if h.step else ''}: barrier {h.barrier:.4f}, "
              f"accuracy barrier {h.accuracy_barrier:.2f} pp")
    if summary.get("unrounded"):
        u = summary["unrounded"]
        print(f"soft maps kept unrounded (on the check batch): midpoint loss {u['midpoint_loss']:.4f} against "
              f"{u['rounded_midpoint_loss']:.4f} rounded; the path's end is no longer B: "
              f"loss {u['endpoint_loss']:.4f} against B's {u['b_loss']:.4f}, weights "
              f"{u['endpoint_distance']:.3f} of B's norm away. Written: the rounded result (B's function)")
    if result.curve is not None:
        print(f"barrier between A and aligned B: {result.curve.barrier:.4f} "
              f"(accuracy barrier {result.curve.accuracy_barrier:.2f} pp)")
    if args.canonical_a:
        print(f"wrote {args.canonical_a}: A in canonical form (the same function as A, in aligned B's basis)")
    if result.run_id:
        print(f"recorded as run {result.run_id}")


def align_two_towers(args, config) -> None:
    """`align` on two CLIPModel checkpoints: tower by tower, then the shared embedding space."""
    from dataclasses import asdict

    from symalign.match.two_towers import align_towers

    with Bar("align (two towers)"):
        r = align_towers(args.a, args.b, config, args.out, measure=args.barrier)
    if args.json:
        print_json({**asdict(r), "out": args.out, "method": args.method})
        return
    print(f"wrote {args.out}: B in A's basis, tower by tower and the shared embedding space ({r.shared_class}); "
          f"weight distance {r.distance_before:.3f} -> {r.distance_after:.3f} in {r.rounds} rounds, "
          f"{r.seconds:.1f} s; same function as B (max |Δ logits_per_image| {r.function_gap_vs_b:.1e})")
    for name, t in r.towers.items():
        print(f"  {name} tower: {t['distance_before']:.3f} -> {t['distance_after']:.3f} ({t['sweeps']} sweeps; "
              f"{', '.join(f'{k} {c}' for k, c in t['classes'].items() if c != 'none')})")


def add_align_many(sub) -> None:
    p = sub.add_parser("align-many", help="bring three or more models into one shared basis (the first model's)")
    add_dtype_flag(p)
    add_universe_flags(p, default_method="weight")
    add_run_flags(p, "data spec for learned matching (default: the models' own data)")
    p.add_argument("--out", required=True)
    p.add_argument("--barrier", action="store_true", help="also measure the barrier of every aligned pair")
    add_split_flag(p)
    p.set_defaults(func=cmd_align_many)


def cmd_align_many(args) -> None:
    from symalign.workflows.many import align_many_run

    config = align_config(args, data_for(args, args.models))
    plan_checks(config, len(args.models))
    with Bar(f"align-many ({args.method})") as bar:
        result = align_many_run(args.models, config, out=args.out, measure=args.barrier, store=store_for(args),
                                source="cli", progress=bar.phases, split=args.split)
    report = result.universe.report
    summary = {"outputs": [str(o) for o in result.outputs], "method": args.method,
               "classes": report["config"]["classes"],
               "models": args.models, "alpha": config.alpha, "rounds": config.rounds, "steps": config.steps,
               "learned_steps": report["learned_summary"].get("steps", 0),
               "function_gap": [m["function_gap"] for m in report["members"]],
               "pairwise_distance_before": report["pairwise_distance_before"],
               "pairwise_distance_after": report["pairwise_distance_after"], "seconds": report["seconds"],
               "run": result.run_id}
    if result.curves:
        summary["pairwise_barrier"] = [{"pair": list(p), "barrier": c.barrier} for p, c in result.curves]
    if args.json:
        print_json(summary)
        return
    print(f"wrote {args.out}: {len(result.outputs)} models in the basis of {args.models[0]} ({args.method}), "
          f"{report['seconds']:.1f} s; each computes its original function (max |Δlogit| "
          f"{max(summary['function_gap']):.1e})")
    after = report["pairwise_distance_after"]
    for i, folder in enumerate(result.outputs):
        before = report["pairwise_distance_before"][0][i]
        print(f"  {folder}: {args.models[i]}"
              + ("" if i == 0 else f" (weight distance to the reference {before:.3f} -> {after[0][i]:.3f})"))
    for (i, j), c in result.curves:
        print(f"  barrier {i}↔{j}: {c.barrier:.4f}")


COMMANDS = (add_align, add_align_many,)
