"""Tables of Zhang et al. 2017 built from ordinary cell records: RRPSGD on the MLP and the runtime
runs at the theorems' settings.

Both are experiments of ``config/papers/zhang2017.yaml`` run by the one protocol; what they
report beyond the standard columns comes from each record's ``extra`` (RRPSGD's ‖∇F(w_R)‖², its
Theorem 5 bound, its noise; Bassily et al.'s uncapped step count). Seconds are ``fit_seconds``:
wall time per run of a job pinned to one BLAS thread.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...report.stats import extra_column, half_width


def rrpsgd_table(records: pd.DataFrame) -> pd.DataFrame:
    """Per noise calibration and ε: ‖∇F(w_R)‖² (mean, 95% CI, median) beside Theorem 5's bound
    and ‖∇F‖² at the random initialisation, with the noise, step size and rounds."""
    frame = records.assign(**{key: extra_column(records, key) for key in
                              ("noise", "grad_norm_sq", "grad_norm_sq_init", "utility_bound", "noise_std",
                               "learning_rate", "rounds", "max_steps")})
    rows = []
    for (noise, eps), g in frame.groupby(["noise", "epsilon"], sort=True):
        v = g["grad_norm_sq"].to_numpy(float)
        rows.append({"noise": noise, "epsilon": eps, "runs": len(v), "grad_norm_sq_mean": v.mean(),
                     "grad_norm_sq_ci95": half_width(v), "grad_norm_sq_median": float(np.median(v)),
                     "theorem5_bound": g["utility_bound"].astype(float).mean(),
                     "grad_norm_sq_at_init": g["grad_norm_sq_init"].astype(float).mean(),
                     "noise_std": float(g["noise_std"].iloc[0]),
                     "learning_rate": g["learning_rate"].astype(float).mean(),
                     "rounds_mean": g["rounds"].astype(float).mean(), "max_steps": int(g["max_steps"].iloc[0]),
                     "objective_mean": g["objective"].mean(), "accuracy_mean": g["accuracy"].mean(),
                     "seconds_per_run": g["fit_seconds"].mean()})
    return pd.DataFrame(rows)


def runtime_table(records: pd.DataFrame, published: pd.DataFrame) -> pd.DataFrame:
    """Seconds per run at the theorems' settings beside the published runtime columns.

    OutPert-GD: per (dataset, μ, ε). Bassily et al.: per dataset and μ, measured at one ε; the
    published Bassily time of that (dataset, μ) is the mean over its four ε (it hardly varies).
    """
    frame = records.assign(steps_uncapped=extra_column(records, "steps_uncapped"),
                           mu=extra_column(records, "mu"))
    rows = []
    for (dataset, model, algorithm, eps), g in frame.groupby(["dataset", "model", "algorithm", "epsilon"], sort=False):
        pub = published[(published["dataset"] == dataset) & (published["model"] == model)]
        pub_s = pub.loc[np.isclose(pub["epsilon"], eps), "runtime_ours"] if algorithm == "outpert-gd" \
            else pub["runtime_bassily"]
        seconds, steps = g["fit_seconds"].to_numpy(float), g["iterations"].to_numpy(float)
        theorem = g["steps_uncapped"].dropna()
        published_seconds = float(pub_s.mean()) if len(pub_s) else np.nan
        mu = float(pub["mu"].iloc[0]) if len(pub) else float(g["mu"].dropna().iloc[0])
        rows.append({"dataset": dataset, "model": model, "mu": mu, "algorithm": algorithm, "epsilon": eps,
                     "runs": len(g), "steps": int(steps.max()),
                     "steps_theorem": int(theorem.iloc[0]) if len(theorem) else int(steps.max()),
                     "seconds_mean": seconds.mean(), "seconds_min": seconds.min(), "seconds_max": seconds.max(),
                     "us_per_step": float(np.mean(1e6 * seconds / steps)), "error_mean": g["excess_risk"].mean(),
                     "published_seconds": published_seconds,
                     "ratio_seconds": seconds.mean() / published_seconds if published_seconds else np.nan})
    out = pd.DataFrame(rows)
    order = {d: i for i, d in enumerate(published["dataset"].unique())}
    return out.sort_values(["algorithm", "dataset", "mu", "epsilon"],
                           key=lambda s: s.map(order) if s.name == "dataset" else s).reset_index(drop=True)
