"""The algorithm registry: variants are declared once against their base, switches cannot be set
from config, hyper-parameters are checked by name and type, and records hold every algorithm's
extra as JSON."""

from __future__ import annotations

import json

import numpy as np
import pytest

from dperm.algorithms import Privacy, algorithm_names, get_algorithm
from dperm.algorithms.registry import ALGORITHMS, register, register_variant
from dperm.losses import Logistic
from dperm.problem import Problem
from dperm.records import record_json


def test_every_reference_variant_names_its_base_and_repeats_none_of_its_defaults():
    for name in algorithm_names():
        spec = get_algorithm(name)
        if spec.variant != "reference":
            continue
        if spec.base is None:  # a published algorithm with no correct version (PIDP-SGD): labelled, no base
            assert not spec.dp_as_implemented and spec.caveat, name
            continue
        assert spec.base in ALGORITHMS, name
        base = get_algorithm(spec.base)
        if spec.impl is base.impl:  # same implementation: only switches and changed defaults differ
            changed = {k for k in spec.defaults if spec.defaults[k] != base.defaults.get(k)}
            assert changed <= {"batch_sampling"}, (name, changed)
            assert spec.switches != base.switches, name


def test_dp_agd_reference_differs_from_dp_agd_only_where_the_code_does():
    correct, reference = get_algorithm("dp-agd"), get_algorithm("dp-agd-reference")
    assert reference.impl is correct.impl and reference.settings_impl is correct.settings_impl
    assert {k: v for k, v in reference.defaults.items() if correct.defaults[k] != v} == {"batch_sampling": "fixed"}
    assert correct.switches["semantics"] != reference.switches["semantics"]


def test_a_switch_is_not_a_hyper_parameter():
    spec = get_algorithm("sgd-ma")
    with pytest.raises(TypeError, match=r"\['reference'\] of algorithm 'sgd-ma' is fixed by its registration"):
        spec.hyper({"reference": True})
    with pytest.raises(TypeError, match=r"\['gaussian'\] of algorithm 'sgd-adv-reference' is fixed"):
        get_algorithm("sgd-adv-reference").hyper({"gaussian": "analytic"})
    with pytest.raises(TypeError, match=r"unknown hyper-parameter\(s\) \['lr'\] for algorithm 'dp-sgd'; allowed"):
        get_algorithm("dp-sgd").hyper({"lr": 0.1})


@pytest.mark.parametrize("name, key, value, message", [
    ("dp-sgd", "learning_rate", "fast", "must be number; got 'fast'"),
    ("dp-sgd", "batch_size", 2.5, "must be integer; got 2.5"),
    ("dp-sgd", "clip", True, "must be number; got True"),
    ("dp-agd", "batch_sampling", 3, "must be str; got 3"),
    ("dp-agd", "batch_size", "all", "must be integer or null; got .all."),
])
def test_hyper_parameter_types_are_checked(name, key, value, message):
    with pytest.raises(ValueError, match=message):
        get_algorithm(name).check_types({key: value}, "where")
    get_algorithm(name).check_types({key: get_algorithm(name).defaults[key]})  # the default passes


def test_registering_a_variant_with_an_unknown_switch_or_default_fails():
    @register("probe-base", switches={"mode": "a"})
    def fit(problem, privacy, rng, draws=1, *, step: float = 1.0, mode: str = "a"):
        return mode

    try:
        with pytest.raises(TypeError, match="switches"):
            register_variant("probe-x", of="probe-base", switches={"nope": 1})
        with pytest.raises(TypeError, match="defaults"):
            register_variant("probe-y", of="probe-base", defaults={"nope": 1})
        variant = register_variant("probe-z", of="probe-base", switches={"mode": "b"}, caveat="test")
        assert variant.fit(None, None, None) == "b" and ALGORITHMS["probe-base"].fit(None, None, None) == "a"
        assert variant.defaults == {"step": 1.0} and variant.variant == "reference"
    finally:
        for name in ("probe-base", "probe-x", "probe-y", "probe-z"):
            ALGORITHMS.pop(name, None)


def test_record_json_takes_one_value_per_draw_and_refuses_what_a_record_cannot_hold():
    extra = {"per_draw": np.array([1.0, 2.0, 3.0]), "scalar": np.float64(0.5), "nested": {"a": np.int64(2)},
             "off": float("inf"), "text": "x", "one": [7]}
    assert json.loads(record_json(extra, draw=1, draws=3)) == {
        "per_draw": 2.0, "scalar": 0.5, "nested": {"a": 2}, "off": "inf", "text": "x", "one": 7}
    assert json.loads(record_json({"grid": (1, 2)})) == {"grid": [1, 2]}  # without draw: a list stays a list
    with pytest.raises(ValueError, match="'matrix' holds a sequence of 2 non-scalar values"):
        record_json({"matrix": np.zeros((2, 2))}, draw=0, draws=3)


@pytest.mark.parametrize("name", [n for n in algorithm_names()])
def test_every_algorithm_s_extra_fits_in_a_record_and_it_names_its_accounting(name):
    """Every registered algorithm's FitResult.extra is recordable on a small problem, and the
    result says how its epsilon was accounted (the records' accounting column)."""
    rng = np.random.default_rng(0)
    X = np.hstack([np.ones((400, 1)), rng.uniform(size=(400, 3))]) / 2.0
    y = (X[:, 1] > X[:, 2]).astype(float)
    spec = get_algorithm(name)
    hyper = {"rrpsgd": {"max_steps": 50}, "bassily-sgd": {"max_steps": 50}, "dp-sgd": {"batch_size": 50}}.get(name, {})
    if not spec.depends_on_epsilon and spec.private:
        hyper["steps"] = 5
    privacy = Privacy(1.0, 1e-6) if spec.private else Privacy(float("inf"))
    result = spec.fit(Problem(X, y, Logistic(), 1e-3), privacy, np.random.default_rng(1), draws=2, **hyper)
    for d in range(2):
        json.loads(record_json(result.extra, d, 2))
    assert result.accounting, f"{name} does not say how its epsilon was accounted"
    assert ("not private" in result.accounting) == (not spec.private)


def test_the_package_is_walked_once_and_again_only_after_a_walk_that_failed(monkeypatch):
    """Snakemake's input functions ask for an algorithm tens of thousands of times while the
    default target's DAG is built: after the first complete walk, no call lists the package
    again. A walk that fails part way (an import error) leaves the registry to walk again."""
    import pkgutil

    from dperm.algorithms import registry

    algorithm_names()  # a complete walk
    real_walk, walks = pkgutil.walk_packages, []

    def counting_walk(*args, **kwargs):
        walks.append(args)
        raise ImportError("a module failed to import")

    monkeypatch.setattr(pkgutil, "walk_packages", counting_walk)
    for name in ("dp-agd", "dp-sgd", "objpert"):
        assert get_algorithm(name).name == name
    assert walks == []

    registry._load_all.cache_clear()  # as if no walk had finished
    for _ in range(2):
        with pytest.raises(ImportError, match="failed to import"):
            get_algorithm("dp-agd")
    assert len(walks) == 2  # each call walks again while none has finished
    monkeypatch.setattr(pkgutil, "walk_packages", real_walk)
    assert get_algorithm("dp-agd").name == "dp-agd"  # this walk finishes
    monkeypatch.setattr(pkgutil, "walk_packages", counting_walk)
    assert get_algorithm("dp-agd").name == "dp-agd" and len(walks) == 2  # and is not repeated
