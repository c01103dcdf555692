"""What a curve fit is asked to do: the bend's shape and its training (torch-free, so the command
line's parser and the app's forms read the defaults without loading torch)."""

from __future__ import annotations

from dataclasses import dataclass

from symalign.errors import SymalignError, require_at_least

BENDS = ("bezier", "polychain")


@dataclass(frozen=True)
class CurveOptions:
    bend: str = "bezier"
    steps: int = 400
    # Adam, cosine-decayed to zero. Measured on zoo pairs: 0.01 overshoots in short fits (a planted
    # vit-digits pair: 80 steps left the path worse than the line), 0.003 closes gpt-shakespeare 0/1's
    # line barrier 1.27 to 0.086 in 400 steps (docs/paths.md).
    lr: float = 0.003
    batch_size: int = 32
    seed: int = 0

    def check(self) -> None:
        if self.bend not in BENDS:
            raise SymalignError(f"unknown --bend {self.bend!r}; choose {' or '.join(BENDS)}")
        if self.steps < 0:
            raise SymalignError(f"--steps must be 0 or more; got {self.steps}")
        if not self.lr > 0:
            raise SymalignError(f"--lr must be positive; got {self.lr}")
        require_at_least("--batch-size", self.batch_size, 1)
