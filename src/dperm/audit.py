"""The privacy audit: every registered private algorithm, its mutants and the controls, each on
neighbouring datasets, with a statistical lower bound ε_LB beside each claim (docs/audit.md).

For each audit case (:mod:`dperm.algorithms.audit_cases`) the subject releases ``runs`` models
on D and ``runs`` on D′; a statistic of the released weights is the distinguisher. The runs are
split in halves: on the first halves one event S = {statistic > t} (or its complement) is chosen
among fixed quantile thresholds (the one whose 99.9% bound is largest there); on the second
halves Clopper–Pearson bounds on P[M(D) ∈ S] and P[M(D′) ∈ S] give ε_LB = ln((P_hi − δ)/P_lo)
at 95% confidence (hockey-stick form, both directions:
:func:`dperm.privacy.audit.epsilon_lower_bound`). Choosing on one half and bounding on the other
keeps the bound valid without a correction for the choice.

Subjects (:mod:`dperm.audit_subjects`): every registered private algorithm, which **passes** when
ε_LB ≤ its claim; its **mutants**, built from its own calibration
(:mod:`dperm.privacy.calibration_faults`) or declared beside its hook, each **caught** when ε_LB
exceeds the claim on one of its cases (it runs them in order and stops there), or excused by the
reason its algorithm declares (``audit_limits``); every reference variant registered as not DP
as implemented and the controls of :mod:`dperm.audit_controls`, which must be caught. A
"sensitivity halved" mutant whose releases equal half noise's (a calibration linear in Δ) is not
run again, and one whose releases do not change (a noise multiplier of a clip) is marked not
applicable.

Beside ε_LB each row reports ε_LB/ε (a correct algorithm's tightness on the case), the shift the
case achieves as a fraction of the sensitivity the noise is calibrated to (noiseless runs; where
the case declares it), and, for a mutant not caught, about how many runs the chosen event would
need for ε_LB to pass the claim. The claim of an algorithm whose ε is computed (SGD-MA) is the ε
its release reports.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from .algorithms.audit_cases import AuditCase
from .audit_subjects import (  # noqa: F401  (the audit's subjects, listed there: names the workflow reads)
    Subject,
    mutant_subjects,
    mutants_of,
    registered_subjects,
    slug,
    subject,
    subjects,
)
from .privacy import calibration_faults as faults
from .privacy.audit import epsilon_lower_bound, runs_to_exceed

CONFIDENCE = 0.95
#: the event is chosen by the bound at this stricter level on the first half: a pessimistic choice
#: prefers thresholds whose counts are not small, so the lucky far tails of the first half (which
#: the second half does not repeat) lose; any rule is valid, the bound is taken on the second half
CHOICE_CONFIDENCE = 0.999
QUANTILES = np.concatenate([[0.0001, 0.0002, 0.0005, 0.001, 0.002, 0.005], np.linspace(0.01, 0.99, 99),
                            [0.995, 0.998, 0.999, 0.9995, 0.9998, 0.9999]])
COLUMNS = ["subject", "kind", "expected", "case", "adjacency", "epsilon", "delta", "epsilon_claimed", "runs",
           "epsilon_lower", "threshold", "direction", "verdict", "accounting", "algorithms", "description",
           "mutant", "factor", "caught", "reason", "runs_needed", "tightness", "achieved_ratio"]
#: noiseless releases per side used to measure a case's achieved shift and white-box centres
CENTRE_RUNS = 32
SAME_AS_HALF_NOISE = "same release as half noise"
NOT_APPLICABLE = "not applicable"


def _claimed(audited: Subject, case: AuditCase, results) -> float:
    if not audited.epsilon_computed:
        return float(case.privacy.epsilon)
    return float(max(np.max(np.asarray(r.epsilon_spent, dtype=float)) for r in results))


def best_event_bound(scores_d, scores_prime, delta: float, confidence: float = CONFIDENCE):
    """(ε_LB, threshold, direction, test-half result) from one-dimensional statistics on D and
    D′: the event is chosen on the first half of each sample and bounded on the second (module
    docstring)."""
    s_d, s_p = np.asarray(scores_d, dtype=float), np.asarray(scores_prime, dtype=float)
    half_d, half_p = len(s_d) // 2, len(s_p) // 2
    choose_d, test_d = s_d[:half_d], s_d[half_d:]
    choose_p, test_p = s_p[:half_p], s_p[half_p:]
    thresholds = np.unique(np.quantile(np.concatenate([choose_d, choose_p]), QUANTILES))
    sorted_d, sorted_p = np.sort(choose_d), np.sort(choose_p)
    above_d = half_d - np.searchsorted(sorted_d, thresholds, side="right")
    above_p = half_p - np.searchsorted(sorted_p, thresholds, side="right")
    best = (-1.0, None)
    for t, k_d, k_p in zip(thresholds, above_d, above_p):
        res = epsilon_lower_bound(int(k_d), half_d, int(k_p), half_p, delta=delta, confidence=CHOICE_CONFIDENCE)
        if res.epsilon_lower > best[0]:
            best = (res.epsilon_lower, t)
    t = best[1] if best[1] is not None else float(np.median(np.concatenate([choose_d, choose_p])))
    res = epsilon_lower_bound(int((test_d > t).sum()), len(test_d), int((test_p > t).sum()), len(test_p),
                              delta=delta, confidence=confidence)
    return res.epsilon_lower, float(t), res.direction, res


CHUNK = 200_000  # releases per call: memory stays bounded whatever a case asks for


def _mutated(audited: Subject, noise: float | None = None) -> Callable:
    """``audited.fit`` inside its mutant's faults (``noise`` overrides the noise factor: 0 for
    the noiseless releases); the plain fit for a subject that is not a mutant."""
    m = audited.mutant
    factors = {"noise": m.noise if m else 1.0, "sensitivity": m.sensitivity if m else 1.0}
    if noise is not None:
        factors["noise"] = noise
    if factors == {"noise": 1.0, "sensitivity": 1.0}:
        return audited.fit

    def fit(*args, **kwargs):
        with faults.injected(**factors):
            return audited.fit(*args, **kwargs)

    return fit


def _releases(fit, case: AuditCase, problem, runs: int, seed) -> tuple[np.ndarray, list]:
    """``runs`` releases of ``fit`` on ``problem`` (in calls of at most ``CHUNK``, or of
    ``case.draws_per_call``, each from its own seed) and the fit results."""
    per_call = min(CHUNK, case.draws_per_call or CHUNK)
    weights, results = [], []
    for j, start in enumerate(range(0, runs, per_call)):
        rng = np.random.default_rng(np.random.SeedSequence([*seed, j]))
        result = fit(problem, case.privacy, rng, min(per_call, runs - start), **case.hyper)
        weights.append(result.weights)
        if j < 8 or start + per_call >= runs:  # the claim and labels: a few results suffice
            results.append(result)
    return np.concatenate(weights), results


def _centres(audited: Subject, case: AuditCase, seed) -> tuple[np.ndarray, np.ndarray, list]:
    """Means of ``CENTRE_RUNS`` noiseless releases on D and on D′ (noise factor 0, the mutant's
    other faults kept), and their results."""
    fit = _mutated(audited, noise=0.0)
    w_d, res_d = _releases(fit, case, case.d, CENTRE_RUNS, (*seed, 2))
    w_p, _ = _releases(fit, case, case.d_prime, CENTRE_RUNS, (*seed, 3))
    return w_d.mean(axis=0), w_p.mean(axis=0), res_d


def _statistic(case: AuditCase, W, centres):
    return np.asarray(case.statistic(W, centres) if case.white_box else case.statistic(W), dtype=float)


def _probe(audited: Subject, case: AuditCase) -> str:
    """For a mutant that only scales sensitivities: ``NOT_APPLICABLE`` if its releases on the
    case equal the unmutated algorithm's (the factor reaches no calibration the case runs),
    ``SAME_AS_HALF_NOISE`` if they equal half noise's (factor 0.5, a calibration linear in the
    sensitivity: the half-noise mutant's row stands for it), else "" (run it). On D′, 16
    releases from one seed, compared up to rounding."""
    m = audited.mutant
    if m is None or m.sensitivity == 1.0 or m.noise != 1.0 or m.fit is not None:
        return ""

    def release(noise, sensitivity):
        with faults.injected(noise=noise, sensitivity=sensitivity):
            return audited.fit(case.d_prime, case.privacy, np.random.default_rng(11), 16, **case.hyper).weights

    mutated = release(1.0, m.sensitivity)
    if np.allclose(mutated, release(1.0, 1.0), rtol=1e-9, atol=1e-12):
        return NOT_APPLICABLE
    if m.sensitivity == 0.5 and np.allclose(mutated, release(0.5, 1.0), rtol=1e-9, atol=1e-12):
        return SAME_AS_HALF_NOISE
    return ""


def _row(audited: Subject, case: AuditCase, **values) -> dict:
    m = audited.mutant
    row = dict.fromkeys(COLUMNS, math.nan)
    row.update({"subject": audited.name, "kind": audited.kind,
                "expected": "private" if audited.expect_private else "not private", "case": case.name,
                "epsilon": float(case.privacy.epsilon), "delta": float(case.privacy.delta),
                "algorithms": ";".join(audited.algorithms), "description": audited.description,
                "mutant": m.name if m else "", "factor": (m.factor if m and m.factor else math.nan),
                "reason": "", "caught": ""})
    row.update(values)
    return row


def run_subject(audited: Subject, seed: int = 0, scale: float = 1.0) -> list[dict]:
    """One row per audit case of ``audited`` (runs scaled by ``scale``, at least 200 each). A
    mutant runs its cases in order until one catches it (the rest would add nothing) and skips
    the cases that are not for mutants."""
    rows = []
    m = audited.mutant
    cases = (m.cases if m and m.cases else audited.cases)()
    if m is not None:
        cases = [c for c in cases if c.for_mutants]
    fit = _mutated(audited)
    for i, case in enumerate(cases):
        probe = _probe(audited, case)
        if probe:
            why = ("the sensitivity factor reaches no calibration this case runs (its noise is a multiplier of the "
                   "clip): nothing to mutate" if probe == NOT_APPLICABLE else "the calibration is linear in the "
                   "sensitivity: the same releases as the half-noise mutant, whose row stands for this one")
            rows.append(_row(audited, case, verdict=probe, caught=probe, reason=why, runs=0))
            continue
        runs = max(200, int(round(case.runs * scale)))
        centres, ratio = None, math.nan
        if case.white_box or case.shift is not None:
            c_d, c_p, res0 = _centres(audited, case, (seed, i))
            centres = (c_d, c_p)
            if case.shift is not None:
                allowed = float(case.shift(res0[0]))
                ratio = float(np.linalg.norm(c_p - c_d)) / allowed if allowed > 0 else math.nan
        w_d, res_d = _releases(fit, case, case.d, runs, (seed, i, 0))
        w_p, res_p = _releases(fit, case, case.d_prime, runs, (seed, i, 1))
        s_d, s_p = _statistic(case, w_d, centres), _statistic(case, w_p, centres)
        claimed = _claimed(audited, case, res_d + res_p)
        delta = float(case.privacy.delta)
        eps_lb, threshold, direction, test = best_event_bound(s_d, s_p, delta)
        above = eps_lb > claimed
        values = {"adjacency": res_d[0].adjacency, "epsilon_claimed": claimed, "runs": runs,
                  "epsilon_lower": eps_lb, "threshold": threshold, "direction": direction,
                  "accounting": res_d[0].accounting, "achieved_ratio": ratio}
        if audited.expect_private:
            values.update(verdict="FAILS: the bound exceeds the claim" if above else "passes",
                          tightness=eps_lb / claimed if claimed > 0 else math.nan)
        else:
            values.update(verdict="caught" if above else "NOT CAUGHT", caught="yes" if above else "no")
            if not above:
                values.update(reason=audited.limit, runs_needed=runs_to_exceed(test, claimed, runs, CONFIDENCE))
        rows.append(_row(audited, case, **values))
        if m is not None and above:
            break
    return rows


def audit_ok(rows) -> bool:
    """Whether an audit passed: every private subject at or below its claim, every control
    caught, every mutant caught on one of its cases or not catchable for a stated reason."""
    by_subject: dict = {}
    for r in rows:
        by_subject.setdefault(r["subject"], []).append(r)
    for mine in by_subject.values():
        verdicts = {r["verdict"] for r in mine}
        if mine[0]["kind"] == "mutant":
            if not ("caught" in verdicts or verdicts <= {SAME_AS_HALF_NOISE, NOT_APPLICABLE}
                    or all(r["verdict"] != "NOT CAUGHT" or r.get("reason") for r in mine)):
                return False
        elif not verdicts <= {"passes", "caught"}:
            return False
    return True
