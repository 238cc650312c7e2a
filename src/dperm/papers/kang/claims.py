"""Kang et al.'s Section 7 claims tested on our Figure 1-2 summary, PIDP-SGD's noise-free table
and the r-sensitivity table, with the shared predicates (:mod:`dperm.report.claims`): one row per
claim and panel and one overall row per claim; every verdict names its test, and a verdict
resting on a cell that does not learn is inconclusive.

PIDP-SGD is judged at r = ‖θ*‖ (``pidp-sgd-reference``); the r = 1 variant is drawn, not judged.
Two claims are ours (``source: ours``): PIDP-SGD against its batch-1 DP-SGD control (does the
influence test pay for its share of ε?), and the control's own optimality gap (what the
non-private start θ̃ does alone)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...report import claims as c
from ...report.guard import settings_text
from ...report.stats import t_quantile

PIDP = "pidp-sgd-reference"
CONTROL = "dp-sgd-batch1"
BASELINES = ["dp-sgd", "outpert-sgd", "dp-lssgd"]
METHODS = ["dp-sgd", "outpert-sgd", "dp-lssgd", PIDP]  # the paper's; dp-gd-filter is ours, judged apart
EXTRA = ["dp-gd-filter"]
#: "almost 0" optimality gap, in nats
ALMOST_ZERO = 0.01
#: a noise-free fraction whose interval lies below this: no step escapes the noise
NONE_ESCAPE = 1e-3
#: the r-sensitivity settings where the branch "fires": a noise-free fraction of at least this somewhere
FIRES = 0.01


def _estimate(row, metric: str = "accuracy") -> c.Estimate:
    """A cell's estimate named by its key (several PIDP-SGD keys share one registered label)."""
    return c.estimate(row, metric, name=f"{row['algorithm']} ({settings_text(row)})")


def _curve(cells: pd.DataFrame, key: str, metric: str = "accuracy"):
    rows = cells[cells["algorithm"] == key].sort_values("epsilon")
    return [_estimate(r, metric) for _, r in rows.iterrows()], rows["epsilon"].to_numpy(float)


def _at(cells: pd.DataFrame, key: str, eps: float):
    rows = cells[(cells["algorithm"] == key) & np.isclose(cells["epsilon"].astype(float), eps)]
    return rows.iloc[0] if len(rows) else None


def _best_baseline(cells: pd.DataFrame, eps: float):
    rows = [r for r in (_at(cells, key, eps) for key in BASELINES) if r is not None]
    return max(rows, key=lambda r: r["accuracy_mean"]) if rows else None


def _reference(cells: pd.DataFrame):
    rows = cells[cells["algorithm"] == "nonprivate"]
    return [_estimate(rows.iloc[0])] if len(rows) else []


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


def _noise_free_curve(rows: pd.DataFrame, where: str):
    """The noise-free fraction of a table's rows (noise_free or r_sensitivity) as estimates."""
    rows = rows.sort_values("epsilon")
    half_column = "ci95" if "ci95" in rows else "noise_free_ci95"
    out = []
    for _, r in rows.iterrows():
        n, half = int(r["runs"]), float(r[half_column])
        std = half * np.sqrt(n) / t_quantile(n - 1) if n > 1 and np.isfinite(half) else np.nan
        out.append(c.Estimate(f"noise-free fraction ({where} at ε = {r['epsilon']:g})",
                              float(r["noise_free_fraction"]), half, n, std))
    return out, rows["epsilon"].to_numpy(float)


def escape(fractions, eps) -> c.Verdict:
    """Claim 6, the mechanism: the noise-free fraction rises with ε (:func:`c.rises`); where the
    rise is inconclusive because no step escapes at any ε (every fraction's 95% interval below
    :data:`NONE_ESCAPE`, :func:`c.within`), not supported: the mechanism does not operate."""
    rise = c.rises(fractions, eps)
    if rise.verdict != c.INCONCLUSIVE:
        return rise
    nothing = [c.within(f, -np.inf, NONE_ESCAPE, "noise-free fraction") for f in fractions]
    if all(v.verdict == c.SUPPORTED for v in nothing):
        return c.Verdict(c.NOT_SUPPORTED, f"{rise.test}; 95% interval of the noise-free fraction below "
                                          f"{NONE_ESCAPE:g} at every ε",
                         f"no step escapes the noise at any ε: {rise.reason}")
    return rise


def _r_setting(row) -> str:
    return f"r = {row['r']}, zeta {row['zeta_reading']}, R = {row['rounds']:g}"


def claims(summary: pd.DataFrame, noise_free: pd.DataFrame | None = None,
           r_sensitivity: pd.DataFrame | None = None) -> pd.DataFrame:
    out = []
    panels = list(summary.groupby(["dataset", "model"], sort=False))
    overall: dict[str, list] = {}

    def add(claim, scope, verdict, source="paper"):
        out.append(c.row(claim, scope, verdict, source))
        overall.setdefault((claim, source), []).append(verdict)

    if noise_free is not None and len(noise_free) and "algorithm" in noise_free:
        noise_free = noise_free[noise_free["algorithm"] == PIDP]
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
            beats = c.greater_than(curve[-1], _estimate(hi), guarded=reference)
            grows = _margin_grows(curve[-1], _estimate(hi), curve[0], _estimate(lo))
            both = c.combine([beats, grows], "parts")
            add("2. PIDP-SGD beats the baselines, more so as epsilon grows", scope,
                c.Verdict(both.verdict, both.test, f"at the largest ε: {beats.reason}; {grows.reason}"))
            # 4. worse at small epsilon on some datasets
            add("4. PIDP-SGD is worse than the best baseline at the smallest epsilon on some datasets", scope,
                c.lower_than(curve[0], _estimate(lo), guarded=reference))
        # 3. optimality gap almost 0 on some datasets
        gaps, geps = _curve(cells, PIDP, "opt_gap")
        finite = [g for g in gaps if np.isfinite(g.mean)]
        if finite:
            best = min(finite, key=lambda g: g.mean)
            what = f"smallest optimality gap (nats, almost 0: < {ALMOST_ZERO})"
            add("3. PIDP-SGD's optimality gap is almost 0 on some datasets", scope,
                c.guard(best, test=what) or c.within(best, -np.inf, ALMOST_ZERO, what))
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
            rows = noise_free[(noise_free["dataset"] == dataset) & (noise_free["model"] == model)]
            fractions, feps = _noise_free_curve(rows, f"{dataset}/{model}")
            if len(fractions) >= 2:
                add("6. more steps escape the noise as epsilon grows (PIDP-SGD's noise-free fraction)", scope,
                    escape(fractions, feps))
        # 7. (ours) the influence test pays for its share of epsilon: PIDP-SGD above its control
        control, ceps = _curve(cells, CONTROL)
        if control and np.isclose(ceps[-1], eps[-1]):
            add("7. PIDP-SGD beats its batch-1 DP-SGD control (same start, T, step size, r) at the largest epsilon",
                scope, c.greater_than(curve[-1], control[-1], guarded=reference), "ours")
            gaps, _ = _curve(cells, CONTROL, "opt_gap")
            if gaps and np.isfinite(gaps[-1].mean):
                what = f"optimality gap at the largest ε (nats, almost 0: < {ALMOST_ZERO})"
                add("8. the control alone (no test: the non-private start theta~) has an optimality gap almost 0 "
                    "at the largest epsilon", scope, c.guard(gaps[-1], test=what)
                    or c.within(gaps[-1], -np.inf, ALMOST_ZERO, what), "ours")
    # 6'. the mechanism where the paper's free settings let the branch fire (r-sensitivity)
    if r_sensitivity is not None and len(r_sensitivity):
        claim = "6'. more steps escape the noise as epsilon grows, where the branch fires (r-sensitivity)"
        for (dataset, model, *_), rows in r_sensitivity.groupby(
                ["dataset", "model", "zeta_reading", "rounds", "r"], sort=False):
            if not (rows["noise_free_fraction"] >= FIRES).any():
                continue
            where = f"{dataset}/{model}, {_r_setting(rows.iloc[0])}"
            fractions, feps = _noise_free_curve(rows, where)
            if len(fractions) >= 2:
                add(claim, f"{dataset} / {model}, {_r_setting(rows.iloc[0])}", escape(fractions, feps))
        fired = r_sensitivity.groupby(["dataset", "zeta_reading", "rounds", "r"])["noise_free_fraction"].max()
        if (fired < FIRES).all():
            add(claim, "all r-sensitivity settings",
                c.Verdict(c.NOT_SUPPORTED, f"noise-free fraction below {FIRES:g} at every ε",
                          f"no step escapes the noise in any of the {len(fired)} settings"))
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
