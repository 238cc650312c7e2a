"""SGD-Adv and SGD-MA: calibrations (forward checks), reference numbers, sampling, inputs."""

import math

import numpy as np
import pytest

from dperm.algorithms import Privacy, get_algorithm
from dperm.algorithms.sgd_baselines import (
    PoissonBatches,
    certified_sgd_adv,
    default_batch_size,
    sgd_adv_calibration,
    sgd_adv_steps,
    sgd_ma_epsilons,
)
from dperm.losses import Hinge, Logistic
from dperm.privacy import advanced_composition, amplify_subsampling, gaussian_delta
from dperm.problem import Problem


def small_problem(n=400, p=5, loss=None, l2=0.0, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.random((n, p))
    X[:, 0] = 1.0
    loss = loss or Logistic()
    y = (X[:, 1] + 0.3 * rng.normal(size=n) > 0.5).astype(float)
    return Problem(X, 2 * y - 1 if loss.labels == "pm1" else y, loss, l2)


# -- SGD-Adv ------------------------------------------------------------------------------------

@pytest.mark.parametrize("gaussian", ["zhao", "analytic"])
@pytest.mark.parametrize("n", [2_000, 39_073, 395_216])
@pytest.mark.parametrize("eps", [0.05, 0.4, 1.6, 6.4])
def test_sgd_adv_calibration_composes_back(gaussian, n, eps):
    delta, clip = 1e-8, 3.0
    T, b = sgd_adv_steps(n, eps), default_batch_size(n)
    cal = sgd_adv_calibration(eps, delta, n, T, b, clip, gaussian=gaussian)
    # the base Gaussian really is (ε_b, δ_b)-DP at sensitivity 2C (exact profile) ...
    assert gaussian_delta(cal["epsilon_base"], cal["sigma"], 2 * clip) <= cal["delta_base"] * (1 + 1e-9)
    # ... amplification returns the per-step budget, with δ_b = δ_step/q ...
    eps_step, delta_step = amplify_subsampling(cal["epsilon_base"], cal["delta_base"], b / n)
    assert eps_step == pytest.approx(cal["epsilon_step"], rel=1e-9)
    assert delta_step == pytest.approx(cal["delta_step"], rel=1e-12)
    # ... and advanced composition over T steps stays within (ε, δ)
    total_eps, total_delta = advanced_composition(eps_step, delta_step, T, delta / 2)
    assert total_eps <= eps * (1 + 1e-9) and total_delta <= delta * (1 + 1e-9)
    assert certified_sgd_adv(cal, T, delta)["epsilon"] <= eps * (1 + 1e-9)


def test_sgd_adv_reference_reproduces_the_code_numbers():
    n = 39_073  # Adult-sized 5-fold training set (spec §2.6)
    b = default_batch_size(n)
    assert b == 207
    assert sgd_adv_steps(n, 0.05) == 4 and sgd_adv_steps(n, 1.6) == 125
    low = sgd_adv_calibration(0.05, 1e-8, n, 4, b, 3.0, reference=True)
    assert low["epsilon_base"] == pytest.approx(0.1908, abs=5e-4)
    assert low["sigma"] / b == pytest.approx(0.978, abs=1e-3)
    assert low["delta_base"] == low["delta_step"] == pytest.approx(1e-8 / 8)
    high = sgd_adv_calibration(1.6, 1e-8, n, 125, b, 3.0, reference=True)
    assert high["epsilon_base"] == pytest.approx(1.09, abs=5e-3) and high["epsilon_base"] > 1  # spec P5


def test_sgd_adv_variants_fit_and_label():
    problem = small_problem(n=2000)
    correct = get_algorithm("sgd-adv")
    ref = get_algorithm("sgd-adv-reference")
    # private on the paper's grid (its exact_check), so labelled reference but not "not DP"
    assert correct.dp_as_implemented and ref.variant == "reference" and ref.dp_as_implemented
    assert ref.label == "sgd-adv (reference)"
    res = correct.fit(problem, Privacy(1.6, 1e-8), np.random.default_rng(0))
    assert res.adjacency == "replace-one" and res.iterations == sgd_adv_steps(2000, 1.6) == 6
    assert res.epsilon_spent == 1.6 and res.weights.shape == (1, 5)
    out = ref.fit(problem, Privacy(1.6, 1e-8), np.random.default_rng(0))
    assert out.extra["gaussian"].startswith("classical") and "exact_check" in out.extra


def test_sgd_adv_reference_flags_base_epsilon_above_one():
    problem = small_problem(n=39_073, p=3)
    out = get_algorithm("sgd-adv-reference").fit(problem, Privacy(1.6, 1e-8), np.random.default_rng(0), steps=2)
    # steps=2 overrides T: ε_base is even larger
    assert out.extra["epsilon_base"] > 1 and any("outside their proven range" in note for note in out.notes)


# -- SGD-MA -------------------------------------------------------------------------------------

# spec §2.7 table: 5-fold training sizes Adult 39,073 / BANK 36,168 / IPUMS-US 32,000 / IPUMS-BR 30,400
TABLE = {
    39_073: [0.5757, 0.5787, 0.6058, 0.8776, 1.1795],
    36_168: [0.5757, 0.5789, 0.6086, 0.9048, 1.2339],
    32_000: [0.5757, 0.5794, 0.6128, 0.9474, 1.3192],
    30_400: [0.5757, 0.5796, 0.6151, 0.9704, 1.3651],
}
STEPS = [1, 100, 1000, 10000, 20000]


@pytest.mark.parametrize("n", sorted(TABLE))
def test_sgd_ma_reference_epsilon_table(n):
    q = default_batch_size(n) / n
    for T, want in zip(STEPS, TABLE[n]):
        eps = sgd_ma_epsilons(q, 4.0, T, 1e-8)
        assert eps["epsilon_moments_ref"] == pytest.approx(want, abs=6e-5)
        assert eps["epsilon_rdp"] <= eps["epsilon_moments_ref"]  # the tight accountant is never worse
    assert default_batch_size(36_168) == 200


def test_sgd_ma_fits_report_both_accountants():
    problem = small_problem(n=3000)
    q = default_batch_size(3000) / 3000
    correct = get_algorithm("sgd-ma")
    ref = get_algorithm("sgd-ma-reference")
    assert not correct.depends_on_epsilon and not ref.depends_on_epsilon and not ref.dp_as_implemented
    a = correct.fit(problem, Privacy(1.0, 1e-8), np.random.default_rng(0), steps=50)
    b = ref.fit(problem, Privacy(1.0, 1e-8), np.random.default_rng(0), steps=50)
    expected = sgd_ma_epsilons(q, 4.0, 50, 1e-8)
    for res in (a, b):
        assert res.extra["epsilon_rdp"] == expected["epsilon_rdp"]
        assert res.extra["epsilon_moments_ref"] == expected["epsilon_moments_ref"]
        assert res.adjacency == "add-remove" and res.iterations == 50
    assert a.epsilon_spent == expected["epsilon_rdp"] < b.epsilon_spent == expected["epsilon_moments_ref"]
    assert a.extra["sampling"] == "poisson"


def test_poisson_batches_have_mean_size_b_and_uniform_inclusion():
    n, b, steps = 5000, 80, 4000
    sampler = PoissonBatches(np.random.default_rng(0), n, b / n)
    counts = np.zeros(n)
    sizes = []
    for _ in range(steps):
        rows = sampler()
        assert np.all(np.diff(rows) > 0) and rows.min(initial=0) >= 0 and rows.max(initial=0) < n
        counts[rows] += 1
        sizes.append(rows.size)
    q = b / n
    assert np.mean(sizes) == pytest.approx(b, abs=4 * math.sqrt(n * q * (1 - q) / steps))
    assert np.var(sizes) == pytest.approx(n * q * (1 - q), rel=0.1)  # Binomial(n, q), not fixed size
    # each row is included with probability q: first and second halves alike
    half = counts.reshape(2, -1).sum(axis=1) / (steps * n / 2)
    assert np.allclose(half, q, rtol=0.03)


def test_poisson_batches_extend_short_blocks():
    sampler = PoissonBatches(np.random.default_rng(1), 60, 0.5, chunk=3)
    sampler.block = 2  # force the rare path where a block of gaps ends before n
    sizes = [sampler().size for _ in range(300)]
    assert np.mean(sizes) == pytest.approx(30, abs=1.5)


@pytest.mark.parametrize("name", ["sgd-adv", "sgd-adv-reference", "sgd-ma", "sgd-ma-reference"])
def test_deterministic_and_draws_independent(name):
    problem = small_problem(n=600, loss=Hinge(), l2=1e-3)
    fit = get_algorithm(name).fit
    kw = {"steps": 30} if "ma" in name else {}
    a = fit(problem, Privacy(0.8, 1e-8), np.random.default_rng(5), draws=3, **kw)
    b = fit(problem, Privacy(0.8, 1e-8), np.random.default_rng(5), draws=3, **kw)
    assert np.array_equal(a.weights, b.weights) and a.weights.shape == (3, 5)
    assert len({tuple(w) for w in a.weights}) == 3


@pytest.mark.parametrize("name,kwargs,match", [
    ("sgd-adv", {"batch_size": 0}, "batch_size"), ("sgd-adv", {"clip": -1.0}, "clip"),
    ("sgd-adv", {"steps": 0}, "steps"), ("sgd-adv", {"gaussian": "classical"}, "gaussian"),
    ("sgd-adv", {"learning_rate": 0.0}, "learning_rate"),
    ("sgd-ma", {"steps": 0}, "steps"), ("sgd-ma", {"noise_multiplier": -4.0}, "noise_multiplier"),
    ("sgd-ma-reference", {"batch_size": 10_000}, "batch_size"),
])
def test_bad_inputs_name_the_value(name, kwargs, match):
    with pytest.raises(ValueError, match=match):
        get_algorithm(name).fit(small_problem(n=100), Privacy(1.0, 1e-8), np.random.default_rng(0), **kwargs)


def test_delta_is_required():
    with pytest.raises(ValueError, match="delta"):
        get_algorithm("sgd-ma").fit(small_problem(n=100), Privacy(1.0, 0.0), np.random.default_rng(0), steps=2)
    with pytest.raises(ValueError, match="delta"):
        get_algorithm("sgd-adv").fit(small_problem(n=100), Privacy(1.0, 0.0), np.random.default_rng(0))
