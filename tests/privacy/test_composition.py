"""Advanced composition: the per-step split composes back within the target."""

import math

import pytest

from dperm import privacy as P


@pytest.mark.parametrize("epsilon", [0.05, 0.4, 1.0, 1.6, 5.0])
@pytest.mark.parametrize("delta", [1e-5, 1e-8])
@pytest.mark.parametrize("steps", [1, 10, 1000, 100_000])
def test_split_composes_within_target(epsilon, delta, steps):
    e0, d0 = P.advanced_composition_split(epsilon, delta, steps)
    total_eps, total_delta = P.advanced_composition(e0, d0, steps, delta / 2)
    assert total_eps <= epsilon
    assert total_delta == pytest.approx(delta, rel=1e-12)
    assert d0 * 2 * steps == pytest.approx(delta, rel=1e-12)
    # the first (√T) term uses exactly half of ε, the rest is the e^{ε0} − 1 correction
    assert math.sqrt(2 * steps * math.log(2 / delta)) * e0 == pytest.approx(epsilon / 2, rel=1e-12)


def test_advanced_beats_basic_composition_for_many_small_steps():
    e0, steps = 0.01, 10_000
    total, _ = P.advanced_composition(e0, 0.0, steps, 1e-6)
    assert total < steps * e0 / 5


def test_advanced_composition_grows_like_sqrt_steps():
    e0 = 1e-4
    a, _ = P.advanced_composition(e0, 0.0, 100, 1e-6)
    b, _ = P.advanced_composition(e0, 0.0, 10_000, 1e-6)
    assert b / a == pytest.approx(10.0, rel=0.01)


def test_split_refuses_when_target_is_unreachable():
    with pytest.raises(ValueError, match="does not reach"):
        P.advanced_composition_split(500.0, 0.5, 1)
