"""The barrier workflow shared by the CLI and the app: load two models, pick their data, curve."""

from __future__ import annotations

import json
from pathlib import Path

from symalign.data import load_data
from symalign.device import pick_device
from symalign.errors import SymalignError
from symalign.landscape.interpolation import Curve, Progress, interpolation_curve
from symalign.models import load_model
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


def run_barrier(a: str, b: str, data: str | None = None, points: int = 21, max_examples: int | None = None,
                device: str = "auto", form: str = "canonical", progress: Progress | None = None) -> Curve:
    model_a, model_b = load_model(a), load_model(b)
    spec = data or default_data_spec(model_a)
    curve = interpolation_curve(model_a, model_b, load_data(spec), points=points, max_examples=max_examples,
                                device=pick_device(device), form=form, progress=progress)
    curve.extra.update({"a": a, "b": b, "data": spec})
    return curve
