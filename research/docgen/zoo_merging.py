"""Merging zoo seeds: evaluation loss and accuracy of the merged model by alignment and merge rule,
mean ± std over the three seed pairs (the README's merging table).

    python -m research.docgen.zoo_merging [--recipes vit-digits gpt-shakespeare] [--examples 64] [--threads 2]
                                     [--aligns none weight learned] [--hows average fisher regmean]
                                     [--base zoo:vit-digits/0]

`--hows` takes any merge rule, mergekit's included (linear, slerp, ties, dare_ties, task_arithmetic,
model_stock: pip install -e ".[mergekit]"). `--base M`: the rules that need a base merge each pair
as task vectors from M (e.g. `--recipes vit-digits-flipped --base zoo:vit-digits/0`, the zoo's
fine-tunes; DARE's drops follow seed 0).

Each pair (0↔1, 0↔2, 1↔2) is merged into the first model's basis with --align none / weight /
learned (all classes; learned at the data's defaults) and --how average / fisher / regmean; the
endpoints' mean loss is printed beside. One alignment per pair serves the three merge rules."""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from symalign.merge import merge_models
from symalign.merge.builtin_rules import merge_rule
from symalign.merge.merging import aligned_members
from symalign.models import load_model
from symalign.train.recipes import RECIPES

PAIRS = [(0, 1), (0, 2), (1, 2)]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--recipes", nargs="*", default=["vit-digits", "gpt-shakespeare"])
    parser.add_argument("--examples", type=int, default=64, help="training examples for Fisher / Gram matrices")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--aligns", nargs="*", default=["none", "weight", "learned"])
    parser.add_argument("--hows", nargs="*", default=["average", "fisher", "regmean"])
    parser.add_argument("--base", default=None, help="the base model of the rules that need one")
    args = parser.parse_args()
    base = load_model(args.base) if args.base else None
    torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, {args.threads} threads, {args.examples} examples for the statistics\n")
    print("| recipe | align | merge | merged loss | merged accuracy | endpoints' mean loss |")
    print("|---|---|---|---|---|---|")
    for recipe in args.recipes:
        data = RECIPES[recipe].data
        models = {i: load_model(f"zoo:{recipe}/{i}") for i in range(3)}
        for how_align in args.aligns:
            start = time.perf_counter()
            members = {(i, j): aligned_members([models[i], models[j]], how_align, data) for i, j in PAIRS}
            with_base = {(i, j): aligned_members([base, models[i], models[j]], how_align, data) for i, j in PAIRS} \
                if base is not None else {}
            align_seconds = (time.perf_counter() - start) / len(PAIRS)
            for how in args.hows:
                needs_base = merge_rule(how).needs_base
                if needs_base and base is None:
                    print(f"| {recipe} | {how_align} | {how} | (needs --base) | | |")
                    continue
                losses, accs, ends, start = [], [], [], time.perf_counter()
                for i, j in PAIRS:
                    report = merge_models([models[i], models[j]], how_align, how, data, examples=args.examples,
                                          members=(with_base if needs_base else members)[(i, j)],
                                          base=base if needs_base else None).report
                    report["inputs"] = report["inputs"][1:] if needs_base else report["inputs"]
                    losses.append(report["merged"]["loss"])
                    accs.append(report["merged"]["accuracy"])
                    ends.append(statistics.mean(r["loss"] for r in report["inputs"]))
                print(f"| {recipe} | {how_align} | {how} "
                      f"| {statistics.mean(losses):.3f} ± {statistics.stdev(losses):.3f} "
                      f"| {statistics.mean(accs):.3f} ± {statistics.stdev(accs):.3f} | {statistics.mean(ends):.3f} |"
                      f"  <!-- align {align_seconds:.0f} s/pair, merge {time.perf_counter() - start:.0f} s -->",
                      flush=True)


if __name__ == "__main__":
    main()
