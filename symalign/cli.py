"""The `symalign` command: a thin client of the package. User errors end in one line, exit 2."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Callable

from symalign.errors import SymalignError
from symalign.symmetry.spec import CLASSES, KINDS

DEFAULT_RANDOM_CLASSES = {"mlp": "perm", "heads": "perm", "qk": "orthogonal", "vo": "orthogonal", "residual": "orthogonal"}


def _print_json(obj) -> None:
    print(json.dumps(obj, indent=2))


def _parse_classes(args) -> dict[str, str]:
    """Per-kind classes from --classes kind=class,... and the per-kind flags (flags win)."""
    classes: dict[str, str] = {}
    for item in filter(None, (args.classes or "").split(",")):
        kind, sep, cls = item.partition("=")
        if not sep:
            raise SymalignError(f"--classes takes kind=class pairs such as mlp=perm,qk=orthogonal; got {item!r}")
        classes[kind.strip()] = cls.strip()
    for kind in KINDS:
        if getattr(args, kind, None):
            classes[kind] = getattr(args, kind)
    return classes


def _add_class_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--classes", help="comma list kind=class, e.g. mlp=perm,heads=perm,qk=orthogonal")
    for kind in KINDS:
        p.add_argument(f"--{kind}", choices=("none",) + CLASSES, help=f"class for {kind} components")


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
    print(f"  {d['n_layer']} layers, width {d['d_model']}, {d['n_head']} heads × {d['d_head']}, "
          f"MLP {d['d_mlp']} ({d['activation']}), canonical form: {'yes' if summary['canonical'] else 'no'}")
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
    classes = _parse_classes(args) or dict(DEFAULT_RANDOM_CLASSES)
    model = load_model(args.model)
    canonicalised = False
    if classes.get("residual") == "orthogonal" and not is_canonical(model):
        print("note: canonicalising first (LayerNorm γ, β absorbed) so the residual admits orthogonal maps",
              file=sys.stderr)
        model, canonicalised = canonicalize(model), True
    spec = spec_of(model)
    transform = random_transform(spec, classes, seed=args.seed)
    result = transformed(model, transform)
    out = save_model(result, args.out)
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
    out = save_model(result, args.out)
    print(f"wrote {out}: canonical form (max |Δlogit| {function_gap(model, result):.1e} on random inputs)")


def cmd_init(args) -> None:
    from symalign.models import save_model
    from symalign.models.tiny import random_model, tiny_config

    config = tiny_config(args.family, layers=args.layers, width=args.width, heads=args.heads, mlp=args.mlp,
                         activation=args.activation, tied=not args.untied)
    out = save_model(random_model(config, seed=args.seed), args.out)
    print(f"wrote {out}: random {args.family} ({args.layers} layers, width {args.width}, {args.heads} heads)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="symalign", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("inspect", help="print a model's symmetry spec: components, sizes, admissible classes")
    p.add_argument("model")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_inspect)

    p = sub.add_parser("transform", help="plant a random admissible transform: same function, new weights")
    p.add_argument("model")
    p.add_argument("--random", action="store_true", help="draw the transform at random (seeded)")
    _add_class_flags(p)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", required=True)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_transform)

    p = sub.add_parser("canonicalize", help="absorb LayerNorm γ, β and centre the residual (same function)")
    p.add_argument("model")
    p.add_argument("--out", required=True)
    p.set_defaults(func=cmd_canonicalize)

    p = sub.add_parser("init", help="write a small randomly initialised GPT-2 or ViT")
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
