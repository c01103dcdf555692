"""Soft matching kept unrounded (issue #44 item 3, Theus et al. App. C.2): the doubly-stochastic maps
train to the end, the run reports the soft path's midpoint loss beside how far its endpoint moved
from B, and what it writes is still the rounded result, which computes B's function."""

from __future__ import annotations

import pytest

from symalign.cli import main
from symalign.errors import SymalignError
from symalign.match.align import align
from symalign.match.config import CLASS_PRESETS, AlignConfig
from symalign.models import load_model

PERMS = CLASS_PRESETS["permutations"]


@pytest.mark.slow
def test_unrounded_soft_matching_reports_the_tradeoff_and_writes_the_rounded_result():
    a, b = load_model("zoo:vit-digits/0"), load_model("zoo:vit-digits/1")
    config = AlignConfig.from_options({"round": False, "steps": 40, "patience": 10}, method="soft", classes=PERMS,
                                      data="digits")
    assert config.learned_options().round is False
    result = align(a, b, config)
    u = result.report.learned_summary.unrounded
    assert u is not None and result.report.learned_summary.freeze_step == 40  # never rounded while learning
    assert u["endpoint_distance"] > 1e-3  # the soft path's end is not B
    assert abs(u["endpoint_loss"] - u["b_loss"]) > 1e-4
    assert u["b_loss"] == pytest.approx(result.report.learned_summary.unrounded["b_loss"])
    assert result.report.function_gap_vs_b < 1e-3  # the written B is the rounded one: B's function
    rounded = align(a, b, AlignConfig(method="soft", classes=PERMS, data="digits", steps=40))
    assert rounded.report.learned_summary.unrounded is None


def test_no_round_is_soft_matchings_and_a_flag():
    with pytest.raises(SymalignError, match="soft"):
        AlignConfig.from_options({"round": False}, method="learned", data="digits").learned_options()
    with pytest.raises(SystemExit):  # argparse: --no-round takes no value
        main(["align", "zoo:vit-digits/0", "zoo:vit-digits/1", "--method", "soft", "--no-round", "false",
              "--out", "/tmp/x"])
