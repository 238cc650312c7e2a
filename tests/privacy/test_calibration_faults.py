"""The audit's fault injection (dperm.privacy.calibration_faults): inert by default, applied once,
and reaching every registered private algorithm (one that drew its noise past the hooks would
escape its mutants, and the coverage test names it)."""

from __future__ import annotations

import numpy as np
import pytest

from dperm.algorithms import algorithm_names, get_algorithm
from dperm.privacy import calibration_faults as faults
from dperm.privacy import gaussian_noise, gaussian_sigma_analytic, l2_laplace_noise, laplace_noise, report_noisy_max
from dperm.privacy.exponential import exponential_mechanism
from dperm.privacy.perturbation import draw_noise, noise_calibration


def _release(name, factors, draws=256):
    spec = get_algorithm(name)
    case = spec.audit()[0]
    with faults.injected(**factors):
        result = spec.fit(case.d_prime, case.privacy, np.random.default_rng(7), draws, **case.hyper)
    return result.weights


# every algorithm the audit builds mutants of: private and registered as DP as implemented (a
# reference variant that is not is itself a control the audit must catch)
AUDITED = [n for n in algorithm_names() if get_algorithm(n).private and get_algorithm(n).dp_as_implemented]


@pytest.mark.parametrize("name", AUDITED)
def test_half_noise_changes_every_private_algorithms_release(name):
    """On D′ of the algorithm's first audit case (where the differing row gives the noise
    something to decide), 256 releases with a fixed seed, with and without half the noise."""
    plain, half = _release(name, {}), _release(name, {"noise": 0.5})
    assert plain.shape == half.shape
    assert not np.allclose(plain, half, rtol=1e-12, atol=0.0), \
        f"{name}: its release does not change with half the noise: it draws noise past calibration_faults"


def test_the_factors_are_one_outside_the_context_and_restored_after_an_error():
    assert faults.factors() == {"noise": 1.0, "sensitivity": 1.0}
    with pytest.raises(RuntimeError):
        with faults.injected(noise=0.5, sensitivity=0.25):
            assert faults.factors() == {"noise": 0.5, "sensitivity": 0.25}
            raise RuntimeError("inside")
    assert faults.factors() == {"noise": 1.0, "sensitivity": 1.0}
    with pytest.raises(ValueError, match="noise factor"):
        with faults.injected(noise=-1.0):
            pass


def test_each_draw_is_scaled_once_and_each_calibration_once():
    rng = lambda: np.random.default_rng(3)  # noqa: E731
    assert np.array_equal(gaussian_noise(sigma=2.0, rng=rng(), size=5) * 0.5,
                          _with({"noise": 0.5}, lambda: gaussian_noise(sigma=2.0, rng=rng(), size=5)))
    # laplace: the sensitivity factor at the calibration, the noise factor at the draw
    both = _with({"noise": 0.5, "sensitivity": 0.5},
                 lambda: laplace_noise(sensitivity=1.0, epsilon=1.0, rng=rng(), size=4))
    assert np.allclose(both, laplace_noise(sensitivity=0.25, epsilon=1.0, rng=rng(), size=4))
    # the output-perturbation rule and its draw: the gamma-norm path meets each factor once
    kind, scale, _ = _with({"sensitivity": 0.5}, lambda: noise_calibration(1.0, 1.0, 0.0, "auto"))
    assert kind == "gamma-norm" and scale == 0.5
    drawn = _with({"noise": 0.5}, lambda: draw_noise("gamma-norm", 1.0, 3, rng()))
    assert np.allclose(drawn, draw_noise("gamma-norm", 0.5, 3, rng()))
    assert np.allclose(_with({"sensitivity": 0.5}, lambda: l2_laplace_noise(sensitivity=1.0, epsilon=1.0, rng=rng(),
                                                                              size=3)),
                       l2_laplace_noise(sensitivity=0.5, epsilon=1.0, rng=rng(), size=3))
    sigma = _with({"sensitivity": 0.5}, lambda: gaussian_sigma_analytic(1.0, 1e-5, 1.0))
    assert sigma == pytest.approx(gaussian_sigma_analytic(1.0, 1e-5, 0.5), rel=1e-9)


def test_no_noise_selects_the_best_candidate():
    scores = np.array([[0.0, 3.0, 1.0]] * 4)
    assert list(_with({"noise": 0.0}, lambda: report_noisy_max(scores, sensitivity=1.0, epsilon=1.0,
                                                               rng=np.random.default_rng(0)))) == [1] * 4
    assert list(_with({"noise": 0.0}, lambda: exponential_mechanism(scores, sensitivity=1.0, epsilon=1.0,
                                                                    rng=np.random.default_rng(0)))) == [1] * 4


def _with(factors, thunk):
    with faults.injected(**factors):
        return thunk()
