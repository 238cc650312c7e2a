"""The audit hook every private algorithm offers: neighbouring datasets on which its release shows
the differing row as plainly as it can, the claim to test, and a statistic of the released
weights that tells the two apart (the black-box audit, :mod:`dperm.audit`, runs it).

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
    where D′'s differing row shows. ``name`` says what the case shows."""

    name: str
    d: Any  # dperm.problem.Problem
    d_prime: Any
    privacy: Any  # dperm.algorithms.base.Privacy: the claim under test
    hyper: Mapping[str, Any] = field(default_factory=dict)
    statistic: Callable[[np.ndarray], np.ndarray] = None
    runs: int = 2000


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

    def cases() -> list[AuditCase]:
        from .base import Privacy

        d, d_prime, c = canary_problems(adjacency, **problem)
        return [AuditCase(name=name, d=d, d_prime=d_prime, privacy=Privacy(epsilon, delta), hyper=dict(hyper or {}),
                          statistic=lambda W, c=c: np.asarray(W)[:, c], runs=runs)]

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
