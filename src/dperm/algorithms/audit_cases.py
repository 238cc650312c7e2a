"""The audit hook every private algorithm offers: neighbouring datasets on which its release shows
the differing row as plainly as it can, the claim to test, and a statistic of the released
weights that tells the two apart (the black-box audit, :mod:`dperm.audit`, runs it); and the
mutants the audit must catch (:class:`Mutant`).

An algorithm registers ``audit=`` a callable returning a list of :class:`AuditCase`; a
reference variant takes its base's unless it registers its own. Most algorithms use
:func:`canary_audit`: every row of D is the zero vector except on the coordinates a loss needs
(so no row moves the weights along the last coordinate c), and D′ adds, or swaps in, one canary
row with its whole norm on c; the statistic is the released w_c. Under add/remove D′ = D ∪
{canary}; under replace-one D′ is D with its last row replaced by the canary. Algorithms whose
leak needs another construction (DP-AGD's NoisyMin, a fixed-size sampler displacing a row) build
their own cases.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

ADJACENCIES = ("add-remove", "replace-one")


@dataclass(frozen=True)
class AuditCase:
    """One audit of one algorithm: ``runs`` releases on D and on D′ at ``privacy`` with
    ``hyper``; ``statistic`` maps released weights (runs, p) to one score per run, larger
    where D′'s differing row shows. ``name`` says what the case shows.

    Optional, for what the audit reports beside the bound:

    * ``shift(result)``: the ℓ2 shift of the noiseless release between neighbours that the
      calibration allows (the sensitivity the noise is sized for, in weight space), read from a
      release on D; the audit divides the shift it measures (noiseless runs) by it.
    * ``white_box``: ``statistic(W, centers)`` also receives the noiseless releases' means
      (c_D, c_D′), measured by the audit before the runs (:func:`projection_statistic`).
    * ``draws_per_call``: releases per call of the algorithm (1: each run its own call and
      seed, for algorithms whose draws share a random solve, so the runs are independent).
    * ``rebuild(adjacency)``: the same case on neighbours of the other relation (the audit's
      wrong-adjacency mutant).
    * ``for_mutants``: False for a case that audits something a calibration mutant cannot
      change (a stochastic solver's failure probability): the mutants skip it.
    """

    name: str
    d: Any  # dperm.problem.Problem
    d_prime: Any
    privacy: Any  # dperm.algorithms.base.Privacy: the claim under test
    hyper: Mapping[str, Any] = field(default_factory=dict)
    statistic: Callable[..., np.ndarray] = None
    runs: int = 2000
    shift: Callable[[Any], float] | None = None
    white_box: bool = False
    draws_per_call: int | None = None
    rebuild: Callable[[str], AuditCase] | None = None
    for_mutants: bool = True


@dataclass(frozen=True)
class Mutant:
    """A deliberately broken version of a registered algorithm that the audit must catch.

    ``noise`` and ``sensitivity`` are factors the audit injects into the privacy core around the
    algorithm's own fit (:mod:`dperm.privacy.calibration_faults`); ``fit`` replaces the fit (an
    error outside the calibration: a filter that never drops a row); ``cases`` replace the
    algorithm's cases (a wrong adjacency: its cases on the other neighbour relation). ``factor``
    is how far off the calibration is (2 for the factor-2 mutants; None for other kinds). The
    audit generates "half noise" and "sensitivity halved" for every algorithm it audits; an
    algorithm declares further ones with ``register(..., mutants=...)``."""

    name: str
    description: str
    noise: float = 1.0
    sensitivity: float = 1.0
    fit: Callable | None = None
    cases: Callable[[], list[AuditCase]] | None = None
    factor: float | None = None


#: a factor-4 mutant, declared by the algorithms whose cases cannot realise more than half of the
#: calibrated sensitivity (their factor-2 mutants are then within the claim): it shows what the
#: case does catch
SENSITIVITY_QUARTERED = Mutant("sensitivity quartered", "every calibrated sensitivity divided by 4 "
                               "(calibration_faults: sensitivity 0.25)", sensitivity=0.25, factor=4.0)


def with_switches(name: str, **switches) -> Callable:
    """The fit of registered algorithm ``name`` with some of its registration's switches turned
    (for a mutant declared beside the algorithm: ``fit=with_switches("dp-gd-filter", drops=False)``)."""

    def fit(problem, privacy, rng, draws=1, **hyper):
        from .registry import get_algorithm

        spec = get_algorithm(name)
        unknown = sorted(set(switches) - set(spec.switches))
        if unknown:
            raise TypeError(f"{unknown} are not switches of {name!r}: {sorted(spec.switches)}")
        return spec.impl(problem, privacy, rng, draws, **spec.hyper(hyper), **{**spec.switches, **switches})

    return fit


def projection_statistic(W, centers) -> np.ndarray:
    """(W − m)·u with u the unit vector from the noiseless release on D to the one on D′ and m
    their midpoint: the likelihood-ratio statistic of isotropic Gaussian noise (white box)."""
    c_d, c_p = (np.asarray(c, dtype=float) for c in centers)
    gap = c_p - c_d
    norm = float(np.linalg.norm(gap))
    u = gap / norm if norm > 0 else np.eye(gap.size)[-1]
    return (np.asarray(W, dtype=float) - 0.5 * (c_d + c_p)) @ u


def l2_laplace_statistic(W, centers) -> np.ndarray:
    """‖W − c_D‖ − ‖W − c_D′‖: the log-likelihood ratio of ℓ2-Laplace noise over ε/Δ (white box)."""
    W = np.asarray(W, dtype=float)
    c_d, c_p = (np.asarray(c, dtype=float) for c in centers)
    return np.linalg.norm(W - c_d, axis=1) - np.linalg.norm(W - c_p, axis=1)


def canary_problems(adjacency: str, *, n: int = 50, p: int = 3, norm: float = 1.0, loss=None, l2: float = 0.0,
                    background: float = 0.0, canary_label: float | None = None):
    """(D, D′, c): D has ``n`` rows, zero on every coordinate but the first (set to
    ``background``, a public constant: a bias-like column), labels alternating 0/1 (±1 for
    ±1-label losses, 0 for regression); D′ adds (add/remove) or swaps in for D's last row
    (replace-one) the canary ``norm·e_c``, c = p − 1, with the positive label (or
    ``canary_label``), whose loss decreases as w_c grows."""
    from ..losses import Logistic
    from ..problem import Problem

    if adjacency not in ADJACENCIES:
        raise ValueError(f"adjacency must be one of {ADJACENCIES}; got {adjacency!r}")
    loss = Logistic() if loss is None else loss
    X = np.zeros((n, p))
    X[:, 0] = background
    positive, negative = (1.0, -1.0) if loss.labels == "pm1" else (1.0, 0.0)
    y = np.zeros(n) if loss.labels == "real" else np.where(np.arange(n) % 2 == 0, negative, positive)
    positive = positive if canary_label is None else float(canary_label)
    canary = np.zeros(p)
    canary[-1] = norm
    if adjacency == "add-remove":
        X2, y2 = np.vstack([X, canary]), np.append(y, positive)
    else:
        X2, y2 = X.copy(), y.copy()
        X2[-1], y2[-1] = canary, positive
    # neighbours share the public row count (docs/privacy.md#public-n): D's
    return Problem(X, y, loss, l2, public_n=n), Problem(X2, y2, loss, l2, public_n=n), p - 1


def canary_audit(adjacency: str, *, epsilon: float = 1.0, delta: float = 1e-5, hyper=None, runs: int = 2000,
                 name: str = "canary on an unused coordinate", **problem) -> Callable[[], list[AuditCase]]:
    """The hook of an algorithm audited with one canary case (:func:`canary_problems`, whose
    keywords ``problem`` passes on), claim (``epsilon``, ``delta``), statistic w_c."""

    def build(adjacency: str) -> AuditCase:
        from .base import Privacy

        d, d_prime, c = canary_problems(adjacency, **problem)
        return AuditCase(name=name, d=d, d_prime=d_prime, privacy=Privacy(epsilon, delta), hyper=dict(hyper or {}),
                         statistic=lambda W, c=c: np.asarray(W)[:, c], runs=runs, rebuild=build)

    def cases() -> list[AuditCase]:
        return [build(adjacency)]

    return cases


def displaced_row_audit(*, epsilon: float = 2.0, delta: float = 1e-5, hyper=None, runs: int = 100_000,
                        n: int = 40) -> Callable[[], list[AuditCase]]:
    """A fixed-size batch displaces a row when the canary joins it (add/remove): every row of D
    pushes w_c down (x = −e_c, label 1, gradient norm ½), the canary pushes it up, so a batch
    sum moves by twice the clip, not the once a Poisson analysis assumes. ``hyper`` sets the
    algorithm's batch (e.g. half the rows) and steps."""

    def cases() -> list[AuditCase]:
        from ..losses import Logistic
        from ..problem import Problem
        from .base import Privacy

        X = np.zeros((n, 2))
        X[:, 1] = -1.0
        y = np.ones(n)
        d = Problem(X, y, Logistic(), public_n=n)
        d_prime = Problem(np.vstack([X, [0.0, 1.0]]), np.append(y, 1.0), Logistic(), public_n=n)
        return [AuditCase("a fixed-size batch displaces a row", d, d_prime, Privacy(epsilon, delta),
                          dict(hyper or {}), statistic=lambda W: np.asarray(W)[:, 1], runs=runs)]

    return cases


def single_selection_audit(released: float, *, runs: int = 6000, hyper=None,
                           name: str = "one NoisyMin decides the release") -> Callable[[], list[AuditCase]]:
    """DP-AGD neighbours on which one NoisyMin decides the release (docs/privacy.md#noisymin-sign).

    p = 1, public start w₀ = 1.97, grid Φ = 0, 0.1, …, 2; D: four rows x = 0 (loss log 2 at every
    w: all 21 scores tie, d = sign(noise)); D′ adds (x = 1000, y = 1), whose clipped loss is C_obj
    at w₀ − Φ_20 and about 0 elsewhere when d = +1. ε = 1, δ = 1e-5, splits = 3 pay for exactly
    one NoisyMin. The statistic is the indicator that the release is ``released`` (the weight
    reached through candidate 20 with d = +1: −0.03 with the paper's rule, 0.07 with the code's
    w_{k*−1}). ``hyper`` adds settings (e.g. DP-AGD's ``selection``)."""

    def cases() -> list[AuditCase]:
        from ..losses import Logistic
        from ..problem import Problem
        from .base import Privacy

        X, y = np.zeros((4, 1)), np.array([0.0, 1.0, 0.0, 1.0])
        d = Problem(X, y, Logistic(), public_n=4)
        d_prime = Problem(np.vstack([X, [[1000.0]]]), np.append(y, 1.0), Logistic(), public_n=4)
        return [AuditCase(name, d, d_prime, Privacy(1.0, 1e-5), {"splits": 3, "init": [1.97], **dict(hyper or {})},
                          statistic=lambda W: (np.abs(np.asarray(W)[:, 0] - released) < 1e-9).astype(float),
                          runs=runs)]

    return cases
