"""Commands on one model: inspect its symmetry spec, plant a transform, canonicalise, write a random one."""

from __future__ import annotations

import json
import sys

from symalign.cli.common import add_class_flags, add_dtype_flag, at_least, parse_classes, preset_of, print_json
from symalign.errors import SymalignError, brief
from symalign.symmetry.spec import CLASSES, SymmetrySpec

DEFAULT_RANDOM_CLASSES = {"mlp": "perm", "heads": "perm", "qk": "orthogonal", "vo": "orthogonal",
                          "residual": "orthogonal"}



def spec_table(model, spec: SymmetrySpec, canonical: bool) -> dict:
    """The spec as plain data: one row per component with its admissible classes and reasons."""
    d = model.dims
    return {
        "family": spec.family,
        "hf_class": model.family.hf_class_name,
        "canonical": canonical,
        "dims": {"n_layer": d.n_layer, "n_head": d.n_head, "d_head": d.d_head, "d_model": d.d_model,
                 "d_mlp": d.d_mlp, "activation": d.activation, "n_kv_head": d.kv_heads, "norm": d.norm,
                 "rope": d.rope, "gated_mlp": d.gated},
        "components": [
            {"name": s.name, "kind": s.kind, "size": s.size, "count": s.count,
             "admissible": [c for c in CLASSES if s.admits(c)], "reasons": dict(s.refusals)}
            for s in spec.spaces.values()
        ],
    }


def add_inspect(sub) -> None:
    p = sub.add_parser("inspect", help="print a model's symmetry spec: components, sizes, admissible classes")
    p.add_argument("model")
    p.add_argument("--layout", action="store_true",
                   help="also print the family's weight map: each Hugging Face tensor, its reshape into the logical "
                        "layout and the symmetry space of each axis")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_inspect)


def cmd_inspect(args) -> None:
    from symalign.models import canonical_form_gaps, load_model, spec_of
    from symalign.models.weight_map import layout_table

    model = load_model(args.model)
    gaps = canonical_form_gaps(model)
    summary = dict(spec_table(model, spec_of(model), not gaps), canonical_gaps=gaps)
    if args.layout:
        summary["layout"] = layout_table(model.family, model.config)
    if args.json:
        print_json(summary)
        return
    d = summary["dims"]
    print(f"{summary['family']} ({summary['hf_class']}) from {args.model}")
    kv = f" sharing {d['n_kv_head']} key/value heads" if d["n_kv_head"] != d["n_head"] else ""
    extras = ", ".join(x for x in (d["norm"], "RoPE" if d["rope"] else "", "gated MLP" if d["gated_mlp"] else "") if x)
    print(f"  {d['n_layer']} layers, width {d['d_model']}, {d['n_head']} heads × {d['d_head']}{kv}, "
          f"MLP {d['d_mlp']} ({d['activation']}), {extras}; canonical form: {'yes' if summary['canonical'] else 'no'}")
    if gaps:
        more = f" (and {len(gaps) - 1} more)" if len(gaps) > 1 else ""
        print(f"  not canonical: {gaps[0]}{more}; `symalign canonicalize` gives the canonical form")
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
    if args.layout:
        _print_layout(summary["layout"])


def _print_layout(rows: list[dict]) -> None:
    if not rows:
        print("\n  layout: this family's adapters are written by hand (no weight map yet)")
        return
    print("\n  layout (Hugging Face tensor → logical tensor; {i}: every layer)")
    for r in rows:
        how = " ".join(x for x in (r["pattern"], r["part"], f"(else {r['fallback']})" if r["fallback"] else "") if x)
        tags = ", ".join("·" if t is None else t for t in r["tags"])
        print(f"  {r['hf']:<48} {how:<44} → {r['logical']} [{tags}]")


def add_transform(sub) -> None:
    p = sub.add_parser("transform", help="plant a random admissible transform: same function, new weights")
    add_dtype_flag(p)
    p.add_argument("model")
    p.add_argument("--random", action="store_true", help="draw the transform at random (seeded)")
    add_class_flags(p)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", required=True)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_transform)


def cmd_transform(args) -> None:
    from symalign.models import admits_residual_rotation, canonicalize, load_model, save_model, spec_of, transformed
    from symalign.models.compare import function_gap, relative_change
    from symalign.symmetry.random import random_transform

    if not args.random:
        raise SymalignError("transform needs --random (plant a random admissible transform)")
    classes = parse_classes(args)
    model = load_model(args.model)
    preset = preset_of(args)
    if preset or not classes:  # a preset or the default: fitted to this model (RoPE: rotary QK maps)
        from symalign.match.config import preset_classes

        wanted = preset_classes(preset) if preset else dict(DEFAULT_RANDOM_CLASSES)
        classes = model.family.spec(model.config, canonical=True).fit(wanted)
    canonicalised = False
    if classes.get("residual") == "orthogonal" and not admits_residual_rotation(model):
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
        print_json(summary)
    else:
        print(f"wrote {out}: same function (max |Δlogit| {summary['max_logit_diff']:.1e} on random inputs), "
              f"weights moved by {100 * summary['relative_weight_change']:.0f}% (relative Frobenius)")


def add_canonicalize(sub) -> None:
    p = sub.add_parser("canonicalize", help="absorb LayerNorm γ, β and centre the residual (same function)")
    add_dtype_flag(p)
    p.add_argument("model")
    p.add_argument("--out", required=True)
    p.set_defaults(func=cmd_canonicalize)


def cmd_canonicalize(args) -> None:
    from symalign.models import canonicalize, load_model, save_model
    from symalign.models.compare import function_gap

    model = load_model(args.model)
    result = canonicalize(model)
    out = save_model(result, args.out, args.dtype)
    print(f"wrote {out}: canonical form (max |Δlogit| {function_gap(model, result):.1e} on random inputs)")


def add_init(sub) -> None:
    p = sub.add_parser("init", help="write a small randomly initialised model of any supported family")
    add_dtype_flag(p)
    p.add_argument("family", help="a model type: gpt2, vit, llama, qwen2, mistral, bert, roberta, ... "
                                  "(every family in symalign/models/families that builds small models)")
    p.add_argument("--layers", type=at_least(1), default=2)
    p.add_argument("--width", type=at_least(1), default=32, help="the residual width: a multiple of --heads")
    p.add_argument("--heads", type=at_least(1), default=4)
    p.add_argument("--mlp", type=at_least(1), default=None, help="the MLP's hidden width (default: the family's)")
    p.add_argument("--activation", default="gelu", help="GPT-2, ViT, BERT (Llama-like families use SwiGLU)")
    p.add_argument("--untied", action="store_true", help="text models: give the output head its own weights")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", required=True)
    p.set_defaults(func=cmd_init)


def cmd_init(args) -> None:
    from huggingface_hub.errors import StrictDataclassError  # transformers' config validators raise it

    from symalign.models import FAMILIES, save_model
    from symalign.models.tiny import random_model, tiny_config, tiny_families

    if args.family not in tiny_families():  # checked here: the families are known once torch is loaded
        raise SymalignError(f"init cannot build {args.family!r}; choose from {', '.join(tiny_families())}")
    tokenizer, vocab = None, {}
    task = FAMILIES[args.family].task
    if task != "image-classification":  # a text model is saved with a tokenizer that fits it: it can be scored
        from symalign.data.text import char_tokenizer, shakespeare_text

        tokenizer = char_tokenizer(shakespeare_text(), mask=task == "masked-lm")
        vocab = {"vocab": len(tokenizer)}
    if args.width % args.heads:
        raise SymalignError(f"--width {args.width} is not a multiple of --heads {args.heads}: each head takes "
                            "width / heads dimensions")
    check_activation(args.activation)
    try:  # what else transformers' config or module refuses (a rotary head of odd size, ...), in its own words
        config = tiny_config(args.family, layers=args.layers, width=args.width, heads=args.heads, mlp=args.mlp,
                             activation=args.activation, tied=not args.untied, **vocab)
        model = random_model(config, seed=args.seed)
    except (ValueError, RuntimeError, StrictDataclassError) as exc:
        cause = str(exc).strip().splitlines()[-1].strip().removeprefix("ValueError: ")  # a validator's cause: last
        raise SymalignError(f"init cannot build this {args.family}: {brief(Exception(cause))}") from None
    out = save_model(model, args.out, args.dtype)
    if tokenizer is not None:
        tokenizer.save_pretrained(str(out))
    print(f"wrote {out}: random {args.family} ({args.layers} layers, width {args.width}, {args.heads} heads)")


def check_activation(name: str) -> None:
    """transformers names its activations in one table; a name outside it was a KeyError when the module was built."""
    from transformers.activations import ACT2FN

    if name not in ACT2FN:
        raise SymalignError(f"--activation {name!r}: choose from {', '.join(sorted(ACT2FN))}")


COMMANDS = (add_inspect, add_transform, add_canonicalize, add_init,)

