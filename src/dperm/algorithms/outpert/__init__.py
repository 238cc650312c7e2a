"""OutPert: output-perturbed full-batch gradient descent (Zhang et al. 2017, Algorithm 1).

w_{t+1} = w_t − η∇F(w_t), F(w) = (1/n)Σ ℓ_i(w) + (μ/2)‖w‖² (μ = ``problem.l2``), from w_0 = 0
for T steps on the training rows with every row mapped into the public ball ‖x‖ ≤ R
(:mod:`dperm.privacy.perturbation`); release w_T + z, z calibrated to the ℓ2 sensitivity Δ of w_T.

Adjacency: replace-one. Sensitivity: Lemma 2 (convex) Δ = 3LTη/n or Lemma 3 (μ > 0)
Δ = 5L(μ + β)/(nμβ), with L = ℓ's Lipschitz constant and β = β_ℓ + μ at the enforced R (β the
smoothness of the regularised per-example loss, as in the paper; L excludes the regulariser,
which cancels between neighbours — docs/privacy.md#outpert-regulariser). Constants, the check of
the lemmas and the noise rules are in :mod:`dperm.algorithms.outpert.theory`. Noise: δ = 0 → Gamma-norm density
∝ exp(−ε‖z‖/Δ), ε-DP; δ > 0 → Gaussian, (ε, δ)-DP (``gaussian="auto"``: the paper's ln(2/δ) form
for ε ≤ 1, Zhao et al. above, noted in the result). Accounting: one release, ε and δ as targeted.

Step size. Both lemmas need η ≤ 1/β (Lemma 2) or η ≤ 1/(β + μ) (Lemma 3). A larger configured
η is **clamped** to the limit and the clamp is noted: the limit is a function of public
constants only, so the clamped run stays private, while refusing would make one configured
value (Lee & Kifer's η = 1) unusable for every loss whose β exceeds 1 (e.g. ``huber-hinge``
with h ≤ 0.5 once μ > 0 is added).

Draws share the descent path: w_T is computed once and ``draws`` independent noise vectors are
added (one child generator per draw, :func:`.base.draw_rngs`). ``seconds_per_draw`` is what one
standalone run costs: row clipping + T steps + one noise draw.

Registered as
* ``outpert-gd`` — Zhang et al.'s setting: T and η from Theorem 2 (μ > 0) or 3 (μ = 0), D =
  ``solution_bound``, lemma paired with μ as in the paper.
* ``outpert`` — Lee & Kifer 2018's baseline with their code's T = 50, η = 1 (the paper "heavily
  tuned" them), made correct: L from the enforced R, Lemma 2, a valid Gaussian, smooth losses
  only.
* ``outpert-reference`` — DP-AGD's ``outpert_gd`` exactly: L = 1 whatever the row norms
  (docs/privacy.md#outpert-lipschitz), no row bound, any loss including the non-smooth hinge,
  σ = √(2 ln(2/δ))·(3LTη/n)/ε at every ε (docs/privacy.md#gaussian-range). Not DP as
  implemented. (The reference scripts also train on the whole data set,
  docs/deviations.md#outpert-full-data; the protocol always passes the training fold.)
"""

from __future__ import annotations

import math
import time

import numpy as np

from ... import solvers
from ...losses import Huber
from ...privacy.perturbation import (
    GAUSSIANS,
    check_regulariser,
    check_row_bound,
    draw_noise,
    enforce_row_bound,
    private_target,
    smooth_glm_constants,
    smooth_surrogate,
)
from ...privacy.selection import RdpStatement
from ..audit_cases import canary_audit
from ..audit_worst_case import PUSH_HINGE, recorded_sensitivity, white_box_audit
from ..base import FitResult, Privacy, draw_rngs
from ..domains import POSITIVE, POSITIVE_INT, UNIT, finite_epsilon, one_of, optional, positive_delta
from ..registry import register, register_variant
from . import theory

_PATHS: dict = {}  # (problem digest, η) -> {T: (w_T, seconds of T steps)}: see gd_endpoint
_PATHS_KEPT = 256  # paths (least recently used dropped first), each a few vectors of the model's size


def _digest(problem) -> str:
    """The path key of ``problem``'s data, loss and λ: X's digest is computed once per training
    fold (:meth:`~dperm.problem.Problem.rows_digest`); only y (n numbers) is hashed per call."""
    import hashlib

    h = hashlib.blake2b(digest_size=16)
    h.update(problem.rows_digest().encode())
    h.update(np.ascontiguousarray(problem.y).view(np.uint8))
    loss = problem.loss
    h.update(repr((type(loss).__name__, sorted(vars(loss).items()), problem.l2)).encode())
    return h.hexdigest()


def gd_endpoint(problem, steps: int, learning_rate: float):
    """(w_T, seconds the T steps take) of fixed-step GD on F from w_0 = 0.

    GD is deterministic, so within one process the path for identical (data, loss, λ, η) is kept
    at every T asked for, and a new T continues from the longest kept T below it: the tuning grid
    asks for several T, at every ε, on the same folds (the same T again costs nothing, a new one
    only its steps beyond the last kept). A path is only ever continued, never approximated, so
    w_T is the same as a fresh run's, bit for bit; the seconds returned are those of the whole
    T-step path (measured, summed over the pieces), i.e. what one standalone run costs.
    """
    key = (_digest(problem), float(learning_rate))
    path = _PATHS.pop(key, None) or {0: (np.zeros(problem.p), 0.0)}
    _PATHS[key] = path  # the most recently used last
    if steps not in path:
        start = max(t for t in path if t < steps)
        w, seconds = path[start]
        res = solvers.gradient_descent(problem, w, step=learning_rate, n_iter=steps - start)
        path[steps] = (res.x, seconds + res.seconds)
        while len(_PATHS) > _PATHS_KEPT:
            _PATHS.pop(next(iter(_PATHS)))
    w, seconds = path[steps]
    return w.copy(), seconds


def _as_float(value) -> float:
    """float(value), or NaN for what is not a number (None, a string): the callers then raise
    their ValueError naming the value instead of a bare TypeError (e.g. ``solution_bound: null``)."""
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def _positive_int(value, name: str) -> int:
    x = _as_float(value)
    if isinstance(value, bool) or not (math.isfinite(x) and x.is_integer() and x >= 1):
        raise ValueError(f"{name} must be a positive integer; got {name}={value!r}")
    return int(x)


def _positive_float(value, name: str, what: str) -> float:
    x = _as_float(value)
    if isinstance(value, bool) or not (math.isfinite(x) and x > 0):
        raise ValueError(f"{name} must be a finite number > 0 ({what}); got {name}={value!r}")
    return x


def _release(w_T, kind, scale, rng, draws):
    """``draws`` copies of w_T + independent noise, and the seconds the noise took."""
    t0 = time.perf_counter()
    noise = np.stack([draw_noise(kind, scale, w_T.size, child) for child in draw_rngs(rng, draws)])
    return w_T + noise, time.perf_counter() - t0


def _fit_outpert(problem, privacy, rng, draws, *, name, row_bound, solution_bound, steps,
                 learning_rate, lemma, gaussian, huber_h):
    t0 = time.perf_counter()
    problem, surrogate_notes = smooth_surrogate(problem, huber_h)
    eps, delta = private_target(privacy, name)
    mu = check_regulariser(problem, name)
    lemma = theory.resolve_lemma(lemma, mu)
    R = check_row_bound(row_bound)
    L, beta_loss = smooth_glm_constants(problem, R, name)
    beta = beta_loss + mu
    n, p = problem.n, problem.p
    notes = list(surrogate_notes)
    if steps is None or learning_rate is None:
        D = _positive_float(solution_bound, "solution_bound", "D, a declared bound on ‖ŵ‖")
        args = dict(beta=beta, L=L, n=n, epsilon=eps, delta=delta, D=D, d=p)
        if mu > 0:
            T_thm, eta_thm = theory.theorem2_schedule(mu=mu, **args)
        else:
            T_thm, eta_thm = theory.theorem3_schedule(**args)
        steps = T_thm if steps is None else steps
        learning_rate = eta_thm if learning_rate is None else learning_rate
    steps = _positive_int(steps, "steps")
    eta = _positive_float(learning_rate, "learning_rate", "the GD step size")
    limit = theory.step_limit(lemma, mu, beta)
    if eta > limit:
        notes.append(f"learning_rate={eta:g} exceeds the lemma's limit {limit:.6g} "
                     f"(1/beta or 1/(beta+mu), beta={beta:.6g}, mu={mu:g}); clamped to the limit")
        eta = limit
    sensitivity, used = theory.gd_sensitivity(lemma=lemma, L=L, mu=mu, beta=beta, n=n,
                                              steps=steps, eta=eta)
    kind, scale, noise_notes = theory.noise_calibration(sensitivity, eps, delta, gaussian)
    notes += noise_notes
    clipped = enforce_row_bound(problem, R)
    prep = time.perf_counter() - t0
    w_T, gd_seconds = gd_endpoint(clipped, steps, eta)
    weights, noise_seconds = _release(w_T, kind, scale, rng, draws)
    return FitResult(
        weights=weights, epsilon_spent=eps, delta_spent=delta, adjacency="replace-one",
        grad_evals=float(steps), iterations=steps,
        seconds_per_draw=prep + gd_seconds + noise_seconds / draws, notes=notes,
        accounting=f"one release: output perturbation ({used}), {kind} noise",
        extra={"steps": steps, "learning_rate": eta, "sensitivity": sensitivity, "lemma": used,
               "noise": kind, "noise_scale": scale, "row_bound": R, "lipschitz": L,
               "smoothness": beta, "mu": mu, "solution_bound": solution_bound})


def selection_trial(problem, epsilon: float, delta: float, hyper: dict):
    """One ``outpert``/``outpert-gd`` fit as a trial of private selection
    (docs/privacy.md#private-selection), at (``epsilon``, the cell's ``delta``): with δ > 0 its
    Gaussian σ is calibrated to the sensitivity Δ, so the release is a Gaussian mechanism,
    ρ = Δ²/(2σ²)-zCDP (Bun & Steinke 2016, Prop. 1.6), whichever rule ``gaussian`` picks σ by;
    with δ = 0 the Gamma-norm noise is pure ε-DP."""
    kind, scale, _ = theory.noise_calibration(1.0, float(epsilon), float(delta), hyper.get("gaussian", "auto"))
    privacy = Privacy(epsilon, delta)
    if kind == "gamma-norm":
        return privacy, RdpStatement(epsilon=epsilon, adjacency="replace-one")
    return privacy, RdpStatement(rho=1.0 / (2.0 * scale * scale), adjacency="replace-one")


# White box (dperm.algorithms.audit_worst_case): the differing row in the Huberised hinge's linear
# zone (L = 1), μ = 0 (Lemma 2), n = 200 so that w_T stays in the zone; p = 1, where the Gamma-norm
# noise is Laplace. GD moves w_T by 2LTη/n, two thirds of Lemma 2's 3LTη/n.
AUDIT = white_box_audit("the differing row at the Lipschitz bound through every step (white box)", "replace-one",
                        delta=0.0, runs=100_000, shift=recorded_sensitivity, n=200, l2=0.0, **PUSH_HINGE)


@register("outpert-gd", switches={"name": "outpert-gd"}, rdp=selection_trial, audit=AUDIT,
          domains={"row_bound": POSITIVE, "solution_bound": POSITIVE, "steps": optional(POSITIVE_INT),
                   "learning_rate": optional(POSITIVE), "lemma": one_of(*theory.LEMMAS),
                   "gaussian": one_of(*GAUSSIANS), "huber_h": optional(UNIT)},
          needs=(finite_epsilon,),
          description="Zhang et al. 2017 Alg. 1: GD for T steps, output perturbation; "
          "Theorem 2/3 schedule, public row bound enforced")
def fit_outpert_gd(problem, privacy: Privacy, rng, draws: int = 1, *, row_bound: float = 1.0,
                   solution_bound: float = 1.0, steps: int | None = None,
                   learning_rate: float | None = None, lemma: str = "auto", gaussian: str = "auto",
                   huber_h: float | None = 0.5, name: str = "outpert-gd"):
    """OutPert-GD with Zhang et al.'s theory parameters (Theorem 2 for μ > 0, 3 for μ = 0).

    ``row_bound`` R (enforced by clipping rows), ``solution_bound`` D ≥ ‖ŵ‖ (declared in config;
    used by the T formulas only), explicit ``steps``/``learning_rate`` override the theorem
    values, ``lemma`` ∈ {"auto", "convex", "strongly-convex", "best"}, ``gaussian`` ∈ {"auto",
    "zhang", "zhao", "analytic"} (used when δ > 0), ``huber_h``: a plain-hinge SVM is trained on
    the Huberised hinge with this h (:func:`dperm.privacy.perturbation.smooth_surrogate`); ``name`` (fixed by the
    registration) is the key errors and notes name.
    """
    return _fit_outpert(problem, privacy, rng, draws, name=name, row_bound=row_bound,
                        solution_bound=solution_bound, steps=steps, learning_rate=learning_rate,
                        lemma=lemma, gaussian=gaussian, huber_h=huber_h)


register_variant("outpert", of="outpert-gd", variant="correct", switches={"name": "outpert"}, rdp=selection_trial,
                 defaults={"steps": 50, "learning_rate": 1.0, "lemma": "convex"},
                 description="Lee & Kifer's OutPert baseline (T = 50, eta = 1: their code's values) made "
                             "correct: L from the enforced row bound, Lemma 2, valid Gaussian")


def fit_outpert_reference(problem, privacy: Privacy, rng, draws: int = 1, *, steps: int, learning_rate: float,
                          lipschitz: float = 1.0):
    """DP-AGD's ``outpert_gd``: T steps of w ← w − η(mean ∇ℓ + λw) on the rows as given, then
    N(0, σ²I) with σ = √(2 ln(2/δ))·(3·L·T·η/n)/ε, L = ``lipschitz`` taken on trust."""
    t0 = time.perf_counter()
    eps, delta = private_target(privacy, "outpert-reference")
    if delta == 0:
        raise ValueError("outpert-reference reproduces DP-AGD's code, which has only the Gaussian "
                         "branch: delta must be > 0; got delta=0 (use outpert-gd for epsilon-DP)")
    steps = _positive_int(steps, "steps")
    eta = _positive_float(learning_rate, "learning_rate", "the GD step size")
    L = _positive_float(lipschitz, "lipschitz", "the Lipschitz constant the code assumes")
    sensitivity = 3.0 * L * steps * eta / problem.n
    sigma = math.sqrt(2.0 * math.log(2.0 / delta)) * sensitivity / eps
    prep = time.perf_counter() - t0
    w_T, gd_seconds = gd_endpoint(problem, steps, eta)
    weights, noise_seconds = _release(w_T, "gaussian", sigma, rng, draws)
    return FitResult(
        weights=weights, epsilon_spent=eps, delta_spent=delta, adjacency="replace-one",
        grad_evals=float(steps), iterations=steps,
        seconds_per_draw=prep + gd_seconds + noise_seconds / draws,
        accounting="one release: output perturbation (lemma2 with L taken on trust), ln(2/delta) Gaussian",
        extra={"steps": steps, "learning_rate": eta, "sensitivity": sensitivity, "lemma": "lemma2",
               "noise": "gaussian-zhang-any-epsilon", "noise_scale": sigma, "lipschitz": L,
               "mu": problem.l2})


register_variant("outpert-reference",
                 domains={"steps": POSITIVE_INT, "learning_rate": POSITIVE, "lipschitz": POSITIVE},
                 needs=(finite_epsilon, positive_delta),
                 of="outpert", impl=fit_outpert_reference, dp_as_implemented=False,
                 audit=lambda: canary_audit("replace-one", epsilon=1.0, delta=1e-5, norm=100.0, runs=4000,
                                            loss=Huber(1.0), canary_label=1e6,
                                            name="a canary row longer than the Lipschitz constant assumes")(),
                 caveat="L = 1 whatever the row norms (docs/privacy.md#outpert-lipschitz), no smoothness check "
                        "(hinge allowed), ln(2/delta) Gaussian at every epsilon (docs/privacy.md#gaussian-range)",
                 description="DP-AGD's outpert_gd exactly: sens = 3*L*T*eta/n with L = 1")
