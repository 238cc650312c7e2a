"""Experiment group 1: the black box against the conceptual algorithm and prior methods.

From the cell records of the ``compare-*`` experiments: a table of every cell (excess empirical
risk F(w) − F*, test accuracy, gradient evaluations, seconds per run, with 95% intervals), a
table of ratios (each method's excess risk over the conceptual algorithm's, its cost over the
non-private L-BFGS solve), the excess-risk figures (log–log) and the cost figure.
"""

from __future__ import annotations

import matplotlib.pyplot as plt  # noqa: E402,I001  (after dperm.report.figures chose the backend)
import numpy as np
import pandas as pd

from ...report.figures import algorithm_styles, epsilon_axis, legend_and_caption
from ...report.stats import extra_column, t_interval
from . import plots

KEYS = ["experiment", "privacy", "dataset", "model", "algorithm", "label", "epsilon"]
EXTRA = ["solver", "guarantee", "steps_for_target", "grad_evals_for_target", "sensitivity", "noise_scale",
         "alpha_certified", "lambda", "lipschitz", "mu", "expected_noise_norm", "expected_noise_norm_sq",
         # the solver_speed hook's measurement (dperm.algorithms.blackbox.speed)
         "grad_evals_to_alpha", "reached_alpha", "certified_grad_evals", "gap_at_stop", "alpha_measured",
         "budget_evals"]
REFERENCE = "outpert-exact"
BASELINE = "nonprivate"


def load(records: pd.DataFrame) -> pd.DataFrame:
    """The records with ``privacy`` ("pure" for δ = 0, else "approx") and the extra fields used."""
    out = records.copy()
    # an experiment's privacy is its private fits' (non-private fits carry δ = 0 in either)
    out["privacy"] = np.where(out.groupby("experiment")["delta"].transform("max") > 0, "approx", "pure")
    for key in EXTRA:
        out[key] = extra_column(out, key)
    return out


def _mean_ci(values) -> tuple[float, float, int, float]:
    interval = t_interval(values)
    return interval.mean, interval.half, interval.n, interval.std


def cell_table(records: pd.DataFrame) -> pd.DataFrame:
    """One row per cell: means, 95% half-widths and standard deviations of excess risk and
    accuracy, the learning guard's inputs and verdict, mean cost, the solver facts (guarantee,
    α certified, sensitivity, noise scale), the measured solver speed where the cell asked for
    it, and, for a black box on a non-smooth loss, the bound of Theorem 3.1(a) on its expected
    excess risk, α + L·E‖z‖ + (μ/2)·E‖z‖² (:func:`nonsmooth_bound`)."""
    from ...report.guard import learns

    rows = []
    for key, g in records.groupby(KEYS, sort=False, dropna=False):
        row = dict(zip(KEYS, key))
        for metric in ("excess_risk", "accuracy"):
            row[metric], row[f"{metric}_ci95"], row["n"], row[f"{metric}_std"] = _mean_ci(g[metric])
        row["majority_rate"] = float(g["majority_rate"].mean())
        row["positive_share"] = float(g["positive_share"].mean())
        row["learns"] = learns(row["accuracy"], row["accuracy_ci95"], row["majority_rate"], row["positive_share"])
        row["grad_evals"] = float(g["grad_evals"].mean())
        row["seconds"] = float(g["fit_seconds"].mean())
        for extra in EXTRA:
            values = [v for v in g[extra] if v is not None]
            row[extra] = values[0] if values else None
        row["nonsmooth_bound"] = nonsmooth_bound(row)
        rows.append(row)
    return pd.DataFrame(rows)


def nonsmooth_bound(row) -> float:
    """E[F(w_A + z)] − F* ≤ α + L·E‖z‖ + (μ/2)·E‖z‖² for the black box on an L-Lipschitz loss with
    (μ/2)‖w‖² (Lowy & Razaviyayn Thm 3.1(a), constants ours: the loss part moves by at most L‖z‖,
    the regulariser by μ⟨w_A, z⟩ + (μ/2)‖z‖², whose first term has mean 0 for symmetric z); NaN
    for other cells (smooth losses have the tighter (β/2)·E‖z‖² of Thm 3.2)."""
    if row.get("solver") != "agd-smoothed":
        return np.nan
    return float(row["alpha_certified"]) + float(row["lipschitz"]) * float(row["expected_noise_norm"]) \
        + 0.5 * float(row["mu"]) * float(row["expected_noise_norm_sq"])


def ratio_table(cells: pd.DataFrame) -> pd.DataFrame:
    """Per (experiment, dataset, model, algorithm): the excess risk over the conceptual
    algorithm's at the same ε (geometric mean over ε, and its range), the gradient evaluations
    and seconds over the non-private L-BFGS solve's, and what the solver's α would cost."""
    rows = []
    for key, g in cells.groupby(["experiment", "privacy", "dataset", "model"], sort=False):
        ref = g[g["algorithm"] == REFERENCE].set_index("epsilon")
        base = g[g["algorithm"] == BASELINE]
        base_evals = float(base["grad_evals"].iloc[0]) if len(base) else np.nan
        base_seconds = float(base["seconds"].iloc[0]) if len(base) else np.nan
        for algorithm, a in g.groupby("algorithm", sort=False):
            if algorithm == BASELINE:
                continue
            a = a.set_index("epsilon")
            common = a.index.intersection(ref.index)
            ratio = (a.loc[common, "excess_risk"] / ref.loc[common, "excess_risk"]).to_numpy(float)
            ratio = ratio[np.isfinite(ratio) & (ratio > 0)]
            rows.append({
                "experiment": key[0], "privacy": key[1], "dataset": key[2], "model": key[3], "algorithm": algorithm,
                "label": a["label"].iloc[0],
                "excess_ratio_geomean": float(np.exp(np.log(ratio).mean())) if len(ratio) else np.nan,
                "excess_ratio_min": float(ratio.min()) if len(ratio) else np.nan,
                "excess_ratio_max": float(ratio.max()) if len(ratio) else np.nan,
                "grad_evals": float(a["grad_evals"].mean()),
                "grad_evals_vs_lbfgs": float(a["grad_evals"].mean()) / base_evals,
                "seconds": float(a["seconds"].mean()), "seconds_vs_lbfgs": float(a["seconds"].mean()) / base_seconds,
                "grad_evals_for_target_alpha": _target_cost(a),
                "guarantee": a["guarantee"].dropna().iloc[0] if a["guarantee"].notna().any() else "",
                **_measured(a),
            })
    return pd.DataFrame(rows)


def _measured(cells: pd.DataFrame) -> dict:
    """The measured iterations to α (full-gradient equivalents), whether α was reached within the
    budget, and the certified count, where the cell's experiment measured them (one measurement
    per split, the same for every ε)."""
    names = {"grad_evals_to_alpha": "measured_evals_to_alpha", "reached_alpha": "reached_alpha",
             "certified_grad_evals": "certified_evals_to_alpha", "budget_evals": "measured_budget_evals",
             "gap_at_stop": "measured_gap_at_stop", "alpha_measured": "alpha"}
    out = {}
    for key, name in names.items():
        values = cells[key].dropna() if key in cells else pd.Series(dtype=object)
        out[name] = values.iloc[0] if len(values) else np.nan
    return out


def _target_cost(cells: pd.DataFrame) -> float:
    """Gradient evaluations a black-box solver needs for the target α = μΔ²/8: what it ran (GD,
    AGD, Katyusha without the Markov remedy) or, for step-capped SGD, what the target needs."""
    solver = cells["solver"].dropna()
    if solver.empty:
        return np.nan
    if cells["grad_evals_for_target"].notna().any():
        return float(cells["grad_evals_for_target"].dropna().iloc[0])
    markov = cells["guarantee"].astype(str).str.startswith("high probability").any()
    return np.nan if markov else float(cells["grad_evals"].mean())


def excess_figure(cells: pd.DataFrame, privacy: str, *, title: str, caption: str, order, labels):
    """Excess empirical risk against ε (log–log), one panel per (dataset, model); bands and
    limits as :mod:`.plots` says; a cell that does not learn is marked with a red cross."""
    from ...report.figures import STUCK

    data = cells[(cells["privacy"] == privacy) & (cells["algorithm"] != BASELINE)]
    panels = list(dict.fromkeys(zip(data["dataset"], data["model"])))
    cols = min(4, len(panels))
    rows_n = -(-len(panels) // cols)
    fig, axes = plt.subplots(rows_n, cols, figsize=(3.6 * cols, 3.1 * rows_n), squeeze=False)
    keys = [k for k in order if k in set(data["algorithm"])]
    style = algorithm_styles(keys, order)
    for i, (dataset, model) in enumerate(panels):
        ax = axes.flat[i]
        panel = data[(data["dataset"] == dataset) & (data["model"] == model)]
        curves = {}
        for key in keys:
            cell = panel[panel["algorithm"] == key].sort_values("epsilon")
            if not cell.empty:
                curves[key] = cell
        limits, _ = plots.log_limits([m for c in curves.values() for m in c["excess_risk"]])
        for key, cell in curves.items():
            xs, mean = cell["epsilon"].to_numpy(float), cell["excess_risk"].to_numpy(float)
            ax.plot(xs, plots.positive(mean), lw=1.2, ms=4, label=labels.get(key, key), **style[key])
            if limits is not None:
                plots.log_band(ax, xs, mean, cell["excess_risk_ci95"], style[key]["color"], limits)
            stuck = (cell["learns"] == "no").to_numpy()
            if stuck.any():
                ax.scatter(xs[stuck], mean[stuck], **STUCK)
        ax.set_yscale("log")
        plots.finish_log_panel(ax, {k: (c["epsilon"].to_numpy(float), c["excess_risk"].to_numpy(float))
                                    for k, c in curves.items()}, {k: style[k]["color"] for k in curves})
        epsilon_axis(ax, panel)
        ax.set_title(_short(dataset, model).replace("\n", " ", 1).replace("\n", ", "), fontsize=9)
        ax.set_xlabel("ε (log scale)")
        ax.set_ylabel("excess empirical risk F(w) − F*")
        ax.grid(alpha=0.3, which="both", lw=0.5)
    for ax in list(axes.flat)[len(panels):]:
        ax.set_visible(False)
    legend_and_caption(fig, axes, title, caption, ncol=3)
    return fig


def _short(dataset: str, model: str) -> str:
    """A bar label (lines) or panel title (with the line breaks made commas): "synthetic-logistic-n20000-d20"
    -> "synthetic / n20000 d20", and μ from the model key (the hinge named)."""
    name = dataset.replace("synthetic-logistic-", "synthetic\n").replace("-d", " d")
    return f"{name}\n{model.replace('lr-mu', 'μ = ').replace('svm-mu', 'hinge, μ = ')}"


def cost_figure(cells: pd.DataFrame, *, title: str, caption: str, order, labels):
    """Gradient evaluations (full-gradient equivalents) and seconds per run of each method, one
    group of bars per (dataset, model), ε-DP cells (the solves do not depend on ε)."""
    data = cells[cells["privacy"] == "pure"]
    groups = list(dict.fromkeys(zip(data["dataset"], data["model"])))
    keys = [k for k in order if k in set(data["algorithm"])]
    style = algorithm_styles([k for k in keys if k != BASELINE], order)
    fig, axes = plt.subplots(2, 1, figsize=(max(8.0, 1.45 * len(groups)), 6.6), squeeze=False, sharex=True)
    width = 0.8 / max(len(keys), 1)
    measured_label = "measured evaluations to α (solver_speed)"
    for i, (metric, name) in enumerate((("grad_evals", "gradient evaluations per run"),
                                        ("seconds", "seconds per run"))):
        ax = axes[i, 0]
        for k, key in enumerate(keys):
            heights, measured = [], []
            for dataset, model in groups:
                cell = data[(data["dataset"] == dataset) & (data["model"] == model) & (data["algorithm"] == key)]
                heights.append(float(cell[metric].mean()) if len(cell) else np.nan)
                values = pd.to_numeric(cell["grad_evals_to_alpha"], errors="coerce").dropna() if len(cell) else []
                measured.append(float(values.iloc[0]) if len(values) else np.nan)
            xs = np.arange(len(groups)) + (k - len(keys) / 2 + 0.5) * width
            if key == BASELINE:  # white with a black hatch: no colour of the palette
                ax.bar(xs, heights, width, facecolor="white", edgecolor="black", hatch="//", lw=0.8,
                       label=labels.get(key, key))
            else:
                ax.bar(xs, heights, width, color=style[key]["color"], label=labels.get(key, key), alpha=0.85)
            if metric == "grad_evals" and np.isfinite(measured).any():
                ax.scatter(xs, measured, marker="_", s=260, linewidths=2.2, color="black", zorder=5,
                           label=measured_label)
                measured_label = None
        ax.set_yscale("log")
        ax.set_xticks(np.arange(len(groups)))
        ax.set_xticklabels([_short(d, m) for d, m in groups], fontsize=8)
        ax.set_ylabel(name, fontsize=9)
        ax.grid(alpha=0.3, which="both", axis="y", lw=0.5)
    legend_and_caption(fig, axes, title, caption, ncol=3)
    return fig
