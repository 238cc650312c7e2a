"""How much Figure 2's results move when min-max scaling uses public attribute bounds instead of
the data's own minimum and maximum (docs/privacy.md#public-bounds): each public-bounds curve
beside the Figure 2 curve it is paired with in the ``public-bounds`` figure, point by point."""

from __future__ import annotations

import numpy as np
import pandas as pd

NOTE = ("Public bounds against data bounds (docs/privacy.md#public-bounds): each algorithm of Figure 2 on "
        "Adult (logistic regression) with features scaled by the data's own minimum and maximum, test folds "
        "included ('data', Figure 2's runs), and by the ranges the documentation gives, categories as "
        "documented ('public'); same folds, grid and protocol, independent noise draws. Accuracy: test "
        "accuracy in %; objective: mean unregularised training loss (ObjPert and OutPert on rows in the unit "
        "ball, so on that scale). delta = public - data, with the half-width of the 95% interval of the "
        "difference (the two cells' intervals combined as independent). lambda and OutPert's (T, step size) "
        "were tuned non-privately on each profile's own data. SGD-MA rows are step counts (its epsilon is "
        "computed; the same for both).")


def _epsilon(row) -> float:
    return float(row["epsilon_spent_mean"]) if str(row["setting"]).startswith("T") else float(row["epsilon"])


def movement(public: pd.DataFrame, data: pd.DataFrame, pairs: dict[str, str]) -> pd.DataFrame:
    """One row per (dataset, model, algorithm, privacy setting) present in both summaries: the
    data-bounds and public-bounds mean accuracy (%) and objective, their difference and its 95%
    half-width. ``pairs``: public-bounds algorithm key -> its Figure 2 key."""
    rows = []
    for key, partner in pairs.items():
        mine = public[public["algorithm"] == key]
        theirs = data[data["algorithm"] == partner].set_index(["dataset", "model", "setting"])
        for _, p in mine.iterrows():
            where = (p["dataset"], p["model"], p["setting"])
            if where not in theirs.index:
                continue
            d = theirs.loc[where]
            row = {"dataset": p["dataset"], "model": p["model"], "algorithm": partner, "setting": p["setting"],
                   "epsilon": _epsilon(p)}
            for metric, scale in (("accuracy", 100.0), ("objective", 1.0)):
                a, b = scale * float(d[f"{metric}_mean"]), scale * float(p[f"{metric}_mean"])
                half = scale * np.hypot(float(d[f"{metric}_ci95"]), float(p[f"{metric}_ci95"]))
                row.update({f"{metric}_data": a, f"{metric}_public": b, f"{metric}_delta": b - a,
                            f"{metric}_delta_ci95": half})
            rows.append(row)
    return pd.DataFrame(rows, columns=["dataset", "model", "algorithm", "setting", "epsilon", "accuracy_data",
                                       "accuracy_public", "accuracy_delta", "accuracy_delta_ci95", "objective_data",
                                       "objective_public", "objective_delta", "objective_delta_ci95"])
