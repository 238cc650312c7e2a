"""Drawing helpers shared by this paper's figures, so that a reader can trust a panel at a glance:

* a band is clipped to its metric's range — an accuracy band to [0, 1]; on a log axis a band whose
  lower end is at or below 0 runs to the panel's bottom edge (the interval reaches below what the
  axis shows) instead of stretching the axis down to an arbitrary small number;
* a panel's limits come from its curves' means, not its bands, and one outlying curve does not
  flatten the others: values beyond a fence of the log-scale quartiles are drawn as arrows on the
  edge with their value (:func:`dperm.report.figures.off_scale`, :func:`mark_off_scale`);
* a log axis over a few grid values carries ticks at those values, written plainly, and no minor
  labels (which overlap: 2×10¹ 3×10¹ 4×10¹).
"""

from __future__ import annotations

import numpy as np

from ...report.figures import mark_off_scale, off_scale


def log_limits(means, pad: float = 0.25):
    """(low, high) of a log axis from the finite positive ``means``: their range padded by
    ``pad`` decades, with values beyond the fence of the log quartiles left off the scale.
    Returns (limits, off): ``off`` is True where some value is off the scale."""
    v = np.asarray([m for m in means if np.isfinite(m) and m > 0], dtype=float)
    if not len(v):
        return None, False
    logs = np.log10(v)
    fenced = off_scale(logs, fence=3.0)
    if fenced is not None:
        low, high = fenced
        return (10 ** low, 10 ** high), True
    return (10 ** (logs.min() - pad), 10 ** (logs.max() + pad)), False


def log_band(ax, xs, mean, half, colour, limits, alpha: float = 0.15) -> None:
    """The 95% band of a positive metric on a log axis, clipped to the panel's ``limits``."""
    mean, half = np.asarray(mean, float), np.nan_to_num(np.asarray(half, float))
    low_edge, high_edge = limits
    low = np.where(mean - half > 0, mean - half, low_edge)
    ax.fill_between(xs, np.clip(low, low_edge, high_edge), np.clip(mean + half, low_edge, high_edge), color=colour,
                    alpha=alpha, lw=0)


def finish_log_panel(ax, curves, colours) -> None:
    """Set a log panel's y-limits from its curves {key: (xs, means)} and mark off-scale points."""
    limits, off = log_limits([m for _, means in curves.values() for m in means])
    if limits is None:
        return
    ax.set_ylim(*limits)
    if off:
        for key, (xs, means) in curves.items():
            mark_off_scale(ax, xs, means, limits, colours[key])


def positive(values):
    v = np.asarray(values, dtype=float)
    return np.where(v > 0, v, np.nan)
