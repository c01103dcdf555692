"""Verma & Elbayad's MLM tables as data: each row as the paper names and defines it (measured by
symalign.sweeps.verma). Free of torch and pandas: the command line lists the presets from here."""

from __future__ import annotations

from dataclasses import dataclass, field

PERMUTED_ATTENTION = {"heads": "perm", "qk": "perm", "vo": "perm"}


@dataclass(frozen=True)
class VermaRow:
    name: str  # as the paper names it (its printed value is in symalign.papers.verma, read by name)
    classes: dict = field(default_factory=dict)  # activation matching's classes (the symmetric part)
    head_strategy: str = "two-stage"
    attention: str | None = None  # "ignore-heads": attention features permuted across heads (not a symmetry)
    residual: str | None = None  # first | last | all | separate: residual permutations from post-LN streams

    @property
    def symmetry(self) -> bool:
        return self.attention is None and self.residual != "separate"


@dataclass(frozen=True)
class VermaTable:
    source: str  # the paper's table or figure
    setting: str  # what is merged, in one line
    rows: tuple[VermaRow, ...]
    paper_metric: str = ""  # what the paper's numbers are
    task: str = "masked-lm"  # the zoo family's task it measures (masked-lm: pseudo-perplexity beside the loss)
    family: str = "bert-shakespeare"  # the zoo family it runs on unless told


VERMA_METRIC = ("MultiBERTs (12 layers, width 768), the masked-LM loss barrier against the average of the two "
                "models' losses (15% of tokens masked; their Tables 1-2 and eq. 10) with its standard error")
VERMA_TABLES: dict[str, VermaTable] = {
    "verma-heads": VermaTable(
        "Verma & Elbayad Table 1", "feed-forward and attention merged, the residual left as it is", (
            VermaRow("Vanilla Attention Avg.", {"mlp": "perm"}),
            VermaRow("Monotonic Head Alignment", {"mlp": "perm", "qk": "perm", "vo": "perm"},
                     head_strategy="monotonic"),
            VermaRow("Ignore-Heads", {"mlp": "perm"}, attention="ignore-heads"),
            VermaRow("Head-Perm", {"mlp": "perm", **PERMUTED_ATTENTION}),
        ), VERMA_METRIC),
    "verma-residual": VermaTable(
        "Verma & Elbayad Table 2", "residual components only (every other unit left in place)", (
            VermaRow("Identity"),
            VermaRow("First", residual="first"),
            VermaRow("Last", residual="last"),
            VermaRow("All", residual="all"),
            VermaRow("Separate", residual="separate"),
        ), VERMA_METRIC),
    "verma-components": VermaTable(
        "Verma & Elbayad Fig. 3", "which components are permuted before averaging (the residual left as it is)", (
            VermaRow("vanilla averaging"),
            VermaRow("feed-forward only", classes={"mlp": "perm"}),
            VermaRow("attention only", classes=dict(PERMUTED_ATTENTION)),
            VermaRow("feed-forward and attention", classes={"mlp": "perm", **PERMUTED_ATTENTION}),
        ), "a figure (values not transcribed: the zoo's ordering is reported alone)"),
    "verma-classifiers": VermaTable(
        "Verma & Elbayad Table 3", "fine-tuned classifiers: vanilla averaging, and feed-forward, attention and "
        "residual (First) permuted", (
            VermaRow("Vanilla averaging"),
            VermaRow("Ours", {"mlp": "perm", **PERMUTED_ATTENTION}, residual="first"),
        ), "fine-tuned MultiBERTs on 8 GLUE tasks, the task's loss barrier against the endpoints' average with its "
           "standard error (their Table 3)", task="sequence-classification", family="bert-shakespeare-genre"),
}
