"""Experiment group 3 (tilted ERM on Adult) and group 4 (adversarial training): tables and
figures from the paper's own evaluation records (:mod:`.evaluate`).

Tilted ERM: for each tilt t and privacy setting (non-private, each ε), the mean test loss and
accuracy over all test rows ("average") and in the worst sex × race group (largest mean loss,
smallest accuracy), with 95% intervals over the draws; the excess tilted objective
F_t(w_priv) − F_t(w_nonprivate) on the training rows; the sensitivity and noise scale of the
release against t, beside the ERM value and the e^{tM} growth of our bound.

Adversarial training: for each training radius r_train and privacy setting, the accuracy under
the worst ℓ2 attack of each test radius r_test.
"""

from __future__ import annotations

import matplotlib.pyplot as plt  # noqa: E402,I001  (after dperm.report.figures chose the backend)
import numpy as np
import pandas as pd

from ...report.figures import STUCK, band, legend_and_caption, mark_off_scale, off_scale
from ...report.stats import extra_column, t_interval, with_extra

TERM_METRICS = ("test_loss", "worst_group_loss", "accuracy", "worst_group_accuracy")
TERM_LABELS = {"test_loss": "average test loss", "worst_group_loss": "worst-group test loss",
               "accuracy": "average test accuracy", "worst_group_accuracy": "worst-group test accuracy"}


def _mean_ci(v):
    interval = t_interval(v)
    return interval.mean, interval.half


def _stats(row: dict, name: str, values) -> None:
    """``row[name]``, ``_ci95`` and ``_std`` of ``values`` (their mean, 95% half-width, std)."""
    interval = t_interval(values)
    row[name], row[f"{name}_ci95"], row[f"{name}_std"] = interval.mean, interval.half, interval.std


def _guard(row: dict, g: pd.DataFrame) -> None:
    """The learning guard's inputs and verdict for the cell of records ``g`` (clean accuracy)."""
    from ...report.guard import learns

    acc = t_interval(g["accuracy"])
    row["majority_rate"] = float(g["majority_rate"].mean())
    row["positive_share"] = float(g["positive_share"].mean())
    row["learns"] = learns(acc.mean, acc.half, row["majority_rate"], row["positive_share"])


#: what the tilted-ERM and adversarial records carry in ``extra`` beside the algorithm's noise
NOISE = ("sensitivity", "noise_scale")
GROUPS = ("worst_group_loss", "worst_group_accuracy", "tilted_objective", "tilted_objective_t", "smallest_group",
          "n_groups")


def load_term(records: pd.DataFrame) -> pd.DataFrame:
    """Tilted-ERM records with the groups hook's measures (dperm.protocol.metric_hooks) and the
    release's noise as columns (non-private fits: no noise, 0)."""
    out = with_extra(records, NOISE + GROUPS)
    out["tilt"] = out["tilted_objective_t"]  # the fit's own tilt (the algorithm's, defaults filled in)
    out["worst_loss_group"] = extra_column(records, "worst_loss_group")
    out["worst_accuracy_group"] = extra_column(records, "worst_accuracy_group")
    out[list(NOISE)] = out[list(NOISE)].fillna(0.0)
    return out


def load_adv(records: pd.DataFrame, radii) -> pd.DataFrame:
    """Adversarial-training records with the robust hook's accuracies and training radius and the
    release's noise as columns (non-private fits: no noise, 0)."""
    from ...protocol.metric_hooks import radius_token

    out = with_extra(records, NOISE + ("train_radius",) + tuple(f"robust_accuracy_{radius_token(r)}" for r in radii))
    out[list(NOISE)] = out[list(NOISE)].fillna(0.0)
    return out


def _setting(records: pd.DataFrame) -> np.ndarray:
    """"non-private" or "ε = <ε>" per record (from the numeric ε column: inf for non-private)."""
    eps = records["epsilon"].to_numpy(float)
    return np.array(["non-private" if np.isinf(e) else f"ε = {e:g}" for e in eps])


def term_table(records: pd.DataFrame) -> pd.DataFrame:
    r = records.assign(privacy=_setting(records))
    nonprivate = (r[r["privacy"] == "non-private"].groupby(["tilt", "fold", "repeat"])["tilted_objective"].mean())
    rows = []
    for (tilt, privacy), g in r.groupby(["tilt", "privacy"], sort=True):
        row = {"tilt": tilt, "privacy": privacy, "epsilon": g["epsilon"].iloc[0], "draws": len(g)}
        for metric in TERM_METRICS:
            _stats(row, metric, g[metric])
        _guard(row, g)
        keys = list(zip(g["tilt"], g["fold"], g["repeat"]))
        excess = g["tilted_objective"].to_numpy(float) - np.array([nonprivate.get(k, np.nan) for k in keys])
        row["excess_tilted_objective"], row["excess_tilted_objective_ci95"] = _mean_ci(excess)
        row["sensitivity"] = float(g["sensitivity"].mean())
        row["noise_scale"] = float(g["noise_scale"].mean())
        row["worst_loss_group"] = g["worst_loss_group"].mode().iloc[0]
        row["worst_accuracy_group"] = g["worst_accuracy_group"].mode().iloc[0]
        row["smallest_group"] = int(g["smallest_group"].min())
        row["grad_evals"] = float(g["grad_evals"].mean())
        row["seconds"] = float(g["fit_seconds"].mean())
        rows.append(row)
    table = pd.DataFrame(rows)
    erm = table[(table["tilt"] == 0) & (table["privacy"] != "non-private")]["sensitivity"]
    table["sensitivity_over_erm"] = table["sensitivity"] / (float(erm.iloc[0]) if len(erm) else np.nan)
    return table


def term_figure(table: pd.DataFrame, *, title, caption):
    fig, axes = plt.subplots(2, 2, figsize=(8.6, 6.4), squeeze=False)
    settings = ["non-private"] + sorted((s for s in table["privacy"].unique() if s != "non-private"),
                                        key=lambda s: float(s.split("= ")[1]))
    colours = {"non-private": "black", **{s: c for s, c in zip(settings[1:], ("tab:red", "tab:blue", "tab:green"))}}
    for ax, metric in zip(axes.flat, TERM_METRICS):
        kind = "accuracy" if "accuracy" in metric else "test_loss"  # the metric's range, for the bands
        drawn = {}
        for setting in settings:
            g = table[table["privacy"] == setting].sort_values("tilt")
            mean, half = g[metric].to_numpy(float), g[f"{metric}_ci95"].fillna(0).to_numpy(float)
            ax.plot(g["tilt"], mean, marker="o", ms=4, lw=1.2, color=colours[setting], label=setting,
                    ls="--" if setting == "non-private" else "-")
            ax.fill_between(g["tilt"], *band(kind, mean, half), color=colours[setting], alpha=0.15, lw=0)
            stuck = (g["learns"] == "no").to_numpy()
            if stuck.any():
                ax.scatter(g["tilt"].to_numpy(float)[stuck], mean[stuck], **STUCK)
            drawn[setting] = (g["tilt"].to_numpy(float), mean)
        if "accuracy" in metric:
            ax.set_ylim(0.0, 1.02)
        else:
            limits = off_scale([m for _, means in drawn.values() for m in means])
            if limits is not None:
                ax.set_ylim(max(limits[0], 0.0), limits[1])
                for setting, (xs, means) in drawn.items():
                    mark_off_scale(ax, xs, means, limits, colours[setting])
        ax.set_xlabel("tilt t")
        ax.set_ylabel(TERM_LABELS[metric])
        ax.grid(alpha=0.3, lw=0.5)
    legend_and_caption(fig, axes, title, caption)
    return fig


def term_noise_figure(table: pd.DataFrame, *, n: int, loss_range: float, title, caption):
    """Sensitivity and noise scale against t (log y), with the bound's e^{tM}/(e^{tM} + n − 1)
    growth drawn from the ERM value."""
    fig, axes = plt.subplots(1, 2, figsize=(8.6, 3.4), squeeze=False)
    private = table[table["privacy"] != "non-private"]
    first = private.sort_values("tilt").groupby("privacy").head(1)
    ts = np.linspace(0, float(table["tilt"].max()), 200)
    for ax, metric, name in ((axes[0, 0], "sensitivity", "sensitivity of the release"),
                             (axes[0, 1], "noise_scale", "noise scale (σ per coordinate)")):
        for setting, colour in zip(sorted(private["privacy"].unique(), key=lambda s: float(s.split("= ")[1])),
                                   ("tab:red", "tab:blue", "tab:green")):
            g = private[private["privacy"] == setting].sort_values("tilt")
            ax.plot(g["tilt"], g[metric], marker="o", ms=4, lw=1.2, color=colour, label=setting)
            if metric == "sensitivity":
                break  # the sensitivity does not depend on ε
        base = float(first[metric].iloc[0]) if metric == "sensitivity" else None
        if base is not None:
            growth = np.exp(ts * loss_range) * n / (np.exp(ts * loss_range) + n - 1)
            ax.plot(ts, base * growth, ls=":", color="grey", label="ERM value × n e^{tM}/(e^{tM} + n − 1)")
        ax.set_yscale("log")
        ax.set_xlabel("tilt t")
        ax.set_ylabel(name)
        ax.grid(alpha=0.3, which="both", lw=0.5)
    legend_and_caption(fig, axes, title, caption, ncol=3)
    return fig


def adv_table(records: pd.DataFrame, radii) -> pd.DataFrame:
    r = records.assign(privacy=_setting(records))
    rows = []
    for (dataset, r_train, privacy), g in r.groupby(["dataset", "train_radius", "privacy"], sort=True):
        row = {"dataset": dataset, "r_train": r_train, "privacy": privacy, "epsilon": g["epsilon"].iloc[0],
               "draws": len(g), "sensitivity": float(g["sensitivity"].mean()),
               "noise_scale": float(g["noise_scale"].mean())}
        for radius in radii:
            _stats(row, f"r_test={float(radius):g}", g[f"robust_accuracy_{float(radius):g}"])
        _guard(row, g)
        rows.append(row)
    return pd.DataFrame(rows)


def adv_figure(table: pd.DataFrame, radii, *, title, caption):
    datasets = list(dict.fromkeys(table["dataset"]))
    settings = ["non-private"] + sorted((s for s in table["privacy"].unique() if s != "non-private"),
                                        key=lambda s: float(s.split("= ")[1]))
    fig, axes = plt.subplots(len(datasets), len(settings), figsize=(3.3 * len(settings), 3.0 * len(datasets)),
                             squeeze=False, sharey="row")
    colours = plt.get_cmap("viridis")
    trains = sorted(table["r_train"].unique())
    xs = [float(r) for r in radii]
    for i, dataset in enumerate(datasets):
        for j, setting in enumerate(settings):
            ax = axes[i, j]
            majority = None
            for k, r_train in enumerate(trains):
                g = table[(table["dataset"] == dataset) & (table["privacy"] == setting) & (table["r_train"] == r_train)]
                if g.empty:
                    continue
                mean = np.array([g[f"r_test={x:g}"].iloc[0] for x in xs])
                half = np.nan_to_num(np.array([g[f"r_test={x:g}_ci95"].iloc[0] for x in xs]))
                colour = colours(k / max(len(trains) - 1, 1) * 0.85)
                stuck = g["learns"].iloc[0] == "no"
                ax.plot(xs, mean, marker="o", ms=4, lw=1.2, color=colour,
                        label=f"trained at r = {r_train:g}" + (" (does not learn)" if stuck else ""))
                ax.fill_between(xs, *band("accuracy", mean, half), color=colour, alpha=0.15, lw=0)
                if stuck:
                    ax.scatter(xs, mean, **STUCK)
                majority = float(g["majority_rate"].iloc[0])
            if majority is not None:
                ax.axhline(majority, color="grey", ls=":", lw=1.0, label="majority rate (a constant classifier)")
            ax.set_title(f"{dataset}, {setting}", fontsize=9)
            ax.set_ylim(0.0, 1.02)
            ax.set_xlabel("attack radius r_test")
            if j == 0:
                ax.set_ylabel("accuracy under attack")
            ax.grid(alpha=0.3, lw=0.5)
    legend_and_caption(fig, axes, title, caption)
    return fig
