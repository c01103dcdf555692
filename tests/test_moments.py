"""Streamed second moments (issue #58 item 4): statistics summed batch by batch, with both models run in
lockstep, equal the statistics of the whole sample that activation matching and OT-ACTS used to hold."""

from __future__ import annotations

import pytest
import torch

from symalign.data import load_data
from symalign.match.activation import capture
from symalign.match.activation.moments import PairMoments, pair_moments, pearson
from symalign.match.solvers import rotary_fit, rotary_fit_moments
from symalign.models import load_model


def _streamed(a: torch.Tensor, b: torch.Tensor, sizes: list[int], dtype=torch.float64, block=None) -> PairMoments:
    m, at = None, 0
    for size in sizes:
        x, y = a[at:at + size], b[at:at + size]
        m = m or PairMoments.start(x, y, block)
        m.add(x, y, dtype)
        at += size
    assert at == a.shape[0]
    return m


@pytest.fixture(scope="module")
def samples():
    """Correlated columns with means far from zero (a residual stream's outlier dimensions): the
    cancellation a shift-free sum would suffer."""
    g = torch.Generator().manual_seed(0)
    a = torch.randn(300, 8, generator=g, dtype=torch.float64) * torch.linspace(0.5, 3, 8) + 1e4 * torch.arange(8)
    b = a[:, torch.randperm(8, generator=g)] * 0.7 + 0.3 * torch.randn(300, 8, generator=g, dtype=torch.float64)
    return a, b


@pytest.mark.parametrize("dtype, tol", [(torch.float64, 1e-9), (torch.float32, 2e-5)])
def test_batched_sums_give_the_whole_samples_statistics(samples, dtype, tol):
    a, b = samples
    m = _streamed(a, b, [7, 100, 1, 192], dtype, block=4)
    assert m.rows == 300
    torch.testing.assert_close(m.pearson(), pearson(a, b), atol=tol, rtol=0)
    torch.testing.assert_close(m.raw_cross(), a.T @ b, rtol=tol, atol=0)
    torch.testing.assert_close(m.raw_squares()[0], (a * a).sum(0), rtol=tol, atol=0)
    torch.testing.assert_close(m.raw_squares()[1], (b * b).sum(0), rtol=tol, atol=0)
    heads = b.reshape(300, 2, 4).transpose(0, 1)
    torch.testing.assert_close(m.raw_gram_b(), heads.mT @ heads, rtol=tol, atol=0)
    std_a, std_b = m.stds()
    torch.testing.assert_close(std_a, a.std(0), rtol=tol, atol=0)
    torch.testing.assert_close(std_b, b.std(0), rtol=tol, atol=0)
    za, zb = ((x - x.mean(0)) / x.std(0) for x in (a, b))
    distances = torch.cdist(za.T, zb.T) ** 2
    torch.testing.assert_close(m.standardised_sq_distances(), distances, atol=tol * 300 * 4, rtol=0)


def test_a_constant_column_has_zero_correlation_and_unit_distance_from_its_variance(samples):
    a, b = samples
    a = a.clone()
    a[:, 3] = 5.0
    m = _streamed(a, b, [150, 150])
    assert m.pearson()[3].abs().max() == 0
    torch.testing.assert_close(m.pearson(), pearson(a, b), atol=1e-9, rtol=0)
    zb = (b - b.mean(0)) / b.std(0)
    torch.testing.assert_close(m.standardised_sq_distances()[3], (zb**2).sum(0), atol=1e-6, rtol=0)


def test_rotary_fit_from_moments_equals_the_fit_from_samples():
    g = torch.Generator().manual_seed(1)
    co = [(torch.randn(3, 8, 40, generator=g, dtype=torch.float64), torch.randn(3, 8, 40, generator=g,
                                                                                 dtype=torch.float64))]
    contra = [(torch.randn(3, 8, 30, generator=g, dtype=torch.float64), torch.randn(3, 8, 30, generator=g,
                                                                                     dtype=torch.float64))]

    def moments(pairs):
        return [(x @ y.mT, (x * x).sum(-1), (y * y).sum(-1)) for x, y in pairs]

    for rotated in (None, 4):
        expected = rotary_fit(co, contra, rotated)
        torch.testing.assert_close(rotary_fit_moments(moments(co), moments(contra), rotated), expected)
        torch.testing.assert_close(rotary_fit_moments(moments(co), [], rotated), rotary_fit(co, [], rotated))
    # a planted rotary map is found exactly from moments: B = G^-1·A on the co side
    z = torch.polar(torch.tensor([1.5, 0.5, 2.0, 1.0], dtype=torch.float64), torch.tensor([0.3, -1.0, 2.0, 0.1],
                                                                                           dtype=torch.float64))
    x = co[0][0][0]
    xa = torch.complex(x[:4], x[4:])
    planted = xa / z[:, None]  # A = z·B
    b = torch.cat([planted.real, planted.imag])[None]
    found = rotary_fit_moments(moments([(x[None], b)]), [])
    torch.testing.assert_close(found[0] @ b[0], x, atol=1e-10, rtol=0)


@pytest.fixture(scope="module")
def gpt_pair():
    return load_model("zoo:gpt-shakespeare/0"), load_model("zoo:gpt-shakespeare/1"), load_data("shakespeare")


def test_models_run_in_lockstep_give_the_collected_samples_statistics(gpt_pair, monkeypatch):
    a, b, data = gpt_pair
    monkeypatch.setattr(capture, "MAX_ROWS", 700)  # cuts a batch in the middle
    stats = pair_moments(a, b, data, max_examples=16)
    acts_a, acts_b = capture.collect(a, data, 16), capture.collect(b, data, 16)
    assert set(stats) == set(acts_a)
    for key, m in stats.items():
        x, y = (acts[key].reshape(acts[key].shape[0], -1) for acts in (acts_a, acts_b))
        assert m.rows == x.shape[0] == 700, key
        torch.testing.assert_close(m.pearson(), pearson(x, y), atol=1e-9, rtol=0, msg=key)
        torch.testing.assert_close(m.raw_cross(), x.T @ y, rtol=1e-9, atol=1e-9, msg=key)


def test_a_model_paired_with_itself_shares_its_module_and_still_counts_each_batch_once(gpt_pair):
    a, _, data = gpt_pair
    stats = pair_moments(a, a, data, max_examples=4)
    acts = capture.collect(a, data, 4)
    for key, m in stats.items():
        x = acts[key].reshape(acts[key].shape[0], -1)
        assert m.rows == x.shape[0], key
        torch.testing.assert_close(m.raw_cross(), x.T @ x, rtol=1e-9, atol=1e-9, msg=key)
        live = m.stds()[0] > 1e-6  # pearson divides by rows with unbiased stds, as before: the diagonal is 1 - 1/rows
        torch.testing.assert_close(m.pearson().diagonal()[live], torch.full((int(live.sum()),), 1 - 1 / m.rows,
                                   dtype=torch.float64), atol=1e-9, rtol=0, msg=key)


def test_residual_streams_are_in_depth_order_so_last_is_the_deepest():
    keys = [f"residual.{j}" for j in range(13)] + ["layer.0.mlp"]
    assert capture.residual_keys(sorted(keys)) == [f"residual.{j}" for j in range(13)]  # sorted() puts 10 before 2
