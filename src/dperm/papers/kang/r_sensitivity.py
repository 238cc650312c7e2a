"""PIDP-SGD's sensitivity to the settings the paper leaves free: the radius r (which enters the
noise-skipping threshold 2rδ₁(1 + e^{−ε₁}) linearly), the reading of ζ (σ_c ∝ 1/ζ, E ∝ 1/ζ²) and
the number of rounds R (σ_c ∝ R), against ε; beside each r, the batch-1 DP-SGD control (the
same chains with no test, the whole ε) at that r. Experiment ``r-sensitivity`` of
config/papers/kang.yaml; docs/papers/kang.md#r-sensitivity.

The table has one row per (dataset, model, ζ reading, R, r, ε): the measured noise-free fraction,
the exact probability that a first-round step is noise-free (:mod:`.tables`), the test's σ_c,
threshold and 2E, PIDP-SGD's accuracy and optimality gap with the guard's verdict, and the
control's. The figure draws them against ε, one column per (ζ reading, R).
"""

from __future__ import annotations

import json

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from ...report.figures import (  # noqa: E402
    STUCK,
    STUCK_CAPTION,
    STUCK_LABEL,
    band,
    ensure_log_ticks,
    epsilon_axis,
    legend_and_caption,
)
from ...report.tables import summarise  # noqa: E402
from .tables import noise_free_table, pidp_records  # noqa: E402

#: r as the config gives it -> its name in tables and legends, in drawing order
R_NAMES = {"1.0": "1", "start-norm": "||theta*||", "1000.0": "1e3", "10000.0": "1e4"}
COLUMNS = ["dataset", "model", "zeta_reading", "rounds", "r", "radius", "epsilon", "runs", "noise_free_fraction",
           "noise_free_ci95", "noise_free_probability", "sigma_c", "threshold", "two_error", "accuracy",
           "accuracy_ci95", "opt_gap", "opt_gap_ci95", "learns", "control_accuracy", "control_accuracy_ci95",
           "control_opt_gap", "control_opt_gap_ci95", "control_learns", "majority_rate"]


def r_name(value) -> str:
    """The name of a configured radius (a number or ``start-norm``)."""
    text = str(value) if isinstance(value, str) else repr(float(value))
    return R_NAMES.get(text, f"{float(value):g}" if not isinstance(value, str) else text)


def _radius_of(records: pd.DataFrame) -> pd.Series:
    return pd.Series([r_name(json.loads(h).get("radius", 1.0)) for h in records["hyper"]], index=records.index)


def r_sensitivity_table(records: pd.DataFrame) -> pd.DataFrame:
    """The table of the module docstring from the experiment's records."""
    if records.empty:
        return pd.DataFrame(columns=COLUMNS)
    records = records.assign(r=_radius_of(records))
    summary = summarise(records).set_index(["dataset", "model", "algorithm", "setting"])
    pidp = pidp_records(records)
    control = records[~records.index.isin(pidp.index)]
    key_r = dict(zip(records["algorithm"], records["r"]))
    controls = summarise(control).assign(r=lambda s: s["algorithm"].map(key_r)) if len(control) else None
    rows = []
    for _, nf in noise_free_table(pidp).iterrows():
        cell = pidp[(pidp["dataset"] == nf["dataset"]) & (pidp["model"] == nf["model"])
                    & (pidp["algorithm"] == nf["algorithm"]) & (pidp["epsilon"] == nf["epsilon"])]
        setting = cell["setting"].iloc[0]
        s = summary.loc[(nf["dataset"], nf["model"], nf["algorithm"], setting)]
        s = s.iloc[0] if isinstance(s, pd.DataFrame) else s
        row = {"dataset": nf["dataset"], "model": nf["model"], "zeta_reading": nf["zeta_reading"],
               "rounds": nf["rounds"], "r": key_r[nf["algorithm"]], "radius": nf["radius"], "epsilon": nf["epsilon"],
               "runs": nf["runs"], "noise_free_fraction": nf["noise_free_fraction"], "noise_free_ci95": nf["ci95"],
               "noise_free_probability": nf["noise_free_probability"], "sigma_c": nf["sigma_c"],
               "threshold": nf["threshold"], "two_error": nf["two_error"], "accuracy": s["accuracy_mean"],
               "accuracy_ci95": s["accuracy_ci95"], "opt_gap": s["opt_gap_mean"], "opt_gap_ci95": s["opt_gap_ci95"],
               "learns": s["learns"], "majority_rate": s["majority_rate_mean"]}
        if controls is not None:
            c = controls[(controls["dataset"] == nf["dataset"]) & (controls["model"] == nf["model"])
                         & (controls["r"] == row["r"]) & (controls["setting"] == setting)]
            if len(c):
                c = c.iloc[0]
                row.update({"control_accuracy": c["accuracy_mean"], "control_accuracy_ci95": c["accuracy_ci95"],
                            "control_opt_gap": c["opt_gap_mean"], "control_opt_gap_ci95": c["opt_gap_ci95"],
                            "control_learns": c["learns"]})
        rows.append(row)
    order = {name: i for i, name in enumerate(R_NAMES.values())}
    out = pd.DataFrame(rows, columns=COLUMNS)
    out["_r"] = out["r"].map(order)
    return out.sort_values(["dataset", "model", "zeta_reading", "rounds", "_r", "epsilon"]).drop(columns="_r") \
        .reset_index(drop=True)


def shown(table: pd.DataFrame) -> pd.DataFrame:
    """The Markdown view: value ± half-width, probabilities in scientific notation."""
    def pm(mean, half, fmt):
        if not np.isfinite(mean):
            return ""
        return f"{mean:{fmt}}" + (f" ± {half:.2g}" if np.isfinite(half) and half > 0 else "")

    out = table[["dataset", "model", "zeta_reading", "rounds", "r", "epsilon"]].copy()
    out["noise-free fraction"] = [pm(m, h, ".3g") for m, h in zip(table["noise_free_fraction"],
                                                                    table["noise_free_ci95"])]
    out["exact P(noise-free), round 1"] = [f"{v:.2g}" for v in table["noise_free_probability"]]
    out["sigma_c"] = [f"{v:.3g}" for v in table["sigma_c"]]
    out["threshold"] = [f"{v:.3g}" for v in table["threshold"]]
    out["2E"] = [f"{v:.2g}" for v in table["two_error"]]
    out["accuracy"] = [pm(m, h, ".4f") for m, h in zip(table["accuracy"], table["accuracy_ci95"])]
    out["opt gap"] = [pm(m, h, ".3g") for m, h in zip(table["opt_gap"], table["opt_gap_ci95"])]
    out["learns"] = table["learns"]
    out["control accuracy"] = [pm(m, h, ".4f") for m, h in zip(table["control_accuracy"],
                                                              table["control_accuracy_ci95"])]
    out["control opt gap"] = [pm(m, h, ".3g") for m, h in zip(table["control_opt_gap"], table["control_opt_gap_ci95"])]
    return out


def r_sensitivity_figure(table: pd.DataFrame, *, title: str, caption: str):
    """Per dataset three rows (noise-free fraction with the exact first-round probability;
    accuracy; optimality gap) × one column per (ζ reading, R); one colour per r, the control
    at that r dashed in the same colour."""
    panels = list(table.groupby(["zeta_reading", "rounds"], sort=True).groups) if len(table) else []
    datasets = list(dict.fromkeys(table["dataset"])) if len(table) else []
    metrics = [("noise_free_fraction", "noise-free fraction"), ("accuracy", "test accuracy"),
               ("opt_gap", "optimality gap (nats)")]
    nrows, ncols = max(1, 3 * len(datasets)), max(1, len(panels))
    fig, axes = plt.subplots(nrows, ncols, figsize=(3.5 * ncols, 2.5 * nrows), squeeze=False, sharex=True)
    colours = plt.get_cmap("tab10").colors
    names = [n for n in R_NAMES.values() if n in set(table["r"])] if len(table) else []
    stuck_drawn = False
    for d, dataset in enumerate(datasets):
        for j, (reading, rounds) in enumerate(panels):
            data = table[(table["dataset"] == dataset) & (table["zeta_reading"] == reading)
                         & (table["rounds"] == rounds)]
            for i, (metric, label) in enumerate(metrics):
                ax = axes[3 * d + i, j]
                for k, name in enumerate(names):
                    rows = data[data["r"] == name].sort_values("epsilon")
                    if rows.empty:
                        continue
                    colour = colours[k % 10]
                    x = rows["epsilon"].to_numpy(float)
                    mean = rows[metric].to_numpy(float)
                    half = rows["noise_free_ci95" if metric == "noise_free_fraction" else f"{metric}_ci95"] \
                        .fillna(0).to_numpy(float)
                    ax.plot(x, mean, marker="o", ms=3.5, lw=1.3, color=colour, label=f"PIDP-SGD, r = {name}")
                    ax.fill_between(x, *band(metric, mean, half), color=colour, alpha=0.15, lw=0)
                    if metric == "noise_free_fraction":
                        ax.plot(x, rows["noise_free_probability"], ls="none", marker="s", ms=5, mfc="none",
                                color=colour, label="exact P(noise-free step), first round")
                        continue
                    stuck = (rows["learns"] == "no").to_numpy()
                    if stuck.any():
                        ax.scatter(x[stuck], mean[stuck], **STUCK)
                        stuck_drawn = True
                    control = rows[f"control_{metric}"].to_numpy(float)
                    if np.isfinite(control).any():
                        ax.plot(x, control, ls="--", lw=1.1, marker="x", ms=3.5, color=colour,
                                label=f"batch-1 DP-SGD control, r = {name}")
                    if metric == "accuracy" and len(rows):
                        ax.axhline(rows["majority_rate"].mean(), color="grey", ls=":", lw=1.0,
                                   label="majority rate")
                if metric == "opt_gap":
                    ax.set_yscale("symlog", linthresh=1e-3)
                if metric == "noise_free_fraction":
                    ax.set_ylim(-0.05, 1.05)
                epsilon_axis(ax, data if len(data) else table)
                if metric == "opt_gap":
                    ensure_log_ticks(ax, "y")
                if i == 0:
                    ax.set_title(f"{dataset}: zeta {reading}, R = {rounds:g}", fontsize=9)
                if j == 0:
                    ax.set_ylabel(label, fontsize=8)
                if 3 * d + i == nrows - 1:
                    ax.set_xlabel("ε (log scale)")
                ax.grid(alpha=0.3, lw=0.5)
    if not datasets:
        axes[0, 0].text(0.5, 0.5, "no runs", ha="center", va="center", transform=axes[0, 0].transAxes)
    if stuck_drawn:
        axes[0, 0].scatter([], [], label=STUCK_LABEL, **STUCK)
        caption = f"{caption} {STUCK_CAPTION}"
    legend_and_caption(fig, axes, title, caption, ncol=4)
    return fig
