"""Matcher options, declared once, each beside the matcher that reads it (weight_options, learned_options,
activation_options; what an option is: symalign.match.option), collected here in one order.

Why one declaration: an option used to be written out in the config, the CLI flags, a list of
names the CLI copied into the config, the sweep rows' keys, the pages and the README, and the
copies drifted (`--residual-strategy separate` was offered and always refused). From these
declarations come the `align`/`align-many`/`simplex` flags (symalign.cli.common.add_option_flags),
AlignConfig's checks, the keys a sweep row may carry (symalign.sweeps.grid) and docs/options.md.
A matcher registered with `options=(Option(...), ...)` (symalign.match.matchers) adds its own;
their values reach it in `AlignConfig.options`. Torch-free, so the CLI builds its parser fast."""

from __future__ import annotations

from symalign.match.activation_options import ACTIVATION_OPTIONS, HEAD_STRATEGIES, RESIDUAL_STRATEGIES
from symalign.match.learned_options import CHECK_POINTS, LAMBDA_SAMPLERS, LEARNED_OPTIONS, LEARNED_STARTS, LEARNERS
from symalign.match.option import Option
from symalign.match.weight_options import HEAD_COSTS, PRECISIONS, WEIGHT_OPTIONS

__all__ = ["BUILTIN_OPTIONS", "CHECK_POINTS", "HEAD_COSTS", "HEAD_STRATEGIES", "LAMBDA_SAMPLERS", "LEARNED_STARTS",
           "LEARNERS", "Option", "PRECISIONS", "RESIDUAL_STRATEGIES", "declared_default"]

BUILTIN_OPTIONS: tuple[Option, ...] = WEIGHT_OPTIONS + LEARNED_OPTIONS + ACTIVATION_OPTIONS


def declared_default(name: str):
    """A built-in option's declared default: what AlignConfig's and LearnedOptions' fields start from."""
    return _BUILTIN_DEFAULTS[name]


_BUILTIN_DEFAULTS = {o.name: o.default for o in BUILTIN_OPTIONS}
