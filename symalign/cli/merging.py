"""Merging models and carrying task vectors between them."""

from __future__ import annotations

from symalign.cli.common import (
    Bar,
    add_alignment_flags,
    add_dtype_flag,
    add_model_output_flags,
    align_config,
    alignment_given,
    at_least,
    print_json,
    store_for,
)
from symalign.merge.builtin_rules import (
    MERGE_ALIGNS,
    OT_SOLVERS,
    TRANSPORT_ALIGNS,
    TRANSPORT_HEAD_STRATEGIES,
    merge_rules,
)


def add_merge(sub) -> None:
    p = sub.add_parser("merge", help="merge two or more models (aligned into the first's basis) into one")
    add_dtype_flag(p)
    p.add_argument("models", nargs="+", metavar="MODEL")
    p.add_argument("--align", default="weight", choices=MERGE_ALIGNS,
                   help="how the models are brought into the first's basis first: a matcher (all classes unless "
                        "--classes or the per-kind flags say otherwise; its options as for `align`); none: as "
                        "they are; ot-acts / ot-wts: optimal-transport fusion (Imfeld et al.) on activations / "
                        "weights, the same as --align none --how ot-acts / ot-wts (ot-acts reads activations on "
                        "--max-examples examples, default 256)")
    p.add_argument("--ot-solver", default="emd", choices=OT_SOLVERS,
                   help="OT fusion's plans (--align or --how ot-acts / ot-wts): emd (exact; equal widths give "
                        "permutations; Zhang et al.'s OT-ACTS-EMD) or sinkhorn (soft; their OT-ACTS, OT-WTS)")
    p.add_argument("--ot-reg", type=float, default=None,
                   help="Sinkhorn's strength on the max-normalised cost (default: Imfeld et al.'s 0.08 for ot-acts, "
                        "0.06 for ot-wts)")
    p.add_argument("--how", default="average", choices=tuple(merge_rules()),
                   help="the merge rule: " + "; ".join(_describe(n, r) for n, r in merge_rules().items()))
    p.add_argument("--base", default=None, metavar="M",
                   help="the model the others were fine-tuned from (ties, dare_*, task_arithmetic, model_stock): "
                        "the others are aligned into its basis and merged as task vectors from it")
    p.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                   help="a parameter of the rule, e.g. --param t=0.3, --param density=0.7 (repeatable)")
    p.add_argument("--export-inputs", action="store_true",
                   help="also write the aligned inputs (OUT/inputs/N, in the first or base model's canonical basis) "
                        "and, for mergekit's methods, OUT/mergekit.yml: mergekit-yaml rebuilds the same weights")
    p.add_argument("--keep-head", action="store_true",
                   help="copy the first (or base) model's output head instead of merging it: a classifier's pooler "
                        "and classes, or an LM head")
    p.add_argument("--data", default=None, help="data for Fisher/RegMean statistics and evaluation "
                                                "(default: the first model's own data)")
    p.add_argument("--examples", type=at_least(1), default=64,
                   help="training examples for Fisher or input Gram matrices")
    add_model_output_flags(p)
    add_alignment_flags(p)
    p.set_defaults(func=cmd_merge)


# Flags merge and transport define with their own meaning (evaluation examples, the task vector's scales, TransFusion's
# head strategies): the matcher options of the same names are not theirs to set.
OWN_FLAGS = ("max_examples", "alpha", "head_strategy")


def alignment_of(args, data: str | None):
    """The matcher's AlignConfig a merge or transport command line describes (all classes unless told
    otherwise), or None for --align none / ot-*, which refuse matcher flags in one line."""
    from symalign.errors import SymalignError
    from symalign.match.matchers import method_names

    if args.align in method_names() and args.align != "none":
        return align_config(args, data, method=args.align, default_preset="all", own=OWN_FLAGS)
    given = alignment_given(args, own=OWN_FLAGS)
    if given:
        raise SymalignError(f"--align {args.align} takes no {', '.join(dict.fromkeys(given))}: classes, blocks and "
                            "matcher options are for --align weight, activation, learned or soft")
    return None


def _describe(name: str, rule) -> str:
    params = ", ".join(f"{k}={v:g}" for k, v in rule.parameters.items())
    return f"{name}: {rule.label}" + (f" [{params}]" if params else "")


def parse_params(pairs: list[str]) -> dict[str, float]:
    """--param NAME=VALUE ... -> {name: float}; a malformed one is one line."""
    from symalign.errors import SymalignError

    out = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        try:
            out[name.strip()] = float(value)
        except ValueError:
            sep = ""
        if not sep or not name.strip():
            raise SymalignError(f"--param {pair!r}: give NAME=NUMBER, e.g. --param t=0.3")
    return out


def cmd_merge(args) -> None:
    from pathlib import Path

    from symalign.models import load_model
    from symalign.models.io import default_data_spec
    from symalign.workflows.merging import merge_run

    data = args.data or default_data_spec(load_model(args.models[0]))
    alignment = alignment_of(args, data)
    with Bar(f"merge ({args.how}, align {args.align})") as bar:
        run = merge_run(args.models, args.align, args.how, data, examples=args.examples, max_examples=args.max_examples,
                        seed=args.seed, out=Path(args.out), store=store_for(args), source="cli",
                        progress=bar.phases, dtype=args.dtype, device=args.device, base=args.base,
                        parameters=parse_params(args.param), export_inputs=args.export_inputs,
                        keep_head=args.keep_head,
                        ot={"solver": args.ot_solver, "reg": args.ot_reg}
                        if args.align.startswith("ot-") or args.how.startswith("ot-") else None,
                        alignment=alignment)
    out, report = run.out, run.result.report
    if args.json:
        print_json({"inputs": report["inputs"], "merged": report["merged"], "out": str(out), "align": args.align,
                     **{k: report[k] for k in ("carried", "ot", "alignment") if k in report},
                     "how": args.how, "parameters": report["parameters"], "base": report["base"], "data": data,
                     "run": run.run_id})
        return
    print(f"wrote {out}: {len(args.models)} models merged ({args.how}, aligned by {args.align}), evaluated on {data}")
    for row in report["inputs"]:
        print(f"  {row['model']}: {_scores(row)}")
    for row in report.get("carried", []):
        print(f"  {row['model']} as carried by the plans: {_scores(row)}")
    print(f"  merged: {_scores(report['merged'])}" + (f" (head kept from {report['kept_head']})"
                                                     if "kept_head" in report else ""))
    if args.export_inputs:
        print(f"  inputs as merged: {out / 'inputs'}" + (f"; rebuild with: mergekit-yaml {out / 'mergekit.yml'} DIR"
                                                         if (out / "mergekit.yml").is_file() else ""))
    if run.run_id:
        print(f"recorded as run {run.run_id}")


def _scores(row: dict) -> str:
    """A model's evaluation as the merge prints it (macro F1 where the model is a classifier)."""
    return f"loss {row['loss']:.4f}, accuracy {row['accuracy']:.3f}" + (
        f", macro F1 {row['macro_f1']:.3f}" if row.get("macro_f1") is not None else "")


def add_transport(sub) -> None:
    p = sub.add_parser("transport", help="carry a fine-tune's task vector from its base A into model B")
    add_dtype_flag(p)
    p.add_argument("a", metavar="A", help="the base model")
    p.add_argument("a_ft", metavar="A_FT", help="A fine-tuned on a task")
    p.add_argument("b", metavar="B", help="the model that receives the task vector")
    p.add_argument("--align", default="weight", choices=TRANSPORT_ALIGNS,
                   help="how A is aligned to B to re-express the task vector in B's basis: a matcher (all classes "
                        "unless --classes or the per-kind flags say otherwise; its options as for `align`), none, or "
                        "ot-wts (OT fusion's exact plans from the weights: permutations at equal widths)")
    p.add_argument("--head-strategy", default="circuit", choices=TRANSPORT_HEAD_STRATEGIES,
                   help="how heads are paired (TransFusion Table 3): circuit (symalign's: whole-head QK/OV circuits), "
                        "spectral (TransFusion's: singular-value spectra of q, k, v), brute-force (every head pair "
                        "aligned inside, then paired by what that reaches), none (heads kept in order, the maps "
                        "inside them still aligned)")
    p.add_argument("--alpha", default="0,0.25,0.5,0.75,1", help="comma-separated scales of the task vector")
    p.add_argument("--residual-per-block", action="store_true",
                   help="TransFusion's residual (its eq. 12): after the alignment without a residual class, one "
                        "permutation per residual stream from the weights that touch it (not a symmetry of the "
                        "model: the skip connections would carry the composed permutations; the task vector needs "
                        "only the weights); with a matcher only")
    p.add_argument("--few-shot", type=int, default=0, metavar="N",
                   help="also learn one α per layer on the first N training examples of each class of the task "
                        "(TransFusion Table 4; classifiers only) and report that model beside the α grid")
    p.add_argument("--data-task", default=None, help="the fine-tune's task data (default: A_FT's own data)")
    p.add_argument("--data-base", default=None, help="the original task's data, the support set whose accuracy "
                                                     "is reported beside the task's (default: A's own data)")
    add_model_output_flags(p)
    add_alignment_flags(p)
    p.set_defaults(func=cmd_transport)


def cmd_transport(args) -> None:
    from pathlib import Path

    from symalign.merge.task_vectors import parse_alphas
    from symalign.workflows.merging import transport_run

    alphas = parse_alphas(args.alpha)
    strategy = args.head_strategy
    alignment = transport_alignment(args, strategy)
    with Bar(f"transport (align {args.align})") as bar:
        run = transport_run(args.a, args.a_ft, args.b, alphas, args.data_task, args.data_base, args.align,
                            max_examples=args.max_examples, seed=args.seed, out=Path(args.out), store=store_for(args),
                            source="cli", progress=bar.phases, dtype=args.dtype, device=args.device,
                            alignment=alignment, few_shot=args.few_shot,
                            residual_per_block=args.residual_per_block)
    result, out = run.result, run.out
    data_task, data_base = result.report["data_task"], result.report["data_base"]
    if args.json:
        print_json({"alpha": result.alphas, "task_loss": result.task_loss, "base_loss": result.base_loss,
                     "task_accuracy": result.task_accuracy, "base_accuracy": result.base_accuracy,
                     "best_alpha": result.best_alpha, "out": str(out), "align": args.align,
                     "head_strategy": strategy if alignment is not None else None,
                     "data_task": data_task, "data_base": data_base, "run": run.run_id,
                     "residual_per_block": args.residual_per_block,
                     **({"layer_alphas": result.layer_alphas, "few_shot": result.fitted} if args.few_shot else {})})
        return
    print(f"wrote {out}: B + α·τ at the best α = {result.best_alpha:g} (task vector of {args.a_ft} aligned by "
          f"{args.align}{f', heads {strategy}' if alignment is not None else ''}); task = {data_task}, "
          f"original task (support) = {data_base}")
    for alpha, t, ta, o, oa in zip(result.alphas, result.task_loss, result.task_accuracy, result.base_loss,
                                   result.base_accuracy):
        print(f"  α {alpha:g}: task loss {t:.4f} (accuracy {ta:.3f}), original task loss {o:.4f} (accuracy {oa:.3f})")
    if args.few_shot:
        f = result.fitted
        print(f"  α per layer ({args.few_shot} shots per class: "
              + ", ".join(f"{layer} {a:.2f}" for layer, a in result.layer_alphas.items())
              + f"): task loss {f['task_loss']:.4f} (accuracy {f['task_accuracy']:.3f}), original task loss "
              f"{f['base_loss']:.4f} (accuracy {f['base_accuracy']:.3f}) (not saved: the checkpoint is the best α)")
    if run.run_id:
        print(f"recorded as run {run.run_id}")


def transport_alignment(args, strategy: str):
    """The alignment a transport command line describes, TransFusion's head strategy applied; None for
    --align none, which refuses matcher flags (and a head strategy other than the default) in one line."""
    from symalign.errors import SymalignError
    from symalign.merge.task_vectors import with_head_strategy
    from symalign.models import load_model
    from symalign.models.io import default_data_spec

    config = alignment_of(args, args.data_base or (default_data_spec(load_model(args.a))
                                                   if args.align not in ("none", "weight", "ot-wts") else None))
    if config is None:
        if strategy != "circuit":
            raise SymalignError(f"--head-strategy {strategy} pairs heads of a matcher's alignment; --align "
                                f"{args.align} has none")
        return None
    return with_head_strategy(config, strategy)


COMMANDS = (add_merge, add_transport,)
