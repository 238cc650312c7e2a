"""Losses: gradients, HVPs, per-example quantities, clipping, draws, stability, constants."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import check_grad
from scipy.special import expit

from dperm.losses import (
    LOSSES,
    MLP,
    Logistic,
    NotSmoothError,
    get_loss,
    label_form,
    row_norms,
    to_label_form,
)
from dperm.problem import Problem

CASES = [
    ("logistic", {"labels": "01"}),
    ("logistic", {"labels": "pm1"}),
    ("hinge", {}),
    ("huber-hinge", {"h": 0.5}),
    ("huber", {"delta": 0.3}),
    ("squared", {}),
    ("mlp", {"labels": "01"}),
    ("mlp", {"labels": "pm1", "hidden": 3}),
]
IDS = [f"{name}-{'-'.join(map(str, params.values())) or 'default'}" for name, params in CASES]
N, D = 40, 5


def make_case(name, params, seed=0, n=N, d=D):
    """(loss, X, y, w) with labels in the loss's form and w away from every kink."""
    rng = np.random.default_rng(seed)
    loss = get_loss(name, **params)
    X = rng.standard_normal((n, d)) / np.sqrt(d)
    X[:, 0] = 1.0
    y01 = (rng.random(n) < 0.5).astype(float)
    y = rng.random(n) if loss.labels == "real" else to_label_form(y01, loss.labels)
    w = 2.0 * loss.init(rng, d) if isinstance(loss, MLP) else rng.standard_normal(d)
    if loss.labels == "real":
        w *= 0.3  # residuals on both sides of the Huber threshold
    assert distance_to_kinks(loss, w, X, y) > 1e-4, "test data too close to a kink; change seed"
    return loss, X, y, w


def distance_to_kinks(loss, w, X, y):
    """How far the scores are from points where φ' or φ'' jumps (inf for smooth losses)."""
    z = X @ w if not isinstance(loss, MLP) else np.inf
    kinks = {"hinge": lambda: np.abs(1 - y * z),
             "huber-hinge": lambda: np.minimum(np.abs(1 + loss.h - y * z), np.abs(1 - loss.h - y * z)),
             "huber": lambda: np.abs(np.abs(z - y) - loss.delta)}
    return kinks[loss.name]().min() if loss.name in kinks else np.inf


def draws_of(loss, w, rng, k=3):
    return w + 0.3 * rng.standard_normal((k, w.size))


# -- derivatives ------------------------------------------------------------------------------------
@pytest.mark.parametrize("l2", [0.0, 0.3])
@pytest.mark.parametrize("name,params", CASES, ids=IDS)
def test_gradient_matches_finite_differences(name, params, l2):
    loss, X, y, w = make_case(name, params)
    prob = Problem(X, y, loss, l2)
    g = prob.grad(w)
    err = check_grad(prob.value, prob.grad, w)
    assert err <= 1e-6 * max(1.0, np.linalg.norm(g)), err
    f, g2 = prob.value_and_grad(w)
    assert f == pytest.approx(prob.value(w), rel=1e-13)
    np.testing.assert_allclose(g2, g, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("l2", [0.0, 0.3])
@pytest.mark.parametrize("name,params", CASES, ids=IDS)
def test_hvp_matches_finite_differences_of_gradient(name, params, l2):
    loss, X, y, w = make_case(name, params)
    prob = Problem(X, y, loss, l2)
    v = np.random.default_rng(1).standard_normal(w.size)
    eps = 1e-6
    fd = (prob.grad(w + eps * v) - prob.grad(w - eps * v)) / (2 * eps)
    hv = prob.hvp(w, v)
    assert np.linalg.norm(hv - fd) <= 1e-6 * max(1.0, np.linalg.norm(fd))
    if name != "hinge":
        assert np.linalg.norm(hv - l2 * v) > 1e-3  # a zero HVP would not pass unnoticed


@pytest.mark.parametrize("name,params", CASES, ids=IDS)
def test_per_example_quantities_average_to_mean(name, params):
    loss, X, y, w = make_case(name, params)
    G = loss.per_example_grad(w, X, y)
    assert G.shape == (N, w.size)
    np.testing.assert_allclose(G.mean(axis=0), loss.grad(w, X, y), rtol=1e-12, atol=1e-14)
    assert loss.per_example_value(w, X, y).mean() == pytest.approx(loss.value(w, X, y), rel=1e-12)


# -- clipping ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("clip", [0.05, 0.5, 1e3])
@pytest.mark.parametrize("name,params", CASES, ids=IDS)
def test_clipped_grad_sum_equals_explicit_clip_and_sum(name, params, clip):
    loss, X, y, w = make_case(name, params)
    G = loss.per_example_grad(w, X, y)
    norms = np.linalg.norm(G, axis=1)
    expected = (G * np.minimum(1.0, clip / np.maximum(norms, 1e-300))[:, None]).sum(axis=0)
    np.testing.assert_allclose(loss.clipped_grad_sum(w, X, y, clip), expected, rtol=1e-10, atol=1e-13)
    got = loss.clipped_grad_sum(w, X, y, clip, row_norms=row_norms(X))
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-13)
    if clip == 0.05:
        assert np.linalg.norm(G.sum(axis=0) - expected) > 1e-3  # clipping was active


@pytest.mark.parametrize("name,params", CASES, ids=IDS)
def test_clip_bounds_each_contribution(name, params):
    loss, X, y, w = make_case(name, params)
    X = X.copy()
    X[3] = 0.0  # a zero row must give a zero (not NaN) contribution
    clip = 0.1
    for i in range(N):
        one = loss.clipped_grad_sum(w, X[i : i + 1], y[i : i + 1], clip)
        full = loss.per_example_grad(w, X[i : i + 1], y[i : i + 1])[0]
        assert np.all(np.isfinite(one))
        assert np.linalg.norm(one) <= clip * (1 + 1e-12)
        if np.linalg.norm(full) <= clip:
            np.testing.assert_allclose(one, full, rtol=1e-12, atol=1e-15)
    with pytest.raises(ValueError):
        loss.clipped_grad_sum(w, X, y, 0.0)


# -- draws ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name,params", CASES, ids=IDS)
def test_draws_match_one_at_a_time(name, params):
    loss, X, y, w = make_case(name, params)
    rng = np.random.default_rng(2)
    W, V = draws_of(loss, w, rng), rng.standard_normal((3, w.size))
    methods = {  # each maps (w or W, v or V) to the quantity under test
        "value": lambda a, b: loss.value(a, X, y),
        "grad": lambda a, b: loss.grad(a, X, y),
        "value_and_grad.value": lambda a, b: loss.value_and_grad(a, X, y)[0],
        "value_and_grad.grad": lambda a, b: loss.value_and_grad(a, X, y)[1],
        "per_example_value": lambda a, b: loss.per_example_value(a, X, y),
        "per_example_grad": lambda a, b: loss.per_example_grad(a, X, y),
        "hvp": lambda a, b: loss.hvp(a, b, X, y),
        "clipped_grad_sum": lambda a, b: loss.clipped_grad_sum(a, X, y, 0.2),
    }
    if loss.labels != "real":
        methods["accuracy"] = lambda a, b: loss.accuracy(a, X, y)
    for label, f in methods.items():
        one_at_a_time = np.stack([f(W[k], V[k]) for k in range(3)])
        np.testing.assert_allclose(f(W, V), one_at_a_time, rtol=1e-11, atol=1e-14, err_msg=label)
    assert np.ndim(loss.value(w, X, y)) == 0 and loss.grad(w, X, y).shape == w.shape
    assert loss.value(W, X, y).shape == (3,) and loss.per_example_grad(W, X, y).shape == (3, N, w.size)


@pytest.mark.parametrize("name,params", CASES, ids=IDS)
def test_results_survive_later_calls(name, params):
    # Kernels reuse scratch buffers; nothing handed back may be a view of one.
    loss, X, y, w = make_case(name, params)
    calls = [lambda u: loss.value_and_grad(u, X, y)[1], lambda u: loss.grad(u, X, y),
             lambda u: loss.per_example_value(u, X, y), lambda u: loss.per_example_grad(u, X, y),
             lambda u: loss.hvp(u, u, X, y), lambda u: loss.clipped_grad_sum(u, X, y, 0.1)]
    if hasattr(loss, "dphi"):
        calls.append(lambda u: loss.dphi(X @ u, y))
    for f in calls:
        first = f(w)
        kept = first.copy()
        f(-2.0 * w)
        np.testing.assert_array_equal(first, kept)


# -- numerics ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("labels", ["01", "pm1"])
def test_logistic_is_stable_for_huge_scores(labels):
    z = np.concatenate([np.linspace(-1e3, 1e3, 401), [-745.0, -40.0, -1e-9, 0.0, 1e-9, 40.0, 745.0]])
    X = z[:, None]
    t = (np.arange(z.size) % 2).astype(float)
    y = t if labels == "01" else 2 * t - 1
    loss = Logistic(labels)
    ref = np.logaddexp(0.0, -(2 * t - 1) * z)  # log(1 + e^{−y z}): no cancellation for big z
    vals = loss.per_example_value(np.ones(1), X, y)
    assert np.all(np.isfinite(vals))
    np.testing.assert_allclose(vals, ref, rtol=1e-13, atol=1e-300)
    f, g = loss.value_and_grad(np.ones(1), X, y)
    assert np.isfinite(f) and np.all(np.isfinite(g))
    assert f == pytest.approx(ref.mean(), rel=1e-13)
    d_ref = expit(z) - t
    np.testing.assert_allclose(g, [(d_ref * z).mean()], rtol=1e-12)
    np.testing.assert_allclose(loss.dphi(z, y), d_ref, rtol=1e-13, atol=1e-300)
    np.testing.assert_allclose(loss.d2phi(z, y), expit(z) * expit(-z), rtol=1e-12, atol=1e-300)


def test_logistic_label_forms_agree():
    loss01, X, y01, w = make_case("logistic", {"labels": "01"})
    pm = Logistic("pm1")
    ypm = to_label_form(y01, "pm1")
    assert pm.value(w, X, ypm) == pytest.approx(loss01.value(w, X, y01), rel=1e-14)
    np.testing.assert_allclose(pm.grad(w, X, ypm), loss01.grad(w, X, y01), rtol=1e-14)
    # the ±1 paper form log(1 + e^{−y z})
    assert pm.value(w, X, ypm) == pytest.approx(np.logaddexp(0, -ypm * (X @ w)).mean(), rel=1e-13)


# -- constants --------------------------------------------------------------------------------------
CONVEX = [c for c in CASES if c[0] != "mlp"]


@pytest.mark.parametrize("name,params", CONVEX, ids=[i for c, i in zip(CASES, IDS) if c[0] != "mlp"])
def test_lipschitz_and_smoothness_hold_empirically(name, params):
    loss, X, y, _ = make_case(name, params, n=200)
    rng = np.random.default_rng(3)
    R = row_norms(X).max()
    radius = 3.0
    W1 = rng.standard_normal((50, X.shape[1]))
    W1 *= (radius * rng.random(50) / np.linalg.norm(W1, axis=1))[:, None]  # inside the ball
    W2 = W1 + 0.5 * rng.standard_normal(W1.shape)
    W2 *= np.minimum(1.0, radius / np.linalg.norm(W2, axis=1))[:, None]
    G1, G2 = loss.per_example_grad(W1, X, y), loss.per_example_grad(W2, X, y)
    L = loss.lipschitz(R, radius=radius)
    assert np.linalg.norm(G1, axis=-1).max() <= L * (1 + 1e-12)
    if name in ("hinge", "logistic", "huber-hinge", "huber"):
        assert loss.lipschitz(R) >= L  # the global constant is never smaller
    if not loss.smooth:
        with pytest.raises(NotSmoothError):
            loss.smoothness(R)
        return
    beta = loss.smoothness(R)
    ratio = np.linalg.norm(G1 - G2, axis=-1) / np.linalg.norm(W1 - W2, axis=-1)[:, None]
    assert ratio.max() <= beta * (1 + 1e-12)
    # and β is tight: along the longest row at a point of maximal curvature it is attained
    i = np.argmax(row_norms(X))
    xi = X[i] / np.linalg.norm(X[i])
    z_star = {"logistic": 0.0, "huber-hinge": 1.0 * y[i], "huber": y[i], "squared": y[i]}[name]
    w0 = z_star / np.linalg.norm(X[i]) * xi
    step = 1e-6 * xi
    g0 = loss.per_example_grad(w0, X[i : i + 1], y[i : i + 1])[0]
    g1 = loss.per_example_grad(w0 + step, X[i : i + 1], y[i : i + 1])[0]
    assert np.linalg.norm(g1 - g0) / 1e-6 >= 0.99 * beta


def test_constants_documented_values():
    assert Logistic().lipschitz(2.0) == 2.0 and Logistic().smoothness(2.0) == 1.0
    assert get_loss("huber-hinge", h=0.1).smoothness(1.0) == pytest.approx(5.0)
    assert get_loss("huber", delta=1.0).lipschitz(1.0) == 1.0  # L = δ_H, β = 1 at R = 1
    assert get_loss("huber", delta=1.0).smoothness(1.0) == 1.0
    assert get_loss("huber", delta=5.0).lipschitz(1.0, radius=1.0) == 2.0  # |u| ≤ DR + 1
    with pytest.raises(ValueError):
        get_loss("squared").lipschitz(1.0)
    assert get_loss("squared").lipschitz(2.0, radius=1.0) == 6.0
    with pytest.raises(NotImplementedError):
        MLP().smoothness(1.0)


def test_hinge_subgradient_convention_at_the_kink():
    hinge = get_loss("hinge")
    y = np.array([1.0, -1.0, 1.0, -1.0])
    z = np.array([1.0, -1.0, 0.5, 2.0])  # margins 1, 1 (kinks), 0.5, −2
    np.testing.assert_array_equal(hinge.dphi(z, y), [0.0, 0.0, -1.0, 1.0])  # −y where y·z < 1
    np.testing.assert_array_equal(hinge.phi(z, y), [0.0, 0.0, 0.5, 3.0])


# -- metrics, labels, registry ------------------------------------------------------------------------
def test_prediction_tie_rules():
    X = np.array([[1.0, -1.0], [1.0, 1.0], [2.0, 0.0]])
    w = np.array([1.0, 1.0])  # scores 0, 2, 2
    lr = Logistic("01")
    np.testing.assert_array_equal(lr.predict(w, X), [1.0, 1.0, 1.0])  # 0 → positive
    assert lr.accuracy(w, X, np.array([1.0, 0.0, 1.0])) == pytest.approx(2 / 3)
    svm = get_loss("hinge")
    assert svm.accuracy(w, X, np.array([1.0, 1.0, 1.0])) == pytest.approx(2 / 3)  # y·0 > 0 fails
    assert svm.accuracy(w, X, np.array([-1.0, 1.0, -1.0])) == pytest.approx(1 / 3)


def test_registry_and_label_forms():
    assert set(LOSSES) == {"logistic", "hinge", "huber-hinge", "huber", "squared", "mlp"}
    forms = {name: label_form(name) for name in LOSSES}
    assert forms == {"logistic": "01", "hinge": "pm1", "huber-hinge": "pm1", "huber": "real",
                     "squared": "real", "mlp": "01"}
    assert label_form("logistic", labels="pm1") == "pm1"
    np.testing.assert_array_equal(to_label_form([0, 1, 1], "pm1"), [-1, 1, 1])
    np.testing.assert_array_equal(to_label_form([-1, 1], "01"), [0, 1])
    with pytest.raises(ValueError):
        to_label_form([0, 2], "pm1")
    with pytest.raises(ValueError):
        get_loss("nope")
    X = np.ones((3, 2))
    with pytest.raises(ValueError):
        Problem(X, np.array([0.0, 1.0, 1.0]), get_loss("hinge"))  # 0/1 labels given to the hinge
    with pytest.raises(ValueError):
        Problem(X, np.array([-1.0, 1.0, 1.0]), get_loss("logistic"))


# -- MLP specifics ------------------------------------------------------------------------------------
def test_mlp_layout_and_init():
    rng = np.random.default_rng(4)
    d, h = 3, 2
    mlp = MLP(hidden=h)
    assert MLP().n_params(105) == 106**2 and mlp.n_params(d) == h * (d + 2) + 1
    W1, b1, w2, b2 = rng.standard_normal((h, d)), rng.standard_normal(h), rng.standard_normal(h), 0.7
    theta = np.concatenate([W1.ravel(), b1, w2, [b2]])
    X = rng.standard_normal((5, d))
    np.testing.assert_allclose(mlp.scores(theta, X), np.tanh(X @ W1.T + b1) @ w2 + b2, rtol=1e-14)
    th = MLP().init(np.random.default_rng(0), 4, draws=2)
    assert th.shape == (2, 25)
    np.testing.assert_array_equal(th, MLP().init(np.random.default_rng(0), 4, draws=2))
    assert np.all(th[:, 16:20] == 0) and th[0, 24] == 0  # b₁ and b₂ start at zero
    assert np.abs(th[:, :16]).max() <= np.sqrt(6 / 8)


def test_mlp_chunking_is_invisible():
    loss, X, y, w = make_case("mlp", {"labels": "01"})
    small = MLP(chunk_elements=7)  # forces many row chunks
    W = draws_of(loss, w, np.random.default_rng(5))
    for f in ("value", "grad", "per_example_value", "per_example_grad"):
        np.testing.assert_allclose(getattr(small, f)(W, X, y), getattr(loss, f)(W, X, y), rtol=1e-12)
    np.testing.assert_allclose(small.clipped_grad_sum(W, X, y, 0.1), loss.clipped_grad_sum(W, X, y, 0.1),
                               rtol=1e-12)
    np.testing.assert_allclose(small.hvp(W, W, X, y), loss.hvp(W, W, X, y), rtol=1e-12)


def test_mlp_gradients_match_backpropagation_term_by_term_on_read_only_and_writeable_rows():
    """The gradient passes (bias folded into the products, δa from q = s², the norm expansion)
    against a direct per-example backpropagation; the same on read-only rows, whose [X, 1] is
    kept between calls, and after switching to other read-only rows (no stale copy)."""
    rng = np.random.default_rng(8)
    n, d, h = 300, 6, 5
    loss = MLP(hidden=h, chunk_elements=40)  # several chunks
    X, y = rng.normal(size=(n, d)), (rng.random(n) < 0.4).astype(float)
    W = loss.init(rng, d, draws=3) * 3.0  # saturated units too (q ≈ 1)

    def direct(theta, X, y):
        W1, b1 = theta[: h * d].reshape(h, d), theta[h * d: h * d + h]
        w2, b2 = theta[h * d + h: h * d + 2 * h], theta[-1]
        S = np.tanh(X @ W1.T + b1)
        dO = 1.0 / (1.0 + np.exp(-(S @ w2 + b2))) - y
        dA = dO[:, None] * w2 * (1.0 - S * S)
        G = np.concatenate([(dA[:, :, None] * X[:, None, :]).reshape(n, -1), dA, dO[:, None] * S, dO[:, None]], 1)
        scale = np.minimum(1.0, 0.3 / np.linalg.norm(G, axis=1))
        return G.mean(axis=0), (G * scale[:, None]).sum(axis=0)

    frozen, other = X.copy(), X[::-1].copy()
    frozen.setflags(write=False)
    other.setflags(write=False)
    for rows, labels in ((X, y), (frozen, y), (frozen, y), (other, y[::-1].copy())):
        grads, clipped = loss.grad(W, rows, labels), loss.clipped_grad_sum(W, rows, labels, 0.3)
        for theta, g, c in zip(W, grads, clipped):
            g_want, c_want = direct(theta, rows, labels)
            np.testing.assert_allclose(g, g_want, rtol=1e-10, atol=1e-13)
            np.testing.assert_allclose(c, c_want, rtol=1e-10, atol=1e-12)


def test_problem_adds_explicit_l2_and_subsets():
    loss, X, y, w = make_case("logistic", {"labels": "01"})
    prob = Problem(X, y, loss, l2=0.2)
    assert prob.value(w) == pytest.approx(loss.value(w, X, y) + 0.1 * w @ w, rel=1e-14)
    assert prob.strong_convexity == 0.2 and prob.smoothness() == pytest.approx(prob.radius**2 / 4 + 0.2)
    rows = np.arange(0, N, 3)
    sub = prob.subset(rows)
    np.testing.assert_allclose(sub.row_norms, row_norms(X[rows]))
    np.testing.assert_allclose(prob.clipped_grad_sum(w, 0.1, rows=rows), sub.clipped_grad_sum(w, 0.1))
    np.testing.assert_allclose(prob.batch_grad(w, rows), sub.grad(w))
    assert Problem(X, y, MLP(), l2=0.2).strong_convexity == 0.0  # non-convex: no μ


# -- sparse rows ------------------------------------------------------------------------------------
def one_hot_case(name, params, n=3000, groups=6, levels=8, seed=1):
    """(loss, X, y, w): bias + 2 numeric columns + one-hot groups (~13% non-zero entries)."""
    loss, _, _, _ = make_case(name, params, seed=seed)
    rng = np.random.default_rng(seed)
    codes = rng.integers(0, levels, size=(n, groups))
    X = np.zeros((n, 3 + groups * levels))
    X[:, 0], X[:, 1:3] = 1.0, rng.random((n, 2))
    X[np.arange(n)[:, None], 3 + np.arange(groups) * levels + codes] = 1.0
    y01 = (rng.random(n) < 0.4).astype(float)
    y = rng.random(n) if loss.labels == "real" else to_label_form(y01, loss.labels)
    return loss, X, y, 0.3 * rng.standard_normal(X.shape[1])


@pytest.mark.parametrize("name,params", CONVEX, ids=[i for c, i in zip(CASES, IDS) if c[0] != "mlp"])
def test_glm_products_with_csr_rows_equal_the_dense_ones(name, params):
    import scipy.sparse

    loss, X, y, w = one_hot_case(name, params)
    S = scipy.sparse.csr_matrix(X)
    W = draws_of(loss, w, np.random.default_rng(2))
    for v in (w, W):  # one weight vector and a (draws, p) matrix
        f, g = loss.value_and_grad(v, X, y)
        fs, gs = loss.value_and_grad(v, S, y)
        np.testing.assert_allclose(fs, f, rtol=1e-13)
        np.testing.assert_allclose(gs, g, rtol=1e-11, atol=1e-15)
        np.testing.assert_allclose(loss.value(v, S, y), loss.value(v, X, y), rtol=1e-13)
        np.testing.assert_allclose(loss.grad(v, S, y), g, rtol=1e-11, atol=1e-15)
        np.testing.assert_allclose(loss.hvp(v, 0.5 * v, S, y), loss.hvp(v, 0.5 * v, X, y),
                                   rtol=1e-11, atol=1e-15)
        assert np.shape(gs) == np.shape(v)


def test_problem_multiplies_by_a_shared_csr_copy_only_where_it_pays(monkeypatch):
    import scipy.sparse

    from dperm import problem as problem_module

    loss, X, y, w = one_hot_case("logistic", {"labels": "pm1"})
    monkeypatch.setattr(problem_module, "SPARSE_MIN_SIZE", X.size)  # the test data is small
    prob = Problem(X, y, loss, l2=0.1)
    assert scipy.sparse.issparse(prob._products(w))
    assert prob._products(np.tile(w, (3, 1))) is prob.X  # draws: one dense BLAS-3 product
    dense = Problem(X, y, loss, l2=0.1)
    monkeypatch.setattr(problem_module, "SPARSE_MIN_SIZE", X.size + 1)
    assert dense._products(w) is dense.X
    f, g = dense.value_and_grad(w)
    fs, gs = prob.value_and_grad(w)
    assert fs == pytest.approx(f, rel=1e-13)
    np.testing.assert_allclose(gs, g, rtol=1e-11)
    np.testing.assert_allclose(prob.hvp(w, g), dense.hvp(w, g), rtol=1e-11)
    monkeypatch.setattr(problem_module, "SPARSE_MIN_SIZE", X.size)
    # the copy is made once for problems on the same rows, and never for dense rows
    hinge = prob.with_loss(get_loss("huber-hinge", h=0.5))
    assert hinge.shared is prob.shared and hinge._products(w) is prob._products(w)
    Xd = X + 0.5
    assert not scipy.sparse.issparse(Problem(Xd, y, loss)._products(w))
    assert problem_module.sparse_rows(Xd) is None
    mlp = Problem(X, (y > 0).astype(float), MLP(), l2=0.1)
    assert mlp._products(mlp.loss.init(np.random.default_rng(0), X.shape[1])) is mlp.X


def test_mlp_row_weights_see_each_rows_gradient_norm_and_weight_its_clipped_gradient():
    """The MLP's ``row_weights`` hook (per-example decisions in the same pass, DP-GD with
    individual filters): called with ‖∇ℓ_i‖ per draw and row, its multipliers scale the clipped
    gradients; several chunks and draws included."""
    rng = np.random.default_rng(4)
    X, y = rng.normal(size=(37, 5)), (rng.random(37) > 0.5).astype(float)
    loss = MLP(hidden=3, chunk_elements=30)  # forces several row chunks
    W = loss.init(rng, 5, draws=2)
    G = loss.per_example_grad(W, X, y)  # (2, 37, P)
    norms = np.linalg.norm(G, axis=2)
    mult = rng.random((2, 37))
    seen = np.zeros((2, 37))

    def weights(rows, norm):
        seen[:, rows] = norm
        return mult[:, rows]

    clip = 0.3
    got = loss.clipped_grad_sum(W, X, y, clip, row_weights=weights)
    np.testing.assert_allclose(seen, norms, rtol=1e-10)
    expected = np.einsum("kn,knp->kp", mult * np.minimum(1.0, clip / norms), G)
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-13)


def test_rows_digest_is_computed_once_for_read_only_rows_and_never_goes_stale(monkeypatch):
    """Caches keyed by the data (OutPert's descent paths, PIDP-SGD's start) hash X once per
    training fold when X cannot change (the protocol's folds are read-only), and on every call
    when it can, so an in-place change is never served from a stale key."""
    import hashlib

    from dperm import problem as problem_module

    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(50, 4)), (rng.random(50) < 0.5).astype(float)
    calls, blake2b = [], hashlib.blake2b

    class Counting:
        def __init__(self, **kw):
            self.h = blake2b(**kw)

        def update(self, data):
            calls.append(len(memoryview(data).cast("B")))
            self.h.update(data)

        def hexdigest(self):
            return self.h.hexdigest()

    monkeypatch.setattr(problem_module.hashlib, "blake2b", Counting)
    frozen = X.copy()
    frozen.setflags(write=False)
    shared: dict = {}
    first = Problem(frozen, y, Logistic(), 0.1, shared=shared).rows_digest()
    hashed = len(calls)
    again = [Problem(frozen, y, Logistic(), l2, shared=shared).rows_digest() for l2 in (0.0, 1.0)]
    assert again == [first, first] and len(calls) == hashed  # no second pass over X
    assert Problem(frozen, y, Logistic(), 0.1, shared=shared).with_loss(Logistic("01")).rows_digest() == first
    assert len(calls) == hashed
    # a writeable X (or a read-only view of a writeable one) is hashed every time
    free = Problem(X.copy(), y, Logistic())
    before = free.rows_digest()
    assert before == first and len(calls) > hashed
    free.X[0, 0] += 1.0
    assert free.rows_digest() != before
    view = X.copy()
    ro_view = view[:]
    ro_view.setflags(write=False)
    assert not problem_module._read_only(ro_view) and problem_module._read_only(frozen)
