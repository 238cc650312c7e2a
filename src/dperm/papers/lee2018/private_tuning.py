"""The price of private tuning (docs/papers/lee2018.md#end-to-end): for each dataset, algorithm and
ε, the test accuracy of the non-privately tuned cell (Figure 2) minus that of the same algorithm
tuned by private selection over the same grids at the same total ε (experiment ``end-to-end``),
with a 95% Welch interval, and what the selection did (per-trial ε, mean number of trials, the
grid point chosen most often)."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pandas as pd

from ...report.stats import extra_dicts, t_quantile

EXPERIMENT = "end-to-end"
REFERENCE = "fig2"
COLUMNS = ["dataset", "model", "algorithm", "epsilon", "accuracy_tuned_non_privately", "ci_non_private",
           "accuracy_end_to_end", "ci_end_to_end", "price", "price_ci95", "n_non_private", "n_end_to_end",
           "trial_epsilon", "mean_trials", "chosen_most", "chosen_share"]


def table_spec(paper) -> dict:
    """What the table reads from the config (:class:`dperm.grid.Paper`): end-to-end key → the key
    of its base in Figure 2."""
    exp = paper.experiments.get(EXPERIMENT)
    keys = exp.algorithms if exp is not None else ()
    pairs = {key: paper.algorithms[key]["base"] for key in keys if paper.registered_name(key) == "private-selection"}
    return {"pairs": pairs, "experiment": EXPERIMENT, "reference": REFERENCE}


def _point(chosen) -> str:
    if chosen is None:
        return "none (K = 0)"
    return ", ".join(f"{k}={v:g}" if isinstance(v, (int, float)) else f"{k}={v}" for k, v in sorted(chosen.items()))


def _welch(m1, s1, n1, m2, s2, n2):
    """(difference m1 − m2, half-width of its 95% Welch interval), from the summaries' means,
    standard deviations and counts."""
    v1, v2 = s1 * s1 / n1, s2 * s2 / n2
    se = np.sqrt(v1 + v2)
    if not np.isfinite(se) or se == 0:
        return m1 - m2, np.nan
    df = (v1 + v2) ** 2 / (v1 * v1 / (n1 - 1) + v2 * v2 / (n2 - 1))
    return m1 - m2, t_quantile(df) * float(se)


def price_table(reference: pd.DataFrame, end_to_end: pd.DataFrame, records: pd.DataFrame,
                pairs: dict[str, str]) -> pd.DataFrame:
    """One row per (dataset, model, end-to-end key, ε) with both accuracies and the price
    (non-privately tuned minus end to end). ``reference``/``end_to_end``: the two experiments'
    summaries; ``records``: the end-to-end cells' records (for the selection's own columns)."""
    rows = []
    extra = records.assign(extra=extra_dicts(records))
    for _, cell in end_to_end[end_to_end["algorithm"].isin(list(pairs))].iterrows():
        base = pairs[cell["algorithm"]]
        match = reference[(reference["dataset"] == cell["dataset"]) & (reference["model"] == cell["model"])
                          & (reference["algorithm"] == base)
                          & np.isclose(reference["epsilon"].astype(float), float(cell["epsilon"]))]
        fits = extra[(extra["dataset"] == cell["dataset"]) & (extra["model"] == cell["model"])
                     & (extra["algorithm"] == cell["algorithm"])
                     & np.isclose(extra["epsilon"].astype(float), float(cell["epsilon"]))]
        chosen = Counter(_point(e.get("chosen")) for e in fits["extra"])
        most, count = chosen.most_common(1)[0] if chosen else ("", 0)
        row = {"dataset": cell["dataset"], "model": cell["model"], "algorithm": base,
               "epsilon": float(cell["epsilon"]), "accuracy_end_to_end": cell["accuracy_mean"],
               "ci_end_to_end": cell["accuracy_ci95"], "n_end_to_end": int(cell["accuracy_n"]),
               "trial_epsilon": float(np.mean([e["trial_epsilon"] for e in fits["extra"]])) if len(fits) else np.nan,
               "mean_trials": float(np.mean([e["trials"] for e in fits["extra"]])) if len(fits) else np.nan,
               "chosen_most": most, "chosen_share": count / len(fits) if len(fits) else np.nan}
        if match.empty:
            row.update(accuracy_tuned_non_privately=np.nan, ci_non_private=np.nan, price=np.nan, price_ci95=np.nan,
                       n_non_private=0)
        else:
            ref = match.iloc[0]
            price, half = _welch(ref["accuracy_mean"], ref["accuracy_std"], ref["accuracy_n"], cell["accuracy_mean"],
                                 cell["accuracy_std"], cell["accuracy_n"])
            row.update(accuracy_tuned_non_privately=ref["accuracy_mean"], ci_non_private=ref["accuracy_ci95"],
                       price=price, price_ci95=half, n_non_private=int(ref["accuracy_n"]))
        rows.append(row)
    out = pd.DataFrame(rows, columns=COLUMNS)
    return out.sort_values(["dataset", "model", "algorithm", "epsilon"], ignore_index=True)


NOTE = ("The price of private tuning (Lee & Kifer 2018's Figure 2 setting, logistic regression): test accuracy "
        "of each algorithm with the hyper-parameters chosen by the non-private tuning step (its Figure 2 cell, "
        "tuning: non-private) minus that of the same algorithm whose hyper-parameters private selection chooses "
        "over the same grids, charged to the same total epsilon (experiment end-to-end, tuning: private; "
        "docs/privacy.md#private-selection). Positive: private tuning costs accuracy. price_ci95: half-width of "
        "a 95% Welch interval for the difference of the two means (fits treated as independent; the two "
        "experiments have different numbers of fits, n_*). trial_epsilon: the per-trial budget the selection "
        "calibrated (a zCDP parametrisation at the cell's delta for DP-AGD and OutPert, pure epsilon for "
        "ObjPert); mean_trials: the mean K; chosen_most: the grid point the selection released most often, "
        "chosen_share its share of the fits. Min-max scaling still uses the data's own bounds "
        "(docs/privacy.md#data-dependent-choices).")
