"""Non-private solvers with scipy-like signatures and ``OptimizeResult`` returns.

The objective is either a :class:`dperm.problem.Problem` or scipy-style callables: ``fun`` with
``jac=True`` (``fun`` returns ``(f, g)``) or ``jac`` a gradient callable. Stochastic solvers need
per-example access and take a ``Problem`` (anything with ``n``, ``batch_grad(w, rows)``).
GD and AGD are vectorised over draws: ``x0`` of shape ``(draws, p)`` runs every row at once.

Every result carries ``x``, ``fun``, ``jac``, ``grad_norm`` (‖∇F‖ at ``x``, recomputed there),
``nit``, ``n_grad_evals``, ``seconds``, ``success``, ``message``. ``n_grad_evals`` counts
*full-gradient equivalents*: per-example gradient evaluations divided by n, so one full
gradient is 1 and a mini-batch of b rows is b/n (for callables, one gradient call is 1).
``seconds`` is wall time of the iterations only; the closing evaluation of ``fun``/``grad_norm``
is a diagnostic and is counted in neither figure (except for L-BFGS, see there).
"""

from __future__ import annotations

import math
import time

import numpy as np
import scipy.linalg
from scipy.optimize import OptimizeResult, minimize
from scipy.sparse.linalg import LinearOperator, cg

from .losses import GLMLoss


def _objective(fun, jac):
    """(value_and_grad, grad) from a Problem or scipy-style ``fun``/``jac``."""
    if jac is None and hasattr(fun, "value_and_grad"):
        return fun.value_and_grad, fun.grad
    if jac is True:
        return fun, (lambda w: fun(w)[1])
    if callable(jac):
        return (lambda w: (fun(w), jac(w))), jac
    raise TypeError("pass a Problem, or fun with jac=True (fun returns (f, g)) or a gradient callable")


def _start(fun, x0):
    if x0 is None:
        if not hasattr(fun, "p"):
            raise TypeError("x0 is required unless the objective is a Problem")
        return np.zeros(fun.p)
    return np.array(x0, dtype=float)  # a copy: solvers update it in place


def _finish(value_and_grad, x, **fields):
    f, g = value_and_grad(x)
    fields.setdefault("success", True)
    return OptimizeResult(x=x, fun=f, jac=g, grad_norm=np.linalg.norm(g, axis=-1), **fields)


def _keeps(f, f_new, gn, gn_new):
    """Near an optimum F stops changing in floating point: a step is also worth keeping if it
    lowers ‖∇F‖ without raising F beyond rounding (the rule of every Newton method here).
    Elementwise on arrays (:func:`newton_draws`' problems), a bool on scalars."""
    return (gn_new < gn) & (f_new <= f + 8 * np.finfo(float).eps * np.abs(f))


NEWTON_MAX_P = 2_000  # explicit p × p Hessians (newton) up to this many coordinates
NEWTON_CHUNK = 16_384  # rows per block when forming Xᵀ diag(φ'') X (bounds the scratch memory)
SINGLE_CHUNK = 4_096  # rows per block of a single-precision Hessian (its float32 block stays in cache)


def newton_applies(problem) -> bool:
    """Whether :func:`newton` with :func:`glm_hessian` fits ``problem``: a smooth GLM loss of
    moderate dimension."""
    return (isinstance(problem.loss, GLMLoss) and getattr(problem.loss, "smooth", False)
            and problem.p <= NEWTON_MAX_P)


def glm_hessian(problem, w, shift: float = 0.0, single: bool = False):
    """∇²F(w) + shift·I = (1/n) Xᵀ diag(φ''(Xw)) X + (λ + shift) I for a GLM ``problem``,
    formed in row blocks (p² per row: for moderate p). With φ'' ≥ 0 (convex losses) a block is
    Sᵀ S with S = diag(√φ'') X, which BLAS forms as a symmetric rank-k update (half the products
    of a general one, about 30% less time at p ≈ 100), over the rows of non-zero curvature only.

    ``single``: each block's S and Sᵀ S in float32, summed in float64: half the time on Adult
    (36,000 × 105: 10.5 against 20 ms), entries within about 1e-7 of the largest. For Newton's
    *direction* only (:func:`newton`'s ``hessian``): the gradients that certify the answer stay
    float64, and :func:`newton` retries with the exact Hessian where a step from this one fails.
    Blocks of negative curvature are always float64. The margins Xw come from one product
    through the CSR copy of one-hot rows (:meth:`~dperm.problem.Problem.scores`), and S from the
    fold's kept float32 rows (:meth:`~dperm.problem.Problem.rows32`; from the float64 rows where
    none is kept): S = fl(x̃·fl(√φ'')), x̃ the float32 row, against fl(x·√φ'') from float64 rows,
    a rounding of the same size."""
    X, y, n = problem.X, problem.y, problem.n
    H = np.zeros((problem.p, problem.p))
    chunk = SINGLE_CHUNK if single else NEWTON_CHUNK
    if single:
        scratch = np.empty((min(chunk, n), problem.p), dtype=np.float32)
        X32 = problem.rows32(kept_only=True)
        curvature = problem.loss.d2phi(problem.scores(w), y)
    for start in range(0, n, chunk):
        Xb = X[start:start + chunk] if not single or X32 is None else X32[start:start + chunk]
        c = curvature[start:start + chunk] if single else problem.loss.d2phi(Xb @ w, y[start:start + chunk])
        if c.min(initial=0.0) >= 0.0:
            curved = np.flatnonzero(c)
            if curved.size < c.size:  # rows of zero curvature add nothing (a Huberised hinge
                Xb, c = Xb[curved], c[curved]  # outside its band: most rows of separable data)
            if single:
                root = np.sqrt(c) if X32 is None else np.sqrt(c).astype(np.float32)
                S = np.multiply(Xb, root[:, None], out=scratch[:c.size], casting="same_kind")
            else:
                S = Xb * np.sqrt(c)[:, None]
            H += S.T @ S
        else:
            Xb = X[start:start + chunk]  # float64 rows, whichever were read above
            H += (Xb.T * c) @ Xb
    H /= n
    H[np.diag_indices_from(H)] += problem.l2 + shift
    return H


def newton(value_and_grad, hessian, x0, gtol: float, max_iter: int = 200, exact_hessian=None):
    """Damped Newton with explicit Hessians ``hessian(x)`` (p × p); returns an OptimizeResult
    (x, fun, jac, grad_norm, nit, n_grad_evals).

    On ill-conditioned smooth GLMs (KDDCup99 at λ = 1e-5: nearly separable, 400k rows; ObjPert's
    perturbed objectives at small λ) L-BFGS needs hundreds to thousands of passes to reach
    ‖∇F‖ ≤ 1e-9; Newton needs a few Hessians of p² per row. Steps are backtracked to Armijo's
    condition, or kept by :func:`_keeps` near the optimum. A singular Hessian (λ = 0) is solved by
    least squares. Stops at ‖∇F‖ ≤ gtol, after ``max_iter`` steps, or when no step helps.

    ``exact_hessian``: where ``hessian`` is an approximation (:func:`glm_hessian` with
    ``single=True``), the exact one; a step from the approximate Hessian that finds no acceptable
    point down to t = 2⁻¹⁰ (a bad direction: the tiny steps below would only be kept by rounding)
    is tried again from the exact one, backtracked as far as ever, before Newton gives up. The
    answer is judged by ``value_and_grad`` alone either way (‖∇F‖ ≤ gtol), so the approximation
    moves the iterates, not the certificate.
    """
    x = np.array(x0, dtype=float)
    f, g = value_and_grad(x)
    evals, nit = 1, 0
    hessians = (hessian,) if exact_hessian is None else (hessian, exact_hessian)
    while nit < max_iter:
        gn = float(np.linalg.norm(g))
        if gn <= gtol:
            break
        for form in hessians:  # an approximate Hessian's step is backtracked less far
            t_min = 2.0 ** -10 if form is not hessians[-1] else 1e-12
            step, t, f_new, g_new, tried = _damped_step(value_and_grad, form(x), x, f, g, t_min)
            evals += tried
            if step is not None:
                break
        if step is None:
            break
        x, f, g = x + t * step, f_new, g_new
        nit += 1
    return OptimizeResult(x=x, fun=float(f), jac=g, grad_norm=float(np.linalg.norm(g)), nit=nit,
                          n_grad_evals=float(evals), success=bool(np.linalg.norm(g) <= gtol))


def glm_newton(problem, x0, gtol: float, *, value_and_grad=None, shift: float = 0.0, max_iter: int = 200):
    """:func:`newton` on a GLM ``problem`` (:func:`newton_applies`) whose Hessian is
    :func:`glm_hessian` with ``shift``: single-precision Hessians, the exact one where a step
    from those fails. ``value_and_grad``: the objective if not ``problem``'s own (ObjPert's
    perturbed one, whose Hessian is the problem's plus ``shift``·I)."""
    return newton(problem.value_and_grad if value_and_grad is None else value_and_grad,
                  lambda w: glm_hessian(problem, w, shift, single=True), x0, gtol, max_iter,
                  exact_hessian=lambda w: glm_hessian(problem, w, shift))


def _damped_step(value_and_grad, H, x, f, g, t_min=1e-12):
    """The Newton direction from ``H`` backtracked to Armijo's condition or :func:`_keeps`:
    (direction, t, F, ∇F at x + t·direction, evaluations), direction None if no t ≥ ``t_min``
    helps."""
    try:
        step = -scipy.linalg.solve(H, g, assume_a="pos")
    except (np.linalg.LinAlgError, scipy.linalg.LinAlgError):
        step = -np.linalg.lstsq(H, g, rcond=None)[0]
    gn, slope, t, evals = float(np.linalg.norm(g)), float(g @ step), 1.0, 0
    while t >= t_min:
        f_new, g_new = value_and_grad(x + t * step)
        evals += 1
        if f_new <= f + 1e-4 * t * slope or _keeps(f, f_new, gn, float(np.linalg.norm(g_new))):
            return step, t, f_new, g_new, evals
        t *= 0.5
    return None, None, None, None, evals


NEWTON_DRAWS_MAX = 4_096  # n·p up to which independent draws' Newton solves run in lockstep


def glm_hessians(problem, W, shift: float = 0.0) -> np.ndarray:
    """:func:`glm_hessian` (exact, float64) at every row of W (k, p): (k, p, p), in one product
    over all of them. For small problems (n·p ≤ :data:`NEWTON_DRAWS_MAX`), where a Hessian per
    call would be mostly the interpreter's work."""
    X, n = problem.X, problem.n
    C = problem.loss.d2phi(W @ X.T, problem.y)  # (k, n)
    H = np.matmul(X.T, C[:, :, None] * X)
    H /= n
    diagonal = np.arange(problem.p)
    H[:, diagonal, diagonal] += problem.l2 + shift
    return H


def newton_draws(value_and_grad, hessian, X0, gtol: float, max_iter: int = 200, group: int | None = None):
    """:func:`newton` with one (exact) Hessian form on k independent problems at once, one per
    row of X0 (k, p): ``value_and_grad(W, rows)`` gives (F (m,), ∇F (m, p)) of problems ``rows``
    at the rows of W, ``hessian(W, rows)`` their Hessians (m, p, p). Each problem follows
    :func:`newton`'s rule on its own: its Newton direction, backtracked from t = 1 by halves to
    Armijo's condition or :func:`_keeps`, down to t = 10⁻¹²; it stops at ‖∇F‖ ≤ gtol, after
    ``max_iter`` steps, or when no step helps. Each step is one call for every problem still
    running, so the interpreter's cost is shared (ObjPert's audit draws: 100,000 solves of
    n = 50, p = 1). Returns (X, F, ∇F, steps (k,), evaluations (k,)); a problem is certified
    where its ‖∇F‖ ≤ gtol, as with :func:`newton`. ``group``: at most this many problems at
    once, in consecutive groups (bounds the callables' temporaries, e.g. (group, n, p))."""
    X0 = np.asarray(X0, dtype=float)
    k = X0.shape[0]
    if group is not None and group < k:
        parts = [_newton_group(value_and_grad, hessian, X0[a:a + group], np.arange(a, min(a + group, k)), gtol,
                               max_iter) for a in range(0, k, group)]
        return tuple(np.concatenate(arrays) for arrays in zip(*parts))
    return _newton_group(value_and_grad, hessian, X0, np.arange(k), gtol, max_iter)


def _newton_group(value_and_grad, hessian, X0, ids, gtol, max_iter):
    """:func:`newton_draws` on the problems ``ids``, starting from the rows of X0."""
    X = np.array(X0, dtype=float)
    k = X.shape[0]
    F, G = value_and_grad(X, ids)
    evals, nit = np.ones(k), np.zeros(k, dtype=np.int64)
    running = np.ones(k, dtype=bool)
    while True:
        gn = np.linalg.norm(G, axis=1)
        running &= (gn > gtol) & (nit < max_iter)
        rows = np.flatnonzero(running)
        if not rows.size:
            break
        step = -_solve_many(hessian(X[rows], ids[rows]), G[rows])
        slope, base, norm0 = np.einsum("ij,ij->i", G[rows], step), F[rows], gn[rows]
        t = np.ones(rows.size)
        pending = np.arange(rows.size)
        while pending.size:
            trial = X[rows[pending]] + t[pending, None] * step[pending]
            f_new, g_new = value_and_grad(trial, ids[rows[pending]])
            evals[rows[pending]] += 1
            f0 = base[pending]
            kept = (f_new <= f0 + 1e-4 * t[pending] * slope[pending]) | _keeps(
                f0, f_new, norm0[pending], np.linalg.norm(g_new, axis=1))
            done = rows[pending[kept]]
            X[done], F[done], G[done] = trial[kept], f_new[kept], g_new[kept]
            nit[done] += 1
            pending = pending[~kept]
            t[pending] *= 0.5
            stuck = t[pending] < 1e-12  # no step helps: this problem stops where it is
            running[rows[pending[stuck]]] = False
            pending = pending[~stuck]
    return X, F, G, nit, evals


def _solve_many(H, G):
    """H⁻¹g for each of the stacked systems; least squares for one that is singular (λ = 0)."""
    try:
        return np.linalg.solve(H, G[:, :, None])[:, :, 0]
    except np.linalg.LinAlgError:
        out = np.empty_like(G)
        for i in range(G.shape[0]):
            try:
                out[i] = np.linalg.solve(H[i], G[i])
            except np.linalg.LinAlgError:
                out[i] = np.linalg.lstsq(H[i], G[i], rcond=None)[0]
        return out


def _newton_polish(value_and_grad, hessp, x, f, g, gtol, max_steps=8, cg_iter=100):
    """Newton-CG steps from x, each kept only if it lowers ‖∇F‖ without raising F beyond
    rounding; returns (x, n_evals).

    L-BFGS-B's line search compares F values, so it stalls once F changes by less than
    eps·|F| (at ‖∇F‖ ≈ 1e-9 on logistic problems); Newton steps are judged mainly on the
    gradient and keep going to ‖∇F‖ ≈ 1e-16.
    """
    gn, evals = np.linalg.norm(g), [0]

    def counted_hvp(x, v):
        evals[0] += 1  # one HVP costs about one gradient (two passes over X)
        return hessp(x, v)

    for _ in range(max_steps):
        if gn <= gtol:
            break
        H = LinearOperator((x.size, x.size), matvec=lambda v, x=x: counted_hvp(x, v), dtype=float)
        d, _ = cg(H, -g, rtol=1e-6, maxiter=cg_iter)
        x_new = x + d
        f_new, g_new = value_and_grad(x_new)
        evals[0] += 1
        gn_new = np.linalg.norm(g_new)
        if not _keeps(f, f_new, gn, gn_new):
            break
        x, f, g, gn = x_new, f_new, g_new, gn_new
    return x, evals[0]


def certificate(grad_norm, mu, x=None, radius=None):
    """(bound on F(x) − F*, bound on ‖x − x*‖) from ‖∇F(x)‖ alone.

    μ-strongly convex F: ‖g‖²/(2μ) and ‖g‖/μ (Nesterov 2004, Thm 2.1.10; both tight for a
    quadratic along its flattest direction). μ = 0, convex, ‖x*‖ ≤ radius: F(x) − F* ≤
    ⟨g, x − x*⟩ ≤ ‖g‖(‖x‖ + radius), distance unbounded. Otherwise (inf, inf).
    """
    if mu > 0:
        return grad_norm**2 / (2.0 * mu), grad_norm / mu
    if radius is not None and x is not None:
        return grad_norm * (np.linalg.norm(x) + radius), np.inf
    return np.inf, np.inf


def _runaway(window: int):
    """(objective wrapper, callback) for :func:`lbfgs`'s ``stall`` stop: the callback raises
    StopIteration once, over the last ``window`` iterations, the best ‖∇F‖ has not halved while
    ‖x‖ has more than doubled — the iterates running off along a direction in which F keeps
    decreasing without a minimum (the unregularised logistic loss on separable rows), where no
    iteration budget reaches the gradient tolerance."""
    state = {"g": np.inf, "best": np.inf, "history": []}

    def track(value_and_grad):
        def wrapped(x):
            f, g = value_and_grad(x)
            state["g"] = float(np.linalg.norm(g))  # L-BFGS-B's last evaluation is the accepted point
            return f, g
        return wrapped

    def callback(intermediate_result):
        state["best"] = min(state["best"], state["g"])
        history = state["history"]
        history.append((state["best"], float(np.linalg.norm(intermediate_result.x))))
        if len(history) > window:
            best_then, norm_then = history[-window - 1]
            best_now, norm_now = history[-1]
            if best_now > 0.5 * best_then and norm_now > 2.0 * norm_then:
                raise StopIteration

    return track, callback


def lbfgs(fun, x0=None, *, jac=None, hessp=None, mu=None, gtol=1e-10, ftol=0.0, max_iter=20_000,
          maxcor=30, radius=None, polish=True, stall: int | None = None):
    """Minimise F with scipy's L-BFGS-B and certify the answer (reference optimum for metrics).

    Stops when ‖∇F‖₂ ≤ ``gtol`` (scipy's ∞-norm test is set to gtol/√p, which implies it).
    If L-BFGS-B stalls above gtol and Hessian-vector products are available (``hessp``, or a
    Problem whose loss is smooth), a few Newton-CG steps finish the job (``_newton_polish``;
    ``polish=False`` turns this off).
    Certificate, from ‖g‖ = ‖∇F(x)‖ recomputed at x: if F is μ-strongly convex (μ defaults to
    ``Problem.strong_convexity``), ``gap_bound`` = ‖g‖²/(2μ) ≥ F(x) − F* and ``dist_bound`` =
    ‖g‖/μ ≥ ‖x − x*‖ (Nesterov 2004, Thm 2.1.10). If μ = 0, convexity still gives
    F(x) − F* ≤ ‖g‖(‖x‖ + D) when ``radius`` D ≥ ‖x*‖ is supplied; otherwise nothing is
    certified beyond stationarity and ``gap_bound`` is inf. ``n_grad_evals`` = scipy's function
    evaluations + polishing gradients and HVPs (one HVP ≈ one gradient) + the certifying one.
    ``success`` means the gradient test was met; the certificate is reported either way.
    ``ftol`` > 0 also stops on scipy's relative-decrease test: the only workable stop for a
    non-smooth objective (the hinge), whose (sub)gradient never vanishes; such an answer is a good
    point, not a certified optimum. ``stall`` (iterations) stops a run that cannot converge: the
    best ‖∇F‖ has not halved over the last ``stall`` iterations while ‖x‖ more than doubled
    (:func:`_runaway`; F has no minimiser the iterates approach); the message says so, and
    ``success`` is false.
    """
    value_and_grad, _ = _objective(fun, jac)
    x = _start(fun, x0)
    if x.ndim != 1:
        raise ValueError("lbfgs solves one draw at a time (x0 must be 1-D)")
    mu = (getattr(fun, "strong_convexity", 0.0) if mu is None else mu) or 0.0
    options = {"maxiter": max_iter, "maxfun": 2 * max_iter, "maxcor": maxcor,
               "ftol": ftol, "gtol": gtol / np.sqrt(x.size)}
    t0 = time.perf_counter()
    callback, objective = None, value_and_grad
    if stall is not None:
        track, callback = _runaway(int(stall))
        objective = track(value_and_grad)
    res = minimize(objective, x, jac=True, method="L-BFGS-B", options=options, callback=callback)
    if stall is not None and res.status == 99:  # the callback's StopIteration
        res.message = (f"stopped after {res.nit} iterations: the best gradient norm did not halve in {stall} "
                       "while the iterates' norm more than doubled (no minimiser within reach)")
    x, evals = res.x, res.nfev
    if hessp is None and jac is None and getattr(getattr(fun, "loss", None), "smooth", False):
        hessp = fun.hvp
    if polish and hessp is not None and np.linalg.norm(res.jac) > gtol:
        x, extra = _newton_polish(value_and_grad, hessp, x, res.fun, res.jac, gtol)
        evals += extra
    seconds = time.perf_counter() - t0
    out = _finish(value_and_grad, x, nit=res.nit, n_grad_evals=evals + 1, seconds=seconds)
    gn = float(out.grad_norm)
    out.success = gn <= gtol
    out.gap_bound, out.dist_bound = certificate(gn, mu, out.x, radius)
    out.message = f"{res.message}; ‖∇F‖ = {gn:.3g}, F − F* ≤ {out.gap_bound:.3g} (μ = {mu:g})"
    return out


def gradient_descent(fun, x0=None, *, step, n_iter, jac=None, return_path=False):
    """Fixed-step GD x_{t+1} = x_t − η∇F(x_t), t = 0..T−1 (OutPert-GD's inner loop, Zhang et al.
    2017, Alg. 1).

    Returns the T-th iterate; ``path`` (T+1, *x0.shape) when ``return_path``. ``seconds`` is the
    time of the T gradient steps (what OutPert-GD reports as its runtime).
    """
    value_and_grad, grad = _objective(fun, jac)
    x = _start(fun, x0)
    path = np.empty((n_iter + 1,) + x.shape) if return_path else None
    t0 = time.perf_counter()
    for t in range(n_iter):
        if path is not None:
            path[t] = x
        x -= step * grad(x)
    seconds = time.perf_counter() - t0
    if path is not None:
        path[n_iter] = x
    return _finish(value_and_grad, x, nit=n_iter, n_grad_evals=float(n_iter), seconds=seconds,
                   path=path, message=f"{n_iter} fixed-step iterations")


def _project(x, radius):
    """x (or each row of x) projected onto the ball {‖x‖ ≤ radius}, in place."""
    norms = np.linalg.norm(x, axis=-1, keepdims=x.ndim > 1)
    x *= np.minimum(1.0, radius / np.maximum(norms, np.finfo(float).tiny))
    return x


def nesterov(fun, x0=None, *, n_iter, smoothness=None, mu=None, jac=None, return_path=False, radius=None):
    """Nesterov's accelerated gradient, x_{t+1} = y_t − ∇F(y_t)/β (projected onto the ball
    {‖x‖ ≤ ``radius``} when given: the gradient-mapping form for a simple closed convex set,
    Nesterov 2004 §2.2.4, which keeps both rates below with F* the minimum over the ball).

    μ > 0 (strongly convex; Lowy & Razaviyayn, Alg. 4, Nesterov 2004 scheme (2.2.22)): constant
    momentum y_t = x_t + q(x_t − x_{t−1}), q = (√κ − 1)/(√κ + 1), κ = β/μ, giving
    F(x_T) − F* ≤ (1 − 1/√κ)^T (F(x_0) − F* + μ‖x_0 − x*‖²/2).
    μ = 0 (convex; Beck & Teboulle 2009, FISTA without prox): y_t = x_t + ((a_t − 1)/a_{t+1})
    (x_t − x_{t−1}), a_{t+1} = (1 + √(1 + 4a_t²))/2, a_1 = 1, giving 2β‖x_0 − x*‖²/(T + 1)².
    β and μ default to ``Problem.smoothness()`` and ``Problem.strong_convexity``.
    """
    value_and_grad, grad = _objective(fun, jac)
    beta = fun.smoothness() if smoothness is None else smoothness
    mu = (getattr(fun, "strong_convexity", 0.0) if mu is None else mu) or 0.0
    x = _start(fun, x0)
    x_prev = x.copy()
    path = np.empty((n_iter + 1,) + x.shape) if return_path else None
    q = (np.sqrt(beta / mu) - 1.0) / (np.sqrt(beta / mu) + 1.0) if mu > 0 else None
    a = 1.0
    t0 = time.perf_counter()
    for t in range(n_iter):
        if path is not None:
            path[t] = x
        if q is None:
            a_next = 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * a * a))
            momentum, a = (a - 1.0) / a_next, a_next
        else:
            momentum = q
        y = x + momentum * (x - x_prev)
        x_prev = x
        x = y - grad(y) / beta
        if radius is not None:
            _project(x, radius)
    seconds = time.perf_counter() - t0
    if path is not None:
        path[n_iter] = x
    form = f"strongly convex (q = {q:.4g})" if q is not None else "convex (FISTA momentum)"
    return _finish(value_and_grad, x, nit=n_iter, n_grad_evals=float(n_iter), seconds=seconds,
                   path=path, message=f"{n_iter} accelerated iterations, {form}")


def sgd(problem, x0=None, *, rng, step, n_iter, batch_size=1, replace=True, average=None, radius=None):
    """Mini-batch SGD x_{t+1} = Π(x_t − η_t ĝ_t), ĝ_t = mean ∇ℓ_i over the batch + λx_t.

    ``step``: a float or a callable t ↦ η_t (t = 0..T−1). ``replace=True`` draws each batch
    uniformly with replacement; ``False`` walks through a fresh random permutation per epoch
    (a final partial batch is dropped). ``radius`` projects onto {‖x‖ ≤ radius}. ``average``:
    None (last iterate), ``"uniform"`` (mean of x_1..x_T), ``"weighted"`` (Σ 2t x_t/(T(T+1))
    over the iterates after each step, Lacoste-Julien, Schmidt & Bach 2012) or ``"evaluated"``
    (the same weights on the points the gradients are taken at, x_0..x_{T−1}: Bubeck 2015,
    Thm 6.2, whose bound E F(x̄) − F* ≤ 2G²/(μ(T + 1)) holds for steps η_t = 2/(μ(t + 2)),
    t = 0..T−1, with E‖ĝ‖² ≤ G²; Lowy & Razaviyayn, Alg. 2). ``n_grad_evals`` = T·b/n.
    One row per step drawn with replacement on a GLM runs in blocks (:func:`glm_sgd_steps`): the
    same rows, the same iterates up to rounding.
    """
    if average not in (None, "uniform", "weighted", "evaluated"):
        raise ValueError(f"average must be None, 'uniform', 'weighted' or 'evaluated', got {average!r}")
    n, b = problem.n, int(batch_size)
    if not 1 <= b <= n:
        raise ValueError(f"batch_size must be in [1, n = {n}], got {batch_size!r}")
    eta = step if callable(step) else (lambda t: step)
    x = _start(problem, x0)
    if b == 1 and replace and glm_sgd_applies(problem):
        t0 = time.perf_counter()
        t = np.arange(n_iter)
        weights = 2.0 * (t + 1) / (n_iter * (n_iter + 1)) if average in ("evaluated", "weighted") \
            else np.full(n_iter, 1.0 / n_iter)
        x, avg = glm_sgd_steps(problem, x, rng, [eta(i) for i in range(n_iter)], radius=radius,
                               before=weights if average == "evaluated" else None,
                               after=weights if average in ("uniform", "weighted") else None)
        return _finish(problem.value_and_grad, x if average is None else avg, nit=n_iter, n_grad_evals=n_iter / n,
                       seconds=time.perf_counter() - t0,
                       message=f"{n_iter} SGD steps, batch 1, replace=True")
    avg = np.zeros_like(x)
    perm, pos = None, n
    t0 = time.perf_counter()
    for t in range(n_iter):
        if replace:
            rows = rng.integers(n, size=b)
        else:
            if pos + b > n:
                perm, pos = rng.permutation(n), 0
            rows, pos = perm[pos : pos + b], pos + b
        if average == "evaluated":
            avg += (2.0 * (t + 1) / (n_iter * (n_iter + 1))) * x
        x -= eta(t) * problem.batch_grad(x, rows)
        if radius is not None:
            norm = np.linalg.norm(x)
            if norm > radius:
                x *= radius / norm
        if average in ("uniform", "weighted"):
            weight = 1.0 / n_iter if average == "uniform" else 2.0 * (t + 1) / (n_iter * (n_iter + 1))
            avg += weight * x
    seconds = time.perf_counter() - t0
    x_out = x if average is None else avg
    return _finish(problem.value_and_grad, x_out, nit=n_iter, n_grad_evals=n_iter * b / n,
                   seconds=seconds, message=f"{n_iter} SGD steps, batch {b}, replace={replace}")


SGD_BLOCK = 128  # batch-1 SGD steps on a GLM whose row products are formed together (glm_sgd_steps)
SGD_SUB = 16  # steps of a block whose recursion runs in plain Python between matrix-vector products
SGD_MIN_SHRINK = 1e-3  # a step with |1 − ηλ| below this (it all but erases the iterate) runs on its own


def _scalar_dphi(loss, y):
    """f(z, i) = φ'(z) for row i, as plain-Python arithmetic where the loss is one of the logistic, the
    hinge and the Huberised hinge (the same operations as their numpy kernels), else one numpy call."""
    name = getattr(loss, "name", "")
    if name == "logistic":
        targets = np.asarray(loss.target01(y), dtype=float).tolist()
        exp = math.exp
        return lambda z, i: (1.0 / (1.0 + exp(-z)) if z > -700.0 else 0.0) - targets[i]
    labels = np.asarray(y, dtype=float).tolist()
    if name == "hinge":
        return lambda z, i: -labels[i] if labels[i] * z < 1.0 else 0.0
    if name == "huber-hinge":
        lead, scale = 1.0 + loss.h, 0.5 / loss.h

        def huber_hinge(z, i):
            u = (lead - labels[i] * z) * scale
            return -((0.0 if u < 0.0 else 1.0 if u > 1.0 else u) * labels[i])

        return huber_hinge
    return lambda z, i: float(loss.dphi(np.array([z]), y[i:i + 1])[0])


def glm_sgd_applies(problem) -> bool:
    """Whether :func:`glm_sgd_steps` can run ``problem``'s batch-1 SGD: a GLM loss (``dphi``) on dense
    rows, the gradient of row i being φ'(⟨x, x_i⟩)x_i + λx (:meth:`dperm.problem.Problem.batch_grad`)."""
    X = getattr(problem, "X", None)
    return hasattr(problem.loss, "dphi") and isinstance(X, np.ndarray) and X.ndim == 2


def glm_sgd_steps(problem, x, rng, etas, *, radius=None, before=None, after=None):
    """Run len(``etas``) steps of SGD with one row per step, drawn with replacement, on a GLM
    (:func:`glm_sgd_applies`): x_{t+1} = Π(x_t − η_t(φ'(⟨x_t, u_t⟩)u_t + λx_t)), Π the projection
    onto {‖x‖ ≤ ``radius``} when given. Returns (x_T, Σ_t before_t·x_t + Σ_t after_t·x_{t+1}), the
    sum over the steps given weights (0 where None); ``x`` is not changed.

    The rows come from one ``rng.integers(n, size=T)`` call: the same stream as one size-1 draw per
    step (the step-by-step loop of :func:`sgd`). Each step is a scalar recursion: over a block of
    :data:`SGD_BLOCK` steps from x₀ on rows u_q, the iterate is x_q = γ_q(x₀ + Σ_{j<q} β_j u_j) with

        h_q = ⟨x₀, u_q⟩ + Σ_{j<q} β_j⟨u_j, u_q⟩ = ⟨x_q, u_q⟩/γ_q,
        β_q = −η_q φ'(γ_q h_q)/(a_q γ_q),  a_q = 1 − η_q λ,
        N_{q+1} = N_q + β_q(2h_q + β_q‖u_q‖²) = ‖x_q/γ_q + β_q u_q‖²,
        γ_{q+1} = a_q γ_q · min(1, radius/(|a_q γ_q|√N_{q+1})),

    whose terms come from two block products (the rows against x₀ and their Gram matrix). As in
    :func:`_katyusha_glm_epoch`, every :data:`SGD_SUB` steps take the sum over the block's earlier
    steps in one matrix-vector product and the rest in plain Python. A step with |a_q| below
    :data:`SGD_MIN_SHRINK` (the first step of steps 2/(μ(t + 2)) with λ = μ: a₀ = 0) would make
    β_q blow up; it runs as a plain step between blocks, and a block also ends early (at a
    sub-block's end) once γ falls below 10⁻¹⁵⁰, before it can underflow. The same arithmetic as the
    step-by-step form up to rounding, and the same rows. Where the first steps are huge against the
    iterate (η_t = 2/(μ(t + 2)) with μ = 10⁻⁴) the path itself amplifies rounding, that of either
    form (docs/performance.md#sgd-blocked)."""
    X, n, lam = problem.X, problem.n, float(problem.l2 or 0.0)
    total = len(etas)
    etas = np.asarray(etas, dtype=float)
    shrink = 1.0 - etas * lam  # a_t
    steps = etas.tolist()
    before = np.zeros(total) if before is None else np.asarray(before, dtype=float)
    after = np.zeros(total) if after is None else np.asarray(after, dtype=float)
    averaged = bool(before.any() or after.any())
    idx = rng.integers(n, size=total)
    alone = np.flatnonzero(np.abs(shrink) < SGD_MIN_SHRINK).tolist() + [total]  # steps run on their own
    shrink = shrink.tolist()
    dphi = _scalar_dphi(problem.loss, problem.y)
    x = np.array(x, dtype=float)
    acc = np.zeros_like(x)
    size, sub, sqrt = max(1, int(SGD_BLOCK)), max(1, int(SGD_SUB)), math.sqrt
    r2 = math.inf if radius is None else float(radius) ** 2
    pos = cut = 0
    while pos < total:
        while alone[cut] < pos:
            cut += 1
        rows = idx[pos:min(pos + size, alone[cut])]
        b = rows.size
        U = X[rows]
        base, G = U @ x, U @ U.T
        row_list = rows.tolist()
        beta = np.zeros(b)
        gam = [1.0]  # γ_0..γ_k
        g, N, k = 1.0, float(x @ x), b
        for s0 in range(0, b, sub):
            s1 = min(b, s0 + sub)
            pre = (base[s0:s1] + G[s0:s1, :s0] @ beta[:s0]).tolist()
            inner = G[s0:s1, s0:s1].tolist()
            done = []
            for r, h in enumerate(pre):
                q = s0 + r
                ag = shrink[pos + q] * g
                w_r = inner[r]
                for j in range(r):
                    h += w_r[j] * done[j]
                bq = -steps[pos + q] * dphi(g * h, row_list[q]) / ag
                N += bq * (2.0 * h + bq * w_r[r])
                g = ag
                if ag * ag * N > r2:  # ‖x_{q+1}‖ before the projection, squared
                    g = ag * (radius / (abs(ag) * sqrt(N)))
                done.append(bq)
                gam.append(g)
            beta[s0:s1] = done
            if abs(g) < 1e-150:  # start a new block before γ can underflow
                k = s1
                break
        if k:
            if averaged:
                gk = np.asarray(gam)
                vb, va = before[pos:pos + k] * gk[:k], after[pos:pos + k] * gk[1:]
                tail = (np.cumsum(vb[::-1])[::-1] - vb) + np.cumsum(va[::-1])[::-1]  # Σ_{q>j} vb + Σ_{q≥j} va
                acc += (vb.sum() + va.sum()) * x + (tail * beta[:k]) @ U[:k]
            x = gam[k] * (x + beta[:k] @ U[:k])
        pos += k
        if pos == alone[cut] < total:  # a step that all but erases the iterate, on its own
            acc += before[pos] * x
            x = x - steps[pos] * problem.batch_grad(x, idx[pos:pos + 1])
            if radius is not None:
                norm = np.linalg.norm(x)
                if norm > radius:
                    x *= radius / norm
            acc += after[pos] * x
            pos += 1
    return x, acc


def _component_difference(problem):
    """Return (snapshot(x̃) → (∇f(x̃), d), diff(x, i, d) = ∇f_i(x) − ∇f_i(x̃), per-row cost)."""
    loss, X, y = problem.loss, problem.X, problem.y
    if hasattr(loss, "dphi"):
        # GLM: ∇f_i(x) = φ'(⟨x, x_i⟩)x_i, so the snapshot's φ'(z̃) is kept and each inner step
        # evaluates one new per-example gradient instead of two.
        def snapshot(xt):
            d = loss.dphi(X @ xt, y)
            return d @ X / problem.n, d

        def diff(x, i, d):
            return (loss.dphi(X[i : i + 1] @ x, y[i : i + 1])[0] - d[i]) * X[i]

        return snapshot, diff, 1
    rows = lambda i: (X[i : i + 1], y[i : i + 1])  # noqa: E731

    def snapshot(xt):
        return loss.grad(xt, X, y), xt.copy()

    def diff(x, i, xt):
        return loss.per_example_grad(x, *rows(i))[0] - loss.per_example_grad(xt, *rows(i))[0]

    return snapshot, diff, 2


KATYUSHA_BLOCK = 128  # inner steps whose row products are formed together (_katyusha_glm_epoch)
KATYUSHA_SUB = 16  # steps of a block whose recursion runs in plain Python between matrix-vector products


def _katyusha_tables(tau1, tau2, a, sigma, block):
    """What every epoch of a Katyusha run on a GLM shares (:func:`_katyusha_glm_epoch`): the
    3 × 3 update M, k, e, α and, for t = 0..L, M^t, Σ_{t'<t} M^t', e·M^t, e·Σ M^t', M^t k, and the
    strictly lower-triangular Toeplitz H[q, j] = α e·M^{q−1−j}k (L = ``block``). e's last entry is 0,
    so e·M^t and e·Σ M^t' have a zero last entry too (M's last column is (0, 0, sh)): only their
    first two are kept, against the rows z and y."""
    sh = 1.0 / (1.0 + a * sigma)
    c3 = 1.0 - tau1 - tau2
    M = np.array([[sh, 0.0, 0.0], [tau1 * sh, c3, 0.0], [tau1 * sh, c3, sh]])
    k = np.array([1.0, tau1, tau1])
    e = np.array([tau1, c3, 0.0])
    L = block
    powers = np.empty((L + 1, 3, 3))  # M^t
    sums = np.empty((L + 1, 3, 3))  # Σ_{t'<t} M^t'
    powers[0], sums[0] = np.eye(3), 0.0
    for t in range(L):
        powers[t + 1] = M @ powers[t]
        sums[t + 1] = sums[t] + powers[t]
    e_pow = e @ powers
    lag = np.subtract.outer(np.arange(L), np.arange(L)) - 1  # q − 1 − j
    h = e_pow @ k
    coef = np.hstack([e_pow[:, :2], (e @ sums)[:, :2]])  # (L+1, 4) against [z; y; B_z; B_y]·u
    return {"alpha": a * sh, "L": L, "powers": powers, "sums": sums, "coef": coef, "pow_k": powers @ k,
            "H": (a * sh) * np.where(lag >= 0, h[np.maximum(lag, 0)], 0.0)}


def _katyusha_glm_epoch(problem, xt, zy, rng, *, m, tau1, tau2, weights, tables, dphi_at):
    """One Katyusha epoch for a GLM loss, ∇f_i(x) = φ'(⟨x, x_i⟩)x_i, from the snapshot ``xt`` and
    the rows z, y of ``zy`` (which carry over between epochs); returns (new snapshot, [z; y]).

    The epoch is linear in its state given the scalars c_k = φ'(⟨x_{k+1}, x_i⟩) − φ'(⟨x̃, x_i⟩):
    with sh = 1/(1 + aσ), A = a·sh·∇f(x̃), K = a·sh·c_k and Q the weighted sum of the y's scaled
    by the current weight (Q' = Q/(1 + aσ) + y', so Σ_j (1 + aσ)^j y_{j+1} = Q at the end),

        z' = sh·z − A − K·x_i,
        y' = x + τ₁(z' − z) = τ₁·sh·z + c₃·y + τ₂x̃ − τ₁A − τ₁K·x_i,   c₃ = 1 − τ₁ − τ₂,
        Q' = Q/(1 + aσ) + y',

    i.e. S' = M·S + B − α c_k (k x_iᵀ) for S = [z; y; Q] (3 × p), a fixed 3 × 3 M, a fixed B,
    α = a·sh and k = (1, τ₁, τ₁); and ⟨x_{k+1}, x_i⟩ = e·(S x_i) + τ₂⟨x̃, x_i⟩ with
    e = (τ₁, c₃, 0).

    Unrolled over a block of L steps q = 0, 1, … from S₀ on rows u_q (U, L × p; L from
    :func:`_katyusha_tables`):

        S_q = M^q S₀ + (Σ_{t<q} M^t) B − α Σ_{j<q} c_j M^{q−1−j} k u_jᵀ,

    so the only sequential work of step q is one scalar recursion,

        s_q = e·M^q (S₀u_q) + e·(Σ_{t<q} M^t)(B u_q) + τ₂⟨x̃, u_q⟩ − α Σ_{j<q} c_j (e·M^{q−1−j}k)⟨u_j, u_q⟩,

    whose terms come from three block products (S₀Uᵀ, BUᵀ and the Gram UUᵀ), and the block's end
    state is one more (its c's against U). Within a block, every :data:`KATYUSHA_SUB` steps take
    the sum over the earlier steps of the block in one matrix-vector product, and the few terms
    inside the sub-block in plain Python: no numpy call per step. The same arithmetic as the
    step-by-step form up to rounding, and the same random indices."""
    loss, X, y_lab, n = problem.loss, problem.X, problem.y, problem.n
    sub = KATYUSHA_SUB
    T = tables
    alpha, L, H = T["alpha"], T["L"], T["H"]
    scores = X @ xt
    d = loss.dphi(scores, y_lab)
    A = alpha * (d @ X / n)
    B = np.vstack([-A, tau2 * xt - tau1 * A, tau2 * xt - tau1 * A])
    S = np.vstack([zy, np.zeros_like(xt)])
    logistic = getattr(loss, "name", "") == "logistic"
    shift = loss.target01(y_lab) + d if logistic else d  # c = φ'(s) − shift_i (logistic: σ(s) − t_i − d_i)
    exp = math.exp
    idx = rng.integers(n, size=m)
    for start in range(0, m, L):
        rows = idx[start:start + L]
        b = rows.size
        U = X[rows]
        base = np.einsum("qr,rq->q", T["coef"][:b], np.vstack([S[:2], B[:2]]) @ U.T) + tau2 * scores[rows]
        W = H[:b, :b] * (U @ U.T)  # W[q, j] = α (e·M^{q−1−j}k) ⟨u_j, u_q⟩, j < q (the Gram is symmetric)
        c = np.zeros(b)
        targets, row_list = shift[rows].tolist(), rows.tolist()
        for s0 in range(0, b, sub):
            s1 = min(b, s0 + sub)
            pre = (base[s0:s1] - W[s0:s1, :s0] @ c[:s0]).tolist()  # the block's earlier steps
            inner = W[s0:s1, s0:s1].tolist()
            done = []
            for r, acc in enumerate(pre):
                w_r = inner[r]
                for j in range(r):
                    acc -= w_r[j] * done[j]
                if logistic:
                    phi1 = 1.0 / (1.0 + exp(-acc)) if acc > -700.0 else 0.0
                else:
                    phi1 = dphi_at(acc, row_list[s0 + r])
                done.append(phi1 - targets[s0 + r])
            c[s0:s1] = done
        S = T["powers"][b] @ S + T["sums"][b] @ B - alpha * (T["pow_k"][b - 1::-1] * c[:, None]).T @ U
    return S[2] / weights.sum(), S[:2].copy()


def katyusha(problem, x0=None, *, rng, n_epochs, smoothness=None, mu=None, inner=None, callback=None):
    """Katyusha (Allen-Zhu 2018) on F = f + ψ, f = mean unregularised loss,
    ψ = (μ/2)‖x‖², option II for y; snapshot = (1 + aμ)^j-weighted average of the epoch's y.

    L_K (``smoothness``) defaults to the loss's per-example β(R); μ (σ_K) to ``problem.l2``,
    which must be > 0. m = ``inner`` (default 2n), τ₂ = ½, τ₁ = min(√(mμ/(3L_K)), ½),
    a = 1/(3τ₁L_K). Accuracy holds **in expectation only** (docs/privacy.md#blackbox-expectation):
    not a certificate. ``n_grad_evals`` per epoch = 1 (snapshot) + m·c/n, c = 1 for GLMs (snapshot
    φ' cached), 2 otherwise; ``nit`` = epochs. ``callback(x̃)`` is called with each epoch's
    snapshot; a true return ends the run there (a measurement's early stop, not a privacy rule).
    """
    L = problem.loss.smoothness(problem.radius) if smoothness is None else smoothness
    sigma = problem.l2 if mu is None else mu
    if not sigma > 0:
        raise ValueError("katyusha needs a strongly convex regulariser (μ > 0)")
    n = problem.n
    m = 2 * n if inner is None else int(inner)
    tau2 = 0.5
    tau1 = min(np.sqrt(m * sigma / (3.0 * L)), 0.5)
    a = 1.0 / (3.0 * tau1 * L)
    shrink = 1.0 / (1.0 + a * sigma)
    # (1 + aσ)^j grows geometrically; scale by (1 + aσ)^{−(m−1)} so weights stay ≤ 1.
    weights = np.exp((np.arange(m) - (m - 1)) * np.log1p(a * sigma))
    xt = _start(problem, x0)
    if hasattr(problem.loss, "dphi"):
        zy = np.vstack([xt, xt])  # z and y carry over from epoch to epoch
        tables = _katyusha_tables(tau1, tau2, a, sigma, max(1, min(int(KATYUSHA_BLOCK), m)))
        dphi_at = _scalar_dphi(problem.loss, problem.y)  # the logistic's is inlined in the epoch
        t0 = time.perf_counter()
        for epoch in range(n_epochs):
            xt, zy = _katyusha_glm_epoch(problem, xt, zy, rng, m=m, tau1=tau1, tau2=tau2, weights=weights,
                                         tables=tables, dphi_at=dphi_at)
            if callback is not None and callback(xt):
                n_epochs = epoch + 1
                break
        seconds = time.perf_counter() - t0
        return _finish(problem.value_and_grad, xt, nit=n_epochs, n_grad_evals=n_epochs * (1.0 + m / n),
                       seconds=seconds,
                       message=f"{n_epochs} Katyusha epochs (m = {m}); accuracy in expectation only")
    snapshot, diff, per_row = _component_difference(problem)
    y, z = xt.copy(), xt.copy()
    t0 = time.perf_counter()
    for epoch in range(n_epochs):
        gbar, cache = snapshot(xt)
        acc = np.zeros_like(xt)
        for j, i in enumerate(rng.integers(n, size=m)):
            x = tau1 * z + tau2 * xt + (1.0 - tau1 - tau2) * y
            g = gbar + diff(x, i, cache)
            z_new = (z - a * g) * shrink  # prox of ψ: argmin ⟨g, ·⟩ + ‖· − z‖²/(2a) + ψ
            y = x + tau1 * (z_new - z)
            z = z_new
            acc += weights[j] * y
        xt = acc / weights.sum()
        if callback is not None and callback(xt):
            n_epochs = epoch + 1
            break
    seconds = time.perf_counter() - t0
    return _finish(problem.value_and_grad, xt, nit=n_epochs,
                   n_grad_evals=n_epochs * (1.0 + m * per_row / n), seconds=seconds,
                   message=f"{n_epochs} Katyusha epochs (m = {m}); accuracy in expectation only")
