"""GPT-2's `gelu_new` as transformers computes it (a chain of Python-level tensor operations)
against the fused kernel of the same function that symalign runs (symalign.models.functional.
fused_config): one forward and backward, in eval mode, on random weights.

    python -m benchmarks.fused_activation [--threads 2] [--repeats 5]

Prints, per shape, the median seconds of each and their ratio, and the largest logit difference."""

from __future__ import annotations

import argparse
import statistics
import time

import torch


def step_seconds(module: torch.nn.Module, ids: torch.Tensor, repeats: int) -> float:
    times = []
    for _ in range(repeats + 1):
        begin = time.perf_counter()
        module(input_ids=ids, labels=ids).loss.backward()
        times.append(time.perf_counter() - begin)
        module.zero_grad(set_to_none=True)
    return statistics.median(times[1:])  # the first pays for allocation


def main(argv=None) -> None:
    from transformers import GPT2Config, GPT2LMHeadModel

    from symalign.models.functional import fused_config

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    shapes = [("held-out GPT-2 4 x 80, batch 64 x 128", dict(n_layer=4, n_embd=80, n_head=5, vocab_size=1024), 64),
              ("GPT-2-small 12 x 768, batch 4 x 128", dict(n_layer=12, n_embd=768, n_head=12, vocab_size=50257), 4)]
    print("| shape | gelu_new s | fused s | ratio | max logit diff |")
    print("|---|---|---|---|---|")
    for label, shape, batch in shapes:
        config = GPT2Config(n_positions=128, activation_function="gelu_new", **shape)
        torch.manual_seed(0)
        slow = GPT2LMHeadModel(config).eval()
        fast = GPT2LMHeadModel(fused_config(config)).eval()
        fast.load_state_dict(slow.state_dict())
        ids = torch.randint(0, config.vocab_size, (batch, 128), generator=torch.Generator().manual_seed(1))
        with torch.no_grad():
            diff = (slow(input_ids=ids[:2]).logits - fast(input_ids=ids[:2]).logits).abs().max().item()
        t_slow, t_fast = step_seconds(slow, ids, args.repeats), step_seconds(fast, ids, args.repeats)
        print(f"| {label} | {t_slow:.3f} | {t_fast:.3f} | {t_slow / t_fast:.2f} | {diff:.1e} |", flush=True)


if __name__ == "__main__":
    main()
