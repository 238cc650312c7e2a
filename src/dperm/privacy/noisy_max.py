"""Report-noisy-max / report-noisy-min (Dwork & Roth 2014 §3.3; Lee & Kifer 2018, §3.3,
Algorithm 1).

Scores have shape ``(..., k)`` (e.g. ``(draws, candidates)``); the selected index is returned for
every leading position, so many independent selections cost one vectorised call.

Calibration of the noise scale b (both noise types):

* **general** scores, each moving by at most Δ between neighbours: b = 2Δ/ε;
* **monotone** scores (moving from D to D' all scores move in the same direction, by at most Δ —
  e.g. clipped-loss *sums* under add/remove-one, as in DP-AGD): b = Δ/ε.

With exponential noise (Ding et al. 2021: equals permute-and-flip) and Laplace noise (Dwork &
Roth Claim 3.9) the selection is then ε-DP, i.e. ε²/2-zCDP (Lee & Kifer 2018, Lemma 3.7).

With **Gumbel** noise (``noise="gumbel"``) argmax_k (s_k + G_k), G_k iid Gumbel(0, b), draws k
with probability exp(s_k/b)/Σ_j exp(s_j/b) (the Gumbel-max identity): the exponential mechanism
(McSherry & Talwar 2007). Its privacy loss at output k is (s_k(D) − s_k(D'))/b plus a term that
does not depend on k, so over the outputs it ranges over an interval of width
(max_k δ_k − min_k δ_k)/b, δ_k = s_k(D) − s_k(D'): at most Δ/b for monotone scores and 2Δ/b in
general. The same scale b therefore makes it ε-*bounded-range* (Durfee & Rogers 2019), which
implies ε-DP and ε²/8-zCDP (Cesar & Rogers 2021) — a quarter of the ε²/2 charged for an ε-DP
selection (docs/privacy.md#bounded-range-selection; the derivation and its exact checks:
tests/privacy/test_bounded_range.py).

For minimisation, NoisyMin is NoisyMax applied to −s: argmin_k (s_k − E_k). The DP-AGD reference
code instead computes argmin_k (s_k + E_k), which is *not* ε-DP for one-sided noise
(docs/privacy.md#noisymin-sign): with k equal scores on D and one raised by Δ on D', the loss is
(k − 1)Δ/b, i.e. 20ε for the 21-point step-size grid. It is kept only as
:func:`report_noisy_min_reference`.
"""

from __future__ import annotations

import numpy as np

from . import calibration_faults as faults
from .validation import check_epsilon, check_rng, check_sensitivity

__all__ = [
    "noisy_max_scale",
    "report_noisy_max",
    "report_noisy_min",
    "report_noisy_min_reference",
]

_NOISES = ("exponential", "laplace", "gumbel")


def noisy_max_scale(sensitivity, epsilon, *, monotone: bool) -> float:
    """Noise scale b for an ε-DP noisy max (ε-bounded-range with Gumbel noise): Δ/ε for
    monotone scores, 2Δ/ε in general."""
    b = faults.sensitivity(check_sensitivity(sensitivity)) / check_epsilon(epsilon)
    return b if monotone else 2.0 * b


def _scores(scores) -> np.ndarray:
    s = np.asarray(scores, dtype=float)
    if s.ndim == 0 or s.shape[-1] < 1:
        raise ValueError(f"scores must have a last axis of k >= 1 candidates; got shape {s.shape}")
    if not np.isfinite(s).all():
        bad = s[~np.isfinite(s)].flat[0]
        raise ValueError(f"scores must be finite; got a score of {bad!r}")
    return s


def _noise(noise: str, b: float, shape, rng: np.random.Generator) -> np.ndarray:
    b = faults.noise_scale(b)
    if noise == "exponential":
        return rng.exponential(b, size=shape)
    if noise == "laplace":
        return rng.laplace(0.0, b, size=shape)
    if noise == "gumbel":
        return rng.gumbel(0.0, b, size=shape)
    raise ValueError(f"noise must be one of {_NOISES}; got noise={noise!r}")


def report_noisy_max(scores, *, sensitivity, epsilon, rng: np.random.Generator,
                     monotone: bool = False, noise: str = "exponential"):
    """Return argmax_k (s_k + N_k), N_k iid Exp(mean b), Laplace(b) or Gumbel(0, b), b from
    :func:`noisy_max_scale`.

    Adjacency: whichever the caller used to bound the per-score sensitivity Δ (DP-AGD: add/remove
    with clipped loss sums, Δ = C_obj, monotone). Set ``monotone=True`` only when all scores move
    in the same direction between neighbours. Guarantee: ε-DP (hence ε²/2-zCDP); with Gumbel noise
    ε-bounded-range, hence also ε²/8-zCDP (module docstring).
    """
    s = _scores(scores)
    b = noisy_max_scale(sensitivity, epsilon, monotone=monotone)
    return np.argmax(s + _noise(noise, b, s.shape, check_rng(rng)), axis=-1)


def report_noisy_min(scores, *, sensitivity, epsilon, rng: np.random.Generator,
                     monotone: bool = False, noise: str = "exponential"):
    """Return argmin_k (s_k − N_k) = NoisyMax on −s (Lee & Kifer 2018, §3.3: NoisyMin is
    NoisyMax applied to −f).

    Same adjacency, sensitivity and guarantee as :func:`report_noisy_max`. Note the sign: the
    noise is *subtracted* (for symmetric Laplace noise the sign is immaterial in law).
    """
    s = _scores(scores)
    b = noisy_max_scale(sensitivity, epsilon, monotone=monotone)
    return np.argmin(s - _noise(noise, b, s.shape, check_rng(rng)), axis=-1)


def report_noisy_min_reference(scores, *, sensitivity, epsilon, rng: np.random.Generator):
    """**Not DP.** DP-AGD reference-code NoisyMin: argmin_k (s_k + E_k), E_k iid Exp(mean Δ/ε).

    Provided only to reproduce the published behaviour (``variant: reference``) and to audit it.
    Adding one-sided noise before a *min* rewards the candidates whose score rose, so the privacy
    loss is up to (k − 1)Δ/b = (k − 1)ε, not ε (docs/privacy.md#noisymin-sign,
    docs/deviations.md#dp-agd-noisymin-noise).
    """
    s = _scores(scores)
    b = faults.noise_scale(faults.sensitivity(check_sensitivity(sensitivity)) / check_epsilon(epsilon))
    return np.argmin(s + check_rng(rng).exponential(b, size=s.shape), axis=-1)
