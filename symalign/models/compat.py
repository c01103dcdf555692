"""Can two models be compared parameter by parameter? If not, name the first difference."""

from __future__ import annotations

from symalign.errors import ArchitectureMismatchError
from symalign.models.family import TransformerModel

CONFIG_FIELDS = ("vocab_size", "n_positions", "image_size", "patch_size", "num_channels", "num_labels")


def check_same_kind(a: TransformerModel, b: TransformerModel) -> None:
    """Same family, inputs, outputs and activation: everything but the widths."""
    if a.family.name != b.family.name:
        raise ArchitectureMismatchError(f"models of different architectures: {a.family.name} vs {b.family.name}")
    for field in CONFIG_FIELDS:
        va, vb = getattr(a.config, field, None), getattr(b.config, field, None)
        if va != vb:
            raise ArchitectureMismatchError(f"models differ in {field}: {va} vs {vb}")
    if a.dims.activation != b.dims.activation:
        raise ArchitectureMismatchError(f"models differ in activation: {a.dims.activation} vs {b.dims.activation}")


def check_compatible(a: TransformerModel, b: TransformerModel) -> None:
    """Raise ArchitectureMismatchError naming the first mismatching family, config field or tensor."""
    check_same_kind(a, b)
    da, db = a.dims, b.dims
    if da.n_layer == db.n_layer and (da.d_model, da.d_mlp, da.n_head) != (db.d_model, db.d_mlp, db.n_head):
        raise ArchitectureMismatchError(
            f"models of different widths (residual {da.d_model} vs {db.d_model}, mlp {da.d_mlp} vs {db.d_mlp}, "
            f"heads {da.n_head} vs {db.n_head}): this needs one shape; `symalign align` and `barrier` embed "
            "the narrower model in the wider one's basis"
        )
    _check_tensors(a, b, sorted(set(a.tensors) | set(b.tensors)),
                   "exists in only one model (a different depth or layout: biases?)")


def _check_tensors(a: TransformerModel, b: TransformerModel, names: list[str], missing: str) -> None:
    """Every one of `names` in both models with one shape, else the first that is not (`missing`: what is
    said of a name only one model holds)."""
    for name in names:
        if name not in a.tensors or name not in b.tensors:
            raise ArchitectureMismatchError(f"tensor {name} {missing}")
        if a.tensors[name].shape != b.tensors[name].shape:
            raise ArchitectureMismatchError(f"first mismatching tensor {name}: shape {tuple(a.tensors[name].shape)} "
                                            f"vs {tuple(b.tensors[name].shape)}")


HEAD = "head."  # the canonical output head's tensors (an LM head, or a classifier's pooler and classes)


def fine_tune_tensors(base: TransformerModel, fine_tune: TransformerModel) -> tuple[list[str], bool]:
    """The tensors a fine-tune's task vector is taken over, and whether its head is its own: every tensor
    when the two share an architecture; the body (all but the head) when the fine-tune put a new head on
    the same body, as an encoder fine-tuned into a classifier (TransFusion's Table 2). Anything else is
    refused naming the first difference."""
    if base.family.name == fine_tune.family.name:
        check_compatible(base, fine_tune)
        return sorted(base.tensors), False
    if base.family.model_type != fine_tune.family.model_type:
        raise ArchitectureMismatchError(f"models of different architectures: {base.family.name} vs "
                                        f"{fine_tune.family.name}")
    body = sorted(n for n in base.tensors if not n.startswith(HEAD))
    theirs = sorted(n for n in fine_tune.tensors if not n.startswith(HEAD))
    _check_tensors(base, fine_tune, sorted(set(body) ^ set(theirs)) + body, "exists in only one model's body")
    return body, True
