"""Which data a barrier is measured on by default: the data the models were trained on.

The recorded workflows (`symalign.runs.execute`) and the app use it when no data is named."""

from __future__ import annotations

import json
from pathlib import Path

from symalign.errors import SymalignError
from symalign.models.family import TransformerModel


def default_data_spec(model: TransformerModel) -> str:
    """The data a model was trained on (training.json in its directory), else a clear error."""
    record = Path(model.source) / "training.json" if model.source else None
    if record is not None and record.is_file():
        spec = json.loads(record.read_text()).get("data")
        if spec:
            return spec
    raise SymalignError(f"no --data given and {model.source or 'the model'} records no training data; "
                        "name one with --data (digits, shakespeare, cifar10:PATH, ...)")
