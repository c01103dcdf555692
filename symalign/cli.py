"""The `symalign` command: a thin client of the package. User errors end in one line, exit 2."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Callable

from symalign.errors import SymalignError
from symalign.symmetry.spec import CLASSES, KINDS

DEFAULT_RANDOM_CLASSES = {"mlp": "perm", "heads": "perm", "qk": "orthogonal", "vo": "orthogonal", "residual": "orthogonal"}


def _print_json(obj) -> None:
    print(json.dumps(obj, indent=2))


def _parse_classes(args) -> dict[str, str]:
    """Per-kind classes from --classes (a preset name, or kind=class pairs) and the per-kind flags (flags win)."""
    from symalign.match.config import CLASS_PRESETS, preset_classes

    classes: dict[str, str] = {}
    if (args.classes or "").strip() in CLASS_PRESETS:
        classes = preset_classes(args.classes.strip())
        args = argparse.Namespace(**{**vars(args), "classes": ""})
    for item in filter(None, (args.classes or "").split(",")):
        kind, sep, cls = item.partition("=")
        if not sep:
            raise SymalignError(f"--classes takes a preset (all, permutations, none) or kind=class pairs such as "
                                f"mlp=perm,qk=orthogonal; got {item!r}")
        classes[kind.strip()] = cls.strip()
    for kind in KINDS:
        if getattr(args, kind, None):
            classes[kind] = getattr(args, kind)
    return classes


def _add_dtype_flag(p: argparse.ArgumentParser) -> None:
    from symalign.match.config import EXPORT_DTYPES

    p.add_argument("--dtype", default="auto", choices=EXPORT_DTYPES,
                   help="precision of the written checkpoint (auto: the input's, so bf16 in is bf16 out)")


def _add_class_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--classes", help="a preset (all, permutations, none) or kind=class pairs, "
                                     "e.g. mlp=perm,heads=perm,qk=orthogonal")
    for kind in KINDS:
        p.add_argument(f"--{kind}", choices=("none",) + CLASSES, help=f"class for {kind} components")


def _add_learned_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--steps", type=int, default=None,
                   help="learned/soft: most optimisation steps (default: 600 for images, 300 for text)")
    p.add_argument("--lr", type=float, default=None, help="learned/soft: learning rate (default 0.01)")
    p.add_argument("--batch-size", type=int, default=None, help="learned/soft: examples per step")
    p.add_argument("--input-noise", type=float, default=None,
                   help="learned/soft: std of Gaussian noise on training images, a regulariser "
                        "(default 0.3 for images; text takes 0)")
    p.add_argument("--patience", type=int, default=None,
                   help="learned/soft: checks (every 25 steps) without improvement before stopping (default 3; "
                        "a value above steps/25 runs every step)")
    p.add_argument("--alpha", type=float, default=None,
                   help="learned, three or more models: Dirichlet(α·1) mixing weights per step "
                        "(default 1: uniform over the simplex; Theus et al. use 0.1)")


def _add_universe_flags(p: argparse.ArgumentParser, default_method: str) -> None:
    """Models, method and classes of a universe alignment (align-many, simplex)."""
    p.add_argument("models", nargs="+", metavar="MODEL")
    p.add_argument("--method", default=default_method, choices=("none", "weight", "learned", "soft"))
    _add_class_flags(p)
    _add_learned_flags(p)
    p.add_argument("--rounds", type=int, default=0,
                   help="weight: refinement rounds, each model matched to the mean of the others")


def _add_model_output_flags(p: argparse.ArgumentParser) -> None:
    """The flags of a workflow that evaluates and writes one model (merge, transport)."""
    p.add_argument("--max-examples", type=int, default=None, help="evaluation examples (default: all)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default="auto", help="auto (CUDA, then MPS, then CPU), cpu, cuda or mps")
    p.add_argument("--out", required=True)
    p.add_argument("--no-record", action="store_true", help="do not record the run in the run history")
    p.add_argument("--json", action="store_true")


def _add_run_flags(p: argparse.ArgumentParser, data_help: str) -> None:
    """The flags every recorded multi-model workflow takes."""
    p.add_argument("--data", default=None, help=data_help)
    p.add_argument("--device", default="auto")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-record", action="store_true", help="do not record the run in the run history")
    p.add_argument("--json", action="store_true")


def cmd_inspect(args) -> None:
    from symalign.models import is_canonical, load_model, spec_of
    from symalign.report import spec_table

    model = load_model(args.model)
    summary = spec_table(model, spec_of(model), is_canonical(model))
    if args.json:
        _print_json(summary)
        return
    d = summary["dims"]
    print(f"{summary['family']} ({summary['hf_class']}) from {args.model}")
    kv = f" sharing {d['n_kv_head']} key/value heads" if d["n_kv_head"] != d["n_head"] else ""
    extras = ", ".join(x for x in (d["norm"], "RoPE" if d["rope"] else "", "gated MLP" if d["gated_mlp"] else "") if x)
    print(f"  {d['n_layer']} layers, width {d['d_model']}, {d['n_head']} heads × {d['d_head']}{kv}, "
          f"MLP {d['d_mlp']} ({d['activation']}), {extras}; canonical form: {'yes' if summary['canonical'] else 'no'}")
    print(f"\n  {'component':<16}{'size':>9}  " + "  ".join(f"{c:<11}" for c in CLASSES))
    notes: list[str] = []
    for comp in summary["components"]:
        cells = []
        for cls in CLASSES:
            reason = comp["reasons"].get(cls)
            if reason is None:
                cells.append(f"{'yes':<11}")
            else:
                if reason not in notes:
                    notes.append(reason)
                cells.append(f"{'no [' + str(notes.index(reason) + 1) + ']':<11}")
        size = f"{comp['count']}×{comp['size']}" if comp["count"] > 1 else str(comp["size"])
        print(f"  {comp['name']:<16}{size:>9}  " + "  ".join(cells))
    print()
    for i, note in enumerate(notes, 1):
        print(f"  [{i}] {note}")


def cmd_transform(args) -> None:
    from symalign.models import canonicalize, is_canonical, load_model, save_model, spec_of, transformed
    from symalign.report import function_gap, relative_change
    from symalign.symmetry.random import random_transform

    if not args.random:
        raise SymalignError("transform needs --random (plant a random admissible transform)")
    classes = _parse_classes(args)
    model = load_model(args.model)
    preset = _preset(args)
    if preset or not classes:  # a preset or the default: fitted to this model (RoPE: rotary QK maps)
        from symalign.match.config import preset_classes

        wanted = preset_classes(preset) if preset else dict(DEFAULT_RANDOM_CLASSES)
        classes = model.family.spec(model.config, canonical=True).fit(wanted)
    canonicalised = False
    if classes.get("residual") == "orthogonal" and not is_canonical(model):
        print("note: canonicalising first (norm gains absorbed) so the residual admits orthogonal maps",
              file=sys.stderr)
        model, canonicalised = canonicalize(model), True
    spec = spec_of(model)
    transform = random_transform(spec, classes, seed=args.seed)
    result = transformed(model, transform)
    out = save_model(result, args.out, args.dtype)
    settings = {"source": args.model, "classes": classes, "seed": args.seed, "canonicalised": canonicalised}
    transform.save(out / "transforms.safetensors", {"settings": json.dumps(settings)})
    summary = dict(settings, out=str(out), max_logit_diff=function_gap(model, result),
                   relative_weight_change=relative_change(model, result))
    (out / "transform.json").write_text(json.dumps(summary, indent=2))
    if args.json:
        _print_json(summary)
    else:
        print(f"wrote {out}: same function (max |Δlogit| {summary['max_logit_diff']:.1e} on random inputs), "
              f"weights moved by {100 * summary['relative_weight_change']:.0f}% (relative Frobenius)")


def cmd_canonicalize(args) -> None:
    from symalign.models import canonicalize, load_model, save_model
    from symalign.report import function_gap

    model = load_model(args.model)
    result = canonicalize(model)
    out = save_model(result, args.out, args.dtype)
    print(f"wrote {out}: canonical form (max |Δlogit| {function_gap(model, result):.1e} on random inputs)")


def cmd_init(args) -> None:
    from symalign.models import save_model
    from symalign.models.tiny import random_model, tiny_config

    tokenizer, vocab = None, {}
    if args.family == "gpt2":  # a text model is saved with a tokenizer that fits it, so it can be scored on text
        from symalign.data.text import char_tokenizer, shakespeare_text

        tokenizer = char_tokenizer(shakespeare_text())
        vocab = {"vocab": len(tokenizer)}
    config = tiny_config(args.family, layers=args.layers, width=args.width, heads=args.heads, mlp=args.mlp,
                         activation=args.activation, tied=not args.untied, **vocab)
    out = save_model(random_model(config, seed=args.seed), args.out, args.dtype)
    if tokenizer is not None:
        tokenizer.save_pretrained(str(out))
    print(f"wrote {out}: random {args.family} ({args.layers} layers, width {args.width}, {args.heads} heads)")


class _Bar:
    """A tqdm bar with an ETA on stderr (only when it is a terminal: --json output and logs stay
    clean), opened at the first progress report so that errors print alone. A new phase or a
    new total (weight matching, then the curve) starts a fresh bar named after the phase."""

    def __init__(self, desc: str):
        self.desc, self.bar, self.phase = desc, None, None

    def __call__(self, done: int, total: int, loss: float | None = None, phase: str | None = None) -> None:
        if self.bar is not None and (phase != self.phase or total != self.bar.total):
            self.bar.close()
            self.bar = None
        if self.bar is None:
            from tqdm import tqdm

            self.phase = phase
            desc = self.desc if phase is None else f"{self.desc}: {phase}"
            self.bar = tqdm(total=total, desc=desc, file=sys.stderr, leave=False, dynamic_ncols=True,
                            disable=not sys.stderr.isatty())
        self.bar.n = done
        if loss is not None:
            self.bar.set_postfix(loss=f"{loss:.3f}", refresh=False)
        self.bar.refresh()

    def phases(self, phase: str, done: int, total: int, *rest) -> None:
        """The (phase, done, total) callback the recorded workflows take."""
        self(done, total, rest[0] if rest and isinstance(rest[0], float) else None, phase=phase)

    def __enter__(self) -> "_Bar":
        return self

    def __exit__(self, *exc) -> None:
        if self.bar is not None:
            self.bar.close()


def cmd_train(args) -> None:
    from symalign.train.loop import recipe_named, train

    recipe = recipe_named(args.recipe)
    with _Bar(f"train {recipe.name} seed {args.seed}") as bar:
        record = train(recipe.name, args.seed, args.out, steps=args.steps, data_spec=args.data, device=args.device,
                       progress=bar)
    if args.json:
        _print_json(record)
    else:
        print(f"wrote {args.out}: eval loss {record['eval_loss']:.4f}, accuracy {record['eval_accuracy']:.3f} "
              f"({record['train_seconds']:.0f} s)")


def cmd_zoo(args) -> None:
    from symalign.train.recipes import RECIPES
    from symalign.zoo import build, manifest

    if args.action == "build":
        with _Bar("zoo") as bar:
            records = build(args.recipes or [n for n, r in RECIPES.items() if r.cpu], args.seeds, progress=bar)
        for record in records:
            print(f"zoo:{record['recipe']}/{record['seed']}: eval loss {record['eval_loss']:.4f}")
        return
    entries = manifest()["models"]
    if args.json:
        _print_json(entries)
        return
    if not entries:
        print("the zoo is empty (build it with `symalign zoo build`)")
    for e in entries:
        print(f"zoo:{e['recipe']}/{e['seed']:<3} loss {e['eval_loss']:.4f}  accuracy {e['eval_accuracy']:.3f}  "
              f"({e['eval_examples']} eval examples of {e['data']}, {e['steps']} steps, {e['train_seconds']:.0f} s)")


def _store(args):
    """The run database, unless --no-record."""
    from symalign.runs import RunStore

    return None if args.no_record else RunStore()


def cmd_barrier(args) -> None:
    from symalign.runs.execute import barrier_run

    with _Bar("interpolate") as bar:
        run_id, curve = barrier_run(args.a, args.b, data=args.data, points=args.points,
                                    max_examples=args.max_examples, device=args.device, form=args.form,
                                    store=_store(args), source="cli", progress=bar.phases)
    if args.json:
        _print_json(dict(curve.to_json(), run=run_id))
        return
    print(f"barrier {curve.barrier:.4f} (vs. mean of endpoints: {curve.barrier_mean:.4f}); endpoint losses "
          f"{curve.endpoint_loss[0]:.4f}, {curve.endpoint_loss[1]:.4f}; {curve.examples} examples, {curve.form} form")
    for lam, loss, acc in zip(curve.lambdas, curve.loss, curve.accuracy):
        print(f"  λ = {lam:.2f}  loss {loss:.4f}  accuracy {acc:.3f}")
    if run_id:
        print(f"recorded as run {run_id}")


def _align_config(args, data: str | None = None):
    """The AlignConfig the align, align-many and simplex flags describe."""
    from symalign.match.config import AlignConfig

    options = {name: getattr(args, name) for name in ("head_cost", "max_sweeps", "max_seconds", "dtype", "steps", "lr", "lambdas", "alpha",
                                                      "rounds", "batch_size", "patience", "input_noise", "residual_strategy", "head_strategy",
                                                      "max_examples") if getattr(args, name, None) is not None}
    return AlignConfig(method=args.method, classes=_parse_classes(args), data=data or args.data, device=args.device,
                       seed=args.seed, preset=_preset(args), **options)


def _preset(args) -> str | None:
    """The preset named by --classes when no per-kind flag changes it: fitted to the model's spec
    (e.g. `all` on a RoPE model uses rotary QK maps), where classes named one by one are not."""
    from symalign.match.config import CLASS_PRESETS

    name = (args.classes or "").strip()
    if name in CLASS_PRESETS and not any(getattr(args, kind, None) for kind in KINDS):
        return name
    return None


def _data_for(args, refs: list[str]) -> str | None:
    """--data, else (for a method that learns on data) the first model's own training data."""
    if args.data or args.method not in ("activation", "learned", "soft"):
        return args.data
    from symalign.barrier import default_data_spec
    from symalign.models import load_model

    return default_data_spec(load_model(refs[0]))


def _check_html(path: str | None) -> None:
    """Refuse an --html target that cannot be written before any work is done."""
    from pathlib import Path

    if path and not Path(path).expanduser().resolve().parent.is_dir():
        raise SymalignError(f"--html {path}: the folder {Path(path).expanduser().parent} does not exist")


def cmd_align(args) -> None:
    from symalign.runs.execute import align_run, align_summary

    config = _align_config(args)
    with _Bar(f"align ({args.method})") as bar:
        result = align_run(args.a, args.b, config, out=args.out, measure=args.barrier, store=_store(args),
                           source="cli", progress=bar.phases)
    r = result.alignment.report
    summary = dict(align_summary(result.alignment), out=str(result.out), method=args.method, classes=r["config"]["classes"],
                   run=result.run_id)
    if result.curve is not None:
        summary.update(barrier=result.curve.barrier, barrier_mean=result.curve.barrier_mean)
    if args.json:
        _print_json(summary)
        return
    print(f"wrote {result.out}: B in A's basis ({args.method}); weight distance {r['distance_before']:.3f} -> "
          f"{r['distance_after']:.3f} in {summary['sweeps']} sweeps, {r['seconds']:.1f} s; "
          f"same function as B (max |Δlogit| {r['function_gap_vs_b']:.1e})")
    if summary.get("stopped"):
        print(f"weight matching stopped: {summary['stopped']}")
    if result.curve is not None:
        print(f"barrier between A and aligned B: {result.curve.barrier:.4f}")
    if result.run_id:
        print(f"recorded as run {result.run_id}")


def cmd_align_many(args) -> None:
    from symalign.runs.execute import align_many_run

    config = _align_config(args, _data_for(args, args.models))
    with _Bar(f"align-many ({args.method})") as bar:
        result = align_many_run(args.models, config, out=args.out, measure=args.barrier, store=_store(args),
                                source="cli", progress=bar.phases)
    report = result.universe.report
    summary = {"outputs": [str(o) for o in result.outputs], "method": args.method, "classes": report["config"]["classes"],
               "models": args.models, "alpha": config.alpha, "rounds": config.rounds, "steps": config.steps,
               "learned_steps": report["learned_summary"].get("steps", 0),
               "function_gap": [m["function_gap"] for m in report["members"]],
               "pairwise_distance_before": report["pairwise_distance_before"],
               "pairwise_distance_after": report["pairwise_distance_after"], "seconds": report["seconds"],
               "run": result.run_id}
    if result.curves:
        summary["pairwise_barrier"] = [{"pair": list(p), "barrier": c.barrier} for p, c in result.curves]
    if args.json:
        _print_json(summary)
        return
    print(f"wrote {args.out}: {len(result.outputs)} models in the basis of {args.models[0]} ({args.method}), "
          f"{report['seconds']:.1f} s; each computes its original function (max |Δlogit| "
          f"{max(summary['function_gap']):.1e})")
    after = report["pairwise_distance_after"]
    for i, folder in enumerate(result.outputs):
        print(f"  {folder}: {args.models[i]}" + ("" if i == 0 else f" (weight distance to the reference "
                                                                    f"{report['pairwise_distance_before'][0][i]:.3f} -> {after[0][i]:.3f})"))
    for (i, j), c in result.curves:
        print(f"  barrier {i}↔{j}: {c.barrier:.4f}")


def cmd_merge(args) -> None:
    from pathlib import Path

    from symalign.barrier import default_data_spec
    from symalign.models import load_model
    from symalign.runs.execute import merge_run

    data = args.data or default_data_spec(load_model(args.models[0]))
    with _Bar(f"merge ({args.how}, align {args.align})") as bar:
        run = merge_run(args.models, args.align, args.how, data, examples=args.examples, max_examples=args.max_examples,
                        seed=args.seed, out=Path(args.out), store=_store(args), source="cli",
                        progress=bar.phases, dtype=args.dtype, device=args.device)
    out, report = run.out, run.result.report
    if args.json:
        _print_json({"inputs": report["inputs"], "merged": report["merged"], "out": str(out), "align": args.align,
                     "how": args.how, "data": data, "run": run.run_id})
        return
    print(f"wrote {out}: {len(args.models)} models merged ({args.how}, aligned by {args.align}), evaluated on {data}")
    for row in report["inputs"]:
        print(f"  {row['model']}: loss {row['loss']:.4f}, accuracy {row['accuracy']:.3f}")
    print(f"  merged: loss {report['merged']['loss']:.4f}, accuracy {report['merged']['accuracy']:.3f}")
    if run.run_id:
        print(f"recorded as run {run.run_id}")


def cmd_transport(args) -> None:
    from pathlib import Path

    from symalign.merge.transport import parse_alphas
    from symalign.runs.execute import transport_run

    alphas = parse_alphas(args.alpha)
    with _Bar(f"transport (align {args.align})") as bar:
        run = transport_run(args.a, args.a_ft, args.b, alphas, args.data_task, args.data_base, args.align,
                            max_examples=args.max_examples, seed=args.seed, out=Path(args.out), store=_store(args),
                            source="cli", progress=bar.phases, dtype=args.dtype, device=args.device)
    result, out = run.result, run.out
    data_task, data_base = result.report["data_task"], result.report["data_base"]
    if args.json:
        _print_json({"alpha": result.alphas, "task_loss": result.task_loss, "base_loss": result.base_loss,
                     "task_accuracy": result.task_accuracy, "best_alpha": result.best_alpha, "out": str(out),
                     "align": args.align, "data_task": data_task, "data_base": data_base, "run": run.run_id})
        return
    print(f"wrote {out}: B + α·τ at the best α = {result.best_alpha:g} (task vector of {args.a_ft} aligned by "
          f"{args.align}); task = {data_task}, original task = {data_base}")
    for alpha, t, o in zip(result.alphas, result.task_loss, result.base_loss):
        print(f"  α {alpha:g}: task loss {t:.4f}, original task loss {o:.4f}")
    if run.run_id:
        print(f"recorded as run {run.run_id}")


def cmd_simplex(args) -> None:
    from symalign.runs.execute import simplex_run

    _check_html(args.html)
    if len(args.models) != 3:
        raise SymalignError(f"simplex needs exactly three models (got {len(args.models)})")
    config = _align_config(args, _data_for(args, args.models))
    with _Bar(f"simplex ({args.method})") as bar:
        run_id, surface = simplex_run(args.models, config, resolution=args.resolution, epsilon=args.epsilon,
                                      max_examples=args.max_examples, store=_store(args), source="cli",
                                      progress=bar.phases)
    if args.html:
        from symalign.plots import simplex_figure

        title = f"{args.method}: A = {args.models[0]}, B = {args.models[1]}, C = {args.models[2]}"
        simplex_figure(surface.to_json(), title).write_html(args.html, include_plotlyjs=True)
    out = dict(surface.to_json(), method=args.method, run=run_id)
    if args.json:
        _print_json(out)
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


def cmd_spectrum(args) -> None:
    from symalign.runs.execute import spectrum_run

    _check_html(args.html)
    run_id, result = spectrum_run(args.alignment, store=_store(args), source="cli")
    if args.html:
        from symalign.plots import spectrum_figure

        spectrum_figure(result).write_html(args.html, include_plotlyjs=True)
    if args.json:
        _print_json(dict(result, run=run_id))
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

def cmd_sweep(args) -> None:
    from symalign.jobs import preset_grid, read_grid, run_sweep
    from symalign.jobs.grid import OPTION_KEYS

    if bool(args.file) == bool(args.preset):
        raise SymalignError("sweep takes a sweep file or --preset NAME --family RECIPE (one of the two)")
    if args.file and args.family:
        raise SymalignError("--family goes with --preset; a sweep file names its own models")
    grid = read_grid(args.file) if args.file else preset_grid(args.preset, args.family or "", args.seeds)
    for key in OPTION_KEYS:
        if getattr(args, key) is not None:
            setattr(grid, key, getattr(args, key))
    if args.seeds and args.file:
        grid.seeds = args.seeds

    def progress(done: int, total: int, row: dict) -> None:
        what = f"barrier {row['barrier']:.4f}" if row["error"] is None else f"failed: {row['error']}"
        how = "reused" if row["reused"] else f"{row['seconds']:.1f} s"
        print(f"[{done}/{total}] {row['row']}, {row['a']} ↔ {row['b']}, seed {row['seed']}: {what} ({how})",
              file=sys.stderr, flush=True)

    result = run_sweep(grid, executor=args.executor, address=args.address, store=_store(args), out=args.out,
                       source="cli", progress=progress)
    if args.json:
        _print_json(result.to_json())
        return
    print(f"{grid.name}: {len(result.cells)} cells ({result.executed} executed, {result.reused} reused from the "
          f"run history) on {result.executor}")
    print(result.summary.to_string(index=False, float_format=lambda v: f"{v:.4f}"))
    failed = result.cells[result.cells["error"].notna()]
    for _, row in failed.iterrows():
        print(f"failed: {row['row']}, {row['a']} ↔ {row['b']}, seed {row['seed']}: {row['error']}")
    if result.out:
        print(f"wrote {result.out}/cells.csv, cells.parquet and summary.csv")
    if result.run_id:
        print(f"recorded as run {result.run_id}")


def cmd_runs(args) -> None:
    from symalign.runs import RunStore

    store = RunStore()
    if args.action == "delete":
        for run_id in args.ids:
            store.delete(run_id)
            print(f"deleted run {run_id}")
        return
    if args.action == "show":
        if not args.ids:
            raise SymalignError("runs show needs a run id (see `symalign runs list`)")
        _print_json([vars(run) | {"state": run.state} for run in map(store.get, args.ids)])
        return
    runs = store.list(kind=args.kind, method=args.method, model=args.model)
    if args.json:
        _print_json([vars(r) | {"state": r.state} for r in runs])
        return
    if not runs:
        print(f"no runs recorded in {store.path}")
    for r in runs:
        barrier = r.metrics.get("barrier")
        shown = f"barrier {barrier:.4f}" if barrier is not None else ""
        print(f"{r.id}  {r.state:<11} {r.kind:<7} {r.method:<10} {r.model_a} ↔ {r.model_b}  {shown}")


def cmd_app(args) -> None:
    import os

    from symalign.ui.launch import app_command

    command = app_command(port=args.port, headless=args.headless)
    sys.stdout.flush()
    os.execv(command[0], command)  # become the server: signals and exit codes reach streamlit itself


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="symalign", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("inspect", help="print a model's symmetry spec: components, sizes, admissible classes")
    p.add_argument("model")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_inspect)

    p = sub.add_parser("transform", help="plant a random admissible transform: same function, new weights")
    _add_dtype_flag(p)
    p.add_argument("model")
    p.add_argument("--random", action="store_true", help="draw the transform at random (seeded)")
    _add_class_flags(p)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", required=True)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_transform)

    p = sub.add_parser("canonicalize", help="absorb LayerNorm γ, β and centre the residual (same function)")
    _add_dtype_flag(p)
    p.add_argument("model")
    p.add_argument("--out", required=True)
    p.set_defaults(func=cmd_canonicalize)

    p = sub.add_parser("init", help="write a small randomly initialised GPT-2 or ViT")
    _add_dtype_flag(p)
    p.add_argument("family", choices=("gpt2", "vit"))
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--width", type=int, default=32)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--mlp", type=int, default=None)
    p.add_argument("--activation", default="gelu")
    p.add_argument("--untied", action="store_true", help="GPT-2: give the LM head its own weights")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", required=True)
    p.set_defaults(func=cmd_init)

    p = sub.add_parser("train", help="train a recipe (vit-digits, gpt-shakespeare, or a GPU paper recipe)")
    p.add_argument("recipe")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", required=True)
    p.add_argument("--steps", type=int, default=None, help="override the recipe's step count")
    p.add_argument("--data", default=None, help="data spec (needed by the CIFAR recipes)")
    p.add_argument("--device", default="auto")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_train)

    p = sub.add_parser("zoo", help="list the shipped models (`zoo list`) or retrain them (`zoo build`)")
    p.add_argument("action", choices=("list", "build"))
    p.add_argument("--recipes", nargs="*")
    p.add_argument("--seeds", nargs="*", type=int, default=[0, 1, 2])
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_zoo)

    p = sub.add_parser("align", help="find the symmetry transform that brings B into A's basis")
    _add_dtype_flag(p)
    p.add_argument("a")
    p.add_argument("b")
    p.add_argument("--method", default="weight", choices=("none", "weight", "activation", "learned", "soft"))
    _add_class_flags(p)
    p.add_argument("--head-cost", default="circuit", choices=("circuit", "spectral"))
    p.add_argument("--max-sweeps", type=int, default=30, help="weight matching: at most this many sweeps")
    p.add_argument("--max-seconds", type=float, default=None,
                   help="weight matching: stop after the sweep that passes this many seconds")
    _add_learned_flags(p)
    p.add_argument("--lambdas", default="uniform_mid", choices=("uniform_mid", "half", "uniform", "normal"),
                   help="learned/soft: distribution of λ per step")
    p.add_argument("--residual-strategy", default="all", choices=("all", "first", "last", "identity", "separate"),
                   help="activation: which hidden states match the residual")
    p.add_argument("--head-strategy", default="two-stage", choices=("two-stage", "ignore"),
                   help="activation: match heads two-stage or leave them in place")
    p.add_argument("--max-examples", type=int, default=256, help="activation: examples whose activations are used")
    p.add_argument("--data", default=None)
    p.add_argument("--device", default="auto")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", required=True)
    p.add_argument("--barrier", action="store_true", help="also measure the barrier between A and aligned B")
    p.add_argument("--no-record", action="store_true", help="do not record the run in the run history")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_align)

    p = sub.add_parser("align-many", help="bring three or more models into one shared basis (the first model's)")
    _add_dtype_flag(p)
    _add_universe_flags(p, default_method="weight")
    _add_run_flags(p, "data spec for learned matching (default: the models' own data)")
    p.add_argument("--out", required=True)
    p.add_argument("--barrier", action="store_true", help="also measure the barrier of every aligned pair")
    p.set_defaults(func=cmd_align_many)

    p = sub.add_parser("merge", help="merge two or more models (aligned into the first's basis) into one")
    _add_dtype_flag(p)
    p.add_argument("models", nargs="+", metavar="MODEL")
    p.add_argument("--align", default="weight", choices=("none", "weight", "learned"),
                   help="how the models are brought into the first's basis first (all classes); none: as they are")
    p.add_argument("--how", default="average", choices=("average", "fisher", "regmean"))
    p.add_argument("--data", default=None, help="data for Fisher/RegMean statistics and evaluation "
                                                "(default: the first model's own data)")
    p.add_argument("--examples", type=int, default=64, help="training examples for Fisher or input Gram matrices")
    _add_model_output_flags(p)
    p.set_defaults(func=cmd_merge)

    p = sub.add_parser("transport", help="carry a fine-tune's task vector from its base A into model B")
    _add_dtype_flag(p)
    p.add_argument("a", metavar="A", help="the base model")
    p.add_argument("a_ft", metavar="A_FT", help="A fine-tuned on a task")
    p.add_argument("b", metavar="B", help="the model that receives the task vector")
    p.add_argument("--align", default="weight", choices=("none", "weight", "learned"),
                   help="how A is aligned to B (all classes) to re-express the task vector in B's basis")
    p.add_argument("--alpha", default="0,0.25,0.5,0.75,1", help="comma-separated scales of the task vector")
    p.add_argument("--data-task", default=None, help="the fine-tune's task data (default: A_FT's own data)")
    p.add_argument("--data-base", default=None, help="the original task's data (default: A's own data)")
    _add_model_output_flags(p)
    p.set_defaults(func=cmd_transport)

    p = sub.add_parser("simplex", help="loss over the simplex of three models (after universe alignment)")
    _add_universe_flags(p, default_method="none")
    p.add_argument("--resolution", type=int, default=10, help="grid steps per edge: (r+1)(r+2)/2 points")
    p.add_argument("--epsilon", type=float, default=0.05, help="near-zero region: loss ≤ corner plane + ε")
    p.add_argument("--max-examples", type=int, default=None)
    _add_run_flags(p, "data spec; default: the models' own recipe data")
    p.add_argument("--html", default=None, help="write the ternary figure to this HTML file")
    p.set_defaults(func=cmd_simplex)

    p = sub.add_parser("spectrum", help="eigen-angles of a learned alignment's orthogonal corrections")
    p.add_argument("alignment", metavar="ALIGNMENT_DIR")
    p.add_argument("--html", default=None, help="write the histograms to this HTML file")
    p.add_argument("--no-record", action="store_true", help="do not record the run in the run history")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_spectrum)

    p = sub.add_parser("barrier", help="loss along the straight line between two models, and its barrier")
    p.add_argument("a")
    p.add_argument("b")
    p.add_argument("--data", default=None, help="data spec; default: the models' own recipe data")
    p.add_argument("--points", type=int, default=21)
    p.add_argument("--max-examples", type=int, default=None)
    p.add_argument("--device", default="auto")
    p.add_argument("--form", choices=("canonical", "raw"), default="canonical",
                   help="interpolate canonical forms (default) or the raw parameters")
    p.add_argument("--no-record", action="store_true", help="do not record the run in the run history")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_barrier)

    p = sub.add_parser("sweep", help="an ablation grid: model pairs × methods × symmetry classes × seeds")
    p.add_argument("file", nargs="?", help="a sweep file (.toml, .yaml or .json; see docs/sweeps.md)")
    p.add_argument("--preset", help="a named grid: table1 (Theus et al.'s rows), components, quick")
    p.add_argument("--family", help="with --preset: the zoo recipe whose seeds 0, 1, 2 make the pairs")
    p.add_argument("--seeds", type=int, nargs="+", default=None, help="matcher seeds for learned/soft rows")
    p.add_argument("--executor", default="auto", choices=("auto", "ray", "serial"),
                   help="auto: Ray when it is installed, else serial")
    p.add_argument("--address", default=None, help="join this Ray cluster (HOST:PORT) instead of a local one")
    p.add_argument("--data", default=None, help="data spec for every cell (default: each model's own data)")
    p.add_argument("--points", type=int, default=None, help="interpolation points per curve (default 21)")
    p.add_argument("--max-examples", type=int, default=None, help="evaluation examples per curve point")
    p.add_argument("--steps", type=int, default=None, help="learned/soft rows: most optimisation steps")
    p.add_argument("--out", default=None, help="write cells.csv, cells.parquet and summary.csv here")
    p.add_argument("--no-record", action="store_true",
                   help="do not record (nor reuse) runs in the run history")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_sweep)

    p = sub.add_parser("runs", help="the run history shared with the app (in $SYMALIGN_HOME)")
    p.add_argument("action", nargs="?", default="list", choices=("list", "show", "delete"))
    p.add_argument("ids", nargs="*")
    p.add_argument("--kind", choices=("align", "barrier", "align-many", "simplex", "spectrum", "sweep", "merge", "transport"))
    p.add_argument("--method")
    p.add_argument("--model", help="only runs with this text in either model reference")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_runs)

    p = sub.add_parser("app", help="open the Streamlit app on the shipped zoo")
    p.add_argument("--port", type=int, default=8501)
    p.add_argument("--headless", action="store_true", help="do not open a browser")
    p.set_defaults(func=cmd_app)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    func: Callable = args.func
    try:
        func(args)
    except SymalignError as exc:
        print("symalign: error: " + " ".join(str(exc).split()), file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("symalign: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `symalign inspect M | head`: the reader left; nothing to report
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
