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

Subjects:

* every registered private algorithm, on its own cases: it **passes** when ε_LB ≤ its claim;
* its **mutants**, built from its own calibration (:mod:`dperm.privacy.calibration_faults`):
  "half noise" and "sensitivity halved" for every algorithm registered as DP as implemented, a
  "wrong adjacency" mutant for every add/remove algorithm whose cases can be rebuilt on
  replace-one neighbours, and the ones it declares (``register(..., mutants=...)``). A mutant
  is **caught** when ε_LB exceeds the claim. One the audit cannot catch carries the reason its
  algorithm declares (``audit_limits``); without one, not catching it fails the audit. A
  "sensitivity halved" mutant whose release equals half noise's (a calibration linear in Δ) is
  not run again, and one whose release does not change (no sensitivity reaches the fault point:
  a noise multiplier of a clip) is marked not applicable;
* every reference variant registered as not DP as implemented (a control: must be caught) and
  the controls of :mod:`dperm.audit_controls`.

Beside ε_LB each row reports ε_LB/ε (a correct algorithm's tightness on the case), the shift the
case achieves as a fraction of the sensitivity the noise is calibrated to (noiseless runs; where
the case declares it), and, for a mutant not caught, about how many runs the chosen event would
need for ε_LB to pass the claim. The claim of an algorithm whose ε is computed (SGD-MA) is the ε
its release reports.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .algorithms.audit_cases import AuditCase, Mutant
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


@dataclass(frozen=True)
class Subject:
    """One audited thing: a registered algorithm, a reference variant, a mutant or a control.
    ``fit`` has the algorithm interface; ``expect_private`` says what a sound audit must find;
    ``mutant`` (for mutants of a registered algorithm) the faults injected around ``fit``;
    ``limit`` why the audit cannot catch it, if it cannot."""

    name: str
    kind: str  # "algorithm", "reference" or "mutant"
    expect_private: bool
    fit: Callable
    cases: Callable[[], list[AuditCase]]
    description: str = ""
    epsilon_computed: bool = False
    algorithms: tuple[str, ...] = ()  # the registered algorithms whose code it runs
    mutant: Mutant | None = None
    limit: str = ""


def _claimed(subject: Subject, case: AuditCase, results) -> float:
    if not subject.epsilon_computed:
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


def _mutated(subject: Subject, noise: float | None = None) -> Callable:
    """``subject.fit`` inside its mutant's faults (``noise`` overrides the noise factor: 0 for
    the noiseless releases); the plain fit for a subject that is not a mutant."""
    m = subject.mutant
    factors = {"noise": m.noise if m else 1.0, "sensitivity": m.sensitivity if m else 1.0}
    if noise is not None:
        factors["noise"] = noise
    if factors == {"noise": 1.0, "sensitivity": 1.0}:
        return subject.fit

    def fit(*args, **kwargs):
        with faults.injected(**factors):
            return subject.fit(*args, **kwargs)

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


def _centres(subject: Subject, case: AuditCase, seed) -> tuple[np.ndarray, np.ndarray, list]:
    """Means of ``CENTRE_RUNS`` noiseless releases on D and on D′ (noise factor 0, the mutant's
    other faults kept), and their results."""
    fit = _mutated(subject, noise=0.0)
    w_d, res_d = _releases(fit, case, case.d, CENTRE_RUNS, (*seed, 2))
    w_p, _ = _releases(fit, case, case.d_prime, CENTRE_RUNS, (*seed, 3))
    return w_d.mean(axis=0), w_p.mean(axis=0), res_d


def _statistic(case: AuditCase, W, centres):
    return np.asarray(case.statistic(W, centres) if case.white_box else case.statistic(W), dtype=float)


def _probe(subject: Subject, case: AuditCase) -> str:
    """For a mutant that only scales sensitivities: ``NOT_APPLICABLE`` if its releases on the
    case equal the unmutated algorithm's (the factor reaches no calibration the case runs),
    ``SAME_AS_HALF_NOISE`` if they equal half noise's (factor 0.5, a calibration linear in the
    sensitivity: the half-noise mutant's row stands for it), else "" (run it). On D′, 16
    releases from one seed, compared up to rounding."""
    m = subject.mutant
    if m is None or m.sensitivity == 1.0 or m.noise != 1.0 or m.fit is not None:
        return ""

    def release(noise, sensitivity):
        with faults.injected(noise=noise, sensitivity=sensitivity):
            return subject.fit(case.d_prime, case.privacy, np.random.default_rng(11), 16, **case.hyper).weights

    mutated = release(1.0, m.sensitivity)
    if np.allclose(mutated, release(1.0, 1.0), rtol=1e-9, atol=1e-12):
        return NOT_APPLICABLE
    if m.sensitivity == 0.5 and np.allclose(mutated, release(0.5, 1.0), rtol=1e-9, atol=1e-12):
        return SAME_AS_HALF_NOISE
    return ""


def _row(subject: Subject, case: AuditCase, **values) -> dict:
    m = subject.mutant
    row = dict.fromkeys(COLUMNS, math.nan)
    row.update({"subject": subject.name, "kind": subject.kind,
                "expected": "private" if subject.expect_private else "not private", "case": case.name,
                "epsilon": float(case.privacy.epsilon), "delta": float(case.privacy.delta),
                "algorithms": ";".join(subject.algorithms), "description": subject.description,
                "mutant": m.name if m else "", "factor": (m.factor if m and m.factor else math.nan),
                "reason": "", "caught": ""})
    row.update(values)
    return row


def run_subject(subject: Subject, seed: int = 0, scale: float = 1.0) -> list[dict]:
    """One row per audit case of ``subject`` (runs scaled by ``scale``, at least 200 each). A
    mutant runs its cases in order until one catches it (the rest would add nothing) and skips
    the cases that are not for mutants."""
    rows = []
    m = subject.mutant
    cases = (m.cases if m and m.cases else subject.cases)()
    if m is not None:
        cases = [c for c in cases if c.for_mutants]
    fit = _mutated(subject)
    for i, case in enumerate(cases):
        probe = _probe(subject, case)
        if probe:
            why = ("the sensitivity factor reaches no calibration this case runs (its noise is a multiplier of the "
                   "clip): nothing to mutate" if probe == NOT_APPLICABLE else "the calibration is linear in the "
                   "sensitivity: the same releases as the half-noise mutant, whose row stands for this one")
            rows.append(_row(subject, case, verdict=probe, caught=probe, reason=why, runs=0))
            continue
        runs = max(200, int(round(case.runs * scale)))
        centres, ratio = None, math.nan
        if case.white_box or case.shift is not None:
            c_d, c_p, res0 = _centres(subject, case, (seed, i))
            centres = (c_d, c_p)
            if case.shift is not None:
                allowed = float(case.shift(res0[0]))
                ratio = float(np.linalg.norm(c_p - c_d)) / allowed if allowed > 0 else math.nan
        w_d, res_d = _releases(fit, case, case.d, runs, (seed, i, 0))
        w_p, res_p = _releases(fit, case, case.d_prime, runs, (seed, i, 1))
        s_d, s_p = _statistic(case, w_d, centres), _statistic(case, w_p, centres)
        claimed = _claimed(subject, case, res_d + res_p)
        delta = float(case.privacy.delta)
        eps_lb, threshold, direction, test = best_event_bound(s_d, s_p, delta)
        above = eps_lb > claimed
        values = {"adjacency": res_d[0].adjacency, "epsilon_claimed": claimed, "runs": runs,
                  "epsilon_lower": eps_lb, "threshold": threshold, "direction": direction,
                  "accounting": res_d[0].accounting, "achieved_ratio": ratio}
        if subject.expect_private:
            values.update(verdict="FAILS: the bound exceeds the claim" if above else "passes",
                          tightness=eps_lb / claimed if claimed > 0 else math.nan)
        else:
            values.update(verdict="caught" if above else "NOT CAUGHT", caught="yes" if above else "no")
            if not above:
                values.update(reason=subject.limit, runs_needed=runs_to_exceed(test, claimed, runs, CONFIDENCE))
        rows.append(_row(subject, case, **values))
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


# -- the subjects ------------------------------------------------------------------------------------

def registered_subjects() -> list[Subject]:
    """Every registered private algorithm, with its own audit cases."""
    from .algorithms import algorithm_names, get_algorithm

    out = []
    for name in algorithm_names():
        spec = get_algorithm(name)
        if not spec.private:
            continue
        if spec.audit is None:
            raise ValueError(f"private algorithm {name!r} registers no audit cases (audit=...)")
        kind = "reference" if spec.variant == "reference" else "algorithm"
        out.append(Subject(name, kind, spec.dp_as_implemented, spec.fit, spec.audit,
                           description=spec.caveat or spec.description,
                           epsilon_computed=not spec.depends_on_epsilon, algorithms=(name,)))
    return out


def _wrong_adjacency(spec) -> Mutant | None:
    """An add/remove algorithm claiming replace-one: its add/remove cases that can be rebuilt,
    rebuilt on replace-one neighbours (the differing row replaces one, so the sensitivity it was
    calibrated to doubles), its releases relabelled. None when there is no such case."""
    cases = [c for c in spec.audit() if c.rebuild is not None and c.d.n != c.d_prime.n]
    if not cases:
        return None

    def rebuilt():
        return [c.rebuild("replace-one") for c in spec.audit() if c.rebuild is not None and c.d.n != c.d_prime.n]

    def fit(problem, privacy, rng, draws=1, **hyper):
        result = spec.fit(problem, privacy, rng, draws, **hyper)
        result.adjacency = "replace-one"  # what the mutant claims
        return result

    return Mutant("wrong adjacency", "calibrated for add/remove, claimed for replace-one (the differing row "
                  "replaces one: twice the sensitivity)", fit=fit, cases=rebuilt, factor=2.0)


def mutants_of(spec) -> list[Mutant]:
    """The mutants of a registered algorithm: half noise, the sensitivity halved, the wrong
    adjacency (add/remove algorithms) and the ones it declares."""
    out = [Mutant("half noise", "every noise scale halved (calibration_faults: noise 0.5)", noise=0.5, factor=2.0),
           Mutant("sensitivity halved", "every calibrated sensitivity halved (calibration_faults: sensitivity 0.5)",
                  sensitivity=0.5, factor=2.0)]
    wrong = _wrong_adjacency(spec)
    if wrong is not None:
        out.append(wrong)
    return out + list(spec.mutants() if spec.mutants else [])


def mutant_subjects() -> list[Subject]:
    """Every mutant of every registered algorithm that is private and DP as implemented (a
    reference variant that is not is itself a control)."""
    from .algorithms import algorithm_names, get_algorithm

    out = []
    for name in algorithm_names():
        spec = get_algorithm(name)
        if not (spec.private and spec.dp_as_implemented):
            continue
        for m in mutants_of(spec):
            out.append(Subject(f"mutant: {name}, {m.name}", "mutant", False, m.fit or spec.fit, spec.audit,
                               description=m.description, epsilon_computed=not spec.depends_on_epsilon,
                               algorithms=(name,), mutant=m, limit=spec.audit_limits.get(m.name, "")))
    return out


def subjects() -> list[Subject]:
    from .audit_controls import control_subjects

    return registered_subjects() + mutant_subjects() + control_subjects(Subject)


def slug(name: str) -> str:
    """A subject's file name: lower-case letters, digits and hyphens."""
    return "-".join("".join(ch if ch.isalnum() else " " for ch in name.lower()).split())


def subject(name: str) -> Subject:
    """The subject of a name or of its slug."""
    found = {s.name: s for s in subjects()}
    found.update({slug(s.name): s for s in list(found.values())})
    if name not in found:
        raise KeyError(f"no audit subject {name!r}; subjects: {sorted(slug(s.name) for s in subjects())}")
    return found[name]
