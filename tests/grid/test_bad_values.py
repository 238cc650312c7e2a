"""Every bad value is refused before anything runs, naming the file, the key, the value and what is
allowed: hyper-parameter domains, what an algorithm needs of its privacy target, batch sizes
larger than the data, duplicate YAML keys, and 1e-8 read as the number it is."""

from __future__ import annotations

import copy
import math

import pytest
from conftest import REPO, load_config

from dperm import grid as ex
from dperm.algorithms import algorithm_names, get_algorithm
from dperm.config import ConfigError, load_yaml_text, read_yaml, validate

BASE = {
    "paper": "p",
    "models": {"lr": {"loss": "logistic", "l2": 0.01}},
    "algorithms": {"nonprivate": {}, "dp-sgd": {"epochs": 2, "batch_size": 50}, "objpert": {}},
    "experiments": {"e": {"datasets": ["wine"], "models": ["lr"], "algorithms": ["nonprivate", "dp-sgd", "objpert"],
                          "epsilons": [0.5, 1.0], "delta": 1e-6, "protocol": {"kind": "kfold", "folds": 5}}},
}


def _with(change):
    config = copy.deepcopy(BASE)
    change(config)
    return config


def test_every_registered_hyper_parameter_has_a_domain_that_admits_its_default():
    for name in algorithm_names():
        spec = get_algorithm(name)
        assert set(spec.domains) == set(spec.defaults), (
            f"{name}: hyper-parameters without a domain {sorted(set(spec.defaults) - set(spec.domains))}, "
            f"domains without a hyper-parameter {sorted(set(spec.domains) - set(spec.defaults))}")
        for key, value in spec.defaults.items():
            assert spec.domains[key].admits(value), f"{name}: default {key}={value!r} outside {spec.domains[key].text}"


def test_every_private_algorithm_says_what_it_needs_of_its_target():
    """A private algorithm calibrated to ε states at least that it needs a finite one."""
    for name in algorithm_names():
        spec = get_algorithm(name)
        if spec.private and spec.depends_on_epsilon:
            assert spec.unmet_needs(math.inf, 1e-6, {}) or spec.defaults.get("noise_multiplier") is not None, name


@pytest.mark.parametrize("change, message", [
    (lambda c: c["algorithms"]["dp-sgd"].update(clip=-1.0),
     r"algorithms.dp-sgd: hyper-parameter 'clip' of algorithm 'dp-sgd' must be a finite number > 0; got -1.0"),
    (lambda c: c["algorithms"]["dp-sgd"].update(learning_rate=0),
     r"'learning_rate' of algorithm 'dp-sgd' must be a finite number > 0; got 0"),
    (lambda c: c["algorithms"]["dp-sgd"].update(epochs=0),
     r"'epochs' of algorithm 'dp-sgd' must be a finite number > 0; got 0"),
    (lambda c: c["algorithms"]["dp-sgd"].update(batch_size=0),
     r"'batch_size' of algorithm 'dp-sgd' must be an integer >= 1; got 0"),
    (lambda c: c["algorithms"]["dp-sgd"].update(accountant="moments"),
     r"'accountant' of algorithm 'dp-sgd' must be one of \['pld', 'rdp'\]; got 'moments'"),
    (lambda c: c["algorithms"]["objpert"].update(adjacency="swap"),
     r"'adjacency' of algorithm 'objpert' must be one of \['replace-one', 'add-remove'\]; got 'swap'"),
    (lambda c: c["experiments"]["e"].update(hyper={"dp-sgd": {"clip": float("nan")}}),
     r"experiments.e.hyper.dp-sgd: hyper-parameter 'clip' .* must be a finite number > 0; got nan"),
    (lambda c: c["experiments"]["e"].update(delta=0),
     r"experiments.e: algorithm 'dp-sgd' \(dp-sgd\) needs delta > 0 .*epsilon=0.5, delta=0"),
    (lambda c: c["experiments"]["e"].update(epsilons=[1.0, float("inf")]),
     r"experiments.e: algorithm 'dp-sgd' \(dp-sgd\) needs a finite epsilon; .*epsilon=inf"),
    (lambda c: c["experiments"]["e"].update(delta=1.0), r"experiments.e.delta"),
    (lambda c: c["experiments"]["e"].update(epsilons=[-1.0]), r"experiments.e.epsilons\[0\]"),
])
def test_a_bad_value_is_refused_naming_the_key_the_value_and_what_is_allowed(tmp_path, change, message):
    with pytest.raises(ConfigError, match=message):
        load_config(tmp_path, _with(change))


def test_every_value_of_a_tuning_grid_is_checked_not_only_the_first(tmp_path):
    config = _with(lambda c: c.update(tuning={"experiments": ["e"], "hyper": [
        {"algorithm": "dp-sgd", "grid": {"clip": [1.0, -2.0]}, "epsilons": [1.0]}]}))
    with pytest.raises(ConfigError, match=r"tuning.hyper\[dp-sgd\]: hyper-parameter 'clip' .* got -2.0"):
        load_config(tmp_path, config)


def test_an_explicit_noise_multiplier_waives_the_finite_epsilon_dp_sgd_needs(tmp_path):
    config = _with(lambda c: c["experiments"]["e"].update(algorithms=["dp-sgd"], epsilons=[float("inf")],
                                                          hyper={"dp-sgd": {"noise_multiplier": 1.0}}))
    assert ex.cells(load_config(tmp_path, config))
    config["experiments"]["e"]["hyper"] = {}
    with pytest.raises(ConfigError, match="needs a finite epsilon"):
        load_config(tmp_path, config)


def _profiles():
    return read_yaml(REPO / "config" / "config.yaml")["profiles"]


def test_a_batch_larger_than_the_training_rows_is_refused(tmp_path):
    # wine has 6497 rows; a 5-fold split trains on at most 6497 - 1299 = 5198 of them
    paper = load_config(tmp_path, _with(lambda c: c["algorithms"]["dp-sgd"].update(batch_size=5199)))
    with pytest.raises(ConfigError, match=r"experiment 'e', algorithm 'dp-sgd', dataset 'wine': batch_size=5199 "
                                          r"exceeds the at most 5198 training rows"):
        ex.check_profiles(paper, _profiles(), "p.yaml")
    ex.check_profiles(load_config(tmp_path, _with(lambda c: c["algorithms"]["dp-sgd"].update(batch_size=5198))),
                      _profiles(), "p.yaml")


def test_a_batch_in_a_tuning_grid_is_checked_against_the_rows_too(tmp_path):
    config = _with(lambda c: c.update(tuning={"experiments": ["e"], "hyper": [
        {"algorithm": "dp-sgd", "grid": {"batch_size": [64, 10_000]}, "epsilons": [1.0]}]}))
    with pytest.raises(ConfigError, match="batch_size=10000 exceeds"):
        ex.check_profiles(load_config(tmp_path, config), _profiles(), "p.yaml")


def test_a_subsampling_profile_bounds_the_rows_by_its_sample(tmp_path):
    profiles = {**_profiles(), "small": {"subsample": {"rows": 100, "seed": 0}}}

    def small(config):
        config["experiments"]["e"].update(profile="small", protocol={"kind": "holdout", "test_fraction": 0.6})

    with pytest.raises(ConfigError, match="batch_size=50 exceeds the at most 40 training rows"):
        ex.check_profiles(load_config(tmp_path, _with(small)), profiles, "p.yaml")


def test_a_key_given_twice_is_refused_naming_both_lines():
    text = "paper: p\nmodels:\n  lr: {loss: logistic}\n  lr: {loss: hinge}\n"
    with pytest.raises(ConfigError, match=r"p.yaml:4: .*key 'lr' appears twice in one mapping \(first on line 3, "
                                          r"again on line 4\)"):
        load_yaml_text(text, "p.yaml")


def test_a_merge_key_s_values_may_be_overridden_but_explicit_keys_may_not_repeat():
    text = "a: &x {b: 1, c: 2}\nd: {<<: *x, c: 3}\n"
    assert load_yaml_text(text, "p.yaml") == {"a": {"b": 1, "c": 2}, "d": {"b": 1, "c": 3}}
    with pytest.raises(ConfigError, match="key 'c' appears twice"):
        load_yaml_text("a: &x {b: 1}\nd: {<<: *x, c: 3, c: 4}\n", "p.yaml")


def test_exponent_notation_is_a_number_in_files_and_in_strings_snakemake_passes():
    assert load_yaml_text("delta: 1e-8\nrows: 1E6\nname: e1\n", "x") == {"delta": 1e-8, "rows": 1e6, "name": "e1"}
    # Snakemake's own loader leaves 1e-8 a string in a --configfile; the schema reads it as the number
    config = read_yaml(REPO / "config" / "config.yaml")
    config["data"]["timeout"] = "1e2"
    assert validate(config, "config", "c.yaml")["data"]["timeout"] == 100
    config["data"]["timeout"] = "soon"
    with pytest.raises(ConfigError, match="data.timeout"):
        validate(config, "config", "c.yaml")
