"""Figures from summary tables (:mod:`.tables`): curves against ε and parameter sweeps.

Every curve is a cell mean with its 95% confidence band; NonPrivate and Majority are horizontal
lines; ε axes are logarithmic. An algorithm whose ε is computed (SGD-MA) is drawn at the mean
ε its accountant reports. A dataset that could not be had gets a panel saying so, never a
silently missing one. Reference variants and non-private tuning are named in the caption.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")  # files only; no display on servers and in CI

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from ..files import atomic_path  # noqa: E402

BASELINES = {"nonprivate": ("NonPrivate", "black", "--"), "majority": ("Majority", "grey", ":")}
METRIC_LABELS = {"accuracy": "test accuracy", "test_loss": "test loss (mean)",
                 "objective": "training objective (mean loss)",
                 "opt_gap": "optimality gap", "excess_risk": "excess empirical risk"}
MARKERS = "osD^vP*Xh<>"
#: where a metric lives: bands are clipped to it (an accuracy band ends at 0 and 1)
METRIC_RANGES = {"accuracy": (0.0, 1.0), "test_loss": (0.0, np.inf), "objective": (0.0, np.inf)}
#: how a cell that does not learn (dperm.report.guard) is drawn over its curve
STUCK = dict(marker="x", s=46, color="crimson", linewidths=1.6, zorder=6)
STUCK_LABEL = "does not learn (majority rate, one class)"
STUCK_CAPTION = ("Red crosses: cells that do not learn (accuracy within its interval of the majority rate, "
                 "one class predicted).")


def band(metric: str, mean, half):
    """A 95% band's (low, high), clipped to the metric's range (:data:`METRIC_RANGES`)."""
    low, high = METRIC_RANGES.get(metric, (-np.inf, np.inf))
    return np.clip(mean - half, low, high), np.clip(mean + half, low, high)


def off_scale(values, fence: float = 10.0):
    """(low, high) y-limits that keep a panel's curves readable when one value is far out: the
    values beyond ``fence`` interquartile ranges of the quartiles are off the scale (None when
    none is, or with fewer than four values)."""
    v = np.asarray([x for x in values if np.isfinite(x)], dtype=float)
    if len(v) < 4:
        return None
    q1, q3 = np.percentile(v, [25, 75])
    if q3 - q1 <= 1e-9 * max(abs(q1), abs(q3), 1.0):
        # most values coincide (curves flat at one rate): every other value would be "far out" and
        # the panel would zoom onto a single line; draw them all instead
        return None
    spread = q3 - q1
    inside = v[(v >= q1 - fence * spread) & (v <= q3 + fence * spread)]
    if len(inside) == len(v):
        return None
    pad = 0.08 * max(inside.max() - inside.min(), spread)
    return inside.min() - pad, inside.max() + pad


def mark_off_scale(ax, xs, means, limits, colour) -> None:
    """Points outside ``limits`` drawn as arrows on the panel's edge with their value."""
    low, high = limits
    for x, y in zip(xs, means):
        if np.isfinite(y) and (y > high or y < low):
            edge = high if y > high else low
            ax.annotate(f"{y:.3g}", (x, edge), xytext=(0, -12 if y > high else 12), textcoords="offset points",
                        ha="center", fontsize=6.5, color=colour,
                        arrowprops=dict(arrowstyle="->", color=colour, lw=0.8))


def _cycle(keys):
    """A colour and marker per key, in the order given (the ε lines of a sweep)."""
    colours = plt.get_cmap("tab10").colors
    return {k: (colours[i % 10], MARKERS[i % len(MARKERS)]) for i, k in enumerate(keys)}


# Key suffixes of variants drawn in their base's colour, dashed: the published code's
# (dp-agd-reference) and a base whose hyper-parameters private selection chooses
# (dp-agd-private-tuning, docs/privacy.md#private-selection). A key may end in a profile suffix
# after that (dp-agd-private-tuning-public: the same on public bounds, docs/privacy.md#public-bounds),
# which keeps the base's colour: nonprivate-public is still the NonPrivate baseline.
VARIANT_SUFFIXES = ("-reference", "-private-tuning")
PROFILE_SUFFIXES = ("-public",)


def _without_profile(key: str) -> str:
    for suffix in PROFILE_SUFFIXES:
        if key.endswith(suffix):
            return key.removesuffix(suffix)
    return key


def base_key(key: str) -> str:
    """The algorithm a variant key belongs to (variants are key suffixes: dp-agd-reference;
    profile suffixes are dropped: dp-agd-public and dp-agd-private-tuning-public belong to dp-agd)."""
    key = _without_profile(key)
    for suffix in VARIANT_SUFFIXES:
        if key.endswith(suffix):
            return key.removesuffix(suffix)
    return key


def is_variant(key: str) -> bool:
    """Whether ``key`` is a variant of its base (drawn dashed and hollow)."""
    return any(_without_profile(key).endswith(suffix) for suffix in VARIANT_SUFFIXES)


def baseline_of(key: str) -> str | None:
    """The baseline (:data:`BASELINES`) ``key`` draws, if any: nonprivate, nonprivate-public, ..."""
    core = _without_profile(key)
    return core if core in BASELINES else None


def algorithm_styles(keys, palette=()) -> dict:
    """Colour, marker, line style and marker fill per algorithm key, the same in every figure
    of a paper: an algorithm's colour and marker follow its base key's first appearance in
    ``palette`` (the paper's algorithm list), then in ``keys``, so a figure that omits an
    algorithm does not shift the others. A variant (:data:`VARIANT_SUFFIXES`) takes its base's
    colour and marker, dashed and hollow."""
    bases = list(dict.fromkeys(base_key(k) for k in (*palette, *keys) if not baseline_of(k)))
    colours = plt.get_cmap("tab10").colors
    styles = {}
    for key in keys:
        if baseline_of(key):
            continue
        i, variant = bases.index(base_key(key)), is_variant(key)
        styles[key] = dict(color=colours[i % 10], marker=MARKERS[i % len(MARKERS)],
                           ls="--" if variant else "-", mfc="none" if variant else colours[i % 10])
    return styles


def _x(rows: pd.DataFrame) -> np.ndarray:
    """Target ε, or the computed ε where the setting is a step count (T<steps>)."""
    computed = rows["setting"].astype(str).str.startswith("T").to_numpy()
    return np.where(computed, rows["epsilon_spent_mean"], rows["epsilon"]).astype(float)


def epsilon_axis(ax, data):
    """Log ε axis with ticks at the target ε values, written plainly (0.05, 0.1, ... 1.6)."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

    ax.set_xscale("log")
    targets = sorted({float(e) for e in data["epsilon"] if np.isfinite(e)})
    if targets:
        ax.xaxis.set_major_locator(FixedLocator(targets))
        ax.xaxis.set_minor_locator(NullLocator())
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))


def plain_log_axis(ax, axis: str = "x", values=None) -> None:
    """A log axis written plainly: ticks at ``values`` (a few grid values) or else at 1, 2 and 5
    times the powers of ten when the axis spans at most two decades (0.02, 0.05, 0.1, 0.2) and at
    the powers alone beyond (0.01, 0.1, 1, 10, 1,000); no minor labels (2×10⁻² 3×10⁻² ...
    overlap). Call it once the panel's data are drawn."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, LogLocator, NullFormatter

    target = ax.xaxis if axis == "x" else ax.yaxis
    (ax.set_xscale if axis == "x" else ax.set_yscale)("log")
    values = sorted({float(v) for v in values if np.isfinite(v) and v > 0}) if values is not None else []
    low, high = ax.get_xlim() if axis == "x" else ax.get_ylim()
    subs = (1.0, 2.0, 5.0) if low > 0 and np.log10(high / low) <= 2 else (1.0,)
    target.set_major_locator(FixedLocator(values) if values else LogLocator(base=10, subs=subs))
    target.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}" if v >= 10 else f"{v:g}"))
    target.set_minor_formatter(NullFormatter())


def ensure_log_ticks(ax, axis: str = "y", at_least: int = 2) -> None:
    """A log (or symlog) axis whose range holds fewer than ``at_least`` labelled ticks (a panel
    spanning 0.02 to 0.03 holds no power of ten) gets three, evenly spaced in log and written
    with two significant digits. Call it once the panel's data are drawn."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter

    target = ax.yaxis if axis == "y" else ax.xaxis
    low, high = sorted(ax.get_ylim() if axis == "y" else ax.get_xlim())
    shown = [t for t in target.get_majorticklocs() if low <= t <= high]
    if len(shown) >= at_least or not (low > 0 and high > low):
        return
    values = sorted({float(f"{v:.2g}") for v in np.geomspace(low, high, 5)[1:-1]})
    target.set_major_locator(FixedLocator(values))
    target.set_major_formatter(FuncFormatter(lambda v, _: f"{v:.2g}"))
    target.set_minor_formatter(NullFormatter())


def _unavailable(ax, heading, reason):
    """An explicit empty panel: the data could not be had (or no runs exist), never a gap."""
    text = "data unavailable offline" if "unavailable" in reason else reason
    ax.text(0.5, 0.5, f"{heading}:\n{text}", ha="center", va="center", transform=ax.transAxes,
            fontsize=10, color="darkred", wrap=True)
    ax.set_xticks([])
    ax.set_yticks([])
    ax.set_title(heading)


def save_figure(fig, png, pdf):
    for path, fmt in ((png, "png"), (pdf, "pdf")):
        with atomic_path(path, suffix=f".{fmt}") as tmp:
            fig.savefig(tmp, format=fmt, dpi=150, bbox_inches="tight")
    plt.close(fig)


def paired_styles(style: dict, pairs: dict) -> dict:
    """``style`` with each paired key drawn as its partner (colour, marker), dash-dotted with
    hollow markers; a key paired with a baseline gets that baseline's colour, dash-dotted."""
    style = dict(style)
    for key, partner in pairs.items():
        if partner in BASELINES:
            style[key] = dict(color=BASELINES[partner][1], ls="-.", baseline=BASELINES[partner][0])
        else:
            style[key] = {**style[partner], "ls": "-.", "mfc": "none"}
    return style


def epsilon_figure(summary: pd.DataFrame, *, panels, algorithms, title="", caption="",
                   unavailable=None, metrics=("accuracy", "objective"), labels=None, palette=(), pairs=None):
    """Rows = metrics, columns = (dataset, model) panels; one line per algorithm key against ε.
    ``palette``: the paper's algorithm keys, which fix each algorithm's colour (see
    :func:`algorithm_styles`); ``pairs``: key -> the key whose colour it is drawn in
    (:func:`paired_styles`). A figure with many curves over few panels is drawn wider, so that
    its legend fits."""
    unavailable, labels, pairs = unavailable or {}, labels or {}, pairs or {}
    style = paired_styles(algorithm_styles([k for k in algorithms if k not in pairs], palette), pairs)
    models = {m for _, m in panels}
    width = max(3.6 * len(panels), 0.45 * len(algorithms))  # room for a long legend under few panels
    fig, axes = plt.subplots(len(metrics), len(panels), figsize=(width, 3.0 * len(metrics)),
                             squeeze=False, sharex="col")
    stuck_drawn = False
    for j, (dataset, model) in enumerate(panels):
        data = summary[(summary["dataset"] == dataset) & (summary["model"] == model)]
        heading = dataset if len(models) == 1 else f"{dataset}, {model}"
        for i, metric in enumerate(metrics):
            ax = axes[i, j]
            if dataset in unavailable or data.empty:
                _unavailable(ax, heading, unavailable.get(dataset, "no runs"))
                continue
            drawn = []  # (key, x, mean) of every curve, for the off-scale limits
            levels = []  # the reference lines (NonPrivate, Majority): they stay in view
            for key in algorithms:
                cell = data[data["algorithm"] == key]
                stuck = (cell["learns"] == "no").to_numpy() if "learns" in cell else np.zeros(len(cell), bool)
                if baseline_of(key) or "baseline" in style.get(key, {}):
                    if cell.empty or not np.isfinite(cell[f"{metric}_mean"]).any():
                        continue
                    name, colour, dash = (BASELINES[baseline_of(key)] if key not in style else
                                          (style[key]["baseline"], style[key]["color"], style[key]["ls"]))
                    level = cell[f"{metric}_mean"].iloc[0]
                    levels.append(level)
                    ax.axhline(level, color=colour, ls=dash, lw=1.2,
                               label=labels.get(key, name) + (" (does not learn)" if stuck.any() else ""))
                    if stuck.any():
                        ax.scatter([1.0], [level], transform=ax.get_yaxis_transform(), clip_on=False, **STUCK)
                        stuck_drawn = True
                    continue
                cell = cell.assign(x=_x(cell)).sort_values("x")
                stuck = (cell["learns"] == "no").to_numpy() if "learns" in cell else np.zeros(len(cell), bool)
                if cell.empty or not np.isfinite(cell[f"{metric}_mean"]).any():
                    continue
                mean, half = cell[f"{metric}_mean"].to_numpy(), cell[f"{metric}_ci95"].fillna(0).to_numpy()
                ax.plot(cell["x"], mean, lw=1.3, ms=4, label=labels.get(key, cell["label"].iloc[0]),
                        **style[key])
                ax.fill_between(cell["x"], *band(metric, mean, half), color=style[key]["color"], alpha=0.15, lw=0)
                if stuck.any():
                    ax.scatter(cell["x"].to_numpy()[stuck], mean[stuck], **STUCK)
                    stuck_drawn = True
                drawn += [(key, x, m) for x, m in zip(cell["x"], mean)]
            limits = off_scale([m for _, _, m in drawn])
            if limits is not None and levels:
                pad = 0.03 * (limits[1] - limits[0])
                limits = (min(limits[0], min(levels) - pad), max(limits[1], max(levels) + pad))
            if limits is not None:
                ax.set_ylim(*limits)
                for key in dict.fromkeys(k for k, _, _ in drawn):
                    points = [(x, m) for k, x, m in drawn if k == key]
                    mark_off_scale(ax, [x for x, _ in points], [m for _, m in points], limits, style[key]["color"])
            if ax.get_yscale() == "linear":
                ax.ticklabel_format(axis="y", useOffset=False)  # never "1e-10 + 8.7e-1" above a panel
            epsilon_axis(ax, data)
            if i == 0:
                ax.set_title(heading)
            if i == len(metrics) - 1:
                ax.set_xlabel("ε (log scale)")
            if j == 0:
                ax.set_ylabel(METRIC_LABELS.get(metric, metric))
            ax.grid(alpha=0.3, which="both", lw=0.5)
    if stuck_drawn:
        axes[0, 0].scatter([], [], label=STUCK_LABEL, **STUCK)
        caption = f"{caption} {STUCK_CAPTION}".strip()
    legend_and_caption(fig, axes, title, caption)
    return fig


def metric_label(metric: str, protocol: dict | None = None) -> str:
    """Axis label of a metric; accuracy and the test loss are training figures under the ``full``
    protocol (fit and evaluated on all rows, as Lee & Kifer's Figure 1)."""
    if (protocol or {}).get("kind") == "full" and metric in ("accuracy", "test_loss"):
        return {"accuracy": "training accuracy", "test_loss": "training loss (mean)"}[metric]
    return METRIC_LABELS.get(metric, metric)


def sweep_figure(summary: pd.DataFrame, *, param, values, title="", caption="",
                 metrics=("accuracy", "objective"), param_label=None, protocol=None):
    """One panel per metric; x = the swept hyper-parameter, one line per ε. ``values`` maps each
    cell's algorithm key (a sweep key such as ``dp-agd-splits20``) to its swept value as the
    configuration gives it."""
    rows = summary.copy()
    unknown = sorted(set(rows["algorithm"]) - set(values))
    if unknown:
        raise ValueError(f"sweep figure of {param!r}: no swept value for algorithm keys {unknown}")
    rows["value"] = rows["algorithm"].map(values).astype(float)
    fig, axes = plt.subplots(1, len(metrics), figsize=(4.2 * len(metrics), 3.2), squeeze=False)
    style = _cycle(sorted(rows["epsilon"].unique()))
    stuck_drawn = False
    for j, metric in enumerate(metrics):
        ax = axes[0, j]
        for eps, group in rows.groupby("epsilon"):
            group = group.sort_values("value")
            colour, marker = style[eps]
            mean, half = group[f"{metric}_mean"].to_numpy(), group[f"{metric}_ci95"].fillna(0).to_numpy()
            ax.plot(group["value"], mean, marker=marker, color=colour, lw=1.3, ms=4, label=f"ε = {eps:g}")
            ax.fill_between(group["value"], *band(metric, mean, half), color=colour, alpha=0.15, lw=0)
            stuck = (group["learns"] == "no").to_numpy() if "learns" in group else np.zeros(len(group), bool)
            if stuck.any():
                ax.scatter(group["value"].to_numpy()[stuck], mean[stuck], **STUCK)
                stuck_drawn = True
        ax.set_xlabel(param_label or param)
        ax.set_ylabel(metric_label(metric, protocol))
        ax.grid(alpha=0.3, lw=0.5)
    if stuck_drawn:
        axes[0, 0].scatter([], [], label=STUCK_LABEL, **STUCK)
        caption = f"{caption} {STUCK_CAPTION}".strip()
    legend_and_caption(fig, axes, title, caption)
    return fig


def legend_and_caption(fig, axes, title, caption, ncol=5):
    handles, labels = {}, {}
    for ax in axes.flat:
        for h, l in zip(*ax.get_legend_handles_labels()):
            labels.setdefault(l, h)
    handles = list(labels.values())
    rows = -(-len(handles) // ncol)  # legend rows below the panels
    if handles:
        fig.legend(handles, list(labels), loc="lower center", ncol=min(ncol, len(handles)), fontsize=8,
                   frameon=False, bbox_to_anchor=(0.5, -0.02))
    if title:
        fig.suptitle(title, fontsize=11)
    fig.tight_layout(rect=(0, 0.045 + 0.035 * max(rows, 1), 1, 0.97 if title else 1))
    if caption:
        fig.text(0.5, -0.03 - 0.03 * max(rows, 1), caption, ha="center", va="top", fontsize=7.5,
                 wrap=True, color="dimgray")
