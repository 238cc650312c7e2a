"""The learning guard: whether a classification cell learns anything beyond the majority label.

A cell **does not learn** when both hold:

* its mean test accuracy is within its 95% interval of the test split's majority rate
  (|accuracy − majority rate| ≤ the accuracy's t-interval half-width; with a single fit, within
  :data:`TIE` of it), and
* it predicts (almost) one class: on average at most :data:`ONE_CLASS` of the test rows are
  predicted to be in the class it predicts less often.

Such a cell is a constant classifier in all but name: a private method, its comparator and the
non-private reference all sitting there say nothing about the method. Tables mark these cells,
figures draw them apart, and a claim resting on one is inconclusive
(:mod:`dperm.report.claims`). Regression cells (no accuracy) are ``n/a``.

The two quantities come from every classification record (``majority_rate``, ``positive_share``;
:func:`dperm.protocol.metrics.fit_metrics`) and reach the summaries as ``<m>_mean``.
"""

from __future__ import annotations

import math

import pandas as pd

#: at most this share of test rows in the rarer predicted class: "predicts one class"
ONE_CLASS = 0.01
#: a single fit (no interval) "ties" the majority rate within this much accuracy
TIE = 0.001

CONDITION = (f"its mean test accuracy is within its 95% interval of the test split's majority rate and on "
             f"average at most {ONE_CLASS:.0%} of the test rows are predicted to be in the rarer predicted class "
             "(a constant classifier in all but name)")
RULE = f"a cell does not learn when {CONDITION}"

YES, NO, NA = "yes", "no", "n/a"


def learns(accuracy: float, half: float, majority: float, positive_share: float) -> str:
    """``yes``, ``no`` (module docstring) or ``n/a`` (no accuracy or majority rate: regression)."""
    if not all(math.isfinite(v) for v in (accuracy, majority, positive_share)):
        return NA
    tolerance = half if math.isfinite(half) else TIE
    ties = abs(accuracy - majority) <= tolerance
    one_class = min(positive_share, 1.0 - positive_share) <= ONE_CLASS
    return NO if ties and one_class else YES


def is_majority_baseline(key: str) -> bool:
    """The majority-label baseline (``majority``, or a profile twin such as ``majority-public``):
    a constant classifier by design, the yardstick of the guard rather than a cell it judges."""
    return key == "majority" or key.startswith("majority-")


def learns_column(summary: pd.DataFrame) -> pd.Series:
    """The guard's verdict for every row of a summary (``accuracy_mean``, ``accuracy_ci95``,
    ``majority_rate_mean``, ``positive_share_mean``; ``n/a`` where a column is missing and for
    the majority baseline itself)."""
    needed = ("accuracy_mean", "accuracy_ci95", "majority_rate_mean", "positive_share_mean")
    if not all(c in summary for c in needed):
        return pd.Series([NA] * len(summary), index=summary.index, dtype=object)
    keys = summary["algorithm"].astype(str) if "algorithm" in summary else pd.Series([""] * len(summary))
    return pd.Series([NA if is_majority_baseline(key) else learns(*(float(v) for v in values))
                      for key, *values in zip(keys, *(summary[c] for c in needed))], index=summary.index, dtype=object)


def settings_text(row) -> str:
    """Where a cell sits, for a verdict's reason: ``bank-dpagd/lr at ε = 0.4``."""
    setting = str(row.get("setting", ""))
    where = "/".join(str(row[k]) for k in ("dataset", "model") if k in row and str(row[k]))
    at = "non-private" if setting == "inf" else (f"T = {setting[1:]}" if setting.startswith("T") else f"ε = {setting}")
    sweep = f", {row['sweep']}" if str(row.get("sweep", "") or "") not in ("", "nan") else ""
    return f"{where} at {at}{sweep}"


def not_learning(summary: pd.DataFrame) -> pd.DataFrame:
    """The rows of a summary whose cells do not learn."""
    verdicts = summary["learns"] if "learns" in summary else learns_column(summary)
    return summary[verdicts == NO]
