"""Weight matching on checkpoints read a tensor at a time from their safetensors files: memory bounded by a layer,
not by the model.

Coordinate descent needs, at each step, the tensors its space touches, A's and B's under the transform so far.
Here neither model is held: A's tensor is read from its files (symalign.models.streamed), B's is read and the
transform so far applied to it, on each access. The transform is composed step by step (the same changes the
in-memory RunningModel applies to its copy of B), so both paths take the same steps on the same values, and the
residual's correlation, a sum over every layer, is accumulated one tensor at a time. The token embedding and an
untied head are folded once into their correlation with A (RunningModel's static tensors), as in memory.
Aligned B is then written layer by layer into safetensors shards."""

from __future__ import annotations

import json
import math
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

import torch
from safetensors.torch import save_file

from symalign.errors import SymalignError
from symalign.match.config import AlignConfig
from symalign.match.results import SweepRecord
from symalign.match.weight.descent import (
    boundary_tensors,
    check_shared_qkv,
    compute_dtype,
    default_inner_passes,
    descend,
    sweep_settings,
)
from symalign.match.weight.lagging import LaggingGroups
from symalign.match.weight.running import FOLD_RATIO, RunningModel, _folded_cross, _static_space, squared_norm, working
from symalign.models import outputs, random_inputs
from symalign.models.family import TransformerModel
from symalign.models.io import copy_companions, resolve
from symalign.models.streamed import SafetensorsFiles, StreamedCheckpoint, streamable
from symalign.models.weight_map import from_logical
from symalign.symmetry.groups import GroupElement
from symalign.symmetry.spec import SymmetrySpec
from symalign.symmetry.transform import Transform, apply_unchecked

Tensors = dict[str, torch.Tensor]
STREAM_PARAMETERS = 1_000_000_000  # `--stream auto` streams above this (in memory: 12 bytes a parameter)
SHARD_BYTES = 256 << 20  # aligned B's shards: layers are added to one until it holds this much (a shard is written
# whole, so this bounds what the writing holds; 1 GiB made the peak grow with depth up to that size)


class Read(Mapping):
    """Tensors computed on access by `read(name)`, for the names given (nothing stored)."""

    def __init__(self, names, read):
        self._names, self._read = list(names), read
        self._set = set(self._names)

    def __getitem__(self, name: str) -> torch.Tensor:
        if name not in self._set:
            raise KeyError(name)
        return self._read(name)

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)


class StreamedModel(RunningModel):
    """RunningModel's interface over two StreamedCheckpoints: B under the transform is computed on each read."""

    def __init__(self, a: StreamedCheckpoint, b: StreamedCheckpoint, classes: dict[str, str],
                 compute: torch.dtype = torch.float32, device: torch.device | str | None = None, reading=None):
        spec = b.spec
        self.compute, self.device = compute, device or "cpu"
        self.source_a, self.source_b = a, b
        self.current = Transform()  # B's transform so far, composed step by step (float64)
        self._working: Transform | None = None
        self.static: dict[str, tuple[str, torch.Tensor]] = {}
        self.static_norms, norm_a = 0.0, 0.0
        self.norms_a: dict[str, float] = {}
        self.parameters = a.parameters()
        for done, name in enumerate(spec.tensors):  # one pass over A (its norms) and B's boundary tensors
            if reading is not None:
                reading(done, len(spec.tensors))
            value = a[name].to(self.device)
            space = _static_space(spec, name, classes)
            if space is not None and value.numel() >= FOLD_RATIO * spec.spaces[space].size ** 2:
                other = b[name].to(self.device)
                axis = next(i for i, t in enumerate(spec.tensors[name]) if t is not None)
                self.static[name] = (space, _folded_cross(value, other, axis))
                norm_a += squared_norm(value)
                self.static_norms += squared_norm(value) + squared_norm(other)
                del other
            else:
                self.norms_a[name] = squared_norm(value)
            del value
        self.spec = SymmetrySpec(spec.family, spec.spaces, {n: spec.tensors[n] for n in self.norms_a}, spec.canonical)
        self.spec_all = spec
        self.a = Read(self.norms_a, lambda n: a[n].to(self.device, compute))
        self.store = compute
        self.b, self.static_b = {}, {}
        self.norm_a = math.sqrt(norm_a + sum(self.norms_a.values()))
        self._touching = {s: sorted({n for n, _, _ in self.spec.axes_of(s)}) for s in spec.spaces}
        self.held: LaggingGroups | None = None
        self.lazy: LaggingGroups | None = None
        self._residual_axis: dict[str, int] = {}

    def current_b(self, name: str) -> torch.Tensor:
        """B's tensor read from its files, the transform so far applied (in the compute precision)."""
        if self._working is None:
            self._working = Transform({k: working(v, self.compute) for k, v in self.current.items()})
        value = self.source_b[name].to(self.device, self.compute)
        return apply_unchecked({name: value}, self.spec, self._working, consume=True)[name]

    def touching(self, space: str) -> Mapping[str, torch.Tensor]:
        held = self._held_names()
        return Read([n for n in self._touching[space] if n not in held], self.current_b)

    def act(self, elements: dict[str, GroupElement], tensors: Tensors | None = None) -> Mapping[str, torch.Tensor]:
        """Compose `elements` into B's transform (nothing is moved: B is read afresh); with `tensors`, return them
        moved by `elements` (a whole-unit reordering's working set)."""
        moved = None  # read before the transform changes: `tensors` may be a view that reads B as it is now
        if tensors is not None:
            moved = apply_unchecked(tensors, self.spec, Transform({k: working(v, self.compute)
                                                                   for k, v in elements.items()}))
        if self.held is not None and self.held.space in elements:
            self.held.moved(elements[self.held.space])
        self.current = Transform(elements).compose(self.current, self.spec_all)
        self._working = None
        if moved is not None:
            return moved
        names = sorted({n for space in elements for n in self._touching[space]} - self._held_names())
        return Read(names, self.current_b)

    def hold(self, space: str, names: set[str]) -> None:
        held = frozenset(names & set(self.spec.tensors))
        cross = self.correlation(space, None, names=sorted(held))[0]
        norms = sum(self.norms_a[n] + squared_norm(self.current_b(n)) for n in held)
        self.held = LaggingGroups(space, {"held": held}, cross, norms)

    def _move(self, names: list[str], transform: Transform) -> None:
        """Nothing to move: a held tensor's pending change is already in the composed transform."""

    def take_aligned(self, transform: Transform) -> Tensors:
        raise NotImplementedError("a streamed B is written by write_aligned, not taken")


def streamed_weight_match(a: StreamedCheckpoint, b: StreamedCheckpoint, config: AlignConfig,
                          classes: dict[str, str], frozen: frozenset[str] = frozenset(), progress=None,
                          device: torch.device | str | None = None,
                          reading=None) -> tuple[Transform, list[SweepRecord], float]:
    """weight_match's sweeps on two streamed checkpoints; returns the transform, the history and the distance
    before. The residual's start is solved from the boundary tensors, as in memory. `reading(done, total)`: the
    first pass over A's tensors (their norms, the embedding's fold: minutes at 1B parameters)."""
    settings = sweep_settings(config)
    check_shared_qkv(b.spec, classes, settings["shared_qkv"])
    start = time.perf_counter()
    parameters = a.parameters()
    mapped = StreamedModel(a, b, classes, compute_dtype(settings["precision"], parameters), device, reading)
    inner = settings["inner_passes"]
    transform, history = descend(mapped, classes, boundary_tensors(b), settings["head_cost_kind"],
                                 settings["max_sweeps"], settings["seed"], progress, settings["tol"],
                                 config.max_seconds, device, None, frozen, None,
                                 default_inner_passes(parameters) if inner is None else inner,
                                 settings["shared_qkv"], start)
    return transform.to("cpu"), [SweepRecord.from_json(h) for h in history], history[0]["distance"]


def _groups(names: list[str]) -> list[list[str]]:
    """Logical names by layer, in order (the embedding, head and final norm as one group at the end)."""
    layers: dict[int, list[str]] = {}
    outer = []
    for name in names:
        if name.startswith("layer."):
            layers.setdefault(int(name.split(".")[1]), []).append(name)
        else:
            outer.append(name)
    return [layers[i] for i in sorted(layers)] + ([outer] if outer else [])


def write_aligned(b: StreamedCheckpoint, transform: Transform, out: Path, dtype: torch.dtype | None = None,
                  progress=None, shard_bytes: int = SHARD_BYTES) -> Path:
    """Aligned B as a Hugging Face checkpoint in `out`, a layer at a time into shards of about `shard_bytes`, with
    B's canonical config and companion files. `dtype`: the stored precision (default: B's own)."""
    out.mkdir(parents=True, exist_ok=True)
    dtype = dtype or b.files.storage_dtype()
    groups = _groups(list(b))
    rows = b.family.weight_map(b.config)
    weight_map: dict[str, str] = {}
    pending: Tensors = {}
    files: list[list[str]] = []

    def flush() -> None:
        if pending:
            name = f"shard-{len(files):05d}.safetensors"
            save_file(pending, str(out / name), metadata={"format": "pt"})
            files.append(list(pending))
            weight_map.update({k: name for k in pending})
            pending.clear()

    for done, names in enumerate(groups):
        moved = apply_unchecked({n: b[n] for n in names}, b.spec, transform, consume=True)
        state = from_logical(rows, moved, b.dims)  # the rows alone: a tied head is checked with its embedding
        pending.update({k: v.to(dtype).contiguous() for k, v in state.items()})
        del moved, state
        if sum(v.numel() * v.element_size() for v in pending.values()) >= shard_bytes:
            flush()
        if progress is not None:
            progress(done + 1, len(groups))
    flush()
    total = len(files)
    renamed = {f"shard-{i:05d}.safetensors": f"model-{i + 1:05d}-of-{total:05d}.safetensors" for i in range(total)}
    for old, new in renamed.items():
        (out / old).rename(out / new)
    size = sum((out / n).stat().st_size for n in renamed.values())
    (out / "model.safetensors.index.json").write_text(json.dumps(
        {"metadata": {"total_size": size}, "weight_map": {k: renamed[v] for k, v in sorted(weight_map.items())}},
        indent=2))
    config = b.config.__class__.from_dict(b.config.to_dict())
    config.dtype = dtype
    config.save_pretrained(str(out))
    copy_companions(b.folder, out)
    return out


CHECK_LAYERS = 2  # the function check of a streamed run: B's first layers ...
CHECK_VOCABULARY = 1024  # ... and this many rows of its vocabulary (the whole model is never held)


def function_check(b: StreamedCheckpoint, transform: Transform) -> tuple[float, str]:
    """max |Δlogit| between B and B under `transform`, cut to its first CHECK_LAYERS layers and CHECK_VOCABULARY
    tokens (a model of the same family: the transform restricted to it is a symmetry of it exactly when it is one of
    B), and what was checked; (nan, why not) for a config without the usual layer and vocabulary fields."""
    config = b.config.__class__.from_dict(b.config.to_dict())
    if not (hasattr(config, "num_hidden_layers") and hasattr(config, "vocab_size")):
        return math.nan, "not checked (a config without num_hidden_layers and vocab_size)"
    layers, vocabulary = min(CHECK_LAYERS, b.dims.n_layer), min(config.vocab_size, CHECK_VOCABULARY)
    config.num_hidden_layers, config.vocab_size = layers, vocabulary
    if isinstance(getattr(config, "layer_types", None), list):
        config.layer_types = config.layer_types[:layers]
    spec = b.family.spec(config, canonical=True)
    tensors = {}
    for name in spec.tensors:
        value = b[name]
        if name in ("embed.token", "head.weight") and value.shape[0] == b.config.vocab_size:
            value = value[:vocabulary].clone()
        tensors[name] = value
    kept = Transform({k: v for k, v in transform.items() if k in spec.spaces})
    model = TransformerModel(b.family, config, tensors, source=b.source)
    moved = model.with_tensors(apply_unchecked(dict(tensors), spec, kept))
    inputs = random_inputs(model)
    gap = float((outputs(moved, inputs) - outputs(model, inputs)).abs().max())
    return gap, f"checked on B's first {layers} layers and {vocabulary:,} vocabulary rows (never held whole)"


def stream_plan(a, b, choice: str) -> str | None:
    """Whether an alignment of `a` and `b` (folders, zoo or hub references; anything else is in memory) streams:
    the sentence its output says about it, or None. `choice` auto/always/never (the `stream` option); `always`
    refuses, in one line, a pair that cannot stream."""
    if choice == "never":
        return None
    refs = [m for m in (a, b) if isinstance(m, (str, Path))]
    reason = None if len(refs) == 2 else "the models are given in memory, not as checkpoint folders"
    reason = reason or streamable(a) or streamable(b)
    if reason is None:
        files = [SafetensorsFiles(resolve(m)) for m in (a, b)]
        if files[0].shapes != files[1].shapes:
            reason = "A and B differ in their tensors' names or shapes; streaming aligns two models of one shape"
    if reason is not None:
        if choice == "always":
            raise SymalignError(f"--stream always: {reason}")
        return None
    parameters = files[1].values_stored()
    if choice == "auto" and parameters <= STREAM_PARAMETERS:
        return None
    why = "--stream always" if choice == "always" else f"above {STREAM_PARAMETERS / 1e9:g}B"
    return (f"streamed from the safetensors files a tensor at a time ({parameters:,} parameters, {why}); "
            "aligned B written shard by shard")
