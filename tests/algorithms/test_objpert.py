"""ObjPert (Kifer et al. 2012 / Chaudhuri et al. 2011): certified solve of the perturbed objective,
noise scales, the two halves of the privacy argument checked numerically, constants from the
enforced row bound, bad inputs, and the reference variant's objective term by term."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.stats import norm

from dperm.algorithms import Privacy, draw_rngs, get_algorithm
from dperm.algorithms.objpert import noise_calibration, perturbed_objective, reference_objective
from dperm.losses import Hinge, Huber, HuberHinge, Logistic, Squared
from dperm.privacy.perturbation import draw_noise
from dperm.problem import Problem


def make_problem(loss=None, n=200, p=5, radius=3.0, l2=1e-3, seed=0):
    """Rows with norms up to ``radius`` (beyond the default R = 1) and a bias column 0."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    X[:, 0] = 1.0
    X *= (radius * rng.uniform(0.2, 1.0, n) / np.linalg.norm(X, axis=1))[:, None]
    loss = loss or Logistic()
    w = rng.normal(size=p)
    if loss.labels == "real":
        y = rng.random(n)
    else:
        y = (rng.random(n) < 1 / (1 + np.exp(-X @ w))).astype(float)
        y = 2 * y - 1 if loss.labels == "pm1" else y
    return Problem(X, y, loss, l2)


def clipped(problem, R=1.0):
    scale = np.minimum(1.0, R / np.linalg.norm(problem.X, axis=1))
    y = np.clip(problem.y, 0, 1) if problem.loss.labels == "real" else problem.y
    return Problem(problem.X * scale[:, None], y, problem.loss, problem.l2)


@pytest.mark.parametrize("delta", [0.0, 1e-6])
@pytest.mark.parametrize("loss", [Logistic(), HuberHinge(0.5), Huber(1.0)], ids=lambda l: l.name)
def test_each_draw_is_the_minimiser_of_its_perturbed_objective(loss, delta):
    problem = make_problem(loss)
    eps, draws = 0.5, 3
    fit = get_algorithm("objpert").fit(problem, Privacy(eps, delta), np.random.default_rng(11), draws=draws)
    assert not fit.notes and fit.extra["grad_norm"] <= fit.extra["gtol"] == 1e-9
    assert fit.adjacency == "replace-one"
    # rebuild J from scratch: rows clipped to R = 1, Δ = 2λ_H/ε, b from each draw's generator
    cp, n = clipped(problem), problem.n
    Delta = 2 * loss.smoothness(1.0) / eps
    assert fit.extra["Delta"] == pytest.approx(Delta)
    for w, child in zip(fit.weights, draw_rngs(np.random.default_rng(11), draws)):
        b = draw_noise(fit.extra["noise"], fit.extra["noise_scale"], problem.p, child)
        grad = loss.grad(w, cp.X, cp.y) + (problem.l2 + Delta / n) * w + b / n
        assert np.linalg.norm(grad) <= 1.01e-9
    assert not np.allclose(fit.weights[0], fit.weights[1])


def test_constants_come_from_the_loss_at_the_enforced_bound():
    expected = {"logistic": (2.0, 1.0), "huber-hinge": (2.0, 4.0 / (2 * 0.5)), "huber": (2.0, 4.0)}
    for loss in (Logistic(), HuberHinge(0.5), Huber(1.0)):
        fit = get_algorithm("objpert").fit(make_problem(loss, radius=5.0), Privacy(1.0),
                                           np.random.default_rng(0), row_bound=2.0)
        assert (fit.extra["zeta"], fit.extra["hessian_bound"]) == pytest.approx(expected[loss.name])
        assert fit.extra["noise_scale"] == pytest.approx(2 * (2 * 2.0) / 1.0)  # 2s/ε, s = 2ζ (replace-one), δ = 0


def _log_release_density(w, X, lam, Delta, scale):
    """ln p_D(w) of ObjPert's release in one dimension, exactly: b(w) = −(Σφ'(x_i w)x_i +
    (nλ + Δ)w) is a bijection of w, so p_D(w) = ν(b(w))·|b'(w)| with ν the 1-D Gamma-norm
    (Laplace) density of scale ``scale`` on b, for labels y = 1 (logistic, {0, 1} form)."""
    z = np.outer(w, X)
    sig = 1.0 / (1.0 + np.exp(-z))
    b = -((sig - 1.0) @ X + (len(X) * lam + Delta) * w)
    jac = (sig * (1.0 - sig)) @ (X * X) + len(X) * lam + Delta
    return -np.abs(b) / scale - np.log(2 * scale) + np.log(jac)


@pytest.mark.parametrize("adjacency, lam, private", [
    ("replace-one", 0.1, True), ("add-remove", 0.0, True), ("add-remove", 0.1, False)])
def test_exact_privacy_loss_under_both_adjacencies(adjacency, lam, private):
    """The exact log density ratio of neighbouring releases on a grid of w: bounded by ε for
    replace-one (s = 2ζ) and for add/remove without a regulariser (s = ζ); unbounded for
    add/remove with λ > 0, because the added row also adds λ to the regulariser nλ. The old
    default (add/remove, λ > 0) fails this test."""
    eps, zeta = 1.0, 1.0
    Delta = 2 * 0.25 / eps  # 2λ_H/ε, logistic λ_H = R²/4 at R = 1
    X = np.array([0.3, -0.8, 0.5, 1.0, -0.2])
    neighbour = np.append(X, -1.0) if adjacency == "add-remove" else np.append(X[:-1], -1.0)
    scale = noise_calibration(zeta, eps, 0.0, adjacency)[1]  # in 1-D the Gamma-norm law is Laplace(2s/ε)
    w = np.linspace(-200, 200, 40001)
    loss = np.abs(_log_release_density(w, X, lam, Delta, scale) - _log_release_density(w, neighbour, lam, Delta, scale))
    assert (loss.max() <= eps + 1e-9) == private, loss.max()


def test_noise_calibration_formulas():
    zeta, eps, delta = 1.5, 0.4, 1e-8
    sigma2 = (zeta / eps) ** 2 * (8 * math.log(2 / delta) + 4 * eps)
    assert noise_calibration(zeta, eps, delta) == ("gaussian", pytest.approx(math.sqrt(sigma2)))
    assert noise_calibration(zeta, eps, 0.0) == ("gamma-norm", pytest.approx(2 * zeta / eps))
    # replace-one: the gradient sum moves by 2ζ, so every scale doubles
    assert noise_calibration(zeta, eps, delta, "replace-one")[1] == pytest.approx(2 * math.sqrt(sigma2))
    assert noise_calibration(zeta, eps, 0.0, "replace-one")[1] == pytest.approx(4 * zeta / eps)
    with pytest.raises(ValueError, match="adjacency must be one of"):
        noise_calibration(zeta, eps, delta, "swap")


def test_noise_samples_have_the_calibrated_scale():
    rng = np.random.default_rng(1)
    p, zeta, eps = 6, 1.0, 0.8
    kind, scale = noise_calibration(zeta, eps, 0.0)
    norms = np.linalg.norm([draw_noise(kind, scale, p, rng) for _ in range(4000)], axis=1)
    assert norms.mean() == pytest.approx(p * 2 * zeta / eps, rel=0.03)  # E‖b‖ = p·2ζ/ε
    kind, sigma = noise_calibration(zeta, eps, 1e-6)
    b = np.array([draw_noise(kind, sigma, p, rng) for _ in range(4000)])
    assert b.std() == pytest.approx(sigma, rel=0.02) and abs(b.mean()) < 0.05 * sigma


@pytest.mark.parametrize("eps", [0.05, 0.5, 1.0, 1.6, 4.0, 10.0])
@pytest.mark.parametrize("delta", [1e-3, 1e-8, 1e-12])
def test_gaussian_noise_loss_exceeds_half_epsilon_with_probability_below_delta(eps, delta):
    """Noise half of the argument: for b-sensitivity s, the Gaussian privacy loss
    (2⟨b, v⟩ + ‖v‖²)/(2σ²) exceeds ε/2 only if Z > εσ/(2s) − s/(2σ); that tail is ≤ δ/2."""
    s = 1.0
    sigma = noise_calibration(s, eps, delta)[1]
    assert norm.sf(eps * sigma / (2 * s) - s / (2 * sigma)) <= delta / 2


@pytest.mark.parametrize("neighbour", ["add", "replace"])
def test_jacobian_ratio_is_at_most_one_plus_lambda_h_over_delta(neighbour):
    """Jacobian half: det H_D(w)/det H_D'(w) ≤ 1 + λ_H/Δ = 1 + ε/2 with H = Σ∇²ℓ_i + (nλ + Δ)I,
    in both directions, for add/remove and replace-one neighbours (rank-one PSD terms)."""
    rng = np.random.default_rng(2)
    loss, eps, lam = Logistic(), 0.3, 1e-3
    Delta = 2 * loss.smoothness(1.0) / eps
    worst = 0.0
    for _ in range(200):
        X = rng.normal(size=(8, 4))
        X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
        x_new = rng.normal(size=4)
        x_new *= 1.0 / np.linalg.norm(x_new)
        X2 = np.vstack([X, x_new]) if neighbour == "add" else np.vstack([X[:-1], x_new])
        w = rng.normal(scale=3.0, size=4)

        def hessian(X, w=w):
            return sum(loss.d2phi(np.array([x @ w]), np.array([0.0]))[0] * np.outer(x, x) for x in X) \
                + (len(X) * lam + Delta) * np.eye(4)

        ratio = np.linalg.det(hessian(X)) / np.linalg.det(hessian(X2))
        worst = max(worst, ratio, 1 / ratio)
    assert 1.0 < worst <= 1 + eps / 2


def test_reference_objective_differs_by_exactly_the_documented_terms():
    problem = make_problem(Hinge(), n=50)
    rng = np.random.default_rng(3)
    n, Delta = problem.n, 7.0
    b = rng.normal(size=problem.p)
    correct, _ = perturbed_objective(problem, b, Delta)
    reference = reference_objective(problem, b, Delta, bias_column=0)
    for _ in range(5):
        w = rng.normal(size=problem.p)
        wbar = w.copy()
        wbar[0] = 0.0
        (f_c, g_c), (f_r, g_r) = correct(w), reference(w)
        # + (1/n)‖w̄‖², and the Δ-term on w̄ instead of w
        assert f_r - f_c == pytest.approx(wbar @ wbar / n + Delta / (2 * n) * (wbar @ wbar - w @ w))
        np.testing.assert_allclose(g_r - g_c, 2 * wbar / n + Delta / n * (wbar - w), atol=1e-12)


def test_reference_variant_reproduces_dp_agd_obj_pert():
    problem = make_problem(Hinge(), n=120, radius=math.sqrt(2))  # plain hinge and ‖x‖ = √2 accepted
    spec = get_algorithm("objpert-reference")
    assert (spec.variant, spec.dp_as_implemented) == ("reference", False)
    eps, delta = 0.2, 1e-8
    fit = spec.fit(problem, Privacy(eps, delta), np.random.default_rng(4), draws=2)
    assert fit.extra["Delta"] == pytest.approx(2 * 1.0 / eps)  # λ_H = 1 regardless of the data
    assert fit.extra["noise_scale"] == pytest.approx(math.sqrt((8 * math.log(2 / delta) + 4 * eps) / eps**2))
    for w, child in zip(fit.weights, draw_rngs(np.random.default_rng(4), 2)):
        b = child.normal(0.0, fit.extra["noise_scale"], problem.p)
        res = minimize(reference_objective(problem, b, fit.extra["Delta"], 0), np.zeros(problem.p), jac=True,
                       method="L-BFGS-B", options={"maxiter": 300})
        np.testing.assert_array_equal(w, res.x)
    assert np.all(fit.iterations <= 300)


def test_hinge_and_other_uncovered_losses_are_refused_by_the_correct_variant():
    with pytest.raises(ValueError, match="huber-hinge"):  # without the smooth surrogate
        get_algorithm("objpert").fit(make_problem(Hinge()), Privacy(1.0), np.random.default_rng(0),
                                     huber_h=None)
    with pytest.raises(ValueError, match="globally Lipschitz"):
        get_algorithm("objpert").fit(make_problem(Squared()), Privacy(1.0), np.random.default_rng(0))


@pytest.mark.parametrize("privacy, hyper, match", [
    (Privacy(math.inf), {}, "finite epsilon"),
    (SimpleNamespace(epsilon=-1.0, delta=0.0), {}, "finite epsilon"),
    (SimpleNamespace(epsilon=1.0, delta=1.0), {}, "delta in"),
    (Privacy(1.0), {"adjacency": "swap"}, "adjacency must be one of"),
    (Privacy(1.0), {"row_bound": -1.0}, "row_bound must be"),
    (Privacy(1.0), {"gtol": 0.0}, "gtol must be"),
])
def test_bad_inputs_are_refused(privacy, hyper, match):
    with pytest.raises(ValueError, match=match):
        get_algorithm("objpert").fit(make_problem(), privacy, np.random.default_rng(0), **hyper)


def test_negative_regularisation_is_refused():
    problem = make_problem()
    problem.l2 = -1e-3
    with pytest.raises(ValueError, match="l2"):
        get_algorithm("objpert").fit(problem, Privacy(1.0), np.random.default_rng(0))


def test_svm_with_plain_hinge_trains_on_the_huberised_surrogate():
    """The hinge model is accepted (trained on the Huberised hinge, noted); huber_h=None refuses it."""
    import numpy as np
    import pytest

    from dperm.algorithms import Privacy, get_algorithm
    from dperm.losses import Hinge
    from dperm.problem import Problem

    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 4)) / 3
    y = np.where(X[:, 0] > 0, 1.0, -1.0)
    problem = Problem(X, y, Hinge(), l2=0.01)
    for name in ("objpert", "outpert"):
        fit = get_algorithm(name).fit
        result = fit(problem, Privacy(1.0, 1e-6), np.random.default_rng(1))
        assert any("Huberised hinge (h = 0.5)" in note for note in result.notes)
        with pytest.raises(ValueError, match="huber-hinge"):
            fit(problem, Privacy(1.0, 1e-6), np.random.default_rng(1), huber_h=None)


@pytest.mark.parametrize("loss", [Logistic(), HuberHinge(0.5), Huber(1.0)], ids=repr)
@pytest.mark.parametrize("eps", [0.1, 2.0])
def test_newton_and_lbfgs_release_the_same_minimiser(loss, eps, monkeypatch):
    """Smooth linear models are solved by Newton with explicit Hessians, everything else by
    L-BFGS; both must reach ‖∇J‖ ≤ gtol, so their releases agree within the certified distance
    ‖∇J‖/μ_J of the exact minimiser (the object of the privacy theorem)."""
    from dperm import solvers

    problem = make_problem(loss, n=400, p=6, l2=1e-4, seed=3)
    fit = get_algorithm("objpert").fit
    newton = fit(problem, Privacy(eps, 1e-6), np.random.default_rng(1), draws=3)
    monkeypatch.setattr(solvers, "NEWTON_MAX_P", 0)
    lbfgs = fit(problem, Privacy(eps, 1e-6), np.random.default_rng(1), draws=3)
    assert newton.extra["grad_norm"] <= 1e-9 and lbfgs.extra["grad_norm"] <= 1e-9
    tol = newton.extra["dist_bound"] + lbfgs.extra["dist_bound"]
    assert np.abs(newton.weights - lbfgs.weights).max() <= tol
    assert np.all(newton.iterations < lbfgs.iterations)  # Newton steps, not L-BFGS iterations


@pytest.mark.parametrize("loss", [Logistic(), HuberHinge(0.25), Huber(1.0)], ids=repr)
def test_small_problems_solve_their_draws_in_lockstep_to_the_same_minimisers(loss, monkeypatch):
    """Draws of a small problem (n·p ≤ NEWTON_DRAWS_MAX: the audit's n = 50, p = 1) take their
    Newton steps together (solvers.newton_draws): the same noise, releases within the certified
    distance of the lone solves', every draw certified."""
    from dperm import solvers
    from dperm.algorithms import objpert

    problem = make_problem(loss, n=50, p=2, l2=0.01, seed=4)
    fit = get_algorithm("objpert").fit
    calls = []
    lockstep = solvers.newton_draws
    monkeypatch.setattr(solvers, "newton_draws", lambda *a, **k: calls.append(k["group"]) or lockstep(*a, **k))
    monkeypatch.setattr(objpert, "_LOCKSTEP_ENTRIES", 64 * 100)  # groups of 64 draws (n·p = 100)
    together = fit(problem, Privacy(0.5, 0.0), np.random.default_rng(5), draws=200)
    monkeypatch.setattr(solvers, "NEWTON_DRAWS_MAX", 0)
    alone = fit(problem, Privacy(0.5, 0.0), np.random.default_rng(5), draws=200)
    assert calls == [64]  # the lockstep path ran once, for all 200 draws in groups; the lone solves never
    assert together.extra["grad_norm"] <= 1e-9 and alone.extra["grad_norm"] <= 1e-9 and not together.notes
    tol = together.extra["dist_bound"] + alone.extra["dist_bound"]
    assert np.abs(together.weights - alone.weights).max() <= tol
    # the lone solves start from single-precision Hessians (solvers.glm_newton), the lockstep
    # ones use the exact Hessian at p this small: at most one step apart, never more in all
    assert np.abs(together.iterations - alone.iterations).max() <= 1
    assert together.iterations.sum() <= alone.iterations.sum()
