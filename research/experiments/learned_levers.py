"""Which of learned matching's levers close more of the barrier, on many pairs at once (issue #59).

    python -m research.experiments.learned_levers [--pairs SPEC ...] [--levers NAME ...] [--jobs N] [--threads T]
                                        [--device auto|cpu|cuda] [--budget SECONDS] [--cache DIR] [--json FILE]

A pair SPEC is `heldout:NAME` (a recipe of research/experiments/heldout_pairs.py, trained and cached on first
use, on `--device`) or `paths:A,B,DATA` (two model folders and a `--data` spec). Each lever is one
change to `symalign align A B --method learned --classes all` (LEVERS below); `default` is the
command as it is. For every pair the vanilla barrier and weight matching's (all classes) are read
once; every lever's barrier is read on the evaluation split at 21 points, and the share of the
vanilla barrier it closes printed beside it.

Runs are independent, so `--jobs` of them run at once in separate processes (on a GPU, several
small models share the card). `--budget` stops starting runs after that many seconds (those not run
are listed as skipped), and the JSON is rewritten after every run, so a run cut short keeps what it
finished. Seconds are wall time inside one worker while others share the machine: compare them
only within one invocation."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from multiprocessing import get_context
from pathlib import Path

from research.experiments import heldout_pairs

# name: (class preset, AlignConfig fields): each lever is a declared option of learned matching
LEVERS: dict[str, tuple[str, dict]] = {
    "default": ("all", {}),
    "full": ("full", {}),
    "steps1200": ("all", {"steps": 1200}),
    "steps2400": ("all", {"steps": 2400}),  # a long run at the default's classes (4x its steps)
    "lr0.03": ("all", {"lr": 0.03}),
    "lambda-uniform": ("all", {"lambdas": "uniform"}),
    "batch256": ("all", {"batch_size": 256}),
    "start-auto": ("all", {"start": "auto"}),
    "lr0.003": ("all", {"lr": 0.003}),
}


def _pairs(specs: list[str], cache: Path, device: str, steps: int | None = None) -> list[dict]:
    out = []
    for spec in specs:
        kind, _, rest = spec.partition(":")
        if kind == "heldout":
            r = heldout_pairs.recipe(rest)
            a, b = heldout_pairs.pair_paths(r, cache, steps, device=device, log=lambda m: print(m, flush=True))
            out.append({"pair": r.name, "a": str(a), "b": str(b), "data": heldout_pairs.data_spec(r, cache),
                        "construction": _construction(r)})
        elif kind == "paths":
            a, b, data = rest.split(",", 2)
            out.append({"pair": f"{Path(a).parent.name}:{Path(a).name}-{Path(b).name}", "a": a, "b": b,
                        "data": data, "construction": "given"})
        else:
            raise SystemExit(f"pair {spec!r}: expected heldout:NAME or paths:A,B,DATA")
    return out


def _construction(r: heldout_pairs.PairRecipe) -> str:
    s = r.shape
    return (f"{r.family}, {r.corpus}, {r.tokenizer} {s.get('vocab', 1024)}, {s['layers']} layers, width {s['width']}, "
            f"{s['heads']} heads, {'tied' if s.get('tied') else 'untied'}, {r.steps} steps, seeds {r.seeds}")


def _train(job: tuple) -> str:
    """One model of a held-out recipe (a worker: recipes train in parallel)."""
    name, seed, cache, device, threads, steps = job
    import torch

    torch.set_num_threads(threads)
    begin = time.perf_counter()
    heldout_pairs.trained_model(heldout_pairs.recipe(name), seed, Path(cache), steps, log=lambda m: None,
                                device=device)
    return f"{name} seed {seed} ready on {device} in {time.perf_counter() - begin:.0f} s"


def _progress_line(label: str, begin: float, every: float = 600.0):
    """A line on stderr at most every `every` seconds: a long run (hours on 2 cores) is otherwise silent
    until it ends."""
    last = [begin]

    def report(done: int, total: int) -> None:
        now = time.perf_counter()
        if now - last[0] >= every:
            last[0] = now
            print(f"{label}: step {done} of {total}, {now - begin:.0f} s", file=sys.stderr, flush=True)
    return report


def _run(job: tuple) -> dict:
    """One pair under one lever (or its baselines), in a worker process."""
    pair, lever, device, threads, deadline, steps = job
    if time.time() > deadline:
        return {"pair": pair["pair"], "lever": lever, "skipped": "budget spent"}
    import torch

    from symalign.data import load_data
    from symalign.landscape.interpolation import interpolation_curve
    from symalign.match.align import align
    from symalign.match.config import AlignConfig
    from symalign.match.learned.checks import learned_hint
    from symalign.models import load_model

    torch.set_num_threads(threads)
    data = load_data(pair["data"])
    a, b = load_model(pair["a"]), load_model(pair["b"])
    begin = time.perf_counter()
    if lever == "baselines":
        weight = align(a, b, AlignConfig(method="weight", preset="all", device=device))
        seconds = time.perf_counter() - begin
        return {"pair": pair["pair"], "lever": lever, "weight_seconds": seconds,
                "vanilla": interpolation_curve(a, b, data, device=device).barrier,
                "weight": interpolation_curve(a, weight.aligned, data, device=device).barrier}
    preset, fields = LEVERS[lever]
    fields = {**fields, "steps": steps} if steps and "steps" not in fields else fields
    config = AlignConfig(method="learned", preset=preset, data=pair["data"], device=device, **fields)
    learned = align(a, b, config, progress=_progress_line(f"{pair['pair']} {lever}", begin))
    seconds = time.perf_counter() - begin
    s = learned.report.learned_summary
    return {"pair": pair["pair"], "lever": lever, "seconds": seconds, "steps": s.steps, "stopped": s.stopped,
            "best_step": s.best_step, "start_check": s.start_check, "best_check": s.best_check,
            "still_improving": learned_hint(learned.report.learned, s),  # what the run's output said, if anything
            "checks": [[h.step, h.check] for h in learned.report.learned if h.check is not None],
            "learned": interpolation_curve(a, learned.aligned, data, device=device).barrier}


def table(pairs: list[dict], results: list[dict], levers: list[str]) -> str:
    """Closed share of the vanilla barrier, a row per pair and a column per lever."""
    by = {(r["pair"], r["lever"]): r for r in results}
    lines = ["| pair | vanilla | weight | " + " | ".join(levers) + " |", "|---|---|---|" + "---|" * len(levers)]
    for p in pairs:
        base = by.get((p["pair"], "baselines"), {})
        vanilla = base.get("vanilla")
        cells = []
        for lever in levers:
            r = by.get((p["pair"], lever), {})
            if "learned" not in r or not vanilla:
                cells.append(r.get("skipped", "—"))
            else:
                said = "; said still improving" if r.get("still_improving") else ""
                cells.append(f"{r['learned']:.4f} ({100 * (1 - r['learned'] / vanilla):.1f}%, {r['seconds']:.0f} s, "
                             f"{r['steps']} steps{said})")
        weight = f"{base['weight']:.4f} ({100 * (1 - base['weight'] / vanilla):.1f}%)" if vanilla else "—"
        lines.append(f"| {p['pair']} | {vanilla:.3f} | {weight} | " + " | ".join(cells) + " |" if vanilla
                     else f"| {p['pair']} | — | — | " + " | ".join(cells) + " |")
    for lever in levers:
        closed = [1 - by[(p["pair"], lever)]["learned"] / by[(p["pair"], "baselines")]["vanilla"] for p in pairs
                  if "learned" in by.get((p["pair"], lever), {}) and "vanilla" in by.get((p["pair"], "baselines"), {})]
        if closed:
            lines.append(f"\n{lever}: closed median {100 * statistics.median(closed):.1f}%, worst "
                         f"{100 * min(closed):.1f}% over {len(closed)} pairs")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", nargs="+", default=[f"heldout:{r.name}" for r in heldout_pairs.PAIRS
                                                       if r.split == "wide"])
    parser.add_argument("--levers", nargs="+", default=list(LEVERS), choices=list(LEVERS))
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--threads", type=int, default=2, help="torch threads per worker")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--budget", type=float, default=float("inf"), help="seconds after which no run starts")
    parser.add_argument("--cache", type=Path, default=heldout_pairs.DEFAULT_CACHE)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--steps", type=int, default=None,
                        help="learned steps for every lever that sets none (a quick check of the script)")
    parser.add_argument("--train-steps", type=int, default=None,
                        help="training steps of held-out recipes (a quick check; cached apart from the recipe's own)")
    args = parser.parse_args(argv)
    begin = time.time()
    deadline = begin + args.budget
    context = get_context("spawn")  # CUDA in workers needs spawned processes
    train = [(heldout_pairs.recipe(s.partition(":")[2]).name, seed, str(args.cache), args.device, args.threads,
              args.train_steps) for s in args.pairs if s.startswith("heldout:")
             for seed in heldout_pairs.recipe(s.partition(":")[2]).seeds]
    for corpus in {heldout_pairs.recipe(job[0]).corpus for job in train} - {"digits-shift", "digits-rotate"}:
        heldout_pairs.corpus_file(corpus, args.cache)  # written once, before the trainers read it
    with ProcessPoolExecutor(args.jobs, mp_context=context) as pool:
        for line in pool.map(_train, train):
            print(line, f"({time.time() - begin:.0f} s in)", flush=True)
    pairs = _pairs(args.pairs, args.cache, args.device, args.train_steps)
    jobs = [(p, lever, args.device, args.threads, deadline, args.steps)
            for lever in ["baselines", *args.levers] for p in pairs]
    results = []
    with ProcessPoolExecutor(args.jobs, mp_context=context) as pool:
        futures = {pool.submit(_run, job): job for job in jobs}
        for future in as_completed(futures):
            try:
                row = future.result()
            except Exception as error:  # one broken run is reported, the others go on
                job = futures[future]
                row = {"pair": job[0]["pair"], "lever": job[1], "error": repr(error)}
            results.append(row)
            print(json.dumps(row), f"({time.time() - begin:.0f} s in)", flush=True)
            if args.json:
                args.json.write_text(json.dumps({"pairs": pairs, "results": results, "device": args.device,
                                                 "pid": os.getpid()}, indent=1))
    print(table(pairs, results, args.levers))


if __name__ == "__main__":
    main()
