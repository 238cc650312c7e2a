"""Private hyper-parameter selection: random search with a random number of trials, charged to
the cell's total (ε, δ) (Liu & Talwar 2019; Papernot & Steinke 2022; docs/privacy.md#private-selection).

The papers this project reproduces tune hyper-parameters on the private data and pay nothing for
it (records ``tuning: non-private``, docs/privacy.md#data-dependent-choices). ``private-selection``
is the private alternative, registered like any algorithm so that records, protocol, audit and
figures need no special case. Its hyper-parameters: ``base`` (a registered algorithm offering the
``rdp`` capability: ``dp-agd``, ``objpert``, ``outpert``, ``outpert-gd``, ``privgene``),
``grid`` (base hyper-parameter → values; ``l2`` is the model's λ), ``base_hyper`` (fixed base
hyper-parameters), ``trials`` (E[K]), ``distribution`` (``truncated-negative-binomial`` with
shape ``eta``, or ``poisson``), ``validation_fraction`` f, ``score`` (``loss``: the validation
loss clipped to [0, ``score_clip``]; or ``accuracy``) and ``split`` (``shared`` by the draws of a
fit, or ``per-draw``).

The mechanism (one release):

1. Split the rows: each goes to validation independently with probability f (the mechanism's
   own randomness, one Bernoulli per row: never by value, and the law of the split does not
   depend on the order of the rows). The training part's public row count is (1 − f)·n_public.
2. Draw K from the trial-count law (data-independent). For each of K trials, draw a candidate
   uniformly from the grid, fit the base on the training part at the per-trial target, and score
   the released weights on the validation part with a private count: the sum of clipped losses
   Σ min(ℓ_i(w), C) (sensitivity C) or the number of correct predictions (sensitivity 1), under
   add/remove and replace-one alike, plus Gaussian noise of σ = Δ/√(2ρ) when the base's trial is
   ρ-zCDP, else Laplace noise of scale Δ/ε for a pure ε-DP base (so the score is never less
   private than the fit it scores).
3. Release the weights of the best-scoring trial (lowest noisy loss, or highest noisy count;
   ties to the earlier trial). K = 0 (possible under Poisson only) releases the fixed public
   output w = 0, as Theorem 6 allows.

Privacy. Adjacency: the base's. Conditional on the split, a neighbour differs in one part: the
differing row is in the training part (or, under replace-one, both rows are: the coins are
coupled by position) or in the validation part. In the first case each trial is the base fit
followed by a score computed from its release and the unchanged validation rows (post-processing),
so it satisfies the base's statement; in the second case the fits do not change and each trial
is the noisy score, whose statement is the same ρ or ε. Each trial draws its candidate
independently of the data, so it is a mixture whose RDP curve is at most the largest of the
candidates' curves (Rényi divergence is jointly quasi-convex; van Erven & Harremoës 2014,
Thm. 13; the hockey-stick divergence is jointly convex). The selection is then (λ, ε′)-RDP by
Theorem 2 (truncated negative binomial) or Theorem 6 (Poisson) of Papernot & Steinke 2022
(:mod:`dperm.privacy.selection`) in either case, and, mixing over the differing row's side by
the same quasi-convexity, in general; ε′ → (ε, δ) by the improved conversion. The per-trial budget
t is the largest whose selection meets the cell's (ε, δ) (:func:`dperm.privacy.selection.calibrate_trial`,
a monotone search); ``epsilon_spent`` is the selection's certified ε at t.

Work (no effect on what is released). The trials of a split are fitted candidate by candidate,
each candidate's trials as draws of one base call from the candidate's own generator; with
DP-AGD, candidates that differ only in λ run in one lockstep call (:func:`_fit_groups`), each
chain with its own λ and generator, so that the trials share the passes over the training part:
the same runs, up to the last bits of the shared matrix products.

What is released is the chosen weights (and, as post-processing, the chosen grid point and its
noisy score). The records also keep K, the trials' work and the base's notes for the study: they
are not part of the release, and publishing K would void the guarantee (the theorems hide it).

Where this departs from the papers: Papernot & Steinke score on held-out data without saying
how the score is made private; the noisy count above is ours. Bases whose guarantee is only
(ε, δ)-DP (ObjPert's Gaussian branch, SGD-Adv's advanced composition) have no RDP curve: ObjPert
trials run its pure ε-DP branch (δ = 0), SGD-Adv is refused, as is SGD-MA (its ε is computed
from a step count, not a target).
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from ..privacy import calibration_faults as faults
from ..privacy.selection import RdpStatement, TrialCount, calibrate_trial, selection_epsilon

# Bases this module runs (imported so that the code fingerprint of a selection cell follows the
# bases' code too; tests/test_private_selection.py checks every base with an rdp capability is here).
from . import dp_agd, objpert, outpert, privgene  # noqa: F401
from .audit_cases import AuditCase, Mutant, canary_problems, with_switches
from .base import FitResult, Privacy, draw_rngs
from .domains import ANY, FRACTION, POSITIVE, at_least, finite_epsilon, one_of, optional
from .registry import get_algorithm, register

SCORES = ("loss", "accuracy")
SPLITS = ("shared", "per-draw")
LAMBDA = "l2"  # the grid key of the model's regularisation coefficient


def allowed_bases() -> list[str]:
    """Registered algorithms that offer the ``rdp`` capability (a base of private selection)."""
    from .registry import algorithm_names

    return [name for name in algorithm_names() if get_algorithm(name).rdp is not None]


def base_spec(name):
    """The registered base ``name``, or a ValueError saying why it cannot be one."""
    try:
        spec = get_algorithm(name)
    except KeyError as err:
        raise ValueError(f"base {name!r} is not a registered algorithm; allowed bases: {allowed_bases()}") from err
    if spec.rdp is None:
        why = ("it is not private" if not spec.private
               else "its epsilon is computed from a step count, not calibrated to a target"
               if not spec.depends_on_epsilon
               else "it states no Renyi-DP guarantee (only an (epsilon, delta)-DP one, or none)")
        raise ValueError(f"{name!r} cannot be a base of private selection: {why}; allowed bases: {allowed_bases()}")
    return spec


def candidates(grid: dict | None) -> list[dict]:
    """The grid's points in a fixed order: keys sorted, values in the order given (an empty grid
    is the one point {})."""
    grid = grid or {}
    names = sorted(grid)
    return [dict(zip(names, values)) for values in itertools.product(*(grid[n] for n in names))]


def check_settings(given: dict, where: str = "") -> None:
    """Checks of configured settings beyond their types (the base, its grid and fixed
    hyper-parameters, the ranges), so that a bad value fails when the grid is loaded
    (:meth:`AlgorithmSpec.check_types`); ``given`` is completed with the defaults."""
    prefix = f"{where}: " if where else ""
    full = {**get_algorithm("private-selection").defaults, **given}
    try:
        spec = base_spec(full["base"])
        grid = full["grid"] or {}
        if not isinstance(grid, dict) or not all(isinstance(v, list) and v for v in grid.values()):
            raise ValueError(f"grid must map hyper-parameters of the base to non-empty lists of values; got {grid!r}")
        fixed = full["base_hyper"] or {}
        if not isinstance(fixed, dict):
            raise ValueError(f"base_hyper must be a mapping of the base's hyper-parameters; got {fixed!r}")
        unknown = sorted((set(grid) - {LAMBDA} | set(fixed)) - set(spec.defaults))
        if unknown:
            raise ValueError(f"{unknown} are not hyper-parameters of base {spec.name!r} (nor {LAMBDA!r}, the "
                             f"model's lambda); allowed: {sorted(spec.defaults) + [LAMBDA]}")
        for point in candidates({k: v for k, v in grid.items() if k != LAMBDA}):
            spec.check_types({**fixed, **point}, where)
        if any(isinstance(v, bool) or not (isinstance(v, (int, float)) and v >= 0) for v in grid.get(LAMBDA, [])):
            raise ValueError(f"grid.{LAMBDA} must list numbers >= 0; got {grid[LAMBDA]!r}")
        TrialCount(full["distribution"], float(full["trials"]), float(full["eta"]))
        if not 0.0 < float(full["validation_fraction"]) < 1.0:
            raise ValueError(f"validation_fraction must be in (0, 1); got {full['validation_fraction']!r}")
        if full["score"] not in SCORES:
            raise ValueError(f"score must be one of {SCORES}; got {full['score']!r}")
        if not float(full["score_clip"]) > 0:
            raise ValueError(f"score_clip must be > 0; got {full['score_clip']!r}")
        if full["split"] not in SPLITS:
            raise ValueError(f"split must be one of {SPLITS}; got {full['split']!r}")
    except ValueError as err:
        message = str(err)
        raise ValueError(message if where and message.startswith(where) else
                         f"{prefix}private-selection: {message}") from None


def _score_sums(problem, W: np.ndarray, rows: np.ndarray, score: str, clip: float) -> np.ndarray:
    """One private-count statistic per weight vector: Σ_{i∈rows} min(ℓ_i(w), C) or the number of
    correct predictions on ``rows``."""
    X, y = problem.X[rows], problem.y[rows]
    if len(rows) == 0:
        return np.zeros(len(W))
    if score == "accuracy":
        return np.rint(np.atleast_1d(problem.loss.accuracy(W, X, y)) * len(rows))
    return np.minimum(np.array(problem.loss.per_example_value(W, X, y), copy=True), clip).sum(axis=-1)


def _score_statement(statement: RdpStatement) -> RdpStatement:
    """What the noisy score satisfies: the base trial's ρ (Gaussian noise) when it has one, else
    its pure ε (Laplace noise)."""
    if statement.rho is not None:
        return RdpStatement(rho=statement.rho, adjacency=statement.adjacency)
    return RdpStatement(epsilon=statement.epsilon, adjacency=statement.adjacency)


def _score_noise(statement: RdpStatement, sensitivity: float, rng, size: int) -> np.ndarray:
    sensitivity = faults.sensitivity(sensitivity)  # the audit's mutants only (calibration_faults)
    if statement.rho is not None:
        return rng.normal(0.0, faults.noise_scale(sensitivity / math.sqrt(2.0 * statement.rho)), size=size)
    return rng.laplace(0.0, faults.noise_scale(sensitivity / statement.epsilon), size=size)


class _Trials:
    """The grid's candidates as trials of one base on one training part: each candidate's
    hyper-parameters, λ, and at a per-trial budget t its target and statement."""

    def __init__(self, spec, points, fixed, problem, train_rows, public_n):
        self.spec, self.points = spec, points
        self.hyper = [spec.hyper({**fixed, **{k: v for k, v in p.items() if k != LAMBDA}}) for p in points]
        self.l2 = [float(p.get(LAMBDA, problem.l2)) for p in points]
        self.problem, self.rows, self.public_n = problem, train_rows, public_n
        self._parts: dict = {}

    def part(self, i: int):
        """The training part with candidate i's λ (one copy of the rows per λ)."""
        from ..problem import Problem

        l2 = self.l2[i]
        if l2 not in self._parts:
            first = next(iter(self._parts.values()), None)
            X, y, norms = ((first.X, first.y, first.row_norms) if first is not None else
                           (self.problem.X[self.rows], self.problem.y[self.rows], self.problem.row_norms[self.rows]))
            self._parts[l2] = Problem(X, y, self.problem.loss, l2, norms,
                                      first.shared if first is not None else None, public_n=self.public_n)
        return self._parts[l2]

    def at(self, t: float, delta: float) -> list[tuple]:
        """(Privacy, RdpStatement) of each candidate at per-trial budget t."""
        return [self.spec.rdp(self.part(i), t, delta, self.hyper[i]) for i in range(len(self.points))]


def _sides(statements: list[RdpStatement]) -> list[list[RdpStatement]]:
    """The trial's statements when the differing row is in the training part (the fits') and
    when it is in the validation part (the scores')."""
    return [statements, [_score_statement(s) for s in statements]]


def _same(a: dict, b: dict) -> bool:
    """Whether two hyper-parameter dicts are equal (array values compared element by element)."""
    return a.keys() == b.keys() and all(
        a[k] is b[k] or (np.shape(a[k]) == np.shape(b[k]) and bool(np.all(np.asarray(a[k] == b[k], dtype=bool))))
        if isinstance(a[k], np.ndarray) or isinstance(b[k], np.ndarray) else a[k] == b[k] for k in a)


def _fit_groups(spec, trials: _Trials, used: list[int]) -> list[list[int]]:
    """The candidates in ``used`` in groups fitted by one base call: with a base that takes one λ
    per target (:meth:`~.base.AlgorithmSpec.fit_trials`: DP-AGD, whose lockstep chains then share
    their passes over the training part), the candidates whose other hyper-parameters agree;
    otherwise one candidate per call. Each candidate keeps its own generator, so a trial is the
    same run whichever way it is grouped (up to the last bits of the shared matrix products)."""
    if not spec.l2_per_target:
        return [[c] for c in used]
    out: list[list[int]] = []
    for c in used:
        home = next((g for g in out if _same(trials.hyper[g[0]], trials.hyper[c])), None)
        if home is None:
            out.append([c])
        else:
            home.append(c)
    return out


def _calibrate(trials: _Trials, privacy: Privacy, count: TrialCount) -> tuple[float, list[tuple], float]:
    """(t, per-candidate (Privacy, statement) at t, the selection's certified ε at t)."""
    def total(t: float) -> float:
        return selection_epsilon(_sides([s for _, s in trials.at(t, privacy.delta)]), count, privacy.delta)[0]

    t = calibrate_trial(total, privacy.epsilon)
    return t, trials.at(t, privacy.delta), total(t)


def _split(rng, n: int, fraction: float) -> tuple[np.ndarray, np.ndarray]:
    """(training rows, validation rows): each row to validation independently with probability f."""
    to_validation = rng.random(n) < fraction
    return np.flatnonzero(~to_validation), np.flatnonzero(to_validation)


def _select(problem, privacy, rng, draws, *, base, grid, base_hyper, trials, distribution, eta,
            validation_fraction, score, score_clip, split, noisy_score):
    check_settings(dict(base=base, grid=grid, base_hyper=base_hyper, trials=trials, distribution=distribution,
                        eta=eta, validation_fraction=validation_fraction, score=score, score_clip=score_clip,
                        split=split))
    if not privacy.is_private:
        raise ValueError(f"private-selection needs a finite epsilon; got {privacy!r}")
    spec = base_spec(base)
    count = TrialCount(distribution, float(trials), float(eta))
    points = candidates(grid)
    fixed = dict(base_hyper or {})
    f = float(validation_fraction)
    public_n = max(1, int(round((1.0 - f) * problem.n_public)))
    streams = draw_rngs(rng, draws + 1)  # 0: the shared split and the fits; 1 + d: draw d's K, candidates, noise
    sensitivity = float(score_clip) if score == "loss" else 1.0
    per_row = max(f * problem.n_public, 1.0)  # a public normaliser of the noisy score (post-processing)

    calibrated: dict = {}  # training-part size -> calibration (statements may read the public n only)

    def run_group(split_rng, fit_rng, draw_streams):
        """The trials of the draws in ``draw_streams`` on one split: their fits grouped by
        candidate (one base call each), their noisy scores, each draw's choice."""
        train_rows, val_rows = _split(split_rng, problem.n, f)
        if len(train_rows) == 0:
            raise ValueError(f"the split left no training rows (n = {problem.n}, validation_fraction = {f:g}): "
                             "use more rows or a smaller validation fraction")
        tr = _Trials(spec, points, fixed, problem, train_rows, public_n)
        if len(train_rows) not in calibrated:
            calibrated[len(train_rows)] = _calibrate(tr, privacy, count)
        t, at_t, spent = calibrated[len(train_rows)]
        ks = [int(count.sample(s, 1)[0]) for s in draw_streams]
        picks = [s.integers(len(points), size=k) for s, k in zip(draw_streams, ks)]
        weights = [np.zeros((k, problem.p)) for k in ks]
        work, notes, adjacency = [np.zeros(k) for k in ks], [], None
        fit_streams = draw_rngs(fit_rng, len(points))
        where = {c: [(d, j) for d, pick in enumerate(picks) for j in np.flatnonzero(pick == c)]
                 for c in range(len(points))}
        for group in _fit_groups(spec, tr, [c for c in range(len(points)) if where[c]]):
            if len(group) == 1:  # candidate c's trials: draws of one base fit at its λ
                c = group[0]
                results = [spec.fit(tr.part(c), at_t[c][0], fit_streams[c], len(where[c]), **tr.hyper[c])]
            else:  # candidates that differ in λ alone: one call, the same generators (_fit_groups)
                results = spec.fit_trials(tr.part(group[0]), [at_t[c][0] for c in group],
                                          [fit_streams[c] for c in group], [len(where[c]) for c in group],
                                          [tr.l2[c] for c in group], **tr.hyper[group[0]])
            for c, result in zip(group, results):
                adjacency = result.adjacency
                notes += [n for n in result.notes if n not in notes]
                evals = np.broadcast_to(np.asarray(result.grad_evals, dtype=float), (len(where[c]),))
                for (d, j), w, e in zip(where[c], result.weights, evals):
                    weights[d][j], work[d][j] = w, e
        out = []
        for d, s in enumerate(draw_streams):
            k = ks[d]
            if k == 0:
                out.append((np.zeros(problem.p), None, math.nan, 0, 0.0, t))
                continue
            sums = _score_sums(problem, weights[d], val_rows, score, float(score_clip))
            if noisy_score:
                noise = np.array([_score_noise(_score_statement(at_t[c][1]), sensitivity, s, 1)[0] for c in picks[d]])
                sums = sums + noise
            signed = -sums if score == "loss" else sums
            j = int(np.argmax(signed))  # ties: the earlier trial
            out.append((weights[d][j], points[picks[d][j]], float(sums[j] / per_row), k, float(work[d].sum()), t))
        return out, t, spent, at_t, notes, adjacency

    if split == "shared":
        results = [run_group(streams[0], streams[0], streams[1:])]
    else:
        results = [run_group(s, s, [s]) for s in streams[1:]]
    rows = [row for group in results for row in group[0]]
    _, t, spent, at_t, _, _ = results[0]
    notes = list(dict.fromkeys(n for group in results for n in group[4]))
    statement = at_t[0][1]
    adjacency = next((g[5] for g in results if g[5] is not None), None) or statement.adjacency
    empty = sum(1 for row in rows if row[3] == 0)
    if empty:
        notes.append(f"K = 0 in {empty} of {draws} draws: released the fixed public output w = 0")
    theorem = ("Papernot & Steinke 2022, Theorem 6 (Poisson)" if distribution == "poisson" else
               "Papernot & Steinke 2022, Theorem 2 (truncated negative binomial)")
    return FitResult(
        weights=np.array([row[0] for row in rows]), epsilon_spent=float(max(g[2] for g in results)),
        delta_spent=float(privacy.delta), adjacency=adjacency,
        grad_evals=np.array([row[4] for row in rows]), iterations=np.array([row[3] for row in rows]),
        notes=notes,
        accounting=(f"private selection, {theorem}: best of K trials ({count.describe()}), each trial a "
                    f"{base} fit at per-trial budget {t:.6g} ({statement.describe()}) and a noisy validation "
                    f"{score}; RDP to (epsilon, delta) by the improved conversion"),
        extra={"base": base, "trials": np.array([row[3] for row in rows]),
               "trial_epsilon": np.array([row[5] for row in rows]),
               "trial_guarantee": statement.describe(), "trial_count": count.describe(),
               "chosen": [row[1] for row in rows], "chosen_score": np.array([row[2] for row in rows]),
               "score": score})


def selection_audit() -> list[AuditCase]:
    """The canary on an unused coordinate (:func:`.audit_cases.canary_problems`, replace-one)
    with OutPert as the base, a two-point λ grid, ten trials on average and a validation part of
    80% of the rows, each draw with its own split: the canary's side is random per release, as in
    one run of the mechanism. Every other row is zero, so every candidate fits w_T = 0 and only
    the canary's validation loss tells trials apart; a selection whose score were not private would
    pick the trial with the largest noisy w_c (the statistic) whenever the canary is in the
    validation part (the noiseless-score mutant of :mod:`dperm.audit` must be caught on it)."""
    d, d_prime, c = canary_problems("replace-one", n=100, p=3, l2=0.01)
    hyper = {"base": "outpert", "grid": {LAMBDA: [0.01, 0.1]}, "base_hyper": {"steps": 5}, "trials": 10.0,
             "distribution": "poisson", "validation_fraction": 0.8, "split": "per-draw"}
    return [AuditCase("canary on an unused coordinate, scored on a validation part", d, d_prime,
                      Privacy(1.0, 1e-5), hyper, statistic=lambda W, c=c: np.asarray(W)[:, c], runs=10_000)]


def _mutants():
    """A selection whose validation score has no noise (a non-private score), charged as the
    correct selection is."""
    return [Mutant("noiseless validation score", "trials scored on the validation part without noise",
                   fit=with_switches("private-selection", noisy_score=False))]


_LIMIT = ("the selection's guarantee (Papernot & Steinke's bound for about ten trials, converted from RDP) leaves each "
          "OutPert trial and its noisy validation score a small fraction of the claim, and the canary reaches either "
          "only with probability 0.2 or 0.8 per release: with half the noise (or the sensitivities halved, which "
          "also changes the per-trial budget) the case's privacy loss stays below the claim and no number of runs "
          "can catch it; the noiseless score (an unbounded leak) is caught on the same case")


@register("private-selection", switches={"noisy_score": True}, audit=selection_audit, check=check_settings,
          domains={"base": ANY, "grid": optional(ANY), "base_hyper": optional(ANY), "trials": POSITIVE,
                   "distribution": ANY, "eta": at_least(-1.0), "validation_fraction": FRACTION,
                   "score": one_of(*SCORES), "score_clip": POSITIVE, "split": one_of(*SPLITS)},
          needs=(finite_epsilon,),
          mutants=_mutants, audit_limits={"half noise": _LIMIT, "sensitivity halved": _LIMIT},
          description="private hyper-parameter selection: random search with a random number of trials "
                      "(Papernot & Steinke 2022), charged to the total (epsilon, delta)")
def fit_private_selection(problem, privacy: Privacy, rng, draws: int = 1, *, base: str = "dp-agd",
                          grid: dict | None = None, base_hyper: dict | None = None, trials: float = 8.0,
                          distribution: str = "truncated-negative-binomial", eta: float = 0.0,
                          validation_fraction: float = 0.2, score: str = "loss", score_clip: float = 1.0,
                          split: str = "shared", noisy_score: bool = True) -> FitResult:
    """Private selection over ``grid`` of ``base`` (module docstring). ``noisy_score`` is fixed by
    the registration (True); the audit's mutant turns it off to show that the audit catches a
    selection whose score is not private."""
    return _select(problem, privacy, rng, draws, base=base, grid=grid, base_hyper=base_hyper, trials=trials,
                   distribution=distribution, eta=eta, validation_fraction=validation_fraction, score=score,
                   score_clip=score_clip, split=split, noisy_score=noisy_score)
