"""What an alignment run is asked to do: method, per-kind classes and the method's options."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from symalign.errors import SymalignError

METHODS = ("none", "weight", "activation", "learned", "soft")
DEFAULT_CLASSES = {"mlp": "perm", "heads": "perm", "qk": "none", "vo": "none", "residual": "none"}


@dataclass
class AlignConfig:
    method: str = "weight"
    classes: dict[str, str] = field(default_factory=lambda: dict(DEFAULT_CLASSES))
    head_cost: str = "circuit"  # circuit | spectral
    data: str | None = None
    device: str = "auto"
    seed: int = 0
    max_sweeps: int = 30
    steps: int = 300  # learned / soft: optimisation steps
    lr: float = 0.01
    batch_size: int = 64
    lambdas: str = "uniform_mid"  # uniform_mid | half | uniform | normal
    residual_strategy: str = "all"  # activation: all | first | last | identity
    head_strategy: str = "two-stage"  # activation: two-stage | ignore
    max_examples: int | None = 256  # activation: evaluation examples whose activations are matched

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise SymalignError(f"unknown method {self.method!r}; choose from {', '.join(METHODS)}")
        if self.head_cost not in ("circuit", "spectral"):
            raise SymalignError(f"unknown head cost {self.head_cost!r}; choose circuit or spectral")
        self.classes = {**DEFAULT_CLASSES, **self.classes}  # unnamed kinds: MLP and head permutations, else none
        if self.method in ("activation", "learned", "soft") and self.data is None:
            raise SymalignError(f"--method {self.method} needs --data: it matches on activations or the task loss")

    def to_json(self) -> dict:
        return asdict(self)
