"""The claims table: each main claim of Lowy & Razaviyayn that our experiments put to data, what
we measured, our verdict and the cells it rests on. Verdicts are ``holds``, ``partly`` (holds
with a qualification stated in the row) or ``does not hold``, decided by the rules in each
function's docstring from the tables of :mod:`.compare`, :mod:`.rates` and :mod:`.tilted`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

COLUMNS = ["claim", "paper", "test", "measured", "verdict", "cells"]


def _fmt(x, digits=3):
    return "nan" if not np.isfinite(x) else f"{x:.{digits}g}"


def _range(values):
    v = np.asarray(values, float)
    v = v[np.isfinite(v)]
    return (f"{_fmt(v.min())}–{_fmt(v.max())}" if len(v) else "no data"), v


def blackbox_factor(ratios: pd.DataFrame, factor: float) -> dict:
    """Holds if the geometric-mean excess-risk ratio of black box + GD/AGD over the conceptual
    algorithm is at most 1.25 × the predicted factor in every μ > 0 cell (partly if in most)."""
    rows = ratios[ratios["algorithm"].isin(["bb-gd", "bb-agd"]) & (ratios["model"] != "lr-mu0")]
    text, v = _range(rows["excess_ratio_geomean"])
    ok = np.mean(v <= 1.25 * factor) if len(v) else np.nan
    verdict = "holds" if ok == 1 else "partly" if ok >= 0.5 else "does not hold"
    return {"claim": "The black box reaches the conceptual excess risk up to a constant factor",
            "paper": "Thm 3.1-3.2, Prop. 3.1",
            "test": f"excess(black box + GD/AGD) / excess(certified minimiser) at the same eps; predicted {factor:g} "
                    "((Delta_alpha/Delta_F)^2 at alpha = mu Delta^2/8, quadratic regime)",
            "measured": f"geometric mean over eps per cell: {text} ({len(v)} cells, mu > 0)",
            "verdict": verdict, "cells": "compare-*: bb-gd, bb-agd vs outpert-exact, every dataset, mu > 0"}


def solve_cost(ratios: pd.DataFrame) -> dict:
    """Partly by construction: the black box costs its solver's run; we report how the certified
    AGD count compares with the non-private L-BFGS solve (gradient evaluations and seconds)."""
    rows = ratios[(ratios["algorithm"] == "bb-agd") & (ratios["model"] != "lr-mu0")]
    evals, _ = _range(rows["grad_evals_vs_lbfgs"])
    secs, s = _range(rows["seconds_vs_lbfgs"])
    verdict = "holds" if len(s) and np.all(s <= 3) else "partly"
    return {"claim": "Privacy at the cost of a non-private solve",
            "paper": "Sec. 3 (black box with any solver)",
            "test": "gradient evaluations and seconds of black box + AGD (certified count) over the non-private "
                    "L-BFGS solve",
            "measured": f"gradient evaluations x{evals}, seconds x{secs} (per run, noise draw included)",
            "verdict": verdict + ("" if verdict == "holds" else ": the certified, data-independent AGD count costs "
                                  "more than L-BFGS stopped by its gradient norm; both are one solve"),
            "cells": "compare-*-pure: bb-agd vs nonprivate"}


def solver_speed(ratios: pd.DataFrame) -> dict:
    """Holds if, at the same α (ε-DP cells), AGD and Katyusha need at most a third of GD's
    gradient evaluations and SGD needs more than GD, in every μ > 0 cell."""
    pure = ratios[(ratios["privacy"] == "pure") & (ratios["model"] != "lr-mu0")]
    table = pure.pivot_table(index=["experiment", "dataset", "model"], columns="algorithm",
                             values="grad_evals_for_target_alpha")
    needed = ["bb-gd", "bb-agd", "bb-katyusha", "bb-sgd"]
    table = table.dropna(subset=[k for k in needed if k in table.columns])
    if not set(needed) <= set(table.columns) or table.empty:
        return {"claim": "AGD and Katyusha need far fewer gradient evaluations than GD and SGD at the same alpha",
                "paper": "Cor. 3.1-3.2, Table 5", "test": "", "measured": "solvers missing from the grid",
                "verdict": "not tested", "cells": ""}
    agd, _ = _range(table["bb-agd"] / table["bb-gd"])
    kat, _ = _range(table["bb-katyusha"] / table["bb-gd"])
    sgd, _ = _range(table["bb-sgd"] / table["bb-gd"])
    agd_fast = bool((table["bb-agd"] <= table["bb-gd"] / 3).all())
    kat_fast = bool((table["bb-katyusha"] <= table["bb-gd"] / 3).all())
    sgd_slow = bool((table["bb-sgd"] > table["bb-gd"]).all())
    failed = [what for what, ok in (("AGD is not 3x below GD everywhere", agd_fast),
                                    ("Katyusha's certified epoch count (constant 4, 1.5 per epoch) is not 3x below "
                                     "GD everywhere", kat_fast),
                                    ("SGD is not above GD everywhere", sgd_slow)) if not ok]
    verdict = ("holds" if not failed else ("partly: " if len(failed) < 3 and sgd_slow else "does not hold: ")
               + "; ".join(failed))
    detail = "; ".join(f"{d}/{m}: GD {r['bb-gd']:.0f}, AGD {r['bb-agd']:.0f}, Katyusha {r['bb-katyusha']:.0f}, "
                       f"SGD {r['bb-sgd']:.3g}" for (_, d, m), r in table.iterrows())
    return {"claim": "AGD and Katyusha need far fewer gradient evaluations than GD and SGD at the same alpha",
            "paper": "Cor. 3.1-3.2 (runtimes), Table 5",
            "test": "certified gradient evaluations (full-gradient equivalents) to alpha = mu Delta^2/8; SGD: what "
                    "Bubeck's bound needs for that alpha (it is run capped)",
            "measured": f"AGD/GD {agd}, Katyusha/GD {kat}, SGD/GD {sgd}. {detail}",
            "verdict": verdict, "cells": "compare-*-pure: bb-gd, bb-agd, bb-katyusha, bb-sgd"}


def beats_zhang(ratios: pd.DataFrame) -> dict:
    """Holds if OutPert-GD's excess risk is above the conceptual algorithm's and the black box +
    AGD's (geometric mean over ε) in every cell, and AGD needs fewer gradient evaluations."""
    z = ratios[ratios["algorithm"] == "outpert-gd"].set_index(["experiment", "dataset", "model"])
    a = ratios[ratios["algorithm"] == "bb-agd"].set_index(["experiment", "dataset", "model"])
    common = z.index.intersection(a.index)
    over_exact, v1 = _range(z.loc[common, "excess_ratio_geomean"])
    over_bb = z.loc[common, "excess_ratio_geomean"] / a.loc[common, "excess_ratio_geomean"]
    over_bb_text, v2 = _range(over_bb)
    evals, v3 = _range(z.loc[common, "grad_evals"] / a.loc[common, "grad_evals"])
    won = (z.loc[common, "excess_ratio_geomean"] > 1) & (over_bb > 1)
    wins = float(won.mean()) if len(won) else np.nan
    lost = ", ".join(f"{e}/{d}/{m} (OutPert-GD/black box {r:.2f})"
                     for (e, d, m), r in over_bb[~won].items())
    verdict = ("holds" if wins == 1 else
               f"partly: in {int(won.sum())} of {len(won)} cells; not in {lost}" if wins >= 0.5 else "does not hold")
    return {"claim": "Output perturbation beats Zhang et al.'s OutPert-GD (smaller noise, faster)",
            "paper": "Sec. 2.3.1, 3.1 and App. C.2 discussions of [ZZMW17]",
            "test": "excess risk of OutPert-GD (Theorem 2/3 T, Lemma 2/3 sensitivity) over the certified minimiser's "
                    "and black box + AGD's; gradient evaluations over AGD's",
            "measured": f"excess ratio vs conceptual {over_exact}, vs black box + AGD {over_bb_text}; gradient "
                        "evaluations "
                        f"x{evals} of AGD's ({len(v1)} cells)",
            "verdict": verdict, "cells": "compare-*: outpert-gd vs outpert-exact, bb-agd"}


def rate_claims(slopes: pd.DataFrame, points: pd.DataFrame | None = None) -> list[dict]:
    """n⁻²: holds if the 95% interval of the fitted slope of each private algorithm lies within
    ±0.15 of −2 or contains it. d: holds if the curvature-normalised slope is within 0.15 of the
    noise law's slope (partly if only that, with the raw slope reported). Population: holds if at
    the largest n every private algorithm's population excess is within 2× the non-private one."""
    out = []

    def near(row, target, tol=0.15):
        return (row["ci95_low"] - tol <= target <= row["ci95_high"] + tol) or abs(row["fitted_slope"] - target) <= tol

    n_rows = slopes[(slopes["sweep"] == "n") & (slopes["quantity"] == "excess_risk")]
    ok = [near(r, -2.0) for _, r in n_rows.iterrows()]
    measured = "; ".join(f"{r['privacy']} {r['algorithm']}: {r['fitted_slope']:.2f} [{r['ci95_low']:.2f}, "
                         f"{r['ci95_high']:.2f}]" for _, r in n_rows.iterrows())
    out.append({"claim": "Excess empirical risk falls like n^-2 (smooth, strongly convex ERM)",
                "paper": "Cor. 2.2, Thm 3.2", "test": "log-log slope of E[F(w) - F*] against n, d = 20, eps = 1",
                "measured": measured,
                "verdict": "holds" if ok and all(ok) else "partly" if any(ok) else "does not hold",
                "cells": "rates-pure, rates-approx: synthetic-logistic-n{1000..100000}-d20"})
    d_raw = slopes[(slopes["sweep"] == "d") & (slopes["quantity"] == "excess_risk")]
    d_norm = slopes[(slopes["sweep"] == "d") & (slopes["quantity"] == "normalised_excess")]
    ok_norm = [near(r, r["noise_law_slope"]) for _, r in d_norm.iterrows()]
    ok_raw = [near(r, r["paper_slope"]) for _, r in d_raw.iterrows()]
    measured = ("raw: " + "; ".join(f"{r['privacy']} {r['algorithm']}: {r['fitted_slope']:.2f} (paper "
                                    f"{r['paper_slope']:g})" for _, r in d_raw.iterrows())
                + ". Curvature-normalised: " + "; ".join(
                    f"{r['privacy']} {r['algorithm']}: {r['fitted_slope']:.2f} "
                    f"[{r['ci95_low']:.2f}, {r['ci95_high']:.2f}] "
                    f"(noise law {r['noise_law_slope']:.2f})" for _, r in d_norm.iterrows()))
    verdict = ("holds" if ok_raw and all(ok_raw) else
               "partly: the noise law holds (curvature-normalised slopes); the raw excess grows more slowly "
               "because the "
               "curvature per direction falls with d on this data, which the worst-case beta hides"
               if ok_norm and all(ok_norm) else "does not hold")
    out.append({"claim": "eps-DP excess grows like d^2, (eps, delta)-DP like d",
                "paper": "Cor. 2.2 (and 2.1), Remark 2.3", "test": "log-log slope against d at n = 10,000, eps = 1",
                "measured": measured, "verdict": verdict,
                "cells": "rates-pure, rates-approx: synthetic-logistic-n10000-d{5..200}"})
    pop = slopes[(slopes["sweep"] == "n") & (slopes["quantity"] == "population_excess_risk")]
    measured = "; ".join(f"{r['privacy']} {r['algorithm']}: slope {r['fitted_slope']:.2f} [{r['ci95_low']:.2f}, "
                         f"{r['ci95_high']:.2f}]" for _, r in pop.iterrows())
    ratios = []
    if points is not None and len(points):
        largest = points[points["d"] == points.loc[points["population_excess_risk"].notna(), "d"].min()]
        largest = largest[largest["n"] == largest["n"].max()]
        base = largest.loc[largest["algorithm"] == "nonprivate", "population_excess_risk"]
        for _, r in largest[largest["algorithm"] != "nonprivate"].iterrows():
            if len(base) and base.iloc[0] > 0:
                ratios.append((r["privacy"], r["algorithm"], r["population_excess_risk"] / base.iloc[0], int(r["n"])))
    measured += (". Private over non-private population excess at the largest n: "
                 + "; ".join(f"{p} {a}: {x:.2f} (n = {n:,})" for p, a, x, n in ratios)) if ratios else ""
    close = [x <= 2.0 for _, _, x, _ in ratios]
    verdict = ("holds" if close and all(close) else
               "partly: the private excess falls faster than the non-private one (slope near -2, the private term) "
               "and is within 2x of it for some algorithms at the largest n" if any(close) else
               "does not hold at these n: the private term (slope -2) still dominates the statistical one")
    out.append({"claim": "Population excess risk reaches the non-private O(1/(mu n)) rate: privacy for free at large n",
                "paper": "Prop. 4.2, Cor. 4.2, Remark 4.1",
                "test": "excess population risk (held-out rows) against n: slopes, and private over non-private at the "
                        "largest n (holds if within 2x for every private algorithm)",
                "measured": measured, "verdict": verdict,
                "cells": "rates-pure, rates-approx, d = 20 (population sample never trained on)"})
    return out


def term_claims(table: pd.DataFrame) -> list[dict]:
    """Sensitivity: holds if the measured sensitivity ratio to ERM grows with t as the bound (it is
    our bound: the check is that it reduces to ERM at t = 0 and is monotone). Utility: reported."""
    private = table[table["privacy"] != "non-private"]
    first = private[private["privacy"] == private["privacy"].iloc[0]].sort_values("tilt")
    ratios = "; ".join(f"t = {t:g}: x{r:.3g}" for t, r in zip(first["tilt"], first["sensitivity_over_erm"]))
    mono = bool(np.all(np.diff(first["sensitivity"].to_numpy(float)) >= 0))
    rows = [{"claim": "Tilted ERM: sensitivity equals ERM's at t -> 0 and grows like e^{tM}",
             "paper": "Lemma 5.2, Thm 5.1-5.2",
             "test": "sensitivity of the release over the ERM value, against t (M = 4 on ||w|| <= 4); empirical "
                     "neighbour tests in tests/test_alg_lowy2021.py",
             "measured": ratios, "verdict": "holds" if mono and abs(first["sensitivity_over_erm"].iloc[0] - 1) < 1e-9
             else "does not hold", "cells": "term: term-tilt*"}]
    worst = []
    for setting, g in table.groupby("privacy"):
        g = g.sort_values("tilt")
        worst.append(f"{setting}: worst-group accuracy {g['worst_group_accuracy'].iloc[0]:.3f} (t = 0) -> "
                     f"{g['worst_group_accuracy'].iloc[-1]:.3f} (t = {g['tilt'].iloc[-1]:g}), worst-group loss "
                     f"{g['worst_group_loss'].iloc[0]:.3f} -> {g['worst_group_loss'].iloc[-1]:.3f}")
    np_rows = table[table["privacy"] == "non-private"].sort_values("tilt")
    loss_better = bool(len(np_rows) and np_rows["worst_group_loss"].iloc[-1] < np_rows["worst_group_loss"].iloc[0])
    acc_better = bool(len(np_rows) and np_rows["worst_group_accuracy"].iloc[-1]
                      > np_rows["worst_group_accuracy"].iloc[0])
    effect = {(True, True): "tilting improves the non-private worst group's loss and accuracy",
              (False, True): "tilting raises the non-private worst group's accuracy but not its loss (TERM "
                             "up-weights high-loss rows, not groups)",
              (True, False): "tilting lowers the non-private worst group's loss but not its accuracy",
              (False, False): "tilting improves neither the worst group's loss nor its accuracy here"}[
        (loss_better, acc_better)]
    private = table[table["privacy"] != "non-private"].sort_values("tilt")
    degrade = bool(len(private)) and all(
        g["worst_group_accuracy"].iloc[-1] < g["worst_group_accuracy"].iloc[0] for _, g in private.groupby("privacy"))
    rows.append({"claim": "Private TERM keeps the tilt's effect at a privacy cost growing with t",
                 "paper": "Sec. 5.1 (motivation after LBSS20), Thm 5.2",
                 "test": "worst sex x race group's test loss and accuracy against t, private and non-private",
                 "measured": "; ".join(worst),
                 "verdict": ("holds: " if (loss_better or acc_better) and not degrade else "partly: ") + effect
                 + ("; under privacy the noise grows like e^{tM} and the private worst-group accuracy falls with t"
                    if degrade else "; the private worst-group accuracy keeps the effect"),
                 "cells": "term: term-tilt*, term-nonprivate-tilt*"})
    return rows


def adv_claims(table: pd.DataFrame, radii) -> list[dict]:
    """Holds if, for every dataset and privacy setting, the model trained at the largest radius
    has the best accuracy under the largest test attack (partly if in some; settings where the
    training radius changes that accuracy by less than 0.01 are reported as no difference)."""
    big = f"r_test={float(max(radii)):g}"
    notes, won, lost, flat = [], [], [], []
    for (dataset, privacy), g in table.groupby(["dataset", "privacy"]):
        values = g.set_index("r_train")[big]
        notes.append(f"{dataset} {privacy}: " + ", ".join(f"r_train {r:g}: {v:.3f}" for r, v in values.items()))
        where = f"{dataset} {privacy}"
        if values.max() - values.min() < 0.01:
            flat.append(where)
        elif values.idxmax() == values.index.max():
            won.append(where)
        else:
            lost.append(where)
    verdict = "holds" if not lost and not flat else "partly" if won else "does not hold"
    if verdict != "holds":
        parts = [f"training at the largest radius wins under the strongest attack in {', '.join(won) or 'no setting'}"]
        if lost:
            parts.append(f"not in {', '.join(lost)} (the noise dominates)")
        if flat:
            parts.append(f"makes no difference in {', '.join(flat)} (isotropic features: the best direction, which "
                         "alone decides a linear model's robust accuracy, does not depend on r)")
        verdict += ": " + "; ".join(parts)
    return [{"claim": "Private adversarial training by output perturbation: robustness at the ERM sensitivity "
                      "2(R_x + r)/(mu n)",
             "paper": "Sec. 5.2, Lemma 5.4, Prop. 5.1, Alg. 5",
             "test": f"accuracy under the worst l2 attack of radius {max(radii):g}, models trained at each r_train, "
                     "private (each eps) and non-private",
             "measured": "; ".join(notes), "verdict": verdict,
             "cells": "adv, adv-synth: adv-radius*, adv-nonprivate-radius*"}]


def _canonical(row: dict) -> dict:
    """A rule's row in the shared claims columns (dperm.report.claims): holds -> supported, does
    not hold -> not supported, partly -> inconclusive (the qualification kept in the reason)."""
    from ...report import claims as c

    words = str(row["verdict"])
    verdict = (c.SUPPORTED if words.startswith("holds") else c.NOT_SUPPORTED if words.startswith("does not hold")
               else c.NOT_TESTED if words.startswith("not test") else c.INCONCLUSIVE)
    return c.row(row["claim"], row["paper"], c.Verdict(verdict, row["test"], f"{words}: {row['measured']} "
                                                                             f"(cells: {row['cells']})"))


def claims_table(ratios, slopes, points, term, adv, radii, factor: float) -> pd.DataFrame:
    from ...report.claims import COLUMNS as CLAIMS

    rows = [blackbox_factor(ratios, factor), solve_cost(ratios), solver_speed(ratios), beats_zhang(ratios)]
    rows += rate_claims(slopes, points) + term_claims(term) + adv_claims(adv, radii)
    return pd.DataFrame([_canonical(r) for r in rows], columns=CLAIMS)
