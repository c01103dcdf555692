"""One colour per method on every page and in the report (issue #43: "no alignment" was blue on Home
and red on Interpolation, so a viewer could not carry a colour from one figure to the next). Runs of
one method that share a figure keep its hue and differ in shade and dash (issue #109: three learned runs
were one green, told apart by dash alone)."""

from __future__ import annotations

METHOD_COLOURS = {
    "none": "#7f7f7f",  # grey: nothing done
    "weight": "#1f77b4",
    "activation": "#ff7f0e",
    "learned": "#2ca02c",
    "soft": "#9467bd",
}
OTHER_COLOURS = ["#d62728", "#8c564b", "#e377c2", "#17becf", "#bcbd22"]  # methods a plugin registers, in order
DASHES = ["solid", "dash", "dot", "dashdot", "longdash"]


def method_colour(method: str | None, index: int = 0) -> str:
    """The method's colour; an unknown method (a plugin's, or none given) takes a colour by position."""
    if method in METHOD_COLOURS:
        return METHOD_COLOURS[method]
    return OTHER_COLOURS[index % len(OTHER_COLOURS)]


# A method's repeats in one figure: its colour, then lighter and darker shades of it, alternately.
SHADES = (0.0, 0.5, -0.45, 0.72, -0.7)


def shade(colour: str, repeat: int) -> str:
    """The `repeat`-th run of a method in one figure: its colour, then alternately lighter and darker."""
    share = SHADES[repeat % len(SHADES)]
    return lighter(colour, share) if share >= 0 else darker(colour, -share)


def styles(methods: list[str | None]) -> list[tuple[str, str]]:
    """(colour, dash) per curve: the method's colour in a new shade and dash for each repeat of a method."""
    seen: dict[str, int] = {}
    out = []
    for i, method in enumerate(methods):
        key = method or f"#{i}"
        repeat = seen.get(key, 0)
        seen[key] = repeat + 1
        out.append((shade(method_colour(method, i), repeat), DASHES[repeat % len(DASHES)]))
    return out


def lighter(colour: str, share: float = 0.45) -> str:
    """`colour` (#rrggbb) mixed with `share` of white: a method's second variant, in its legend swatch too
    (a bar's opacity does not reach the legend)."""
    rgb = [int(colour[i:i + 2], 16) for i in (1, 3, 5)]
    return "#" + "".join(f"{round(c + (255 - c) * share):02x}" for c in rgb)


def darker(colour: str, share: float) -> str:
    """`colour` (#rrggbb) mixed with `share` of black."""
    rgb = [int(colour[i:i + 2], 16) for i in (1, 3, 5)]
    return "#" + "".join(f"{round(c * (1 - share)):02x}" for c in rgb)
