"""The error-vs-ε figure of the Table 3 reproduction and the RRPSGD figure.

Error figure: one panel per dataset (columns) and μ (rows: μ = 0 on top, μ > 0 below), ours as
solid lines with 95% bands, the published numbers of the same cell as dashed lines with hollow
markers, log–log axes (the errors span four orders of magnitude).
"""

from __future__ import annotations

import matplotlib.pyplot as plt  # noqa: E402  (after dperm.report.figures chose the backend)
import numpy as np
import pandas as pd

from ...report.figures import epsilon_axis, legend_and_caption  # selects the Agg backend first

SERIES = [("outpert", "OutPert-GD (ours)", "tab:blue", "o"),
          ("bassily", "Bassily et al. (ours, step cap)", "tab:red", "s")]


def _positive(values):
    v = np.asarray(values, dtype=float)
    return np.where(v > 0, v, np.nan)  # a log axis cannot show ≤ 0 (an error can be < 0 by noise)


def error_figure(t: pd.DataFrame, *, title="", caption=""):
    datasets = list(dict.fromkeys(t["dataset"]))
    fig, axes = plt.subplots(2, len(datasets), figsize=(3.3 * len(datasets), 5.6), squeeze=False)
    for j, dataset in enumerate(datasets):
        rows = t[t["dataset"] == dataset]
        for i in range(2):  # row 0: μ = 0 (Theorem 3), row 1: μ > 0 (Theorem 2)
            ax = axes[i, j]
            cell = rows[(rows["mu"] == 0) if i == 0 else (rows["mu"] > 0)].sort_values("epsilon")
            if cell.empty:
                ax.text(0.5, 0.5, f"{dataset}, μ {'=' if i == 0 else '>'} 0:\nnot in this grid", ha="center",
                        va="center", transform=ax.transAxes, fontsize=9, color="darkred")
                ax.set_xticks([])
                ax.set_yticks([])
                continue
            eps = cell["epsilon"].to_numpy(float)
            for key, label, colour, marker in SERIES:
                if f"error_{key}" not in cell:
                    continue
                mean = cell[f"error_{key}"].to_numpy(float)
                half = cell[f"error_{key}_ci95"].fillna(0).to_numpy(float)
                ax.plot(eps, _positive(mean), marker=marker, color=colour, lw=1.3, ms=4, label=label)
                ax.fill_between(eps, _positive(mean - half), _positive(mean + half), color=colour, alpha=0.15, lw=0)
                pub = cell.get(f"published_error_{key}")
                if pub is not None and np.isfinite(pub.to_numpy(float)).any():
                    ax.plot(eps, _positive(pub), marker=marker, mfc="none", color=colour, ls="--", lw=1.0, ms=5,
                            label=label.split(" (")[0] + " (published)")
            ax.set_yscale("log")
            epsilon_axis(ax, cell)
            ax.set_title(f"{dataset}, μ = {cell['mu'].iloc[0]:g}", fontsize=10)
            if i == 1:
                ax.set_xlabel("ε (log scale)")
            if j == 0:
                ax.set_ylabel("error E[F(w_priv)] − F(ŵ)")
            ax.grid(alpha=0.3, which="both", lw=0.5)
    legend_and_caption(fig, axes, title, caption)
    return fig


def rrpsgd_figure(table: pd.DataFrame, *, title="", caption=""):
    fig, ax = plt.subplots(figsize=(6.4, 4.8))
    styles = {"theorem4": ("tab:purple", "o", "Theorem 4 noise (ε ≤ 1)"),
              "calibrated": ("tab:green", "s", "calibrated noise (all ε)")}
    for noise, g in table.groupby("noise"):
        colour, marker, label = styles.get(noise, ("grey", "x", noise))
        g = g.sort_values("epsilon")
        mean, half = g["grad_norm_sq_mean"].to_numpy(float), g["grad_norm_sq_ci95"].fillna(0).to_numpy(float)
        ax.plot(g["epsilon"], mean, marker=marker, color=colour, lw=1.3, ms=4, label=f"E‖∇F(w_R)‖², {label}")
        # where the interval reaches 0 its lower edge is drawn at a tenth of the smallest mean (a log
        # axis cannot show 0); the table has the numbers
        low = np.where(mean - half > 0, mean - half, 0.1 * np.nanmin(table["grad_norm_sq_mean"]))
        ax.fill_between(g["epsilon"], low, mean + half, color=colour, alpha=0.15, lw=0)
        ax.plot(g["epsilon"], g["theorem5_bound"], color=colour, ls=":", lw=1.2, label=f"Theorem 5 bound, {label}")
    init = table["grad_norm_sq_at_init"].iloc[0]
    ax.axhline(init, color="black", ls="--", lw=1.0, label="‖∇F(w₀)‖² at the random initialisation")
    ax.set_yscale("log")
    epsilon_axis(ax, table)
    ax.set_xlabel("ε (log scale)")
    ax.set_ylabel("squared gradient norm")
    ax.grid(alpha=0.3, which="both", lw=0.5)
    legend_and_caption(fig, np.array([[ax]]), title, caption, ncol=2)
    return fig
