"""Claims judged with their uncertainty: the predicates every paper's claims check uses, so no
plugin writes its own rule, every verdict states the test it used, and every rule can come out
either way.

A claim's verdict is one of:

* ``supported`` — the measurement supports it at the stated test;
* ``not supported`` — the measurement contradicts it at the stated test;
* ``inconclusive`` — the measurement cannot decide: the interval straddles the boundary, too few
  fits, or (the learning guard, :mod:`.guard`) a cell the verdict rests on does not learn —
  "inconclusive: <which> does not learn at <settings>";
* ``not tested`` — the claim is outside what the project measures (said why).

Every predicate takes :class:`Estimate` values (a mean with its interval, its standard deviation
and sample size, and the guard's verdict on the cell it comes from; :func:`estimate` reads one
from a summary row) and returns a :class:`Verdict` (verdict, the test in words, the numbers).
Intervals are 95% t-intervals; a difference of two cells uses Welch's interval, a paired
difference the t-interval of the per-fit differences.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .guard import NO, settings_text
from .stats import Interval, t_interval, t_quantile

SUPPORTED, NOT_SUPPORTED, INCONCLUSIVE, NOT_TESTED = "supported", "not supported", "inconclusive", "not tested"
VERDICTS = (SUPPORTED, NOT_SUPPORTED, INCONCLUSIVE, NOT_TESTED)
#: a claims table's columns: the claim, whose claim it is (the paper's or ours), where it is
#: judged, the verdict, the test that decided it and the numbers
COLUMNS = ["claim", "source", "scope", "verdict", "test", "reason"]


@dataclass(frozen=True)
class Estimate:
    """A cell's mean with its 95% half-width, standard deviation and sample size; ``name`` says
    which cell it is in a verdict's reason, ``learns`` is the guard's verdict on it."""

    name: str
    mean: float
    half: float = math.nan
    n: int = 0
    std: float = math.nan
    learns: str = "n/a"

    @property
    def low(self) -> float:
        return self.mean - self.half

    @property
    def high(self) -> float:
        return self.mean + self.half

    def text(self, digits: int = 4) -> str:
        if not math.isfinite(self.mean):
            return f"{self.name}: no value"
        half = f" ± {self.half:.2g}" if math.isfinite(self.half) else ""
        return f"{self.name} {self.mean:.{digits}g}{half}" + (f" (n = {self.n})" if self.n else "")


@dataclass(frozen=True)
class Verdict:
    verdict: str
    test: str
    reason: str

    def __post_init__(self):
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict {self.verdict!r} is none of {VERDICTS}")


def estimate(row, metric: str = "accuracy", name: str | None = None) -> Estimate:
    """An :class:`Estimate` of ``metric`` from a summary row (``<metric>_mean``, ``_ci95``,
    ``_n``, ``_std`` and the guard's ``learns``); ``name`` defaults to the row's label and place."""
    get = row.get if hasattr(row, "get") else (lambda k, d=None: getattr(row, k, d))
    label = name or f"{get('label', get('algorithm', ''))} ({settings_text(row)})"
    n = get(f"{metric}_n", 0)
    return Estimate(label, float(get(f"{metric}_mean", math.nan)), float(get(f"{metric}_ci95", math.nan)),
                    int(n) if n == n else 0, float(get(f"{metric}_std", math.nan)), str(get("learns", "n/a")))


def of_values(name: str, values, learns: str = "n/a") -> Estimate:
    """An :class:`Estimate` of the mean of ``values`` (per-fit values)."""
    interval = t_interval(values)
    return Estimate(name, interval.mean, interval.half, interval.n, interval.std, learns)


def guard(*cells: Estimate, test: str = "") -> Verdict | None:
    """``inconclusive`` naming every cell that does not learn, or None when all learn."""
    stuck = [c.name for c in cells if c.learns == NO]
    if not stuck:
        return None
    return Verdict(INCONCLUSIVE, test or "learning guard",
                   f"{'; '.join(stuck)} {'does' if len(stuck) == 1 else 'do'} not learn (accuracy at the majority "
                   "rate, one class predicted)")


def difference(a: Estimate, b: Estimate, level: float = 0.95) -> Interval:
    """mean(a) − mean(b) with Welch's interval from the two cells' standard deviations and sizes."""
    if a.n < 2 or b.n < 2 or not (math.isfinite(a.std) and math.isfinite(b.std)):
        return Interval(a.mean - b.mean, math.nan, min(a.n, b.n))
    va, vb = a.std ** 2 / a.n, b.std ** 2 / b.n
    se = math.sqrt(va + vb)
    if se == 0:
        return Interval(a.mean - b.mean, 0.0, min(a.n, b.n), 0.0)
    df = (va + vb) ** 2 / (va ** 2 / (a.n - 1) + vb ** 2 / (b.n - 1))
    return Interval(a.mean - b.mean, t_quantile(df, level) * se, min(a.n, b.n), se)


def _decide(low: float, high: float, above: str, below: str, test: str, reason: str) -> Verdict:
    """``above`` when the whole interval is above 0, ``below`` when it is below, else inconclusive."""
    if not (math.isfinite(low) and math.isfinite(high)):
        return Verdict(INCONCLUSIVE, test, f"no interval (too few fits): {reason}")
    if low > 0:
        return Verdict(above, test, reason)
    if high < 0:
        return Verdict(below, test, reason)
    return Verdict(INCONCLUSIVE, test, f"the interval contains 0: {reason}")


def greater_than(a: Estimate, b: Estimate, margin: float = 0.0, *, guarded: Sequence[Estimate] = ()) -> Verdict:
    """The claim "a exceeds b by more than ``margin``": supported when Welch's 95% interval of
    a − b − margin lies above 0, not supported when it lies below, else inconclusive."""
    test = f"Welch 95% interval of the difference{f' minus {margin:g}' if margin else ''} above / below 0"
    stopped = guard(a, b, *guarded, test=test)
    if stopped:
        return stopped
    d = difference(a, b)
    reason = f"{a.text()} − {b.text()} = {d.mean:.4g} ± {d.half:.2g}"
    return _decide(d.low - margin, d.high - margin, SUPPORTED, NOT_SUPPORTED, test, reason)


def lower_than(a: Estimate, b: Estimate, margin: float = 0.0, *, guarded: Sequence[Estimate] = ()) -> Verdict:
    """The claim "a is lower than b (by more than ``margin``)": :func:`greater_than` mirrored."""
    test = f"Welch 95% interval of the difference{f' plus {margin:g}' if margin else ''} below / above 0"
    stopped = guard(a, b, *guarded, test=test)
    if stopped:
        return stopped
    d = difference(b, a)
    reason = f"{b.text()} − {a.text()} = {d.mean:.4g} ± {d.half:.2g}"
    return _decide(d.low - margin, d.high - margin, SUPPORTED, NOT_SUPPORTED, test, reason)


def competitive(a: Estimate, best: Estimate, margin: float, *, guarded: Sequence[Estimate] = ()) -> Verdict:
    """The claim "a is competitive with ``best``": a is not worse than best by more than
    ``margin`` — supported when Welch's 95% interval of a − best lies above −margin, not
    supported when it lies below, else inconclusive."""
    test = f"Welch 95% interval of the difference above / below −{margin:g}"
    stopped = guard(a, best, *guarded, test=test)
    if stopped:
        return stopped
    d = difference(a, best)
    reason = f"{a.text()} − {best.text()} = {d.mean:.4g} ± {d.half:.2g} (margin {margin:g})"
    return _decide(d.low + margin, d.high + margin, SUPPORTED, NOT_SUPPORTED, test, reason)


def _trend(curve: Sequence[Estimate], xs: Sequence[float], what: str, up: bool) -> Verdict:
    ends = f"value at the largest {what} − value at the smallest {what}" if up else \
        f"value at the smallest {what} − value at the largest {what}"
    test = f"Welch 95% interval of ({ends}) above / below 0"
    if len(curve) < 2:
        return Verdict(INCONCLUSIVE, test, "fewer than two points")
    stopped = guard(*curve, test=test)
    if stopped:
        return stopped
    order = np.argsort(np.asarray(xs, dtype=float))
    first, last = curve[order[0]], curve[order[-1]]
    d = difference(last, first) if up else difference(first, last)
    path = " → ".join(f"{curve[i].mean:.4g}" for i in order)
    reason = f"{path} ({what} {xs[order[0]]:g} → {xs[order[-1]]:g}): difference {d.mean:.4g} ± {d.half:.2g}"
    return _decide(d.low, d.high, SUPPORTED, NOT_SUPPORTED, test, reason)


def rises(curve: Sequence[Estimate], xs: Sequence[float], what: str = "ε") -> Verdict:
    """The claim "the metric rises with ``what``": the value at the largest x exceeds the value at
    the smallest x (Welch's 95% interval of the difference above 0: supported; below: not
    supported; else inconclusive); guarded on every point of the curve."""
    return _trend(curve, xs, what, up=True)


def falls(curve: Sequence[Estimate], xs: Sequence[float], what: str = "ε") -> Verdict:
    """The claim "the metric falls as ``what`` grows": :func:`rises` mirrored."""
    return _trend(curve, xs, what, up=False)


def _ratio_interval(a: Estimate, b: Estimate) -> tuple[float, float, float, float]:
    """(a/b, its 95% interval's low and high, the relative half-width in log) by the delta method
    from the two means' intervals (an exact value or an infinite half contributes none)."""
    ratio = a.mean / b.mean
    rel = math.hypot(*[c.half / c.mean if math.isfinite(c.half) else 0.0 for c in (a, b)])
    return ratio, ratio * math.exp(-rel), ratio * math.exp(rel), rel


def within_factor(a: Estimate, b: Estimate, factor: float, *, guarded: Sequence[Estimate] = ()) -> Verdict:
    """The claim "a is within a factor ``factor`` of b" (both positive): supported when the 95%
    interval of a/b (delta method from the two means' intervals) lies inside [1/factor, factor],
    not supported when it lies wholly outside, else inconclusive."""
    test = f"95% interval of the ratio (delta method) inside [1/{factor:g}, {factor:g}]"
    stopped = guard(a, b, *guarded, test=test)
    if stopped:
        return stopped
    if not (a.mean > 0 and b.mean > 0):
        return Verdict(INCONCLUSIVE, test, f"the ratio needs positive means: {a.text()}, {b.text()}")
    ratio, low, high, _ = _ratio_interval(a, b)
    reason = f"{a.text()} / {b.text()} = {ratio:.3g} (interval {low:.3g}–{high:.3g})"
    if 1 / factor <= low and high <= factor:
        return Verdict(SUPPORTED, test, reason)
    if high < 1 / factor or low > factor:
        return Verdict(NOT_SUPPORTED, test, reason)
    return Verdict(INCONCLUSIVE, test, f"the interval crosses a bound: {reason}")


def exact(name: str, value: float, learns: str = "n/a") -> Estimate:
    """An :class:`Estimate` of a value known without sampling error (a deterministic count, a
    majority rate, a bound): zero spread, so the interval predicates compare against it as a
    constant."""
    return Estimate(name, float(value), 0.0, 2, 0.0, learns)


def ratio_below(a: Estimate, b: Estimate, bound: float, *, a_lower_bound: bool = False, b_lower_bound: bool = False,
                guarded: Sequence[Estimate] = ()) -> Verdict:
    """The claim "a/b is below ``bound``" (a needs a fraction of b, say): supported when the 95%
    interval of a/b (delta method; exact values have none) lies below ``bound``, not supported
    when it lies above, else inconclusive. A censored count is known only to exceed its value:
    ``b_lower_bound`` (a/b is at most the ratio shown) can support but never refute,
    ``a_lower_bound`` (a/b is at least the ratio shown) can refute but never support."""
    test = f"95% interval of the ratio (delta method) below / above {bound:g}"
    if a_lower_bound or b_lower_bound:
        test += f" ({'numerator' if a_lower_bound else 'denominator'} a lower bound)"
    stopped = guard(a, b, *guarded, test=test)
    if stopped:
        return stopped
    if not (a.mean > 0 and b.mean > 0):
        return Verdict(INCONCLUSIVE, test, f"the ratio needs positive means: {a.text()}, {b.text()}")
    ratio, low, high, rel = _ratio_interval(a, b)
    reason = (f"{a.text()}{' (at least)' if a_lower_bound else ''} / {b.text()}"
              f"{' (at least)' if b_lower_bound else ''} = {ratio:.3g}"
              + (f" (interval {low:.3g}–{high:.3g})" if rel > 0 else ""))
    if a_lower_bound and b_lower_bound:
        return Verdict(INCONCLUSIVE, test, f"both counts are censored: {reason}")
    if high < bound and not a_lower_bound:
        return Verdict(SUPPORTED, test, reason)
    if low > bound and not b_lower_bound:
        return Verdict(NOT_SUPPORTED, test, reason)
    censored = (b_lower_bound and low > bound) or (a_lower_bound and high < bound)
    why = "a censored count leaves it open" if censored else "the interval crosses the bound"
    return Verdict(INCONCLUSIVE, test, f"{why}: {reason}")


def paired_greater(name: str, differences, margin: float = 0.0) -> Verdict:
    """The claim "the first of two paired runs is higher": the t-interval of the per-pair
    differences (same fold, repeat and draw) above ``margin``: supported; below: not supported."""
    test = "95% t-interval of the paired differences (same split and draw) above / below 0"
    d = t_interval(differences)
    reason = f"{name}: mean paired difference {d.mean:.4g} ± {d.half:.2g} over {d.n} pairs"
    return _decide(d.low - margin, d.high - margin, SUPPORTED, NOT_SUPPORTED, test, reason)


def within(value: Estimate, low: float, high: float, what: str) -> Verdict:
    """The claim "value lies in [low, high]" (a slope near its predicted exponent, say):
    supported when the value's 95% interval is inside, not supported when wholly outside."""
    interval = math.isfinite(value.half)
    test = f"{'95% interval of the ' if interval else ''}{what} inside [{low:g}, {high:g}]"
    v_low, v_high = (value.low, value.high) if interval else (value.mean, value.mean)
    reason = value.text()
    if not math.isfinite(value.mean):
        return Verdict(INCONCLUSIVE, test, reason)
    if low <= v_low and v_high <= high:
        return Verdict(SUPPORTED, test, reason)
    if v_high < low or v_low > high:
        return Verdict(NOT_SUPPORTED, test, reason)
    return Verdict(INCONCLUSIVE, test, f"the interval crosses a bound: {reason}")


def combine(verdicts: Sequence[Verdict], what: str = "panels") -> Verdict:
    """One verdict for a claim judged on several scopes: not supported if any scope contradicts
    it, supported if every scope supports it, else inconclusive; the reason counts each."""
    if not verdicts:
        return Verdict(NOT_TESTED, "", f"no {what}")
    counts = {v: sum(x.verdict == v for x in verdicts) for v in VERDICTS}
    tally = ", ".join(f"{k} on {n} of {len(verdicts)} {what}" for k, n in counts.items() if n)
    tests = sorted({v.test for v in verdicts})
    if counts[NOT_SUPPORTED]:
        verdict = NOT_SUPPORTED
    elif counts[SUPPORTED] == len(verdicts):
        verdict = SUPPORTED
    elif counts[SUPPORTED] + counts[INCONCLUSIVE]:
        verdict = INCONCLUSIVE
    else:
        verdict = NOT_TESTED
    return Verdict(verdict, "; ".join(tests), tally)


def row(claim: str, scope: str, verdict: Verdict, source: str = "paper") -> dict:
    """A claims-table row (:data:`COLUMNS`); ``source``: ``paper`` (the paper's own claim) or
    ``ours`` (a claim this project makes about the paper's setting)."""
    if source not in ("paper", "ours"):
        raise ValueError(f"a claim's source is 'paper' or 'ours'; got {source!r}")
    return {"claim": claim, "source": source, "scope": scope, "verdict": verdict.verdict, "test": verdict.test,
            "reason": verdict.reason}
