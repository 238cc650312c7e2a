"""How much of the accuracy gap between the correct DP-AGD and the published code the Gumbel
selection closes (docs/privacy.md#bounded-range-selection, docs/papers/lee2018.md).

Per dataset, model and ε of Figures 2 and 3 that the reference experiment also runs: the mean
test accuracy of the correct DP-AGD (``dp-agd``, the paper's NoisyMin), of the Gumbel selection
(``dp-agd-gumbel``) and of the published code (``dp-agd-reference``, not DP as implemented), and
the fraction f = (gumbel − correct)/(reference − correct) of the gap the Gumbel selection closes.

Uncertainty: each mean has the standard error s/√n over its fits (folds × repeats × draws, treated
as independent, as the summaries' intervals are); the three are independent runs, so the gap
D = reference − correct has se_D = √(se_r² + se_c²), and f has, to first order (delta method),
se_f = √(se_g² + (1 − f)²·se_c² + f²·se_r²)/|D|. The fraction is reported only where the gap is
clear of the noise, D > 2·se_D (about a one-sided 97.7% test that the published code is better);
otherwise it is "n/a" with the reason. Where D is barely above 2·se_D the first-order se_f
understates the spread of a ratio: read those fractions as rough.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

# correct DP-AGD, the Gumbel selection, the published code: (experiment key, algorithm key)
ROLES = {"correct": "dp-agd", "gumbel": "dp-agd-gumbel", "reference": "dp-agd-reference"}
EXPERIMENTS = ("fig2", "fig3", "reference")
CLEAR = 2.0  # a gap counts when it exceeds this many standard errors

NOTE = ("How much of the accuracy gap between the correct DP-AGD (dp-agd: the paper's NoisyMin, "
        "epsilon-DP, charged epsilon^2/2) and the published code (dp-agd-reference: not DP as implemented, "
        "docs/privacy.md#noisymin-sign) the Gumbel selection closes (dp-agd-gumbel: the exponential mechanism, "
        "epsilon-bounded range, charged epsilon^2/8, so the same rho buys twice the epsilon; "
        "docs/privacy.md#bounded-range-selection). Test accuracy, mean ± standard error over the fits "
        "(correct and Gumbel: the runs of Figures 2 and 3; reference: the reference experiment's; the *_n columns "
        "count them), treated as independent. fraction = (gumbel − correct)/(reference − correct) ± its first-order "
        "standard error; n/a where the gap reference − correct is not above 2 standard errors (then there is no "
        "gap to close, or the reference is not better). Tuning: lambda chosen non-privately, as in Figures 2 and 3.")


def gap_cells(paper) -> list:
    """The cells (:class:`dperm.grid.Cell`) the table reads: the three DP-AGD keys of Figures 2
    and 3 and of the reference experiment."""
    from ...grid import cells

    wanted = set(ROLES.values())
    return [c for c in cells(paper, [e for e in EXPERIMENTS if e in paper.experiments]) if c.algorithm in wanted]


def _stats(records: pd.DataFrame) -> pd.DataFrame:
    grouped = records.groupby(["dataset", "model", "algorithm", "epsilon"])["accuracy"]
    out = grouped.agg(mean="mean", std="std", n="count").reset_index()
    out["se"] = out["std"] / np.sqrt(out["n"])
    return out


def _fraction(c, g, r, se_c, se_g, se_r):
    """(gap, se of the gap, fraction or NaN, se of the fraction or NaN, text)."""
    gap, se_gap = r - c, math.hypot(se_r, se_c)
    if not np.isfinite(gap):
        return gap, se_gap, np.nan, np.nan, "n/a: a cell is missing"
    if gap <= CLEAR * se_gap:
        reason = "reference not better" if gap <= 0 else "gap within noise"
        return gap, se_gap, np.nan, np.nan, f"n/a: {reason} ({gap:+.4f} ± {se_gap:.4f})"
    f = (g - c) / gap
    se_f = math.sqrt(se_g**2 + (1 - f) ** 2 * se_c**2 + f**2 * se_r**2) / abs(gap)
    return gap, se_gap, f, se_f, f"{f:.2f} ± {se_f:.2f}"


def selection_gap(records: pd.DataFrame) -> pd.DataFrame:
    """One row per (dataset, model, ε) where the correct DP-AGD runs: the three accuracies, the
    gap and the fraction of it the Gumbel selection closes (module docstring)."""
    stats = _stats(records[records["algorithm"].isin(ROLES.values())])
    rows = []
    correct = stats[stats["algorithm"] == ROLES["correct"]].sort_values(["dataset", "model", "epsilon"])
    for _, base in correct.iterrows():
        same = stats[(stats["dataset"] == base["dataset"]) & (stats["model"] == base["model"])
                     & np.isclose(stats["epsilon"].astype(float), float(base["epsilon"]))]
        row = {"dataset": base["dataset"], "model": base["model"], "epsilon": float(base["epsilon"])}
        values = {}
        for role, key in ROLES.items():
            cell = same[same["algorithm"] == key]
            mean, se, n = (cell["mean"].iloc[0], cell["se"].iloc[0], int(cell["n"].iloc[0])) if len(cell) else \
                (np.nan, np.nan, 0)
            values[role] = (mean, se)
            row.update({f"{role}_accuracy": mean, f"{role}_se": se, f"{role}_n": n})
        (c, se_c), (g, se_g), (r, se_r) = values["correct"], values["gumbel"], values["reference"]
        gap, se_gap, f, se_f, text = _fraction(c, g, r, se_c, se_g, se_r)
        row.update({"gumbel_minus_correct": g - c, "gap": gap, "gap_se": se_gap, "fraction_closed": f,
                    "fraction_se": se_f, "fraction": text})
        rows.append(row)
    columns = (["dataset", "model", "epsilon"]
               + [f"{role}_{what}" for role in ROLES for what in ("accuracy", "se", "n")]
               + ["gumbel_minus_correct", "gap", "gap_se", "fraction_closed", "fraction_se", "fraction"])
    return pd.DataFrame(rows, columns=columns)
