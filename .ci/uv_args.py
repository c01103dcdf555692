"""pip's configuration on this machine (its files and PIP_* variables, as `pip config list` reads them) as
`uv pip install` arguments, so that uv installs from the same indexes, wheel folders and constraints as pip
would. Prints one argument per line."""

from __future__ import annotations

import shlex
import subprocess
import sys

# pip's option -> uv's; both take a list where pip's value is whitespace-separated
OPTIONS = {"index-url": "--index-url", "extra-index-url": "--extra-index-url", "find-links": "--find-links",
           "constraint": "--constraint"}


def pip_settings() -> dict[str, list[str]]:
    listed = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True,
                            check=True).stdout
    settings: dict[str, list[str]] = {}
    for line in listed.splitlines():
        key, _, value = line.partition("=")
        option = key.rsplit(".", 1)[-1]
        if option in OPTIONS:  # a later line (the environment) adds to an earlier one (a file)
            values = settings.setdefault(option, [])
            values += [v for v in shlex.split(value)[0].split() if v not in values] if value else []
    return settings


def uv_args(settings: dict[str, list[str]]) -> list[str]:
    args = ["--index-strategy", "unsafe-best-match"]  # pip takes the best version from every index
    for option, values in settings.items():
        for value in values:
            args += [OPTIONS[option], value]
    return args


if __name__ == "__main__":
    print("\n".join(uv_args(pip_settings())))
