"""Laplace noise (ℓ1 sensitivity) and ℓ2-"Laplace" noise (ℓ2 sensitivity, Gamma-norm sampler)."""

from __future__ import annotations

import numpy as np

from . import calibration_faults as faults
from .validation import check_epsilon, check_rng, check_sensitivity

__all__ = ["laplace_scale", "laplace_noise", "l2_laplace_noise", "l2_laplace_draw"]


def laplace_scale(sensitivity, epsilon) -> float:
    """Scale b = Δ₁/ε of the Laplace mechanism (Dwork et al. 2006; Dwork & Roth Thm 3.6)."""
    return faults.sensitivity(check_sensitivity(sensitivity)) / check_epsilon(epsilon)


def laplace_noise(*, sensitivity, epsilon, rng: np.random.Generator, size=None):
    """Coordinate-wise Laplace noise with scale Δ₁/ε, shape ``size`` (e.g. ``(draws, p)``).

    Adjacency: any, with Δ₁ = sup ‖f(D) − f(D')‖₁ over neighbours under it.
    Guarantee: f(D) + noise is ε-DP (Dwork & Roth 2014, Thm 3.6), hence ε²/2-zCDP.
    """
    b = faults.noise_scale(laplace_scale(sensitivity, epsilon))
    return check_rng(rng).laplace(0.0, b, size=size)


def l2_laplace_noise(*, sensitivity, epsilon, rng: np.random.Generator, size):
    """ℓ2-"Laplace" noise with density ∝ exp(−ε‖z‖₂/Δ₂) on R^p (the last axis of ``size``).

    Sampled as z = r·u with r ~ Gamma(shape=p, scale=Δ₂/ε) and u uniform on the unit sphere (a
    normalised standard Gaussian); then E‖z‖ = pΔ₂/ε and E‖z‖² = p(p+1)Δ₂²/ε².
    ``size=p`` gives one vector, ``size=(draws, p)`` a matrix of independent vectors.

    Adjacency: any, with Δ₂ = sup ‖f(D) − f(D')‖₂ over neighbours under it.
    Guarantee: f(D) + z is ε-DP, since the density ratio is
    exp(ε(‖z − f(D')‖ − ‖z − f(D)‖)/Δ₂) ≤ exp(ε) by the triangle inequality
    (Chaudhuri et al. 2011; Zhang et al. 2017, Alg. 1; Lowy & Razaviyayn, eq. (4)).
    """
    b = faults.sensitivity(check_sensitivity(sensitivity)) / check_epsilon(epsilon)
    return l2_laplace_draw(b, check_rng(rng), size)


def l2_laplace_draw(scale: float, rng: np.random.Generator, size):
    """The draw of :func:`l2_laplace_noise` for a scale b = Δ₂/ε already calibrated (density ∝
    exp(−‖z‖/b)); the noise factor of :mod:`.calibration_faults` applies here, the sensitivity
    factor where b was calibrated."""
    b = faults.noise_scale(scale)
    shape = (int(size),) if np.isscalar(size) else tuple(int(s) for s in size)
    if len(shape) == 0 or shape[-1] < 1 or min(shape) < 0:
        raise ValueError(f"size must end with the dimension p >= 1; got size={size!r}")
    p = shape[-1]
    direction = rng.standard_normal(shape)
    norm = np.linalg.norm(direction, axis=-1, keepdims=True)
    radius = rng.gamma(shape=p, scale=b, size=shape[:-1] + (1,))
    return direction * (radius / norm)
