"""The tilted objective and the robust logistic loss: values against their definitions, gradients
and Hessian-vector products against finite differences, draws, the sparse path, constants."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse
from scipy.optimize import check_grad

from dperm.losses import Logistic, RobustLogistic, Tilted, loss_range, robust_accuracy
from dperm.problem import Problem


def data(n=60, p=5, seed=0, labels="01"):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p)) / np.sqrt(p)
    y = (rng.random(n) < 0.5).astype(float)
    return X, (y if labels == "01" else 2 * y - 1)


LOSSES = [Tilted(0.0), Tilted(0.3), Tilted(2.5), Tilted(1.0, base="huber-hinge", h=0.5),
          RobustLogistic(0.0), RobustLogistic(0.2), RobustLogistic(0.5, labels="pm1"),
          RobustLogistic(0.3, coordinates=(1, 3, 4))]
IDS = ["tilt0", "tilt0.3", "tilt2.5", "tilt1-huberhinge", "robust0", "robust0.2", "robust0.5-pm1", "robust-subset"]


@pytest.mark.parametrize("loss", LOSSES, ids=IDS)
def test_gradient_and_hvp_match_finite_differences(loss):
    X, y = data(labels=loss.labels)
    rng = np.random.default_rng(1)
    for _ in range(3):
        w0 = rng.normal(size=X.shape[1])
        err = check_grad(lambda w: loss.value(w, X, y), lambda w: loss.grad(w, X, y), w0, epsilon=1e-7)
        assert err < 1e-6 * max(1.0, np.linalg.norm(loss.grad(w0, X, y)))
        v = rng.normal(size=X.shape[1])
        h = 1e-6
        fd = (loss.grad(w0 + h * v, X, y) - loss.grad(w0 - h * v, X, y)) / (2 * h)
        np.testing.assert_allclose(loss.hvp(w0, v, X, y), fd, atol=1e-6)
        f, g = loss.value_and_grad(w0, X, y)
        assert f == pytest.approx(loss.value(w0, X, y), rel=1e-14)
        np.testing.assert_allclose(g, loss.grad(w0, X, y), rtol=1e-13)


@pytest.mark.parametrize("loss", LOSSES, ids=IDS)
def test_draws_and_sparse_rows_give_the_same_numbers(loss):
    X, y = data(n=80, labels=loss.labels)
    W = np.random.default_rng(2).normal(size=(4, X.shape[1]))
    np.testing.assert_allclose(loss.value(W, X, y), [loss.value(w, X, y) for w in W], rtol=1e-13)
    np.testing.assert_allclose(loss.grad(W, X, y), [loss.grad(w, X, y) for w in W], rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(loss.hvp(W, W[::-1], X, y), [loss.hvp(w, v, X, y) for w, v in zip(W, W[::-1])],
                               rtol=1e-12, atol=1e-15)
    S = scipy.sparse.csr_matrix(np.where(np.abs(X) > 0.3, X, 0.0))
    D = S.toarray()
    for w in W:
        assert loss.value(w, S, y) == pytest.approx(loss.value(w, D, y), rel=1e-13)
        np.testing.assert_allclose(loss.grad(w, S, y), loss.grad(w, D, y), rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(loss.hvp(w, W[0], S, y), loss.hvp(w, W[0], D, y), rtol=1e-12, atol=1e-15)


def test_tilted_value_is_its_definition_and_its_limits():
    X, y = data()
    w = np.random.default_rng(3).normal(size=X.shape[1])
    ell = Logistic().per_example_value(w, X, y)
    for t in (0.1, 1.0, 7.0):
        assert Tilted(t).value(w, X, y) == pytest.approx(np.log(np.mean(np.exp(t * ell))) / t, rel=1e-12)
    assert Tilted(0.0).value(w, X, y) == pytest.approx(ell.mean(), rel=1e-14)
    assert Tilted(1e-7).value(w, X, y) == pytest.approx(ell.mean(), rel=1e-6)  # t -> 0: ERM
    assert Tilted(500.0).value(w, X, y) == pytest.approx(ell.max(), rel=2e-2)  # t -> inf: the max loss
    assert np.isfinite(Tilted(1e4).value(w * 100, X, y))  # no overflow


def test_tilted_regulariser_commutes_with_the_tilt():
    X, y = data()
    w = np.random.default_rng(4).normal(size=X.shape[1])
    mu, t = 0.3, 1.7
    ell = Logistic().per_example_value(w, X, y) + 0.5 * mu * w @ w
    assert Problem(X, y, Tilted(t), mu).value(w) == pytest.approx(np.log(np.mean(np.exp(t * ell))) / t, rel=1e-13)


def test_tilted_constants_hold_on_random_points():
    """L and β + tL² bound the gradient norm and the Hessian's largest eigenvalue (rows in the unit ball)."""
    rng = np.random.default_rng(5)
    X = rng.normal(size=(50, 4))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    y = (rng.random(50) < 0.5).astype(float)
    for t in (0.0, 0.5, 3.0):
        loss = Tilted(t)
        worst_g = worst_h = 0.0
        for _ in range(30):
            w = 3 * rng.normal(size=4)
            worst_g = max(worst_g, np.linalg.norm(loss.grad(w, X, y)))
            H = np.column_stack([loss.hvp(w, e, X, y) for e in np.eye(4)])
            worst_h = max(worst_h, np.linalg.eigvalsh((H + H.T) / 2).max())
        assert worst_g <= loss.lipschitz(1.0)
        assert worst_h <= loss.smoothness(1.0)
    assert Tilted(3.0).smoothness(1.0) == pytest.approx(0.25 + 3.0)


def test_loss_range_of_the_logistic_is_R_times_the_radius():
    for R, radius in ((1.0, 4.0), (0.5, 3.0), (1.0, 0.1)):
        assert loss_range(Logistic(), R, radius) == pytest.approx(R * radius, rel=1e-9)


def test_robust_loss_is_the_worst_perturbation_of_the_logistic_loss():
    """ℓ_r(w; x, y) = max over ‖v‖ ≤ r of the logistic loss at x + v; the maximiser is −r·y·w/‖w‖."""
    X, y = data(n=20, labels="pm1")
    rng = np.random.default_rng(6)
    w = rng.normal(size=X.shape[1])
    r = 0.3
    robust = RobustLogistic(r, labels="pm1").per_example_value(w, X, y)
    logistic = Logistic("pm1")
    worst = logistic.per_example_value(w, X - r * y[:, None] * w / np.linalg.norm(w), y)
    np.testing.assert_allclose(robust, worst, rtol=1e-12)
    for _ in range(200):  # no other perturbation of norm r does worse
        v = rng.normal(size=X.shape)
        v *= r / np.linalg.norm(v, axis=1, keepdims=True)
        assert np.all(logistic.per_example_value(w, X + v, y) <= robust + 1e-12)


def test_robust_gradient_norm_is_bounded_by_R_plus_r_and_zero_radius_is_logistic():
    X, y = data(n=30)
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    rng = np.random.default_rng(7)
    loss = RobustLogistic(0.4)
    for _ in range(20):
        w = 5 * rng.normal(size=X.shape[1])
        assert np.linalg.norm(loss.per_example_grad(w, X, y), axis=1).max() <= loss.lipschitz(1.0) + 1e-12
    w = rng.normal(size=X.shape[1])
    assert RobustLogistic(0.0).value(w, X, y) == pytest.approx(Logistic().value(w, X, y), rel=1e-14)
    with pytest.raises(ValueError, match="not differentiable"):
        loss.smoothness(1.0)


def test_robust_accuracy_counts_rows_whose_worst_margin_is_positive():
    X = np.array([[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]])
    y = np.array([1.0, 0.0, 1.0])
    w = np.array([2.0, -1.0])  # margins y<w,x>: 2, 1, 0.5; ||w|| = sqrt(5)
    assert robust_accuracy(w, X, y, 0.0) == pytest.approx(1.0)
    assert robust_accuracy(w, X, y, 0.3) == pytest.approx(2 / 3)  # 0.5 - 0.3*2.236 < 0
    assert robust_accuracy(w, X, y, 0.5) == pytest.approx(1 / 3)
    assert robust_accuracy(np.vstack([w, -w]), X, y, 0.0).tolist() == [1.0, 0.0]


def test_robust_subgradient_at_zero_has_least_norm():
    """At w = 0 the r‖w‖ kink offers ‖c·v‖ ≤ c against the smooth part g_s: the gradient is 0
    when ‖g_s‖ ≤ c (w = 0 minimises the loss part) and g_s(1 − c/‖g_s‖) otherwise."""
    X, y = data(n=40)
    zero = np.zeros(X.shape[1])
    g_s = Logistic().grad(zero, X, y)
    c_big, c_small = 2 * np.linalg.norm(g_s) / 0.5, 0.5 * np.linalg.norm(g_s) / 0.5  # c = r/2 at w = 0
    np.testing.assert_array_equal(RobustLogistic(c_big).grad(zero, X, y), 0.0)
    np.testing.assert_allclose(RobustLogistic(c_small).grad(zero, X, y), 0.5 * g_s, rtol=1e-12)
    both = RobustLogistic(c_small).grad(np.vstack([zero, np.ones(X.shape[1])]), X, y)
    np.testing.assert_allclose(both[0], 0.5 * g_s, rtol=1e-12)
    np.testing.assert_allclose(both[1], RobustLogistic(c_small).grad(np.ones(X.shape[1]), X, y), rtol=1e-12)


def test_an_attack_on_some_coordinates_is_the_worst_perturbation_supported_there():
    """With attack coordinates A, ℓ_r is the max over ‖v‖ ≤ r with v zero outside A, the margin
    y⟨w, x⟩ − r‖w_A‖; robust_accuracy counts with the same margin; the least-norm subgradient at
    the kink w_A = 0 leaves the other coordinates' gradient alone."""
    X, y = data(n=20, labels="pm1")
    rng = np.random.default_rng(9)
    w, r, A = rng.normal(size=X.shape[1]), 0.3, (0, 2)
    loss = RobustLogistic(r, labels="pm1", coordinates=A)
    w_a = np.zeros_like(w)
    w_a[list(A)] = w[list(A)]
    worst = Logistic("pm1").per_example_value(w, X - r * y[:, None] * w_a / np.linalg.norm(w_a), y)
    np.testing.assert_allclose(loss.per_example_value(w, X, y), worst, rtol=1e-12)
    for _ in range(200):
        v = np.zeros_like(X)
        v[:, list(A)] = rng.normal(size=(len(y), len(A)))
        v *= r / np.linalg.norm(v, axis=1, keepdims=True)
        assert np.all(Logistic("pm1").per_example_value(w, X + v, y) <= loss.per_example_value(w, X, y) + 1e-12)
    margins = y * (X @ w) - r * np.linalg.norm(w_a)
    assert robust_accuracy(w, X, y, r, A) == pytest.approx(np.mean(margins > 0))
    kink = w.copy()
    kink[list(A)] = 0.0
    plain = Logistic("pm1").grad(kink, X, y)
    g = loss.grad(kink, X, y)
    outside = [j for j in range(X.shape[1]) if j not in A]
    np.testing.assert_allclose(g[outside], plain[outside], rtol=1e-12)
    assert np.linalg.norm(g[list(A)]) <= np.linalg.norm(plain[list(A)]) + 1e-15
    with pytest.raises(ValueError, match="distinct column indices"):
        RobustLogistic(0.1, coordinates=(1, 1))
