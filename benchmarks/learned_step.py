"""A learned-matching step beside a plain training step of the same model, batch and device.

    python -m benchmarks.learned_step [--pairs zoo:gpt-shakespeare/0,zoo:gpt-shakespeare/1,shakespeare ...]
                                      [--steps 20] [--device cpu|cuda]

The natural floor of a learned step: it runs one forward and backward pass through the model interpolated
between A and the transformed B, so it cannot be cheaper than training that model on the same batch (one
forward and backward, then AdamW). The plain step here is exactly that, on the same batch size
(`--batch-size`, learned matching's own: 64 by default) drawn from the same data. Both are timed in one
process, one after the other. Run it on an idle machine: a busy one does not slow both alike. Beside
another 2-thread job the GPT ratio read 4.41, idle 1.08 (docs/benchmarks.md): the learned step's many
small operations suffer most from threads that wait for cores. The script prints the load it saw.

Per pair: median seconds of a plain step and of a learned step (steps without a check; the first two of each
left out as warm-up), and their ratio.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import torch
import torch.nn.functional as F

from symalign.data import load_data
from symalign.match.align import align
from symalign.match.config import AlignConfig
from symalign.models import load_model
from symalign.symmetry.transform import Transform

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


def learned_steps(a, b, spec: str, batch_size: int, steps: int, device: str) -> tuple[list[float], Transform]:
    """Seconds of each learned-matching step that ran no check (from the run's own per-step record), and the
    run's transform."""
    config = AlignConfig.from_options({"steps": steps, "batch_size": batch_size, "check_every": 10 * steps},
                                      method="learned", preset="all", data=spec, device=device)
    result = align(a, b, config)
    history = result.report.learned
    return [after.seconds - before.seconds for before, after in zip(history, history[1:])
            if after.check is None and before.step > 0], result.transform


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", nargs="*", default=DEFAULT_PAIRS, help="A,B,DATA triples")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, device {args.device}, batch "
          f"{args.batch_size}, load average at start {os.getloadavg()[0]:.2f}")
    print(f"{'pair':<44}{'plain s':>9}{'learned s':>11}{'ratio':>7}")
    for triple in args.pairs:
        path_a, path_b, spec = triple.split(",")
        a, b, data = load_model(path_a), load_model(path_b), load_data(spec)
        p = statistics.median(plain_steps(a, data, args.batch_size, args.steps, args.device)[2:])
        learned, _ = learned_steps(a, b, spec, args.batch_size, args.steps, args.device)
        q = statistics.median(learned[2:])
        print(f"{path_a + ' ↔ ' + path_b.rsplit('/', 1)[-1]:<44}{p:>9.3f}{q:>11.3f}{q / p:>7.2f}", flush=True)
    print(f"load average at end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
