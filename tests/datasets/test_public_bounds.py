"""Public bounds (docs/privacy.md#public-bounds): declared ranges respected and clipped values
counted, the data option unchanged, the ``preprocessing`` label right on every record, refusals
that name the dataset and attribute, summaries that never pool the two labels, tuning on the
experiment's own profile, shared splits and paired figure curves."""

from __future__ import annotations

import copy
import hashlib

import numpy as np
import pandas as pd
import pytest
from conftest import load_config, mirrored_table

from dperm import grid as ex
from dperm.config import ConfigError
from dperm.datasets import bounds, registry
from dperm.datasets.canonical import PART
from dperm.datasets.encode import encode, resolve_profile
from dperm.protocol.runner import run_cell
from dperm.protocol.seeds import split_seed
from dperm.report.tables import summarise

ADULT = registry.get("adult")
TYPICAL = {"age": 40.0, "workclass": "Private", "fnlwgt": 1e5, "education": "HS-grad", "education-num": 9.0,
           "marital-status": "Never-married", "occupation": "Sales", "relationship": "Own-child", "race": "White",
           "sex": "Male", "capital-gain": 0.0, "capital-loss": 0.0, "hours-per-week": 40.0,
           "native-country": "United-States", "income": "<=50K", PART: "train"}


def _adult(rows) -> pd.DataFrame:
    """A canonical Adult table of hand-made rows (each a dict of changes to a typical row)."""
    frame = pd.DataFrame([{**TYPICAL, **row} for row in rows])
    for column in ADULT.columns:
        frame[column.name] = frame[column.name].astype(np.float64 if column.kind == "num" else "string")
    return frame.astype({"income": "string", PART: "string"})


def _column(arrays, name):
    return arrays["X"][:, list(arrays["columns"]).index(name)]


def test_declared_bounds_are_respected_and_clipped_values_counted():
    table = _adult([
        {"age": 10.0, "hours-per-week": 200.0, "capital-gain": 2e6},  # age below, hours and gain above
        {"age": 17.0, "hours-per-week": 168.0},  # exactly the ends
        {"age": 120.0, "hours-per-week": 1.0, "income": ">50K"},
        {"age": 200.0, "fnlwgt": 0.5},  # age above, fnlwgt below
        {},
    ])
    arrays, info = encode(ADULT, table, {"scale": "public"})
    X = arrays["X"]
    assert X.min() >= 0.0 and X.max() <= 1.0  # every column in [0, 1], exactly
    np.testing.assert_array_equal(_column(arrays, "age"), [0.0, 0.0, 1.0, 1.0, (40 - 17) / (120 - 17)])
    np.testing.assert_array_equal(_column(arrays, "hours-per-week"), [1.0, 1.0, 0.0, (40 - 1) / 167, (40 - 1) / 167])
    np.testing.assert_allclose(_column(arrays, "capital-gain"), [1.0, 0, 0, 0, 0])
    np.testing.assert_allclose(_column(arrays, "fnlwgt")[3], 0.0)
    np.testing.assert_allclose(_column(arrays, "fnlwgt")[4], (np.log1p(1e5) - np.log1p(1)) / (np.log1p(3e8) - np.log1p(1)))
    assert info["clipped"] == {
        "age": {"below": 1, "above": 1}, "fnlwgt": {"below": 1, "above": 0},
        "education-num": {"below": 0, "above": 0}, "capital-gain": {"below": 0, "above": 1},
        "capital-loss": {"below": 0, "above": 0}, "hours-per-week": {"below": 0, "above": 1},
    }
    assert info["bounds"]["age"]["source"].startswith("adult.names")
    assert info["preprocessing"] == str(arrays["preprocessing"]) == "public-bounds"
    # Categories are the documented ones, not those present: 8 workclasses though the rows hold one.
    workclass = [c for c in arrays["columns"] if c.startswith("workclass=")]
    assert len(workclass) == 8 and "workclass=Never-worked" in workclass
    assert len(arrays["columns"]) == 1 + 6 + sum(len(v) for v in bounds.CATEGORIES["adult"].values())


def test_same_rows_give_the_same_columns_whatever_categories_they_hold():
    """The data option's column set reveals which categories occur (a one-row category appears
    and vanishes with its row); the public one's does not."""
    with_row = _adult([{}, {"native-country": "Holand-Netherlands"}])
    without = _adult([{}, {}])
    data = [list(encode(ADULT, t)[0]["columns"]) for t in (with_row, without)]
    public = [list(encode(ADULT, t, {"scale": "public"})[0]["columns"]) for t in (with_row, without)]
    assert data[0] != data[1] and public[0] == public[1]


def test_a_value_outside_the_documented_categories_is_refused_by_name():
    with pytest.raises(ValueError, match=r"adult: column 'workclass' holds \['Martian'\]"):
        encode(ADULT, _adult([{"workclass": "Martian"}]), {"scale": "public"})


def test_missing_values_kept_get_a_declared_missing_category():
    arrays, _ = encode(ADULT, _adult([{"workclass": None}, {}]), {"scale": "public", "drop_missing": False})
    assert "workclass=<missing>" in list(arrays["columns"]) and "sex=<missing>" in list(arrays["columns"])
    np.testing.assert_array_equal(_column(arrays, "workclass=<missing>"), [1.0, 0.0])


@pytest.mark.parametrize("dataset, options, attribute", [
    ("ipums-br", {"scale": "public"}, "x0"),
    ("ipums-us", {"scale": "public"}, "x0"),
    ("bank-additional", {"scale": "public"}, "emp.var.rate"),
    ("kddcup99", {"scale": "public"}, "protocol_type"),
    ("credit", {"scale": "public"}, "LIMIT_BAL"),
    ("wine", {"scale": "public"}, "fixed_acidity"),
    ("bike", {"target_scale": "public"}, "cnt"),
    ("synthetic-logistic-n10-d2", {"scale": "public"}, "x0"),
])
def test_an_attribute_without_a_public_bound_refuses_public_scaling_by_name(dataset, options, attribute):
    with pytest.raises(ValueError, match=rf"^{dataset}: public scaling needs .* attribute '{attribute}' has none"):
        resolve_profile(registry.get(dataset), options)


def test_every_numeric_attribute_of_the_documented_datasets_is_bounded_or_said_unbounded():
    for key, record in registry.DATASETS.items():
        numeric = {c.name for c in record.columns if c.kind == "num"}
        categorical = set(record.categorical)
        declared, unbounded = set(bounds.BOUNDS.get(key, {})), set(bounds.UNBOUNDED.get(key, {}))
        assert declared <= numeric and unbounded <= numeric and not declared & unbounded, key
        listed, unlisted = set(bounds.CATEGORIES.get(key, {})), set(bounds.UNLISTED.get(key, {}))
        assert listed <= categorical and unlisted <= categorical and not listed & unlisted, key
        if key in ("adult", "bank", "bank-dpagd", "kddcup99", "ipums-us", "ipums-br", "bank-additional"):
            assert declared | unbounded == numeric, key  # no silent gap: a bound or a stated reason
        assert all(b.source for b in bounds.BOUNDS.get(key, {}).values())


def _hash(arrays) -> str:
    h = hashlib.sha256()
    for key in sorted(arrays):
        if key != "preprocessing":
            h.update(key.encode())
            h.update(np.ascontiguousarray(arrays[key]).tobytes())
    return h.hexdigest()


_real = mirrored_table


# Arrays as the code before public bounds existed prepared them (sha256 over the sorted arrays).
BEFORE = {
    ("adult", "default"): "264667e61a58e0d7fcb411f75a64f648b6fcf556d35b7a385432fdd69e70d1b2",
    ("adult", "zhang"): "5013d6a04ba983619dc40bcd656b04a049505132ab78d624ef7cfba709ff7148",
    ("bank-dpagd", "unit-ball"): "d1ecda9606898da29ab66460ac31f3a6401001b028ea039be68e3419a4304d5e",
    ("wine", "default"): "f62bf82c00977a1b006c048afa623b72b9818c154a927facfd146916415fc4dd",
}
PROFILES = {"default": {}, "unit-ball": {"row_norm": "unit", "row_norm_radius": 0.5 ** 0.5, "bias": 0.5 ** 0.5},
            "zhang": {"row_norm": "unit", "row_norm_radius": 0.5 ** 0.5, "bias": 0.5 ** 0.5, "parts": ["train"],
                      "drop_missing": False}}


@pytest.mark.parametrize("dataset, profile", sorted(BEFORE))
def test_the_data_option_prepares_the_same_bytes_as_before(mirror, dataset, profile):
    record, table = _real(mirror, dataset)
    arrays, info = encode(record, table, PROFILES[profile])
    assert _hash(arrays) == BEFORE[(dataset, profile)]
    assert info["preprocessing"] == "data-dependent"


@pytest.mark.parametrize("dataset", ["adult", "bank", "bank-dpagd"])
def test_the_documented_datasets_prepare_on_public_bounds(mirror, dataset):
    record, table = _real(mirror, dataset)
    arrays, info = encode(record, table, {"scale": "public"})
    data, _ = encode(record, table)
    assert arrays["X"].min() >= 0 and arrays["X"].max() <= 1 and len(arrays["X"]) == len(data["X"])
    assert info["preprocessing"] == "public-bounds" and info["read_from_data"] == []
    assert sum(c["below"] + c["above"] for c in info["clipped"].values()) == 0  # the caps hold on these files


def _toy(label, n=120, seed=0):
    rng = np.random.default_rng(seed)
    X = np.hstack([np.ones((n, 1)), rng.uniform(size=(n, 3))])
    y01 = (X[:, 1] > 0.5).astype(np.int8)
    return {"X": X, "y01": y01, "ypm": (2 * y01 - 1).astype(np.int8), "preprocessing": np.array(label)}


def _spec(algorithm="nonprivate", epsilon="inf"):
    return {"paper": "t", "experiment": "e", "dataset": "toy", "profile": "default",
            "model": {"name": "lr", "loss": "logistic", "l2": 1e-3}, "algorithm": algorithm, "hyper": {},
            "epsilon": epsilon, "delta": 1e-6, "seed": 1, "protocol": {"kind": "kfold", "folds": 2, "draws": 2}}


@pytest.mark.parametrize("options, label", [({}, "data-dependent"), ({"scale": "public"}, "public-bounds"),
                                            ({"scale": "none"}, "data-dependent")])  # categories from the data
def test_every_record_carries_the_label_of_the_arrays_it_ran_on(options, label):
    rng = np.random.default_rng(3)
    table = _adult([{"age": float(a), "income": ">50K" if a > 45 else "<=50K"} for a in rng.integers(17, 90, 40)])
    arrays, info = encode(ADULT, table, options)
    assert str(arrays["preprocessing"]) == info["preprocessing"] == label
    for spec in (_spec(), _spec("majority"), _spec("objpert", "1")):  # non-private rows carry it too
        assert set(run_cell(spec, arrays)["preprocessing"]) == {label}


def test_arrays_without_a_label_are_refused():
    arrays = _toy("public-bounds")
    del arrays["preprocessing"]
    with pytest.raises(ValueError, match="carry no 'preprocessing' entry"):
        run_cell(_spec(), arrays)


def test_a_summary_never_pools_data_dependent_and_public_bounds_fits():
    records = pd.concat([run_cell(_spec(), _toy("data-dependent")), run_cell(_spec(), _toy("public-bounds", seed=1))])
    summary = summarise(records)
    assert sorted(summary["preprocessing"]) == ["data-dependent", "public-bounds"]
    assert (summary["accuracy_n"] == 2).all()


BASE = {
    "paper": "p",
    "models": {"lr": {"loss": "logistic", "l2": 0.01}},
    "algorithms": {"nonprivate": {}, "dp-sgd": {"batch_size": 50},
                   "nonprivate-public": {"use": "nonprivate", "profile": "public"},
                   "dp-sgd-public": {"use": "dp-sgd", "batch_size": 50, "profile": "public"}},
    "experiments": {
        "e": {"datasets": ["bank-dpagd"], "models": ["lr"], "algorithms": ["nonprivate", "dp-sgd"],
              "epsilons": [1.0], "delta": 1e-6, "protocol": {"kind": "kfold", "folds": 3}},
        "e-public": {"datasets": ["bank-dpagd"], "models": ["lr"], "profile": "public", "splits_of": "e",
                     "algorithms": ["nonprivate-public", "dp-sgd-public"], "epsilons": [1.0], "delta": 1e-6,
                     "protocol": {"kind": "kfold", "folds": 3, "draws": 2}}},
    "tuning": {"experiments": ["e", "e-public"], "protocol": {"kind": "kfold", "folds": 3},
               "l2": {"grid": [1e-4, 10.0], "algorithms": ["dp-sgd", "dp-sgd-public"]}},
}


_load = load_config


def test_tuning_runs_on_each_experiments_own_profile(tmp_path):
    from dperm.tuning import needed_profiles, tune, tuning_jobs

    paper = _load(tmp_path, BASE)
    assert [j[2] for j in tuning_jobs(paper)] == ["e", "e-public"]
    assert needed_profiles(paper, "e-public", "bank-dpagd", "lr") == {"public"}
    seen = []

    def data(dataset, profile):
        seen.append(profile)
        return _toy("public-bounds" if profile == "public" else "data-dependent", n=90)

    chosen, grid = tune(paper, data, seed=1)
    assert set(seen) == {"default", "public"} and set(chosen["bank-dpagd"]) == {"default", "public"}
    assert set(grid["profile"]) == {"default", "public"}
    public_cell = next(c for c in ex.cells(paper) if c.algorithm == "dp-sgd-public")
    spec = ex.apply_tuning(ex.cell_spec(paper, public_cell, seed=1), {"bank-dpagd": {
        "default": {"lr": {"l2": 0.5, "hyper": {}}}, "public": {"lr": {"l2": 0.25, "hyper": {}}}}})
    assert spec["model"]["l2"] == 0.25 and spec["profile"] == "public"


def test_splits_of_gives_an_experiment_the_other_ones_folds(tmp_path):
    paper = _load(tmp_path, BASE)
    own = ex.cell_spec(paper, next(c for c in ex.cells(paper) if c.experiment == "e"), seed=1)
    twin = ex.cell_spec(paper, next(c for c in ex.cells(paper) if c.experiment == "e-public"), seed=1)
    assert twin["splits_of"] == "e" and "splits_of" not in own
    assert split_seed(twin) == split_seed(own) != split_seed({**twin, "splits_of": "other"})
    config = copy.deepcopy(BASE)
    config["experiments"]["e-public"]["protocol"]["folds"] = 5
    with pytest.raises(ConfigError, match=r"experiments.e-public.splits_of: experiment 'e' must split as this one"):
        _load(tmp_path, config)


def test_a_profile_that_cannot_prepare_a_dataset_fails_when_the_grid_is_checked(tmp_path):
    config = copy.deepcopy(BASE)
    config["experiments"]["e-public"]["datasets"] = ["ipums-br"]
    config["experiments"]["e"]["datasets"] = ["ipums-br"]
    paper = _load(tmp_path, config)
    profiles = {"default": {}, "public": {"scale": "public"}}
    with pytest.raises(ConfigError, match=r"profile 'public' cannot prepare dataset 'ipums-br': ipums-br: public "
                                          r"scaling needs a public bound .* attribute 'x0'"):
        ex.check_profiles(paper, profiles, "p.yaml")
    ex.check_profiles(_load(tmp_path, BASE), profiles, "p.yaml")  # bank-dpagd has every bound


def test_paired_curves_take_their_partners_colour_dash_dotted(tmp_path):
    from dperm.report import figures

    style = figures.paired_styles(figures.algorithm_styles(["dp-sgd", "nonprivate"], ["dp-sgd"]),
                                  {"dp-sgd-public": "dp-sgd", "nonprivate-public": "nonprivate"})
    assert style["dp-sgd-public"]["color"] == style["dp-sgd"]["color"]
    assert (style["dp-sgd"]["ls"], style["dp-sgd-public"]["ls"]) == ("-", "-.")
    assert style["nonprivate-public"]["baseline"] == "NonPrivate"
    config = copy.deepcopy(BASE)
    config["figures"] = {"f": {"kind": "epsilon", "experiment": "e-public", "borrow": {"e": ["dp-sgd", "nonprivate"]},
                               "algorithms": ["dp-sgd", "dp-sgd-public", "nonprivate", "nonprivate-public"],
                               "pairs": {"dp-sgd-public": "dp-sgd", "nonprivate-public": "nonprivate"}}}
    paper = _load(tmp_path, config)
    rows = []
    for key, experiment in [("dp-sgd", "e"), ("nonprivate", "e"), ("dp-sgd-public", "e-public"),
                            ("nonprivate-public", "e-public")]:
        base = key.removesuffix("-public")
        for eps in ((0.5, 1.0) if base == "dp-sgd" else (float("inf"),)):
            rows.append(dict(experiment=experiment, dataset="bank-dpagd", model="lr", algorithm=key, label=base,
                             variant="correct", tuning="private", dp_as_implemented=True, setting=str(eps),
                             preprocessing="public-bounds" if key.endswith("public") else "data-dependent",
                             epsilon=eps, epsilon_spent_mean=eps, accuracy_mean=0.8, accuracy_ci95=0.01,
                             objective_mean=0.4, objective_ci95=0.01))
    frame = pd.DataFrame(rows)
    paths = []
    for experiment in ("e-public", "e"):
        paths.append(tmp_path / f"{experiment}.csv")
        frame[frame["experiment"] == experiment].to_csv(paths[-1], index=False)
    from dperm.report.paper_figures import draw

    draw(ex.figure_spec(paper, "f"), paths, tmp_path / "f.png", tmp_path / "f.pdf")
    assert (tmp_path / "f.png").stat().st_size > 0
    config["figures"]["f"]["pairs"] = {"dp-sgd-public": "objpert"}
    with pytest.raises(ConfigError, match=r"figures.f.pairs.dp-sgd-public: pairs two different curves"):
        _load(tmp_path, config)
