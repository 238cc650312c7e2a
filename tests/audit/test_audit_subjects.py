"""The privacy audit: every private algorithm offers cases and gets its mutants, the auditor's
bound is valid and has power (fast controls and mutants are caught here at full strength;
`snakemake audit` runs them all), and correct mechanisms pass the same cases."""

from __future__ import annotations

import numpy as np
import pytest

from dperm import audit
from dperm.algorithms import algorithm_names, get_algorithm
from dperm.algorithms import registry as reg


def test_every_private_algorithm_offers_audit_cases_that_build():
    for name in algorithm_names():
        spec = get_algorithm(name)
        if not spec.private:
            assert spec.audit is None or spec.audit() == [], name
            continue
        assert spec.audit is not None, f"{name} registers no audit cases"
        cases = spec.audit()
        assert cases, name
        for case in cases:
            assert case.d.p == case.d_prime.p and case.runs >= 200
            assert abs(case.d.n - case.d_prime.n) <= 1  # neighbours: one row added, removed or replaced
            assert case.d.n_public == case.d_prime.n_public  # they share the public row count
            spec.hyper(case.hyper)  # every case's settings are the algorithm's hyper-parameters


def test_every_registered_private_algorithm_is_a_subject_and_every_audited_one_has_its_mutants():
    subjects = audit.subjects()
    names = {s.name for s in audit.registered_subjects()}
    assert names == {n for n in algorithm_names() if get_algorithm(n).private}
    mutants = [s for s in subjects if s.mutant is not None]
    for name in algorithm_names():
        spec = get_algorithm(name)
        mine = {s.mutant.name for s in mutants if s.algorithms == (name,)}
        if spec.private and spec.dp_as_implemented:
            assert {"half noise", "sensitivity halved"} <= mine, name
        else:
            assert not mine, name  # a reference variant that is not DP is itself a control
    assert not any(s.expect_private for s in subjects if s.kind == "mutant")
    assert len({audit.slug(s.name) for s in subjects}) == len(subjects)
    add_remove = {n for n in algorithm_names() if any(s.algorithms == (n,) and s.mutant.name == "wrong adjacency"
                                                      for s in mutants)}
    assert {"dp-sgd", "dp-lssgd", "dp-gd-filter", "sgd-ma"} <= add_remove


def test_a_newly_registered_algorithm_gets_its_mutants_by_itself():
    """A throwaway registration: nothing in the audit names it, yet it is a subject with the
    calibration mutants (its Gaussian goes through the privacy core), and they are caught."""
    from dperm.algorithms.audit_worst_case import recorded_sensitivity, white_box_audit
    from dperm.algorithms.base import FitResult, draw_rngs
    from dperm.privacy import gaussian_noise, gaussian_sigma_analytic

    def fit(problem, privacy, rng, draws=1):
        """Mean of y·x (rows clipped to norm 1, labels ±1) plus the analytic Gaussian (replace-one: 2/n)."""
        norms = np.maximum(np.linalg.norm(problem.X, axis=1, keepdims=True), 1.0)
        mean = (problem.y[:, None] * problem.X / norms).mean(axis=0)
        sigma = gaussian_sigma_analytic(privacy.epsilon, privacy.delta, 2.0 / problem.n)
        noise = np.stack([gaussian_noise(sigma=sigma, rng=child, size=problem.p) for child in draw_rngs(rng, draws)])
        return FitResult(weights=mean + noise, epsilon_spent=privacy.epsilon, delta_spent=privacy.delta,
                         adjacency="replace-one", extra={"sensitivity": 2.0 / problem.n})

    hook = white_box_audit("opposed rows", "replace-one", runs=400_000, shift=recorded_sensitivity, n=20,
                           loss="huber-hinge")
    reg.register("throwaway-mean", audit=hook)(fit)
    try:
        found = {s.name: s for s in audit.subjects()}
        assert "throwaway-mean" in found
        half = found["mutant: throwaway-mean, half noise"]
        assert found["mutant: throwaway-mean, sensitivity halved"].mutant.sensitivity == 0.5
        rows = audit.run_subject(found["throwaway-mean"], scale=0.25) + audit.run_subject(half, scale=0.25)
        assert [r["verdict"] for r in rows] == ["passes", "caught"]
        assert rows[0]["achieved_ratio"] == pytest.approx(1.0, abs=1e-9)
    finally:
        del reg.ALGORITHMS["throwaway-mean"]


def test_the_bound_is_valid_on_identical_mechanisms_and_sees_a_clear_shift():
    rng = np.random.default_rng(0)
    same = audit.best_event_bound(rng.normal(size=20_000), rng.normal(size=20_000), delta=0.0)
    assert same[0] <= 0.1  # same law on both sides: (almost) nothing to find
    shifted = audit.best_event_bound(rng.normal(size=20_000), rng.normal(2.0, 1.0, size=20_000), delta=0.0)
    assert shifted[0] > 1.5


@pytest.mark.parametrize("name, scale", [
    ("noisy max, scale for general scores", 1.0), ("mutant: noisy max assuming monotone scores", 1.0),
    ("outpert-reference", 1.0), ("dp-agd-reference", 1.0),
    ("Gumbel selection, monotone scale", 1.0), ("mutant: Gumbel selection at twice its epsilon", 1.0),
    ("Gumbel selection, general scale", 1.0), ("mutant: Gumbel selection assuming monotone scores", 1.0),
    ("outpert-exact", 0.2), ("mutant: outpert-exact, half noise", 0.2), ("mutant: adv, no noise", 0.1),
    ("mutant: adv, sensitivity quartered", 0.5), ("mutant: dp-gd-filter, true row count", 1.0),
    ("mutant: dp-gd-filter, never drops a row", 1.0)])
def test_fast_controls_are_caught_and_their_correct_counterparts_pass(name, scale):
    rows = audit.run_subject(audit.subject(name), seed=0, scale=scale)
    assert rows and audit.audit_ok(rows), rows
    assert any(r["verdict"] == "caught" for r in rows) or all(r["expected"] == "private" for r in rows)
    for row in rows:
        if row["expected"] == "private":
            assert row["epsilon_lower"] <= row["epsilon_claimed"]


def test_a_sensitivity_mutant_with_a_linear_calibration_stands_on_the_half_noise_row():
    rows = audit.run_subject(audit.subject("mutant: outpert-exact, sensitivity halved"))
    assert {r["verdict"] for r in rows} == {audit.SAME_AS_HALF_NOISE} and all(r["runs"] == 0 for r in rows)
    rows = audit.run_subject(audit.subject("mutant: dp-sgd, sensitivity halved"))
    assert {r["verdict"] for r in rows} == {audit.NOT_APPLICABLE}  # a noise multiplier of the clip


def test_a_reduced_audit_has_no_power_and_says_so():
    """At a tiny fraction of the runs the half-noise mutant is no longer caught: the verdict says
    NOT CAUGHT (and, with no reason stated for it, the audit fails) instead of passing silently."""
    rows = audit.run_subject(audit.subject("mutant: outpert-exact, half noise"), seed=0, scale=0.002)
    assert rows[0]["runs"] == 200 and rows[0]["verdict"] == "NOT CAUGHT" and not audit.audit_ok(rows)


def test_a_mutant_the_audit_cannot_catch_says_why_and_does_not_fail_the_audit():
    """The black box's half noise: its cases move the release by Δ_F, half the Δ_α its noise
    covers, so half the noise stays within the claim; the row carries the declared reason."""
    subject = audit.subject("mutant: outpert-blackbox, half noise")
    assert subject.limit
    rows = audit.run_subject(subject, scale=0.2)
    assert rows and all(r["verdict"] == "NOT CAUGHT" and r["reason"] == subject.limit for r in rows)
    assert all(r["achieved_ratio"] == pytest.approx(0.5, abs=0.01) for r in rows)
    assert audit.audit_ok(rows)
