"""Synthetic datasets: generated from their name alone, nested across n, through the same fetch
and prepare steps as the real datasets."""

from __future__ import annotations

import numpy as np
import pytest

from dperm.datasets import registry, synthetic
from dperm.datasets.fetch import fetch
from dperm.datasets.prepare import load_prepared, prepare


def test_the_name_fixes_the_data_and_a_larger_n_extends_a_smaller_one():
    X1, y1 = synthetic.generate("synthetic-logistic-n1000-d5")
    X2, y2 = synthetic.generate("synthetic-logistic-n5000-d5")
    np.testing.assert_array_equal(X2[:1000], X1)
    np.testing.assert_array_equal(y2[:1000], y1)
    again, _ = synthetic.generate("synthetic-logistic-n1000-d5")
    np.testing.assert_array_equal(again, X1)
    other, _ = synthetic.generate("synthetic-logistic-n1000-d6")
    assert other.shape == (1000, 6) and not np.allclose(other[:, :5], X1)


def test_the_population_has_the_documented_law():
    X, y = synthetic.generate("synthetic-logistic-n40000-d20")
    assert np.mean(np.sum(X * X, axis=1)) == pytest.approx(1.0, rel=0.02)  # E||x||^2 = 1
    assert set(np.unique(y)) == {0.0, 1.0} and 0.4 < y.mean() < 0.6
    Xl, yl = synthetic.generate("synthetic-linear-n40000-d20")
    beta, *_ = np.linalg.lstsq(Xl, yl, rcond=None)
    assert np.var(yl - Xl @ beta) == pytest.approx(0.25, rel=0.05)  # noise N(0, 0.25)
    assert np.linalg.norm(beta) == pytest.approx(2.0 * np.sqrt(20), rel=0.05)  # ||w*|| = 2 sqrt(d)


@pytest.mark.parametrize("bad", ["synthetic-logistic-n0-d5", "synthetic-probit-n10-d5", "synthetic-logistic-n10"])
def test_other_names_are_not_synthetic(bad):
    assert not synthetic.is_synthetic(bad)
    with pytest.raises(KeyError, match="synthetic-<logistic|linear>-n<rows>-d<features>"):
        registry.get(bad)


def test_fetch_and_prepare_a_synthetic_dataset(tmp_path, no_network):
    record = registry.get("synthetic-linear-n300-d4")
    manifest = fetch(record, tmp_path / "raw", mirror=None, mode="never")
    assert manifest["source"] == "synthetic"
    out = tmp_path / "prepared.npz"
    prov = prepare(record, tmp_path / "raw" / "fetch.json", out, "raw",
                   {"scale": "none", "target_scale": "none", "bias": 0})
    arrays, _ = load_prepared(out)
    X, y = synthetic.generate(record.key)
    np.testing.assert_allclose(arrays["X"], X)
    np.testing.assert_allclose(arrays["y"], y)
    assert prov["n"] == 300 and prov["task"] == "regression"
