"""Experiment group 2: rates against n and d on seeded synthetic data.

Corollary 2.2 (and Theorem 3.2 for the black box) bound the excess empirical risk of output
perturbation on a smooth, μ-strongly convex ERM objective by (β/2)·E‖z‖² with z calibrated to
Δ ∝ 1/n: E‖z‖² = p(p + 1)Δ²/ε² for the Gamma-norm noise of ε-DP and pσ² ∝ pΔ² ln(1/δ)/ε² for
the Gaussian of (ε, δ)-DP. So the excess falls like n⁻² and grows like d² (ε-DP) or d
((ε, δ)-DP). Proposition 4.2 adds the statistical term O(L²/(μn)) for the population loss, so the
population excess falls like n⁻¹ once the private term is below it.

The measured excess follows the actual curvature, not β: for isotropic noise
E[F(w* + z)] − F* ≈ ½·(tr ∇²F(w*)/p)·E‖z‖². On this synthetic family (features N(0, I/d)) the
curvature per direction falls with d, so the table also fits the slope of the excess divided by
½·tr∇²F/p ("curvature-normalised"), which isolates the noise law the corollaries predict.

Slopes are least-squares fits of log(mean) on log(n) or log(d); their 95% intervals come from
a bootstrap over the draws of each point (2,000 resamples, fixed seed).
"""

from __future__ import annotations

import matplotlib.pyplot as plt  # noqa: E402,I001  (after dperm.report.figures chose the backend)
import numpy as np
import pandas as pd

from ...datasets import synthetic
from ...report.figures import algorithm_styles, legend_and_caption, plain_log_axis
from ...report.stats import half_width, with_extra
from . import plots

BOOTSTRAP = 2000
PRIVATE = ("outpert-exact", "bb-agd")


#: what the rates experiments' records carry in ``extra`` (the algorithm's noise law; the metric
#: hooks' curvature and population excess, dperm.protocol.metric_hooks)
EXTRA = ("expected_noise_norm_sq", "sensitivity", "noise_scale", "curvature", "optimum_gap_bound",
         "population_excess_risk", "n_population")


def load(records: pd.DataFrame) -> pd.DataFrame:
    """The records with n and d (from the synthetic dataset's name), ``privacy`` and the extra
    fields as columns; non-private fits have no noise (0)."""
    out = with_extra(records, EXTRA)
    for key in ("expected_noise_norm_sq", "sensitivity", "noise_scale"):
        out[key] = out[key].fillna(0.0)
    shapes = [synthetic.parse(d) for d in out["dataset"]]
    out["n"] = [s[1] for s in shapes]
    out["d"] = [s[2] for s in shapes]
    # an experiment's privacy is its private fits' (non-private fits carry δ = 0 in either)
    out["privacy"] = np.where(out.groupby("experiment")["delta"].transform("max") > 0, "approx", "pure")
    out["normalised_excess"] = out["excess_risk"] / (0.5 * out["curvature"])
    return out


def points(records: pd.DataFrame) -> pd.DataFrame:
    """Mean and 95% half-width of each quantity per (privacy, algorithm, n, d)."""
    rows = []
    for key, g in records.groupby(["privacy", "algorithm", "label", "n", "d"], sort=True):
        row = dict(zip(["privacy", "algorithm", "label", "n", "d"], key))
        for metric in ("excess_risk", "normalised_excess", "population_excess_risk"):
            v = g[metric].to_numpy(float)
            v = v[np.isfinite(v)]
            row[metric] = v.mean() if len(v) else np.nan
            row[f"{metric}_ci95"] = half_width(v)
        row["curvature"] = float(g["curvature"].mean())
        row["expected_noise_norm_sq"] = float(g["expected_noise_norm_sq"].mean())
        row["predicted_excess"] = 0.5 * row["curvature"] * row["expected_noise_norm_sq"]
        predicted = row["predicted_excess"]
        row["measured_over_predicted"] = row["excess_risk"] / predicted if predicted else np.nan
        row["draws"] = len(g)
        rows.append(row)
    return pd.DataFrame(rows)


def _fit(x, groups):
    """Least-squares slope of log(mean) on log(x) and its bootstrap 95% interval; ``groups`` are
    the draws of each point."""
    means = np.array([np.mean(g) for g in groups])
    if len(x) < 2 or np.any(means <= 0):
        return np.nan, np.nan, np.nan
    lx = np.log(np.asarray(x, float))
    slope = np.polyfit(lx, np.log(means), 1)[0]
    rng = np.random.default_rng(0)
    boot = []
    for _ in range(BOOTSTRAP):
        resampled = np.array([np.mean(rng.choice(g, size=len(g))) for g in groups])
        if np.all(resampled > 0):
            boot.append(np.polyfit(lx, np.log(resampled), 1)[0])
    lo, hi = np.percentile(boot, [2.5, 97.5]) if boot else (np.nan, np.nan)
    return float(slope), float(lo), float(hi)


def _law_slope(values_x, law):
    if len(values_x) < 2:
        return np.nan
    lx = np.log(np.asarray(values_x, float))
    return float(np.polyfit(lx, np.log([law(v) for v in values_x]), 1)[0])


def slopes(records: pd.DataFrame, n_sweep_d: int, d_sweep_n: int) -> pd.DataFrame:
    """The fitted slopes beside the corollaries' (and the noise law's over the same grid)."""
    rows = []
    for (privacy, algorithm), g in records.groupby(["privacy", "algorithm"], sort=True):
        label = g["label"].iloc[0]
        n_part = g[g["d"] == n_sweep_d]
        d_part = g[g["n"] == d_sweep_n]
        ns = sorted(n_part["n"].unique())
        ds = sorted(d_part["d"].unique())
        specs = []
        if algorithm != "nonprivate":
            specs += [("n", "excess_risk", ns, n_part, "n", -2.0, _law_slope(ns, lambda n: n ** -2.0),
                       "Cor. 2.2: n^-2"),
                      ("d", "excess_risk", ds, d_part, "d", 2.0 if privacy == "pure" else 1.0,
                       _law_slope(ds, (lambda d: d * (d + 1)) if privacy == "pure" else (lambda d: d)),
                       "Cor. 2.2: d^2 (eps-DP), d (eps, delta)"),
                      ("d", "normalised_excess", ds, d_part, "d", 2.0 if privacy == "pure" else 1.0,
                       _law_slope(ds, (lambda d: d * (d + 1)) if privacy == "pure" else (lambda d: d)),
                       "noise law E||z||^2: d(d+1) (eps-DP), d (eps, delta)")]
        specs.append(("n", "population_excess_risk", ns, n_part, "n", -1.0, np.nan,
                      "Prop. 4.2: L^2/(mu n) once the private term is below it"))
        for sweep, metric, xs, part, col, predicted, law, source in specs:
            groups = [part.loc[part[col] == x, metric].to_numpy(float) for x in xs]
            groups = [v[np.isfinite(v)] for v in groups]
            if not xs or any(len(v) == 0 for v in groups):
                continue
            slope, lo, hi = _fit(xs, groups)
            rows.append({"sweep": sweep, "privacy": privacy, "algorithm": algorithm, "label": label,
                         "quantity": metric, "fitted_slope": slope, "ci95_low": lo, "ci95_high": hi,
                         "paper_slope": predicted, "noise_law_slope": law, "source": source,
                         "grid": ", ".join(f"{x:g}" for x in xs),
                         "draws_per_point": int(np.mean([len(v) for v in groups]))})
    return pd.DataFrame(rows)


def _reference(ax, xs, anchor_x, anchor_y, slope, label, colour="grey"):
    xs = np.asarray(xs, float)
    ax.plot(xs, anchor_y * (xs / anchor_x) ** slope, ls=":", color=colour, lw=1.0, label=label)


def _series(ax, pts, col, metric, keys, style, labels, *, dash=None, suffix=""):
    """One curve per algorithm of ``pts`` against ``col`` on a log–log panel; returns
    {key: (xs, means, halves, style)} for :func:`_finish` (bands need the panel's limits)."""
    drawn = {}
    for key in keys:
        cell = pts[pts["algorithm"] == key].sort_values(col)
        if cell.empty or not np.isfinite(cell[metric]).any():
            continue
        mean, half = cell[metric].to_numpy(float), cell[f"{metric}_ci95"].fillna(0).to_numpy(float)
        st = dict(style.get(key, dict(color="black", marker="x", ls="--", mfc="black")))
        if dash is not None:
            st["ls"] = dash if key != "nonprivate" else "-"
        ax.plot(cell[col], mean, lw=1.2, ms=4, label=labels.get(key, key) + suffix, **st)
        drawn[(key, suffix)] = (cell[col].to_numpy(float), mean, half, st)
    return drawn


def _finish(ax, drawn: dict) -> None:
    """Bands clipped to the panel's limits (from the means; off-scale points marked); no minor
    tick labels on the log y axis (within a decade they crowd the axis)."""
    from matplotlib.ticker import NullFormatter

    ax.yaxis.set_minor_formatter(NullFormatter())
    limits, _ = plots.log_limits([m for _, means, _, _ in drawn.values() for m in means])
    if limits is None:
        return
    for xs, mean, half, st in drawn.values():
        plots.log_band(ax, xs, mean, half, st["color"], limits, alpha=0.12)
    plots.finish_log_panel(ax, {k: (xs, means) for k, (xs, means, _, _) in drawn.items()},
                           {k: st["color"] for k, (_, _, _, st) in drawn.items()})


def n_figure(pts: pd.DataFrame, d: int, *, title, caption, labels, order, population_rows: int):
    data = pts[pts["d"] == d]
    keys = [k for k in order if k in set(data["algorithm"])]
    style = algorithm_styles([k for k in keys if k != "nonprivate"], order)
    fig, axes = plt.subplots(1, 3, figsize=(12.0, 3.6), squeeze=False)
    for j, privacy in enumerate(("pure", "approx")):
        ax = axes[0, j]
        part = data[(data["privacy"] == privacy) & (data["algorithm"] != "nonprivate")]
        drawn = _series(ax, part, "n", "excess_risk", keys, style, labels)
        ref = part[part["algorithm"] == "outpert-exact"].sort_values("n")
        if len(ref):
            _reference(ax, ref["n"], ref["n"].iloc[0], ref["excess_risk"].iloc[0], -2.0, "slope −2 (Cor. 2.2)")
        _finish(ax, drawn)
        ax.set_title(f"empirical, {'ε-DP' if privacy == 'pure' else '(ε, δ)-DP'}", fontsize=9)
        ax.set_ylabel("excess empirical risk F(w) − F*")
    ax = axes[0, 2]
    drawn = {}
    for privacy, dash in (("pure", "-"), ("approx", "--")):
        part = data[data["privacy"] == privacy]
        if privacy == "approx":
            part = part[part["algorithm"] != "nonprivate"]
        for key in keys:
            suffix = "" if key == "nonprivate" else (", ε-DP" if privacy == "pure" else ", (ε, δ)")
            drawn.update(_series(ax, part, "n", "population_excess_risk", [key], style, labels, dash=dash,
                                 suffix=suffix))
    ref = data[(data["algorithm"] == "nonprivate")].sort_values("n")
    if len(ref):
        _reference(ax, ref["n"], ref["n"].iloc[-1], ref["population_excess_risk"].iloc[-1], -1.0,
                   "slope −1 (Prop. 4.2)", colour="black")
    _finish(ax, drawn)
    ax.set_title(f"population ({population_rows:,} held-out rows)", fontsize=9)
    ax.set_ylabel("population excess risk")
    for ax in axes.flat:
        ax.set_xscale("log")
        ax.set_yscale("log")
        plain_log_axis(ax, "x", data["n"])
        ax.set_xlabel("n (training rows, log scale)")
        ax.grid(alpha=0.3, which="both", lw=0.5)
    legend_and_caption(fig, axes, title, caption, ncol=4)
    return fig


def d_figure(pts: pd.DataFrame, n: int, *, title, caption, labels, order):
    data = pts[(pts["n"] == n) & (pts["algorithm"] != "nonprivate")]
    keys = [k for k in order if k in set(data["algorithm"])]
    style = algorithm_styles(keys, order)
    fig, axes = plt.subplots(2, 2, figsize=(8.4, 6.4), squeeze=False)
    for j, privacy in enumerate(("pure", "approx")):
        slope = 2.0 if privacy == "pure" else 1.0
        for i, metric in enumerate(("excess_risk", "normalised_excess")):
            ax = axes[i, j]
            part = data[data["privacy"] == privacy]
            drawn = _series(ax, part, "d", metric, keys, style, labels)
            ref = part[part["algorithm"] == "outpert-exact"].sort_values("d")
            if len(ref):
                _reference(ax, ref["d"], ref["d"].iloc[0], ref[metric].iloc[0], slope,
                           f"slope {slope:g} (Cor. 2.2)")
            ax.set_xscale("log")
            ax.set_yscale("log")
            _finish(ax, drawn)
            plain_log_axis(ax, "x", data["d"])
            ax.set_title(f"{'ε-DP' if privacy == 'pure' else '(ε, δ)-DP'}", fontsize=9)
            ax.set_ylabel("excess empirical risk" if metric == "excess_risk"
                          else "excess / (½ tr∇²F/p)  (≈ E‖z‖²)")
            if i == 1:
                ax.set_xlabel("d (features, log scale)")
            ax.grid(alpha=0.3, which="both", lw=0.5)
    legend_and_caption(fig, axes, title, caption, ncol=4)
    return fig
