"""RRPSGD: distribution of R, noise scale, ε > 1 handling, public D_F bound, metric, inputs."""

import math

import numpy as np
import pytest
from scipy import stats

from dperm.algorithms import Privacy, get_algorithm
from dperm.algorithms.bassily import noisy_sgd_calibration
from dperm.algorithms.rrpsgd import public_initial_loss_bound, round_distribution, theorem4_noise_std
from dperm.losses import MLP, Hinge, Huber, HuberHinge, Logistic
from dperm.privacy import advanced_composition
from dperm.problem import Problem

FIT = get_algorithm("rrpsgd").fit


def problem(n=100, p=4, l2=1e-3, seed=0, loss=None, zero=False):
    rng = np.random.default_rng(seed)
    X = np.zeros((n, p)) if zero else rng.normal(size=(n, p)) / math.sqrt(p)
    y = (rng.random(n) < 0.5).astype(float)
    loss = loss or Logistic()
    return Problem(X, 2 * y - 1 if loss.labels == "pm1" else y, loss, l2)


def test_rounds_are_uniform_for_a_constant_step():
    N, draws = 8, 4000
    res = FIT(problem(), Privacy(1.0, 1e-5), np.random.default_rng(0), max_steps=N, draws=draws)
    rounds = res.extra["rounds"]
    assert rounds.min() >= 1 and rounds.max() <= N and np.array_equal(res.iterations, rounds)
    counts = np.bincount(rounds, minlength=N + 1)[1:]
    assert stats.chisquare(counts).pvalue > 1e-3
    assert res.grad_evals == pytest.approx(rounds.mean() / 100)


def test_round_distribution_follows_theorem5():
    eta = np.array([0.1, 0.5, 1.0, 1.5])
    p = round_distribution(eta, beta=1.0)
    w = 2 * eta - eta ** 2
    assert np.allclose(p, w / w.sum()) and p.sum() == pytest.approx(1.0)
    with pytest.raises(ValueError, match="2/beta"):
        round_distribution(np.array([0.5, 2.5]), beta=1.0)


def test_theorem4_noise_scale_is_applied():
    """Rows of zeros give zero loss gradients, so with R forced to 1 and λ = 0 the single update
    is w₁ = −η z: the empirical std of −w₁/η must be s = 2L√(ln(3n/δ) ln(2/δ))/ε per coordinate."""
    n, eps, delta = 100, 0.7, 1e-5
    res = FIT(problem(n=n, l2=0.0, zero=True), Privacy(eps, delta), np.random.default_rng(1), max_steps=1,
              draws=3000)
    s = 2.0 * math.sqrt(math.log(3 * n / delta) * math.log(2 / delta)) / eps
    assert res.extra["noise_std"] == pytest.approx(s) == theorem4_noise_std(eps, delta, n, 1.0)
    z = -res.weights / res.extra["learning_rate"]
    assert z.std() == pytest.approx(s, rel=0.03) and abs(z.mean()) < 4 * s / math.sqrt(z.size)
    # Theorem 5's σ² = 4L² + 4dL² ln(3n/δ) ln(2/δ)/ε² (d = p), the per-coordinate density variance × d
    logs = math.log(3 * n / delta) * math.log(2 / delta)
    assert res.extra["sigma_total"] ** 2 == pytest.approx(4 + 4 * 4 * logs / eps ** 2)


def test_theorem4_refuses_epsilon_above_one_calibrated_does_not():
    data = problem()
    with pytest.raises(ValueError, match="epsilon=1.5"):
        FIT(data, Privacy(1.5, 1e-5), np.random.default_rng(0), max_steps=10)
    res = FIT(data, Privacy(1.5, 1e-5), np.random.default_rng(0), max_steps=1000, noise="calibrated")
    assert res.extra["noise"] == "calibrated"
    cal = noisy_sgd_calibration(1.5, 1e-5, 100, 1, 1000, 1.0, gaussian="zhao")
    assert res.extra["noise_std"] == pytest.approx(cal["sigma"])
    eps_step = math.log1p((1 / 100) * math.expm1(cal["epsilon_base"]))
    total = advanced_composition(eps_step, cal["delta_step"], 1000, 1e-5 / 2)
    assert total[0] <= 1.5 * (1 + 1e-9) and total[1] <= 1e-5 * (1 + 1e-9)


def test_theorem4_covers_at_most_n_squared_rounds():
    with pytest.raises(ValueError, match="max_steps"):
        FIT(problem(n=10), Privacy(1.0, 1e-5), np.random.default_rng(0), max_steps=101)


def test_public_initial_loss_bounds():
    zero = np.zeros(3)
    assert public_initial_loss_bound(Logistic(), zero, 3) == pytest.approx(math.log(2))
    assert public_initial_loss_bound(Logistic("pm1"), zero, 3) == pytest.approx(math.log(2))
    assert public_initial_loss_bound(Hinge(), zero, 3) == pytest.approx(1.0)
    assert public_initial_loss_bound(HuberHinge(0.5), zero, 3) == pytest.approx(1.0)  # q = 1 + h > 2h: q − h
    assert public_initial_loss_bound(Huber(1.0), zero, 3) == pytest.approx(0.5)  # h(−1) for y = 1
    with pytest.raises(ValueError, match="w0 = 0"):
        public_initial_loss_bound(Logistic(), np.ones(3), 3)
    # MLP at a random initialisation: the bound holds for every row of arbitrary data
    mlp, rng = MLP(hidden=5), np.random.default_rng(2)
    theta = mlp.init(rng, 4)
    bound = public_initial_loss_bound(mlp, theta, 4)
    X = rng.normal(size=(500, 4)) * 10
    for t in (0.0, 1.0):
        assert mlp.per_example_value(theta, X, np.full(500, t)).max() <= bound


def test_step_size_uses_the_public_bound_and_reports_the_metric():
    data = problem(n=200)
    res = FIT(data, Privacy(1.0, 1e-5), np.random.default_rng(3), max_steps=500, draws=2)
    beta = 0.25 + 1e-3  # logistic at ‖x‖ ≤ 1, plus λ
    D_F = math.sqrt(2 * math.log(2) / beta)
    assert res.extra["smoothness"] == pytest.approx(beta) and res.extra["D_F"] == pytest.approx(D_F)
    eta = min(1 / beta, D_F / (res.extra["sigma_total"] * math.sqrt(500)))
    assert res.extra["learning_rate"] == pytest.approx(eta)
    g = data.grad(res.weights)
    assert np.allclose(res.extra["grad_norm_sq"], (g * g).sum(axis=1))


def test_mlp_needs_clip_and_smoothness_and_then_runs():
    data = problem(n=50, loss=MLP(hidden=3))
    with pytest.raises(ValueError, match="clip"):
        FIT(data, Privacy(1.0, 1e-5), np.random.default_rng(0), max_steps=5)
    with pytest.raises(ValueError, match="smoothness"):
        FIT(data, Privacy(1.0, 1e-5), np.random.default_rng(0), max_steps=5, clip=1.0)
    res = FIT(data, Privacy(1.0, 1e-5), np.random.default_rng(0), max_steps=20, clip=1.0, smoothness=2.0, draws=2)
    assert res.weights.shape == (2, data.p) and np.all(np.isfinite(res.extra["grad_norm_sq"]))


def test_deterministic_and_draws_independent():
    data = problem()
    a = FIT(data, Privacy(0.5, 1e-5), np.random.default_rng(4), max_steps=100, draws=3)
    b = FIT(data, Privacy(0.5, 1e-5), np.random.default_rng(4), max_steps=100, draws=3)
    assert np.array_equal(a.weights, b.weights) and len({tuple(w) for w in a.weights}) == 3
    assert a.adjacency == "replace-one"


@pytest.mark.parametrize("kwargs,match", [
    ({"noise": "laplace"}, "noise"), ({"max_steps": 0}, "max_steps"), ({"row_bound": -1.0}, "row_bound"),
    ({"smoothness": 0.0}, "smoothness"), ({"initial_loss_bound": -1.0}, "initial_loss_bound"),
    ({"noise": "calibrated", "gaussian": "classical"}, "gaussian"),
])
def test_bad_inputs_name_the_value(kwargs, match):
    with pytest.raises(ValueError, match=match):
        FIT(problem(), Privacy(1.0, 1e-5), np.random.default_rng(0), **{"max_steps": 5, **kwargs})


def test_non_smooth_loss_needs_a_smoothness_value():
    with pytest.raises(ValueError, match="smoothness"):
        FIT(problem(loss=Hinge()), Privacy(1.0, 1e-5), np.random.default_rng(0), max_steps=5)
    with pytest.raises(ValueError, match="delta"):
        FIT(problem(), Privacy(1.0, 0.0), np.random.default_rng(0), max_steps=5)
