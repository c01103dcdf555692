"""The README's command table and docs/cli.md are generated from the parser (issue #40): they list
exactly the commands `symalign --help` lists, and a stale copy is caught."""

from __future__ import annotations

import re
import subprocess
import sys

from research.docgen import cli_reference as reference


def help_commands() -> list[str]:
    out = subprocess.run([sys.executable, "-m", "symalign.cli", "--help"], capture_output=True, text=True,
                         check=True).stdout
    choices = re.search(r"\{([a-z,-]+)\}", out).group(1)
    return choices.split(",")


def test_readme_and_cli_reference_are_up_to_date():
    assert reference.main([]) == 0, "run python -m research.docgen.cli_reference --write"


def test_the_table_lists_exactly_the_commands_of_symalign_help():
    readme = reference.ROOT.joinpath("README.md").read_text(encoding="utf-8")
    table = readme.split(reference.START)[1].split(reference.END)[0]
    listed = re.findall(r"\[`symalign ([a-z-]+)`\]", table)
    assert listed == help_commands() and len(listed) >= 16
    cli = reference.ROOT.joinpath("docs", "cli.md").read_text(encoding="utf-8")
    assert re.findall(r"^## symalign ([a-z-]+)$", cli, re.M) == listed


def test_a_stale_table_is_replaced():
    readme = reference.ROOT.joinpath("README.md").read_text(encoding="utf-8")
    stale = readme.replace("| [`symalign barrier`]", "| [`symalign barrier-old`]")
    assert stale != readme and reference.readme_with_table(stale) == readme
