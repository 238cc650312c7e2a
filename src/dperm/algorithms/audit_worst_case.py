"""Worst-case neighbours for the audit: datasets on which the differing row moves a release by
(nearly) the full sensitivity its noise is calibrated to, and white-box cases that read the
release with the likelihood-ratio statistic of its noise.

**The opposed rows** (:func:`opposed_rows`). Every row but the differing one is the zero vector,
whose gradient is 0 at every w (so nothing but the differing row and the noise moves w). The
differing row's gradient is the same full-norm vector g at every w near 0 — on D′ it pushes w_c
up (−g), on D down (+g) under replace-one; under add/remove D lacks the row. So the gradient
difference between neighbours is 2L (replace-one) or L (add/remove), the bound every gradient
method's and every output perturbation's sensitivity is built on, at every iterate a run visits
("saturated"). Three losses do it:

* ``huber-hinge`` (labels ±1): x = R·e_c; in the hinge's linear zone (margin < 1 − h) the
  gradient is −y·x, norm L = R; the zone holds while |w_c|·R < 1 − h;
* ``huber`` (regression): x = ±R·e_c with target y: the residual stays below −δ_H while
  |w_c|·R < y − δ_H, so the gradient is −δ_H·(±R e_c), norm L = δ_H·R (a huge target keeps it
  saturated everywhere; for algorithms that clip targets to [0, 1], δ_H < 1 and y = 1);
* ``logistic`` (labels 0/1): x = R·e_c with the label flipped. φ'(z, 1) − φ'(z, 0) = −1 at every
  z, so the difference is R = L, half of 2L: no pair of logistic rows does better along one
  direction, which caps what any logistic case can show (the docs say where).

For output perturbation of a μ-strongly convex ERM (minimiser or GD), the minimisers then move by
2L/(μn) exactly (Δ_F of Lowy & Razaviyayn's Prop. 2.2); for T steps of gradient descent on the
mean, w_c moves by Tη·2L/n; for one full-batch step of a clipped sum with clip C ≤ L, by ηC/n
(add/remove) or 2ηC/n.

**White box.** The audit measures the noiseless releases on D and D′ first (noise factor 0,
:mod:`dperm.privacy.calibration_faults`) and reads each release through
:func:`.audit_cases.projection_statistic` (isotropic Gaussian noise: the likelihood ratio is
monotone in it) or :func:`.audit_cases.l2_laplace_statistic` (ℓ2-Laplace noise). On one
coordinate both are the coordinate itself. This is the audit of Nasr et al. 2021 (their
"white-box" adversary with a crafted input) with the noise law known; it sees a Gaussian
mechanism's calibration as closely as the runs allow.
"""

from __future__ import annotations

import numpy as np

from .audit_cases import ADJACENCIES, AuditCase, projection_statistic

LOSSES = ("huber-hinge", "huber", "logistic")
#: the clipped-gradient methods' differing row: Huber regression, x = ±10·e_c with target 1000 and
#: δ_H = 1, so its gradient (norm 10) is clipped to exactly C ≤ 1 at every w with |w_c| < 99.9
PUSH_AT_CLIP = {"loss": "huber", "norm": 10.0, "target": 1000.0, "huber_delta": 1.0}
#: the output perturbations' differing row: the Huberised hinge's linear zone, L = R = 1
PUSH_HINGE = {"loss": "huber-hinge", "hinge_h": 0.5}


def _loss(kind: str, huber_delta: float, hinge_h: float):
    from ..losses import Huber, HuberHinge, Logistic

    if kind not in LOSSES:
        raise ValueError(f"loss must be one of {LOSSES}; got {kind!r}")
    return {"huber-hinge": lambda: HuberHinge(h=hinge_h), "huber": lambda: Huber(huber_delta),
            "logistic": lambda: Logistic()}[kind]()


def opposed_rows(adjacency: str, *, n: int = 50, p: int = 1, loss: str = "huber-hinge", norm: float = 1.0,
                 target: float = 1.0, huber_delta: float = 0.1, hinge_h: float = 0.5, l2: float = 0.0,
                 background=None):
    """(D, D′, c) of the module docstring: ``n`` rows (D), the differing row on coordinate
    c = p − 1 with norm ``norm``; replace-one swaps D's last row (the row pushing w_c down) for
    D′'s (pushing it up); add/remove gives D zero rows only and D′ one more. Both share the
    public row count n. ``background`` = (X, y) replaces the zero rows (a case that needs w ≠ 0)."""
    from ..problem import Problem

    if adjacency not in ADJACENCIES:
        raise ValueError(f"adjacency must be one of {ADJACENCIES}; got {adjacency!r}")
    model = _loss(loss, huber_delta, hinge_h)
    X = np.zeros((n, p))
    y = {"pm1": np.where(np.arange(n) % 2 == 0, -1.0, 1.0), "01": np.arange(n) % 2.0,
         "real": np.zeros(n)}[model.labels]
    if background is not None:
        X, y = (np.array(a, dtype=float) for a in background)
    up = np.zeros(p)
    up[-1] = norm
    if loss == "huber-hinge":
        rows = ((up, 1.0), (up, -1.0))
    elif loss == "huber":
        rows = ((up, float(target)), (-up, float(target)))
    else:
        rows = ((up, 1.0), (up, 0.0))
    (x_up, y_up), (x_down, y_down) = rows
    if adjacency == "add-remove":
        X2, y2 = np.vstack([X, x_up]), np.append(y, y_up)
    else:
        X, y = X.copy(), y.copy()
        X[-1], y[-1] = x_down, y_down
        X2, y2 = X.copy(), y.copy()
        X2[-1], y2[-1] = x_up, y_up
    return (Problem(X, y, model, l2, public_n=n), Problem(X2, y2, model, l2, public_n=n), p - 1)


def white_box_audit(name: str, adjacency: str, *, epsilon: float = 1.0, delta: float = 1e-5, hyper=None,
                    runs: int = 100_000, shift=None, statistic=projection_statistic, draws_per_call=None,
                    **problem):
    """The hook of one white-box case on :func:`opposed_rows` (keywords ``problem``), claim
    (``epsilon``, ``delta``). ``shift``: the shift the calibration allows, a number (for a
    replace-one pair; halved under add/remove, where one row is missing instead of opposed) or
    a function of a release on D (e.g. its recorded sensitivity). The case can be rebuilt on the
    other adjacency (the audit's wrong-adjacency mutant)."""

    def build(adj: str) -> AuditCase:
        from .base import Privacy

        d, d_prime, _ = opposed_rows(adj, **problem)
        allowed = shift
        if shift is not None and not callable(shift):
            value = float(shift) if adj == "replace-one" else 0.5 * float(shift)
            allowed = lambda result, v=value: v  # noqa: E731
        return AuditCase(name=name, d=d, d_prime=d_prime, privacy=Privacy(epsilon, delta), hyper=dict(hyper or {}),
                         statistic=statistic, runs=runs, shift=allowed, white_box=True,
                         draws_per_call=draws_per_call, rebuild=build)

    return lambda: [build(adjacency)]


def recorded_sensitivity(result) -> float:
    """The ℓ2 sensitivity a release records (output perturbation: ``extra["sensitivity"]``)."""
    return float(result.extra["sensitivity"])


def cases(*hooks):
    """One hook running several: ``audit=cases(hook_a, hook_b)``."""
    return lambda: [case for hook in hooks for case in hook()]
