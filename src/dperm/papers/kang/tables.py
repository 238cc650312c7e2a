"""PIDP-SGD's noise-free fraction against ε per (dataset, model), from its run records' ``extra``."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
from scipy import stats

ALGORITHM = "pidp-sgd-reference"


def extra_column(records: pd.DataFrame, name: str) -> np.ndarray:
    """One value of ``extra[name]`` per record (NaN where absent)."""
    return np.array([json.loads(e).get(name, np.nan) if isinstance(e, str) and e else np.nan
                     for e in records["extra"]], dtype=float)


def noise_free_table(records: pd.DataFrame) -> pd.DataFrame:
    """Rows (dataset, model, ε): runs, mean and 95% half-width of the noise-free fraction, and the
    test's threshold and σ_c (the same for every run of a cell)."""
    rec = records[records["algorithm"] == ALGORITHM].copy()
    rec["noise_free"] = extra_column(rec, "noise_free_fraction")
    rec["threshold"] = extra_column(rec, "threshold")
    rec["sigma_c"] = extra_column(rec, "sigma_c")
    rows = []
    for (dataset, model, eps), g in rec.groupby(["dataset", "model", "epsilon"], sort=True):
        v = g["noise_free"].to_numpy()
        n = len(v)
        half = stats.t.ppf(0.975, n - 1) * v.std(ddof=1) / np.sqrt(n) if n > 1 else np.nan
        rows.append({"dataset": dataset, "model": model, "epsilon": eps, "runs": n,
                     "noise_free_fraction": v.mean(), "ci95": half, "threshold": g["threshold"].iloc[0],
                     "sigma_c": g["sigma_c"].iloc[0], "tuning": ", ".join(sorted(set(g["tuning"])))})
    return pd.DataFrame(rows, columns=["dataset", "model", "epsilon", "runs", "noise_free_fraction", "ci95",
                                       "threshold", "sigma_c", "tuning"])
