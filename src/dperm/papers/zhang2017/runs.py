"""Runs that are not table cells: RRPSGD on the MLP (its metric ‖∇F(w_R)‖² lives in the fit's
``extra``, which cell records do not keep) and the runtime runs at the theorems' settings.

Seeds come from :func:`dperm.protocol.derive_seed` over the names, as for cells. CPU time is
``time.process_time()`` of this process around the fit (the job pins BLAS to one thread, so it
is the compute of one run); wall time is recorded beside it.
"""

from __future__ import annotations

import math
import time

import numpy as np
import pandas as pd

from ...protocol import build_problem, derive_seed, format_epsilon

RRPSGD_COLUMNS = ["dataset", "model", "algorithm", "noise", "epsilon", "delta", "draw", "seed", "grad_norm_sq",
                  "grad_norm_sq_init", "utility_bound", "rounds", "max_steps", "learning_rate", "noise_std",
                  "objective", "accuracy", "cpu_seconds_per_draw", "notes"]
RUNTIME_COLUMNS = ["dataset", "model", "mu", "algorithm", "epsilon", "delta", "run", "seed", "steps",
                   "steps_theorem", "cpu_seconds", "wall_seconds", "seconds_per_draw", "us_per_step",
                   "excess_risk", "notes"]


def _timed_fit(algo, problem, privacy, seed, **hyper):
    rng = np.random.default_rng(seed)
    c0, w0 = time.process_time(), time.perf_counter()
    result = algo.fit(problem, privacy, rng, draws=1, **hyper)
    return result, time.process_time() - c0, time.perf_counter() - w0


def run_rrpsgd(cfg: dict, arrays: dict, noise: str, epsilon: float, seed: int) -> pd.DataFrame:
    """``cfg["draws"]`` RRPSGD runs at one (noise, ε) on ``cfg["dataset"]``; one row per run."""
    from ...algorithms import Privacy, get_algorithm

    spec = {"model": cfg["model"]}
    problem = build_problem(spec, arrays)
    loss, draws, delta = problem.loss, int(cfg["draws"]), float(cfg["delta"])
    s = derive_seed(seed, "zhang2017", "rrpsgd", cfg["dataset"], noise, format_epsilon(epsilon))
    c0 = time.process_time()
    fit = get_algorithm("rrpsgd").fit(problem, Privacy(float(epsilon), delta), np.random.default_rng(s),
                                      draws=draws, noise=noise, **cfg.get("hyper", {}))
    cpu = (time.process_time() - c0) / draws
    # reference: ‖∇F‖² at the public random initialisation (independent inits, same for every ε)
    init_rng = np.random.default_rng(derive_seed(seed, "zhang2017", "rrpsgd-init", cfg["dataset"]))
    inits = np.stack([loss.init(init_rng, problem.X.shape[1]) for _ in range(draws)]) if hasattr(loss, "init") \
        else np.zeros((1, problem.p))
    g0 = problem.grad(inits)
    init_norm = float(np.mean(np.einsum("ij,ij->i", g0, g0)))
    extra = fit.extra
    per = lambda v: np.broadcast_to(np.asarray(v, dtype=float), (draws,))  # noqa: E731
    accuracy = np.broadcast_to(loss.accuracy(fit.weights, problem.X, problem.y), (draws,)) \
        if hasattr(loss, "accuracy") else np.full(draws, np.nan)
    return pd.DataFrame({
        "dataset": cfg["dataset"], "model": cfg["model"].get("name", cfg["model"]["loss"]), "algorithm": "rrpsgd",
        "noise": noise, "epsilon": float(epsilon), "delta": delta, "draw": np.arange(draws), "seed": s,
        "grad_norm_sq": extra["grad_norm_sq"], "grad_norm_sq_init": init_norm, "utility_bound": per(extra["utility_bound"]),
        "rounds": extra["rounds"], "max_steps": extra["max_steps"], "learning_rate": per(extra["learning_rate"]),
        "noise_std": extra["noise_std"], "objective": per(problem.loss.value(fit.weights, problem.X, problem.y)),
        "accuracy": accuracy, "cpu_seconds_per_draw": cpu, "notes": "; ".join(fit.notes)}, columns=RRPSGD_COLUMNS)


def rrpsgd_table(records: pd.DataFrame) -> pd.DataFrame:
    from scipy import stats

    rows = []
    for (noise, eps), g in records.groupby(["noise", "epsilon"], sort=True):
        v = g["grad_norm_sq"].to_numpy(float)
        half = stats.t.ppf(0.975, len(v) - 1) * v.std(ddof=1) / math.sqrt(len(v)) if len(v) > 1 else np.nan
        rows.append({"noise": noise, "epsilon": eps, "runs": len(v), "grad_norm_sq_mean": v.mean(),
                     "grad_norm_sq_ci95": half, "grad_norm_sq_median": float(np.median(v)),
                     "theorem5_bound": g["utility_bound"].mean(), "grad_norm_sq_at_init": g["grad_norm_sq_init"].iloc[0],
                     "noise_std": g["noise_std"].iloc[0], "learning_rate": g["learning_rate"].mean(),
                     "rounds_mean": g["rounds"].mean(), "max_steps": int(g["max_steps"].iloc[0]),
                     "objective_mean": g["objective"].mean(), "accuracy_mean": g["accuracy"].mean(),
                     "cpu_seconds_per_run": g["cpu_seconds_per_draw"].mean()})
    return pd.DataFrame(rows)


def run_runtime(paper: dict, dataset: str, algorithm: str, run: int, arrays: dict, optima: dict, seed: int,
                log=None) -> pd.DataFrame:
    """One runtime run: OutPert-GD at every (μ, ε) of the dataset (run = repetition), or Bassily
    et al. at T = n²/m (uncapped) for the run-th listed model at the configured ε. ``optima``:
    model → F* (for the error of the run)."""
    from ...algorithms import Privacy, get_algorithm
    from ...experiments import Cell, cell_spec, experiment_models

    cfg = paper["analyses"]["runtime"]
    exp_name = next(name for name in paper["analyses"]["table3"]["experiments"]
                    if dataset in paper["experiments"][name]["datasets"])
    exp = paper["experiments"][exp_name]
    if algorithm == "outpert-gd":
        settings = [(m, float(e)) for m in experiment_models(exp, dataset) for e in exp["epsilons"]]
    elif algorithm == "bassily-sgd":  # run i = the i-th listed model (one long run per job)
        listed = cfg["bassily"].get(dataset, [])
        if not 0 <= run < len(listed):
            raise ValueError(f"runtime: bassily-sgd on {dataset} lists {len(listed)} model(s) "
                             f"({listed}); got run={run}")
        settings = [(listed[run], float(cfg["epsilon"]))]
    else:
        raise ValueError(f"runtime runs cover outpert-gd and bassily-sgd; got algorithm={algorithm!r}")
    algo, rows = get_algorithm(algorithm), []
    for model, eps in settings:
        spec = cell_spec(paper, Cell(paper["paper"], exp_name, dataset, model, algorithm, format_epsilon(eps)), seed)
        problem = build_problem(spec, arrays)
        hyper = dict(spec["hyper"])
        full = math.ceil(problem.n ** 2 / hyper.get("batch_size", 50)) if algorithm == "bassily-sgd" else None
        if full is not None:  # the theorem's T, uncapped (a `steps_cap` exists for CI-size configs only)
            hyper["max_steps"] = min(full, int(cfg.get("steps_cap", full)))
        s = derive_seed(seed, paper["paper"], "runtime", dataset, model, algorithm, format_epsilon(eps), run)
        result, cpu, wall = _timed_fit(algo, problem, Privacy(eps, float(exp["delta"])), s, **hyper)
        steps = int(np.max(result.iterations))
        error = float(problem.value(result.weights[0]) - optima[model]) if model in optima else np.nan
        rows.append({"dataset": dataset, "model": model, "mu": problem.l2, "algorithm": algorithm, "epsilon": eps,
                     "delta": float(exp["delta"]), "run": run, "seed": s, "steps": steps,
                     "steps_theorem": full if full is not None else steps, "cpu_seconds": cpu, "wall_seconds": wall,
                     "seconds_per_draw": result.seconds_per_draw if result.seconds_per_draw is not None else wall,
                     "us_per_step": 1e6 * cpu / steps, "excess_risk": error, "notes": "; ".join(result.notes)})
        if log is not None:
            log(f"{algorithm} {dataset} {model} eps={eps:g} run {run}: {steps} steps, {cpu:.2f} s CPU, "
                f"{wall:.2f} s wall, error {error:.4g}")
    return pd.DataFrame(rows, columns=RUNTIME_COLUMNS)


def runtime_table(records: pd.DataFrame, published: pd.DataFrame) -> pd.DataFrame:
    """CPU seconds per run at the theorems' settings beside the published runtime columns.

    OutPert-GD: per (dataset, μ, ε). Bassily et al.: per dataset and μ, measured at one ε; the
    published Bassily time of that (dataset, μ) is the mean over its four ε (it hardly varies).
    """
    rows = []
    for (dataset, model, algorithm, eps), g in records.groupby(["dataset", "model", "algorithm", "epsilon"], sort=False):
        pub = published[(published["dataset"] == dataset) & (published["model"] == model)]
        if algorithm == "outpert-gd":
            pub_s = pub.loc[np.isclose(pub["epsilon"], eps), "runtime_ours"]
        else:
            pub_s = pub["runtime_bassily"]
        cpu = g["cpu_seconds"].to_numpy(float)
        published_seconds = float(pub_s.mean()) if len(pub_s) else np.nan
        rows.append({"dataset": dataset, "model": model, "mu": g["mu"].iloc[0], "algorithm": algorithm,
                     "epsilon": eps, "runs": len(g), "steps": int(g["steps"].iloc[0]),
                     "steps_theorem": int(g["steps_theorem"].iloc[0]), "cpu_seconds_mean": cpu.mean(),
                     "cpu_seconds_min": cpu.min(), "cpu_seconds_max": cpu.max(),
                     "wall_seconds_mean": g["wall_seconds"].mean(), "us_per_step": g["us_per_step"].mean(),
                     "error_mean": g["excess_risk"].mean(), "published_seconds": published_seconds,
                     "ratio_seconds": cpu.mean() / published_seconds if published_seconds else np.nan})
    out = pd.DataFrame(rows)
    order = {d: i for i, d in enumerate(published["dataset"].unique())}
    return out.sort_values(["algorithm", "dataset", "mu", "epsilon"],
                           key=lambda s: s.map(order) if s.name == "dataset" else s).reset_index(drop=True)
