"""A two-model alignment's report is a typed record (issue #41 item 6): alignment.json is its JSON,
read back into the same record, and files written before a field existed still read."""

from __future__ import annotations

import json

from symalign.match.align import align
from symalign.match.config import AlignConfig
from symalign.match.results import LearnedStep, LearnedSummary, MatchReport, SweepRecord
from symalign.models.tiny import random_model, tiny_config


def test_alignment_json_reads_back_into_the_same_report(tmp_path):
    config = tiny_config("gpt2", activation="relu", tied=False)
    a, b = random_model(config, seed=1), random_model(config, seed=2)
    result = align(a, b, AlignConfig(method="weight", preset="all", max_sweeps=3))
    report = result.report
    assert isinstance(report.sweeps[0], SweepRecord) and report.sweeps_run == 3
    assert report.stopped == "sweep budget (3 sweeps)" and report.distance_after < report.distance_before
    result.save(tmp_path / "out")
    written = json.loads((tmp_path / "out" / "alignment.json").read_text())
    assert MatchReport.from_json(written) == report
    assert written["sweeps"][-1]["stopped"] == report.stopped and "barrier" not in written["sweeps"][-1]


def test_older_and_newer_entries_read_by_field():
    old = {"a": "x", "b": "y", "config": {}, "distance_before": 1.0, "distance_after": 0.5,
           "function_gap_vs_b": 0.0, "seconds": 1.0, "sweeps": [{"sweep": 0, "distance": 1.0, "seconds": 0.0}],
           "learned": [{"step": 0, "check": 2.0, "seconds": 0.0}, {"step": 1, "loss": 1.5, "flips": 3,
                                                                  "seconds": 0.1, "new_key": 7}],
           "learned_summary": {"steps": 1, "stopped": "reached --steps", "start_check": 2.0, "best_check": 1.25}}
    report = MatchReport.from_json(old)
    assert report.learned == [LearnedStep(0, 0.0, check=2.0), LearnedStep(1, 0.1, loss=1.5, flips=3)]
    assert report.learned_summary.improvement == 0.75 and report.barrier_per_sweep == []
    assert MatchReport.from_json(dict(old, learned_summary={})).learned_summary is None
    assert LearnedSummary().to_json() == {"steps": 0, "stopped": ""}
