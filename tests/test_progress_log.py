"""A long command is never silent in a log (issue #108): when stderr is not a terminal, progress comes as one
plain line at most every ~30 s (`SYMALIGN_PROGRESS_SECONDS` here, to keep the test short) naming the phase,
how far it is and about how long is left; a run shorter than the interval prints none."""

from __future__ import annotations

import os
import re
import subprocess
import sys

LINE = re.compile(r"^\[\d\d:\d\d:\d\d\] align \(learned\): (\w+) (\d+)/(\d+) \(\d+%\), \d+ s in(, about \d+ s left)?")


def align(tmp_path, every: str) -> list[str]:
    env = dict(os.environ, SYMALIGN_HOME=str(tmp_path / "home"), SYMALIGN_PROGRESS_SECONDS=every)
    run = subprocess.run([sys.executable, "-m", "symalign.cli", "align", "zoo:vit-digits/0", "zoo:vit-digits/1",
                          "--method", "learned", "--data", "digits", "--steps", "40", "--classes", "all", "--barrier",
                          "--points", "5", "--no-record", "--out", str(tmp_path / "out")],
                         env=env, capture_output=True, text=True, check=True)  # stderr is a pipe, not a terminal
    return run.stderr.splitlines()


def test_a_log_gets_spaced_progress_lines_and_a_short_run_none(tmp_path):
    lines = [line for line in align(tmp_path, "0.3") if LINE.match(line)]
    assert len(lines) >= 2, lines
    phases = {LINE.match(line).group(1) for line in lines}
    assert phases, lines
    assert any(", about " in line and " left" in line for line in lines), lines  # an estimate of what is left
    for line in lines:
        done, total = map(int, LINE.match(line).group(2, 3))
        assert 0 <= done <= total  # a line can fall on a phase's first report (0 of N)
    quiet = align(tmp_path, "3600")
    assert not [line for line in quiet if LINE.match(line)], quiet


def test_a_step_that_reports_nothing_for_long_is_still_heard_of(monkeypatch, capsys):
    """A step with no report for longer than the interval (a billion-parameter sweep's last assignment solves)
    still gets lines: the last report again, saying how long ago it came; none once the command ends."""
    import time

    from symalign.cli.common import Bar

    monkeypatch.setenv("SYMALIGN_PROGRESS_SECONDS", "0.2")
    with Bar("align (weight)") as bar:
        bar(3, 10, phase="align", note="sweep 1")
        time.sleep(0.9)
    quiet = [line for line in capsys.readouterr().err.splitlines() if "still on it, last report" in line]
    assert quiet and all("align 3/10" in line and "sweep 1" in line for line in quiet), quiet
    time.sleep(0.5)
    assert not capsys.readouterr().err  # the heartbeat stopped with the command
