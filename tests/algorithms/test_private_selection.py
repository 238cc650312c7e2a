"""private-selection: the per-trial budget meets the cell's (ε, δ) as dp-accounting computes it,
K follows its law inside the algorithm, K = 0 releases the fixed output, the score's
sensitivity, refusals of bases without an RDP statement, config checks at load time,
determinism, and its audit (the noiseless-score mutant is caught, the algorithm passes)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from dperm import audit
from dperm.algorithms import Privacy, get_algorithm
from dperm.algorithms import private_selection as ps
from dperm.fingerprint import _algorithm_modules
from dperm.losses import Hinge, Logistic
from dperm.privacy import zcdp_from_dp
from dperm.privacy.rdp import DEFAULT_RDP_ORDERS
from dperm.privacy.selection import TrialCount, pure_dp_rdp
from dperm.problem import Problem

SPEC = get_algorithm("private-selection")
ORDERS = np.array(DEFAULT_RDP_ORDERS)


def problem(n=600, p=5, seed=0, l2=1e-3, loss=None):
    rng = np.random.default_rng(seed)
    X = np.hstack([np.ones((n, 1)), rng.uniform(size=(n, p - 1))]) / math.sqrt(p)
    y = (X[:, 1] - X[:, 2] + 0.05 * rng.normal(size=n) > 0).astype(float)
    loss = loss or Logistic()
    if loss.labels == "pm1":
        y = 2 * y - 1
    return Problem(X, y, loss, l2)


def _rdp_of(event, relation):
    from dp_accounting.rdp import RdpAccountant

    accountant = RdpAccountant(list(ORDERS), relation)
    accountant.compose(event)
    return np.array(accountant.rdp)


def _dp_accounting_epsilon(trial, mean, shape, delta, relation=None):
    """The selection's ε by dp-accounting alone, through its public API: an RdpAccountant
    composing RepeatAndSelectDpEvent of the trial's DpEvent, and its own conversion."""
    import dp_accounting
    from dp_accounting.dp_event import RepeatAndSelectDpEvent
    from dp_accounting.rdp import RdpAccountant

    accountant = RdpAccountant(list(ORDERS), relation or dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE)
    accountant.compose(RepeatAndSelectDpEvent(trial, mean, shape))
    return accountant.get_epsilon(delta)


@pytest.mark.parametrize("distribution, eta, shape", [("truncated-negative-binomial", 0.0, 0.0),
                                                      ("truncated-negative-binomial", 1.0, 1.0),
                                                      ("poisson", 0.0, math.inf)])
@pytest.mark.parametrize("epsilon", [0.1, 1.6])
def test_a_dp_agd_selection_spends_its_target_as_dp_accounting_computes_it(distribution, eta, shape, epsilon):
    """Base DP-AGD (ρ-zCDP, ρ from the per-trial budget): the selection's certified ε is the
    target, and dp-accounting's own RepeatAndSelect accounting of the same ρ agrees."""
    delta = 1e-8
    result = SPEC.fit(problem(), Privacy(epsilon, delta), np.random.default_rng(1), draws=2, base="dp-agd",
                      grid={"l2": [1e-4, 1e-2]}, trials=4.0, distribution=distribution, eta=eta,
                      base_hyper={"splits": 5})
    assert result.epsilon_spent <= epsilon and result.epsilon_spent == pytest.approx(epsilon, rel=1e-5)
    t = float(result.extra["trial_epsilon"][0])
    rho = zcdp_from_dp(t, delta)
    assert f"rho={rho:.6g}-zCDP" in result.accounting
    from dp_accounting.dp_event import ZCDpEvent

    theirs = _dp_accounting_epsilon(ZCDpEvent(rho), 4.0, shape, delta)
    assert theirs == pytest.approx(epsilon, rel=2e-3)  # their γ by bisection, their conversion's KL branch
    assert ("Theorem 6" if distribution == "poisson" else "Theorem 2") in result.accounting
    assert result.adjacency == "add-remove"


def test_an_objpert_selection_runs_pure_trials_and_spends_its_target():
    delta, epsilon = 1e-8, 0.8
    result = SPEC.fit(problem(), Privacy(epsilon, delta), np.random.default_rng(2), draws=2, base="objpert",
                      grid={"l2": [1e-3, 1e-1]}, trials=6.0, eta=0.5)
    t = float(result.extra["trial_epsilon"][0])
    assert result.extra["trial_guarantee"] == f"epsilon={t:.6g}-DP" and result.adjacency == "replace-one"
    import dp_accounting
    from dp_accounting.dp_event import RandomizedResponseDpEvent

    trial = RandomizedResponseDpEvent(2.0 / (1.0 + math.exp(t)), 2)  # binary randomized response: the ε-DP curve
    assert np.allclose(pure_dp_rdp(t, ORDERS), _rdp_of(trial, dp_accounting.NeighboringRelation.REPLACE_ONE))
    theirs = _dp_accounting_epsilon(trial, 6.0, 0.5, delta, dp_accounting.NeighboringRelation.REPLACE_ONE)
    assert theirs == pytest.approx(result.epsilon_spent, rel=2e-3) and result.epsilon_spent <= epsilon


def test_outpert_trials_are_gaussian_mechanisms_and_the_grid_includes_its_steps():
    result = SPEC.fit(problem(), Privacy(0.4, 1e-6), np.random.default_rng(3), draws=4, base="outpert",
                      grid={"l2": [1e-3, 1e-2], "steps": [5, 20], "learning_rate": [0.5, 1.0]}, trials=5.0)
    assert result.adjacency == "replace-one" and "-zCDP" in result.extra["trial_guarantee"]
    for chosen in result.extra["chosen"]:
        assert set(chosen) == {"l2", "steps", "learning_rate"}


def test_selection_is_deterministic_and_each_draw_depends_on_its_seed():
    kwargs = dict(base="outpert", grid={"l2": [1e-3, 1e-1]}, trials=4.0)
    a = SPEC.fit(problem(), Privacy(1.0, 1e-6), np.random.default_rng(5), draws=3, **kwargs)
    b = SPEC.fit(problem(), Privacy(1.0, 1e-6), np.random.default_rng(5), draws=3, **kwargs)
    c = SPEC.fit(problem(), Privacy(1.0, 1e-6), np.random.default_rng(6), draws=3, **kwargs)
    assert np.array_equal(a.weights, b.weights) and a.extra["chosen"] == b.extra["chosen"]
    assert np.array_equal(a.extra["trials"], b.extra["trials"])
    assert not np.array_equal(a.weights, c.weights)
    assert len({tuple(w) for w in a.weights}) == 3  # the draws are distinct releases


@pytest.mark.parametrize("count", [TrialCount("truncated-negative-binomial", 5.0, 0.5), TrialCount("poisson", 3.0)],
                         ids=["tnb", "poisson"])
def test_the_number_of_trials_inside_the_algorithm_follows_its_law(count):
    """3,000 releases on a small problem (OutPert trials share their descent path): K's empirical
    law against the pmf (chi-square at a fixed seed) and its mean."""
    result = SPEC.fit(problem(n=60), Privacy(1.0, 1e-6), np.random.default_rng(7), draws=3000, base="outpert",
                      grid={"l2": [1e-2]}, base_hyper={"steps": 2}, trials=count.mean,
                      distribution=count.distribution, eta=count.eta)
    k = np.asarray(result.extra["trials"])
    assert np.array_equal(k, result.iterations)
    assert k.mean() == pytest.approx(count.mean, rel=0.05)
    top = 12
    pmf = count.pmf(top)
    observed = np.bincount(np.minimum(k, top + 1), minlength=top + 2)[: top + 2].astype(float)
    expected = np.append(pmf, 1.0 - pmf.sum()) * len(k)
    keep = expected > 5
    obs, exp_ = observed[keep], expected[keep]
    assert stats.chisquare(obs, exp_ * obs.sum() / exp_.sum()).pvalue > 1e-3


def test_no_trial_releases_the_fixed_public_output():
    result = SPEC.fit(problem(), Privacy(1.0, 1e-6), np.random.default_rng(8), draws=200, base="outpert",
                      grid={"l2": [1e-2]}, trials=0.4, distribution="poisson")
    none = np.asarray(result.extra["trials"]) == 0
    assert 0.55 < none.mean() < 0.8  # e^{-0.4} = 0.67
    assert (result.weights[none] == 0).all() and (np.abs(result.weights[~none]).sum(axis=1) > 0).all()
    assert all(c is None for c, empty in zip(result.extra["chosen"], none) if empty)
    assert any("K = 0" in note for note in result.notes)


def test_a_clear_winner_is_chosen_at_a_generous_budget():
    """λ = 100 leaves w ≈ 0 (validation loss ln 2), λ = 1e-4 learns: with a large budget the
    private score picks the learner whenever a trial tried it (K ~ Poisson(10): all trials draw
    λ = 100 with probability E[2^−K] = e^−5)."""
    result = SPEC.fit(problem(n=2000), Privacy(50.0, 1e-6), np.random.default_rng(9), draws=60, base="objpert",
                      grid={"l2": [1e-4, 100.0]}, trials=10.0, distribution="poisson")
    chosen = [c["l2"] for c in result.extra["chosen"]]
    assert np.mean(np.array(chosen) == 1e-4) > 0.95


@pytest.mark.parametrize("score", ["loss", "accuracy"])
@pytest.mark.parametrize("loss", [Logistic(), Hinge()])
def test_the_score_moves_by_at_most_its_sensitivity_between_neighbours(score, loss):
    """The private count on the validation rows: adding, removing or replacing one row moves it
    by at most C (clipped loss sum) or 1 (correct predictions), for any weights."""
    rng = np.random.default_rng(10)
    prob = problem(n=50, loss=loss)
    W = rng.normal(scale=5.0, size=(40, prob.p))
    rows = np.arange(30)
    clip, bound = 0.7, (0.7 if score == "loss" else 1.0)
    base = ps._score_sums(prob, W, rows, score, clip)
    for other in (rows[:-1], np.append(rows, 40), np.append(rows[:-1], 45)):  # remove, add, replace
        assert (np.abs(ps._score_sums(prob, W, other, score, clip) - base) <= bound + 1e-9).all()


def test_the_split_is_independent_coins_shared_by_neighbours():
    train, val = ps._split(np.random.default_rng(1), 10_000, 0.2)
    assert abs(len(val) / 10_000 - 0.2) < 0.02 and len(train) + len(val) == 10_000
    # a neighbour with one more row: the first n rows get the same coins
    train2, val2 = ps._split(np.random.default_rng(1), 10_001, 0.2)
    assert np.array_equal(val2[val2 < 10_000], val)


@pytest.mark.parametrize("base, why", [("sgd-adv", "no Renyi-DP guarantee"), ("sgd-ma", "computed from a step count"),
                                       ("nonprivate", "not private"), ("dp-agd-reference", "no Renyi-DP"),
                                       ("no-such", "not a registered algorithm")])
def test_a_base_without_an_rdp_statement_is_refused_by_name(base, why):
    with pytest.raises(ValueError, match=why) as err:
        SPEC.fit(problem(), Privacy(1.0, 1e-6), np.random.default_rng(0), base=base)
    assert repr(base) in str(err.value) and "allowed bases: ['dp-agd', 'objpert', 'outpert'" in str(err.value)


@pytest.mark.parametrize("given, message", [
    ({"base": "sgd-adv"}, "'sgd-adv' cannot be a base"),
    ({"grid": {"stepz": [1, 2]}}, "['stepz'] are not hyper-parameters of base 'dp-agd'"),
    ({"base": "outpert", "grid": {"steps": ["many"]}}, "hyper-parameter 'steps' of algorithm 'outpert' must be"),
    ({"grid": {"l2": 0.1}}, "non-empty lists"),
    ({"grid": {"l2": [-1.0]}}, "grid.l2 must list numbers >= 0"),
    ({"distribution": "geometric"}, "distribution must be one of"),
    ({"trials": 0.5}, "trials (the mean number of trials) must be"),
    ({"validation_fraction": 1.0}, "'validation_fraction' of algorithm 'private-selection' must be a number in (0, 1)"),
    ({"score": "auc"}, "'score' of algorithm 'private-selection' must be one of ['loss', 'accuracy']; got 'auc'"),
])
def test_bad_settings_fail_when_the_grid_is_loaded(given, message):
    with pytest.raises(ValueError) as err:
        SPEC.check_types(given, "config/papers/x.yaml: algorithms.sel")
    assert "config/papers/x.yaml: algorithms.sel" in str(err.value) and message in str(err.value)


def test_every_base_s_code_is_in_a_selection_cell_s_fingerprint():
    modules = _algorithm_modules(SPEC.impl.__module__)
    for name in ps.allowed_bases():
        assert get_algorithm(name).impl.__module__ in modules, name


def test_records_say_what_was_released_and_what_it_cost():
    from dperm.records import record_json

    result = SPEC.fit(problem(), Privacy(0.5, 1e-6), np.random.default_rng(4), draws=2, base="outpert",
                      grid={"l2": [1e-3, 1e-2]}, trials=3.0)
    import json

    extra = json.loads(record_json(result.extra, 1, 2))
    assert set(extra) >= {"base", "trials", "trial_epsilon", "trial_guarantee", "chosen", "chosen_score"}
    assert extra["chosen"]["l2"] in (1e-3, 1e-2) and extra["trials"] >= 1


def test_the_audit_catches_a_noiseless_score_and_passes_the_selection():
    """At a fifth of the audit's runs (the full audit runs all of them)."""
    for name, expected in (("mutant: private-selection, noiseless validation score", "caught"),
                           ("private-selection", "passes")):
        rows = audit.run_subject(audit.subject(name), seed=0, scale=0.2)
        assert [r["verdict"] for r in rows] == [expected], rows


def test_dp_agd_trials_over_lambda_share_one_call_and_release_what_separate_calls_release(monkeypatch):
    """The trials of candidates that differ in λ alone run as one DP-AGD call (its chains share
    their passes over the training part), each from its candidate's generator: the same trials,
    choices and releases as one call per candidate, up to the last bits of the shared products."""
    import dperm.algorithms.dp_agd as dp_agd_module

    kwargs = dict(base="dp-agd", grid={"l2": [0.0, 1e-4, 1e-2], "splits": [10, 20]}, base_hyper={"n_steps": 10},
                  trials=6.0, distribution="poisson")
    calls = []
    real = dp_agd_module.run_chains

    def counting(problem, privacy, rngs, *args, **hyper):
        calls.append(len(rngs))
        return real(problem, privacy, rngs, *args, **hyper)

    monkeypatch.setattr(dp_agd_module, "run_chains", counting)
    shared = SPEC.fit(problem(n=800), Privacy(2.0, 1e-6), np.random.default_rng(11), draws=3, **kwargs)
    grouped_calls = list(calls)
    calls.clear()
    monkeypatch.setattr(ps, "_fit_groups", lambda spec, trials, used: [[c] for c in used])
    alone = SPEC.fit(problem(n=800), Privacy(2.0, 1e-6), np.random.default_rng(11), draws=3, **kwargs)
    # at most two calls (one per value of splits) against one per candidate drawn
    assert len(grouped_calls) <= 2 < len(calls) and sum(grouped_calls) == sum(calls)
    assert shared.extra["chosen"] == alone.extra["chosen"]
    np.testing.assert_array_equal(shared.extra["trials"], alone.extra["trials"])
    np.testing.assert_array_equal(shared.grad_evals, alone.grad_evals)
    np.testing.assert_allclose(shared.weights, alone.weights, rtol=1e-9, atol=1e-12)


def test_only_candidates_that_differ_in_lambda_alone_are_grouped():
    spec = get_algorithm("dp-agd")
    tr = ps._Trials(spec, ps.candidates({"l2": [0.0, 0.1], "splits": [10, 20]}), {}, problem(), np.arange(10), 10)
    # candidates in order (l2, splits): (0, 10), (0, 20), (0.1, 10), (0.1, 20)
    assert ps._fit_groups(spec, tr, [0, 1, 2, 3]) == [[0, 2], [1, 3]]
    assert ps._fit_groups(spec, tr, [1, 2]) == [[1], [2]]
    outpert = get_algorithm("outpert")
    tr = ps._Trials(outpert, ps.candidates({"l2": [0.0, 0.1]}), {}, problem(), np.arange(10), 10)
    assert ps._fit_groups(outpert, tr, [0, 1]) == [[0], [1]]  # a base without fit_trials: one call each
    assert ps._same({"init": np.zeros(2)}, {"init": np.zeros(2)})
    assert not ps._same({"init": np.zeros(2)}, {"init": np.ones(2)}) and not ps._same({"a": 1}, {"a": 2})
