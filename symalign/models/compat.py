"""Can two models be compared parameter by parameter? If not, name the first difference."""

from __future__ import annotations

from symalign.errors import ArchitectureMismatchError
from symalign.models.family import TransformerModel

CONFIG_FIELDS = ("vocab_size", "n_positions", "image_size", "patch_size", "num_channels", "num_labels")


def check_compatible(a: TransformerModel, b: TransformerModel) -> None:
    """Raise ArchitectureMismatchError naming the first mismatching family, config field or tensor."""
    if a.family.name != b.family.name:
        raise ArchitectureMismatchError(f"models of different architectures: {a.family.name} vs {b.family.name}")
    for field in CONFIG_FIELDS:
        va, vb = getattr(a.config, field, None), getattr(b.config, field, None)
        if va != vb:
            raise ArchitectureMismatchError(f"models differ in {field}: {va} vs {vb}")
    if a.dims.activation != b.dims.activation:
        raise ArchitectureMismatchError(f"models differ in activation: {a.dims.activation} vs {b.dims.activation}")
    for name in sorted(set(a.tensors) | set(b.tensors)):
        if name not in a.tensors or name not in b.tensors:
            raise ArchitectureMismatchError(f"tensor {name} exists in only one model (different depth?)")
        if a.tensors[name].shape != b.tensors[name].shape:
            raise ArchitectureMismatchError(f"first mismatching tensor {name}: shape {tuple(a.tensors[name].shape)} "
                                            f"vs {tuple(b.tensors[name].shape)}")
