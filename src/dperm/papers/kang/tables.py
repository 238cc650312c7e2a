"""PIDP-SGD's noise-free fraction against ε per (dataset, model), from its run records' ``extra``."""

from __future__ import annotations

import pandas as pd

from ...report.stats import extra_values, t_interval

ALGORITHM = "pidp-sgd-reference"


def noise_free_table(records: pd.DataFrame) -> pd.DataFrame:
    """Rows (dataset, model, ε): runs, mean and 95% half-width of the noise-free fraction, and the
    test's threshold and σ_c (the same for every run of a cell)."""
    rec = records[records["algorithm"] == ALGORITHM].copy()
    rec["noise_free"] = extra_values(rec, "noise_free_fraction")
    rec["threshold"] = extra_values(rec, "threshold")
    rec["sigma_c"] = extra_values(rec, "sigma_c")
    rows = []
    for (dataset, model, eps), g in rec.groupby(["dataset", "model", "epsilon"], sort=True):
        fraction = t_interval(g["noise_free"])
        rows.append({"dataset": dataset, "model": model, "epsilon": eps, "runs": fraction.n,
                     "noise_free_fraction": fraction.mean, "ci95": fraction.half, "threshold": g["threshold"].iloc[0],
                     "sigma_c": g["sigma_c"].iloc[0], "tuning": ", ".join(sorted(set(g["tuning"])))})
    return pd.DataFrame(rows, columns=["dataset", "model", "epsilon", "runs", "noise_free_fraction", "ci95",
                                       "threshold", "sigma_c", "tuning"])
