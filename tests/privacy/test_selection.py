"""Private selection's accounting (dperm.privacy.selection): the trial-count laws, Theorems 2 and 6
of Papernot & Steinke 2022 against dp-accounting's independent implementation, and — the
strongest check — the exact Rényi divergence of whole random-stopping selections on toy bases,
computed from the laws' generating functions, against the bound."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from dperm.privacy.rdp import DEFAULT_RDP_ORDERS, rdp_to_epsilon
from dperm.privacy.selection import (
    RdpStatement,
    TrialCount,
    calibrate_trial,
    pure_dp_rdp,
    rdp_to_delta,
    selection_epsilon,
    selection_rdp,
    theorem_rdp,
    tnb_gamma,
    tnb_mean,
)

ORDERS = np.array(DEFAULT_RDP_ORDERS)
TNB = "truncated-negative-binomial"


# -- the number of trials ---------------------------------------------------------------------------

@pytest.mark.parametrize("eta", [-0.5, 0.0, 0.5, 1.0, 3.0])
@pytest.mark.parametrize("mean", [1.5, 8.0, 40.0])
def test_truncated_negative_binomial_pmf_is_the_definition_and_has_its_mean(eta, mean):
    count = TrialCount(TNB, mean, eta)
    g = count.gamma
    assert tnb_mean(g, eta) == pytest.approx(mean, rel=1e-10) and tnb_gamma(mean, eta) == pytest.approx(g, rel=1e-10)
    k_max = int(40.0 / g) + 100  # (1 − γ)^k_max < e^{−40}: the tail is below rounding
    pmf = count.pmf(k_max)
    assert pmf[0] == 0.0 and pmf.sum() == pytest.approx(1.0, abs=1e-10)
    assert (np.arange(k_max + 1) * pmf).sum() == pytest.approx(mean, rel=1e-8)
    # Definition 1, term by term (the product written out, independent of the pmf's recursion)
    k = np.arange(1, 30)
    if eta == 0.0:
        expected = (1 - g) ** k / (k * math.log(1 / g))
    else:
        products = [math.prod((ell + eta) / (ell + 1.0) for ell in range(kk)) for kk in k]
        expected = (1 - g) ** k * np.array(products) / (g ** -eta - 1.0)
    np.testing.assert_allclose(pmf[1:30], expected, rtol=1e-10)
    if eta == 1.0:  # geometric
        np.testing.assert_allclose(pmf[1:30], g * (1 - g) ** (k - 1), rtol=1e-12)


@pytest.mark.parametrize("count", [TrialCount(TNB, 8.0, 0.0), TrialCount(TNB, 5.0, 1.0), TrialCount(TNB, 3.0, -0.5),
                                   TrialCount("poisson", 6.0)], ids=["log", "geometric", "eta-0.5", "poisson"])
def test_sampled_numbers_of_trials_follow_their_law(count):
    """200,000 draws against the pmf: a chi-square test at fixed seed (p > 0.001) and the mean."""
    draws = count.sample(np.random.default_rng(11), 200_000)
    assert draws.dtype.kind == "i" and draws.min() >= (0 if count.distribution == "poisson" else 1)
    k_max = int(draws.max())
    pmf = count.pmf(k_max + 1)
    observed = np.bincount(draws, minlength=k_max + 2).astype(float)
    expected = pmf * len(draws)
    expected[-1] += len(draws) * (1.0 - pmf.sum())  # the tail beyond k_max + 1
    keep = expected > 0
    cells, obs, exp_ = np.cumsum(expected[keep] >= 20), observed[keep], expected[keep]
    # pool the sparse tail into one cell so that every expected count is >= 20
    groups = np.minimum(cells, cells.max())
    obs_g = np.bincount(groups, weights=obs)[1:]
    exp_g = np.bincount(groups, weights=exp_)[1:]
    assert stats.chisquare(obs_g, exp_g * obs_g.sum() / exp_g.sum()).pvalue > 1e-3
    assert draws.mean() == pytest.approx(count.mean, rel=0.02)


def test_sampling_is_deterministic_and_the_seed_matters():
    count = TrialCount(TNB, 8.0, 0.5)
    a, b = count.sample(np.random.default_rng(3), 50), count.sample(np.random.default_rng(3), 50)
    assert np.array_equal(a, b) and not np.array_equal(a, count.sample(np.random.default_rng(4), 50))


# -- statements ---------------------------------------------------------------------------------------

def _renyi(p, q, alpha):
    """D_α(p ‖ q) of two discrete laws (zero-probability outcomes of p dropped); ``alpha`` a
    number or an array of orders."""
    from scipy.special import logsumexp

    p, q = np.asarray(p, float), np.asarray(q, float)
    keep = p > 0
    a = np.asarray(alpha, float)
    if (q[keep] <= 0).any():
        return np.full(a.shape, math.inf) if a.ndim else math.inf
    terms = a[..., None] * np.log(p[keep]) + (1.0 - a[..., None]) * np.log(q[keep])
    out = logsumexp(terms, axis=-1) / (a - 1.0)
    return out if a.ndim else float(out)


@pytest.mark.parametrize("eps", [0.05, 0.5, 2.0])
def test_pure_dp_rdp_is_randomized_response_and_below_the_zcdp_bound(eps):
    a = ORDERS
    p = math.exp(eps) / (1 + math.exp(eps))
    exact = _renyi([p, 1 - p], [1 - p, p], a)
    np.testing.assert_allclose(pure_dp_rdp(eps, a), exact, rtol=1e-9, atol=1e-14)
    assert (pure_dp_rdp(eps, a) <= np.minimum(eps, a * eps * eps / 2) + 1e-12).all()
    # its delta(eps_hat) is randomized response's hockey-stick divergence
    st = RdpStatement(epsilon=eps)
    for e_hat in (0.0, eps / 3, eps):
        assert st.delta(e_hat) == pytest.approx(max(0.0, p - math.exp(e_hat) * (1 - p)), abs=1e-12)


def test_rdp_to_delta_matches_dp_accounting_and_inverts_rdp_to_epsilon():
    from dp_accounting.rdp.rdp_privacy_accountant import compute_delta

    for rho in (1e-4, 0.01, 0.5):
        rdp = ORDERS * rho
        for eps in (0.1, 1.0, 3.0):
            assert rdp_to_delta(rdp, ORDERS, eps) == pytest.approx(compute_delta(ORDERS, rdp, eps)[0], rel=1e-9)
        delta = 1e-6
        eps, _ = rdp_to_epsilon(rdp, ORDERS, delta)
        assert rdp_to_delta(rdp, ORDERS, eps) <= delta * (1 + 1e-9)


# -- the theorems against dp-accounting ------------------------------------------------------------

def repeat_and_select_rdp(statement: RdpStatement, mean: float, shape: float) -> np.ndarray:
    """dp-accounting's RDP of a repeat-and-select over one trial, through its public API: an
    RdpAccountant composing RepeatAndSelectDpEvent (the trial as a ZCDpEvent for ρ-zCDP, as the
    binary RandomizedResponseDpEvent, whose curve is the pure-ε one, under replace-one)."""
    import dp_accounting
    from dp_accounting.dp_event import RandomizedResponseDpEvent, RepeatAndSelectDpEvent, ZCDpEvent
    from dp_accounting.rdp import RdpAccountant

    if statement.rho is not None:
        trial, relation = ZCDpEvent(statement.rho), dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE
    else:
        trial = RandomizedResponseDpEvent(2.0 / (1.0 + math.exp(statement.epsilon)), 2)
        relation = dp_accounting.NeighboringRelation.REPLACE_ONE
    accountant = RdpAccountant(list(ORDERS), relation)
    accountant.compose(RepeatAndSelectDpEvent(trial, mean, shape))
    return np.array(accountant.rdp)


def test_the_public_route_to_dp_accountings_curves_gives_a_trials_own_curve():
    """The guard of the route above: one trial repeated exactly once (K = 1, Poisson's limit is
    not it, so check the inner events themselves) has the curve of its statement."""
    import dp_accounting
    from dp_accounting.dp_event import RandomizedResponseDpEvent, ZCDpEvent
    from dp_accounting.rdp import RdpAccountant

    for statement, event, relation in (
            (RdpStatement(rho=0.05), ZCDpEvent(0.05), dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE),
            (RdpStatement(epsilon=0.7), RandomizedResponseDpEvent(2.0 / (1.0 + math.exp(0.7)), 2),
             dp_accounting.NeighboringRelation.REPLACE_ONE)):
        accountant = RdpAccountant(list(ORDERS), relation)
        accountant.compose(event)
        np.testing.assert_allclose(np.array(accountant.rdp), statement.rdp(ORDERS), rtol=1e-10)

@pytest.mark.parametrize("shape", [0.0, 0.5, 1.0, 2.0, math.inf])
@pytest.mark.parametrize("mean", [2.0, 10.0, 30.0])
@pytest.mark.parametrize("rho", [1e-4, 0.01, 0.2])
def test_theorems_agree_with_dp_accounting_for_a_zcdp_trial(shape, mean, rho):
    """dp-accounting's RepeatAndSelectDpEvent accounting (Theorem 2 with the monotone step; Theorem
    6 as stated): same curve to 1e-8 (its γ is found by bisection to 1e-9)."""
    statement = RdpStatement(rho=rho)
    theirs = repeat_and_select_rdp(statement, mean, shape)
    if shape == math.inf:
        ours = theorem_rdp(statement, TrialCount("poisson", mean), ORDERS)
    else:
        ours = selection_rdp(statement, TrialCount(TNB, mean, shape), ORDERS)
    np.testing.assert_allclose(ours, theirs, rtol=1e-8)


@pytest.mark.parametrize("eps", [0.05, 0.3, 1.0])
def test_a_pure_trial_costs_at_most_what_its_rdp_curve_alone_gives(eps):
    """For pure ε-DP trials δ̂ is randomized response's (exact), never above the RDP conversion
    dp-accounting uses: our Theorem 6 bound is at most theirs; Theorem 2 is the same."""
    statement = RdpStatement(epsilon=eps)
    theirs = repeat_and_select_rdp(statement, 8.0, math.inf)
    assert (theorem_rdp(statement, TrialCount("poisson", 8.0), ORDERS) <= theirs * (1 + 1e-12)).all()
    theirs = repeat_and_select_rdp(statement, 8.0, 0.5)
    np.testing.assert_allclose(selection_rdp(statement, TrialCount(TNB, 8.0, 0.5), ORDERS), theirs, rtol=1e-8)


# -- the exact Rényi divergence of whole selections on toy bases ------------------------------------

def _pgf(count: TrialCount, x):
    """E[x^K] in closed form (independent of the pmf code)."""
    x = np.asarray(x, float)
    if count.distribution == "poisson":
        return np.exp(count.mean * (x - 1.0))
    g, e = count.gamma, count.eta
    if e == 0.0:
        return np.log1p(-(1 - g) * x) / math.log(g)
    return ((1.0 - (1.0 - g) * x) ** -e - 1.0) / (g ** -e - 1.0)


def _selection_law(p, count):
    """Law of the released outcome of the best of K trials of a base whose outcomes, in the
    order of their scores, have probabilities ``p``: P[best ≤ j] = E[F(j)^K]; K = 0 releases a
    fixed output ⊥ (last entry)."""
    cdf = np.concatenate([[0.0], np.cumsum(p)])
    g = _pgf(count, cdf)
    return np.append(np.diff(g), g[0])


def _toy_bases(rng, how_many):
    """Pairs of base laws on 2–5 ordered outcomes, including randomized response (the extreme
    pure-DP pair) and pairs where the differing row makes the best outcome rarer."""
    eps = 0.7
    p = math.exp(eps) / (1 + math.exp(eps))
    yield np.array([1 - p, p]), np.array([p, 1 - p])
    yield np.array([p, 1 - p]), np.array([1 - p, p])
    for _ in range(how_many):
        m = int(rng.integers(2, 6))
        base = rng.dirichlet(np.ones(m))
        tilt = np.exp(rng.uniform(-0.6, 0.6, size=m))
        other = base * tilt / np.sum(base * tilt)
        yield base, other


@pytest.mark.parametrize("count", [TrialCount(TNB, 3.0, 0.0), TrialCount(TNB, 10.0, 0.0), TrialCount(TNB, 5.0, 1.0),
                                   TrialCount(TNB, 20.0, 0.5), TrialCount(TNB, 4.0, -0.5), TrialCount(TNB, 6.0, 3.0),
                                   TrialCount("poisson", 2.0), TrialCount("poisson", 10.0)],
                         ids=["log3", "log10", "geo5", "tnb20", "tnb-0.5", "tnb3", "poisson2", "poisson10"])
def test_the_exact_divergence_of_a_selection_never_exceeds_the_bound(count):
    """For each toy base, the statements it satisfies (its largest log-ratio as pure ε-DP, and its
    largest D_α/α as ρ-zCDP) give the theorem's bound; the exact D_α of the selection's output law
    (both directions) must stay below it at every order. The check can fail: the same bound
    without its ln(E[K])/(λ − 1) term is exceeded on these bases, and so is the trial's own curve."""
    rng = np.random.default_rng(2022)
    a = np.array([x for x in ORDERS if x <= 64])
    exceeded_trial = exceeded_weaker = False
    for p, q in _toy_bases(rng, 150):
        eps = float(np.max(np.abs(np.log(p / q))))
        rho = float(np.max(np.maximum(_renyi(p, q, a), _renyi(q, p, a)) / a))
        # Rényi divergences are non-decreasing in the order: rho over a finite grid is a bound
        # only on that grid, so evaluate the theorem on the same grid
        for statement in (RdpStatement(epsilon=eps), RdpStatement(rho=rho), RdpStatement(rho=rho, epsilon=eps)):
            bound = selection_rdp(statement, count, a)
            sel_p, sel_q = _selection_law(p, count), _selection_law(q, count)
            exact = np.maximum(_renyi(sel_p, sel_q, a), _renyi(sel_q, sel_p, a))
            assert (exact <= bound + 1e-10).all(), (p, q, statement, (exact - bound).max())
            exceeded_trial |= bool((exact > statement.rdp(a) + 1e-9).any())
            exceeded_weaker |= bool((exact > bound - math.log(count.mean) / (a - 1.0) + 1e-10).any())
    assert exceeded_trial and exceeded_weaker


def test_revealing_k_would_cost_more_than_the_bound():
    """Why only the best trial is released: with K published the law is that of (K, best of K),
    whose divergence on randomized response exceeds the selection's bound."""
    count = TrialCount(TNB, 10.0, 1.0)
    eps = 0.7
    p = math.exp(eps) / (1 + math.exp(eps))
    base, other = np.array([1 - p, p]), np.array([p, 1 - p])
    k = np.arange(1, 400)
    pmf = count.pmf(399)[1:]
    joint = lambda law: np.concatenate([pmf * law[0] ** k, pmf * (1 - law[0] ** k)])  # noqa: E731
    alpha = 8.0
    revealed = _renyi(joint(other), joint(base), alpha)
    assert revealed > selection_rdp(RdpStatement(epsilon=eps), count, [alpha])[0]


# -- calibration ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("count", [TrialCount(TNB, 8.0, 0.0), TrialCount("poisson", 8.0)], ids=["tnb", "poisson"])
@pytest.mark.parametrize("target", [0.05, 0.4, 1.6])
def test_calibration_hits_its_target_from_below(count, target):
    delta = 1e-8

    def total(t):
        return selection_epsilon([[RdpStatement(rho=t * t / 40.0)], [RdpStatement(epsilon=t)]], count, delta)[0]

    t = calibrate_trial(total, target)
    assert total(t) <= target
    assert total(t * (1 + 1e-6)) > target * (1 - 1e-5)
    assert total(t) == pytest.approx(target, rel=1e-5)


def test_the_bound_grows_with_the_trials_and_with_the_trial_budget():
    delta = 1e-8
    eps = [selection_epsilon(RdpStatement(rho=0.01), TrialCount(TNB, m, 0.0), delta)[0] for m in (2, 8, 32)]
    assert eps[0] < eps[1] < eps[2]
    eps = [selection_epsilon(RdpStatement(rho=r), TrialCount("poisson", 8.0), delta)[0] for r in (1e-3, 1e-2, 1e-1)]
    assert eps[0] < eps[1] < eps[2]
    # and it is never below one trial's
    one = rdp_to_epsilon(RdpStatement(rho=0.01).rdp(ORDERS), ORDERS, delta)[0]
    assert selection_epsilon(RdpStatement(rho=0.01), TrialCount(TNB, 1.5, 0.0), delta)[0] > one
