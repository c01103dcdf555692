"""The zoo's published numbers do not move when the code around them is rearranged: the 0↔1 rows of
the README's barrier table that need no training of a matcher (vanilla, weight matching with
permutations, weight matching with every class) are recomputed and compared, to 1e-6, with the
values the code computed before the registries, the cli/ package and the families folder
(commit 4af8122, printed at full precision by the same calls). vit-digits at the README's own
evaluation (all 360 examples, 21 points: its table values); the text models on 32 windows and
11 points, which keeps this test to seconds (the full evaluation takes minutes per model)."""

from __future__ import annotations

import pytest

from symalign.data import load_data
from symalign.landscape.interpolation import interpolation_curve
from symalign.match.align import align
from symalign.match.config import AlignConfig
from symalign.models import load_model

BEFORE = {
    "vit-digits": ("digits", {"none": 3.9493630303276914, "permutations": 4.90450185139974,
                              "all": 2.3364737457699247}),
    "gpt-shakespeare": ("shakespeare", {"none": 1.3773741126060486, "permutations": 1.3284856677055359,
                                        "all": 0.20715183019638062}),
    "llama-shakespeare": ("shakespeare", {"none": 1.3079636693000793, "permutations": 1.3035109639167786,
                                          "all": 0.6962030529975891}),
}
EVALUATION = {"vit-digits": {}, "gpt-shakespeare": {"points": 11, "max_examples": 32},
              "llama-shakespeare": {"points": 11, "max_examples": 32}}


@pytest.mark.parametrize("recipe", list(BEFORE))
@pytest.mark.slow
def test_the_zoo_barrier_rows_are_what_they_were(recipe):
    data_spec, before = BEFORE[recipe]
    a, b = load_model(f"zoo:{recipe}/0"), load_model(f"zoo:{recipe}/1")
    data = load_data(data_spec)
    evaluation = EVALUATION[recipe]
    now = {"none": interpolation_curve(a, b, data, **evaluation).barrier}
    for preset in ("permutations", "all"):
        aligned = align(a, b, AlignConfig(method="weight", preset=preset)).aligned
        now[preset] = interpolation_curve(a, aligned, data, **evaluation).barrier
    assert now == pytest.approx(before, abs=1e-6)
