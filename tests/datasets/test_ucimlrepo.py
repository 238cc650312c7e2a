"""The ucimlrepo path and the mirror path must give the same canonical table (and arrays)."""

from __future__ import annotations

import sys
import types

import numpy as np
import pandas as pd
import pytest
import ucimlrepo_fixture as fx

from dperm.datasets import registry
from dperm.datasets import ucimlrepo as uci
from dperm.datasets.canonical import canonical_from_files
from dperm.datasets.encode import encode
from dperm.datasets.fetch import fetch
from dperm.datasets.prepare import load_canonical
from dperm.files import read_content

ROWS = 400  # per file: enough rows to meet missing values and most categories


def _raw(mirror, record, name):
    raw = next(f for f in record.files if f.name == name)
    path = mirror / raw.mirror_path
    return read_content(path if path.exists() else path.with_name(path.name + ".gz"))


def _slices(mirror, key):
    """Sliced raw contents (as the mirror path sees them) and the ucimlrepo stand-in."""
    record = registry.get(key)
    if key == "adult":
        train = fx.head_lines(_raw(mirror, record, "adult.data"), ROWS)
        test = fx.head_lines(_raw(mirror, record, "adult.test"), ROWS, keep=1)
        return {"adult.data": train, "adult.test": test}, fx.adult(train, test)
    if key == "wine":
        red = fx.head_lines(_raw(mirror, record, "winequality-red.csv"), ROWS, keep=1)
        white = fx.head_lines(_raw(mirror, record, "winequality-white.csv"), ROWS, keep=1)
        return {"winequality-red.csv": red, "winequality-white.csv": white}, fx.wine(red, white)
    name = record.files[0].name
    content = fx.head_lines(_raw(mirror, record, name), ROWS, keep=1)
    return {name: content}, getattr(fx, key)(content)


@pytest.mark.parametrize("key", ["adult", "bank", "wine", "bike", "credit"])
def test_ucimlrepo_and_mirror_give_the_same_canonical_table(mirror, key):
    record = registry.get(key)
    contents, fake = _slices(mirror, key)
    from_files = canonical_from_files(record, contents, check_rows=False)
    from_uci = uci.canonical_from_ucimlrepo(record, fake.data.original, fake.variables, check_rows=False)
    pd.testing.assert_frame_equal(from_uci, from_files)
    # and after being stored and read back, as fetch_raw/prepare do
    stored = uci.deserialise(uci.serialise(fake.data.original, fake.variables))
    again = uci.canonical_from_ucimlrepo(record, *stored, check_rows=False)
    pd.testing.assert_frame_equal(again, from_files)
    a1, _ = encode(record, from_files)
    a2, _ = encode(record, again)
    np.testing.assert_array_equal(a1["X"], a2["X"])
    assert list(a1["columns"]) == list(a2["columns"])


def test_slices_exercise_the_conventions(mirror):
    """The equivalence above is only meaningful if the slices contain what differs."""
    _, fake = _slices(mirror, "adult")
    assert fake.data.original["workclass"].isna().any() and (fake.data.original["workclass"] == "?").any()
    assert fake.data.original["income"].str.endswith(".").any()
    _, fake = _slices(mirror, "bank")
    assert fake.data.original["poutcome"].isna().any() and "day_of_week" in fake.data.original


def test_fetch_through_ucimlrepo_then_prepare_matches_mirror(mirror, tmp_path, monkeypatch, no_network):
    """Offline stand-in at the network boundary: fetch_ucirepo returns the full real wine data."""
    record = registry.get("wine")
    red, white = (_raw(mirror, record, n) for n in ("winequality-red.csv", "winequality-white.csv"))
    fake_module = types.SimpleNamespace(fetch_ucirepo=lambda id: fx.wine(red, white))
    monkeypatch.setitem(sys.modules, "ucimlrepo", fake_module)
    manifest = fetch(record, tmp_path / "uci", mirror=None, mode="auto")
    assert manifest["source"] == "ucimlrepo"
    from_uci, _ = load_canonical(record, tmp_path / "uci" / "fetch.json")
    mirrored = fetch(record, tmp_path / "mirror", mirror=mirror)
    assert mirrored["source"] == "mirror"
    from_mirror, _ = load_canonical(record, tmp_path / "mirror" / "fetch.json")
    pd.testing.assert_frame_equal(from_uci, from_mirror)
    assert len(from_uci) == 6_497


def test_ucimlrepo_frame_with_unexpected_columns_is_refused(mirror):
    record = registry.get("bank")
    _, fake = _slices(mirror, "bank")
    broken = fake.data.original.drop(columns=["balance"])
    with pytest.raises(Exception, match="lacks columns \\['balance'\\]"):
        uci.canonical_from_ucimlrepo(record, broken, fake.variables, check_rows=False)


def test_ucimlrepo_row_counts_are_checked(mirror):
    record = registry.get("wine")
    _, fake = _slices(mirror, "wine")
    with pytest.raises(Exception, match="rows per part"):
        uci.canonical_from_ucimlrepo(record, fake.data.original, fake.variables)
