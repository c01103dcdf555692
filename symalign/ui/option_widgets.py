"""A matcher's options as widgets, from their declarations (symalign.match.options): an option a
matcher declares appears on the Align page with no page edit, with its choices, range and help."""

from __future__ import annotations

from symalign.data.defaults import learned_defaults
from symalign.match.matchers import options_of
from symalign.match.options import Option


def _default(option: Option, data: str):
    """The declared default, or the data's where the declaration says so (Option.by_data)."""
    return learned_defaults(data or "")[option.name] if option.by_data else option.default


def option_widgets(method: str, data: str, three: bool, columns: list) -> dict:
    """One widget per option the method reads (three or more models: also those only they read),
    laid out over `columns`; returns {name: value} (None where an optional limit is left at 0)."""
    values = {}
    shown = [o for o in options_of(method).values() if three or not o.universe_only]
    for i, option in enumerate(shown):
        where, default = columns[i % len(columns)], _default(option, data)
        key, label = f"align-option-{method}-{option.name}-{data}", option.name.replace("_", " ")
        empty = " (0 = auto)" if option.auto else " (0 = none)"  # what leaving it at 0 means
        if option.choices is not None:
            offered = ((None,) if default is None else ()) + option.choices  # None: "auto", the run decides
            values[option.name] = where.selectbox(label, offered, index=offered.index(default), key=key,
                                                  format_func=lambda v: "auto" if v is None else v, help=option.help)
        elif option.kind is bool:
            values[option.name] = bool(where.checkbox(label, value=bool(default), key=key, help=option.help))
        elif option.kind is int:
            low = int(option.minimum) if option.minimum is not None else 0
            value = where.number_input(label + (empty if default is None else ""), min_value=min(low, 0)
                                       if default is None else low, value=int(default or 0), step=1, key=key,
                                       help=option.help)
            values[option.name] = None if default is None and value == 0 else int(value)
        else:
            low = float(option.minimum) if option.minimum is not None else None
            value = where.number_input(label + (empty if default is None else ""), min_value=low,
                                       value=float(default or 0.0), format="%.4g", key=key, help=option.help)
            values[option.name] = None if default is None and value == 0 else float(value)
    return values
