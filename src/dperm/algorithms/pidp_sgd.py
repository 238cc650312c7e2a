"""PIDP-SGD as published (Kang et al., Algorithm 1 and Theorem 5): a reference variant only.

**Not differentially private as described** (docs/privacy.md#pidp-sgd): a step that passes the
noisy "contribution" test is taken without noise, releasing a deterministic function of the
sampled example. There is no correct base: this is registered as ``pidp-sgd-reference`` with
``dp_as_implemented = False`` and is labelled so in every record, table and figure.

Algorithm (batch 1), T = ``steps`` split into R = ``rounds`` global rounds of T_local = ⌈T/R⌉:

1. θ̃: a (near-)optimal model from a **non-private** solve (``start: nonprivate``: L-BFGS/Newton
   on F + (ζ₀/2)‖θ‖², the MLP from a public Glorot initialisation), projected onto ‖θ‖ ≤ r
   (``start: zero`` starts from 0 instead; the audit uses it to isolate the noise-free branch;
   ``start: optimum`` takes the split's non-private optimum the optimum job solved, when the
   protocol provides it: :func:`start_point`).
2. Each round: H = ∇²F(θ^(g)_r) + ζ₀I (ζ₀ = ``hessian_shift``; F includes λ), inverted once.
3. Each local step: z_t uniform; influence c = H⁻¹·clip_G(∇ℓ(θ^(g)_r; z_t))/n at the round's
   global iterate; c^(o) = c + E·sign(c), E = (2βG + C_H·G²/ζ)/(ζ²n²) (Theorem 4, ζ = λ + ζ₀,
   β = ``smoothness``, C_H = ``hessian_lipschitz``); c_t = 2c^(o) + N(0, σ_c²I),
   σ_c = 2√2·√(ln(1.25R/δ₂))·G·R/(nζε₂) (the proof's c' = 2√2).
4. Lines 10–11 (the jump "to line 10" read as line 11, docs/deviations.md#pidp-inconsistencies):
   with A = 2r·e^{ε₁}δ₁, no noise iff every |c_t,i| < A/(e^{ε₁} − 1) and
   ln(A/(A − (e^{ε₁} − 1)|c_t,i|)) ≤ 2ε₁ (together: max_i |c_t,i| ≤ 2rδ₁(1 + e^{−ε₁})).
5. Step: θ ← Π_r(θ − α(clip_G(∇ℓ(θ; z_t)) + b)), b = 0 on a noise-free step, else
   b ~ N(0, σ²G²I) with σ the noise multiplier of ``dp-sgd``'s accountant
   (:func:`.dp_sgd.calibrate_noise`) for T steps at rate 1/n and (ε₁, δ₁) (the paper's
   asymptotic constant is unspecified; docs/deviations.md#pidp-unknowns).

ε₁ = (1 − ``test_share``)·ε = 3ε/4, ε₂ = ε/4, δ₁ = δ₂ = δ/2. Adjacency as claimed: replace-one
(Remark 6). Accounting as claimed: (ε₁ + ε₂, δ₁ + δ₂) by Theorem 5, which does not hold.
``extra["noise_free_fraction"]`` is the fraction of the T steps taken without noise (per draw).

Logistic regression: the exact Hessian, formed and inverted once per round. MLP: the full
Hessian (≈(d + 1)² parameters) is too large to invert per round; c is computed on the **output
layer** (w₂, b₂) only, from that block of the Hessian, H_out = (1/n)Σ σ'(o_i)[s_i; 1][s_i; 1]ᵀ +
(λ + ζ₀)I (exact for that block: the model is a GLM in the hidden features), and taken as 0 on
the hidden layer (the last-layer practice of influence functions, Koh & Liang 2017). The noise
b^(c) still covers every coordinate: on the zero block the test is the event that m′ iid
N(0, σ_c²) all fall under the threshold, drawn as one Bernoulli of probability
(2Φ(thr/σ_c) − 1)^{m′} (the same law as drawing them; c_t is never released).
docs/deviations.md#pidp-unknowns and tests/test_alg_pidp_sgd.py compare it with the exact solve.

Lockstep: the draws and, through :func:`fit_pidp_settings`, the ε of a row run as chains
advanced together (one gather and a few batched products per step); each chain draws its
examples and noise from its own generator, so a chain's output is the same as alone.
"""

from __future__ import annotations

import hashlib
import math

import numpy as np
from scipy.special import expit, ndtr

from .. import solvers
from ..losses import MLP, GLMLoss
from ..privacy.perturbation import private_target
from ..privacy.sgd_calibration import calibrate_noise
from .audit_cases import AuditCase, canary_problems
from .base import FitResult, Privacy, draw_rngs
from .registry import register

_STARTS: dict = {}
_STARTS_KEPT = 8
_CHUNK = 256


def _digest(problem, *extra) -> str:
    h = hashlib.blake2b(digest_size=16)
    h.update(problem.rows_digest().encode())  # X hashed once per training fold
    h.update(np.ascontiguousarray(problem.y).view(np.uint8))
    h.update(repr((type(problem.loss).__name__, sorted(vars(problem.loss).items()), problem.l2, extra)).encode())
    return h.hexdigest()


OPTIMUM_KEY = "optimum_solution"  # Problem.shared: the split's non-private optimum (start: optimum)


def start_point(problem, *, start: str, shift: float, radius: float, start_iterations: int) -> np.ndarray:
    """θ̃ (step 1 of the module docstring), projected onto ‖θ‖ ≤ r; cached per data and settings
    within a process (the ε of a row share it: it does not depend on ε or the seed).

    ``start="optimum"``: θ̃ is the split's non-private optimum that the protocol placed in the
    training fold's shared store (``problem.shared[OPTIMUM_KEY]``, from the optimum job's
    :func:`dperm.optimum.write_solutions`): for the MLP the best of the multi-start L-BFGS solves
    of F (no ζ₀ shift), for a GLM the certified minimiser of F — one solve per split serves the
    optimum and PIDP-SGD instead of two."""
    if start == "zero":
        return np.zeros(problem.p)
    if start == "optimum":
        given = (problem.shared or {}).get(OPTIMUM_KEY)
        if given is None:
            raise ValueError("start='optimum' needs the split's non-private optimum in the training fold's shared "
                             f"store (problem.shared[{OPTIMUM_KEY!r}]): the protocol places it from the optimum "
                             "job's solutions (dperm.optimum.write_solutions)")
        if np.shape(given) != (problem.p,):
            raise ValueError(f"the given optimum has shape {np.shape(given)}; the model has {problem.p} parameters")
        return _project(np.array(given, dtype=float)[None], radius)[0]
    if start != "nonprivate":
        raise ValueError(f"start must be 'nonprivate', 'optimum' or 'zero'; got start={start!r}")
    key = _digest(problem, shift, start_iterations)
    if key not in _STARTS:
        shifted = _shifted(problem, shift)
        if isinstance(problem.loss, MLP):
            x0 = problem.loss.init(np.random.default_rng(0), problem.X.shape[1])
            x = solvers.lbfgs(shifted, x0, gtol=1e-6, max_iter=start_iterations, polish=False).x
        else:
            x = solvers.lbfgs(shifted, np.zeros(problem.p), gtol=1e-8, max_iter=start_iterations).x
        _STARTS[key] = x
        while len(_STARTS) > _STARTS_KEPT:
            _STARTS.pop(next(iter(_STARTS)))
    return _project(_STARTS[key].copy()[None], radius)[0]


def _shifted(problem, shift):
    from ..problem import Problem

    return Problem(problem.X, problem.y, problem.loss, problem.l2 + shift, problem.row_norms, problem.shared)


def _project(W, radius):
    norms = np.linalg.norm(W, axis=1, keepdims=True)
    return W * np.minimum(1.0, radius / np.maximum(norms, 1e-300))


def _clip_scale(norms, clip):
    """min(1, C/‖g‖) per row (1 for a zero gradient or C = inf)."""
    return np.where(norms > clip, clip / np.maximum(norms, 1e-300), 1.0)


class _GLMModel:
    """Logistic regression (any GLM loss): exact Hessian per round, gradients per chain."""

    def __init__(self, problem, shift):
        self.problem, self.shift = problem, shift
        self.X, self.y = problem.X, problem.y
        self.loss = problem.loss

    def round_start(self, theta):
        """H⁻¹ per chain at the global iterates ``theta`` (k, p): one factorisation each."""
        return np.stack([np.linalg.inv(solvers.glm_hessian(self.problem, w, self.shift)) for w in theta])

    def grads(self, theta, idx, clip):
        x, y = self.X[idx], self.y[idx]
        z = np.einsum("kp,kp->k", theta, x)
        g = self.loss.dphi(z, y)[:, None] * x
        return g * _clip_scale(np.linalg.norm(g, axis=1), clip)[:, None]

    def influence(self, hinv, theta_g, idx, clip):
        """(c on the coordinates it covers, slice of them): the whole vector here."""
        g = self.grads(theta_g, idx, clip)
        return np.einsum("kij,kj->ki", hinv, g) / self.problem.n, slice(0, self.problem.p)


class _MLPModel:
    """The MLP: output-layer block influence (module docstring), batch-1 gradients per chain."""

    def __init__(self, problem, shift):
        self.problem, self.shift = problem, shift
        self.X = problem.X
        self.t = (problem.y > 0).astype(float)
        self.d = problem.X.shape[1]
        self.h = problem.loss.width(self.d)
        hd = self.h * self.d
        self.out = slice(hd + self.h, problem.p)  # w₂ and b₂

    def _unpack(self, theta):
        k, h, d = theta.shape[0], self.h, self.d
        hd = h * d
        return (theta[:, :hd].reshape(k, h, d), theta[:, hd:hd + h], theta[:, hd + h:hd + 2 * h], theta[:, -1])

    def round_start(self, theta):
        out = []
        n = self.problem.n
        lam = self.problem.l2 + self.shift
        for w in theta:
            W1, b1, w2, b2 = self._unpack(w[None])
            H = np.zeros((self.h + 1, self.h + 1))
            for start in range(0, n, 8192):
                S = np.tanh(self.X[start:start + 8192] @ W1[0].T + b1[0])
                o = S @ w2[0] + b2[0]
                sig = expit(o)
                F = np.hstack([S, np.ones((S.shape[0], 1))]) * np.sqrt(sig * (1.0 - sig))[:, None]
                H += F.T @ F
            H /= n
            H += lam * np.eye(self.h + 1)
            out.append(np.linalg.inv(H))
        return np.stack(out)

    def _forward(self, theta, idx):
        W1, b1, w2, b2 = self._unpack(theta)
        x = self.X[idx]
        S = np.tanh(np.einsum("khd,kd->kh", W1, x) + b1)
        o = np.einsum("kh,kh->k", S, w2) + b2
        dO = expit(o) - self.t[idx]
        return x, S, w2, dO

    def grads(self, theta, idx, clip):
        x, S, w2, dO = self._forward(theta, idx)
        dA = dO[:, None] * w2 * (1.0 - S * S)
        sq = np.einsum("kd,kd->k", x, x)
        norm = np.sqrt(np.einsum("kh,kh->k", dA, dA) * (sq + 1.0) + dO * dO * (np.einsum("kh,kh->k", S, S) + 1.0))
        scale = _clip_scale(norm, clip)
        dA *= scale[:, None]
        dO = dO * scale
        k = theta.shape[0]
        return np.concatenate([(dA[:, :, None] * x[:, None, :]).reshape(k, -1), dA, dO[:, None] * S, dO[:, None]],
                              axis=1)

    def influence(self, hinv, theta_g, idx, clip):
        x, S, w2, dO = self._forward(theta_g, idx)
        dA = dO[:, None] * w2 * (1.0 - S * S)
        sq = np.einsum("kd,kd->k", x, x)
        norm = np.sqrt(np.einsum("kh,kh->k", dA, dA) * (sq + 1.0) + dO * dO * (np.einsum("kh,kh->k", S, S) + 1.0))
        g_out = np.hstack([S, np.ones((S.shape[0], 1))]) * (dO * _clip_scale(norm, clip))[:, None]
        return np.einsum("kij,kj->ki", hinv, g_out) / self.problem.n, self.out


def noise_free_test(c_t, epsilon1, delta1, radius):
    """Algorithm 1 lines 10–11 for each row of ``c_t`` (k, m), ε₁ and δ₁ scalars or (k,):
    True where no noise is added."""
    epsilon1 = np.broadcast_to(np.asarray(epsilon1, dtype=float), c_t.shape[:1])[:, None]
    delta1 = np.broadcast_to(np.asarray(delta1, dtype=float), c_t.shape[:1])[:, None]
    A = 2.0 * radius * np.exp(epsilon1) * delta1
    k = np.expm1(epsilon1)
    a = np.abs(c_t)
    first = np.all(a < A / k, axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        second = np.all(np.log(A / (A - k * np.minimum(a, A / k))) <= 2.0 * epsilon1, axis=1)
    return first & second


def noise_free_threshold(epsilon1, delta1, radius):
    """The simplified threshold 2rδ₁(1 + e^{−ε₁}) on max_i |c_t,i|."""
    return 2.0 * radius * delta1 * (1.0 + math.exp(-epsilon1))


def contribution_noise(*, epsilon2, delta2, rounds, clip, n, zeta):
    """σ_c = 2√2·√(ln(1.25R/δ₂))·G·R/(nζε₂) (Kang et al., proof of Theorem 5)."""
    return 2.0 * math.sqrt(2.0) * math.sqrt(math.log(1.25 * rounds / delta2)) * clip * rounds / (n * zeta * epsilon2)


def run_chains(problem, targets, rngs, *, steps, rounds, learning_rate, clip, radius, hessian_shift, test_share,
               smoothness, hessian_lipschitz, start, start_iterations):
    """One chain per (privacy target, generator); returns (weights (k, p), noise-free counts (k,),
    per-chain constants)."""
    n, p = problem.n, problem.p
    model = _MLPModel(problem, hessian_shift) if isinstance(problem.loss, MLP) else _GLMModel(problem, hessian_shift)
    if not isinstance(problem.loss, (MLP, GLMLoss)):
        raise ValueError(f"pidp-sgd-reference supports GLM losses and the MLP; got {problem.loss!r}")
    k = len(rngs)
    zeta = problem.l2 + hessian_shift
    E = (2.0 * smoothness * clip + hessian_lipschitz * clip**2 / zeta) / (zeta**2 * n**2)
    eps1 = np.array([(1.0 - test_share) * t.epsilon for t in targets])
    eps2 = np.array([test_share * t.epsilon for t in targets])
    delta1 = np.array([t.delta / 2.0 for t in targets])
    sigma_c = np.array([contribution_noise(epsilon2=e2, delta2=d1, rounds=rounds, clip=clip, n=n, zeta=zeta)
                        for e2, d1 in zip(eps2, delta1)])
    sigma = np.array([calibrate_noise(Privacy(e1, d1), 1.0 / n, steps, algorithm="pidp-sgd-reference")
                      .noise_multiplier for e1, d1 in zip(eps1, delta1)])
    threshold = np.array([noise_free_threshold(e1, d1, radius) for e1, d1 in zip(eps1, delta1)])
    theta0 = start_point(problem, start=start, shift=hessian_shift, radius=radius, start_iterations=start_iterations)
    theta = np.repeat(theta0[None], k, axis=0)
    free = np.zeros(k, dtype=np.int64)
    local = math.ceil(steps / rounds)
    t = 0
    while t < steps:
        theta_g = theta.copy()
        hinv = model.round_start(theta_g)
        end = min(steps, t + local)
        while t < end:
            m = min(_CHUNK, end - t)
            idx = np.stack([rng.integers(0, n, size=m) for rng in rngs], axis=1)  # (m, k)
            for j in range(m):
                c, covered = model.influence(hinv, theta_g, idx[j], clip)
                width = c.shape[1]
                c_t = 2.0 * (c + E * np.sign(c)) + sigma_c[:, None] * np.stack([r.standard_normal(width) for r in rngs])
                ok = noise_free_test(c_t, eps1, delta1, radius)
                rest = p - width
                if rest:  # the coordinates whose c is 0: all m′ noises under the threshold at once
                    prob = (2.0 * ndtr(threshold / sigma_c) - 1.0) ** rest
                    ok &= np.array([r.random() for r in rngs]) < prob
                g = model.grads(theta, idx[j], clip)
                for i in np.flatnonzero(~ok):
                    g[i] += sigma[i] * clip * rngs[i].standard_normal(p)
                theta -= learning_rate * g
                theta = _project(theta, radius)
                free += ok
                t += 1
    return theta, free, {"sigma_c": sigma_c, "noise_multiplier": sigma, "threshold": threshold,
                         "error_bound": E, "zeta": zeta, "covered": covered}


def _check(problem, steps, rounds, learning_rate, clip, radius, hessian_shift, test_share):
    for name, value in (("steps", steps), ("rounds", rounds)):
        if isinstance(value, bool) or not (isinstance(value, int) and value >= 1):
            raise ValueError(f"{name} must be a positive integer; got {name}={value!r}")
    for name, value in (("learning_rate", learning_rate), ("clip", clip), ("radius", radius)):
        if not (math.isfinite(value) and value > 0):
            raise ValueError(f"{name} must be a finite number > 0; got {name}={value!r}")
    if not hessian_shift > 0:
        raise ValueError(f"hessian_shift must be > 0; got {hessian_shift!r}")
    if not 0 < test_share < 1:
        raise ValueError(f"test_share must be in (0, 1); got {test_share!r}")


def _results(problem, targets, rngs_per_target, draws, hyper):
    _check(problem, hyper["steps"], hyper["rounds"], hyper["learning_rate"], hyper["clip"], hyper["radius"],
           hyper["hessian_shift"], hyper["test_share"])
    for target in targets:
        private_target(target, "pidp-sgd-reference")
        if target.delta <= 0:
            raise ValueError("pidp-sgd-reference needs delta > 0 (Theorem 5 is an (epsilon, delta) claim)")
    chains = [(i, child) for i, rng in enumerate(rngs_per_target) for child in draw_rngs(rng, draws)]
    W, free, const = run_chains(problem, [targets[i] for i, _ in chains], [c for _, c in chains], **hyper)
    out = []
    for i, target in enumerate(targets):
        rows = [j for j, (owner, _) in enumerate(chains) if owner == i]
        out.append(FitResult(
            weights=W[rows], epsilon_spent=target.epsilon, delta_spent=target.delta, adjacency="replace-one",
            grad_evals=hyper["steps"] / problem.n, iterations=hyper["steps"],
            notes=["not DP as described (docs/privacy.md#pidp-sgd): noise-free steps after a data-dependent test"],
            accounting="claimed by the paper's Theorem 5: (3eps/4 + eps/4, delta/2 + delta/2); does not hold",
            extra={"noise_free_fraction": free[rows] / hyper["steps"], "sigma_c": float(const["sigma_c"][rows[0]]),
                   "noise_multiplier": float(const["noise_multiplier"][rows[0]]),
                   "threshold": float(const["threshold"][rows[0]]), "error_bound": float(const["error_bound"]),
                   "zeta": float(const["zeta"]), "rounds": hyper["rounds"], "steps": hyper["steps"]}))
    return out


def fit_pidp_settings(problem, privacies, rngs, draws: int = 1, **hyper):
    """Every ε of a row at once (chains in lockstep); result i has the law of a lone fit."""
    return _results(problem, list(privacies), list(rngs), draws, hyper)


def _audit() -> list[AuditCase]:
    """Neighbours on which the noise-free branch shows the differing row: every row of D is zero
    but the first coordinate (so its gradient is 0 on the canary coordinate c), D′ swaps a row
    for the unit canary on c. With a public start at 0 and a threshold far above σ_c (large r,
    small G), steps are noise-free: on D, w_c stays exactly 0; on D′ it moves whenever the canary
    is sampled (probability 1 − (1 − 1/n)^T ≈ 0.64 for T = n)."""
    d, d_prime, c = canary_problems("replace-one", n=20, p=3)
    hyper = {"steps": 20, "rounds": 1, "learning_rate": 1.0, "clip": 1e-3, "radius": 1000.0, "hessian_shift": 1.0,
             "start": "zero"}
    return [AuditCase(name="noise-free steps reveal the canary (w_c != 0)", d=d, d_prime=d_prime,
                      privacy=Privacy(1.0, 1e-5), hyper=hyper,
                      statistic=lambda W, c=c: np.abs(np.asarray(W)[:, c]), runs=2000)]


@register("pidp-sgd-reference", variant="reference", dp_as_implemented=False, settings=fit_pidp_settings,
          audit=_audit,
          caveat="not DP as described: steps that pass a noisy influence test are taken without noise "
                 "(docs/privacy.md#pidp-sgd); no correct variant exists",
          description="Kang et al. Algorithm 1 (PIDP-SGD) as published, batch 1, influence-function test")
def fit_pidp_sgd_reference(problem, privacy: Privacy, rng, draws: int = 1, *, steps: int = 10_000, rounds: int = 5,
                           learning_rate: float = 0.1, clip: float = 1.0, radius: float = 1.0,
                           hessian_shift: float = 1e-3, test_share: float = 0.25, smoothness: float = 0.25,
                           hessian_lipschitz: float = 0.1, start: str = "nonprivate", start_iterations: int = 200):
    """Kang et al.'s Algorithm 1 (module docstring)."""
    hyper = dict(steps=steps, rounds=rounds, learning_rate=learning_rate, clip=clip, radius=radius,
                 hessian_shift=hessian_shift, test_share=test_share, smoothness=smoothness,
                 hessian_lipschitz=hessian_lipschitz, start=start, start_iterations=start_iterations)
    return _results(problem, [privacy], [rng], draws, hyper)[0]
