"""The report layer's statistical primitives, offered once to every table, figure and claim:
the 95% t-interval of a mean, the interval of a difference of two means, the "mean ± half"
text, and the values a record carries in its ``extra`` JSON.

Intervals treat a cell's fits (folds × repeats × draws) as independent; fits of one fold share
their training rows, so the interval is an approximation, and the tables say so
(:data:`dperm.report.tables.CI_NOTE`).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

import numpy as np
import pandas as pd


@dataclass(frozen=True)
class Interval:
    """A mean with its 95% t-interval half-width, the standard deviation and the sample size;
    ``half`` and ``std`` are NaN with fewer than two finite values, ``mean`` NaN with none."""

    mean: float
    half: float
    n: int
    std: float = math.nan

    @property
    def low(self) -> float:
        return self.mean - self.half

    @property
    def high(self) -> float:
        return self.mean + self.half


def t_quantile(df: float, level: float = 0.95) -> float:
    """The two-sided ``level`` quantile of Student's t with ``df`` degrees of freedom."""
    from scipy import stats

    return float(stats.t.ppf(0.5 + level / 2, df))


def t_interval(values, level: float = 0.95) -> Interval:
    """The mean of the finite ``values`` with its two-sided ``level`` t-interval half-width."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    n = len(v)
    if n == 0:
        return Interval(math.nan, math.nan, 0)
    if n == 1:
        return Interval(float(v[0]), math.nan, 1)
    std = float(v.std(ddof=1))
    return Interval(float(v.mean()), t_quantile(n - 1, level) * std / math.sqrt(n), n, std)


def half_width(values, level: float = 0.95) -> float:
    """The t-interval half-width of the mean of the finite ``values`` (NaN with fewer than two)."""
    return t_interval(values, level).half


def difference_interval(a, b, level: float = 0.95) -> Interval:
    """mean(a) − mean(b) with Welch's t-interval (unequal variances, Welch–Satterthwaite degrees of
    freedom); ``n`` is the smaller sample."""
    a, b = (np.asarray(x, dtype=float) for x in (a, b))
    a, b = a[np.isfinite(a)], b[np.isfinite(b)]
    if len(a) < 2 or len(b) < 2:
        mean = float(a.mean() - b.mean()) if len(a) and len(b) else math.nan
        return Interval(mean, math.nan, min(len(a), len(b)))
    va, vb = a.var(ddof=1) / len(a), b.var(ddof=1) / len(b)
    se = math.sqrt(va + vb)
    if se == 0:
        return Interval(float(a.mean() - b.mean()), 0.0, min(len(a), len(b)), 0.0)
    df = (va + vb) ** 2 / (va ** 2 / (len(a) - 1) + vb ** 2 / (len(b) - 1))
    return Interval(float(a.mean() - b.mean()), t_quantile(df, level) * se, min(len(a), len(b)), se)


def paired_interval(a, b, level: float = 0.95) -> Interval:
    """mean(a − b) over pairs (the same fold, repeat and draw), with its t-interval."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.shape != b.shape:
        raise ValueError(f"a paired interval needs samples of one shape; got {a.shape} and {b.shape}")
    return t_interval(a - b, level)


def mean_pm(mean: float, half: float, digits: int = 4, half_digits: int = 2) -> str:
    """``mean ± half`` as tables print it (``mean`` alone where the half-width is unknown, empty
    where the mean is)."""
    if not np.isfinite(mean):
        return ""
    return f"{mean:.{digits}g}" + (f" ± {half:.{half_digits}g}" if np.isfinite(half) else "")


def extra_dicts(records: pd.DataFrame) -> list[dict]:
    """Each record's ``extra`` JSON as a mapping (empty where the record has none)."""
    return [json.loads(text) if isinstance(text, str) and text else {} for text in records["extra"]]


def extra_column(records: pd.DataFrame, key: str) -> pd.Series:
    """One field of the records' ``extra`` JSON as a column of any type (None where absent)."""
    return pd.Series([d.get(key) for d in extra_dicts(records)], index=records.index, dtype=object)


def extra_values(records: pd.DataFrame, key: str, default=np.nan) -> np.ndarray:
    """One value of ``extra[key]`` per record as floats (``default`` where absent; the strings
    'inf', '-inf' and 'nan' a record writes for non-finite values read as floats)."""
    return np.array([float(d.get(key, default)) if d.get(key, default) is not None else np.nan
                     for d in extra_dicts(records)], dtype=float)


def with_extra(records: pd.DataFrame, keys, prefix: str = "") -> pd.DataFrame:
    """``records`` with one float column per ``extra`` key (named ``prefix + key``)."""
    parsed = extra_dicts(records)
    out = records.copy()
    for key in keys:
        out[prefix + key] = np.array([float(d[key]) if d.get(key) is not None else np.nan for d in parsed],
                                     dtype=float)
    return out
