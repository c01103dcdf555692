"""Issue #74's code-trained GPT-2 pair, built exactly as the issue describes it (a user's own script).

    python -m research.experiments.code_pair [--cache DIR] [--seeds 0 1] [--device cpu|cuda] [--threads N]

- Corpus: the top-level `*.py` modules of the running interpreter's standard library in sorted file-name
  order, joined with newlines until the text passes 3,000,000 characters.
- Tokenizer: `tokenizers.ByteLevelBPETokenizer`, vocabulary 1,024, `min_frequency=2`, one special token
  `<|endoftext|>`, trained on the whole corpus (the issue does not say on which part; a user's script
  trains it on the file). The last 5% of the token ids are the evaluation split.
- Model: `GPT2Config(vocab_size=len(tok), n_positions=128, n_embd=256, n_layer=3, n_head=4, n_inner=1024,
  activation_function="gelu_new")`, every dropout 0, embeddings tied (GPT2Config's default).
- Training: `torch.manual_seed(seed)`; AdamW (lr 3e-3, weight decay 0.01); 1,200 steps of 32 random windows
  of 128 tokens from the first 95% of the ids, drawn by a generator seeded 1000 + seed; linear warm-up over
  100 steps, then a cosine to 0 at step 1,200 (transformers' `get_cosine_schedule_with_warmup`). No gradient
  clipping (the issue names none). Saved with `save_pretrained`, the tokenizer beside the model.

It differs from research/experiments/heldout_pairs.py's family in the corpus (all top-level modules, not a few
packages' source), the tokenizer's `min_frequency`, the warm-up (100 steps, not 5%), the batch generator's
seed and the absence of clipping. Models are cached under DIR/SEED; the corpus is DIR/corpus.txt, which is
what `--data text:PATH` names (symalign's own split of it is the last 5% of its characters)."""

from __future__ import annotations

import argparse
import os
import sys
import sysconfig
import time
from pathlib import Path

import torch

DEFAULT_CACHE = Path.home() / ".cache" / "symalign" / "code-pair"
CORPUS_CHARS = 3_000_000
VOCAB = 1024
CONTEXT, BATCH, STEPS, WARMUP, LR, WEIGHT_DECAY = 128, 32, 1200, 100, 3e-3, 0.01
EVAL_FRACTION = 0.05


def corpus_text() -> str:
    """The standard library's top-level modules, sorted by file name, joined until 3,000,000 characters pass."""
    parts, size = [], 0
    for path in sorted(Path(sysconfig.get_paths()["stdlib"]).glob("*.py"), key=lambda p: p.name):
        parts.append(path.read_text(encoding="utf-8", errors="replace"))
        size += len(parts[-1]) + 1
        if size > CORPUS_CHARS:
            break
    return "\n".join(parts)


def corpus_file(cache: Path) -> Path:
    path = cache / "corpus.txt"
    if not path.is_file():
        cache.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(f".{os.getpid()}.partial")  # whole or absent: two seeds train at once
        partial.write_text(corpus_text(), encoding="utf-8")
        partial.replace(path)
    return path


def tokenizer_for(text: str):
    """The issue's byte-level BPE, wrapped so `save_pretrained` writes it where AutoTokenizer finds it."""
    from tokenizers import ByteLevelBPETokenizer
    from transformers import PreTrainedTokenizerFast

    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator([text], vocab_size=VOCAB, min_frequency=2, special_tokens=["<|endoftext|>"],
                            show_progress=False)
    return PreTrainedTokenizerFast(tokenizer_object=bpe._tokenizer, eos_token="<|endoftext|>",
                                   bos_token="<|endoftext|>", unk_token="<|endoftext|>")


def train(seed: int, cache: Path, device: str = "cpu", log=print) -> Path:
    """One model of the pair (cached: a second call costs nothing)."""
    from transformers import GPT2Config, GPT2LMHeadModel, get_cosine_schedule_with_warmup

    out = cache / str(seed)
    if (out / "config.json").is_file():
        return out
    text = corpus_file(cache).read_text(encoding="utf-8")
    tok = tokenizer_for(text)
    ids = torch.tensor(tok(text, add_special_tokens=False)["input_ids"])
    train_ids = ids[: int(len(ids) * (1 - EVAL_FRACTION))]
    torch.manual_seed(seed)
    config = GPT2Config(vocab_size=len(tok), n_positions=CONTEXT, n_embd=256, n_layer=3, n_head=4, n_inner=1024,
                        activation_function="gelu_new", resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
                        bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id)
    model = GPT2LMHeadModel(config).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=LR, weight_decay=WEIGHT_DECAY)
    schedule = get_cosine_schedule_with_warmup(optimizer, WARMUP, STEPS)
    g = torch.Generator().manual_seed(1000 + seed)
    model.train()
    begin = time.perf_counter()
    for step in range(STEPS):
        starts = torch.randint(0, len(train_ids) - CONTEXT + 1, (BATCH,), generator=g)
        batch = torch.stack([train_ids[s: s + CONTEXT] for s in starts]).to(device)
        loss = model(input_ids=batch, labels=batch).loss
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        schedule.step()
        if step % 100 == 0 or step == STEPS - 1:
            log(f"seed {seed} step {step + 1}/{STEPS} loss {loss.item():.3f} ({time.perf_counter() - begin:.0f} s)")
    model.eval().to("cpu")
    partial = cache / f"{seed}.partial"
    model.save_pretrained(str(partial))
    tok.save_pretrained(str(partial))
    partial.replace(out)
    log(f"seed {seed}: {len(ids):,} tokens ({len(train_ids):,} train), saved to {out}")
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (two seeds side by side: 1 each)")
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    for seed in args.seeds:
        print(train(seed, args.cache, args.device), flush=True)
    print(f"data: text:{corpus_file(args.cache)}")


if __name__ == "__main__":
    sys.exit(main())
