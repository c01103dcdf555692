"""Activation matching's options (symalign.match.activation.matching), declared beside it: which hidden states match
the residual, how heads are paired (Verma & Elbayad), and how many examples are matched."""

from __future__ import annotations

from symalign.match.options import Option

RESIDUAL_STRATEGIES = ("all", "first", "last", "identity")
HEAD_STRATEGIES = ("two-stage", "monotonic", "ignore")  # ignore: monotonic's old name (stored runs)

ACTIVATION_OPTIONS: tuple[Option, ...] = (
    Option("residual_strategy", str, "all", "activation: which hidden states match the residual", ("activation",),
           RESIDUAL_STRATEGIES),
    Option("head_strategy", str, "two-stage",
           "activation: pair heads two-stage (Verma's Head-Perm) or keep them in order, monotonic",
           ("activation",), HEAD_STRATEGIES),
    Option("max_examples", int, 256, "activation: examples whose activations are matched", ("activation",),
           minimum=1),
)
