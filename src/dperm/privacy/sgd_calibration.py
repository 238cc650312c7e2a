"""Noise of a composition of Poisson-subsampled Gaussian steps: the calibration every DP-SGD-shaped
algorithm shares (``dp-sgd``, ``dp-lssgd``, PIDP-SGD's noisy steps, the lecture notes' DP-SGD).

Adjacency: add/remove one row; each step's clipped sum has sensitivity C (the clip), so a noise
multiplier σ (noise std / C) and a sampling rate q fix the privacy loss of T steps. ε is computed
by the ``accountant``: ``"rdp"`` in Rényi DP of the sampled Gaussian (Mironov, Talwar & Zhang
2019) with the improved conversion (:mod:`.rdp`), or ``"pld"``, the privacy loss distribution of
dp-accounting (:mod:`.pld`, the tighter of the two; docs/privacy.md#tight-accounting).
:func:`calibrate_noise_multiplier` is the smallest σ meeting a target (ε, δ);
:func:`sampled_gaussian_epsilon` its inverse.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

from .pld import epsilon_sampled_gaussian_pld
from .rdp import epsilon_sampled_gaussian, noise_multiplier_for_epsilon, smallest_noise

#: accountant -> how the records' ``accounting`` column names it
ACCOUNTANTS = {
    "rdp": "RDP of the Poisson-subsampled Gaussian, improved conversion",
    "pld": "PLD of the Poisson-subsampled Gaussian (dp-accounting)",
}


def check_accountant(accountant: str) -> str:
    if accountant not in ACCOUNTANTS:
        raise ValueError(f"accountant must be one of {sorted(ACCOUNTANTS)}; got accountant={accountant!r}")
    return accountant


def sampled_gaussian_epsilon(noise_multiplier: float, delta: float, q: float, steps: int,
                             accountant: str = "rdp") -> float:
    """ε of T Poisson-subsampled Gaussian steps (rate q, noise multiplier σ, add/remove) at δ, by
    ``accountant`` (``"rdp"`` or ``"pld"``, module docstring)."""
    if check_accountant(accountant) == "pld":
        return epsilon_sampled_gaussian_pld(q, noise_multiplier, steps, delta)
    return epsilon_sampled_gaussian(q, noise_multiplier, steps, delta)


@lru_cache(maxsize=1024)
def calibrate_noise_multiplier(epsilon: float, delta: float, q: float, steps: int,
                               accountant: str = "rdp") -> float:
    """Smallest noise multiplier σ whose T Poisson-subsampled Gaussian steps (rate q, add/remove)
    are (ε, δ)-DP by ``accountant``; the returned σ always meets the target by that accountant.

    ``"rdp"``: :func:`dperm.privacy.noise_multiplier_for_epsilon`. ``"pld"``: a root of
    ε_PLD(σ) = ε on log σ, bracketed below the RDP answer (PLD never needs more noise than
    RDP, whose σ is the upper end when it is not already at the root), to 10⁻⁴ relative
    precision, then raised until the PLD's ε is at most the target (its discretised ε is a step
    function of σ). Results are cached: cells of one job share their calibrations.
    """
    sigma_rdp = noise_multiplier_for_epsilon(epsilon, delta, q, steps)
    if check_accountant(accountant) == "rdp":
        return sigma_rdp

    # The PLD's discretisation can land above the RDP's ε at σ_RDP: the search then goes up.
    return smallest_noise(lambda sigma: epsilon_sampled_gaussian_pld(q, sigma, steps, delta), epsilon,
                          lo=math.log(sigma_rdp) - 0.25, hi=math.log(sigma_rdp), step=0.05, down_step=0.25,
                          xtol=1e-4, min_noise=1e-6)


@dataclass(frozen=True)
class NoiseCalibration:
    """σ (noise multiplier: noise std / clip), the ε it spends at the target δ, and how."""

    noise_multiplier: float
    epsilon_spent: float
    accounting: str


def calibrate_noise(privacy, sampling_rate: float, steps: int, *, noise_multiplier: float | None = None,
                    algorithm: str = "dp-sgd", accountant: str = "rdp") -> NoiseCalibration:
    """The noise of ``steps`` Poisson-subsampled (rate q) Gaussian steps of sensitivity C
    (add/remove): σ the smallest multiplier meeting the target (ε, δ) by ``accountant``
    (:func:`calibrate_noise_multiplier`), or the given ``noise_multiplier``, in which case ε is
    computed (the SGD-MA way). The one calibration of ``dp-sgd``, ``dp-lssgd`` and PIDP-SGD's
    noisy steps: they cannot drift apart."""
    check_accountant(accountant)
    if noise_multiplier is None:
        if not privacy.is_private or privacy.delta <= 0:
            raise ValueError(f"{algorithm} needs a finite epsilon and delta > 0, or an explicit noise_multiplier")
        sigma = calibrate_noise_multiplier(float(privacy.epsilon), float(privacy.delta), sampling_rate, steps,
                                           accountant)
    else:
        sigma = float(noise_multiplier)
    spent = sampled_gaussian_epsilon(sigma, privacy.delta, sampling_rate, steps, accountant)
    return NoiseCalibration(sigma, spent, ACCOUNTANTS[accountant])
