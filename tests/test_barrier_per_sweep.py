"""Weight matching's barrier after each sweep (issue #41 item 4): one run gives the barrier-vs-iterations
curve. Its first point is the canonical pair's vanilla barrier, its last the run's own `--barrier`
(at the same points), and both come from real interpolation curves."""

from __future__ import annotations

import json

import pytest

from symalign.cli import main
from symalign.match.config import AlignConfig
from symalign.sweeps.grid import row_keys
from symalign.workflows.execute import align_run, align_summary, barrier_run

pytestmark = pytest.mark.slow  # whole interpolation curves per sweep

PAIR = ["zoo:vit-digits/0", "zoo:vit-digits/1"]
POINTS = 5


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    config = AlignConfig(method="weight", preset="all", max_sweeps=2, options={"barrier_per_sweep": POINTS})
    return align_run(*PAIR, config, out=tmp_path_factory.mktemp("bps"), points=POINTS)


def test_the_last_sweeps_barrier_is_the_runs_barrier_and_the_first_the_vanilla_one(run):
    per_sweep = align_summary(run.alignment)["barrier_per_sweep"]
    assert [h["sweep"] for h in per_sweep][-2:] == [1, 2]
    assert per_sweep[-1]["barrier"] == pytest.approx(run.curve.barrier, rel=1e-6)
    assert per_sweep[-1]["accuracy_barrier"] == pytest.approx(run.curve.accuracy_barrier, abs=1e-6)
    _, vanilla = barrier_run(*PAIR, points=POINTS)  # the canonical pair, nothing matched
    assert per_sweep[0]["barrier"] == pytest.approx(vanilla.barrier, rel=1e-5)
    assert per_sweep[-1]["barrier"] < 0.8 * per_sweep[0]["barrier"]  # matching lowered it


def test_per_sweep_barriers_are_off_by_default_refused_when_negative_and_a_sweep_key(tmp_path, capsys):
    assert "barrier_per_sweep" in row_keys("weight") and "barrier_per_sweep" not in row_keys("activation")
    assert main(["align", *PAIR, "--max-sweeps", "1", "--out", str(tmp_path / "a"), "--json", "--no-record"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert "barrier_per_sweep" not in summary
    history = json.loads((tmp_path / "a" / "alignment.json").read_text())["sweeps"]
    assert history and not any("barrier" in h for h in history)
    assert main(["align", *PAIR, "--barrier-per-sweep", "-1", "--out", str(tmp_path / "b"), "--no-record"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--barrier-per-sweep must be at least 0" in err[0]
