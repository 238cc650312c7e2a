"""The accounting lab: ε(T) of the Poisson-subsampled Gaussian (rate q, noise multiplier σ,
add/remove) under five accountants, and the σ each needs for a target (ε, δ).

* ``advanced`` — the notes' route (Lemmas 15.2–15.4): each step's base Gaussian at δ_b = δ/(2Tq) is
  (ε_b, δ_b)-DP with ε_b = √(2 ln(1.25/δ_b))/σ (classical, Lemma 15.3; where ε_b ≥ 1 the exact
  Gaussian profile instead, since the classical form is not proven there), amplified to
  ln(1 + q(e^{ε_b} − 1)), composed over T steps by advanced composition with slack δ/2.
* ``moments32`` — Abadi et al.'s moments accountant with orders λ ≤ 32 as in the DP-AGD code (the
  minimum over those orders, without the code's read-at-32 slip).
* ``moments`` — the same with orders up to 256.
* ``rdp`` — RDP, orders up to 1024 and fractional, improved conversion (:mod:`dperm.privacy.rdp`).
* ``pld`` — dp-accounting's privacy loss distribution (:mod:`dperm.privacy.pld`).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ...algorithms.sgd_baselines import gaussian_epsilon_at
from ...privacy import advanced_composition, epsilon_sampled_gaussian, moments_log_moments, smallest_noise
from ...privacy.pld import epsilon_sampled_gaussian_pld

ACCOUNTANTS = ("advanced", "moments32", "moments", "rdp", "pld")
LABELS = {"advanced": "advanced composition (the notes)", "moments32": "moments accountant, orders ≤ 32",
          "moments": "moments accountant, orders ≤ 256", "rdp": "RDP (improved conversion)",
          "pld": "PLD (dp-accounting)"}


def epsilon_advanced(q: float, sigma: float, steps: int, delta: float) -> float:
    delta_step = delta / (2.0 * steps)
    delta_base = min(delta_step / q, 0.5)
    eps_base = math.sqrt(2.0 * math.log(1.25 / delta_base)) / sigma
    if eps_base >= 1.0:
        eps_base = gaussian_epsilon_at(delta_base, sigma, 1.0)
    eps_step = math.log1p(q * math.expm1(eps_base))
    return advanced_composition(max(eps_step, 1e-300), q * delta_base, steps, delta / 2.0)[0]


def _moments(q, sigma, steps, delta, max_order):
    log_moments = moments_log_moments(q, sigma, 1, max_order) * steps
    orders = np.arange(1, max_order + 1)
    return float(np.min((log_moments + math.log(1.0 / delta)) / orders))


def epsilon_of(accountant: str, q: float, sigma: float, steps: int, delta: float) -> float:
    if accountant == "advanced":
        return epsilon_advanced(q, sigma, steps, delta)
    if accountant == "moments32":
        return _moments(q, sigma, steps, delta, 32)
    if accountant == "moments":
        return _moments(q, sigma, steps, delta, 256)
    if accountant == "rdp":
        return epsilon_sampled_gaussian(q, sigma, steps, delta)
    return epsilon_sampled_gaussian_pld(q, sigma, steps, delta)


def epsilon_curves(spec: dict) -> pd.DataFrame:
    """One row per (q, σ, T, accountant): ε at the lab's δ."""
    rows = []
    for setting in spec["settings"]:
        q, sigma = float(setting["q"]), float(setting["sigma"])
        for steps in spec["steps"]:
            for acc in ACCOUNTANTS:
                rows.append({"q": q, "sigma": sigma, "steps": int(steps), "delta": spec["delta"], "accountant": acc,
                             "epsilon": epsilon_of(acc, q, sigma, int(steps), spec["delta"])})
    return pd.DataFrame(rows)


def ratio_table(curves: pd.DataFrame, reference_steps) -> pd.DataFrame:
    """ε of each accountant at the reference T, the ratios advanced/moments/RDP/PLD and
    √ln(T/δ), the factor the moments accountant saves over advanced composition."""
    wide = curves.pivot_table(index=["q", "sigma", "steps", "delta"], columns="accountant", values="epsilon")
    wide = wide.reset_index()
    wide = wide[wide["steps"].isin([int(t) for t in reference_steps])]
    out = wide[["q", "sigma", "steps", "delta", *ACCOUNTANTS]].copy()
    out["advanced/moments32"] = out["advanced"] / out["moments32"]
    out["moments32/rdp"] = out["moments32"] / out["rdp"]
    out["rdp/pld"] = out["rdp"] / out["pld"]
    out["advanced/pld"] = out["advanced"] / out["pld"]
    out["sqrt_ln_T_over_delta"] = np.sqrt(np.log(out["steps"] / out["delta"]))
    return out.reset_index(drop=True)


def sigma_for(accountant: str, epsilon: float, delta: float, q: float, steps: int) -> float:
    """Smallest σ (to 10⁻⁴ relative) with ε_accountant(σ) ≤ ε."""
    return smallest_noise(lambda sigma: epsilon_of(accountant, q, sigma, steps, delta), epsilon,
                          lo=math.log(0.3), hi=math.log(3.0), step=1.0, xtol=1e-4)


def sigma_table(spec: dict) -> pd.DataFrame:
    rows = []
    for target in spec["sigma_targets"]:
        eps, q, steps = float(target["epsilon"]), float(target["q"]), int(target["steps"])
        row = {"epsilon": eps, "delta": spec["delta"], "q": q, "steps": steps}
        for acc in ACCOUNTANTS:
            row[f"sigma_{acc}"] = sigma_for(acc, eps, spec["delta"], q, steps)
        row["advanced/moments32"] = row["sigma_advanced"] / row["sigma_moments32"]
        row["advanced/pld"] = row["sigma_advanced"] / row["sigma_pld"]
        row["rdp/pld"] = row["sigma_rdp"] / row["sigma_pld"]
        rows.append(row)
    return pd.DataFrame(rows)


def lab_figure(curves: pd.DataFrame, *, title: str, caption: str):
    from ...report.figures import legend_and_caption, plt  # plt with the Agg backend, chosen there

    settings = curves[["q", "sigma"]].drop_duplicates().to_records(index=False)
    fig, axes = plt.subplots(1, len(settings), figsize=(4.2 * len(settings), 4.2), squeeze=False)
    styles = {"advanced": ("C3", "-"), "moments32": ("C1", "--"), "moments": ("C1", "-"), "rdp": ("C0", "-"),
              "pld": ("C2", "-")}
    for ax, (q, sigma) in zip(axes[0], settings):
        part = curves[(curves["q"] == q) & (curves["sigma"] == sigma)]
        for acc in ACCOUNTANTS:
            line = part[part["accountant"] == acc].sort_values("steps")
            color, style = styles[acc]
            ax.plot(line["steps"], line["epsilon"], style, color=color, marker="o", ms=3, label=LABELS[acc])
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("steps T")
        ax.set_title(f"q = {q:g}, σ = {sigma:g}")
        ax.grid(True, which="both", alpha=0.3)
    axes[0][0].set_ylabel(f"ε at δ = {curves['delta'].iloc[0]:g}")
    legend_and_caption(fig, axes[0], title, caption, ncol=3)
    return fig
