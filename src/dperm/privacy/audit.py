"""Statistical privacy audits: empirical lower bounds on ε from runs on neighbouring inputs.

If M is (ε, δ)-DP then for every event S and neighbours D, D' (in both orders)
P[M(D) ∈ S] ≤ e^ε P[M(D') ∈ S] + δ, hence ε ≥ ln((P[M(D) ∈ S] − δ) / P[M(D') ∈ S]).
Replacing the probabilities by Clopper–Pearson bounds (the lower bound in the numerator, the
upper in the denominator) gives an ε lower bound that holds with the stated confidence
(Jagielski, Ullman & Oprea 2020; Nasr et al. 2021; Ding et al. 2018 for the hypothesis-testing
view). A bound above the claimed ε is statistical evidence that the mechanism, as run, is not
ε-DP; a bound below it proves nothing but shows the test did not catch a violation.

Multiple events are corrected by Bonferroni, so the reported bound holds simultaneously. Use a
fixed, data-independent event list (or a known finite ``support``) for a valid bound.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from .validation import check_confidence, check_delta

__all__ = ["AuditResult", "clopper_pearson", "epsilon_lower_bound", "audit_outputs", "runs_to_exceed"]


@dataclass(frozen=True)
class AuditResult:
    """Outcome of an audit: ε lower bound (>= 0) holding with probability >= ``confidence``.

    ``event`` identifies the best event (index into the event list, or the output value),
    ``direction`` is "D>D'" if P(S | D) was the larger one; the counts are those of that event.
    """

    epsilon_lower: float
    confidence: float
    delta: float
    event: object
    direction: str
    count_d: int
    n_d: int
    count_dprime: int
    n_dprime: int


def _count(value, name: str, upper: int | None = None) -> int:
    if (isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating))
            or not math.isfinite(value) or int(value) != value or value < 0):
        raise ValueError(f"{name} must be a non-negative integer; got {name}={value!r}")
    if upper is not None and value > upper:
        raise ValueError(f"{name} must be <= {upper}; got {name}={value!r}")
    return int(value)


def clopper_pearson(count, n, confidence=0.95) -> tuple[float, float]:
    """Exact two-sided Clopper–Pearson interval for a binomial proportion (count successes in n)."""
    from scipy.stats import beta  # here: scipy.stats costs ~0.5 s to import (every pipeline job)

    n = _count(n, "n")
    if n == 0:
        raise ValueError("n must be a positive integer; got n=0")
    k = _count(count, "count", n)
    tail = (1.0 - check_confidence(confidence)) / 2.0
    lo = 0.0 if k == 0 else float(beta.ppf(tail, k, n - k + 1))
    hi = 1.0 if k == n else float(beta.ppf(1.0 - tail, k + 1, n - k))
    return lo, hi


def _log_ratio(num_lo: float, den_hi: float, delta: float) -> float:
    top = num_lo - delta
    if top <= 0.0:
        return 0.0
    return math.inf if den_hi <= 0.0 else max(0.0, math.log(top / den_hi))


def _bound_one_event(k_d, n_d, k_p, n_p, delta, confidence):
    """Best ε bound for one event S: S and its complement, both directions. The two intervals
    hold jointly with probability >= ``confidence`` (each at 1 − (1 − c)/2)."""
    per = 1.0 - (1.0 - confidence) / 2.0
    lo_d, hi_d = clopper_pearson(k_d, n_d, per)
    lo_p, hi_p = clopper_pearson(k_p, n_p, per)
    candidates = [
        (_log_ratio(lo_d, hi_p, delta), "D>D'"),                  # S, D over D'
        (_log_ratio(lo_p, hi_d, delta), "D'>D"),                  # S, D' over D
        (_log_ratio(1.0 - hi_d, 1.0 - lo_p, delta), "D>D' (complement)"),
        (_log_ratio(1.0 - hi_p, 1.0 - lo_d, delta), "D'>D (complement)"),
    ]
    return max(candidates, key=lambda c: c[0])


def epsilon_lower_bound(count_d, n_d, count_dprime, n_dprime, *, delta=0.0,
                        confidence=0.95, n_events: int = 1, event: object = None) -> AuditResult:
    """ε lower bound from one event's counts: ``count_d`` of ``n_d`` runs on D and
    ``count_dprime`` of ``n_dprime`` runs on D' fell in S. ``n_events`` > 1 applies the Bonferroni
    correction for an event chosen among that many. ``delta`` is the claimed δ (0 for pure DP).
    """
    conf = check_confidence(confidence)
    d = check_delta(delta, allow_zero=True)
    if int(n_events) != n_events or n_events < 1:
        raise ValueError(f"n_events must be a positive integer; got n_events={n_events!r}")
    nd, npr = _count(n_d, "n_d"), _count(n_dprime, "n_dprime")
    if nd == 0 or npr == 0:
        raise ValueError(f"n_d and n_dprime must be positive; got n_d={nd}, n_dprime={npr}")
    kd, kp = _count(count_d, "count_d", nd), _count(count_dprime, "count_dprime", npr)
    eps, direction = _bound_one_event(kd, nd, kp, npr, d, 1.0 - (1.0 - conf) / n_events)
    return AuditResult(eps, conf, d, event, direction, kd, nd, kp, npr)


def audit_outputs(outputs_d, outputs_dprime, *, events: Callable | Sequence[Callable] | None = None,
                  support=None, delta=0.0, confidence=0.95) -> AuditResult:
    """ε lower bound from raw outputs of a mechanism run on D and on D' (first axis = runs).

    Events are either ``events`` — a callable, or a sequence of callables, mapping the output
    array to a boolean array with one entry per run (e.g. ``lambda y: y[:, 0] > 1.3``) — or, for
    discrete outputs, each value in ``support`` (default: the values observed in either sample;
    pass the mechanism's known support for a strictly valid Bonferroni correction). Returns the
    best bound over all events, Bonferroni-corrected for their number.
    """
    out_d, out_p = np.asarray(outputs_d), np.asarray(outputs_dprime)
    if out_d.ndim == 0 or out_p.ndim == 0 or len(out_d) == 0 or len(out_p) == 0:
        raise ValueError("outputs_d and outputs_dprime must be non-empty arrays (runs along axis 0)")
    if events is not None and support is not None:
        raise ValueError("give either events or support, not both")
    if events is None:
        if out_d.ndim != 1 or out_p.ndim != 1:
            raise ValueError("support-based audits need 1-d discrete outputs; pass events otherwise")
        values = np.union1d(out_d, out_p) if support is None else np.asarray(support)
        tests = [(v, (lambda y, v=v: y == v)) for v in values]
    else:
        fns = [events] if callable(events) else list(events)
        tests = list(enumerate(fns))
    if not tests:
        raise ValueError("no events to test")
    best = None
    for label, fn in tests:
        hit_d, hit_p = np.asarray(fn(out_d), bool), np.asarray(fn(out_p), bool)
        if hit_d.shape != (len(out_d),) or hit_p.shape != (len(out_p),):
            raise ValueError(f"event {label!r} must return one boolean per run")
        res = epsilon_lower_bound(int(hit_d.sum()), len(out_d), int(hit_p.sum()), len(out_p),
                                  delta=delta, confidence=confidence, n_events=len(tests),
                                  event=label)
        if best is None or res.epsilon_lower > best.epsilon_lower:
            best = res
    return best


def runs_to_exceed(result: AuditResult, claim: float, runs: int, confidence: float = 0.95,
                   limit: int = 10**10) -> float:
    """About how many runs per side (half to choose the event, half to bound it) would take the
    bound of ``result``'s event past ``claim``, were its frequencies on the test half the true
    ones: the smallest ``runs``·2^k whose expected counts give ε_LB > ``claim``. ``inf`` when the
    observed frequencies do not exceed the claim by more than their standard error (then there
    is no evidence that any number of runs would, for this event) or when more than ``limit``
    would be needed. An extrapolation, for the audit
    table's "runs needed" column, not a bound."""
    f_d, f_p = result.count_d / result.n_d, result.count_dprime / result.n_dprime
    num, den = {"D>D'": (f_d, f_p), "D'>D": (f_p, f_d), "D>D' (complement)": (1 - f_d, 1 - f_p),
                "D'>D (complement)": (1 - f_p, 1 - f_d)}[result.direction]
    if num - result.delta <= 0:
        return math.inf
    if den > 0:
        # the observed log-ratio less one standard error (delta method) must pass the claim: an
        # excess within the sampling noise is no evidence that more runs would ever do it
        k_num, k_den = num * result.n_d, den * result.n_dprime
        spread = math.sqrt(1.0 / max(k_num, 1.0) + 1.0 / max(k_den, 1.0))
        if math.log((num - result.delta) / den) - spread <= claim:
            return math.inf
    n = max(int(runs), 2)
    while n <= limit:
        half = n // 2
        res = epsilon_lower_bound(int(round(f_d * half)), half, int(round(f_p * half)), half,
                                  delta=result.delta, confidence=confidence)
        if res.epsilon_lower > claim:
            return float(n)
        n *= 2
    return math.inf
