"""Black-box privacy audits: every registered private algorithm, and mutants built to be caught.

For each audit case (:mod:`dperm.algorithms.audit_cases`) the algorithm releases ``runs`` models
on D and ``runs`` on D′ (one call each, ``draws=runs``); a statistic of the released weights
(the canary coordinate, or a case's own) is the distinguisher. The runs are split in halves: on
the first halves one event S = {statistic > t} (or its complement) is chosen among fixed quantile
thresholds; on the second halves Clopper–Pearson bounds on P[M(D) ∈ S] and P[M(D′) ∈ S] give the
lower bound ε_LB = ln((P_hi − δ)/P_lo) at 95% confidence (hockey-stick form, both directions:
:func:`dperm.privacy.audit.epsilon_lower_bound`). Choosing on one half and bounding on the other
keeps the bound valid without a correction for the choice.

A correct algorithm passes when ε_LB ≤ its claimed ε. The audit also has to show power: every
reference variant registered as not DP as implemented, and six mutants that exist only here
(half the calibrated noise; a selection that assumes monotone scores on scores that are not;
fixed-size batches accounted as Poisson sampling; a Gumbel selection charged ε²/8 but run at
twice its ε; a Gumbel selection with the monotone scale on scores that are not monotone; private
hyper-parameter selection whose validation score has no noise), must be caught, ε_LB > ε. An
audit that misses one of those fails, whatever the rest shows.

The Gumbel selection (DP-AGD's ``selection: gumbel``, docs/privacy.md#bounded-range-selection) is
audited twice: inside DP-AGD by DP-AGD's own cases, and alone, as here. Inside DP-AGD a
selection run at twice its ε cannot be caught: the claim (ε, δ) is converted to ρ by Bun &
Steinke's bound, and a selection using all of ρ is √(8ρ) ≈ 0.41ε-bounded-range at ε = 1, δ = 10⁻⁵, so
even twice that stays below ε. Alone, the selection's claim is its own pure ε (ε-bounded range
implies ε-DP), which the mutants exceed twofold.

The claim of an algorithm whose ε is computed (SGD-MA) is the ε its release reports.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .algorithms.audit_cases import AuditCase, canary_problems, displaced_row_audit
from .privacy.audit import epsilon_lower_bound

CONFIDENCE = 0.95
QUANTILES = np.concatenate([[0.0005, 0.001, 0.002, 0.005], np.linspace(0.01, 0.99, 99),
                            [0.995, 0.998, 0.999, 0.9995]])
COLUMNS = ["subject", "kind", "expected", "case", "adjacency", "epsilon", "delta", "epsilon_claimed", "runs",
           "epsilon_lower", "threshold", "direction", "verdict", "accounting", "algorithms", "description"]


@dataclass(frozen=True)
class Subject:
    """One audited thing: a registered algorithm, a reference variant or a mutant. ``fit`` has
    the algorithm interface; ``expect_private`` says what a sound audit must find."""

    name: str
    kind: str  # "algorithm", "reference" or "mutant"
    expect_private: bool
    fit: Callable
    cases: Callable[[], list[AuditCase]]
    description: str = ""
    epsilon_computed: bool = False
    algorithms: tuple[str, ...] = ()  # the registered algorithms whose code it runs


def _claimed(subject: Subject, case: AuditCase, results) -> float:
    if not subject.epsilon_computed:
        return float(case.privacy.epsilon)
    return float(max(np.max(np.asarray(r.epsilon_spent, dtype=float)) for r in results))


def best_event_bound(scores_d, scores_prime, delta: float, confidence: float = CONFIDENCE):
    """(ε_LB, threshold, direction) from one-dimensional statistics on D and D′: the event is
    chosen on the first half of each sample and bounded on the second (module docstring)."""
    s_d, s_p = np.asarray(scores_d, dtype=float), np.asarray(scores_prime, dtype=float)
    half_d, half_p = len(s_d) // 2, len(s_p) // 2
    choose_d, test_d = s_d[:half_d], s_d[half_d:]
    choose_p, test_p = s_p[:half_p], s_p[half_p:]
    thresholds = np.unique(np.quantile(np.concatenate([choose_d, choose_p]), QUANTILES))
    best = (-1.0, None)
    for t in thresholds:
        res = epsilon_lower_bound(int((choose_d > t).sum()), half_d, int((choose_p > t).sum()), half_p,
                                  delta=delta, confidence=confidence)
        if res.epsilon_lower > best[0]:
            best = (res.epsilon_lower, t)
    t = best[1] if best[1] is not None else float(np.median(np.concatenate([choose_d, choose_p])))
    res = epsilon_lower_bound(int((test_d > t).sum()), len(test_d), int((test_p > t).sum()), len(test_p),
                              delta=delta, confidence=confidence)
    return res.epsilon_lower, float(t), res.direction


CHUNK = 200_000  # releases per call: memory stays bounded whatever a case asks for


def _releases(subject: Subject, case: AuditCase, problem, runs: int, seed) -> tuple[np.ndarray, list]:
    """The statistic of ``runs`` releases on ``problem`` (in chunks, each from its own seed) and
    the fit results (for the claim and the labels)."""
    scores, results = [], []
    for j, start in enumerate(range(0, runs, CHUNK)):
        rng = np.random.default_rng(np.random.SeedSequence([*seed, j]))
        result = subject.fit(problem, case.privacy, rng, min(CHUNK, runs - start), **case.hyper)
        scores.append(np.asarray(case.statistic(result.weights), dtype=float))
        results.append(result)
    return np.concatenate(scores), results


def run_subject(subject: Subject, seed: int = 0, scale: float = 1.0) -> list[dict]:
    """One row per audit case of ``subject`` (runs scaled by ``scale``, at least 200 each)."""
    rows = []
    for i, case in enumerate(subject.cases()):
        runs = max(200, int(round(case.runs * scale)))
        s_d, res_d = _releases(subject, case, case.d, runs, (seed, i, 0))
        s_p, res_p = _releases(subject, case, case.d_prime, runs, (seed, i, 1))
        out_d = res_d[0]
        claimed = _claimed(subject, case, res_d + res_p)
        delta = float(case.privacy.delta)
        eps_lb, threshold, direction = best_event_bound(s_d, s_p, delta)
        caught = eps_lb > claimed
        verdict = ("caught" if caught else "NOT CAUGHT") if not subject.expect_private else \
            ("FAILS: the bound exceeds the claim" if caught else "passes")
        rows.append({"subject": subject.name, "kind": subject.kind,
                     "expected": "private" if subject.expect_private else "not private",
                     "case": case.name, "adjacency": out_d.adjacency, "epsilon": float(case.privacy.epsilon),
                     "delta": delta, "epsilon_claimed": claimed, "runs": runs, "epsilon_lower": eps_lb,
                     "threshold": threshold, "direction": direction, "verdict": verdict,
                     "accounting": out_d.accounting, "algorithms": ";".join(subject.algorithms),
                     "description": subject.description})
    return rows


def audit_ok(rows) -> bool:
    """Whether an audit passed: every private subject below its claim, every control caught."""
    return all(r["verdict"] in ("passes", "caught") for r in rows)


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


def _dp_sgd_half_noise(problem, privacy, rng, draws=1, **hyper):
    """DP-SGD that calibrates σ for its (ε, δ) and then adds half of it."""
    from .algorithms import get_algorithm
    from .privacy import noise_multiplier_for_epsilon

    spec = get_algorithm("dp-sgd")
    full = spec.hyper(hyper)
    q = full["batch_size"] / problem.n
    steps = max(1, math.ceil(full["epochs"] / q))
    sigma = noise_multiplier_for_epsilon(privacy.epsilon, privacy.delta, q, steps)
    return spec.fit(problem, privacy, rng, draws, **{**hyper, "noise_multiplier": sigma / 2.0})


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


def _sgd_canary_cases() -> list[AuditCase]:
    """One full-batch step of DP-SGD on the canary problem (q = 1): a Gaussian mechanism on w_c."""
    from .algorithms.base import Privacy

    d, d_prime, c = canary_problems("add-remove", n=50, p=3)
    hyper = {"epochs": 1.0, "batch_size": 50, "clip": 1.0, "learning_rate": 1.0}
    return [AuditCase("one full-batch step, canary on an unused coordinate", d, d_prime, Privacy(2.0, 1e-5),
                      hyper, statistic=lambda W, c=c: W[:, c], runs=100_000)]


def _displaced_row_cases():
    return displaced_row_audit(hyper={"epochs": 0.5, "batch_size": 20, "clip": 0.5, "learning_rate": 1.0})()


def _selection_noiseless_score(problem, privacy, rng, draws=1, **hyper):
    """Private selection whose validation score has no noise (a non-private score), charged as
    the correct selection is."""
    from .algorithms import get_algorithm

    spec = get_algorithm("private-selection")
    return spec.impl(problem, privacy, rng, draws, **spec.hyper(hyper), **{**spec.switches, "noisy_score": False})


def _private_selection_cases() -> list[AuditCase]:
    from .algorithms import get_algorithm

    return get_algorithm("private-selection").audit()


def mutant_subjects() -> list[Subject]:
    """Mutants built to be caught, each beside the correct mechanism it breaks (which must pass
    the same cases)."""
    from .algorithms import get_algorithm

    dp_sgd = get_algorithm("dp-sgd")
    return [
        Subject("dp-sgd (audit case: one full-batch step)", "algorithm", True, dp_sgd.fit, _sgd_canary_cases,
                description="the correct DP-SGD on the mutant's case", algorithms=("dp-sgd",)),
        Subject("mutant: dp-sgd with half the calibrated noise", "mutant", False, _dp_sgd_half_noise,
                _sgd_canary_cases, description="sigma calibrated for (epsilon, delta), half of it added",
                algorithms=("dp-sgd",)),
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
        Subject("mutant: private selection with a noiseless score", "mutant", False, _selection_noiseless_score,
                _private_selection_cases, description="trials scored on the validation part without noise",
                algorithms=("private-selection", "outpert")),
    ]


def subjects() -> list[Subject]:
    return registered_subjects() + mutant_subjects()


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
