"""Training: one recipe, or the shipped zoo."""

from __future__ import annotations

from symalign.cli.common import Bar, at_least, print_json
from symalign.errors import SymalignError


def add_train(sub) -> None:
    p = sub.add_parser("train", help="train a recipe (vit-digits, gpt-shakespeare, or a GPU paper recipe)")
    p.add_argument("recipe")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", required=True)
    p.add_argument("--steps", type=at_least(1), default=None, help="override the recipe's step count")
    p.add_argument("--data", default=None, help="data spec (needed by the CIFAR recipes)")
    p.add_argument("--device", default="auto")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_train)


def cmd_train(args) -> None:
    from symalign.train.loop import recipe_named, train

    recipe = recipe_named(args.recipe)
    with Bar(f"train {recipe.name} seed {args.seed}") as bar:
        record = train(recipe.name, args.seed, args.out, steps=args.steps, data_spec=args.data, device=args.device,
                       progress=bar)
    if args.json:
        print_json(record)
    else:
        print(f"wrote {args.out}: eval loss {record['eval_loss']:.4f}, accuracy {record['eval_accuracy']:.3f} "
              f"({record['train_seconds']:.0f} s)")


def add_zoo(sub) -> None:
    p = sub.add_parser("zoo", help="list the shipped models (`zoo list`) or retrain them (`zoo build`)")
    p.add_argument("action", choices=("list", "build"))
    p.add_argument("--recipes", nargs="*", help="the recipes to list or build (default: every shipped one)")
    p.add_argument("--seeds", nargs="*", type=int, default=None,
                   help="seeds to list or train (default: each recipe's own; 0, 1, 2 for most, 0, 1 for the width "
                        "family)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_zoo)


def cmd_zoo(args) -> None:
    from symalign.train.loop import build
    from symalign.train.recipes import RECIPES
    from symalign.zoo import manifest

    if args.action == "build":
        with Bar("zoo") as bar:
            records = build(args.recipes or [n for n, r in RECIPES.items() if r.cpu], args.seeds, progress=bar)
        for record in records:
            print(f"zoo:{record['recipe']}/{record['seed']}: eval loss {record['eval_loss']:.4f}")
        return
    entries = manifest()["models"]
    if args.recipes:  # `zoo list --recipes NAME` listed every model, whatever NAME was
        unknown = sorted(set(args.recipes) - {e["recipe"] for e in entries})
        if unknown:
            raise SymalignError(f"no zoo recipe {', '.join(map(repr, unknown))}; the zoo holds "
                                f"{', '.join(dict.fromkeys(e['recipe'] for e in entries))}")
        entries = [e for e in entries if e["recipe"] in args.recipes]
    if args.seeds is not None:
        entries = [e for e in entries if e["seed"] in args.seeds]
    if args.json:
        print_json(entries)
        return
    if not entries:
        print("the zoo is empty (build it with `symalign zoo build`)")
    for e in entries:
        print(f"zoo:{e['recipe']}/{e['seed']:<3} loss {e['eval_loss']:.4f}  accuracy {e['eval_accuracy']:.3f}  "
              f"({e['eval_examples']} eval examples of {e['data']}, {e['steps']} steps, {e['train_seconds']:.0f} s)")


COMMANDS = (add_train, add_zoo,)
