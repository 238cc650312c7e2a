"""Bassily et al. noisy SGD: calibration composes to (ε, δ), step cap, row bound, projection, inputs."""

import math

import numpy as np
import pytest
from scipy.stats import binom

from dperm.algorithms import Privacy, get_algorithm
from dperm.algorithms.bassily import noisy_sgd_calibration, with_replacement_delta
from dperm.losses import MLP, Huber, Logistic
from dperm.privacy import advanced_composition, gaussian_delta, gaussian_sigma_analytic
from dperm.problem import Problem

FIT = get_algorithm("bassily-sgd").fit


def problem(n=200, p=4, scale=1.0, l2=0.0, seed=0, loss=None):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p)) * scale / math.sqrt(p)
    y = (X[:, 0] + 0.2 * rng.normal(size=n) > 0).astype(float)
    return Problem(X, y, loss or Logistic(), l2)


@pytest.mark.parametrize("gaussian", ["zhao", "analytic"])
@pytest.mark.parametrize("n,eps,steps", [(45_211, 0.1, 100_000), (45_211, 2.0, 100_000), (1_000, 1.0, 20_000),
                                         (300, 0.5, 1_800), (30_000, 0.5, 18_000_000)])
def test_calibration_composes_to_target(gaussian, n, eps, steps):
    delta, m, L = 1e-3, 50, 1.0
    cal = noisy_sgd_calibration(eps, delta, n, m, steps, L, gaussian=gaussian)
    # per-step δ: exact with-replacement mixture of Gaussians at sensitivities 2Lk, recomputed here
    k = np.arange(1, m + 1)
    profile = np.sum(binom.pmf(k, m, 1 / n) * gaussian_delta(cal["epsilon_base"], cal["sigma"], 2 * L * k))
    assert profile == pytest.approx(cal["delta_step"], rel=1e-9)
    assert profile <= cal["delta_step_budget"] * (1 + 1e-9)
    q = 1 - (1 - 1 / n) ** m
    eps_step = math.log1p(q * math.expm1(cal["epsilon_base"]))
    total = advanced_composition(eps_step, profile, steps, delta / 2)
    assert total[0] <= eps * (1 + 1e-9) and total[1] <= delta * (1 + 1e-9)
    assert q <= m / n


def test_zhao_is_never_below_the_exact_requirement_and_duplicates_matter():
    cal_z = noisy_sgd_calibration(1.0, 1e-3, 2_000, 50, 10_000, 1.0, gaussian="zhao")
    cal_a = noisy_sgd_calibration(1.0, 1e-3, 2_000, 50, 10_000, 1.0, gaussian="analytic")
    assert cal_z["sigma"] >= cal_a["sigma"] and cal_z["sigma"] >= cal_z["sigma_zhao"] * (1 - 1e-12)
    # ignoring K ≥ 2 (only the single-copy term) would understate the per-step δ
    single = binom.pmf(1, 50, 1 / 2_000) * gaussian_delta(cal_a["epsilon_base"], cal_a["sigma"], 2.0)
    assert with_replacement_delta(cal_a["epsilon_base"], cal_a["sigma"], 1.0, 2_000, 50) > single


def test_batch_of_one_is_the_analytic_gaussian_at_delta_over_q():
    n, eps, delta, T = 5_000, 0.8, 1e-5, 10_000
    cal = noisy_sgd_calibration(eps, delta, n, 1, T, 1.0, gaussian="analytic")
    assert cal["hit_rate"] == pytest.approx(1 / n)
    want = gaussian_sigma_analytic(cal["epsilon_base"], cal["delta_step_budget"] * n, 2.0)
    assert cal["sigma"] == pytest.approx(want, rel=1e-6)


def test_step_cap_is_honoured_recorded_and_calibrated_for():
    data = problem(n=60)  # n²/m = 72 steps
    full = FIT(data, Privacy(1.0, 1e-3), np.random.default_rng(0), max_steps=1_000)
    capped = FIT(data, Privacy(1.0, 1e-3), np.random.default_rng(0), max_steps=20)
    assert full.iterations == full.extra["steps"] == 72 and not full.extra["capped"] and not full.notes
    assert capped.iterations == capped.extra["steps"] == 20 and capped.extra["capped"]
    assert capped.extra["steps_uncapped"] == 72 and capped.extra["max_steps"] == 20
    assert "capped" in capped.notes[0]
    assert capped.extra["sigma"] < full.extra["sigma"]  # noise for the steps actually run
    assert capped.grad_evals == pytest.approx(20 * 50 / 60)


def test_row_bound_sets_the_lipschitz_constant_not_the_data():
    big = problem(n=100, scale=5.0)  # rows of norm ≈ 5
    res = FIT(big, Privacy(1.0, 1e-3), np.random.default_rng(0), max_steps=10)
    assert big.radius > 3 and res.extra["lipschitz"] == 1.0
    res2 = FIT(big, Privacy(1.0, 1e-3), np.random.default_rng(0), max_steps=10, row_bound=2.0)
    assert res2.extra["lipschitz"] == 2.0
    huber = Problem(big.X, np.clip(big.y, 0, 1), Huber(delta=1.0))
    assert FIT(huber, Privacy(1.0, 1e-3), np.random.default_rng(0), max_steps=5).extra["lipschitz"] == 1.0


@pytest.mark.parametrize("l2,mode", [(0.0, "convex"), (0.1, "strongly-convex")])
def test_projection_and_step_size_mode(l2, mode):
    data = problem(n=80, l2=l2)
    res = FIT(data, Privacy(2.0, 1e-3), np.random.default_rng(1), max_steps=200, radius=0.5, draws=2)
    assert res.extra["step_size"] == mode
    assert np.all(np.linalg.norm(res.weights, axis=1) <= 0.5 + 1e-12)


def test_deterministic_and_draws_independent():
    data = problem(n=80)
    a = FIT(data, Privacy(1.0, 1e-3), np.random.default_rng(3), max_steps=50, draws=3)
    b = FIT(data, Privacy(1.0, 1e-3), np.random.default_rng(3), max_steps=50, draws=3)
    assert np.array_equal(a.weights, b.weights) and len({tuple(w) for w in a.weights}) == 3
    assert a.adjacency == "replace-one" and a.epsilon_spent == 1.0


@pytest.mark.parametrize("kwargs,match", [
    ({"batch_size": 0}, "batch_size"), ({"max_steps": 0}, "max_steps"), ({"step_size": "adagrad"}, "step_size"),
    ({"gaussian": "classical"}, "gaussian"), ({"step_size": "strongly-convex"}, "l2"),
    ({"radius": None}, "radius"), ({"radius": -1.0}, "radius"), ({"row_bound": 0.0}, "row_bound"),
    ({"clip": -1.0}, "clip"),
])
def test_bad_inputs_name_the_value(kwargs, match):
    with pytest.raises(ValueError, match=match):
        FIT(problem(n=30), Privacy(1.0, 1e-3), np.random.default_rng(0), **{"max_steps": 3, **kwargs})


def test_losses_without_lipschitz_constant_need_clip():
    data = problem(n=30, loss=MLP(hidden=2))
    with pytest.raises(ValueError, match="clip"):
        FIT(data, Privacy(1.0, 1e-3), np.random.default_rng(0), max_steps=3)
    with pytest.raises(ValueError, match="delta"):
        FIT(problem(n=30), Privacy(1.0, 0.0), np.random.default_rng(0))


class _Opaque:
    """A GLM loss seen as a generic one: drives the per-draw loop (the lone runs)."""

    def __init__(self, inner):
        self._inner = inner

    def __getattr__(self, name):
        return getattr(self._inner, name)


@pytest.mark.parametrize(("loss", "l2", "radius", "chunk"), [(Logistic(), 0.0, 0.3, 512), (Logistic(), 0.05, None, 7),
                                                             (Huber(delta=0.5), 0.0, 1.0, 64)])
def test_the_draws_in_lockstep_release_what_each_lone_run_releases(loss, l2, radius, chunk):
    """The GLM path runs the draws as one state; the generic path runs them one at a time. Same
    streams (batches and noise drawn per draw in the same chunks), so the same weights up to the
    rounding of batched sums; a chunk of 7 makes the chunk boundaries fall mid-run, and the radius
    of 0.3 makes the projection act."""
    data = problem(n=90, l2=l2, loss=loss)
    generic = Problem(data.X, data.y, _Opaque(loss), l2)
    kw = dict(max_steps=150, draws=4, radius=radius, chunk=chunk, clip=1.0 if isinstance(loss, Huber) else None)
    a = FIT(data, Privacy(1.0, 1e-3), np.random.default_rng(8), **kw)
    b = FIT(generic, Privacy(1.0, 1e-3), np.random.default_rng(8), **kw)
    assert not isinstance(generic.loss, type(loss))  # the lone path did run
    np.testing.assert_allclose(a.weights, b.weights, rtol=1e-10, atol=1e-13)
    if radius is not None:
        assert np.linalg.norm(a.weights, axis=1).max() <= radius * (1 + 1e-12)


def test_a_lockstep_records_a_standalone_runs_seconds():
    """Runtime tables compare one run against one run: the lockstep runs its last draw's steps
    alone, times them and reports that (with the draw's share of the set-up), not a share of the
    batch; the weights are still every draw's own."""
    data = problem(n=60)
    res = FIT(data, Privacy(1.0, 1e-3), np.random.default_rng(2), max_steps=40, draws=3)
    assert res.seconds_per_draw is not None and res.seconds_per_draw > 0
    generic = FIT(Problem(data.X, data.y, _Opaque(Logistic()), 0.0), Privacy(1.0, 1e-3), np.random.default_rng(2),
                  max_steps=40, draws=3)
    assert generic.seconds_per_draw is None  # lone runs: the records divide the elapsed time by the draws
    np.testing.assert_allclose(res.weights, generic.weights, rtol=1e-10, atol=1e-13)
