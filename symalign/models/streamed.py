"""A checkpoint read one tensor at a time from its safetensors files, in canonical logical form: what weight
matching reads at the billion-parameter scale instead of a loaded model.

Each read opens the tensor's shard, copies the tensor out and closes the file, so no checkpoint page stays mapped
between reads: the process holds the tensors it is using, not the model (the files sit in the OS page cache, which
the OS may reclaim and which a process's resident memory does not count). Norm gains are folded into their readers
on read (RMSNorm: W ← W·diag(γ), γ ← 1), exactly as symalign.models.canonical folds a loaded model, so a streamed
run sees the same canonical tensors as the in-memory path."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import torch
from safetensors import safe_open

from symalign.errors import ModelLoadError
from symalign.models.canonical import norm_groups
from symalign.models.family import Family
from symalign.models.io import SAFETENSORS_DTYPES, read_config, resolve
from symalign.models.weight_map import logical_rows, read_row, sizes
from symalign.symmetry.spec import SymmetrySpec

INDEX = "model.safetensors.index.json"
SINGLE = "model.safetensors"
# Norms a streamed read folds: RMSNorm's gain is a column scale of each reader, one tensor at a time. LayerNorm's
# canonical form also centres every residual writer and moves β into the readers' biases; post-LN and sandwich
# norms sit on the stream and are not folded at all (nothing to do on read).
STREAMED_NORMS = ("rmsnorm", "post-layernorm", "sandwich-rmsnorm", "stream-layernorm")


class SafetensorsFiles(Mapping):
    """A checkpoint's tensors by their Hugging Face names, read on access from the shard that holds each one."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.shard: dict[str, Path] = {}
        self.shapes: dict[str, tuple[int, ...]] = {}
        self.dtypes: dict[str, str] = {}
        if (folder / INDEX).is_file():
            try:
                weight_map = json.loads((folder / INDEX).read_text())["weight_map"]
                paths = sorted({folder / str(v) for v in dict(weight_map).values()})
            except (json.JSONDecodeError, KeyError, TypeError, ValueError, UnicodeDecodeError) as exc:
                raise ModelLoadError(f"{folder}/{INDEX} is not a valid shard index ({exc})") from None
        elif (folder / SINGLE).is_file():
            paths = [folder / SINGLE]
        else:
            raise ModelLoadError(f"{folder}: streaming reads safetensors files ({SINGLE} or {INDEX}); none is there")
        for path in paths:
            self._index(path)

    def _index(self, path: Path) -> None:
        """Read a shard's header: names, shapes and stored types, no values."""
        try:
            with safe_open(str(path), framework="pt") as f:
                for key in f.keys():
                    piece = f.get_slice(key)
                    self.shard[key] = path
                    self.shapes[key], self.dtypes[key] = tuple(piece.get_shape()), piece.get_dtype()
        except Exception as exc:  # safetensors raises its own error types and OSError alike
            raise ModelLoadError(f"{path} is corrupt or not a safetensors file ({exc})") from None

    def values_stored(self) -> int:
        """How many floating-point values the files hold (a model's parameter count, a tied head once)."""
        return sum(math.prod(self.shapes[k]) for k, kind in self.dtypes.items() if kind.startswith(("F", "BF")))

    def __getitem__(self, name: str) -> torch.Tensor:
        with safe_open(str(self.shard[name]), framework="pt") as f:
            return f.get_tensor(name)

    def __contains__(self, name: object) -> bool:
        return name in self.shard

    def __iter__(self) -> Iterator[str]:
        return iter(self.shard)

    def __len__(self) -> int:
        return len(self.shard)

    def storage_dtype(self) -> torch.dtype:
        """The type most floating-point values are stored in (what an exported aligned B is written in)."""
        counts: dict[torch.dtype, int] = {}
        for key, kind in self.dtypes.items():
            if kind in SAFETENSORS_DTYPES:
                counts[SAFETENSORS_DTYPES[kind]] = counts.get(SAFETENSORS_DTYPES[kind], 0) + math.prod(self.shapes[key])
        return max(counts, key=counts.get) if counts else torch.float32


class StreamedCheckpoint(Mapping):
    """A checkpoint's logical tensors in canonical form, each read (float32) from the files on access."""

    def __init__(self, path: str | Path):
        folder = resolve(path)
        self.family, raw_config = read_config(folder)
        self.source = str(path)
        self.folder = folder
        reason = stream_refusal(self.family, raw_config)
        if reason:
            raise ModelLoadError(f"{folder}: {reason}")
        self.files = SafetensorsFiles(folder)
        self.dims = self.family.dims(raw_config)
        self.raw_config = raw_config
        self.config = self.family.canonical_config(raw_config) if self.dims.folds_norms else raw_config
        self.rows = logical_rows(self.family.weight_map(raw_config), self.dims.n_layer)
        self.known = sizes(self.dims)
        missing = sorted(name for name, (row, hf) in self.rows.items()
                         if hf not in self.files and not (row.fallback and row.fallback in self.files))
        if missing:
            raise ModelLoadError(f"the weights in {folder} do not fit its config.json: missing "
                                 f"{', '.join(self.rows[n][1] for n in missing[:3])}{' …' if len(missing) > 3 else ''}")
        self.finite: set[str] = set()  # tensors checked for NaN and infinities
        self.gain: dict[str, str] = {}  # reader weight -> the norm gain folded into it
        self.unit_gains: set[str] = set()
        if self.dims.norm == "rmsnorm":
            for norm, readers in norm_groups(self.family, raw_config, self.dims.n_layer):
                self.unit_gains.add(f"{norm}.weight")
                self.gain.update({f"{reader}.weight": f"{norm}.weight" for reader in readers})
        self.spec: SymmetrySpec = self.family.spec(self.config, canonical=True)

    def raw(self, name: str) -> torch.Tensor:
        """The logical tensor as stored (float32), before any fold."""
        row, hf = self.rows[name]
        value = read_row(row, hf, self.files, self.known).to(torch.float32)
        if name not in self.finite:  # checked on the first read (a run reads every tensor first): a tenth of the time
            if not torch.isfinite(value).all():
                raise ModelLoadError(f"{self.folder}: {hf} holds NaN or infinite values; a model's weights are finite")
            self.finite.add(name)
        return value

    def __getitem__(self, name: str) -> torch.Tensor:
        if name in self.unit_gains:
            return torch.ones(self.files.shapes[self.rows[name][1]], dtype=torch.float32)
        value = self.raw(name)
        if name in self.gain:
            # bitwise canonicalize's float64 product rounded once: the product of two float32 values is exact in
            # float64, and float32's multiply rounds that exact product itself
            return value.mul_(self.raw(self.gain[name]))
        return value

    def __iter__(self) -> Iterator[str]:
        return iter(self.rows)

    def __len__(self) -> int:
        return len(self.rows)

    def parameters(self) -> int:
        return self.files.values_stored()

    def layer_of(self, name: str) -> int | None:
        """The layer a logical tensor belongs to (None: embedding, head, final norm)."""
        return int(name.split(".")[1]) if name.startswith("layer.") else None


def stream_refusal(family: Family, config: Any) -> str | None:
    """Why this checkpoint cannot be read a tensor at a time (None when it can)."""
    if family.weight_map is None:
        return f"the {family.title or family.name} family's weights are read by hand-written code, not a weight map"
    norm = family.dims(config).norm
    if norm not in STREAMED_NORMS:
        return (f"its {norm} folds into the canonical form by centring every residual writer, which streaming does "
                "not do (it folds RMSNorm; post-norm models need no fold)")
    if family.dims(config).n_experts:
        return "it is a mixture of experts, whose experts streaming does not pair"
    return None


def streamable(path: str | Path) -> str | None:
    """None when the checkpoint at `path` can be streamed, else why not (a sentence)."""
    folder = resolve(path)
    try:
        family, config = read_config(folder)
    except ModelLoadError as exc:
        return str(exc)
    reason = stream_refusal(family, config)
    if reason:
        return reason
    if not ((folder / INDEX).is_file() or (folder / SINGLE).is_file()):
        return f"{folder} holds no safetensors files (streaming reads them a tensor at a time)"
    return None
