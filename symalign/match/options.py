"""What a matcher option is: name, type, default, choices or range, one line of help, and the methods that read
it. Each matcher declares its own beside it (weight/options.py, learned/options.py, activation/options.py);
symalign.match.matchers collects the built-in ones in one order.

Why one declaration: an option used to be written out in the config, the CLI flags, a list of names the CLI
copied into the config, the sweep rows' keys, the pages and the README, and the copies drifted. From these
declarations come the `align`/`align-many`/`simplex` flags (symalign.cli.common.add_option_flags), AlignConfig's
checks and defaults, LearnedOptions' defaults, the keys a sweep row may carry (symalign.sweeps.grid), the Align
page's widgets and docs/options.md. A matcher registered with `options=(Option(...), ...)` adds its own.
Torch-free, so the CLI builds its parser fast."""

from __future__ import annotations

import math
from dataclasses import dataclass

from symalign.data.defaults import IMAGE_LEARNED_DEFAULTS, TEXT_LEARNED_DEFAULTS
from symalign.errors import SymalignError, require_at_least


@dataclass(frozen=True)
class Option:
    """One setting a matcher reads, declared once: the CLI flag and its help, AlignConfig's and LearnedOptions'
    defaults, the Align page's widget, docs/options.md and the sweep keys all read it. `by_data`: the default
    is the data's (symalign.data.defaults: images and text may differ), written into the run's record."""

    name: str  # the AlignConfig field (or key of AlignConfig.options) and the sweep key; the flag is --name-with-dashes
    kind: type  # int, float, str or bool (a bool defaulting to True is the flag --no-NAME)
    default: object
    help: str
    methods: tuple[str, ...]  # the matchers that read it
    choices: tuple[str, ...] | None = None
    minimum: float | None = None  # values below are refused
    universe_only: bool = False  # read only when three or more models are aligned
    auto: bool = False  # None is a value the run works out (e.g. sized from the steps), not "no limit"
    by_data: bool = False  # None: the data's default (symalign.data.defaults.learned_defaults)

    @property
    def default_text(self) -> str:
        """The default as the help, the page and docs/options.md say it, from the one place it is written."""
        if self.by_data:
            image, text = IMAGE_LEARNED_DEFAULTS[self.name], TEXT_LEARNED_DEFAULTS[self.name]
            return f"the data's: {image}" if image == text else f"the data's: images {image}, text {text}"
        return "" if self.default is None else str(self.default)

    @property
    def help_line(self) -> str:
        """The help with its default, for the CLI flag."""
        return self.help + (f" (default: {self.default_text})" if self.default_text else "")

    @property
    def flag(self) -> str:
        name = self.name.replace("_", "-")
        return f"--no-{name}" if self.kind is bool and self.default is True else f"--{name}"

    def check(self, value) -> None:
        """One line naming the option and what it takes, for a value it does not take."""
        if value is None:
            return
        if self.kind is bool:
            if not isinstance(value, bool):
                raise SymalignError(f"{self.name} takes true or false; got {value!r}")
            return
        if self.choices is not None and value not in self.choices:
            raise SymalignError(f"{self.flag}: unknown value {value!r}; choose from {', '.join(self.choices)}")
        if self.kind in (int, float) and (isinstance(value, bool) or not isinstance(value, (int, float))
                                          or (self.kind is int and not float(value).is_integer())):
            raise SymalignError(f"{self.flag} takes {'an integer' if self.kind is int else 'a number'}; got {value!r}")
        if self.kind is float and not math.isfinite(value):  # --lr nan diverged at step 1, blamed on the rate
            raise SymalignError(f"{self.flag} takes a finite number; got {value!r}")
        if self.minimum is not None:
            require_at_least(self.flag, value, self.minimum)
