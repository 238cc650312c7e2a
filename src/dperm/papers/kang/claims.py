"""Kang et al.'s Section 7 claims tested on our Figure 1-2 summary and PIDP-SGD's noise-free
table, with the shared predicates (:mod:`dperm.report.claims`): one row per claim and panel and
one overall row per claim; every verdict names its test, and a verdict resting on a cell that
does not learn is inconclusive."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...report import claims as c
from ...report.stats import t_quantile

PIDP = "pidp-sgd-reference"
BASELINES = ["dp-sgd", "outpert-sgd", "dp-lssgd"]
METHODS = ["dp-sgd", "outpert-sgd", "dp-lssgd", PIDP]  # the paper's; dp-gd-filter is ours, judged apart
EXTRA = ["dp-gd-filter"]
#: "almost 0" optimality gap, in nats
ALMOST_ZERO = 0.01


def _curve(cells: pd.DataFrame, key: str, metric: str = "accuracy"):
    rows = cells[cells["algorithm"] == key].sort_values("epsilon")
    return [c.estimate(r, metric) for _, r in rows.iterrows()], rows["epsilon"].to_numpy(float)


def _at(cells: pd.DataFrame, key: str, eps: float):
    rows = cells[(cells["algorithm"] == key) & np.isclose(cells["epsilon"].astype(float), eps)]
    return rows.iloc[0] if len(rows) else None


def _best_baseline(cells: pd.DataFrame, eps: float):
    rows = [r for r in (_at(cells, key, eps) for key in BASELINES) if r is not None]
    return max(rows, key=lambda r: r["accuracy_mean"]) if rows else None


def _reference(cells: pd.DataFrame):
    rows = cells[cells["algorithm"] == "nonprivate"]
    return [c.estimate(rows.iloc[0])] if len(rows) else []


def _margin_grows(pidp_hi, base_hi, pidp_lo, base_lo) -> c.Verdict:
    """(PIDP − best baseline) at the largest ε exceeds it at the smallest ε: the 95% interval of the
    difference of the two differences (independent cells, Welch-style standard error, the
    smallest sample's degrees of freedom) above 0."""
    test = "95% interval of (margin at the largest ε − margin at the smallest ε) above / below 0"
    stopped = c.guard(pidp_hi, base_hi, pidp_lo, base_lo, test=test)
    if stopped:
        return stopped
    parts = (pidp_hi, base_hi, pidp_lo, base_lo)
    delta = (pidp_hi.mean - base_hi.mean) - (pidp_lo.mean - base_lo.mean)
    n = min(p.n for p in parts)
    if n < 2 or not all(np.isfinite(p.std) for p in parts):
        return c.Verdict(c.INCONCLUSIVE, test, "too few fits")
    half = t_quantile(n - 1) * float(np.sqrt(sum(p.std ** 2 / p.n for p in parts)))
    reason = (f"margin {pidp_lo.mean - base_lo.mean:+.4g} → {pidp_hi.mean - base_hi.mean:+.4g}: change "
              f"{delta:+.4g} ± {half:.2g}")
    if delta - half > 0:
        return c.Verdict(c.SUPPORTED, test, reason)
    if delta + half < 0:
        return c.Verdict(c.NOT_SUPPORTED, test, reason)
    return c.Verdict(c.INCONCLUSIVE, test, f"the interval contains 0: {reason}")


def _noise_free_curve(noise_free: pd.DataFrame, dataset: str, model: str):
    rows = noise_free[(noise_free["dataset"] == dataset) & (noise_free["model"] == model)].sort_values("epsilon")
    out = []
    for _, r in rows.iterrows():
        n, half = int(r["runs"]), float(r["ci95"])
        std = half * np.sqrt(n) / t_quantile(n - 1) if n > 1 and np.isfinite(half) else np.nan
        out.append(c.Estimate(f"noise-free fraction ({dataset}/{model} at ε = {r['epsilon']:g})",
                              float(r["noise_free_fraction"]), half, n, std))
    return out, rows["epsilon"].to_numpy(float)


def claims(summary: pd.DataFrame, noise_free: pd.DataFrame | None = None) -> pd.DataFrame:
    out = []
    panels = list(summary.groupby(["dataset", "model"], sort=False))
    overall: dict[str, list] = {}

    def add(claim, scope, verdict, source="paper"):
        out.append(c.row(claim, scope, verdict, source))
        overall.setdefault((claim, source), []).append(verdict)

    for (dataset, model), cells in panels:
        scope = f"{dataset} / {model}"
        reference = _reference(cells)
        # 1. accuracy rises with epsilon for every method (the paper's four; the filter is ours)
        for keys, claim, source in ((METHODS, "1. accuracy rises with epsilon for every method", "paper"),
                                    (EXTRA, "1'. DP-GD with individual filters rises with epsilon", "ours")):
            verdicts = []
            for key in keys:
                curve, eps = _curve(cells, key)
                if len(curve) >= 2:
                    v = c.rises(curve, eps)
                    verdicts.append(c.Verdict(v.verdict, v.test, f"{key}: {v.reason}"))
            if verdicts:
                both = c.combine(verdicts, "methods")
                add(claim, scope, c.Verdict(both.verdict, both.test,
                                            f"{both.reason}. " + "; ".join(v.reason for v in verdicts)), source)
        curve, eps = _curve(cells, PIDP)
        if not curve:
            continue
        lo, hi = _best_baseline(cells, eps[0]), _best_baseline(cells, eps[-1])
        if lo is not None and hi is not None:
            # 2. PIDP-SGD beats the baselines, more so as epsilon grows
            beats = c.greater_than(curve[-1], c.estimate(hi), guarded=reference)
            grows = _margin_grows(curve[-1], c.estimate(hi), curve[0], c.estimate(lo))
            both = c.combine([beats, grows], "parts")
            add("2. PIDP-SGD beats the baselines, more so as epsilon grows", scope,
                c.Verdict(both.verdict, both.test, f"at the largest ε: {beats.reason}; {grows.reason}"))
            # 4. worse at small epsilon on some datasets
            add("4. PIDP-SGD is worse than the best baseline at the smallest epsilon on some datasets", scope,
                c.lower_than(curve[0], c.estimate(lo), guarded=reference))
        # 3. optimality gap almost 0 on some datasets
        gaps, geps = _curve(cells, PIDP, "opt_gap")
        finite = [g for g in gaps if np.isfinite(g.mean)]
        if finite:
            best = min(finite, key=lambda g: g.mean)
            add("3. PIDP-SGD's optimality gap is almost 0 on some datasets", scope,
                c.within(best, -np.inf, ALMOST_ZERO, f"smallest optimality gap (nats, almost 0: < {ALMOST_ZERO})"))
        # 5. Figure 2: the optimality gap falls as epsilon grows, for every method
        verdicts = []
        for key in METHODS:
            gaps, geps = _curve(cells, key, "opt_gap")
            gaps_eps = [(g, e) for g, e in zip(gaps, geps) if np.isfinite(g.mean)]
            if len(gaps_eps) >= 2:
                v = c.falls([g for g, _ in gaps_eps], [e for _, e in gaps_eps])
                verdicts.append(c.Verdict(v.verdict, v.test, f"{key}: {v.reason}"))
        if verdicts:
            both = c.combine(verdicts, "methods")
            add("5. the optimality gap falls as epsilon grows (Figure 2)", scope,
                c.Verdict(both.verdict, both.test, f"{both.reason}. " + "; ".join(v.reason for v in verdicts)))
        # 6. the mechanism: more instances escape the noise as epsilon grows
        if noise_free is not None and len(noise_free):
            fractions, feps = _noise_free_curve(noise_free, dataset, model)
            if len(fractions) >= 2:
                add("6. more steps escape the noise as epsilon grows (PIDP-SGD's noise-free fraction)", scope,
                    c.rises(fractions, feps))
    for (claim, source), verdicts in overall.items():
        some = claim.startswith(("3.", "4."))  # "on some datasets": one panel suffices
        if some and any(v.verdict == c.SUPPORTED for v in verdicts):
            combined = c.Verdict(c.SUPPORTED, verdicts[0].test,
                                 f"supported on {sum(v.verdict == c.SUPPORTED for v in verdicts)} of "
                                 f"{len(verdicts)} panels")
        else:
            combined = c.combine(verdicts)
        out.append(c.row(claim, "all panels", combined, source))
    return pd.DataFrame(out, columns=c.COLUMNS)
