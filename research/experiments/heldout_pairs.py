"""Model pairs the project's defaults were not tuned on (issue #29), trained with plain `transformers` loops.

    python -m research.experiments.heldout_pairs [--set dev|eval|wide|all] [--cache DIR] [--steps N] [--only NAME ...]
                                       [--width N] [--device cpu|cuda]

Each pair is two models of one architecture trained from two seeds on the same data. The zoo is
character-level Shakespeare and 8×8 digits with symalign's own trainer; these pairs differ from it
in every way the issue lists: other text (English prose about Python: the reference manual that
ships with Python, `pydoc_data.topics`, and the standard library's docstrings; and the standard
library's source code), other tokenizers (byte-level BPE
and WordPiece of 1,024 tokens trained here with `tokenizers`), other depths and widths, digits
with augmentations the zoo never sees (shifts, small rotations), and a training loop that is
nothing but AdamW on `model(**batch).loss`. Text models train on the first 95% of their corpus,
the part `text:PATH` trains learned matching on; the barrier is read on the last 5%. ViTs train on
symalign's digits training split.

The **development set** is where learned matching's defaults were chosen; the **evaluation set**
(other seeds, other corpora, other shapes) is only ever reported (research/experiments/learned_heldout.py).
The **wide set** (issue #59) is a family of GPT-2 pairs of width 192-512 that varies what a user's
pairs vary: corpus, vocabulary, tie, heads, depth, width, training length. Its models take about
20 minutes each on 2 cores and under a minute on a GPU (`--device cuda`; research/experiments/learned_levers.py
trains them in parallel).
Trained pairs are cached under DIR (default ~/.cache/symalign/heldout) keyed by their recipe, so
a second run costs nothing."""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import math
import os
import sys
import sysconfig
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import torch

DEFAULT_CACHE = Path.home() / ".cache" / "symalign" / "heldout"
EVAL_FRACTION = 0.05  # symalign.data.text's split: the last 5% of a corpus is the evaluation text


@dataclass(frozen=True)
class PairRecipe:
    name: str
    split: str  # dev | eval
    family: str  # gpt2 | llama | vit
    corpus: str  # prose | pydoc | code | digits-shift | digits-rotate
    tokenizer: str  # bpe | wordpiece | (images: none)
    shape: dict = field(default_factory=dict)
    seeds: tuple[int, int] = (0, 1)
    steps: int = 800  # text: ~4 passes over the training text (pairs trained for 40 memorised it:
    batch_size: int = 16  # training loss 1.6 against 3.2 on the evaluation text)
    lr: float = 3e-3

    def key(self) -> str:
        return hashlib.sha1(json.dumps(asdict(self), sort_keys=True).encode()).hexdigest()[:10]


PAIRS = [
    # the issue's own example: GPT-2, 3 layers, width 96, byte-level BPE of 1,024 tokens, a corpus the zoo does not use
    PairRecipe("gpt2-prose", "dev", "gpt2", "prose", "bpe", dict(layers=3, width=96, heads=4, context=128)),
    PairRecipe("llama-prose", "dev", "llama", "prose", "wordpiece",
               dict(layers=2, width=96, heads=4, kv_heads=2, mlp=256, context=128)),
    # over-trained: 40 passes over the manual's 465 KB, so the models memorise their training text (the regime
    # where permutations from activations help learned matching: docs/matching.md)
    PairRecipe("gpt2-pydoc", "dev", "gpt2", "pydoc", "bpe", dict(layers=3, width=96, heads=4, context=128),
               steps=1500, batch_size=32),
    PairRecipe("vit-digits-shift", "dev", "vit", "digits-shift", "none",
               dict(layers=3, width=96, heads=6, mlp=192, patch=2), steps=1500, batch_size=128, lr=2e-3),
    # evaluation: other seeds, data (source code) and shapes
    PairRecipe("gpt2-code", "eval", "gpt2", "code", "bpe", dict(layers=4, width=80, heads=5, context=128),
               seeds=(10, 11)),
    # the narrow twin's data, tokenizer, depth, heads, seeds and training at width 200 (issue #44): GPT-2 pairs
    # of width 80-128 keep 4-8% of their vanilla barrier under every lever tried; from width 200 on they close
    PairRecipe("gpt2-code-wide", "eval", "gpt2", "code", "bpe", dict(layers=4, width=200, heads=5, context=128),
               seeds=(10, 11)),
    PairRecipe("llama-code", "eval", "llama", "code", "wordpiece",
               dict(layers=3, width=112, heads=4, kv_heads=4, mlp=288, context=128), seeds=(10, 11)),
    PairRecipe("vit-digits-rotate", "eval", "vit", "digits-rotate", "none",
               dict(layers=2, width=128, heads=8, mlp=256, patch=2), seeds=(10, 11), steps=1500, batch_size=128,
               lr=2e-3),
    # issue #59: wide pairs (width >= 192) that vary what a user's pairs vary. The first is the issue's own
    # construction (tied embeddings, GPT2Config's default; 3 layers, width 256, 4 heads, BPE of 1,024 tokens,
    # AdamW 3e-3 with a cosine schedule for 1,200 steps); the second differs from it in the tie alone.
    PairRecipe("gpt2-prose-tied-256", "wide", "gpt2", "prose", "bpe",
               dict(layers=3, width=256, heads=4, context=128, tied=True), steps=1200),
    PairRecipe("gpt2-prose-untied-256", "wide", "gpt2", "prose", "bpe",
               dict(layers=3, width=256, heads=4, context=128), steps=1200),
    # the rest of the family: other corpora, vocabularies (2k-8k), 8 heads, depth 4-6, widths 192-512, tied and
    # untied twins, other seeds and training lengths (trained on a GPU: `--device cuda`)
    PairRecipe("gpt2-code-tied-192", "wide", "gpt2", "code", "bpe",
               dict(layers=4, width=192, heads=8, context=128, tied=True, vocab=4096), seeds=(20, 21), steps=1200),
    PairRecipe("gpt2-code-untied-192", "wide", "gpt2", "code", "bpe",
               dict(layers=4, width=192, heads=8, context=128, vocab=4096), seeds=(20, 21), steps=1200),
    PairRecipe("gpt2-pydoc-tied-320", "wide", "gpt2", "pydoc", "bpe",
               dict(layers=5, width=320, heads=8, context=128, tied=True, vocab=2048), seeds=(30, 31), steps=1000),
    PairRecipe("gpt2-prose-tied-512", "wide", "gpt2", "prose", "bpe",
               dict(layers=6, width=512, heads=8, context=128, tied=True, vocab=8192), seeds=(40, 41), steps=1500),
    PairRecipe("gpt2-code-untied-384", "wide", "gpt2", "code", "bpe",
               dict(layers=6, width=384, heads=4, context=128, vocab=8192), seeds=(50, 51), steps=1500),
]


def recipe(name: str) -> PairRecipe:
    for r in PAIRS:
        if r.name == name:
            return r
    raise SystemExit(f"unknown pair {name!r}; known: {', '.join(r.name for r in PAIRS)}")


def widened(r: PairRecipe, width: int | None) -> PairRecipe:
    """The same recipe at another residual width (an experiment, not one of the sets' pairs): how
    much of a pair's remaining barrier is its narrowness. Heads keep their count, so each head
    widens too; GPT-2's MLP is 4x the width, Llama's and ViT's keep the recipe's. The name gets
    `-wWIDTH`, so its models are cached beside the pair's own."""
    if width is None or width == r.shape["width"]:
        return r
    heads = r.shape["heads"]
    if width < 1 or width % heads:
        raise SystemExit(f"--width {width}: must be a positive multiple of {r.name}'s {heads} heads")
    if r.family == "llama" and (width // heads) % 2:
        raise SystemExit(f"--width {width}: {r.name}'s rotary heads need an even width each ({width // heads})")
    return replace(r, name=f"{r.name}-w{width}", shape={**r.shape, "width": width})


def chosen(split: str, only: list[str] | None, width: int | None = None) -> list[PairRecipe]:
    """The recipes a command line asks for (`--set`, `--only`), at `--width` when given."""
    return [widened(r, width) for r in PAIRS
            if (not only or r.name in only) and (split == "all" or r.split == split)]


# ---------------------------------------------------------------- corpora


def _stdlib() -> Path:
    return Path(sysconfig.get_paths()["stdlib"])


SOURCE_PACKAGES = ("email", "json", "http", "logging", "asyncio", "concurrent", "importlib", "xml", "urllib",
                   "unittest")


def _docstrings(files: list[Path]) -> list[str]:
    out = []
    for p in files:
        try:
            tree = ast.parse(p.read_text(encoding="utf-8", errors="replace"))
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                doc = ast.get_docstring(node)
                if doc and len(doc) > 40:
                    out.append(doc)
    return out


def corpus_text(corpus: str) -> str:
    """The text of a corpus, built from what Python itself ships (fixed order): `prose` is the
    reference manual's topics and the top-level modules' docstrings (English about Python); `code`
    is the source of a few standard packages, their tests left out."""
    if corpus == "pydoc":
        import pydoc_data.topics

        return "\n\n".join(pydoc_data.topics.topics[k] for k in sorted(pydoc_data.topics.topics))
    if corpus == "prose":
        import pydoc_data.topics

        topics = [pydoc_data.topics.topics[k] for k in sorted(pydoc_data.topics.topics)]
        return "\n\n".join(topics + _docstrings(sorted(_stdlib().glob("*.py"))))
    if corpus == "code":
        files = sorted(p for pkg in SOURCE_PACKAGES for p in (_stdlib() / pkg).rglob("*.py") if "test" not in p.parts)
        return "\n".join(p.read_text(encoding="utf-8", errors="replace") for p in files)
    raise ValueError(corpus)


def corpus_file(corpus: str, cache: Path) -> Path:
    """The corpus written once under the cache (what `--data text:PATH` names)."""
    path = cache / "corpora" / f"{corpus}.txt"
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(f".{os.getpid()}.partial")  # whole or absent: parallel trainers read it
        partial.write_text(corpus_text(corpus), encoding="utf-8")
        partial.replace(path)
    return path


def data_spec(r: PairRecipe, cache: Path) -> str:
    return "digits" if r.family == "vit" else f"text:{corpus_file(r.corpus, cache)}"


# ---------------------------------------------------------------- models


def _tokenizer(r: PairRecipe, text: str):
    from research.offline_hub import bpe_tokenizer, wordpiece_tokenizer

    train = text[: int(len(text) * (1 - EVAL_FRACTION))]
    return (bpe_tokenizer if r.tokenizer == "bpe" else wordpiece_tokenizer)(train, r.shape.get("vocab", 1024))


def _config(r: PairRecipe, tokenizer=None):
    from transformers import GPT2Config, LlamaConfig, ViTConfig

    s = r.shape
    vocab = len(tokenizer) if tokenizer is not None else None
    ends = {} if tokenizer is None else dict(bos_token_id=tokenizer.bos_token_id or tokenizer.cls_token_id,
                                             eos_token_id=tokenizer.eos_token_id or tokenizer.sep_token_id,
                                             pad_token_id=tokenizer.pad_token_id)
    if r.family == "gpt2":
        return GPT2Config(n_layer=s["layers"], n_embd=s["width"], n_head=s["heads"], vocab_size=vocab,
                          n_positions=s["context"], tie_word_embeddings=s.get("tied", False), resid_pdrop=0.0,
                          embd_pdrop=0.0,
                          attn_pdrop=0.0, architectures=["GPT2LMHeadModel"], **ends)
    if r.family == "llama":
        return LlamaConfig(num_hidden_layers=s["layers"], hidden_size=s["width"], num_attention_heads=s["heads"],
                           num_key_value_heads=s["kv_heads"], intermediate_size=s["mlp"], vocab_size=vocab,
                           max_position_embeddings=s["context"], tie_word_embeddings=s.get("tied", False),
                           architectures=["LlamaForCausalLM"], **ends)
    return ViTConfig(num_hidden_layers=s["layers"], hidden_size=s["width"], num_attention_heads=s["heads"],
                     intermediate_size=s["mlp"], image_size=8, patch_size=s["patch"], num_channels=1, num_labels=10,
                     hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
                     architectures=["ViTForImageClassification"])


def _augment(x: torch.Tensor, kind: str, g: torch.Generator) -> torch.Tensor:
    """Digits augmentations the zoo never uses: shifts of up to one pixel, or rotations of up to 15°."""
    import torch.nn.functional as F

    n = len(x)
    if kind == "digits-shift":
        shift = torch.randint(-1, 2, (n, 2), generator=g).float() * (2 / 8)
        theta = torch.zeros(n, 2, 3)
        theta[:, 0, 0] = theta[:, 1, 1] = 1
        theta[:, :, 2] = shift
    else:
        angle = (torch.rand(n, generator=g) * 2 - 1) * math.radians(15)
        theta = torch.zeros(n, 2, 3)
        theta[:, 0, 0], theta[:, 0, 1], theta[:, 1, 0], theta[:, 1,
                                                              1] = angle.cos(), -angle.sin(), angle.sin(), angle.cos()
    grid = F.affine_grid(theta, list(x.shape), align_corners=False)
    return F.grid_sample(x + 1, grid, align_corners=False, padding_mode="zeros") - 1  # background stays −1


def train_model(r: PairRecipe, seed: int, out: Path, cache: Path, steps: int | None = None,
                log=print, device: str = "cpu") -> Path:
    """One model of the pair: AdamW with warm-up and cosine decay on `model(**batch).loss`. The
    batches are drawn on the CPU from the seed's generator, so `device` changes only the arithmetic
    (a model trained on a GPU is a different model of the same recipe, not the CPU's to round-off)."""
    from transformers import GPT2LMHeadModel, LlamaForCausalLM, ViTForImageClassification

    torch.manual_seed(seed)
    g = torch.Generator().manual_seed(seed)
    steps = steps or r.steps
    tokenizer = None
    if r.family == "vit":
        from symalign.data.images import digits

        d = digits()
        x, y = d.train_x, d.train_y
        model = ViTForImageClassification(_config(r))
    else:
        text = corpus_file(r.corpus, cache).read_text(encoding="utf-8")
        tokenizer = _tokenizer(r, text)
        ids = torch.tensor(tokenizer(text[: int(len(text) * (1 - EVAL_FRACTION))],
                                     add_special_tokens=False)["input_ids"])
        cls = GPT2LMHeadModel if r.family == "gpt2" else LlamaForCausalLM
        model = cls(_config(r, tokenizer))
    model.to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=r.lr, weight_decay=0.01)
    warm = max(1, steps // 20)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: min(1.0, (s + 1) / warm) * 0.5 * (1 + math.cos(math.pi * min(s, steps) / steps)))
    model.train()
    begin = time.perf_counter()
    for step in range(steps):
        if r.family == "vit":
            pick = torch.randint(0, len(y), (r.batch_size,), generator=g)
            loss = model(pixel_values=_augment(x[pick], r.corpus, g).to(device), labels=y[pick].to(device)).loss
        else:
            n = r.shape["context"]
            starts = torch.randint(0, len(ids) - n - 1, (r.batch_size,), generator=g)
            batch = torch.stack([ids[s: s + n] for s in starts]).to(device)
            loss = model(input_ids=batch, labels=batch).loss
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        if step % max(1, steps // 5) == 0 or step == steps - 1:
            log(f"  {r.name} seed {seed} step {step + 1}/{steps} loss {loss.item():.3f} "
                f"({time.perf_counter() - begin:.0f} s)")
    model.eval().to("cpu")
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(out))
    if tokenizer is not None:  # a ViT gets no processor: it takes symalign's digits as they are stored (like the zoo)
        tokenizer.save_pretrained(str(out))
    return out


def trained_model(r: PairRecipe, seed: int, cache: Path = DEFAULT_CACHE, steps: int | None = None, log=print,
                  device: str = "cpu") -> Path:
    """One model folder of the pair, trained first if the cache lacks it (one seed at a time, so
    research/experiments/learned_levers.py can train seeds in parallel)."""
    tag = r.key() if steps is None else f"{r.key()}-{steps}"
    out = cache / "models" / f"{r.name}-{tag}" / str(seed)
    if not (out / "config.json").is_file():
        log(f"training {r.name} seed {seed} ({steps or r.steps} steps, {device}) into {out}")
        train_model(r, seed, out, cache, steps, log, device)
    return out


def pair_paths(r: PairRecipe, cache: Path = DEFAULT_CACHE, steps: int | None = None, log=print,
               device: str = "cpu") -> tuple[Path, Path]:
    """The pair's two model folders, trained first if the cache lacks them."""
    a, b = (trained_model(r, seed, cache, steps, log, device) for seed in r.seeds)
    return a, b


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", choices=["dev", "eval", "wide", "all"], default="all")
    parser.add_argument("--only", nargs="*", default=None)
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--steps", type=int, default=None, help="training steps per model (default: the recipe's)")
    parser.add_argument("--width", type=int, default=None, help="train the pairs at this width (an experiment)")
    parser.add_argument("--device", default="cpu", help="where the models train (cpu, cuda)")
    args = parser.parse_args(argv)
    for r in chosen(args.set, args.only, args.width):
        a, b = pair_paths(r, args.cache, args.steps, device=args.device)
        print(f"{r.name} ({r.split}): {a} {b} data {data_spec(r, args.cache)}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
