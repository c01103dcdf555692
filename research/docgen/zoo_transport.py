"""Task-vector transport on the zoo: the fine-tune zoo:FINE_TUNE/S (zoo:BASE/0 trained on another
task) carried into zoo:BASE/1 and /2 by each alignment; the fine-tune task's and the original
task's evaluation loss along α, mean ± std over the fine-tune seeds × receiving models.

    python -m research.docgen.zoo_transport [--alphas 0,0.25,0.5,0.75,1,1.5] [--aligns none weight learned]
        [--base vit-digits --fine-tune vit-digits-flipped]     # or gpt-shakespeare, gpt-shakespeare-upper
        [--max-examples N]

The data of each task is what the models were trained on (their training.json)."""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from symalign.merge import parse_alphas, transport
from symalign.models import load_model
from symalign.models.io import default_data_spec


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--alphas", default="0,0.25,0.5,0.75,1,1.5")
    parser.add_argument("--aligns", nargs="*", default=["none", "weight", "learned"])
    parser.add_argument("--fine-tunes", nargs="*", type=int, default=[0, 1, 2])
    parser.add_argument("--receivers", nargs="*", type=int, default=[1, 2])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--base", default="vit-digits")
    parser.add_argument("--fine-tune", default="vit-digits-flipped")
    parser.add_argument("--max-examples", type=int, default=None, help="evaluation examples per task (default: all)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    alphas = parse_alphas(args.alphas)
    a = load_model(f"zoo:{args.base}/0")
    tuned = {s: load_model(f"zoo:{args.fine_tune}/{s}") for s in args.fine_tunes}
    receivers = {r: load_model(f"zoo:{args.base}/{r}") for r in args.receivers}
    data_task, data_base = default_data_spec(next(iter(tuned.values()))), default_data_spec(a)
    print(f"torch {torch.__version__}, {args.threads} threads; A = zoo:{args.base}/0, A′ = {args.fine_tune}/"
          f"{args.fine_tunes}, B = {args.base}/{args.receivers}; tasks {data_task} / {data_base}, "
          f"max examples {args.max_examples or 'all'}\n")
    header = " | ".join(f"α={x:g}" for x in alphas)
    print(f"| align | loss on | {header} | best α |\n|---|---|{'---|' * len(alphas)}---|")
    for how_align in args.aligns:
        start, task, base, best = time.perf_counter(), [], [], []
        for a_ft in tuned.values():
            for b in receivers.values():
                result = transport(a, a_ft, b, alphas, data_task, data_base, how_align,
                                   max_examples=args.max_examples)
                task.append(result.task_loss)
                base.append(result.base_loss)
                best.append(result.best_alpha)
        for name, rows in ((f"{data_task} (task)", task), (f"{data_base} (original)", base)):
            cells = " | ".join(f"{statistics.mean(c):.3f} ± {statistics.stdev(c):.3f}" for c in zip(*rows))
            extra = f"{statistics.mean(best):.2f}" if rows is task else ""
            print(f"| {how_align} | {name} | {cells} | {extra} |", flush=True)
        print(f"<!-- {how_align}: {time.perf_counter() - start:.0f} s for {len(task)} transports -->")


if __name__ == "__main__":
    main()
