"""PIDP-SGD's noise-free fraction against ε per (dataset, model, algorithm key), from its run
records' ``extra``: the measured fraction of steps taken without noise, the exact probability
that a first-round step is (``noise_free_probability``, computed by the algorithm from every
row's contribution at θ̃), and the test's constants."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...report.stats import extra_dicts, extra_values, t_interval

#: the registered algorithm whose records carry the noise-free fraction
ALGORITHM = "pidp-sgd-reference"
COLUMNS = ["dataset", "model", "algorithm", "zeta_reading", "rounds", "radius", "epsilon", "runs",
           "noise_free_fraction", "ci95", "noise_free_probability", "threshold", "sigma_c", "two_error", "zeta",
           "tuning"]


def pidp_records(records: pd.DataFrame) -> pd.DataFrame:
    """The records of PIDP-SGD's keys (any key whose runs report a noise-free fraction)."""
    if records.empty:
        return records
    fraction = extra_values(records, "noise_free_fraction")
    return records[np.isfinite(fraction)].copy()


def noise_free_table(records: pd.DataFrame) -> pd.DataFrame:
    """Rows (dataset, model, key, ε): runs, mean and 95% half-width of the noise-free fraction,
    the mean exact first-round probability, and the test's threshold, σ_c, 2E and ζ (the mean
    over the runs of a cell: with r = ‖θ̃‖ the threshold moves with the fold), the reading of ζ,
    R and the mean radius."""
    rec = pidp_records(records)
    if rec.empty:
        return pd.DataFrame(columns=COLUMNS)
    for key in ("noise_free_fraction", "noise_free_probability", "threshold", "sigma_c", "error_bound", "zeta",
                "radius", "rounds"):
        rec[key] = extra_values(rec, key)
    rec["zeta_reading"] = [d.get("zeta_reading", "proof") for d in extra_dicts(rec)]
    rows = []
    for (dataset, model, key, eps), g in rec.groupby(["dataset", "model", "algorithm", "epsilon"], sort=True):
        fraction = t_interval(g["noise_free_fraction"])
        rows.append({"dataset": dataset, "model": model, "algorithm": key, "zeta_reading": g["zeta_reading"].iloc[0],
                     "rounds": int(g["rounds"].iloc[0]) if np.isfinite(g["rounds"].iloc[0]) else np.nan,
                     "radius": g["radius"].mean(), "epsilon": eps, "runs": fraction.n,
                     "noise_free_fraction": fraction.mean, "ci95": fraction.half,
                     "noise_free_probability": g["noise_free_probability"].mean(),
                     "threshold": g["threshold"].mean(), "sigma_c": g["sigma_c"].mean(),
                     "two_error": 2.0 * g["error_bound"].mean(), "zeta": g["zeta"].mean(),
                     "tuning": ", ".join(sorted(set(g["tuning"])))})
    return pd.DataFrame(rows, columns=COLUMNS)
