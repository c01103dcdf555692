"""Pseudo-perplexity (Salazar et al.; Verma & Elbayad's MLM metric) against a computation by hand."""

import json
import math
import subprocess
import sys

import torch

from symalign.data import load_data
from symalign.data.text import model_tokenizer
from symalign.landscape.evaluate import Evaluator
from symalign.landscape.pseudo_perplexity import PseudoPerplexity, unmasked_windows
from symalign.models import load_model


def _by_hand(model, windows: torch.Tensor) -> float:
    """One forward per (window, position): mask that position, take log P(the token there)."""
    module = model.to_module().eval()
    mask = model_tokenizer(model.source).mask_token_id
    total, count = 0.0, 0
    with torch.no_grad():
        for window in windows:
            for t in range(len(window)):
                x = window.clone()
                x[t] = mask
                logits = module(input_ids=x[None]).logits[0, t].double()
                total += float(logits.log_softmax(-1)[window[t]])
                count += 1
    return math.exp(-total / count)


def test_pseudo_perplexity_matches_a_loop_over_masked_positions():
    model = load_model("zoo:bert-shakespeare/0")
    data = load_data("shakespeare-mlm")
    ev = Evaluator(model, data, max_examples=4)
    scorer = PseudoPerplexity(ev.module, model, data, windows=3)
    windows = unmasked_windows(model, data, 3)
    assert windows.shape[0] == 3 and scorer.tokens == windows.numel()
    mine = scorer(ev.hf_params(model))
    assert abs(mine - _by_hand(model, windows)) < 1e-4 * mine
    # a real model predicts masked characters far better than uniform guessing over its vocabulary
    assert 1.0 < mine < 0.5 * model.config.vocab_size


def test_barrier_json_reports_pseudo_perplexity_for_a_masked_lm():
    out = subprocess.run([sys.executable, "-m", "symalign.cli", "barrier", "zoo:bert-shakespeare/0",
                          "zoo:bert-shakespeare/1", "--points", "3", "--max-examples", "8", "--json"],
                         capture_output=True, text=True, check=True).stdout
    curve = json.loads(out)
    pppl = curve["pseudo_perplexity"]
    assert len(pppl) == 3 and all(p > 1 for p in pppl)
    # the midpoint of two unaligned seeds is worse than either end, in pseudo-perplexity as in loss
    assert pppl[1] > max(pppl[0], pppl[2]) and curve["pseudo_perplexity_barrier"] > 0
    assert abs(curve["pseudo_perplexity_barrier"] - (pppl[1] - 0.5 * (pppl[0] + pppl[2]))) < 1e-9


def test_a_sweep_over_masked_lms_reports_the_pseudo_perplexity_barrier(tmp_path):
    from symalign.runs import RunStore
    from symalign.sweeps import run_sweep
    from symalign.sweeps.grid import grid_from_dict

    spec = {"pairs": [["zoo:bert-shakespeare/0", "zoo:bert-shakespeare/1"]], "points": 3, "max_examples": 8,
            "rows": [{"name": "vanilla", "method": "none", "classes": "none"}]}
    store = RunStore(tmp_path / "runs.sqlite")
    result = run_sweep(grid_from_dict(spec, "t"), executor="serial", store=store)
    cell = result.cells.iloc[0]
    curve = store.get(cell["run_id"]).curve
    assert cell["pppl_barrier"] == curve["pseudo_perplexity_barrier"] > 0
    assert result.summary.iloc[0]["pppl_mean"] == cell["pppl_barrier"]
    again = run_sweep(grid_from_dict(spec, "t"), executor="serial", store=store)  # reused: read from the run
    assert again.reused == 1 and again.cells.iloc[0]["pppl_barrier"] == cell["pppl_barrier"]
