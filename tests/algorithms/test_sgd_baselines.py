"""SGD-Adv, SGD-MA and DP-SGD: calibrations (forward checks), reference numbers, the shared
lockstep noisy-SGD runner against a per-draw reference loop, the samplers' laws, inputs."""

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from dperm.algorithms import Privacy, draw_rngs, get_algorithm
from dperm.algorithms.dp_sgd.engine import (
    FixedSizeSampler,
    PoissonSampler,
    chunk_steps,
    clipped_grad_sums,
    run_noisy_sgd,
    uniform_subsets,
)
from dperm.algorithms.sgd_baselines import (
    certified_sgd_adv,
    default_batch_size,
    sgd_adv_calibration,
    sgd_adv_steps,
    sgd_ma_epsilons,
)
from dperm.losses import MLP, Hinge, Huber, HuberHinge, Logistic
from dperm.privacy import advanced_composition, amplify_subsampling, gaussian_delta
from dperm.problem import Problem


def small_problem(n=400, p=5, loss=None, l2=0.0, seed=0):
    """Rows that float32 holds exactly, so the lockstep kernel (float32 rows) and the float64
    references work on the same numbers and differ only by float32 rounding."""
    rng = np.random.default_rng(seed)
    X = rng.random((n, p)).astype(np.float32).astype(float)
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
    n = 39_073  # 5-fold training set of DP-AGD's 48,842-row Adult
    b = default_batch_size(n)
    assert b == 207
    assert sgd_adv_steps(n, 0.05) == 4 and sgd_adv_steps(n, 1.6) == 125
    low = sgd_adv_calibration(0.05, 1e-8, n, 4, b, 3.0, reference=True)
    assert low["epsilon_base"] == pytest.approx(0.1908, abs=5e-4)
    assert low["sigma"] / b == pytest.approx(0.978, abs=1e-3)
    assert low["delta_base"] == low["delta_step"] == pytest.approx(1e-8 / 8)
    high = sgd_adv_calibration(1.6, 1e-8, n, 125, b, 3.0, reference=True)
    # ε_base > 1: outside the range of the lemmas the code applies (docs/privacy.md#gaussian-range)
    assert high["epsilon_base"] == pytest.approx(1.09, abs=5e-3) and high["epsilon_base"] > 1


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

# SGD-MA's ε (σ = 4, δ = 1e-8, T = STEPS) from the moments-accountant formula of Abadi et al. 2016 as the
# DP-AGD code evaluates it (orders 1..32, ε at order 32 only), at the 5-fold training sizes Adult 39,073 /
# BANK 36,168 / IPUMS-US 32,000 / IPUMS-BR 30,400 (tests/privacy/test_moments.py checks the same values).
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


# -- samplers -----------------------------------------------------------------------------------

def test_poisson_sampler_has_mean_size_b_and_uniform_inclusion():
    n, b, steps = 5000, 80, 4096
    q = b / n
    sampler = PoissonSampler(n, q)
    counts = np.zeros(n + 1)
    sizes = []
    rng = np.random.default_rng(0)
    for _ in range(steps // 256):
        rows, size = sampler(rng, 256)
        for r, m in zip(rows, size):
            batch = r[:m]
            assert np.all(np.diff(batch) > 0) and batch.min(initial=0) >= 0 and batch.max(initial=0) < n
            assert np.all(r[m:] == n)  # padding
            counts[batch] += 1
        sizes.extend(size)
    assert np.mean(sizes) == pytest.approx(b, abs=4 * math.sqrt(n * q * (1 - q) / steps))
    assert np.var(sizes) == pytest.approx(n * q * (1 - q), rel=0.1)  # Binomial(n, q), not fixed size
    half = counts[:n].reshape(2, -1).sum(axis=1) / (steps * n / 2)
    assert np.allclose(half, q, rtol=0.03)


def _chi2_pvalue(observed, expected):
    observed, expected = np.asarray(observed, float), np.asarray(expected, float)
    stat = ((observed - expected) ** 2 / expected).sum()
    return stats.chi2.sf(stat, observed.size - 1)


@pytest.mark.parametrize("n,b,calls", [(12, 3, 25), (6, 3, 5)])  # redraw path (4b <= n); rng.choice path
def test_uniform_subsets_are_exactly_uniform(n, b, calls):
    rng = np.random.default_rng(1)
    rows = np.concatenate([uniform_subsets(rng, n, np.full(4000, b)) for _ in range(calls)])
    assert rows.shape[1] == b and np.all(np.diff(rows, axis=1) > 0)
    index = {s: k for k, s in enumerate(itertools.combinations(range(n), b))}
    counts = np.bincount([index[tuple(r)] for r in rows.tolist()], minlength=len(index))
    assert _chi2_pvalue(counts, np.full(len(index), rows.shape[0] / len(index))) > 1e-3


def test_poisson_sampler_has_the_bernoulli_law():
    """Sizes Binomial(n, q) and the inclusions of rows 0, 1, 2 independent Bernoulli(q)."""
    n, q = 40, 0.05
    sampler, rng = PoissonSampler(n, q), np.random.default_rng(2)
    patterns, sizes = np.zeros(8), []
    for _ in range(400):
        rows, size = sampler(rng, 256)
        included = (rows[:, :, None] == np.arange(3)).any(axis=1)  # (steps, 3)
        patterns += np.bincount(included @ np.array([1, 2, 4]), minlength=8)
        sizes.append(size)
    sizes = np.concatenate(sizes)
    steps = sizes.size
    expected = [steps * np.prod([q if (k >> j) & 1 else 1 - q for j in range(3)]) for k in range(8)]
    assert _chi2_pvalue(patterns, expected) > 1e-3
    top = 6  # sizes 0..5 and >= 6
    observed = np.bincount(np.minimum(sizes, top), minlength=top + 1)
    pmf = stats.binom.pmf(np.arange(top), n, q)
    assert _chi2_pvalue(observed, steps * np.append(pmf, 1 - pmf.sum())) > 1e-3


def test_fixed_size_sampler_draws_distinct_rows():
    rows, sizes = FixedSizeSampler(300, 40)(np.random.default_rng(3), 50)
    assert rows.shape == (50, 40) and np.all(sizes == 40)
    assert np.all(np.diff(rows, axis=1) > 0) and rows.min() >= 0 and rows.max() < 300


def test_poisson_batch_draws_a_poisson_sample():
    from dperm.algorithms.dp_sgd.engine import poisson_batch

    rng = np.random.default_rng(4)
    batches = [poisson_batch(rng, 1000, 0.05) for _ in range(400)]
    assert all(np.all(np.diff(b) > 0) and b.dtype == np.int64 for b in batches)
    assert np.mean([b.size for b in batches]) == pytest.approx(50, abs=4 * math.sqrt(50 / 400))
    assert poisson_batch(rng, 7, 1.0).tolist() == list(range(7))


# -- the lockstep runner against a per-draw reference -------------------------------------------

#: the lockstep kernel's float32 margins and sums (and its clip limits shrunk by 2⁻²⁰), against
#: float64 references on the same rows
F32 = dict(rtol=2e-6, atol=2e-6)


def explicit_clipped_sum(problem, w, rows, clip):
    """Σ_i clip_C(∇ℓ_i(w)) with every per-example gradient materialised and clipped one by one."""
    total, clipped = np.zeros(problem.p), 0
    for i in rows:
        g = problem.loss.per_example_grad(w, problem.X[i:i + 1], problem.y[i:i + 1])[0]
        norm = np.linalg.norm(g)
        if norm > clip:
            g, clipped = g * (clip / norm), clipped + 1
        total += g
    return total, clipped


def reference_sgd(problem, rngs, steps, sampler, *, clip, noise_std, learning_rate, divisor, chunk):
    """One draw at a time, the plain way: per block of ``chunk`` steps the draw's generator gives
    that block's batches then its noise; each step w ← w − η((Σ clipped + noise)/L + λw).
    Returns the weights, the fraction of per-example gradients clipped and the rows per draw."""
    weights, clipped, total = [], 0, 0
    for rng in rngs:
        w = np.zeros(problem.p)
        for t0 in range(0, steps, chunk):
            k = min(chunk, steps - t0)
            rows, sizes = sampler(rng, k)
            noise = rng.standard_normal((k, problem.p)) * noise_std
            for t in range(k):
                g, c = explicit_clipped_sum(problem, w, rows[t, :sizes[t]], clip)
                clipped, total = clipped + c, total + sizes[t]
                g = (g + noise[t]) / divisor + problem.l2 * w
                w = w - learning_rate * g
        weights.append(w)
    return np.array(weights), clipped / max(total, 1), total / len(weights)


@pytest.mark.parametrize("loss", [Logistic(), Hinge()], ids=lambda loss: loss.name)
def test_a_clipped_gradient_in_float32_stays_within_the_clip(loss):
    """Each row's clipped gradient, as the float32 kernel computes it, has norm ≤ C exactly (in
    float64 arithmetic on its float32 output): the sensitivity the accounting assumes. Rows of
    norms from 10⁻³ to 10³, each row misclassified (|φ'| near 1): the rows of norm above about C
    are clipped."""
    rng = np.random.default_rng(12)
    n, p, clip = 4000, 7, 0.7
    X = rng.normal(size=(n, p)) * 10.0 ** rng.uniform(-3, 3, size=(n, 1))
    W = rng.normal(size=(n, p))
    wrong = np.einsum("ij,ij->i", X, W) < 0  # the label that puts the row on the wrong side
    problem = Problem(X, np.where(wrong, 1.0, -1.0 if loss.labels == "pm1" else 0.0), loss)
    got = clipped_grad_sums(problem, W, [np.array([i]) for i in range(n)], clip)
    norms = np.linalg.norm(got.astype(float), axis=1)
    assert norms.max() <= clip
    assert np.mean(norms > clip * (1 - 1e-5)) > 0.3  # many at the clip, not below it


@pytest.mark.parametrize("draws", [1, 3])
@pytest.mark.parametrize("kind", ["poisson", "fixed"])
@pytest.mark.parametrize("loss", [Logistic(), Hinge()], ids=lambda loss: loss.name)
def test_lockstep_equals_per_draw_reference(loss, kind, draws):
    base = small_problem(n=300, p=5, loss=loss, seed=7)
    X = base.X.copy()
    X[11] = 0.0  # a zero row: infinite clip limit, zero gradient
    problem = Problem(X, base.y, loss, l2=0.05)
    sampler = PoissonSampler(300, 0.08) if kind == "poisson" else FixedSizeSampler(300, 24)
    clip = 0.7 if loss.name == "logistic" else 1.6  # some gradients clipped, some not
    hyper = dict(clip=clip, noise_std=0.5, learning_rate=0.5, divisor=24.0, chunk=7)
    run = run_noisy_sgd(problem, draw_rngs(np.random.default_rng(11), draws), 25, sampler, **hyper)
    rngs = draw_rngs(np.random.default_rng(11), draws)
    want, clipped, _ = reference_sgd(problem, rngs, 25, sampler, **hyper)
    assert 0.1 < clipped < 0.9, clipped
    assert np.abs(want).max() > 0.1
    np.testing.assert_allclose(run.weights, want, **F32)
    per_draw = run_noisy_sgd(problem, draw_rngs(np.random.default_rng(11), draws), 25, sampler,
                             lockstep=False, **hyper)
    np.testing.assert_allclose(per_draw.weights, want, rtol=0, atol=1e-12)
    assert np.array_equal(per_draw.rows_sampled, run.rows_sampled)


def test_non_glm_loss_runs_the_per_draw_loop():
    rng = np.random.default_rng(8)
    X = rng.random((120, 3))
    problem = Problem(X, (X[:, 0] > 0.5).astype(float), MLP(hidden=2), 0.01)
    sampler = PoissonSampler(120, 0.1)
    hyper = dict(clip=0.5, noise_std=0.3, learning_rate=0.3, divisor=12.0, chunk=5)
    run = run_noisy_sgd(problem, draw_rngs(np.random.default_rng(9), 2), 12, sampler, **hyper)
    want, _, _ = reference_sgd(problem, draw_rngs(np.random.default_rng(9), 2), 12, sampler, **hyper)
    np.testing.assert_allclose(run.weights, want, rtol=0, atol=1e-12)
    with pytest.raises(ValueError, match="GLM"):
        run_noisy_sgd(problem, draw_rngs(np.random.default_rng(9), 2), 12, sampler, lockstep=True, **hyper)


@pytest.mark.parametrize("loss", [Logistic(), Logistic("pm1"), Hinge(), HuberHinge(0.5), Huber()],
                         ids=lambda loss: f"{loss.name}-{loss.labels}")
def test_clipped_sums_equal_explicit_per_example_clipping(loss):
    rng = np.random.default_rng(10)
    X = rng.normal(size=(60, 4)).astype(np.float32).astype(float)
    X[5] = 0.0
    y = X[:, 2] if loss.labels == "real" else (X[:, 1] > 0).astype(float)
    if loss.labels == "pm1":
        y = 2 * y - 1
    problem = Problem(X, y, loss)
    W = rng.normal(size=(4, 4))
    batches = [np.array([0, 5, 7, 9, 30]), np.array([], dtype=np.int64), np.arange(60), np.array([59, 5])]
    got = clipped_grad_sums(problem, W, batches, clip=0.7)
    clipped = 0
    for d, rows in enumerate(batches):
        want, c = explicit_clipped_sum(problem, W[d], rows, 0.7)
        np.testing.assert_allclose(got[d], want, **F32)
        clipped += c
    assert 0 < clipped < sum(map(len, batches)) - 3  # both regimes (row 5 has gradient 0)


@pytest.mark.parametrize("name,hyper", [
    ("sgd-ma", {"steps": 30}), ("sgd-ma-reference", {"steps": 30}),
    ("sgd-adv", {"steps": 30}), ("sgd-adv-reference", {"steps": 30}),
    ("dp-sgd", {"epochs": 0.5, "batch_size": 40, "clip": 0.8, "learning_rate": 0.5}),
])
def test_registered_fits_equal_the_reference_loop(name, hyper):
    """The fit functions hand the runner the documented sampler, σ, η and normaliser."""
    problem = small_problem(n=400, loss=Hinge(), l2=1e-3, seed=3)
    privacy = Privacy(0.8, 1e-8)
    res = get_algorithm(name).fit(problem, privacy, np.random.default_rng(5), draws=2, **hyper)
    n = problem.n
    if name == "dp-sgd":
        q = 40 / n
        sampler, steps = PoissonSampler(n, q), res.iterations
        kw = dict(clip=0.8, noise_std=res.extra["noise_multiplier"] * 0.8, learning_rate=0.5, divisor=q * n)
    elif name.startswith("sgd-ma"):
        b = default_batch_size(n)
        sampler = FixedSizeSampler(n, b) if name.endswith("reference") else PoissonSampler(n, b / n)
        steps, kw = 30, dict(clip=4.0, noise_std=16.0, learning_rate=0.05, divisor=b)
    else:
        b = default_batch_size(n)
        sampler, steps = FixedSizeSampler(n, b), 30
        kw = dict(clip=3.0, noise_std=res.extra["sigma"], learning_rate=0.1, divisor=b)
    want, _, rows = reference_sgd(problem, draw_rngs(np.random.default_rng(5), 2), steps, sampler,
                                  chunk=chunk_steps(sampler), **kw)
    np.testing.assert_allclose(res.weights, want, **F32)
    assert res.grad_evals == pytest.approx(rows / n, rel=1e-12) and res.iterations == steps


@pytest.mark.parametrize("name", ["sgd-ma", "sgd-adv-reference", "dp-sgd"])
def test_a_draw_does_not_depend_on_how_many_run_beside_it(name):
    problem = small_problem(n=500, l2=1e-3)
    kw = {"epochs": 1.0, "batch_size": 50} if name == "dp-sgd" else {"steps": 40}
    fit = get_algorithm(name).fit
    one = fit(problem, Privacy(1.0, 1e-8), np.random.default_rng(2), draws=1, **kw)
    four = fit(problem, Privacy(1.0, 1e-8), np.random.default_rng(2), draws=4, **kw)
    # the same batches and noise; only the float32 products' rounding may see the other draws
    # (the step's padding width, the batched BLAS call)
    np.testing.assert_allclose(four.weights[0], one.weights[0], **F32)
    assert not np.allclose(four.weights[1], four.weights[0])


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


# -- snapshots along one run (SGD-MA's T grid) --------------------------------------------------

@pytest.mark.parametrize("lockstep", [True, False])
def test_a_snapshot_is_the_prefix_run_and_leaves_the_last_iterate_unchanged(lockstep):
    problem = small_problem(n=300, p=5, seed=3)
    sampler = PoissonSampler(300, 0.08)
    hyper = dict(clip=0.7, noise_std=0.5, learning_rate=0.5, divisor=24.0, lockstep=lockstep)

    def run(steps, chunk, snapshots=()):
        return run_noisy_sgd(problem, draw_rngs(np.random.default_rng(5), 3), steps, sampler, chunk=chunk,
                             snapshots=snapshots, **hyper)

    # Blocks of 7 steps: snapshots at 7 (a block's end), 10 and 19 (inside blocks).
    plain, path = run(25, 7), run(25, 7, snapshots=(19, 7, 10))
    assert np.array_equal(path.weights, plain.weights)
    assert np.array_equal(path.rows_sampled, plain.rows_sampled)
    assert sorted(path.snapshots) == [7, 10, 19]
    # One step per block: a t-step run draws exactly the first t steps' randomness, so the
    # snapshot at t equals it bit for bit.
    path = run(25, 1, snapshots=(7, 10, 19))
    for t in (7, 10, 19):
        alone = run(t, 1)
        assert np.array_equal(path.snapshots[t].weights, alone.weights), t
        assert np.array_equal(path.snapshots[t].rows_sampled, alone.rows_sampled), t
    assert not np.allclose(path.snapshots[7].weights, path.weights)
    assert 0 < path.snapshots[7].seconds <= path.snapshots[19].seconds <= path.seconds


@pytest.mark.parametrize("snapshots, match", [((0,), r"\[1, steps\) with steps=25; got 0"),
                                              ((25,), "got 25"), ((2.5,), "got 2.5")])
def test_bad_snapshots_name_the_value(snapshots, match):
    with pytest.raises(ValueError, match=match):
        run_noisy_sgd(small_problem(n=100), draw_rngs(np.random.default_rng(0), 1), 25,
                      PoissonSampler(100, 0.1), clip=1.0, noise_std=1.0, learning_rate=0.1, divisor=10.0,
                      snapshots=snapshots)


@pytest.mark.parametrize("name", ["sgd-ma", "sgd-ma-reference"])
def test_sgd_ma_path_releases_are_accounted_at_their_own_steps(name):
    problem = small_problem(n=3000)
    q = default_batch_size(3000) / 3000
    algo = get_algorithm(name)
    key = "epsilon_moments_ref" if name.endswith("reference") else "epsilon_rdp"
    plain = algo.fit(problem, Privacy(math.inf, 1e-8), np.random.default_rng(0), draws=2, steps=60)
    res = algo.fit(problem, Privacy(math.inf, 1e-8), np.random.default_rng(0), draws=2, steps=60,
                   snapshots=(1, 20))
    assert np.array_equal(res.weights, plain.weights) and res.epsilon_spent == plain.epsilon_spent
    assert sorted(res.path) == [1, 20]
    for t, part in res.path.items():
        assert part.epsilon_spent == sgd_ma_epsilons(q, 4.0, t, 1e-8)[key]
        assert part.iterations == t and part.extra["steps"] == t and part.draws == 2
        assert 0 < part.grad_evals < res.grad_evals and part.seconds_per_draw > 0
    assert res.path[1].epsilon_spent < res.path[20].epsilon_spent < res.epsilon_spent
