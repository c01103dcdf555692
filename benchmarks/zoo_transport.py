"""Task-vector transport on the zoo: the fine-tune zoo:vit-digits-flipped/S (zoo:vit-digits/0 trained
on mirrored digits) carried into zoo:vit-digits/1 and /2 by each alignment; the mirrored task's and
the original task's evaluation loss along α, mean ± std over the fine-tune seeds × receiving models.

    python benchmarks/zoo_transport.py [--alphas 0,0.25,0.5,0.75,1,1.5] [--aligns none weight learned]
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from symalign.merge import parse_alphas, transport
from symalign.models import load_model


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--alphas", default="0,0.25,0.5,0.75,1,1.5")
    parser.add_argument("--aligns", nargs="*", default=["none", "weight", "learned"])
    parser.add_argument("--fine-tunes", nargs="*", type=int, default=[0, 1, 2])
    parser.add_argument("--receivers", nargs="*", type=int, default=[1, 2])
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    alphas = parse_alphas(args.alphas)
    a = load_model("zoo:vit-digits/0")
    tuned = {s: load_model(f"zoo:vit-digits-flipped/{s}") for s in args.fine_tunes}
    receivers = {r: load_model(f"zoo:vit-digits/{r}") for r in args.receivers}
    print(f"torch {torch.__version__}, {args.threads} threads; A = zoo:vit-digits/0, A′ = vit-digits-flipped/"
          f"{args.fine_tunes}, B = vit-digits/{args.receivers}\n")
    header = " | ".join(f"α={x:g}" for x in alphas)
    print(f"| align | loss on | {header} | best α |\n|---|---|{'---|' * len(alphas)}---|")
    for how_align in args.aligns:
        start, task, base, best = time.perf_counter(), [], [], []
        for s, a_ft in tuned.items():
            for r, b in receivers.items():
                result = transport(a, a_ft, b, alphas, "digits-flipped", "digits", how_align)
                task.append(result.task_loss)
                base.append(result.base_loss)
                best.append(result.best_alpha)
        for name, rows in (("mirrored digits (task)", task), ("digits (original)", base)):
            cells = " | ".join(f"{statistics.mean(c):.3f} ± {statistics.stdev(c):.3f}" for c in zip(*rows))
            extra = f"{statistics.mean(best):.2f}" if name.startswith("mirrored") else ""
            print(f"| {how_align} | {name} | {cells} | {extra} |", flush=True)
        print(f"<!-- {how_align}: {time.perf_counter() - start:.0f} s for {len(task)} transports -->")


if __name__ == "__main__":
    main()
