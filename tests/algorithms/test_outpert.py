"""OutPert (Zhang et al. 2017, Alg. 1): empirical GD sensitivity against Lemmas 2–3, the Theorem
2/3 schedules, noise scales, bad inputs, the shared descent path, and the reference variant."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest

from dperm.algorithms import Privacy, draw_rngs, get_algorithm
from dperm.algorithms.outpert import gd_endpoint, theory
from dperm.losses import Hinge, Huber, HuberHinge, Logistic, Squared
from dperm.privacy import gaussian_sigma_analytic, gaussian_sigma_zhao
from dperm.privacy.perturbation import draw_noise, enforce_row_bound
from dperm.problem import Problem


def ball_rows(rng, n, p, radius=1.0):
    """n rows uniform in direction with norms uniform in [0, radius]."""
    X = rng.normal(size=(n, p))
    return X * (radius * rng.random(n) / np.linalg.norm(X, axis=1))[:, None]


def dataset(rng, loss_name, n=12, p=3, radius=1.0):
    X = ball_rows(rng, n, p, radius)
    if loss_name == "huber":
        return X, rng.random(n), Huber(1.0)
    return X, (rng.random(n) < 0.5).astype(float), Logistic()


def neighbours(rng, X, y, loss_name):
    """Replace-one neighbour pairs built from (X, y) at a random row k: a fresh random row; the
    row mirrored to the unit sphere with an extreme label/target; and opposite unit rows ±u with
    the same extreme target, whose first gradients point exactly apart (the adversarial case)."""
    k = int(rng.integers(len(y)))
    u = rng.normal(size=X.shape[1])
    u /= np.linalg.norm(u)
    huber = loss_name == "huber"
    far = 1.0 if huber else 1.0 - y[k]
    fresh = (ball_rows(rng, 1, X.shape[1])[0], rng.random() if huber else 1.0 - y[k])
    mirrored = (-X[k] / max(np.linalg.norm(X[k]), 1e-12), far)
    pairs = []
    for (xa, ya), (xb, yb) in (((X[k], y[k]), fresh), ((X[k], y[k]), mirrored), ((u, 1.0), (-u, 1.0))):
        XA, yA, XB, yB = X.copy(), y.copy(), X.copy(), y.copy()
        XA[k], yA[k], XB[k], yB[k] = xa, ya, xb, yb
        pairs.append((XA, yA, XB, yB))
    return pairs


# -- sensitivity of the T-th GD iterate (replace-one) -------------------------------------------

@pytest.mark.parametrize("loss_name", ["logistic", "huber"])
@pytest.mark.parametrize("mu", [0.0, 0.1])
@pytest.mark.parametrize("steps", [1, 5, 25, 120])
def test_gd_iterates_of_neighbours_stay_within_the_lemma_bound(loss_name, mu, steps):
    worst_ratio = 0.0
    for seed in range(4):
        rng = np.random.default_rng(seed)
        X, y, loss = dataset(rng, loss_name)
        for XA, yA, XB, yB in neighbours(rng, X, y, loss_name):
            A, B = Problem(XA, yA, loss, mu), Problem(XB, yB, loss, mu)
            beta = loss.smoothness(1.0) + mu
            eta = 1.0 / (beta + mu) if mu > 0 else 1.0 / beta  # the lemma's limit
            fit = get_algorithm("outpert-gd").fit(A, Privacy(1.0, 0.0), np.random.default_rng(0),
                                                  steps=steps, learning_rate=eta)
            assert fit.extra["learning_rate"] == eta and not fit.notes
            bound = fit.extra["sensitivity"]
            dist = np.linalg.norm(gd_endpoint(A, steps, eta)[0] - gd_endpoint(B, steps, eta)[0])
            L, n = loss.lipschitz(1.0), len(yA)
            # the direct contraction argument (module docstring) is tighter than either lemma
            tight = 2 * L * steps * eta / n if mu == 0 else 2 * L / (n * mu) * (1 - (1 - eta * mu) ** steps)
            assert dist <= bound
            assert dist <= tight * (1 + 1e-9) + 1e-15 and tight <= bound
            worst_ratio = max(worst_ratio, dist / bound)
    if mu == 0 and steps == 1 and loss_name == "huber":
        # opposite rows with target 1: the first step differs by exactly 2η/n = (2/3)·3Lη/n,
        # so a bound even 1.5× too small would fail above
        assert worst_ratio == pytest.approx(2.0 / 3.0, rel=1e-9)
    assert worst_ratio > 0.0


def test_lemma_formulas_and_the_best_choice():
    assert theory.lemma2_sensitivity(2.0, 10, 0.5, 100) == pytest.approx(3 * 2 * 10 * 0.5 / 100)
    assert theory.lemma3_sensitivity(1.0, 0.1, 1.0, 100) == pytest.approx(5 * 1.1 / (100 * 0.1))
    args = dict(L=1.0, mu=0.1, beta=1.0, n=100)
    small_T, _ = theory.gd_sensitivity(lemma="best", steps=2, eta=0.5, **args)
    large_T, used = theory.gd_sensitivity(lemma="best", steps=1000, eta=0.5, **args)
    assert small_T == theory.lemma2_sensitivity(1.0, 2, 0.5, 100)
    assert (large_T, used) == (theory.lemma3_sensitivity(1.0, 0.1, 1.0, 100), "lemma3")
    # Lemma 3 does not apply above 1/(β + μ): "best" falls back to Lemma 2
    assert theory.gd_sensitivity(lemma="best", steps=1000, eta=0.95, **args)[1] == "lemma2"


# -- Theorem 2/3 schedules ---------------------------------------------------------------------

def test_theorem_schedules_hand_computed():
    common = dict(L=1.0, n=1000, epsilon=1.0, D=1.0, d=10)
    # Theorem 3: (β²n²ε²D²/(L²d²))^{1/3} = (10⁶/100)^{1/3} = 21.54 → 22; η = 1/β
    assert theory.theorem3_schedule(beta=1.0, delta=0.0, **common) == (22, 1.0)
    # (ε, δ): d² → d ln(1/δ) = 69.08; (10⁶/69.08)^{1/3} = 24.37 → 25
    assert theory.theorem3_schedule(beta=1.0, delta=1e-3, **common)[0] == 25
    # Theorem 2: ((μ² + β²)/(μβ))·ln(μ²n²ε²D²/(L²d²)) = 10.1·ln(100) = 46.51 → 47; η = 1/(μ + β)
    T, eta = theory.theorem2_schedule(mu=0.1, beta=1.0, delta=0.0, **common)
    assert (T, eta) == (47, pytest.approx(1 / 1.1))
    # a negative logarithm (tiny n) is guarded to T = 1
    assert theory.theorem2_schedule(mu=0.1, beta=1.0, delta=0.0, **{**common, "n": 5})[0] == 1


def test_theorem_schedules_are_monotone_in_n_epsilon_delta():
    def T2(n=1000, epsilon=1.0, delta=1e-3):
        return theory.theorem2_schedule(mu=0.1, beta=1.1, L=1.0, n=n, epsilon=epsilon, delta=delta,
                                        D=2.0, d=20)[0]

    def T3(n=1000, epsilon=1.0, delta=1e-3):
        return theory.theorem3_schedule(beta=1.0, L=1.0, n=n, epsilon=epsilon, delta=delta,
                                        D=2.0, d=20)[0]

    for T in (T2, T3):
        by_n = [T(n=n) for n in (100, 1_000, 10_000, 100_000)]
        by_eps = [T(epsilon=e) for e in (0.1, 0.5, 1.0, 2.0)]
        by_delta = [T(delta=d) for d in (1e-12, 1e-8, 1e-3, 0.1)]
        for seq in (by_n, by_eps, by_delta):
            assert all(a <= b for a, b in zip(seq, seq[1:])) and seq[0] < seq[-1]


def test_outpert_gd_uses_the_theorems_with_beta_of_the_regularised_loss():
    rng = np.random.default_rng(3)
    X, y, loss = dataset(rng, "logistic", n=400, p=4)
    for mu in (0.0, 0.1):
        fit = get_algorithm("outpert-gd").fit(Problem(X, y, loss, mu), Privacy(0.5, 1e-3), rng,
                                              solution_bound=3.0)
        beta = 0.25 + mu  # logistic β_ℓ(R = 1) = 1/4
        args = dict(beta=beta, L=1.0, n=400, epsilon=0.5, delta=1e-3, D=3.0, d=4)
        expect = theory.theorem2_schedule(mu=mu, **args) if mu else theory.theorem3_schedule(**args)
        assert (fit.extra["steps"], fit.extra["learning_rate"]) == expect
        assert fit.extra["lemma"] == ("lemma3" if mu else "lemma2")


# -- noise ---------------------------------------------------------------------------------------

def _noise(fit, problem):
    w_T, _ = gd_endpoint(enforce_row_bound(problem, 1.0), fit.extra["steps"], fit.extra["learning_rate"])
    return fit.weights - w_T


def test_gamma_norm_noise_has_mean_norm_p_delta_over_epsilon():
    rng = np.random.default_rng(4)
    X, y, loss = dataset(rng, "logistic", n=50, p=3)
    problem = Problem(X, y, loss, 0.0)
    fit = get_algorithm("outpert").fit(problem, Privacy(0.5, 0.0), rng, draws=4000, steps=10,
                                       learning_rate=2.0)
    sens = 3 * 1.0 * 10 * 2.0 / 50
    assert fit.extra["sensitivity"] == pytest.approx(sens) and fit.extra["noise"] == "gamma-norm"
    norms = np.linalg.norm(_noise(fit, problem), axis=1)
    assert norms.mean() == pytest.approx(3 * sens / 0.5, rel=0.04)


@pytest.mark.parametrize("epsilon, gaussian", [(0.5, "auto"), (2.0, "auto"), (2.0, "analytic")])
def test_gaussian_noise_has_the_calibrated_std(epsilon, gaussian):
    rng = np.random.default_rng(5)
    X, y, loss = dataset(rng, "huber", n=60, p=3)
    problem = Problem(X, y, loss, 0.0)
    fit = get_algorithm("outpert").fit(problem, Privacy(epsilon, 1e-3), rng, draws=4000, steps=10,
                                       gaussian=gaussian)
    sens = fit.extra["sensitivity"]
    expected = {("auto", 0.5): sens * math.sqrt(2 * math.log(2 / 1e-3)) / 0.5,
                ("auto", 2.0): gaussian_sigma_zhao(2.0, 1e-3, sens),
                ("analytic", 2.0): gaussian_sigma_analytic(2.0, 1e-3, sens)}[gaussian, epsilon]
    assert fit.extra["noise_scale"] == pytest.approx(expected, rel=1e-12)
    assert np.std(_noise(fit, problem)) == pytest.approx(expected, rel=0.03)
    assert bool(fit.notes) == (gaussian == "auto" and epsilon > 1)  # the Zhao switch is noted


def test_zhang_gaussian_requested_above_epsilon_one_is_refused():
    rng = np.random.default_rng(6)
    problem = Problem(*dataset(rng, "logistic")[:2], Logistic(), 0.0)
    with pytest.raises(ValueError, match="epsilon <= 1"):
        get_algorithm("outpert").fit(problem, Privacy(2.0, 1e-3), rng, gaussian="zhang")
    fit = get_algorithm("outpert").fit(problem, Privacy(1.0, 1e-3), rng, gaussian="zhang")
    assert fit.extra["noise"] == "gaussian-zhang"


# -- bad inputs -------------------------------------------------------------------------------------

def _problem(loss=None, mu=0.0, seed=7):
    rng = np.random.default_rng(seed)
    X, y, default = dataset(rng, "logistic", n=30)
    loss = loss or default
    if loss.labels == "pm1":
        y = 2 * y - 1
    elif loss.labels == "real":
        y = rng.random(30)
    return Problem(X, y, loss, mu)


@pytest.mark.parametrize("privacy, match", [
    (Privacy(math.inf), "finite epsilon"),
    (SimpleNamespace(epsilon=0.0, delta=0.0), "finite epsilon"),
    (SimpleNamespace(epsilon=1.0, delta=1.5), "delta in"),
    (SimpleNamespace(epsilon=1.0, delta=-0.1), "delta in"),
])
@pytest.mark.parametrize("name", ["outpert-gd", "outpert", "outpert-reference"])
def test_bad_privacy_targets_are_refused(name, privacy, match):
    with pytest.raises(ValueError, match=match):
        get_algorithm(name).fit(_problem(), privacy, np.random.default_rng(0))


@pytest.mark.parametrize("hyper, match", [
    ({"lemma": "strongly-convex"}, "needs mu"),
    ({"lemma": "lemma4"}, "lemma must be one of"),
    ({"gaussian": "laplace"}, "gaussian must be one of"),
    ({"steps": 0}, "steps must be a positive integer"),
    ({"learning_rate": -1.0}, "learning_rate must be"),
    ({"row_bound": 0.0}, "row_bound must be"),
    ({"solution_bound": -2.0}, "solution_bound must be"),
])
def test_bad_hyper_parameters_are_refused(hyper, match):
    with pytest.raises(ValueError, match=match):
        get_algorithm("outpert-gd").fit(_problem(), Privacy(1.0, 1e-5), np.random.default_rng(0), **hyper)


def test_negative_mu_and_unsupported_losses_are_refused():
    problem = _problem()
    problem.l2 = -0.1  # bypasses Problem's own check
    with pytest.raises(ValueError, match="mu = l2 >= 0"):
        get_algorithm("outpert-gd").fit(problem, Privacy(1.0), np.random.default_rng(0))
    with pytest.raises(ValueError, match="huber-hinge"):  # without the smooth surrogate
        get_algorithm("outpert").fit(_problem(Hinge()), Privacy(1.0), np.random.default_rng(0),
                                     huber_h=None)
    with pytest.raises(ValueError, match="globally Lipschitz"):
        get_algorithm("outpert").fit(_problem(Squared()), Privacy(1.0), np.random.default_rng(0))


def test_a_step_above_the_lemma_limit_is_clamped_and_noted():
    fit = get_algorithm("outpert").fit(_problem(HuberHinge(0.5), mu=0.01), Privacy(1.0, 1e-5),
                                       np.random.default_rng(0))  # η = 1 > 1/(1 + 0.01)
    assert fit.extra["learning_rate"] == pytest.approx(1 / 1.01)
    assert any("clamped" in note for note in fit.notes)


# -- shared path, public bound, reference variant ---------------------------------------------------

@pytest.mark.parametrize("delta", [0.0, 1e-5])
def test_draws_equal_one_descent_plus_independent_noise(delta):
    rng = np.random.default_rng(8)
    X, y, loss = dataset(rng, "logistic", n=80, p=4, radius=5.0)  # rows beyond R: clipping matters
    problem = Problem(X, y, loss, 0.05)
    fit = get_algorithm("outpert-gd").fit(problem, Privacy(0.8, delta), np.random.default_rng(42), draws=3)
    w_T, _ = gd_endpoint(enforce_row_bound(problem, 1.0), fit.extra["steps"], fit.extra["learning_rate"])
    expected = [w_T + draw_noise(fit.extra["noise"], fit.extra["noise_scale"], 4, child)
                for child in draw_rngs(np.random.default_rng(42), 3)]
    np.testing.assert_array_equal(fit.weights, np.array(expected))
    assert not np.allclose(fit.weights[0], fit.weights[1])
    assert fit.extra["lipschitz"] == 1.0  # from R, not from the data's radius (5)
    assert 0 < fit.seconds_per_draw and fit.grad_evals == fit.extra["steps"]


def test_reference_variant_reproduces_dp_agd_outpert():
    rng = np.random.default_rng(9)
    X, y, _ = dataset(rng, "logistic", n=40, p=3, radius=3.0)
    problem = Problem(X, 2 * y - 1, Hinge(), 1e-4)  # hinge and rows beyond 1 are accepted
    spec = get_algorithm("outpert-reference")
    assert (spec.variant, spec.dp_as_implemented) == ("reference", False)
    fit = spec.fit(problem, Privacy(1.6, 1e-8), np.random.default_rng(1), draws=2)
    sens = 3 * 1.0 * 50 * 1.0 / 40
    assert fit.extra["sensitivity"] == pytest.approx(sens)
    assert fit.extra["noise_scale"] == pytest.approx(math.sqrt(2 * math.log(2 / 1e-8)) * sens / 1.6)
    w_T, _ = gd_endpoint(problem, 50, 1.0)  # raw rows, no clipping
    children = draw_rngs(np.random.default_rng(1), 2)
    np.testing.assert_array_equal(fit.weights[1], w_T + children[1].normal(0, fit.extra["noise_scale"], 3))
    with pytest.raises(ValueError, match="delta must be > 0"):
        spec.fit(problem, Privacy(1.0, 0.0), np.random.default_rng(0))


def test_registered_variants():
    for name in ("outpert-gd", "outpert"):
        spec = get_algorithm(name)
        assert spec.variant == "correct" and spec.dp_as_implemented and spec.private


def test_descent_path_reuse_gives_the_fresh_iterate():
    """gd_endpoint continues a cached path; the result equals a fresh T-step descent."""
    from dperm import solvers
    from dperm.algorithms import outpert

    problem = _problem()
    outpert._PATHS.clear()
    calls = []
    real = solvers.gradient_descent

    def counted(*args, n_iter, **kwargs):
        calls.append(n_iter)
        return real(*args, n_iter=n_iter, **kwargs)

    outpert.solvers.gradient_descent = counted
    try:
        for steps in (5, 12, 30, 7, 30, 12):  # extend, extend, between two kept T, then kept ones
            w, seconds = outpert.gd_endpoint(problem, steps, 0.5)
            fresh = real(problem, np.zeros(problem.p), step=0.5, n_iter=steps).x
            np.testing.assert_array_equal(w, fresh)  # continued, never approximated: bit for bit
            assert seconds > 0
    finally:
        outpert.solvers.gradient_descent = real
    assert calls == [5, 7, 18, 2]  # each step of the longest path once: 5 + 7 + 18, and 5 -> 7
    w2, _ = outpert.gd_endpoint(problem, 30, 0.25)  # another step size is another path
    assert not np.allclose(w2, outpert.gd_endpoint(problem, 30, 0.5)[0])


def test_row_bound_scaling_of_a_read_only_fold_is_made_once_and_equals_a_fresh_one():
    """A tuning grid scales the same training fold for every candidate: on read-only rows (the
    protocol's folds) the scaled rows, their digest and their sparse copy are made once and the
    values are a fresh scaling's bit for bit; writeable rows are scaled anew on every call, so
    a change made in place is never served from the cache."""
    problem = _problem()
    fresh = enforce_row_bound(problem, 0.5)
    frozen = problem.X.copy()
    frozen.setflags(write=False)
    fold = Problem(frozen, problem.y, problem.loss, problem.l2, shared={})
    first, second = enforce_row_bound(fold, 0.5), enforce_row_bound(fold, 0.5)
    assert first.X is second.X and first.shared is second.shared and not first.X.flags.writeable
    np.testing.assert_array_equal(first.X, fresh.X)
    np.testing.assert_array_equal(first.row_norms, fresh.row_norms)
    assert first.rows_digest() == fresh.rows_digest()
    assert first.shared["rows_digest"][0] is second.X  # the digest made for the first serves the second
    other = enforce_row_bound(fold, 0.25)  # another bound: other rows
    assert other.X is not first.X and np.linalg.norm(other.X, axis=1).max() <= 0.25 * (1 + 1e-12)
    assert enforce_row_bound(fold, 1e6) is fold  # no row above the bound: the problem itself
    again = enforce_row_bound(problem, 0.5)
    assert again.X is not fresh.X  # writeable rows: a new scaling every time
    problem.X[0, 0] += 1.0  # another direction: its scaled row moves too
    assert not np.array_equal(enforce_row_bound(problem, 0.5).X[0], fresh.X[0])


def test_row_bound_scaling_of_a_large_fold_is_not_kept(monkeypatch):
    """The kept copy lives as long as its fold: rows above the size limit are scaled on every
    call instead (same values), so a job holding several large folds holds no copy of each."""
    from dperm import problem as problem_module

    problem = _problem()
    frozen = problem.X.copy()
    frozen.setflags(write=False)
    fold = Problem(frozen, problem.y, problem.loss, problem.l2, shared={})
    monkeypatch.setattr(problem_module, "KEEP_PER_FOLD_BYTES", frozen.nbytes - 1)
    first, second = enforce_row_bound(fold, 0.5), enforce_row_bound(fold, 0.5)
    assert first.X is not second.X and ("row_bound", 0.5) not in fold.shared
    np.testing.assert_array_equal(first.X, second.X)
    np.testing.assert_array_equal(first.X, enforce_row_bound(problem, 0.5).X)
    monkeypatch.setattr(problem_module, "KEEP_PER_FOLD_BYTES", frozen.nbytes)  # at the limit: kept
    assert enforce_row_bound(fold, 0.5).X is enforce_row_bound(fold, 0.5).X
