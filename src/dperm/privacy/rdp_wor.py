"""RDP of the Gaussian mechanism on a uniform sample drawn without replacement, under
**replace-one** adjacency (Wang, Balle & Kasiviswanathan 2019, "Subsampled Rényi differential
privacy and analytical moments accountant", Theorem 9).

Mechanism: each step draws m of the n rows uniformly without replacement (independently across
steps; m = 1 is "one row drawn uniformly", the step of batch-1 SGD), sums their clipped vectors
(norm ≤ C) and adds N(0, (σC)²I). Under replace-one the sampled sum moves by at most 2C, so the
base mechanism on the sample is the Gaussian with z = σ/2 (noise std over sensitivity), whose
RDP is ε(α) = α/(2z²). For integer α ≥ 2 and γ = m/n, Theorem 9 bounds the subsampled
mechanism's RDP by

    (1/(α − 1))·ln(1 + γ²·C(α, 2)·min{4(e^{ε(2)} − 1), 2e^{ε(2)}} + Σ_{j=3}^{α} 2γ^j·C(α, j)·e^{(j − 1)ε(j)})

(the Gaussian's ε(∞) = ∞ makes the theorem's min{2, (e^{ε(∞)} − 1)^j} equal to 2). T steps
compose to T times that; the improved conversion of :func:`dperm.privacy.rdp.rdp_to_epsilon`
turns it into (ε, δ). dp-accounting implements the same theorem with the refinement of its
Theorem 27 (forward differences), which is never larger: this bound is the looser of the two, so
a σ calibrated here also meets dp-accounting's (tests/privacy/test_rdp_wor.py compares them). It
is evaluated in one vectorised pass over all orders, about a thousand times faster than
dp-accounting's, which matters inside calibration loops.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
from scipy.special import gammaln, logsumexp

from .rdp import rdp_to_epsilon, smallest_noise
from .validation import check_delta, check_epsilon, check_sigma, check_steps

#: integer orders 2..64, then powers of two to 4096 (large orders serve small ε)
WOR_ORDERS: tuple[float, ...] = tuple(float(a) for a in [*range(2, 65), 128, 256, 512, 1024, 2048, 4096])


def _log_binom(a, j):
    return gammaln(a + 1.0) - gammaln(j + 1.0) - gammaln(a - j + 1.0)


@lru_cache(maxsize=4096)
def _rdp_per_step(gamma: float, z: float, orders: tuple[float, ...]) -> np.ndarray:
    out = np.empty(len(orders))
    eps2 = 2.0 / (2.0 * z * z)  # ε(2) of the base Gaussian
    second = min(math.log(4.0) + eps2 + math.log(-math.expm1(-eps2)), math.log(2.0) + eps2)
    for i, alpha in enumerate(orders):
        a = float(alpha)
        j = np.arange(3.0, a + 1.0)
        terms = [0.0, 2.0 * math.log(gamma) + float(_log_binom(a, 2.0)) + second]
        if j.size:
            terms = np.concatenate([terms, math.log(2.0) + j * math.log(gamma) + _log_binom(a, j)
                                    + (j - 1.0) * j / (2.0 * z * z)])
        out[i] = float(logsumexp(terms)) / (a - 1.0)
    out.setflags(write=False)
    return out


def rdp_sampled_gaussian_wor(n: int, sample_size: int, z: float, steps: int = 1,
                             orders: tuple[float, ...] = WOR_ORDERS) -> np.ndarray:
    """RDP at ``orders`` (integers ≥ 2) of ``steps`` Gaussian steps of noise multiplier ``z``
    (noise std over the replace-one sensitivity of the sampled sum) on ``sample_size`` rows of
    ``n`` drawn without replacement; replace-one adjacency (module docstring)."""
    if not (isinstance(n, int) and isinstance(sample_size, int) and 1 <= sample_size <= n):
        raise ValueError(f"need integers 1 <= sample_size <= n; got n={n!r}, sample_size={sample_size!r}")
    if any(o != int(o) or o < 2 for o in orders):
        raise ValueError(f"orders must be integers >= 2 (Theorem 9); got {orders!r}")
    return check_steps(steps) * _rdp_per_step(sample_size / n, check_sigma(z, "z"), tuple(map(float, orders)))


def epsilon_sampled_gaussian_wor_rdp(n: int, sample_size: int, z: float, steps: int, delta: float) -> float:
    """(ε, δ)-DP ε of :func:`rdp_sampled_gaussian_wor` (improved conversion), replace-one."""
    rdp = rdp_sampled_gaussian_wor(n, sample_size, z, steps)
    return rdp_to_epsilon(rdp, WOR_ORDERS, check_delta(delta))[0]


def noise_multiplier_uniform_replace_one(epsilon: float, delta: float, n: int, steps: int,
                                         sample_size: int = 1) -> float:
    """Smallest σ (noise std over the clip C) such that ``steps`` steps, each adding
    N(0, (σC)²I) to the clipped sum of ``sample_size`` rows drawn uniformly without replacement,
    are (ε, δ)-DP under replace-one (sensitivity 2C: z = σ/2) by Theorem 9; to relative
    precision 10⁻⁶, always on the private side."""
    target = check_epsilon(epsilon)
    return smallest_noise(lambda sigma: epsilon_sampled_gaussian_wor_rdp(n, sample_size, sigma / 2.0, steps, delta),
                          target, lo=-1.0, hi=1.0, step=1.0, xtol=1e-6, max_noise=1e6, min_noise=1e-6)
