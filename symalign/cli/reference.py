"""The command-line reference, generated from the parser so that it cannot go stale: the README's
table of commands and docs/cli.md (every command's usage and flags). `python -m symalign.cli.reference
--write` rewrites both; tests/test_cli_reference.py fails when either differs from the parser."""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
START, END = "<!-- cli-table:start (python -m symalign.cli.reference --write) -->", "<!-- cli-table:end -->"
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
           "Generated from the parser by `python -m symalign.cli.reference --write` (a test fails when it is stale).",
           "Every command exits 2 with one line on a user error and writes nothing; `--json` prints the",
           "machine-readable result (keys as in the README's command-line section).", ""]
    for name, (help_text, sub) in _subcommands(parser).items():
        usage = " ".join(sub.format_usage().split())
        out += [f"## symalign {name}", "", help_text, "", "```", usage.removeprefix("usage: "), "```", ""]
        rows = _flag_rows(sub)
        if rows:
            out += ["| argument | meaning |", "|---|---|", *rows, ""]
    return "\n".join(out).rstrip() + "\n"


def readme_with_table(readme: str) -> str:
    """The README with the text between its cli-table markers replaced by the generated table."""
    pattern = re.compile(re.escape(START) + ".*?" + re.escape(END), re.S)
    if not pattern.search(readme):
        raise ValueError("README.md has no cli-table markers")
    return pattern.sub(lambda _: f"{START}\n{command_table()}\n{END}", readme)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    readme_path, cli_path = ROOT / "README.md", ROOT / "docs" / "cli.md"
    readme, reference = readme_with_table(readme_path.read_text(encoding="utf-8")), cli_reference()
    if "--write" in argv:
        readme_path.write_text(readme, encoding="utf-8")
        cli_path.write_text(reference, encoding="utf-8")
        return 0
    stale = [p.name for p, text in ((readme_path, readme), (cli_path, reference))
             if not p.is_file() or p.read_text(encoding="utf-8") != text]
    if stale:
        print(f"stale: {', '.join(stale)}; run python -m symalign.cli.reference --write", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
