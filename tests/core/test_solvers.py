"""Solvers: agreement with a certified L-BFGS optimum, closed forms, acceleration, Katyusha."""

from __future__ import annotations

import math

import numpy as np
import pytest
from conftest import OpaqueLoss

from dperm import solvers
from dperm.losses import Logistic, get_loss, to_label_form
from dperm.problem import Problem

SMOOTH = [("logistic", {"labels": "01"}), ("logistic", {"labels": "pm1"}),
          ("huber-hinge", {"h": 0.5}), ("huber", {"delta": 0.5}), ("squared", {})]
SMOOTH_IDS = ["logistic-01", "logistic-pm1", "huber-hinge", "huber", "squared"]


def make_problem(name="logistic", params=None, n=200, d=6, l2=0.03, seed=0):
    """Features in [0, 1] plus a bias (as the encoded data sets), ‖x‖ up to about 2."""
    rng = np.random.default_rng(seed)
    loss = get_loss(name, **(params or {}))
    X = rng.random((n, d))
    X[:, 0] = 1.0
    w_true = 3.0 * rng.standard_normal(d)
    logits = (X - X.mean(0)) @ w_true
    y01 = (rng.random(n) < 1 / (1 + np.exp(-logits))).astype(float)
    y = np.clip(0.5 + 0.3 * logits + 0.1 * rng.standard_normal(n), 0, 1) if loss.labels == "real" \
        else to_label_form(y01, loss.labels)
    return Problem(X, y, loss, l2)


@pytest.fixture(scope="module")
def reference():
    """Certified optima of the smooth test problems, keyed by loss id."""
    out = {}
    for (name, params), key in zip(SMOOTH, SMOOTH_IDS):
        prob = make_problem(name, params)
        res = solvers.lbfgs(prob, gtol=1e-13)
        assert res.success and res.gap_bound < 1e-22
        out[key] = (prob, res)
    return out


# -- agreement of every solver with the certified optimum (loss × solver) -------------------------
def _run(solver, prob, seed):
    """Run ``solver`` with a budget that must reach its expected accuracy; returns (result, tol)."""
    rng = np.random.default_rng(seed)
    beta, mu = prob.smoothness(), prob.l2
    if solver == "gd":
        return solvers.gradient_descent(prob, step=1.0 / beta, n_iter=3000), 1e-10
    if solver == "agd":
        return solvers.nesterov(prob, n_iter=300), 1e-12
    if solver == "agd-convex":
        return solvers.nesterov(prob, n_iter=400, mu=0.0), 1e-7
    if solver == "katyusha":
        return solvers.katyusha(prob, rng=rng, n_epochs=15), 1e-10
    if solver == "sgd":
        step = lambda t: min(0.5 / beta, 4.0 / (mu * (t + 1)))  # noqa: E731
        return solvers.sgd(prob, rng=rng, step=step, n_iter=3000, batch_size=20, replace=False,
                           average="weighted"), 1e-5
    if solver == "lbfgs":
        return solvers.lbfgs(prob, gtol=1e-8), 1e-15
    raise ValueError(solver)


@pytest.mark.parametrize("solver", ["gd", "agd", "agd-convex", "katyusha", "sgd", "lbfgs"])
@pytest.mark.parametrize("key", SMOOTH_IDS)
def test_solver_reaches_certified_optimum(reference, key, solver):
    prob, ref = reference[key]
    res, tol = _run(solver, prob, seed=1)
    gap = res.fun - ref.fun
    assert -1e-14 <= gap <= tol, (gap, tol)
    start_gap = prob.value(np.zeros(prob.p)) - ref.fun
    assert start_gap > 1e3 * tol  # the tolerance is a real requirement
    for field in ("x", "fun", "jac", "grad_norm", "nit", "n_grad_evals", "seconds", "success", "message"):
        assert field in res


# -- L-BFGS certificate ------------------------------------------------------------------------------
def test_lbfgs_certificate_holds_against_a_tighter_solve():
    prob = make_problem(l2=1e-3, n=500)
    tight = solvers.lbfgs(prob, gtol=1e-14)
    for gtol in (1e-3, 1e-5, 1e-7):
        loose = solvers.lbfgs(prob, gtol=gtol, max_iter=5, polish=False)  # stopped early on purpose
        gap = loose.fun - tight.fun
        assert loose.grad_norm > 0 and np.isfinite(loose.gap_bound)
        assert gap <= loose.gap_bound + 1e-15
        assert np.linalg.norm(loose.x - tight.x) <= loose.dist_bound + 1e-12
    assert loose.gap_bound > 1e-12  # max_iter=5 really stopped short: the check had teeth
    assert tight.success and tight.gap_bound <= 1e-24


def test_certificate_is_tight_on_a_quadratic():
    # F(w) = ½ Σ λ_i w_i², λ_min = μ; at w = t·e_min: ‖∇F‖ = μt, F − F* = μt²/2 = ‖∇F‖²/(2μ)
    mu, t = 0.01, 3.0
    gap, dist = solvers.certificate(mu * t, mu)
    assert gap == pytest.approx(mu * t * t / 2, rel=1e-14) and dist == pytest.approx(t, rel=1e-14)
    assert solvers.certificate(1e-3, 0.0) == (np.inf, np.inf)
    assert solvers.certificate(1e-3, 0.0, np.ones(4), radius=1.0)[0] == pytest.approx(3e-3)


def test_lbfgs_without_strong_convexity_certifies_only_with_a_radius():
    prob = make_problem(l2=0.0)
    res = solvers.lbfgs(prob, gtol=1e-9)
    assert res.success and res.grad_norm <= 1e-9 and res.gap_bound == np.inf
    res_r = solvers.lbfgs(prob, gtol=1e-9, radius=100.0)
    assert res_r.gap_bound == pytest.approx(res_r.grad_norm * (np.linalg.norm(res_r.x) + 100.0))


def test_lbfgs_accepts_callables_and_polishes_with_hessp():
    prob = make_problem()
    res = solvers.lbfgs(prob.value, np.zeros(prob.p), jac=prob.grad, hessp=prob.hvp, mu=0.05, gtol=1e-14)
    assert res.success and res.grad_norm <= 1e-14


def test_lbfgs_on_the_mlp_reports_stationarity_only():
    prob = make_problem("mlp", n=60, d=3, l2=1e-3)
    x0 = prob.loss.init(np.random.default_rng(0), 3)
    res = solvers.lbfgs(prob, x0, gtol=1e-8)
    assert res.success and res.grad_norm <= 1e-8 and res.gap_bound == np.inf


# -- gradient descent --------------------------------------------------------------------------------
def test_gd_on_a_quadratic_matches_the_closed_form_iterate():
    prob = make_problem("squared", l2=0.1)
    X, y, n = prob.X, prob.y, prob.n
    A = X.T @ X / n + 0.1 * np.eye(prob.p)
    w_star = np.linalg.solve(A, X.T @ y / n)
    eta, T = 0.7 / prob.smoothness(), 25
    x0 = np.random.default_rng(1).standard_normal((3, prob.p))  # three draws at once
    res = solvers.gradient_descent(prob, x0, step=eta, n_iter=T, return_path=True)
    M = np.eye(prob.p) - eta * A
    for t in (0, 1, 7, T):
        closed = w_star + (x0 - w_star) @ np.linalg.matrix_power(M, t).T
        np.testing.assert_allclose(res.path[t], closed, rtol=1e-11, atol=1e-13)
    np.testing.assert_array_equal(res.path[T], res.x)
    assert res.nit == T and res.n_grad_evals == T and res.fun.shape == (3,)
    single = solvers.gradient_descent(prob, x0[1], step=eta, n_iter=T)
    np.testing.assert_allclose(single.x, res.x[1], rtol=1e-12)
    # scipy-style callables give the same iterates
    cb = solvers.gradient_descent(prob.value, x0[1], jac=prob.grad, step=eta, n_iter=T)
    np.testing.assert_allclose(cb.x, single.x, rtol=1e-14)


def test_agd_beats_gd_in_iterations_on_an_ill_conditioned_problem():
    eig = np.logspace(0, -3, 30)  # κ = 1000
    b = np.random.default_rng(2).standard_normal(30)
    w_star = b / eig
    F = lambda w: 0.5 * np.einsum("...i,i,...i->...", w, eig, w) - w @ b  # noqa: E731
    f_star = F(w_star)
    jac = lambda w: eig * w - b  # noqa: E731
    T, tol = 3000, 1e-8 * (F(np.zeros(30)) - f_star)
    gd = solvers.gradient_descent(F, np.zeros(30), jac=jac, step=1.0, n_iter=T, return_path=True)
    agd = solvers.nesterov(F, np.zeros(30), jac=jac, smoothness=1.0, mu=1e-3, n_iter=T, return_path=True)
    first = lambda path: int(np.argmax(F(path) - f_star <= tol)) if np.any(F(path) - f_star <= tol) else T + 1  # noqa: E731,E501
    it_gd, it_agd = first(gd.path), first(agd.path)
    assert it_agd < T and it_gd > 5 * it_agd, (it_gd, it_agd)
    # theory: (1 − 1/√κ)^t (F0 − F* + μ‖x0 − x*‖²/2) bounds AGD at every t
    bound = (1 - 1 / np.sqrt(1e3)) ** np.arange(T + 1) * (F(np.zeros(30)) - f_star + 0.5e-3 * w_star @ w_star)
    assert np.all(F(agd.path) - f_star <= bound + 1e-13 * abs(f_star))  # + rounding of F


def test_agd_vectorised_over_draws():
    prob = make_problem()
    x0 = np.random.default_rng(3).standard_normal((2, prob.p))
    both = solvers.nesterov(prob, x0, n_iter=30)
    for k in range(2):
        np.testing.assert_allclose(solvers.nesterov(prob, x0[k], n_iter=30).x, both.x[k], rtol=1e-12)


# -- stochastic solvers ---------------------------------------------------------------------------
def test_katyusha_converges_in_expectation(reference):
    prob, ref = reference["logistic-01"]
    gaps = {S: np.mean([solvers.katyusha(prob, rng=np.random.default_rng(s), n_epochs=S).fun - ref.fun
                        for s in range(4)]) for S in (1, 4, 12)}
    assert gaps[12] <= 1e-10 and gaps[1] > gaps[4] > gaps[12]
    res = solvers.katyusha(prob, rng=np.random.default_rng(0), n_epochs=2)
    assert res.n_grad_evals == 2 * (1 + 2)  # snapshot + m = 2n cached-GLM inner steps
    with pytest.raises(ValueError):
        solvers.katyusha(make_problem(l2=0.0), rng=np.random.default_rng(0), n_epochs=1)


def test_katyusha_epoch_matches_allen_zhu_formulas():
    # One epoch with m = 2 from x̃ = y = z = 0, transcribed from Katyusha's update (Allen-Zhu 2018,
    # option II).
    prob = make_problem()
    L, mu, m = prob.loss.smoothness(prob.radius), prob.l2, 2
    tau1, tau2 = min(np.sqrt(m * mu / (3 * L)), 0.5), 0.5
    a = 1 / (3 * tau1 * L)
    grad_i = lambda x, i: prob.loss.per_example_grad(x, prob.X[i : i + 1], prob.y[i : i + 1])[0]  # noqa: E731
    xt = y = z = np.zeros(prob.p)
    gbar = prob.loss.grad(xt, prob.X, prob.y)
    ys = []
    for i in np.random.default_rng(0).integers(prob.n, size=m):
        x = tau1 * z + tau2 * xt + (1 - tau1 - tau2) * y
        g = gbar + grad_i(x, i) - grad_i(xt, i)
        z_new = (z - a * g) / (1 + a * mu)
        y = x + tau1 * (z_new - z)
        z = z_new
        ys.append(y)
    expected = (ys[0] + (1 + a * mu) * ys[1]) / (1 + (1 + a * mu))
    res = solvers.katyusha(prob, rng=np.random.default_rng(0), n_epochs=1, inner=m)
    np.testing.assert_allclose(res.x, expected, rtol=1e-12)


def test_katyusha_generic_path_matches_glm_path():
    prob = make_problem(n=50)
    opaque = Problem(prob.X, prob.y, OpaqueLoss(), prob.l2)
    a = solvers.katyusha(prob, rng=np.random.default_rng(7), n_epochs=3)
    b = solvers.katyusha(opaque, rng=np.random.default_rng(7), n_epochs=3)
    np.testing.assert_allclose(b.x, a.x, rtol=1e-10)
    assert b.n_grad_evals == 3 * (1 + 2 * 2)  # two per-example gradients per inner step


@pytest.mark.parametrize(("name", "params"), [("huber-hinge", {"h": 0.5}), ("huber", {"delta": 0.5})])
def test_katyusha_blocked_epoch_on_a_glm_other_than_the_logistic(name, params):
    """Smooth GLMs without the logistic's inlined φ': the Huberised hinge (φ' in plain Python,
    solvers._scalar_dphi) and the Huber loss (one numpy call per step), against the step-by-step
    generic path."""
    prob = make_problem(name, params, n=70)
    opaque = Problem(prob.X, prob.y, OpaqueLoss(prob.loss), prob.l2)
    a = solvers.katyusha(prob, rng=np.random.default_rng(5), n_epochs=3, smoothness=2.0)
    b = solvers.katyusha(opaque, rng=np.random.default_rng(5), n_epochs=3, smoothness=2.0)
    np.testing.assert_allclose(a.x, b.x, rtol=1e-11, atol=1e-14)


@pytest.mark.parametrize(("block", "sub"), [(1, 1), (2, 1), (7, 3), (64, 16), (128, 16), (1000, 7), (40, 40)])
def test_katyusha_blocked_epoch_matches_the_step_by_step_recursion(monkeypatch, block, sub):
    """Blocks and sub-blocks of any size (1: the recursion itself; 7 and 3: uneven blocks and
    sub-blocks with partial last ones; 1000: the whole epoch as one block; 40: one sub-block per
    block) give the generic path's iterates to rounding."""
    prob = make_problem(n=60)
    opaque = Problem(prob.X, prob.y, OpaqueLoss(), prob.l2)
    monkeypatch.setattr(solvers, "KATYUSHA_BLOCK", block)
    monkeypatch.setattr(solvers, "KATYUSHA_SUB", sub)
    a = solvers.katyusha(prob, rng=np.random.default_rng(3), n_epochs=4)
    b = solvers.katyusha(opaque, rng=np.random.default_rng(3), n_epochs=4)
    np.testing.assert_allclose(a.x, b.x, rtol=1e-11, atol=1e-14)
    assert not np.allclose(a.x, solvers.katyusha(prob, rng=np.random.default_rng(4), n_epochs=4).x, rtol=1e-6)


def _sgd_pair(prob, seed=3, x0=None, **kw):
    """solvers.sgd with one row per step on ``prob`` (the blocked GLM path) and on the same rows
    behind an opaque loss (the step-by-step loop); the two results."""
    opaque = Problem(prob.X, prob.y, OpaqueLoss(prob.loss), prob.l2)
    x0 = np.zeros(prob.p) if x0 is None else x0
    return [solvers.sgd(p, x0.copy(), rng=np.random.default_rng(seed), **kw) for p in (prob, opaque)]


@pytest.mark.parametrize(("block", "sub"), [(1, 1), (2, 1), (7, 3), (64, 16), (128, 16), (2000, 7), (40, 40)])
@pytest.mark.parametrize("average", [None, "evaluated", "weighted", "uniform"])
def test_sgd_blocked_glm_path_matches_the_step_by_step_loop(monkeypatch, block, sub, average):
    """Batch-1 SGD on a GLM in blocks (steps 2/(μ(t + 2)) with λ = μ, so the first step erases the
    start and runs on its own; the projection acting) gives the loop's iterates and averages to
    rounding, for blocks and sub-blocks of any shape (1: the recursion itself; 7 and 3: partial last
    ones; 2000: the whole run as one block)."""
    prob = make_problem(n=60)
    assert abs(1.0 - 2.0 / (prob.l2 * 2) * prob.l2) < solvers.SGD_MIN_SHRINK
    monkeypatch.setattr(solvers, "SGD_BLOCK", block)
    monkeypatch.setattr(solvers, "SGD_SUB", sub)
    kw = dict(step=lambda t: 2.0 / (prob.l2 * (t + 2)), n_iter=1000, average=average, radius=1.0)
    a, b = _sgd_pair(prob, x0=np.full(prob.p, 0.2), **kw)
    np.testing.assert_allclose(a.x, b.x, rtol=1e-11, atol=1e-14)
    assert a.n_grad_evals == b.n_grad_evals == 1000 / prob.n
    assert np.linalg.norm(_sgd_pair(prob, n_iter=60, step=lambda t: 2.0, radius=0.5)[0].x) == pytest.approx(0.5)
    other = solvers.sgd(prob, np.full(prob.p, 0.2), rng=np.random.default_rng(4), **kw)
    assert not np.allclose(a.x, other.x, rtol=1e-6)


@pytest.mark.parametrize(("name", "params"), [("hinge", {}), ("huber-hinge", {"h": 0.5}), ("huber", {"delta": 0.5})])
def test_sgd_blocked_glm_path_on_losses_other_than_the_logistic(name, params):
    """The hinge and the Huberised hinge (φ' in plain Python) and the Huber regression loss (one numpy
    call per step), with and without the projection."""
    prob = make_problem(name, params, n=70)
    for radius in (None, 0.5):
        a, b = _sgd_pair(prob, step=lambda t: 1.0 / (prob.l2 * (t + 40)), n_iter=700, average="evaluated",
                         radius=radius)
        np.testing.assert_allclose(a.x, b.x, rtol=1e-11, atol=1e-14)


def test_sgd_blocked_glm_path_runs_erasing_steps_alone_and_restarts_underflowing_blocks(monkeypatch):
    """Steps with 1 − ηλ = 0 anywhere in the run (here every 37th: each would make β infinite in a
    block), and steps that shrink the iterate by 10⁻² each (γ would underflow in one block of 400)."""
    monkeypatch.setattr(solvers, "SGD_BLOCK", 400)
    prob = make_problem(n=50, l2=0.5)
    x0 = np.linspace(-1.0, 1.0, prob.p)
    erase = lambda t: 2.0 if t % 37 == 5 else 0.3  # noqa: E731 (2.0 = 1/λ)
    a, b = _sgd_pair(prob, x0=x0, step=erase, n_iter=400, average="uniform", radius=3.0)
    np.testing.assert_allclose(a.x, b.x, rtol=1e-11, atol=1e-14)
    shrink = lambda t: 0.99 / prob.l2  # noqa: E731 (1 − ηλ = 0.01)
    a, b = _sgd_pair(prob, x0=x0, step=shrink, n_iter=400, average="weighted")
    np.testing.assert_allclose(a.x, b.x, rtol=1e-10, atol=1e-14)


@pytest.mark.parametrize("replace", [True, False])
def test_sgd_accounting_determinism_and_projection(replace):
    prob = make_problem()
    kw = dict(step=lambda t: 1.0 / (0.05 * (t + 50)), n_iter=300, batch_size=8, replace=replace)
    a = solvers.sgd(prob, rng=np.random.default_rng(5), **kw)
    b = solvers.sgd(prob, rng=np.random.default_rng(5), **kw)
    np.testing.assert_array_equal(a.x, b.x)
    assert a.n_grad_evals == pytest.approx(300 * 8 / prob.n)
    c = solvers.sgd(prob, rng=np.random.default_rng(5), radius=0.1, average="weighted", **kw)
    assert np.linalg.norm(c.x) <= 0.1 + 1e-12
    with pytest.raises(ValueError):
        solvers.sgd(prob, rng=np.random.default_rng(5), step=0.1, n_iter=1, batch_size=prob.n + 1)


def test_sgd_without_replacement_visits_every_row_once_per_epoch():
    prob = make_problem(n=40)
    seen = []

    class Spy(Problem):
        def batch_grad(self, w, rows):
            seen.append(np.array(rows))
            return super().batch_grad(w, rows)

    spy = Spy(prob.X, prob.y, prob.loss, prob.l2)
    solvers.sgd(spy, rng=np.random.default_rng(0), step=0.1, n_iter=10, batch_size=8, replace=False)
    for epoch in (seen[:5], seen[5:]):
        np.testing.assert_array_equal(np.sort(np.concatenate(epoch)), np.arange(40))


@pytest.mark.parametrize("name, params", SMOOTH, ids=SMOOTH_IDS)
def test_glm_hessian_is_the_derivative_of_the_gradient(name, params, monkeypatch):
    problem = make_problem(name, params, n=300)
    w = np.random.default_rng(1).standard_normal(problem.p)
    h = 1e-6
    numeric = np.array([(problem.grad(w + h * e) - problem.grad(w - h * e)) / (2 * h)
                        for e in np.eye(problem.p)])
    monkeypatch.setattr(solvers, "NEWTON_CHUNK", 128)  # several row blocks
    H = solvers.glm_hessian(problem, w, shift=0.5)
    np.testing.assert_allclose(H, numeric + 0.5 * np.eye(problem.p), rtol=1e-5, atol=1e-7)
    assert np.array_equal(H, H.T)
    # A block with negative curvature (not a convex loss) takes the general product, not √φ''.
    curvature = problem.loss.d2phi
    monkeypatch.setattr(problem.loss, "d2phi", lambda z, y: curvature(z, y) - 0.1)
    shifted = solvers.glm_hessian(problem, w, shift=0.5)
    np.testing.assert_allclose(shifted, H - 0.1 * (problem.X.T @ problem.X) / problem.n, rtol=1e-12, atol=1e-12)


def test_glm_hessian_leaves_out_rows_of_zero_curvature_and_whole_flat_blocks(monkeypatch):
    """The Huberised hinge is flat outside its band: those rows add nothing, and a block with
    no curved row at all adds nothing either (the sum is still Xᵀ diag(φ'') X / n + λ)."""
    problem = make_problem("huber-hinge", {"h": 0.5}, n=300)
    w = np.random.default_rng(2).standard_normal(problem.p)
    c = problem.loss.d2phi(problem.X @ w, problem.y)
    c[:128] = 0.0  # the first block: flat
    starts = iter(range(0, 300, 128))  # glm_hessian asks for the blocks' curvatures in order
    monkeypatch.setattr(problem.loss, "d2phi", lambda z, y: c[(i := next(starts)):i + len(z)])
    monkeypatch.setattr(solvers, "NEWTON_CHUNK", 128)
    assert 0 < np.count_nonzero(c[128:]) < 172  # some flat rows outside the first block too
    H = solvers.glm_hessian(problem, w)
    dense = (problem.X.T * c) @ problem.X / problem.n + problem.l2 * np.eye(problem.p)
    np.testing.assert_allclose(H, dense, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("name, params", SMOOTH, ids=SMOOTH_IDS)
def test_single_precision_hessian_is_the_exact_one_to_float32_rounding(name, params, monkeypatch):
    """``single=True`` forms each block in float32 and sums in float64: every entry within a
    few float32 roundings of the largest, the matrix still symmetric, across several blocks."""
    problem = make_problem(name, params, n=1000)
    w = np.random.default_rng(4).standard_normal(problem.p)
    monkeypatch.setattr(solvers, "SINGLE_CHUNK", 128)
    exact = solvers.glm_hessian(problem, w, shift=0.5)
    single = solvers.glm_hessian(problem, w, shift=0.5, single=True)
    assert single.dtype == np.float64 and np.array_equal(single, single.T)
    scale = np.abs(exact).max()
    assert 0 < np.abs(single - exact).max() <= 1e-6 * scale  # float32 was used, and only that


def _one_hot_problem(name="logistic", params=None, read_only=True, n=3000):
    """Rows like the encoded data sets: a bias, 4 numeric columns in [0, 1] and 8 one-hot groups
    of 12 (13 of 101 entries non-zero, 303,000 entries: one-weight products go through CSR),
    read-only as the protocol's training folds are."""
    rng = np.random.default_rng(6)
    loss = get_loss(name, **(params or {}))
    X = np.zeros((n, 101))
    X[:, 0], X[:, 1:5] = 1.0, rng.random((n, 4))
    for g in range(8):
        X[np.arange(n), 5 + 12 * g + rng.integers(0, 12, n)] = 1.0
    X /= np.linalg.norm(X, axis=1).max()
    logits = (X - X.mean(0)) @ (3.0 * rng.standard_normal(101))
    y = to_label_form((rng.random(n) < 1 / (1 + np.exp(-logits))).astype(float), loss.labels)
    X.flags.writeable = not read_only
    return Problem(X, y, loss, 1e-3)


@pytest.mark.parametrize("name, params", [("logistic", None), ("huber-hinge", {"h": 0.5})],
                         ids=["logistic", "huber-hinge"])
def test_single_precision_hessian_reads_the_folds_float32_rows_and_csr_margins(name, params, monkeypatch):
    """On read-only one-hot rows the single-precision Hessian takes its margins from the CSR copy
    and its blocks from the float32 rows kept for the fold (``Problem.rows32``): both are then in
    the fold's store, and the result is the exact Hessian to float32 rounding, rounded otherwise
    than from float64 rows (a writeable copy of the same rows, where nothing is kept) where
    √φ'' is not exact."""
    import scipy.sparse

    monkeypatch.setattr(solvers, "SINGLE_CHUNK", 700)  # several blocks, the last one short
    problem = _one_hot_problem(name, params)
    w = np.random.default_rng(7).standard_normal(problem.p)
    seen = []
    curvature = problem.loss.d2phi
    monkeypatch.setattr(problem.loss, "d2phi", lambda z, y: seen.append(np.array(z)) or curvature(z, y))
    single = solvers.glm_hessian(problem, w, shift=0.5, single=True)
    assert len(seen) == 1 and np.array_equal(seen[0], problem.shared["csr"] @ w)
    assert scipy.sparse.issparse(problem.shared["csr"])
    assert problem.shared["rows32"][1].dtype == np.float32
    rows32 = problem.rows32  # the blocks are read from that copy: doubled, it gives 4 (1/n) Sᵀ S
    monkeypatch.setattr(problem, "rows32", lambda kept_only=False: rows32(kept_only) * np.float32(2))
    shift = (problem.l2 + 0.5) * np.eye(problem.p)
    doubled = solvers.glm_hessian(problem, w, shift=0.5, single=True)
    np.testing.assert_allclose(doubled - shift, 4 * (single - shift), rtol=1e-12, atol=1e-15)
    exact = solvers.glm_hessian(problem, w, shift=0.5)
    scale = np.abs(exact).max()
    assert np.array_equal(single, single.T) and 0 < np.abs(single - exact).max() <= 1e-6 * scale
    writeable = Problem(np.array(problem.X), problem.y, problem.loss, problem.l2)
    from_float64 = solvers.glm_hessian(writeable, w, shift=0.5, single=True)
    assert "rows32" not in writeable.shared  # a writeable X keeps nothing
    # the other rounding of S; the Huberised hinge's √φ'' is 0 or 1 here (h = 0.5), so both give x̃
    assert np.array_equal(from_float64, single) == (name == "huber-hinge")
    assert np.abs(from_float64 - exact).max() <= 1e-6 * scale


def test_single_precision_hessian_makes_no_float32_copy_of_rows_too_large_to_keep(monkeypatch):
    """A fold whose float32 copy would not be kept (over ``KEEP_PER_FOLD_BYTES``: a KDDCup99 fold)
    gets no copy made per call: its blocks are rounded from the float64 rows, as for writeable
    rows, to the same bits."""
    from dperm import problem as problem_module

    problem = _one_hot_problem()
    w = np.random.default_rng(8).standard_normal(problem.p)
    monkeypatch.setattr(problem_module, "KEEP_PER_FOLD_BYTES", problem.X.size * 4 - 1)
    made = []
    monkeypatch.setattr(problem, "rows_cached", lambda *a, **k: made.append(a) or pytest.fail("copy made"))
    big = solvers.glm_hessian(problem, w, single=True)
    assert made == [] and "rows32" not in problem.shared
    writeable = Problem(np.array(problem.X), problem.y, problem.loss, problem.l2)
    assert np.array_equal(big, solvers.glm_hessian(writeable, w, single=True))


def test_problem_scores_are_the_margins_through_csr_or_dense_rows():
    problem = _one_hot_problem()
    w = np.random.default_rng(9).standard_normal(problem.p)
    np.testing.assert_allclose(problem.scores(w), problem.X @ w, rtol=1e-13, atol=1e-14)
    dense = make_problem(n=50)
    assert np.array_equal(dense.scores(w[:dense.p]), dense.X @ w[:dense.p])


@pytest.mark.parametrize("l2", [1e-3, 1e-7])
def test_glm_newton_certifies_the_same_minimiser_as_exact_newton(l2):
    """Single-precision Hessians move Newton's iterates, not its answer: both runs stop at
    ‖∇F‖ ≤ gtol (float64 gradients), so they agree within the certified distance ‖∇F‖/λ, in
    about as many steps, down to λ = 1e-7 (condition number in the millions)."""
    problem = make_problem(n=2000, d=8, l2=l2, seed=2)
    exact = solvers.newton(problem.value_and_grad, lambda w: solvers.glm_hessian(problem, w),
                           np.zeros(problem.p), 1e-9)
    fast = solvers.glm_newton(problem, np.zeros(problem.p), 1e-9)
    assert exact.success and fast.success and fast.grad_norm <= 1e-9
    assert np.abs(fast.x - exact.x).max() <= (fast.grad_norm + exact.grad_norm) / l2
    assert fast.nit <= exact.nit + 2


@pytest.mark.parametrize("name, params", SMOOTH, ids=SMOOTH_IDS)
def test_glm_hessians_are_the_exact_hessian_at_each_row(name, params):
    problem = make_problem(name, params, n=60)
    W = np.random.default_rng(10).standard_normal((4, problem.p))
    stacked = solvers.glm_hessians(problem, W, shift=0.3)
    for w, H in zip(W, stacked):
        np.testing.assert_allclose(H, solvers.glm_hessian(problem, w, shift=0.3), rtol=1e-12, atol=1e-15)


def _linear_tilts(problem, B):
    """F(w) + ⟨b_r, w⟩ for each row b_r of B, in newton_draws' form and one at a time."""
    def many(W, rows):
        f, G = problem.value_and_grad(W)
        return f + np.einsum("ij,ij->i", B[rows], W), G + B[rows]

    def one(r):
        def vg(w):
            f, g = problem.value_and_grad(w)
            return f + B[r] @ w, g + B[r]
        return vg

    return many, one


def test_newton_draws_takes_each_problems_newton_steps_together():
    """k problems F + ⟨b_r, w⟩ solved at once: each certified, at the lone Newton solve's answer
    (one exact Hessian form) within the certified distance, in as many steps and evaluations
    (the same rule per problem, the finished ones dropping out)."""
    problem = make_problem(n=80, d=3, l2=0.05, seed=3)
    B = np.random.default_rng(11).standard_normal((30, problem.p)) * np.geomspace(1e-3, 3.0, 30)[:, None]
    many, one = _linear_tilts(problem, B)
    X, F, G, nit, evals = solvers.newton_draws(many, lambda W, rows: solvers.glm_hessians(problem, W),
                                               np.zeros((30, problem.p)), 1e-10)
    assert np.all(np.linalg.norm(G, axis=1) <= 1e-10)
    assert len(set(nit.tolist())) > 1  # the problems needed different step counts
    seen = []  # in groups of 7 (the last one of 2): each problem sees its own tilt, the same answers
    grouped = solvers.newton_draws(lambda W, rows: seen.append(rows.copy()) or many(W, rows),
                                   lambda W, rows: solvers.glm_hessians(problem, W), np.zeros((30, problem.p)), 1e-10,
                                   group=7)
    assert max(len(rows) for rows in seen) == 7 and sorted({int(r) for rows in seen for r in rows}) == list(range(30))
    np.testing.assert_array_equal(grouped[3], nit)
    assert np.abs(grouped[0] - X).max() <= 2e-10 / problem.l2
    for r in range(30):
        lone = solvers.newton(one(r), lambda w: solvers.glm_hessian(problem, w), np.zeros(problem.p), 1e-10)
        assert np.abs(X[r] - lone.x).max() <= (lone.grad_norm + np.linalg.norm(G[r])) / problem.l2
        assert (nit[r], evals[r]) == (lone.nit, lone.n_grad_evals)
        assert F[r] == pytest.approx(lone.fun, rel=1e-13)


def test_newton_draws_stops_a_problem_no_step_helps_and_caps_the_steps():
    """A problem whose Hessian gives an ascent direction stops where it is (t below 10⁻¹²), its
    steps 0, while the others converge; ``max_iter`` caps every problem's steps."""
    problem = make_problem(n=80, d=3, l2=0.05, seed=3)
    B = np.random.default_rng(12).standard_normal((5, problem.p))
    many, _ = _linear_tilts(problem, B)

    def hessian(W, rows):
        H = solvers.glm_hessians(problem, W)
        H[rows == 2] *= -1.0  # problem 2: Newton's direction climbs
        return H

    X, F, G, nit, evals = solvers.newton_draws(many, hessian, np.zeros((5, problem.p)), 1e-10)
    norms = np.linalg.norm(G, axis=1)
    assert nit[2] == 0 and np.array_equal(X[2], np.zeros(problem.p)) and norms[2] > 1e-10
    assert evals[2] == 1 + 40  # the start, then t = 1, 1/2, …, 2⁻³⁹ (the last one of at least 10⁻¹²)
    assert np.all(norms[[0, 1, 3, 4]] <= 1e-10)
    capped = solvers.newton_draws(many, lambda W, rows: solvers.glm_hessians(problem, W), np.zeros((5, problem.p)),
                                  1e-10, max_iter=1)
    assert np.all(capped[3] == 1) and np.all(np.linalg.norm(capped[2], axis=1) > 1e-10)


def test_newton_retries_a_failed_step_with_the_exact_hessian():
    """An approximate Hessian whose direction climbs (−H) gives no acceptable step: alone,
    Newton stops where it started; with ``exact_hessian`` it retries from the exact one and
    converges. Every accepted step then came from the exact Hessian (the calls show it)."""
    problem = make_problem(n=300)
    calls = []

    def wrong(w):
        calls.append("approx")
        return -solvers.glm_hessian(problem, w)

    def exact(w):
        calls.append("exact")
        return solvers.glm_hessian(problem, w)

    alone = solvers.newton(problem.value_and_grad, wrong, np.zeros(problem.p), 1e-9)
    assert not alone.success and alone.nit == 0 and np.array_equal(alone.x, np.zeros(problem.p))
    calls.clear()
    res = solvers.newton(problem.value_and_grad, wrong, np.zeros(problem.p), 1e-9, exact_hessian=exact)
    assert res.success and res.grad_norm <= 1e-9
    assert calls == ["approx", "exact"] * res.nit


def test_lbfgs_stall_test_fires_only_when_iterates_run_off_without_progress():
    """``stall``'s test (solvers._runaway): it stops a run whose best ‖∇F‖ has not halved over
    the window while ‖x‖ more than doubled (KDDCup99's unregularised logistic fit: ‖∇F‖ stuck
    near 1e-7 while ‖x‖ grows into the tens of thousands), and neither a run that keeps
    improving its gradient nor one whose iterates settle."""
    from types import SimpleNamespace

    def fires(gradients, norms, window):
        track, callback = solvers._runaway(window)
        grads = iter(gradients)
        objective = track(lambda x: (0.0, np.array([next(grads)])))
        for norm in norms:
            objective(None)
            try:
                callback(SimpleNamespace(x=np.array([norm])))
            except StopIteration:
                return True
        return False

    k = np.arange(60)
    assert fires(1e-7 * (1 + (k % 3)), 1.0 + 0.2 * k**2, 10)  # stalled gradient, running iterates
    assert not fires(0.9 ** k, 1.0 + 0.2 * k**2, 10)  # the gradient keeps halving within the window
    assert not fires(1e-7 * (1 + (k % 3)), 5.0 - 1.0 / (1.0 + k), 10)  # stalled but the iterates settle


def test_nonprivate_stops_running_off_only_without_a_regulariser_and_changes_no_converging_fit(monkeypatch):
    """NonPrivate asks L-BFGS for the ``stall`` stop at λ = 0 only (where a minimiser may not
    exist), and a λ = 0 fit that converges comes out the same with and without it."""
    from dperm.algorithms import Privacy, get_algorithm

    rng = np.random.default_rng(2)
    n = 400
    X = np.column_stack([np.ones(n), rng.normal(size=(n, 3))])
    y = (rng.random(n) < 1.0 / (1.0 + np.exp(-X[:, 1]))).astype(float)
    seen = []
    original = solvers.lbfgs

    def spy(*args, **kwargs):
        seen.append(kwargs.get("stall"))
        return original(*args, **kwargs)

    monkeypatch.setattr(solvers, "lbfgs", spy)
    spec = get_algorithm("nonprivate")
    free = spec.fit(Problem(X, y, Logistic(), 0.0), Privacy(math.inf, 0.0), np.random.default_rng(0))
    spec.fit(Problem(X, y, Logistic(), 0.1), Privacy(math.inf, 0.0), np.random.default_rng(0))
    assert seen[0] is not None and seen[1] is None
    plain = original(Problem(X, y, Logistic(), 0.0), np.zeros(4), gtol=1e-8, max_iter=5000)
    assert plain.success and np.array_equal(free.weights[0], plain.x) and free.iterations == plain.nit
