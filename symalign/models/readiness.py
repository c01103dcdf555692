"""What a model can be measured on yet, and the way on when something is missing: an uploaded checkpoint
often comes without a tokenizer or a record of its data, and a run that needs them would only fail after
it started. The app says so at import and keeps the buttons off; `adopt_tokenizer` and `record_data` are
the two ways on for a model folder the user owns."""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from symalign.data import load_data
from symalign.data.base import LOSSLESS_TASKS
from symalign.data.text import model_tokenizer
from symalign.errors import SymalignError
from symalign.models.family import TransformerModel
from symalign.models.io import default_data_spec

TEXT_TASKS = ("causal-lm", "masked-lm", "sequence-classification")
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json")


@dataclass(frozen=True)
class Readiness:
    """What measuring a model (a barrier, activation or learned matching) still lacks, in the app's words:
    `missing` maps "task", "tokenizer", "data" or "fit" to its reason; empty when a run can go."""

    data: str  # the data it is measured on: the one named, else its recorded one ("" when neither)
    missing: dict[str, str] = field(default_factory=dict)

    @property
    def ready(self) -> bool:
        return not self.missing

    def reason(self) -> str:
        """One sentence for a disabled button: everything missing, in order."""
        return " ".join(self.missing.values())

    def lines(self) -> list[str]:
        """What the model can do now and what it cannot yet (the import message)."""
        can = ["weight matching, canonicalize, transform and export (they need no data)"]
        if self.ready:
            return [f"It can: {can[0]}, and barriers, activation and learned matching on {self.data}."]
        return [f"It can: {can[0]}.", f"Not yet barriers, activation or learned matching: {self.reason()}"]


def has_tokenizer(model: TransformerModel) -> bool:
    return bool(model.source) and (Path(model.source) / "tokenizer.json").is_file()


def readiness(model: TransformerModel, data: str = "") -> Readiness:
    """Check `model` against the data named (else the data its folder records) without running anything."""
    task = model.family.task
    if task in LOSSLESS_TASKS:
        return Readiness("", {"task": f"a {model.family.title or model.family.name} has no task loss of its own "
                                      "to score."})
    missing = {}
    if task in TEXT_TASKS and not has_tokenizer(model):
        missing["tokenizer"] = ("It carries no tokenizer, so text cannot be encoded for it: take one from a model "
                                "with the same vocabulary (Models page, *what your models still need*) or upload "
                                "tokenizer.json with it.")
    if not data:
        try:
            data = default_data_spec(model)
        except SymalignError:
            missing["data"] = ("It records no data to measure on: name a data spec (digits, shakespeare, "
                               "csv:PATH, …) in the data field, or record one on the Models page.")
    if data and not missing:
        try:
            load_data(data).check_model(model)
        except SymalignError as exc:
            missing["fit"] = f"The data {data} does not fit it: {' '.join(str(exc).split())}."
    return Readiness(data, missing)


def _own_folder(model: TransformerModel) -> Path:
    if not model.source or not Path(model.source).is_dir():
        raise SymalignError("the model has no folder of its own to complete (a model held in memory)")
    return Path(model.source)


def adopt_tokenizer(model: TransformerModel, donor: TransformerModel) -> list[str]:
    """Copy `donor`'s tokenizer files into `model`'s folder, after checking the tokenizer fits its vocabulary;
    the names of the files copied."""
    target = _own_folder(model)
    if not has_tokenizer(donor):
        raise SymalignError(f"{donor.source} carries no tokenizer to take")
    tokens = len(model_tokenizer(donor.source))
    if tokens > model.config.vocab_size:
        raise SymalignError(f"the tokenizer of {Path(donor.source).name} has {tokens} tokens but the model's "
                            f"embedding only {model.config.vocab_size}: it does not belong to this model")
    copied = [name for name in TOKENIZER_FILES if (Path(donor.source) / name).is_file()]
    for name in copied:
        shutil.copyfile(Path(donor.source) / name, target / name)
    model_tokenizer.cache_clear()
    return copied


def record_data(model: TransformerModel, spec: str) -> None:
    """Record `spec` as the data `model` is measured on (its folder's training.json, as a trained model's
    is), after checking the data fits the model."""
    target = _own_folder(model)
    load_data(spec).check_model(model)
    record_file = target / "training.json"
    record = json.loads(record_file.read_text()) if record_file.is_file() else {}
    if not isinstance(record, dict):
        raise SymalignError(f"{record_file} is not a JSON object; fix or remove it first")
    record["data"] = spec
    record_file.write_text(json.dumps(record, indent=2) + "\n")
