"""The audit's controls that are not mutants of one registered algorithm's calibration: the
selection mechanisms on their own (noisy max and the Gumbel selection, each correct beside its
broken counterpart) and fixed-size batches accounted as Poisson sampling. Each correct mechanism
must pass the case its broken counterpart must be caught on (:mod:`dperm.audit` runs them).

The Gumbel selection (DP-AGD's ``selection: gumbel``, docs/privacy.md#bounded-range-selection) is
audited twice: inside DP-AGD by DP-AGD's own cases, and alone, as here. Inside DP-AGD a
selection run at twice its ε cannot be caught: the claim (ε, δ) is converted to ρ by Bun &
Steinke's bound, and a selection using all of ρ is √(8ρ) ≈ 0.41ε-bounded-range at ε = 1, δ = 10⁻⁵, so
even twice that stays below ε. Alone, the selection's claim is its own pure ε (ε-bounded range
implies ε-DP), which the mutants exceed twofold.
"""

from __future__ import annotations

import math

import numpy as np

from .algorithms.audit_cases import AuditCase, displaced_row_audit


def _dp_sgd_fixed_batches(problem, privacy, rng, draws=1, **hyper):
    """DP-SGD whose batches are b rows without replacement (SGD-MA-reference's sampler), its σ
    calibrated for (ε, δ) as if they were Poisson samples at rate b/n."""
    from .algorithms import get_algorithm
    from .privacy import noise_multiplier_for_epsilon

    full = get_algorithm("dp-sgd").hyper(hyper)
    b = int(full["batch_size"])
    q = b / problem.n_public
    steps = max(1, math.ceil(full["epochs"] / q))
    sigma = noise_multiplier_for_epsilon(privacy.epsilon, privacy.delta, q, steps)
    result = get_algorithm("sgd-ma-reference").fit(problem, privacy, rng, draws, steps=steps, noise_multiplier=sigma,
                                                   batch_size=b, clip=full["clip"],
                                                   learning_rate=full["learning_rate"])
    result.epsilon_spent = privacy.epsilon  # what the mutant claims
    result.accounting = "RDP of the Poisson-subsampled Gaussian (wrong: the batches are fixed-size)"
    return result


def _selection(monotone: bool, noise: str = "exponential", factor: float = 1.0):
    """A two-candidate noisy max over column sums of the data, with scale Δ/ε when ``monotone``
    (valid only if every score moves the same way) and 2Δ/ε otherwise; it releases the one-hot
    vector of its choice. With Gumbel noise it is the exponential mechanism, charged ρ = ε²/8
    (ε-bounded range) and run at ε_sel = ``factor``·√(8ρ) (``factor`` 2: the mutant)."""
    from .algorithms.base import FitResult
    from .privacy import bounded_range_epsilon_for_zcdp, report_noisy_max, zcdp_of_bounded_range

    def fit(problem, privacy, rng, draws=1):
        scores = np.tile(problem.X.sum(axis=0), (draws, 1))
        eps = privacy.epsilon
        if noise == "gumbel":
            eps = factor * bounded_range_epsilon_for_zcdp(zcdp_of_bounded_range(eps))
        k = report_noisy_max(scores, sensitivity=1.0, epsilon=eps, rng=rng, monotone=monotone, noise=noise)
        weights = np.zeros((draws, problem.p))
        weights[np.arange(draws), k] = 1.0
        accounting = ("one noisy max, pure epsilon" if noise != "gumbel" else
                      "one exponential mechanism (Gumbel noise), epsilon-bounded range => epsilon-DP, epsilon^2/8-zCDP")
        return FitResult(weights=weights, epsilon_spent=privacy.epsilon, delta_spent=0.0, adjacency="add-remove",
                         accounting=accounting)

    return fit


def _selection_cases() -> list[AuditCase]:
    """D: rows of zeros; D′ adds (1, −1): the first score rises as the second falls."""
    from .algorithms.base import Privacy
    from .losses import Logistic
    from .problem import Problem

    X = np.zeros((20, 2))
    d, d_prime = Problem(X, np.zeros(20), Logistic()), Problem(np.vstack([X, [1.0, -1.0]]), np.zeros(21), Logistic())
    return [AuditCase("scores moving in opposite directions", d, d_prime, Privacy(1.0, 0.0), {},
                      statistic=lambda W: W[:, 1], runs=20_000)]


def _monotone_selection_cases() -> list[AuditCase]:
    """D: rows of zeros and one (1, 0); D′ adds (0, 1): the second score rises to tie the first
    (monotone, Δ = 1). At scale 1/ε the second candidate's probability moves from σ(−ε) to ½."""
    from .algorithms.base import Privacy
    from .losses import Logistic
    from .problem import Problem

    X = np.vstack([np.zeros((19, 2)), [1.0, 0.0]])
    d, d_prime = Problem(X, np.zeros(20), Logistic()), Problem(np.vstack([X, [0.0, 1.0]]), np.zeros(21), Logistic())
    return [AuditCase("one score rises to a tie (monotone)", d, d_prime, Privacy(1.0, 0.0), {},
                      statistic=lambda W: W[:, 1], runs=20_000)]


def _displaced_row_cases():
    return displaced_row_audit(hyper={"epochs": 0.5, "batch_size": 20, "clip": 0.5, "learning_rate": 1.0})()


def control_subjects(Subject) -> list:
    """The controls, each beside the correct mechanism it breaks (which must pass the same cases);
    ``Subject`` is :class:`dperm.audit.Subject` (passed in: this module sits below it)."""
    from .algorithms import get_algorithm

    dp_sgd = get_algorithm("dp-sgd")
    return [
        Subject("dp-sgd (audit case: displaced row)", "algorithm", True, dp_sgd.fit, _displaced_row_cases,
                description="the correct DP-SGD (Poisson sampling) on the mutant's case", algorithms=("dp-sgd",)),
        Subject("mutant: fixed-size batches accounted as Poisson", "mutant", False, _dp_sgd_fixed_batches,
                _displaced_row_cases, description="b rows without replacement, sigma from the Poisson RDP",
                algorithms=("dp-sgd", "sgd-ma-reference")),
        Subject("noisy max, scale for general scores", "algorithm", True, _selection(monotone=False),
                _selection_cases, description="the correct selection on the mutant's case"),
        Subject("mutant: noisy max assuming monotone scores", "mutant", False, _selection(monotone=True),
                _selection_cases, description="scale Delta/epsilon on scores that move in opposite directions"),
        Subject("Gumbel selection, monotone scale", "algorithm", True, _selection(True, "gumbel"),
                _monotone_selection_cases, description="the exponential mechanism DP-AGD's selection: gumbel runs, "
                "epsilon-bounded range on monotone scores, charged epsilon^2/8"),
        Subject("mutant: Gumbel selection at twice its epsilon", "mutant", False, _selection(True, "gumbel", 2.0),
                _monotone_selection_cases, description="charged rho = epsilon^2/8 but run at sqrt(32 rho) = 2 epsilon"),
        Subject("Gumbel selection, general scale", "algorithm", True, _selection(False, "gumbel"), _selection_cases,
                description="the exponential mechanism with scale 2 Delta/epsilon (DP-AGD on fixed-size batches)"),
        Subject("mutant: Gumbel selection assuming monotone scores", "mutant", False, _selection(True, "gumbel"),
                _selection_cases, description="scale Delta/epsilon on scores that move in opposite directions "
                "(DP-AGD on fixed-size batches with the full-batch scale)"),
    ]
