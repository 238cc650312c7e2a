"""Noise of a composition of Poisson-subsampled Gaussian steps: the calibration every DP-SGD-shaped
algorithm shares (``dp-sgd``, ``dp-lssgd``, PIDP-SGD's noisy steps, the lecture notes' DP-SGD).

Adjacency: add/remove one row; each step's clipped sum has sensitivity C (the clip), so a noise
multiplier σ (noise std / C) and a sampling rate q fix the privacy loss of T steps. ε is computed
by the ``accountant``: ``"rdp"`` in Rényi DP of the sampled Gaussian (Mironov, Talwar & Zhang
2019) with the improved conversion (:mod:`.rdp`), or ``"pld"``, the privacy loss distribution of
dp-accounting (:mod:`.pld`, the tighter of the two; docs/privacy.md#tight-accounting).
:func:`calibrate_noise_multiplier` is the smallest σ meeting a target (ε, δ);
:func:`sampled_gaussian_epsilon` its inverse.

**Replace-one targets** (``adjacency="replace-one"`` of :func:`calibrate_noise`): a replace-one
neighbour is one removal and one addition away, so an (ε_a, δ_a)-DP mechanism under add/remove is
(2ε_a, (1 + e^{ε_a})δ_a)-DP under replace-one (group privacy for two rows: Pr[M(D) ∈ S] ≤
e^{ε_a}(e^{ε_a}·Pr[M(D′) ∈ S] + δ_a) + δ_a; Dwork & Roth 2014, Theorem 2.2 and its (ε, δ) form).
:func:`replace_one_as_add_remove` gives the add/remove target (ε/2, δ/(1 + e^{ε/2})) that meets a
replace-one (ε, δ); the sampled Gaussian is then calibrated to it by the accountant above. This is
conservative, never optimistic: dp-accounting 0.6.0 has no replace-one accountant for Poisson
sampling (it refuses ``REPLACE_ONE`` for ``PoissonSampledDpEvent``). Steps that draw a fixed
number of rows uniformly (batch-1 SGD) have a direct replace-one accountant instead:
:func:`calibrate_uniform_noise` (:mod:`.rdp_wor`, Wang, Balle & Kasiviswanathan 2019).
docs/privacy.md#adjacency says which algorithm uses which.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

from .pld import epsilon_sampled_gaussian_pld
from .rdp import epsilon_sampled_gaussian, noise_multiplier_for_epsilon, smallest_noise
from .rdp_wor import epsilon_sampled_gaussian_wor_rdp, noise_multiplier_uniform_replace_one

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


ADJACENCIES = ("add-remove", "replace-one")


def check_adjacency(adjacency: str) -> str:
    if adjacency not in ADJACENCIES:
        raise ValueError(f"adjacency must be one of {ADJACENCIES}; got adjacency={adjacency!r}")
    return adjacency


def replace_one_as_add_remove(epsilon: float, delta: float) -> tuple[float, float]:
    """The add/remove target (ε/2, δ/(1 + e^{ε/2})) whose guarantee implies (ε, δ)-DP under
    replace-one (group privacy for two rows, module docstring)."""
    half = float(epsilon) / 2.0
    return half, float(delta) / (1.0 + math.exp(half))


@dataclass(frozen=True)
class NoiseCalibration:
    """σ (noise multiplier: noise std / clip), the ε it spends at the target δ, and how."""

    noise_multiplier: float
    epsilon_spent: float
    accounting: str


def calibrate_noise(privacy, sampling_rate: float, steps: int, *, noise_multiplier: float | None = None,
                    algorithm: str = "dp-sgd", accountant: str = "rdp",
                    adjacency: str = "add-remove") -> NoiseCalibration:
    """The noise of ``steps`` Poisson-subsampled (rate q) Gaussian steps of sensitivity C
    (add/remove): σ the smallest multiplier meeting the target (ε, δ) by ``accountant``
    (:func:`calibrate_noise_multiplier`), or the given ``noise_multiplier``, in which case ε is
    computed (the SGD-MA way). The one calibration of ``dp-sgd`` and ``dp-lssgd``: they cannot
    drift apart. ``adjacency="replace-one"`` meets a replace-one target (ε, δ) by calibrating to
    the add/remove target :func:`replace_one_as_add_remove` (module docstring); the ε it reports
    is then 2ε_a (replace-one) and the accounting says how it was obtained."""
    check_accountant(accountant)
    if check_adjacency(adjacency) == "replace-one":
        if noise_multiplier is not None:
            raise ValueError(f"{algorithm}: adjacency='replace-one' calibrates to a target (epsilon, delta); "
                             "a given noise_multiplier is accounted under add/remove only")
        if not privacy.is_private or privacy.delta <= 0:
            raise ValueError(f"{algorithm} needs a finite epsilon and delta > 0")
        eps_a, delta_a = replace_one_as_add_remove(privacy.epsilon, privacy.delta)
        sigma = calibrate_noise_multiplier(eps_a, delta_a, sampling_rate, steps, accountant)
        spent = sampled_gaussian_epsilon(sigma, delta_a, sampling_rate, steps, accountant)
        return NoiseCalibration(sigma, 2.0 * spent,
                                f"{ACCOUNTANTS[accountant]} at the add/remove target (eps/2, delta/(1 + e^(eps/2))); "
                                "replace-one by group privacy for two rows (docs/privacy.md#adjacency)")
    if noise_multiplier is None:
        if not privacy.is_private or privacy.delta <= 0:
            raise ValueError(f"{algorithm} needs a finite epsilon and delta > 0, or an explicit noise_multiplier")
        sigma = calibrate_noise_multiplier(float(privacy.epsilon), float(privacy.delta), sampling_rate, steps,
                                           accountant)
    else:
        sigma = float(noise_multiplier)
    spent = sampled_gaussian_epsilon(sigma, privacy.delta, sampling_rate, steps, accountant)
    return NoiseCalibration(sigma, spent, ACCOUNTANTS[accountant])


def calibrate_uniform_noise(privacy, n: int, steps: int, *, sample_size: int = 1,
                            algorithm: str = "dp-sgd-batch1") -> NoiseCalibration:
    """The noise of ``steps`` Gaussian steps on ``sample_size`` rows drawn uniformly without
    replacement (batch-1 SGD: one uniform row per step), **replace-one** (the sampled clipped sum
    moves by 2C): σ the smallest multiplier meeting (ε, δ) by Wang, Balle & Kasiviswanathan's
    Theorem 9 (:func:`dperm.privacy.rdp_wor.noise_multiplier_uniform_replace_one`)."""
    if not privacy.is_private or privacy.delta <= 0:
        raise ValueError(f"{algorithm} needs a finite epsilon and delta > 0")
    sigma = noise_multiplier_uniform_replace_one(float(privacy.epsilon), float(privacy.delta), int(n), int(steps),
                                                 int(sample_size))
    spent = epsilon_sampled_gaussian_wor_rdp(int(n), int(sample_size), sigma / 2.0, int(steps), float(privacy.delta))
    return NoiseCalibration(sigma, spent, "RDP of the Gaussian on a uniform sample without replacement, replace-one "
                                          "(Wang, Balle & Kasiviswanathan 2019, Thm 9), improved conversion")
