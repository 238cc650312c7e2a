"""The lecture notes' DP-GD and DP-SGD (Lemmas 15.1 and 15.5), their refusals, accountants, audit
cases, and the lecture plugin's lab and analyses."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from dperm.algorithms import Privacy, get_algorithm
from dperm.algorithms.lecture.theory import gd_sigma_notes, sgd_min_steps, sgd_sigma_notes
from dperm.losses import Logistic
from dperm.privacy import epsilon_sampled_gaussian
from dperm.privacy.pld import epsilon_sampled_gaussian_wor
from dperm.problem import Problem


def _problem(n=300, p=4, l2=0.0, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p)) / math.sqrt(p)
    y = (X @ np.ones(p) + 0.5 * rng.normal(size=n) > 0).astype(float)
    return Problem(X, y, Logistic(), l2)


@pytest.mark.parametrize("eps,delta,T,n,L", [(0.5, 1e-5, 100, 2000, 1.0), (1.6, 1e-8, 50, 36000, 1.0),
                                             (0.1, 1e-6, 10, 500, 2.5)])
def test_dp_gd_sigma_is_lemma_15_1(eps, delta, T, n, L):
    sigma = gd_sigma_notes(eps, delta, T, n, L)["sigma"]
    assert sigma ** 2 == pytest.approx(64 * L**2 * T * math.log(2 / delta) * math.log(2.5 * T / delta)
                                       / (n**2 * eps**2), rel=1e-12)


@pytest.mark.parametrize("eps,delta,n,L", [(0.5, 1e-5, 2000, 1.0), (1.0, 1e-5, 256, 1.0), (8.0, 1e-5, 512, 1.0)])
def test_dp_sgd_sigma_is_lemma_15_5_and_certified(eps, delta, n, L):
    T = n * n
    cal = sgd_sigma_notes(eps, delta, T, n, L)
    assert cal["sigma"] ** 2 == pytest.approx(64 * L**2 * T * math.log(2 / delta) * math.log(2.5 * T / (delta * n))
                                              / (n**2 * eps**2), rel=1e-12)
    assert cal["certified_epsilon"] <= eps and cal["epsilon_base"] < 1


def test_dp_sgd_refuses_where_the_notes_condition_fails_and_names_the_smallest_T():
    eps, delta, n = 0.2, 1e-8, 36000
    T = sgd_min_steps(eps, delta, n)
    with pytest.raises(ValueError, match=f"use at least T = {T} steps"):
        sgd_sigma_notes(eps, delta, T - 1, n, 1.0)
    assert sgd_sigma_notes(eps, delta, T, n, 1.0)["epsilon_base"] < 1.0
    with pytest.raises(ValueError, match="n\\*epsilon_step < 1"):
        get_algorithm("dp-sgd-lecture").fit(_problem(n=300), Privacy(5.0, 1e-5), np.random.default_rng(0), steps=50)


def test_tight_accountants_need_less_noise_in_the_right_order():
    problem = _problem()
    sig = {}
    for acc in ("notes", "rdp", "pld"):
        res = get_algorithm("dp-gd-lecture").fit(problem, Privacy(1.0, 1e-5), np.random.default_rng(0), steps=20,
                                                accountant=acc)
        sig[acc] = res.extra["sigma"]
        assert res.adjacency == "replace-one" and res.accounting
    assert sig["notes"] > 5 * sig["rdp"] and sig["rdp"] > sig["pld"]
    # DP-GD's PLD is the exact T-fold Gaussian: multiplier z/sqrt(T) is one Gaussian's, checked by RDP at q = 1
    z = sig["pld"] / (2.0 / problem.n)
    assert epsilon_sampled_gaussian(1.0, z, 20, 1e-5) > 1.0 >= 0.9 * epsilon_sampled_gaussian(1.0, z, 20, 1e-5)
    notes = get_algorithm("dp-sgd-lecture").fit(problem, Privacy(1.0, 1e-5), np.random.default_rng(0),
                                               steps_rule="condition")
    rdp = get_algorithm("dp-sgd-lecture").fit(problem, Privacy(1.0, 1e-5), np.random.default_rng(0),
                                             steps_rule="condition", accountant="rdp")
    assert notes.iterations == rdp.iterations == max(problem.n, sgd_min_steps(1.0, 1e-5, problem.n))
    assert rdp.extra["sigma"] < notes.extra["sigma"]
    z = rdp.extra["noise_multiplier"]
    assert epsilon_sampled_gaussian_wor(problem.n, 1, z, rdp.iterations, 1e-5) <= 1.0
    assert epsilon_sampled_gaussian_wor(problem.n, 1, z * 0.99, rdp.iterations, 1e-5) > 1.0


def test_no_pld_for_the_one_example_sampler():
    with pytest.raises(ValueError, match="no PLD for this sampler"):
        get_algorithm("dp-sgd-lecture").fit(_problem(), Privacy(1.0, 1e-5), np.random.default_rng(0), steps=2000,
                                            accountant="pld")


def test_projection_keeps_the_iterates_in_the_ball_and_draws_are_independent():
    problem = _problem(l2=0.5)
    algo = get_algorithm("dp-sgd-lecture")
    res = algo.fit(problem, Privacy(1.0, 1e-5), np.random.default_rng(3), draws=3, steps=3000,
                   step_size="strongly-convex", radius=0.7)
    assert (np.linalg.norm(res.weights, axis=1) <= 0.7 + 1e-12).all()
    again = algo.fit(problem, Privacy(1.0, 1e-5), np.random.default_rng(3), draws=3, steps=3000,
                     step_size="strongly-convex", radius=0.7)
    np.testing.assert_array_equal(res.weights, again.weights)
    from dperm.algorithms.base import draw_rngs
    from dperm.algorithms.lecture.theory import run_projected

    rngs = draw_rngs(np.random.default_rng(9), 3)
    three = run_projected(problem, rngs, 500, batch="one", sigma=2.0, clip=1.0, mode="constant", learning_rate=0.1,
                          radius=None, output="last")
    rngs = draw_rngs(np.random.default_rng(9), 3)
    one = run_projected(problem, rngs[:1], 500, batch="one", sigma=2.0, clip=1.0, mode="constant",
                        learning_rate=0.1, radius=None, output="last")
    np.testing.assert_allclose(three[0], one[0], rtol=1e-10, atol=1e-12)


def test_noiseless_limit_of_dp_gd_reaches_the_optimum():
    """At huge ε the noise vanishes and the projected GD converges (the update is right)."""
    problem = _problem(l2=0.1)
    res = get_algorithm("dp-gd-lecture").fit(problem, Privacy(1e6, 0.5), np.random.default_rng(0), steps=400,
                                            learning_rate=1.0, accountant="rdp")
    from scipy.optimize import minimize

    best = minimize(lambda w: problem.value_and_grad(w), np.zeros(problem.p), jac=True, method="L-BFGS-B").fun
    assert problem.value(res.weights[0]) == pytest.approx(best, abs=1e-4)


@pytest.mark.parametrize("name", ["dp-gd-lecture", "dp-sgd-lecture"])
def test_audit_cases_build_and_a_fit_runs_on_them(name):
    algo = get_algorithm(name)
    cases = algo.audit()
    assert cases
    for case in cases:
        for data in (case.d, case.d_prime):
            res = algo.fit(data, case.privacy, np.random.default_rng(0), draws=4, **case.hyper)
            W = res.weights
            scores = case.statistic(W, (W[0], W[1])) if case.white_box else case.statistic(W)
            assert W.shape == (4, data.p) and np.isfinite(scores).all()


def test_lab_orders_the_accountants():
    from dperm.papers.lecture.lab import ACCOUNTANTS, epsilon_curves, ratio_table, sigma_table

    spec = {"delta": 1e-5, "settings": [{"q": 0.01, "sigma": 2.0}], "steps": [10, 1000], "reference_steps": [1000],
            "sigma_targets": [{"epsilon": 1.0, "q": 0.01, "steps": 1000}]}
    curves = epsilon_curves(spec)
    wide = curves.pivot_table(index="steps", columns="accountant", values="epsilon")
    for _, row in wide.iterrows():
        assert row["advanced"] > row["moments32"] >= row["moments"] >= row["rdp"] * 0.999 and row["rdp"] > row["pld"]
    ratios = ratio_table(curves, [1000])
    assert len(ratios) == 1 and (ratios[list(ACCOUNTANTS)] > 0).all(axis=None)
    sigmas = sigma_table(spec).iloc[0]
    assert sigmas["sigma_advanced"] > sigmas["sigma_moments32"] > sigmas["sigma_rdp"] > sigmas["sigma_pld"]


def test_rates_table_recovers_a_known_slope():
    from dperm.papers.lecture.analyses import rates_table

    def summary(exponent):
        ns = [32, 64, 128]
        return pd.DataFrame({"dataset": [f"synthetic-logistic-n{n}-d5" for n in ns],
                             "excess_risk_mean": [3.0 * n**exponent for n in ns], "excess_risk_ci95": 0.0,
                             "excess_risk_n": 4})
    points, slopes = rates_table({"convex": summary(-1.0), "strong": summary(-2.0)})
    assert slopes.set_index("regime")["fitted_slope"].to_dict() == pytest.approx({"convex": -1.0, "strong": -2.0})
    assert list(points["steps"][:3]) == [1024, 4096, 16384]


@pytest.mark.parametrize("accountant,output,step_size,draws", [
    ("notes", "average", "convex", 3), ("rdp", "last", "convex", 3), ("rdp", "average", "constant", 3),
    ("notes", "average", "convex", 5), ("rdp", "last", "convex", 5)])
def test_dp_sgd_row_is_each_target_alone_bit_for_bit(accountant, output, step_size, draws):
    """fit_settings runs the row's targets together, each with its own T and σ (the notes'
    condition gives T growing with ε²): every target's weights are its lone fit's, bit for bit, in
    any order of the targets, whether its chains run in blocks (3 draws) or in one lockstep state
    with the row's other chains (5 draws, above ONE_CHAINS)."""
    rng = np.random.default_rng(4)
    n = 120
    X = np.column_stack([np.ones(n), rng.random((n, 3))])
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    y = (rng.random(n) < 0.5).astype(float)
    problem = Problem(X, y, Logistic(), 1e-3)
    spec = get_algorithm("dp-sgd-lecture")
    hyper = {"steps_rule": "condition", "accountant": accountant, "output": output, "step_size": step_size,
             "radius": 5.0, "learning_rate": 0.2}
    targets = [Privacy(eps, 1e-5) for eps in (0.5, 2.0, 1.0)]
    shared = spec.fit_settings(problem, targets, [np.random.default_rng(s) for s in (1, 2, 3)], draws=draws, **hyper)
    steps = [res.iterations for res in shared]
    assert len(set(steps)) == 3  # three different T
    for target, seed, res in zip(targets, (1, 2, 3), shared):
        lone = spec.fit(problem, target, np.random.default_rng(seed), draws=draws, **hyper)
        assert np.array_equal(res.weights, lone.weights) and res.extra == lone.extra


def _blocked_and_loop(problem, chains, **kw):
    """run_projected's one-example chains in blocks (the default) and step by step (blocked=False)."""
    from dperm.algorithms.base import draw_rngs
    from dperm.algorithms.lecture.theory import run_projected

    out = []
    for blocked in (True, False):
        rngs = draw_rngs(np.random.default_rng(17), len(chains))
        out.append(run_projected(problem, rngs, chains, batch="one", blocked=blocked, **kw))
    return out


@pytest.mark.parametrize("case", [
    # constant step, last iterate, no ball; a zero row (its clip limit is inf) and clipped rows
    dict(l2=0.0, steps=[203, 77], kw=dict(sigma=[0.3, 0.05], clip=0.2, mode="constant", learning_rate=0.4,
                                           radius=None, output="last")),
    # convex steps 2R/(G√t), averaged iterate, the ball binding; chunks not a multiple of the block
    dict(l2=1e-3, steps=[500, 260, 41], kw=dict(sigma=[2.0, 0.5, 8.0], clip=1.0, mode="convex", learning_rate=0.1,
                                                radius=0.8, output="average", chunk=37)),
    # strongly convex 1/(αt) with α = λ: the first step erases θ and runs on its own
    dict(l2=0.5, steps=[300, 301], kw=dict(sigma=[1.0, 1.0], clip=1.0, mode="strongly-convex", learning_rate=0.1,
                                           radius=2.0, output="average")),
    # noise so large that each projection shrinks γ by about 1e-12: blocks end before γ underflows
    dict(l2=0.0, steps=[90], kw=dict(sigma=[1e11], clip=1.0, mode="constant", learning_rate=1.0, radius=1e-3,
                                     output="average")),
], ids=["constant-last-clipped", "convex-average-chunks", "strong-alone-step", "gamma-underflow"])
def test_one_example_chains_in_blocks_follow_the_step_by_step_loop(case):
    """The blocked recursion (θ_q = γ_q(θ₀ + Σ κ_j v_j), the noise a second direction per step) is
    the loop's arithmetic up to rounding, on the same rows and noise: every mode, both outputs, the
    ball, clipping, a zero row, the lone erasing step and the γ guard."""
    rng = np.random.default_rng(5)
    n, p = 60, 5
    X = rng.normal(size=(n, p)) * rng.uniform(0.2, 3.0, size=(n, 1))  # rows of norm 0.5-7: many clipped
    X[7] = 0.0
    y = (rng.random(n) < 0.5).astype(float)
    problem = Problem(X, y, Logistic(), case["l2"])
    blocked, loop = _blocked_and_loop(problem, case["steps"], **case["kw"])
    assert np.isfinite(loop).all() and np.abs(loop).max() > 0
    np.testing.assert_allclose(blocked, loop, rtol=1e-9, atol=1e-12 * np.abs(loop).max())


def test_one_example_blocks_clip_and_project_where_the_loop_does():
    """The comparison above can fail: the loop's iterates touch the ball and its rows are clipped
    (a blocked form that skipped either would differ)."""
    rng = np.random.default_rng(5)
    X = rng.normal(size=(60, 5)) * rng.uniform(0.2, 3.0, size=(60, 1))
    problem = Problem(X, (rng.random(60) < 0.5).astype(float), Logistic(), 0.0)
    free, _ = _blocked_and_loop(problem, [203], sigma=[0.3], clip=1e6, mode="constant", learning_rate=0.4,
                                radius=None, output="last")
    clipped, _ = _blocked_and_loop(problem, [203], sigma=[0.3], clip=0.2, mode="constant", learning_rate=0.4,
                                   radius=None, output="last")
    ball, _ = _blocked_and_loop(problem, [203], sigma=[0.3], clip=0.2, mode="constant", learning_rate=0.4,
                                radius=0.5, output="last")
    assert not np.allclose(free, clipped) and np.linalg.norm(clipped) > 0.5
    assert not np.allclose(ball, clipped) and np.linalg.norm(ball) <= 0.5 + 1e-12


def test_one_example_blocks_run_an_erasing_step_inside_a_block_on_its_own():
    """The notes' schedules erase θ at t = 1 only; the blocked chain takes any η_t. A step with
    1 − η_tλ = 0 in the middle of a block ends the block before it and runs on its own: the
    result is the plain recursion's, on the same rows and noise."""
    from dperm.algorithms.lecture.theory import _one_example_chain
    from dperm.solvers import _scalar_dphi

    rng = np.random.default_rng(8)
    n, p, lam, clip, sigma, radius = 40, 4, 0.5, 0.7, 0.3, 1.5
    X = rng.normal(size=(n, p))
    problem = Problem(X, (rng.random(n) < 0.5).astype(float), Logistic(), lam)
    etas = np.full(50, 0.3)
    etas[[9, 23, 24]] = 1.0 / lam  # inside the first and second blocks of 16, and two in a row
    limits = clip / problem.row_norms
    x, acc = np.zeros(p), np.zeros(p)
    _one_example_chain(problem, np.random.default_rng(2), x, acc, etas, sigma, limits.tolist(),
                       _scalar_dphi(problem.loss, problem.y), radius, chunk=1024)
    draw = np.random.default_rng(2)
    rows, noise = draw.integers(0, n, size=50), sigma * draw.standard_normal((50, p))
    theta, total = np.zeros(p), np.zeros(p)
    for t in range(50):
        total += theta
        i = rows[t]
        c = np.clip(problem.loss.dphi(np.array([X[i] @ theta]), problem.y[i:i + 1])[0], -limits[i], limits[i])
        theta = theta - etas[t] * (c * X[i] + lam * theta + noise[t])
        theta *= min(1.0, radius / np.linalg.norm(theta))
    np.testing.assert_allclose(x, theta, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(acc, total, rtol=1e-10, atol=1e-12)
