"""The `symalign` command: a thin client of the package. User errors end in one line, exit 2.

Each command group is a module whose commands keep their flags beside their handler; a group
lists its commands' `add_*` functions in COMMANDS, and the parser is built from the groups here."""

from __future__ import annotations

import argparse
import sys
from typing import NoReturn

from symalign.cli.common import check_outputs, fold_columns
from symalign.errors import SymalignError, os_error_line

GROUPS = ("symalign.cli.models", "symalign.cli.training", "symalign.cli.aligning", "symalign.cli.landscape",
          "symalign.cli.attributing", "symalign.cli.merging", "symalign.cli.sweeps", "symalign.cli.papers",
          "symalign.cli.history")
ORDER = ("inspect", "transform", "canonicalize", "init", "train", "zoo", "align", "align-many", "merge", "transport",
         "simplex", "spectrum", "barrier", "curve", "plane", "attribute", "correlations", "sweep", "paper", "runs",
         "app")  # as `symalign --help` lists them


class OneLineParser(argparse.ArgumentParser):
    """argparse, with its errors in one line like every other user error: by default it prints the command's whole
    usage first (26 lines for `symalign align`), and the line that says what was wrong comes last."""

    def error(self, message: str) -> NoReturn:
        # a command's parser (`symalign barrier`), or the top one, which also reports a command's unknown flags
        hint = "lists the flags" if " " in self.prog else "lists the commands, `symalign COMMAND --help` their flags"
        self.exit(2, f"{self.prog}: error: {message} (`{self.prog} --help` {hint})\n")


def build_parser() -> argparse.ArgumentParser:
    from importlib import import_module

    parser = OneLineParser(prog="symalign", description=__doc__.split("\n\n")[0])  # its subparsers share the class
    sub = parser.add_subparsers(dest="command", required=True)
    adders = {add.__name__[len("add_"):].replace("_", "-"): add
              for group in GROUPS for add in import_module(group).COMMANDS}
    for name in sorted(adders, key=lambda n: ORDER.index(n) if n in ORDER else len(ORDER)):
        adders[name](sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        fold_columns(args)
        check_outputs(args)
        args.func(args)
    except SymalignError as exc:
        print("symalign: error: " + " ".join(str(exc).split()), file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("symalign: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `symalign inspect M | head`: the reader left; nothing to report
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except OSError as exc:  # the machine said no (a full disk, a folder that cannot be made): its words, one line
        print(f"symalign: error: {os_error_line(exc)}", file=sys.stderr)
        return 2
    return 0
