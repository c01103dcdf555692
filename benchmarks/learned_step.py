"""A learned-matching step beside a plain training step of the same model, batch and device (issue #73 item 3).

    python -m benchmarks.learned_step [--pairs zoo:gpt-shakespeare/0,zoo:gpt-shakespeare/1,shakespeare ...]
                                      [--steps 20] [--device cpu|cuda] [--variants in-place out-of-place]

The natural floor of a learned step: it runs one forward and backward pass through the model interpolated
between A and the transformed B, so it cannot be cheaper than training that model on the same batch (one
forward and backward, then AdamW). The plain step here is exactly that, on the same batch size
(`--batch-size`, learned matching's own: 64 by default) drawn from the same data. Both are timed in one
process, one after the other. Run it on an idle machine: a busy one does not slow both alike. Beside
another 2-thread job the GPT ratio read 4.41, idle 1.08 (docs/benchmarks.md): the learned step's many
small operations suffer most from threads that wait for cores. The script prints the load it saw.

Per pair: median seconds of a plain step and of a learned step (steps without a check; the first two of each
left out as warm-up), and their ratio.

`--variants`: the learned step as the package builds θ(w) (`in-place`: each sum built in the moved tensor), and/or
with θ(w) summed out of place (`out-of-place`, defined here: the first change to time on a GPU, where the in-place sums
on views cost about 460 kernel launches a zoo step in backward; docs/benchmarks.md). Both give the same numbers
(addition commutes bitwise), which the script checks: it prints the largest difference between their final maps."""

from __future__ import annotations

import argparse
import os
import statistics
import time
from contextlib import contextmanager

import torch
import torch.nn.functional as F

from symalign.data import load_data
from symalign.match.align import align
from symalign.match.config import AlignConfig
from symalign.match.objective import PathObjective
from symalign.models import load_model
from symalign.models.functional import functional_params
from symalign.symmetry.transform import Transform, apply_unchecked

DEFAULT_PAIRS = ["zoo:gpt-shakespeare/0,zoo:gpt-shakespeare/1,shakespeare", "zoo:vit-digits/0,zoo:vit-digits/1,digits"]


def plain_steps(model, data, batch_size: int, steps: int, device: str) -> list[float]:
    """Seconds of each of `steps` training steps (forward, cross-entropy, backward, AdamW) of `model`."""
    module = model.to_module().train().to(device)
    optimizer = torch.optim.AdamW(module.parameters(), lr=1e-4)
    generator = torch.Generator().manual_seed(0)
    out = []
    for _ in range(steps):
        inputs, targets = data.train_batch(model, batch_size, generator)
        begin = time.perf_counter()
        logits = module(**{k: v.to(device) for k, v in inputs.items()}).logits
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.to(device).reshape(-1), ignore_index=-100)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        out.append(time.perf_counter() - begin)
    return out


def mixed_out_of_place(self: PathObjective, weights: list[float], transforms) -> dict[str, torch.Tensor]:
    """PathObjective.mixed_params with θ(w) summed out of place below LARGE_MODEL_PARAMETERS (the same numbers)."""
    if self.large:
        return IN_PLACE(self, weights, transforms)
    moved = [apply_unchecked(t, self.spec, tr) for t, tr in zip(self.tensors[1:], transforms)]
    mixed = {}
    for k, own in self.tensors[0].items():
        total = weights[0] * own
        for w, m in zip(weights[1:], moved):
            total = total + w * m.pop(k)
        mixed[k] = total
    return functional_params(self.ref.family, self.ref.config, mixed, self.names, contiguous=True)  # not large


IN_PLACE = PathObjective.mixed_params
VARIANTS = {"in-place": IN_PLACE, "out-of-place": mixed_out_of_place}


@contextmanager
def variant(name: str):
    """The learned step with θ(w) built as `name` says, for the block."""
    PathObjective.mixed_params = VARIANTS[name]
    try:
        yield
    finally:
        PathObjective.mixed_params = IN_PLACE


def learned_steps(a, b, spec: str, batch_size: int, steps: int, device: str) -> tuple[list[float], Transform]:
    """Seconds of each learned-matching step that ran no check (from the run's own per-step record), and the
    run's transform."""
    config = AlignConfig.from_options({"steps": steps, "batch_size": batch_size, "check_every": 10 * steps},
                                      method="learned", preset="all", data=spec, device=device)
    result = align(a, b, config)
    history = result.report.learned
    return [after.seconds - before.seconds for before, after in zip(history, history[1:])
            if after.check is None and before.step > 0], result.transform


def largest_difference(first, second) -> float:
    """The largest entry-wise difference between two transforms' maps (dense)."""
    return max((float((first[k].dense().cpu() - second[k].dense().cpu()).abs().max()) for k in first), default=0.0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", nargs="*", default=DEFAULT_PAIRS, help="A,B,DATA triples")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--variants", nargs="+", choices=list(VARIANTS), default=["in-place"],
                        help="how θ(w) is summed; several: each timed on the same pair, same seed")
    args = parser.parse_args()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, device {args.device}, batch "
          f"{args.batch_size}, load average at start {os.getloadavg()[0]:.2f}")
    print(f"{'pair':<44}{'θ(w) summed':>14}{'plain s':>9}{'learned s':>11}{'ratio':>7}")
    for triple in args.pairs:
        path_a, path_b, spec = triple.split(",")
        a, b, data = load_model(path_a), load_model(path_b), load_data(spec)
        p = statistics.median(plain_steps(a, data, args.batch_size, args.steps, args.device)[2:])
        transforms = {}
        for name in args.variants:
            with variant(name):
                learned, transforms[name] = learned_steps(a, b, spec, args.batch_size, args.steps, args.device)
            q = statistics.median(learned[2:])
            print(f"{path_a + ' ↔ ' + path_b.rsplit('/', 1)[-1]:<44}{name:>14}{p:>9.3f}{q:>11.3f}{q / p:>7.2f}",
                  flush=True)
        if len(transforms) > 1:
            first, *rest = transforms.values()
            print(f"  largest difference of the final maps between the variants: "
                  f"{max(largest_difference(first, t) for t in rest):.1e}")
    print(f"load average at end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
