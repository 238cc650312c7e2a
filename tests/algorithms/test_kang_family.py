"""The algorithms of the Kang et al. comparison: DP-LSSGD (smoothing, σ_LS = 0 is DP-SGD, the
shared calibration), OutPert-SGD (bolt-on sensitivity on adversarial neighbours), PIDP-SGD
(influence vs leave-one-out, the MLP approximation, the noise-free test), DP-GD with individual
filters (the ledger), and the end-to-end audits."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.special import ndtr

from dperm import audit
from dperm.algorithms import Privacy, dp_sgd, get_algorithm, outpert_sgd, pidp_sgd
from dperm.algorithms.dp_gd_filter import filter_calibration, run_filter
from dperm.algorithms.dp_lssgd import smoothing
from dperm.algorithms.pidp_sgd.chains import contributions
from dperm.algorithms.pidp_sgd.noise_test import _log_row_probability as _exact_rows
from dperm.losses import MLP, Logistic
from dperm.privacy import epsilon_sampled_gaussian
from dperm.problem import Problem


def logistic_problem(n=300, p=6, seed=0, l2=0.0, loss=None):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    X /= np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1.0)
    w = rng.normal(size=p)
    y = (X @ w + 0.3 * rng.normal(size=n) > 0).astype(float)
    return Problem(X, y, Logistic() if loss is None else loss, l2)


# -- DP-LSSGD ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("m", [1, 2, 3, 8, 17])
@pytest.mark.parametrize("sigma", [0.0, 0.5, 3.0])
def test_fft_smoothing_equals_the_dense_solve(m, sigma):
    rng = np.random.default_rng(m)
    V = rng.normal(size=(4, m))
    dense = np.linalg.solve(smoothing.smoothing_matrix(m, sigma), V.T).T
    np.testing.assert_allclose(smoothing.smooth(V, sigma), dense, atol=1e-12)


def test_smoother_acts_on_each_mlp_tensor_separately():
    prob = Problem(np.random.default_rng(1).normal(size=(10, 4)), np.arange(10) % 2 * 1.0, MLP(hidden=3))
    blocks = smoothing.parameter_blocks(prob)
    assert [b.stop - b.start for b in blocks] == [12, 3, 3, 1] and blocks[-1].stop == prob.p
    V = np.random.default_rng(2).normal(size=(2, prob.p))
    out = smoothing.laplacian_smoother(prob, 1.5)(V)
    for b in blocks:
        np.testing.assert_allclose(out[:, b], smoothing.smooth(V[:, b], 1.5), atol=1e-12)


@pytest.mark.parametrize("loss", [Logistic(), MLP(hidden=4)], ids=["lr", "mlp"])
def test_dp_lssgd_at_sigma_zero_is_dp_sgd_bit_for_bit(loss):
    prob = logistic_problem(n=200, p=5, loss=loss)
    hyper = {"epochs": 2.0, "batch_size": 20, "learning_rate": 0.5}
    a = get_algorithm("dp-sgd").fit(prob, Privacy(1.0, 1e-5), np.random.default_rng(3), draws=3, **hyper)
    b = get_algorithm("dp-lssgd").fit(prob, Privacy(1.0, 1e-5), np.random.default_rng(3), draws=3, smoothing=0.0,
                                      **hyper)
    assert np.array_equal(a.weights, b.weights)
    c = get_algorithm("dp-lssgd").fit(prob, Privacy(1.0, 1e-5), np.random.default_rng(3), draws=3, **hyper)
    assert not np.array_equal(a.weights, c.weights)
    assert c.extra["noise_multiplier"] == a.extra["noise_multiplier"] and c.epsilon_spent == a.epsilon_spent


def test_dp_lssgd_smooths_the_noisy_direction_of_each_step():
    """One step (q = 1): w_1 = −η·A⁻¹(clipped sum + noise)/n, the noise drawn as DP-SGD draws it."""
    prob = logistic_problem(n=40, p=7)
    fit = get_algorithm("dp-lssgd").fit(prob, Privacy(1.0, 1e-5), np.random.default_rng(5), epochs=1.0,
                                        batch_size=40, learning_rate=1.0, smoothing=2.0)
    plain = get_algorithm("dp-sgd").fit(prob, Privacy(1.0, 1e-5), np.random.default_rng(5), epochs=1.0,
                                        batch_size=40, learning_rate=1.0)
    np.testing.assert_allclose(fit.weights[0], smoothing.smooth(plain.weights[0], 2.0), atol=1e-12)


def test_dp_sgd_and_dp_lssgd_share_one_calibration(monkeypatch):
    calls = []
    real = dp_sgd.calibrate_noise

    def spy(*args, **kwargs):
        calls.append(kwargs.get("algorithm"))
        return real(*args, **kwargs)

    monkeypatch.setattr(dp_sgd, "calibrate_noise", spy)
    prob = logistic_problem(n=100)
    for name in ("dp-sgd", "dp-lssgd"):
        get_algorithm(name).fit(prob, Privacy(0.5, 1e-5), np.random.default_rng(0), epochs=1.0, batch_size=10)
    assert calls == ["dp-sgd", "dp-lssgd"]
    cal = real(Privacy(0.5, 1e-5), 0.1, 10)
    assert cal.epsilon_spent <= 0.5 + 1e-9
    assert epsilon_sampled_gaussian(0.1, cal.noise_multiplier, 10, 1e-5) == pytest.approx(cal.epsilon_spent)


def test_lssgd_reference_noise_formula_matches_the_codes_constants():
    """The DP-LSSGD code's ν for MNIST LR at ε = 0.1 (n = 60,000, T = 4,690, δ = 1e-5): 0.3471."""
    nu = __import__("dperm.algorithms.dp_lssgd", fromlist=["x"]).reference_noise_std(0.1, 1e-5, 1.0, 60_000, 4_690)
    assert nu == pytest.approx(0.3471, abs=5e-4)


# -- OutPert-SGD ------------------------------------------------------------------------------------

def _sgd_path(prob, etas, perms, b, mu):
    w = np.zeros(prob.p)
    t = 0
    m = prob.n // b
    for perm in perms:
        for j in range(m):
            rows = perm[j * b:(j + 1) * b]
            w = w * (1 - etas[t] * mu) - etas[t] * prob.loss.grad(w, prob.X[rows], prob.y[rows])
            t += 1
    return w


@pytest.mark.parametrize("b", [1, 5, 10])
def test_strongly_convex_sensitivity_holds_on_adversarial_neighbours_and_bolton_form_does_not(b):
    """Replace-one neighbours whose differing row has opposite unit rows ±u with the same label
    (gradients pointing apart), on every position of the batch order: the run's divergence stays
    under the derived bound; TensorFlow Privacy's 2L/(γnb) is exceeded for b > 1."""
    n, p, mu, passes = 60, 4, 0.2, 3
    rng = np.random.default_rng(b)
    X = rng.normal(size=(n, p))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    y = (rng.random(n) > 0.5).astype(float)
    beta = 0.25 + mu
    etas = outpert_sgd.step_sizes("strongly-convex", passes * (n // b), beta=beta, gamma=mu, learning_rate=0.0)
    bound = outpert_sgd.worst_case_divergence(etas, gamma=mu, L=1.0, batch_size=b, per_pass=n // b)
    bolton = outpert_sgd.bolton_reference_sensitivity(L=1.0, gamma=mu, n=n, batch_size=b)
    assert bound <= 2.0 / (mu * n) + 1e-12
    worst = 0.0
    for trial in range(6):
        u = rng.normal(size=p)
        u /= np.linalg.norm(u)
        XA, XB, yA, yB = X.copy(), X.copy(), y.copy(), y.copy()
        XA[0], XB[0], yA[0], yB[0] = u, -u, 1.0, 1.0
        A, B = Problem(XA, yA, Logistic(), mu), Problem(XB, yB, Logistic(), mu)
        perms = [np.random.default_rng(100 * trial + k).permutation(n) for k in range(passes)]
        worst = max(worst, np.linalg.norm(_sgd_path(A, etas, perms, b, mu) - _sgd_path(B, etas, perms, b, mu)))
    assert worst <= bound
    if b > 1:
        assert worst > bolton


def test_convex_sensitivity_formula_and_clamp():
    etas = outpert_sgd.step_sizes("convex", 30, beta=0.25, gamma=0.0, learning_rate=0.5)
    assert outpert_sgd.worst_case_divergence(etas, gamma=0.0, L=1.0, batch_size=5, per_pass=10) == pytest.approx(
        2 * 3 * 1.0 * 0.5 / 5)
    prob = logistic_problem(n=100)
    fit = get_algorithm("outpert-sgd").fit(prob, Privacy(1.0, 0.0), np.random.default_rng(0), passes=2,
                                           batch_size=10, learning_rate=100.0)
    assert fit.extra["noise"] == "gamma-norm" and any("clamped" in note for note in fit.notes)
    assert fit.extra["sensitivity"] == pytest.approx(2 * 2 * 1.0 * 8.0 / 10)


def test_outpert_sgd_refuses_the_mlp():
    prob = logistic_problem(n=50, loss=MLP(hidden=3))
    with pytest.raises(ValueError, match="convex"):
        get_algorithm("outpert-sgd").fit(prob, Privacy(1.0, 1e-5), np.random.default_rng(0))


# -- PIDP-SGD ---------------------------------------------------------------------------------------

def test_influence_matches_exact_leave_one_out_retraining():
    """c_z = H⁻¹∇ℓ(θ*; z)/n at the optimum predicts θ*₋z − θ* to O(1/n²)."""
    prob = logistic_problem(n=400, p=5, l2=1e-2, seed=3)
    from dperm import solvers

    theta = solvers.lbfgs(prob, np.zeros(prob.p), gtol=1e-12).x
    model = pidp_sgd._GLMModel(prob, 0.0)
    hinv = np.linalg.inv(model.hessian(theta))
    every = contributions(model, hinv, theta, clip=np.inf)
    for z in (0, 7, 123):
        c = every[z][None]
        keep = np.ones(prob.n, bool)
        keep[z] = False
        loo = Problem(prob.X[keep], prob.y[keep], prob.loss, prob.l2 * prob.n / (prob.n - 1))
        theta_loo = solvers.lbfgs(loo, theta, gtol=1e-12).x
        delta = theta_loo - theta
        np.testing.assert_allclose(c[0], delta, rtol=0.05, atol=1e-6)


def test_mlp_output_layer_influence_is_the_exact_block_solve_and_close_to_the_full_one():
    """The MLP's output-layer influence equals H_out⁻¹g_out/n exactly (a GLM in the hidden
    features); against the output block of the full-Hessian solve on a small trained network
    (25 parameters, XOR-like data, accuracy ≈ 0.86) it keeps the direction (median cosine
    ≈ 0.92) but not the size (median relative error ≈ 0.5), and it ignores the hidden-layer
    coordinates (docs/deviations.md#pidp-unknowns)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 4)) / 2
    y = (X[:, 0] * X[:, 1] + 0.05 * rng.normal(size=300) > 0).astype(float)
    prob = Problem(X, y, MLP(hidden=4), 0.01)
    from dperm import solvers

    theta = solvers.lbfgs(prob, prob.loss.init(rng, 4), gtol=1e-8, max_iter=500, polish=False).x
    assert prob.loss.accuracy(theta, X, y) > 0.8  # a trained network, not the trivial one
    shift = 1e-2
    model = pidp_sgd._MLPModel(prob, shift)
    hinv = np.linalg.inv(model.hessian(theta))
    every = contributions(model, hinv, theta, clip=np.inf)
    P = prob.p
    H = np.column_stack([prob.hvp(theta, e) for e in np.eye(P)])
    H = (H + H.T) / 2 + shift * np.eye(P)
    out = model.out
    G = prob.loss.per_example_grad(theta, X, y)
    agree = []
    for z in range(0, 300, 30):
        c = every[z][None]
        assert c.shape[1] == out.stop - out.start
        block = np.linalg.solve(H[out, out], G[z, out]) / prob.n
        np.testing.assert_allclose(c[0], block, rtol=1e-8, atol=1e-14)
        full = np.linalg.solve(H, G[z]) / prob.n
        agree.append(np.dot(c[0], full[out]) / (np.linalg.norm(c[0]) * np.linalg.norm(full[out])))
    assert np.median(agree) > 0.8


def test_noise_free_test_is_lines_10_and_11_and_simplifies_to_one_threshold():
    eps1, delta1, r = 0.75, 5e-6, 1.0
    thr = pidp_sgd.noise_free_threshold(eps1, delta1, r)
    c = np.array([[thr * 0.999, 0.0], [thr * 1.001, 0.0], [-thr * 0.5, thr * 0.9]])
    assert pidp_sgd.noise_free_test(c, eps1, delta1, r).tolist() == [True, False, True]
    assert thr < 2 * r * math.exp(eps1) * delta1 / math.expm1(eps1)  # line 10's bound never binds


def test_pidp_records_its_noise_free_fraction_and_settings_match_lone_fits():
    prob = logistic_problem(n=100)
    spec = get_algorithm("pidp-sgd-reference")
    hyper = {"steps": 200, "rounds": 2, "radius": 1000.0, "clip": 1e-3, "hessian_shift": 1.0}
    alone = [spec.fit(prob, Privacy(e, 1e-5), np.random.default_rng(i), draws=2, **hyper)
             for i, e in enumerate((0.5, 2.0))]
    together = spec.fit_settings(prob, [Privacy(0.5, 1e-5), Privacy(2.0, 1e-5)],
                                 [np.random.default_rng(0), np.random.default_rng(1)], draws=2, **hyper)
    for a, b in zip(alone, together):
        np.testing.assert_allclose(a.weights, b.weights, rtol=1e-12, atol=1e-15)
        assert np.array_equal(a.extra["noise_free_fraction"], b.extra["noise_free_fraction"])
    assert together[1].extra["noise_free_fraction"].min() > 0.9
    strict = spec.fit(prob, Privacy(1.0, 1e-5), np.random.default_rng(0), steps=100)
    assert strict.extra["noise_free_fraction"][0] == 0.0  # the paper's calibration at r = 1: never


def test_zeta_readings_radius_from_the_start_and_the_exact_noise_free_probability():
    """ζ 'printed' is ‖H(θ̃) + ζ₀I‖₂ (σ_c and E shrink by the Hessian's spread); r = 'start-norm'
    is ‖θ̃‖; with R = 1 every step's test is drawn at θ̃, so the measured noise-free fraction is a
    binomial mean of the exact first-round probability the fit reports."""
    prob = logistic_problem(n=2000, p=4, seed=5)
    spec = get_algorithm("pidp-sgd-reference")
    from dperm import solvers

    base = {"steps": 2000, "rounds": 1, "learning_rate": 0.01, "radius": "start-norm", "start_iterations": 50}
    proof = spec.fit(prob, Privacy(2.0, 1e-5), np.random.default_rng(0), **base)
    printed = spec.fit(prob, Privacy(2.0, 1e-5), np.random.default_rng(0), zeta="printed", **base)
    theta = pidp_sgd.start_point(prob, start="nonprivate", shift=0.0, start_iterations=50)
    assert proof.extra["radius"] == pytest.approx(np.linalg.norm(theta))
    assert np.linalg.norm(theta) == pytest.approx(proof.extra["start_norm"])
    H = solvers.glm_hessian(prob, theta, 1e-3)
    assert printed.extra["zeta"] == pytest.approx(np.linalg.eigvalsh(H)[-1])
    assert proof.extra["zeta"] == pytest.approx(1e-3)
    assert printed.extra["sigma_c"] == pytest.approx(proof.extra["sigma_c"] * 1e-3 / printed.extra["zeta"])
    # a radius large enough for the branch to fire sometimes, not always
    fires = {**base, "radius": 6e4, "zeta": "printed"}
    fit = spec.fit(prob, Privacy(2.0, 1e-5), np.random.default_rng(1), draws=4, **fires)
    p1 = fit.extra["noise_free_probability"]
    assert 0.05 < p1 < 0.95
    measured = fit.extra["noise_free_fraction"].mean()
    assert abs(measured - p1) < 4 * np.sqrt(p1 * (1 - p1) / (4 * fires["steps"]))


def test_noise_free_probability_is_the_product_of_the_coordinate_laws():
    c = np.array([[0.0, 0.01], [0.02, -0.03]])
    thr, sc, E = 0.05, 0.02, 0.001
    from scipy.stats import norm

    def one(row):
        a = 2 * (np.abs(row) + E)
        return np.prod(norm.cdf((thr - a) / sc) - norm.cdf((-thr - a) / sc))

    expected = np.mean([one(r) for r in c])
    assert pidp_sgd.noise_free_probability(c, error=E, sigma_c=sc, threshold=thr) == pytest.approx(expected)
    rest = (2 * norm.cdf(thr / sc) - 1) ** 3
    assert pidp_sgd.noise_free_probability(c, error=E, sigma_c=sc, threshold=thr, rest=3) == \
        pytest.approx(expected * rest)
    # far in the tail it stays finite and tiny rather than nan
    assert 0 <= pidp_sgd.noise_free_probability(np.full((2, 50), 1.0), error=0.0, sigma_c=1e-3, threshold=1e-5) < 1e-300


def _every_row(c, *, error, sigma_c, threshold, rest=0):
    """The exact form on every row, nothing skipped: what noise_free_probability must equal."""
    log_p = _exact_rows(2.0 * (np.abs(c) + error), sigma_c, threshold)
    if rest:
        log_p = log_p + rest * math.log(2.0 * ndtr(threshold / sigma_c) - 1.0)
    return float(np.mean(np.exp(log_p)))


def _counting_rows(monkeypatch):
    from dperm.algorithms.pidp_sgd import noise_test

    seen = []
    exact = noise_test._log_row_probability

    def counted(a, sigma_c, threshold):
        seen.append(a.shape[0])
        return exact(a, sigma_c, threshold)

    monkeypatch.setattr(noise_test, "_log_row_probability", counted)
    return seen


def test_noise_free_probability_skips_only_rows_the_exact_form_rounds_to_zero(monkeypatch):
    """One row at a time, from log-probability about −483 (a ≈ thr) to about −1,280: every row whose
    exact value is above 0.0 is evaluated and equal, and the rows far below −745 are not evaluated."""
    seen = _counting_rows(monkeypatch)
    thr, sc, E, m = 0.01, 1.0, 0.0, 100
    kept = skipped = 0
    for g in np.linspace(0.0, 4.0, 81):  # each coordinate's u = −g: the row's log-probability ≈ −483 − 50·g²
        c = np.full((1, m), (thr + g * sc) / 2.0)
        seen.clear()
        got = pidp_sgd.noise_free_probability(c, error=E, sigma_c=sc, threshold=thr)
        want = _every_row(c, error=E, sigma_c=sc, threshold=thr)
        assert got == want, g
        if want > 0.0:
            assert seen == [1], g  # a row that counts is always evaluated
        kept += bool(seen)
        skipped += not seen
    assert kept >= 30 and skipped >= 20  # both branches ran
    # many rows at once: only the live rows are evaluated, and the mean is the same float
    rows = np.concatenate([np.full((5, m), (thr + g * sc) / 2.0) for g in (0.0, 1.0, 2.0, 3.0, 3.5)])
    seen.clear()
    assert pidp_sgd.noise_free_probability(rows, error=E, sigma_c=sc, threshold=thr) == \
        _every_row(rows, error=E, sigma_c=sc, threshold=thr)
    assert seen == [15]  # g = 0, 1, 2: the rows whose bound is above −800


def test_noise_free_probability_short_cuts_keep_the_value(monkeypatch):
    seen = _counting_rows(monkeypatch)
    rng = np.random.default_rng(3)
    c = rng.standard_normal((40, 6)) * 0.01
    # the MLP's hidden layer: its rest term alone is below −800, so no row is evaluated
    assert pidp_sgd.noise_free_probability(c, error=1e-3, sigma_c=2.0, threshold=0.01, rest=11_000) == 0.0
    assert _every_row(c, error=1e-3, sigma_c=2.0, threshold=0.01, rest=11_000) == 0.0 and seen == []
    # a width below what the rounding argument covers (2·thr/σ_c against |u| ≈ 10⁶): every row evaluated
    c = np.full((3, 2000), 5e5)
    got = pidp_sgd.noise_free_probability(c, error=0.0, sigma_c=1.0, threshold=1e-12)
    assert seen == [3] and got == _every_row(c, error=0.0, sigma_c=1.0, threshold=1e-12) == 0.0
    # a row holding a NaN counts as the exact form counts it, whichever short cut applies
    for scale, rest in ((0.5, 0), (0.5, 11_000), (1e-9, 0)):
        c = np.full((4, 6), scale)
        c[2, 1] = np.nan
        kw = {"error": 0.0, "sigma_c": 1e-3, "threshold": 1e-5, "rest": rest}
        assert pidp_sgd.noise_free_probability(c, **kw) == _every_row(c, **kw)
    # random settings in every regime, with and without a rest term
    for _ in range(200):
        n, m = rng.integers(1, 30), rng.integers(1, 30)
        c = rng.standard_normal((n, m)) * 10 ** rng.uniform(-6, 1) * rng.uniform(0, 3, size=(n, 1))
        kw = {"error": 10 ** rng.uniform(-8, 0), "sigma_c": 10 ** rng.uniform(-3, 3),
              "threshold": 10 ** rng.uniform(-6, 1), "rest": int(rng.choice([0, 3, 1000]))}
        assert pidp_sgd.noise_free_probability(c, **kw) == _every_row(c, **kw), kw


def test_the_control_is_pidp_sgd_without_its_test():
    """dp-sgd-batch1 from θ̃ runs the same chains with every step noisy at the whole ε: its records
    say the start is non-private; from 0 (the default) it is DP and says nothing of the kind."""
    prob = logistic_problem(n=300)
    spec = get_algorithm("dp-sgd-batch1")
    hyper = {"steps": 200, "learning_rate": 0.05, "radius": "start-norm", "start": "nonprivate",
             "start_iterations": 50}
    fit = spec.fit(prob, Privacy(1.0, 1e-5), np.random.default_rng(0), draws=2, **hyper)
    assert fit.adjacency == "replace-one" and any("non-private" in note for note in fit.notes)
    assert "noise_free_fraction" not in fit.extra and fit.epsilon_spent <= 1.0 + 1e-9
    pidp = get_algorithm("pidp-sgd-reference").fit(prob, Privacy(1.0, 1e-5), np.random.default_rng(0), draws=2,
                                                  **hyper)
    assert pidp.extra["noise_multiplier"] > fit.extra["noise_multiplier"]  # 3ε/4 and δ/2 for training
    assert pidp.extra["radius"] == fit.extra["radius"]
    private = spec.fit(prob, Privacy(1.0, 1e-5), np.random.default_rng(0), steps=50, radius=5.0)
    assert not private.notes and np.linalg.norm(private.weights, axis=1).max() <= 5.0 + 1e-9
    with pytest.raises(ValueError, match="start-norm"):
        spec.fit(prob, Privacy(1.0, 1e-5), np.random.default_rng(0), steps=10, radius="start-norm")


# -- DP-GD with individual Rényi filters -----------------------------------------------------------

def test_filter_ledger_charges_each_row_its_own_norm_and_drops_it_at_the_budget():
    prob = logistic_problem(n=80, p=4, seed=2)
    X = prob.X.copy()
    X[:10] *= 0.2  # small-gradient rows: cheap, they should never be dropped
    prob = Problem(X, prob.y, Logistic())
    steps, budget, clip = 40, 12, 0.3
    W, spent, active, dropped_at = run_filter(prob, [2.0], [np.random.default_rng(0)], steps=steps,
                                              budget_steps=budget, learning_rate=1.0, clip=clip)
    assert spent.max() <= budget + 1e-9
    assert active[0, :10].all() and (~active[0]).any()
    # replay the ledger: recompute every row's cost along the released path is not possible from
    # the last iterate, so check the bookkeeping identities instead
    assert np.all((dropped_at[0] >= 0) == ~active[0])
    assert np.all(spent[0, ~active[0]] + 1e-12 >= budget - 1.0)  # dropped only when the next step would overflow
    # a full-norm row (‖g‖ ≥ C every step) affords exactly `budget` steps
    full = Problem(np.ones((5, 1)) * 10.0, np.zeros(5), Logistic())
    _, spent_f, active_f, drop_f = run_filter(full, [1.0], [np.random.default_rng(1)], steps=30, budget_steps=7,
                                              learning_rate=1e-6, clip=0.1)
    assert np.allclose(spent_f, 7.0) and (drop_f == 7).all() and not active_f.any()


def test_filter_calibration_spends_at_most_the_target():
    sigma, alpha, eps = filter_calibration(1.0, 1e-5, 50)
    assert eps <= 1.0 + 1e-9 and alpha > 1 and sigma > 0
    prob = logistic_problem(n=60)
    fit = get_algorithm("dp-gd-filter").fit(prob, Privacy(1.0, 1e-5), np.random.default_rng(0), draws=2, steps=20)
    assert fit.epsilon_spent <= 1.0 + 1e-9 and fit.extra["dropped_fraction"].shape == (2,)
    lone = get_algorithm("dp-gd-filter").fit_settings(prob, [Privacy(1.0, 1e-5)], [np.random.default_rng(0)],
                                                      draws=2, steps=20)[0]
    np.testing.assert_allclose(lone.weights, fit.weights)


def test_filter_on_the_mlp_uses_the_same_decisions_as_the_glm_path_would():
    prob = logistic_problem(n=50, p=3, loss=MLP(hidden=2))
    W, spent, active, _ = run_filter(prob, [1.0, 3.0], [np.random.default_rng(0), np.random.default_rng(1)],
                                     steps=5, budget_steps=2, learning_rate=0.5, clip=0.05)
    assert W.shape == (2, prob.p) and spent.max() <= 2 + 1e-9


# -- end-to-end audits ------------------------------------------------------------------------------

def _audit(name, scale):
    """The privacy audit's own run of ``name``'s cases (dperm.audit: white-box where the case is),
    at ``scale`` of their runs: (claimed ε, the largest ε_LB over the cases)."""
    rows = audit.run_subject(audit.subject(name), seed=0, scale=scale)
    return rows[0]["epsilon_claimed"], max(r["epsilon_lower"] for r in rows)


@pytest.mark.parametrize("name", ["pidp-sgd-reference", "dp-lssgd-reference", "outpert-sgd-reference"])
def test_end_to_end_audit_reference_variants_exceed_their_epsilon(name):
    claimed, lower = _audit(name, 1.0)
    assert lower > claimed


@pytest.mark.parametrize("name", ["dp-sgd", "dp-lssgd", "outpert-sgd", "dp-gd-filter"])
def test_end_to_end_audit_correct_algorithms_stay_within_their_epsilon(name):
    claimed, lower = _audit(name, 0.05)
    assert lower <= claimed


@pytest.mark.parametrize("loss", [None, MLP(hidden=3)], ids=["lr", "mlp"])
def test_every_rows_contribution_at_one_point_equals_the_per_chain_gradient(loss):
    prob = logistic_problem(n=60, p=4, loss=loss)
    model = pidp_sgd._MLPModel(prob, 1e-3) if loss is not None else pidp_sgd._GLMModel(prob, 1e-3)
    w = np.random.default_rng(3).normal(size=prob.p)
    idx = np.arange(prob.n)
    many = model.rows_covered_grads(w, idx, 0.3)
    one_by_one = model.covered_grads(np.repeat(w[None], prob.n, axis=0), idx, 0.3)
    np.testing.assert_allclose(many, one_by_one, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("loss", [None, MLP(hidden=3)], ids=["lr", "mlp"])
def test_chain_gradients_written_into_a_buffer_are_the_clipped_per_row_gradients(loss):
    """The chains' step writes each chain's gradient into a reused (k, p) buffer block by block
    (the MLP's first layer through a reshaped view): every block must hold the row's gradient from
    the loss itself, clipped to norm C."""
    prob = logistic_problem(n=60, p=4, loss=loss)
    model = pidp_sgd._MLPModel(prob, 1e-3) if loss is not None else pidp_sgd._GLMModel(prob, 1e-3)
    rng = np.random.default_rng(5)
    theta, idx, clip = rng.normal(size=(3, prob.p)), np.array([0, 7, 59]), 0.4
    buf = np.full_like(theta, np.nan)
    assert model.grads(theta, idx, clip, out=buf) is buf
    for k, i in enumerate(idx):
        one = Problem(prob.X[i:i + 1], prob.y[i:i + 1], prob.loss, 0.0)
        g = one.value_and_grad(theta[k])[1]
        np.testing.assert_allclose(buf[k], g * min(1.0, clip / np.linalg.norm(g)), rtol=1e-10, atol=1e-13)
    np.testing.assert_array_equal(model.grads(theta, idx, clip), buf)
