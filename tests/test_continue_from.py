"""Issue #74: a learned run that stopped while still improving goes on from the transforms it wrote
(`--continue-from`), not from weight matching again; a file written for other classes or another model is
refused in one line."""

from __future__ import annotations

import pytest

from symalign.errors import SymalignError
from symalign.match.align import align
from symalign.match.config import AlignConfig
from symalign.models import load_model

STEPS = {"steps": 12, "check_every": 4, "check_examples": 64}


@pytest.fixture(scope="module")
def pair():
    return load_model("zoo:vit-digits/0"), load_model("zoo:vit-digits/1")


def test_a_continued_run_starts_where_the_earlier_one_ended(pair, tmp_path):
    a, b = pair
    first = align(a, b, AlignConfig.from_options(STEPS, method="learned", preset="all", data="digits"))
    first.transform.save(tmp_path / "transforms.safetensors")
    again = align(a, b, AlignConfig.from_options({**STEPS, "continue_from": str(tmp_path)}, method="learned",
                                                 preset="all", data="digits"))
    s1, s2 = first.report.learned_summary, again.report.learned_summary
    assert s1.best_check < s1.start_check, "the first run learned something"
    # the same fixed check batch, at the earlier run's best state: where the earlier run ended
    assert s2.start_check == pytest.approx(s1.best_check, rel=1e-5)
    assert s2.best_check <= s2.start_check
    assert not again.report.sweeps, "no weight matching ran: the start is the file"


def test_a_file_written_for_other_classes_or_nowhere_is_refused(pair, tmp_path):
    a, b = pair
    perms = align(a, b, AlignConfig(method="weight", preset="permutations"))
    perms.transform.save(tmp_path / "transforms.safetensors")
    with pytest.raises(SymalignError, match="other classes.*pass the --classes it was run with"):
        align(a, b, AlignConfig.from_options({**STEPS, "continue_from": str(tmp_path)}, method="learned",
                                             preset="all", data="digits"))
    with pytest.raises(SymalignError, match="no transform file"):
        align(a, b, AlignConfig.from_options({**STEPS, "continue_from": str(tmp_path / "nothing")},
                                             method="learned", preset="all", data="digits"))
