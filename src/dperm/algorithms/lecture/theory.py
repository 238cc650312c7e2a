"""Shared pieces of the DP-GD and DP-SGD of Wang's lecture notes (Lecture 15, Algorithms 2 and 3):
their noise calibrations (the notes' bounds, RDP and the tight PLD) and the projected noisy
(S)GD loop: DP-GD's ``draws`` chains in lockstep, DP-SGD's one-example chains each in blocks of
steps.

Notation: n rows, T steps, per-example gradients clipped to L (the notes' Lipschitz constant),
C = {‖w‖ ≤ R} the constraint set (``radius``; None: no projection), ‖C‖ = 2R its diameter.
Adjacency: replace-one throughout (the notes'). The regulariser λw of ``problem.l2`` is the same
on both neighbours and is added outside the noise (docs/privacy.md#outpert-regulariser).
"""

from __future__ import annotations

import math
from operator import mul

import numpy as np

from ...privacy import advanced_composition, advanced_composition_split, gaussian_sigma_classical, smallest_noise
from ...privacy import calibration_faults as faults
from ...privacy.pld import epsilon_sampled_gaussian_wor
from ...privacy.sgd_calibration import calibrate_noise_multiplier

STEP_SIZES = ("constant", "convex", "strongly-convex")
OUTPUTS = ("last", "average")


def gd_sigma_notes(epsilon: float, delta: float, steps: int, n: int, lipschitz: float) -> dict:
    """Lemma 15.1: σ² = 64 L² T ln(2/δ) ln(2.5T/δ)/(n²ε²), i.e. advanced composition's split
    (ε/(2√(2T ln(2/δ))), δ/(2T)) (Lemma 15.2) and the classical Gaussian (Lemma 15.3) at the
    replace-one sensitivity 2L/n of the mean gradient. Refused where the Gaussian's ε_step < 1 or
    the split's composition fails (:func:`advanced_composition_split` checks the total)."""
    eps_step, delta_step = advanced_composition_split(epsilon, delta, steps)
    sens = 2.0 * lipschitz / n
    sigma = gaussian_sigma_classical(eps_step, delta_step, sens)
    return {"sigma": sigma, "epsilon_step": eps_step, "delta_step": delta_step, "sensitivity": sens}


def sgd_min_steps(epsilon: float, delta: float, n: int) -> int:
    """Smallest T with n·ε_step < 1, ε_step = ε/(2√(2T ln(2/δ))): the notes' DP-SGD needs it (the
    base Gaussian of Lemma 15.4 runs at ε_b = n·ε_step, and Lemma 15.3 holds for ε_b < 1)."""
    return math.floor((n * epsilon) ** 2 / (8.0 * math.log(2.0 / delta))) + 1


def sgd_sigma_notes(epsilon: float, delta: float, steps: int, n: int, lipschitz: float) -> dict:
    """Lemma 15.5: σ² = 64 L² T ln(2/δ) ln(2.5T/(δn))/(n²ε²): the per-step split of Lemma 15.2,
    amplified linearly by sampling one row of n (ε_b = n·ε_step, δ_b = n·δ_step, Lemma 15.4 with
    ln(1 + (e^ε − 1)/n) ≈ ε/n), and the classical Gaussian at sensitivity 2L.

    Refused, with the smallest T that works, where the notes' own condition fails: ε_b ≥ 1
    (Lemma 15.3 is proven for ε < 1). The linear amplification is an approximation from below
    (ln(1 + (e^{ε_b} − 1)/n) > ε_b/n), so the valid chain is also run forwards on the σ: the
    exact amplification of the classical Gaussian's ε_b and advanced composition with the actual
    per-step ε (``certified_epsilon``); a σ the valid chain does not certify is refused too."""
    eps_step, delta_step = advanced_composition_split(epsilon, delta, steps)
    eps_base, delta_base = n * eps_step, n * delta_step
    if eps_base >= 1.0:
        raise ValueError(
            f"the notes' DP-SGD calibration needs the base Gaussian's epsilon n*epsilon_step < 1 (Lemma 15.3 "
            f"holds for epsilon < 1); with n = {n}, T = {steps}, epsilon = {epsilon:g}, delta = {delta:g} it is "
            f"{eps_base:.4g}: use at least T = {sgd_min_steps(epsilon, delta, n)} steps or the rdp accountant "
            "(docs/privacy.md#gaussian-range)")
    if delta_base >= 1.0:
        raise ValueError(f"the notes' DP-SGD calibration needs n*delta_step < 1; got {delta_base:.3g}")
    sens = 2.0 * lipschitz
    sigma = gaussian_sigma_classical(eps_base, delta_base, sens)
    actual = math.log1p(math.expm1(eps_base) / n)  # exact amplification of the base Gaussian's ε_b
    total, total_delta = advanced_composition(actual, delta_step, steps, delta / 2.0)
    if total > epsilon * (1 + 1e-9):
        raise ValueError(f"the notes' DP-SGD sigma is not certified by the exact amplification: the valid chain "
                         f"gives epsilon = {total:.4g} > {epsilon:g}; use a smaller epsilon or the rdp accountant")
    return {"sigma": sigma, "epsilon_step": eps_step, "delta_step": delta_step, "epsilon_base": eps_base,
            "delta_base": delta_base, "sensitivity": sens, "certified_epsilon": total,
            "certified_delta": total_delta}


def gd_sigma_accountant(epsilon: float, delta: float, steps: int, n: int, lipschitz: float,
                        accountant: str) -> dict:
    """σ of DP-GD by an accountant: the T-fold Gaussian mechanism (sampling rate 1) at the
    replace-one sensitivity 2L/n, noise multiplier z = σ/(2L/n) from
    :func:`.dp_sgd.calibrate_noise_multiplier` (``"rdp"``, or ``"pld"``: exact up to its grid)."""
    sens = 2.0 * lipschitz / n
    z = calibrate_noise_multiplier(float(epsilon), float(delta), 1.0, int(steps), accountant)
    return {"sigma": z * sens, "noise_multiplier": z, "sensitivity": sens}


def sgd_sigma_rdp(epsilon: float, delta: float, steps: int, n: int, lipschitz: float) -> dict:
    """σ of the notes' DP-SGD by RDP: one row of n drawn uniformly per step under replace-one
    (Wang, Balle & Kasiviswanathan 2019, as dp-accounting implements it), sensitivity 2L of the
    sampled gradient, z = σ/(2L) the smallest multiplier meeting (ε, δ) (to 10⁻⁴ relative)."""
    sens = 2.0 * lipschitz
    z = smallest_noise(lambda z: epsilon_sampled_gaussian_wor(n, 1, z, steps, delta), epsilon,
                       lo=math.log(0.05), hi=math.log(0.5), step=1.0, xtol=1e-4)
    return {"sigma": z * sens, "noise_multiplier": z, "sensitivity": sens}


def step_size(mode: str, t: int, *, learning_rate: float, radius: float | None, gradient_bound: float,
              alpha: float) -> float:
    """η_t for step t ≥ 1: ``constant``; ``convex`` η_t = ‖C‖/(G√t) (Lemma 15.6, G² a bound on the
    second moment of the noisy gradient, eq. 15.5); ``strongly-convex`` η_t = 1/(αt) (Lemma 15.7)."""
    if mode == "constant":
        return learning_rate
    if mode == "convex":
        return 2.0 * radius / (gradient_bound * math.sqrt(t))
    return 1.0 / (alpha * t)


def check_schedule(mode: str, output: str, radius, l2: float, learning_rate: float) -> None:
    if mode not in STEP_SIZES:
        raise ValueError(f"step_size must be one of {STEP_SIZES}; got step_size={mode!r}")
    if output not in OUTPUTS:
        raise ValueError(f"output must be one of {OUTPUTS}; got output={output!r}")
    if radius is not None and not radius > 0:
        raise ValueError(f"radius must be > 0 or None; got radius={radius!r}")
    if mode == "convex" and radius is None:
        raise ValueError("step_size='convex' needs radius=R (the step is 2R/(G*sqrt(t))); got radius=None")
    if mode == "strongly-convex" and not l2 > 0:
        raise ValueError(f"step_size='strongly-convex' needs l2 > 0 (alpha = l2); got l2={l2!r}")
    if mode == "constant" and not learning_rate > 0:
        raise ValueError(f"learning_rate must be > 0; got learning_rate={learning_rate!r}")


def _project(W: np.ndarray, radius: float | None) -> None:
    if radius is not None:
        norms = np.sqrt(np.einsum("ij,ij->i", W, W))
        scale = np.minimum(1.0, radius / np.maximum(norms, 1e-300))
        W *= scale[:, None]


ONE_BLOCK = 16  # one-example steps whose products are formed together (_one_example_chain)
ONE_CHAINS = 4  # up to this many one-example chains per privacy target run in blocks, more in lockstep


def _one_example_chain(problem, rng, x, acc, etas, sigma: float, limits: list, dphi, radius: float | None,
                       chunk: int) -> None:
    """One chain of the notes' projected noisy one-example SGD on a GLM, T = len(``etas``) steps
    θ_t = Π(a_t θ_{t−1} − η_t(c_t u_t + ξ_t)), a_t = 1 − η_tλ, u_t the drawn row,
    c_t = φ'(⟨θ_{t−1}, u_t⟩) clipped to ±``limits[i]`` for row i (clip/‖x_i‖), ξ_t ~ N(0, σ²I),
    η_t = ``etas[t − 1]``; ``dphi(z, i)`` is φ' for row i in plain Python
    (:func:`dperm.solvers._scalar_dphi`). ``x`` (θ_0) becomes θ_T in place, and Σ_{t<T} θ_t is
    added to ``acc`` unless it is None.

    The same draws as the step-by-step loop: per block of ``chunk`` steps the block's rows
    (``integers``), then its noise (``standard_normal``). The recursion runs :data:`ONE_BLOCK`
    steps at a time from the block's start θ₀, as :func:`dperm.solvers.glm_sgd_steps` does for
    noiseless SGD, with the noise as a second direction per step: with v_{2q} = u_q and
    v_{2q+1} = ξ_q, θ_q = γ_q(θ₀ + Σ_{j<2q} κ_j v_j), and

        h_q = ⟨θ_q, u_q⟩/γ_q,  m_q = ⟨θ_q, ξ_q⟩/γ_q   (from the products V·θ₀ and V·Vᵀ),
        κ_{2q} = −η_q c_q/(a_qγ_q),  κ_{2q+1} = −η_q/(a_qγ_q),
        N_{q+1} = ‖θ_q/γ_q + κ_{2q}u_q + κ_{2q+1}ξ_q‖²   (a scalar recursion),
        γ_{q+1} = a_qγ_q · min(1, radius/(|a_qγ_q|√N_{q+1})).

    Plain-Python arithmetic per step, no numpy call; the same operations as the loop up to
    rounding. A step with |a_q| < :data:`dperm.solvers.SGD_MIN_SHRINK` (η₁ = 1/(αt) at t = 1 with
    α = λ erases θ) runs on its own. A block ends early once γ falls below 10⁻¹⁵⁰ or N rises above
    10¹⁵⁰: where the noise dwarfs the ball, each projection shrinks γ by the ratio of the radius to
    the noise, and N ≈ radius²/γ² would overflow first."""
    from ...solvers import SGD_MIN_SHRINK

    X, n, p, lam = problem.X, problem.n, problem.p, float(problem.l2 or 0.0)
    etas = np.asarray(etas, dtype=float)
    shrink = 1.0 - etas * lam
    T = len(etas)
    alone = np.flatnonzero(np.abs(shrink) < SGD_MIN_SHRINK).tolist() + [T]  # steps run on their own, then T
    shrink, etas = shrink.tolist(), etas.tolist()
    cut = 0
    r2 = math.inf if radius is None else float(radius) ** 2
    sqrt = math.sqrt
    start = x
    V = np.empty((2 * ONE_BLOCK, p))
    for t0 in range(0, T, chunk):
        k = min(chunk, T - t0)
        rows = rng.integers(0, n, size=k)
        noise = rng.standard_normal((k, p))
        noise *= sigma
        U = X[rows]
        rows = rows.tolist()
        pos = 0
        while pos < k:
            t = t0 + pos  # steps t0 + pos + 1, ... of the chain (η, a indexed from 0)
            while alone[cut] < t:
                cut += 1
            if alone[cut] == t:  # a step that all but erases θ, on its own
                if acc is not None:
                    acc += x
                z = float(U[pos] @ x)
                lim = limits[rows[pos]]
                c = min(max(dphi(z, rows[pos]), -lim), lim)
                x = x - etas[t] * (c * U[pos] + lam * x + noise[pos])
                norm2 = float(x @ x)
                if norm2 > r2:
                    x *= radius / sqrt(norm2)
                pos += 1
                continue
            b = min(ONE_BLOCK, k - pos, alone[cut] - t)
            Vb = V[:2 * b]
            Vb[0::2] = U[pos:pos + b]
            Vb[1::2] = noise[pos:pos + b]
            base = (Vb @ x).tolist()
            gram = (Vb @ Vb.T).tolist()
            kappa, gam = [], [1.0]
            g, N = 1.0, float(x @ x)
            done = b
            for q in range(b):
                row = rows[pos + q]
                gh, gm = gram[2 * q], gram[2 * q + 1]
                h = base[2 * q] + sum(map(mul, gh, kappa))
                m = base[2 * q + 1] + sum(map(mul, gm, kappa))
                lim = limits[row]
                c = min(max(dphi(g * h, row), -lim), lim)
                eta = etas[t + q]
                ag = shrink[t + q] * g
                bu, bx = -eta * c / ag, -eta / ag
                N += 2.0 * (bu * h + bx * m + bu * bx * gh[2 * q + 1]) + bu * bu * gh[2 * q] + bx * bx * gm[2 * q + 1]
                g = ag
                if ag * ag * N > r2:  # ‖θ_{q+1}‖ before the projection, squared
                    g = ag * (radius / (abs(ag) * sqrt(N)))
                kappa += (bu, bx)
                gam.append(g)
                if abs(g) < 1e-150 or N > 1e150:  # a new block before γ underflows or N = ‖θ/γ‖² overflows
                    done = q + 1
                    break
            coef = np.array(kappa)
            if acc is not None:  # Σ_{q<done} θ_q = (Σ γ_q)θ₀ + Σ_j κ_j (Σ_{q>j} γ_q) v_j
                gk = np.array(gam[:done])
                tail = np.zeros(done)  # Σ_{j<q<done} γ_q for step j, summed from the end: not Σ_{q≥j} − γ_j,
                tail[:-1] = np.cumsum(gk[:0:-1])[::-1]  # which cancels where each γ is far below the last
                acc += gk.sum() * x + (np.repeat(tail, 2) * coef) @ Vb[:2 * done]
            x = gam[done] * (x + coef @ Vb[:2 * done])
            pos += done
    start[:] = x


def run_projected(problem, rngs, steps, *, batch: str, sigma, clip: float, mode: str,
                  learning_rate: float, radius: float | None, output: str, chunk: int = 1024,
                  blocked: bool = False) -> np.ndarray:
    """``len(rngs)`` independent chains of θ_t = Π_C(θ_{t−1} − η_t(g_t + λθ_{t−1} + N(0, σ²I))),
    θ_0 = 0; g_t the clipped mean gradient (``batch="full"``, DP-GD) or the clipped
    gradient of one row drawn uniformly from each chain's own generator (``batch="one"``, DP-SGD).
    Returns the last iterates θ_T or the averages (1/T) Σ_{t<T} θ_t, shape (draws, p).

    ``steps`` and ``sigma`` may be one value per chain (the privacy targets of a row run together:
    each chain keeps its own T, σ and, for ``mode="convex"``, its own step sizes η_t = ‖C‖/(G√t)
    with G from its σ). Each chain draws from its own generator only, per block of ``chunk`` of
    its own steps (its rows, then its noise) until its own T, so a chain's output is that of a run
    alone, to the bit. The chains run in lockstep: every elementwise operation on a chain's row
    is the one a lone run makes (the lockstep argument of :mod:`dperm.algorithms.dp_sgd.engine`),
    and the interpreter's cost of a step is shared by every chain still running. With
    ``blocked=True``, ``batch="one"`` and dense rows, each chain runs alone in blocks of steps
    instead (:func:`_one_example_chain`: no numpy call per step, the loop's arithmetic up to
    rounding), cheaper per chain-step than a lockstep of a few chains and dearer than one of
    many (docs/performance.md#lecture-blocked): the caller chooses by a count that does not
    change when targets run together. GLM losses only: clipping ∇ℓ_i = φ'(z_i)x_i to norm L is
    clipping φ' to ±L/‖x_i‖."""
    from ...losses import GLMLoss

    if not isinstance(problem.loss, GLMLoss):
        raise ValueError(f"the projected noisy (S)GD of the notes runs GLM losses only; got {problem.loss!r}")
    sigma = faults.noise_scale(np.asarray(sigma, dtype=float))  # the audit's mutants only (privacy.calibration_faults)
    n, p, lam, loss = problem.n, problem.p, problem.l2, problem.loss
    X, y = problem.X, problem.y
    with np.errstate(divide="ignore"):
        limit = clip / problem.row_norms  # inf where x_i = 0 (its gradient is 0)
    draws = len(rngs)
    T = np.broadcast_to(np.asarray(steps, dtype=np.int64), (draws,))
    sigmas = np.broadcast_to(np.asarray(sigma, dtype=float), (draws,))
    # chains in order of decreasing T: the chains still running at step t are a prefix
    order = np.argsort(-T, kind="stable")
    rngs = [rngs[i] for i in order]
    T, sigmas = T[order], sigmas[order]
    W = np.zeros((draws, p))
    total = np.zeros((draws, p)) if output == "average" else None
    # E‖noisy gradient‖² ≤ G² (15.5), per chain
    G = np.sqrt((clip + lam * (radius or 0.0)) ** 2 + p * sigmas ** 2)
    scale = sigmas[:, None]
    longest = int(T[0]) if draws else 0
    if batch == "one" and blocked and isinstance(X, np.ndarray):  # each chain on its own, in blocks of steps
        from ...solvers import _scalar_dphi

        limits, dphi = limit.tolist(), _scalar_dphi(loss, y)
        for d in range(draws):
            t = np.arange(1, int(T[d]) + 1)
            if mode == "convex":
                etas = 2.0 * radius / (G[d] * np.sqrt(t))
            else:
                etas = [step_size(mode, i, learning_rate=learning_rate, radius=radius, gradient_bound=0.0,
                                  alpha=lam) for i in t.tolist()]
            _one_example_chain(problem, rngs[d], W[d], None if total is None else total[d], etas, float(sigmas[d]),
                               limits, dphi, radius, chunk)
        longest = 0  # nothing left for the lockstep loop
    for t0 in range(0, longest, chunk):
        counts = np.clip(T - t0, 0, chunk)  # steps of this block, per chain
        live = int(np.count_nonzero(counts))
        k = int(counts[0])
        rows = np.zeros((k, live), dtype=np.int64)
        noise = np.zeros((k, live, p))  # past a shorter chain's T its rows stay 0 (unused)
        for d in range(live):  # this chain's rows, then its noise
            kd = int(counts[d])
            if batch == "one":
                rows[:kd, d] = rngs[d].integers(0, n, size=kd)
            noise[:kd, d] = rngs[d].standard_normal((kd, p))
        noise *= scale[:live]
        if batch == "one":
            Xc, yc, lc = X[rows], y[rows], limit[rows]  # (k, live, p), (k, live), (k, live)
        a = live
        for j in range(k):
            t = t0 + j + 1
            while a and T[a - 1] < t:  # the chains whose T is reached drop out
                a -= 1
            Wa = W[:a]
            if total is not None:
                total[:a] += Wa
            if batch == "full":
                dz = loss.dphi_overwrite(X @ Wa.T, y[:, None])  # (n, chains)
                np.clip(dz, -limit[:, None], limit[:, None], out=dz)
                g = (dz.T @ X) / n
            else:
                dz = loss.dphi_overwrite(np.einsum("dp,dp->d", Xc[j, :a], Wa), yc[j, :a])
                np.clip(dz, -lc[j, :a], lc[j, :a], out=dz)
                g = dz[:, None] * Xc[j, :a]
            if lam:
                g += lam * Wa
            g += noise[j, :a]
            if mode == "convex":
                g *= (2.0 * radius / (G[:a] * math.sqrt(t)))[:, None]
            else:
                g *= step_size(mode, t, learning_rate=learning_rate, radius=radius, gradient_bound=0.0, alpha=lam)
            Wa -= g
            _project(Wa, radius)
    out = np.empty_like(W)
    out[order] = total / T[:, None] if total is not None else W
    return out
