"""The command-line reference, generated from the parser so that it cannot go stale: the README's
table of commands, docs/cli.md (every command's usage and flags) and docs/options.md (the matchers'
declared options). `python -m research.docgen.cli_reference --write` rewrites them; tests/test_cli_reference.py
fails when one differs from what the code declares."""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
START, END = "<!-- cli-table:start (python -m research.docgen.cli_reference --write) -->", "<!-- cli-table:end -->"
WIDTH = 100  # argparse's help width, fixed so the text does not depend on the terminal


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, tuple[str, argparse.ArgumentParser]]:
    """name -> (one-line help, its parser), in `symalign --help` order."""
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
    return {name: (helps.get(name, ""), sub) for name, sub in action.choices.items()}


def _parser() -> argparse.ArgumentParser:
    import os

    from symalign.cli import build_parser

    os.environ["COLUMNS"] = str(WIDTH)  # argparse wraps to the terminal: fix it
    return build_parser()


def command_table() -> str:
    """The README's table: one row per command with its one-line help."""
    rows = ["| command | what it does |", "|---|---|"]
    for name, (help_text, _) in _subcommands(_parser()).items():
        rows.append(f"| [`symalign {name}`](docs/cli.md#symalign-{name}) | {help_text.replace('|', '/')} |")
    return "\n".join(rows)


def _flag_rows(sub: argparse.ArgumentParser) -> list[str]:
    rows = []
    for action in sub._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        name = ", ".join(action.option_strings) or action.dest
        if action.choices and not isinstance(action, argparse._SubParsersAction):
            name += " {" + ",".join(str(c) for c in action.choices) + "}"
        default = "" if action.default in (None, False, argparse.SUPPRESS) or not action.option_strings \
            else f" (default: {action.default})"
        text = " ".join((action.help or "").split()).replace("|", "/") + default
        rows.append(f"| `{name}` | {text} |")
    return rows


def cli_reference() -> str:
    """docs/cli.md: every command's usage line, help and flags."""
    parser = _parser()
    out = ["# Command-line reference", "",
           "Generated from the parser by `python -m research.docgen.cli_reference --write` (a test fails when it is",
           "stale).",
           "Every command exits 2 with one line on a user error and writes nothing; `--json` prints the",
           "machine-readable result (keys as in the README's command-line section).", ""]
    for name, (help_text, sub) in _subcommands(parser).items():
        usage = " ".join(sub.format_usage().split())
        out += [f"## symalign {name}", "", help_text, "", "```", usage.removeprefix("usage: "), "```", ""]
        rows = _flag_rows(sub)
        if rows:
            out += ["| argument | meaning |", "|---|---|", *rows, ""]
    return "\n".join(out).rstrip() + "\n"


def options_reference() -> str:
    """docs/options.md: every matcher option as declared (symalign.match.options), with where it applies."""
    from symalign.match.matchers import all_options
    from symalign.sweeps.grid import EVALUATION_KEYS

    out = ["# Matcher options", "",
           "Generated from the matchers' declarations (each beside its matcher: `symalign/match/weight/options.py`, "
           "`learned/options.py`, `activation/options.py`; collected in `matchers.py`) by",
           "`python -m research.docgen.cli_reference --write`. Each option is a flag of `align` (and, for the matchers",
           "that align three or more models, of `align-many` and `simplex`), a widget on the Align page, and a",
           "key of a sweep row or of a sweep's `[grid]` table (docs/sweeps.md), where activation's",
           "`max_examples` is written `activation_examples` (a row's `max_examples` is the evaluation's).",
           f"A sweep row also takes the evaluation's {', '.join(f'`{k}`' for k in EVALUATION_KEYS)}.", "",
           "| option | flag | methods | type | default | values | what it does |", "|---|---|---|---|---|---|---|"]
    for o in all_options().values():
        values = ", ".join(o.choices) if o.choices else (f"≥ {o.minimum:g}" if o.minimum is not None else "")
        default = o.default_text or o.default
        methods = ", ".join(o.methods) + (" (three or more models)" if o.universe_only else "")
        out.append(f"| `{o.name}` | `{o.flag}` | {methods} | {o.kind.__name__} | {default} | {values} | "
                   f"{o.help.replace('|', '/')} |")
    return "\n".join(out) + "\n"


def readme_with_table(readme: str) -> str:
    """The README with the text between its cli-table markers replaced by the generated table."""
    pattern = re.compile(re.escape(START) + ".*?" + re.escape(END), re.S)
    if not pattern.search(readme):
        raise ValueError("README.md has no cli-table markers")
    return pattern.sub(lambda _: f"{START}\n{command_table()}\n{END}", readme)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    readme_path, cli_path, options_path = ROOT / "README.md", ROOT / "docs" / "cli.md", ROOT / "docs" / "options.md"
    generated = {readme_path: readme_with_table(readme_path.read_text(encoding="utf-8")), cli_path: cli_reference(),
                 options_path: options_reference()}
    if "--write" in argv:
        for path, text in generated.items():
            path.write_text(text, encoding="utf-8")
        return 0
    stale = [p.name for p, text in generated.items() if not p.is_file() or p.read_text(encoding="utf-8") != text]
    if stale:
        print(f"stale: {', '.join(stale)}; run python -m research.docgen.cli_reference --write", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
