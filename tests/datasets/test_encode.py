"""Encoding profiles: one-hot order, scaling, row norms, bias, labels, bad options."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from conftest import mirrored_table

from dperm.datasets import registry
from dperm.datasets.canonical import PART
from dperm.datasets.encode import encode, resolve_profile

_table = mirrored_table


@pytest.fixture(scope="module")
def adult(mirror):
    return _table(mirror, "adult")


def test_adult_default_matches_the_published_counts(adult):
    record, table = adult
    arrays, info = encode(record, table)
    assert info["n_raw"] == 48_842 and info["n"] == 45_222 and info["n_dropped_missing"] == 3_620
    assert arrays["X"].shape == (45_222, 105)
    assert arrays["columns"][0] == "bias" and np.all(arrays["X"][:, 0] == 1.0)
    assert arrays["X"].min() == 0.0 and arrays["X"].max() == 1.0
    assert int(arrays["y01"].sum()) == 11_208  # >50K among complete rows (7,508 + 3,700)
    np.testing.assert_array_equal(arrays["ypm"], 2 * arrays["y01"].astype(int) - 1)


def test_one_hot_is_in_sorted_order_and_each_group_sums_to_one(adult):
    record, table = adult
    arrays, _ = encode(record, table)
    names = list(arrays["columns"])
    for column in record.categorical:
        group = [i for i, n in enumerate(names) if n.startswith(column + "=")]
        values = [names[i].split("=", 1)[1] for i in group]
        assert values == sorted(values)
        assert group == list(range(group[0], group[0] + len(group)))  # contiguous, in file order
        np.testing.assert_array_equal(arrays["X"][:, group].sum(axis=1), 1.0)


def test_keeping_missing_values_adds_a_missing_category(adult):
    record, table = adult
    arrays, info = encode(record, table, {"drop_missing": False, "parts": ["train"]})
    assert info["n"] == 32_561 and info["n_rows_with_missing_kept"] == 2_399
    assert "workclass=<missing>" in list(arrays["columns"])


def test_row_norms_unit_clip_and_bias(mirror):
    record, table = _table(mirror, "bank-dpagd")
    unit, info = encode(record, table, {"row_norm": "unit"})
    np.testing.assert_allclose(np.linalg.norm(unit["X"][:, 1:], axis=1), 1.0)
    assert info["max_row_norm"] == pytest.approx(np.sqrt(2))
    ball, info = encode(record, table, {"row_norm": "unit", "row_norm_radius": 0.5 ** 0.5, "bias": 0.5 ** 0.5})
    np.testing.assert_allclose(np.linalg.norm(ball["X"], axis=1), 1.0)
    clip, _ = encode(record, table, {"row_norm": "clip", "bias": 0})
    norms = np.linalg.norm(clip["X"], axis=1)
    raw, _ = encode(record, table, {"bias": 0})
    raw_norms = np.linalg.norm(raw["X"], axis=1)
    assert norms.max() <= 1 + 1e-12
    short = raw_norms <= 1
    np.testing.assert_allclose(clip["X"][short], raw["X"][short])  # short rows untouched
    assert clip["X"].shape[1] == raw["X"].shape[1] == 32


def test_constant_column_maps_to_zero_and_regression_target_scaled(mirror):
    record, table = _table(mirror, "kddcup99")
    arrays, _ = encode(record, table)
    j = list(arrays["columns"]).index("num_outbound_cmds")  # constant 0 in the 10% file
    assert np.all(arrays["X"][:, j] == 0.0)
    record, table = _table(mirror, "wine")
    arrays, info = encode(record, table)
    assert arrays["y"].min() == 0.0 and arrays["y"].max() == 1.0
    assert (info["target_min"], info["target_max"]) == (3.0, 9.0)
    assert {"color=red", "color=white"} <= set(arrays["columns"])
    raw_y, _ = encode(record, table, {"target_scale": "none"})
    np.testing.assert_allclose(arrays["y"], (raw_y["y"] - 3.0) / 6.0)


def test_encoding_is_deterministic(mirror):
    record, table = _table(mirror, "credit")
    a, _ = encode(record, table)
    b, _ = encode(record, table.sample(frac=1.0, random_state=0).sort_index())
    np.testing.assert_array_equal(a["X"], b["X"])


@pytest.mark.parametrize("options, message", [
    ({"scale": "zscore"}, r"scale='zscore'; allowed: \['minmax', 'public', 'none'\]"),
    ({"row_norm": "l1"}, r"row_norm='l1'; allowed: \['none', 'unit', 'clip'\]"),
    ({"colour": 1}, r"unknown preprocessing option\(s\) \['colour'\]; allowed"),
    ({"parts": ["validation"]}, r"parts \['validation'\] unknown; this dataset has parts \['red', 'white'\]"),
    ({"bias": -1}, r"bias=-1; allowed: a finite number >= 0"),
    ({"drop_missing": "yes"}, r"drop_missing='yes'; allowed"),
])
def test_bad_options_name_the_value_and_the_choices(options, message):
    with pytest.raises(ValueError, match=message):
        resolve_profile(registry.get("wine"), options)


def test_unknown_label_value_is_an_error():
    record = registry.get("adult")
    table = pd.DataFrame({c: pd.Series(["x"], dtype="string") if c in record.categorical else [1.0]
                          for c in record.feature_names})
    table[record.target] = pd.Series(["maybe"], dtype="string")
    table[PART] = pd.Series(["train"], dtype="string")
    with pytest.raises(ValueError, match="neither positive"):
        encode(record, table)


def test_unknown_dataset_key_lists_known_ones():
    with pytest.raises(KeyError, match="unknown dataset 'adults'; known datasets: adult, bank"):
        registry.get("adults")


@pytest.mark.parametrize("key", ["bank", "bank-dpagd", "credit"])
def test_every_numeric_column_is_its_own_min_max_scaling(mirror, key):
    """Each numeric column equals (raw − min)/(max − min) of the same column, row by row."""
    record, table = _table(mirror, key)
    arrays, _ = encode(record, table)
    names = list(arrays["columns"])
    for column in record.columns:
        if column.kind != "num":
            continue
        raw = table[column.name].to_numpy(dtype=float)
        span = raw.max() - raw.min()
        expected = (raw - raw.min()) / span if span > 0 else np.zeros_like(raw)
        np.testing.assert_allclose(arrays["X"][:, names.index(column.name)], expected, atol=1e-15)


def test_subsample_keeps_a_seeded_subset_in_file_order_and_scales_on_it(mirror):
    record, table = _table(mirror, "bank-dpagd")
    raw, _ = encode(record, table, {"scale": "none", "bias": 0})
    sub, info = encode(record, table, {"scale": "none", "bias": 0, "subsample": {"rows": 500, "seed": 1}})
    again, _ = encode(record, table, {"scale": "none", "bias": 0, "subsample": {"rows": 500, "seed": 1}})
    other, _ = encode(record, table, {"scale": "none", "bias": 0, "subsample": {"rows": 500, "seed": 2}})
    assert info["n"] == 500 and info["n_before_subsample"] == len(raw["X"])
    np.testing.assert_array_equal(sub["X"], again["X"])
    assert not np.array_equal(sub["X"], other["X"])
    keep = np.sort(np.random.default_rng(1).choice(len(raw["X"]), size=500, replace=False))
    np.testing.assert_array_equal(sub["X"], raw["X"][keep])  # the seeded rows, in file order
    np.testing.assert_array_equal(sub["y01"], raw["y01"][keep])
    scaled, _ = encode(record, table, {"bias": 0, "subsample": {"rows": 500, "seed": 1}})
    numeric = [i for i, name in enumerate(scaled["columns"]) if "=" not in name]
    assert np.all(scaled["X"][:, numeric].max(axis=0) <= 1.0)
    np.testing.assert_allclose(scaled["X"][:, numeric].max(axis=0)[np.ptp(sub["X"][:, numeric], axis=0) > 0], 1.0)
    with pytest.raises(ValueError, match=r"subsample rows=10000000 but only"):
        encode(record, table, {"subsample": {"rows": 10_000_000, "seed": 1}})


@pytest.mark.parametrize("value", [{"rows": 0, "seed": 1}, {"rows": 10}, {"rows": 10, "seed": -1},
                                   {"rows": 1.5, "seed": 1}, {"rows": 10, "seed": 1, "extra": 2}, 100])
def test_bad_subsample_is_refused(value):
    with pytest.raises(ValueError, match=r"subsample=.*allowed: null or"):
        resolve_profile(registry.get("wine"), {"subsample": value})
