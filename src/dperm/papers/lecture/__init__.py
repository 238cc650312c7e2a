"""Wang's lecture notes, Lecture 15 (DP-GD, DP-SGD and the moments accountant). What the target
produces and how it departs from the notes: docs/papers/lecture.md.

The notes have no experiments; the grid (``config/papers/lecture.yaml``) runs their algorithms
(``dp-gd-lecture``, ``dp-sgd-lecture``) with the notes' calibrations and the tighter accountants
(RDP; PLD, tight up to its discretisation) on Lee & Kifer's datasets, SGD-MA under three
accountants, and the notes' rates on seeded synthetic data. This package computes the accounting
lab (:mod:`.lab`, not a grid of fits) and builds the SGD-MA, rates and claims tables and figures
from the cell records and summaries (:mod:`.analyses`), declared in ``PRODUCTS``.
"""

from __future__ import annotations

TITLE = "Wang's lecture notes (Lecture 15): DP-GD, DP-SGD, the moments accountant"

SCORECARD_TABLES = ("claims",)


def scorecard(tables):
    """The claims check's rows; the notes print no experimental numbers of their own."""
    from ...report.scorecard import PaperCard, claims_table

    return PaperCard(claims=claims_table(tables["claims"]),
                     note="The notes derive calibrations and rates and quote Abadi et al.'s deep-learning numbers; "
                          "they print no experiment of their own, so there is no published number to set ours beside "
                          "(the calibrations are checked against independent accountants in the tests).")


ANALYSES_SCHEMA = {
    "type": "object", "additionalProperties": False, "required": ["lab", "sgdma", "rates"],
    "properties": {
        "lab": {"description": "the accounting lab (epsilon(T) per accountant, sigma for a target)",
                "type": "object", "additionalProperties": False,
                "required": ["delta", "settings", "steps", "reference_steps", "sigma_targets"],
                "properties": {"delta": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
                               "settings": {"type": "array", "minItems": 1, "items": {
                                   "type": "object", "required": ["q", "sigma"], "additionalProperties": False,
                                   "properties": {"q": {"type": "number", "exclusiveMinimum": 0, "maximum": 1},
                                                  "sigma": {"type": "number", "exclusiveMinimum": 0}}}},
                               "steps": {"type": "array", "minItems": 1, "items": {"type": "integer", "minimum": 1}},
                               "reference_steps": {"type": "array", "minItems": 1,
                                                   "items": {"type": "integer", "minimum": 1}},
                               "sigma_targets": {"type": "array", "items": {
                                   "type": "object", "required": ["epsilon", "q", "steps"],
                                   "additionalProperties": False,
                                   "properties": {"epsilon": {"type": "number", "exclusiveMinimum": 0},
                                                  "q": {"type": "number", "exclusiveMinimum": 0, "maximum": 1},
                                                  "steps": {"type": "integer", "minimum": 1}}}}}},
        "sgdma": {"type": "object", "additionalProperties": False, "required": ["experiment", "algorithm"],
                  "properties": {"experiment": {"type": "string"}, "algorithm": {"type": "string"}}},
        "rates": {"type": "object", "additionalProperties": False, "required": ["experiments"],
                  "properties": {"experiments": {"type": "object", "additionalProperties": False,
                                                 "required": ["convex", "strong"],
                                                 "properties": {"convex": {"type": "string"},
                                                                "strong": {"type": "string"}}}}},
    },
}


def _lab(inputs):
    from ...report.products import Made, Table
    from .lab import LABELS, epsilon_curves, lab_figure, ratio_table, sigma_table

    spec = inputs.spec
    curves = epsilon_curves(spec)
    ratios = ratio_table(curves, spec["reference_steps"])
    accountants = "; ".join(f"{k}: {v}" for k, v in LABELS.items())
    note = (f"The accounting lab: ε at δ = {spec['delta']:g} of T steps of the Poisson-subsampled Gaussian (rate q, "
            f"noise multiplier σ, add/remove), at the reference T. Accountants — {accountants}. Advanced composition "
            "follows the notes (Lemmas 15.2–15.4: classical Gaussian at δ/(2Tq), amplification ln(1 + q(e^ε − 1)), "
            "slack δ/2; the exact Gaussian profile where the classical form's ε ≥ 1). Ratios: how many times the "
            "looser accountant's ε is the tighter's; √ln(T/δ) is the factor the notes say the moments accountant "
            "saves. Every ε is an upper bound by its own argument; none is a fit.")
    sigmas_note = (f"The smallest noise multiplier σ (to 1e-4 relative) each accountant needs for the target (ε, δ = "
                   f"{spec['delta']:g}) at sampling rate q over T steps; ratios of σ between accountants (noise std, "
                   "and so the gradient noise, scales with σ).")
    caption = ("ε against T (log–log) of the Poisson-subsampled Gaussian under each accountant at δ = "
               f"{spec['delta']:g}. Advanced composition grows fastest (like √T·√ln(T/δ) while the per-step ε is "
               "small, linearly in T beyond); the moments accountant like √T; "
               "orders ≤ 32 floor ε at ln(1/δ)/32 for small T; RDP (all orders, improved conversion) and PLD are "
               "tighter still.")
    figure = lab_figure(curves, title=inputs.title("The accounting lab: ε(T) per accountant"),
                        caption=inputs.caption(caption))
    curves_note = "ε(T) of every accountant and setting of the lab (the data of its figure)."
    return Made(tables={"lab_curves": Table(curves, curves_note), "lab": Table(ratios, note),
                        "sigmas": Table(sigma_table(spec), sigmas_note)},
                figures={"lab": figure})


def _sgdma(inputs):
    from ...report.products import Made, Table
    from .analyses import sgdma_figure, sgdma_table

    table = sgdma_table(inputs.cells)
    fits = int(table["fits"].max())
    note = ("SGD-MA (σ = 4, C = 4, b = ⌊√n + 10⌋, η = 0.05, λ = 0, Poisson batches; Lee & Kifer's Figure 2 "
            f"setting) on 5-fold CV; {fits} fits per point (Lee & Kifer: 100). One run per fold and step count; its ε "
            "under three accountants at δ = 1e-8: the moments accountant with orders ≤ 32 read at order 32 as the "
            "DP-AGD code (what Lee & Kifer's figure plots), RDP, PLD. Same weights, same accuracy: only ε moves.")
    caption = ("The same SGD-MA runs drawn at the ε of each accountant (points labelled by T): computed tighter, "
               "every point moves left. Beside Lee & Kifer's Figure 2 (lee2018 target), whose SGD-MA curve is the "
               f"dashed one here. {fits} fits per point, 95% intervals.")
    figure = sgdma_figure(table, title=inputs.title("SGD-MA under three accountants"), caption=inputs.caption(caption))
    return Made(tables={"sgdma": Table(table, note)}, figures={"sgdma": figure})


def _rates(inputs):
    from ...report.products import Made, Table
    from .analyses import rates_figure, rates_table

    names = inputs.spec["experiments"]
    points, slopes = rates_table({"convex": inputs.summary(names["convex"]), "strong": inputs.summary(names["strong"])})
    fits = int(points["fits"].max())
    note = ("The notes' DP-SGD (one example per step, Lemma 15.5's σ, T = n², ball of radius 25, per-example "
            "gradients clipped to L = 1) on seeded synthetic logistic data (d = 5 features + bias, min-max scaled), "
            f"ε = 8 (the largest the notes' condition allows at T = n²), δ = 1e-5, {fits} runs per n: excess "
            "empirical risk F(θ̂) − min F on the training rows (min F: the certified unconstrained optimum). Convex: "
            "λ = 0, η_t = ‖C‖/(G√t), averaged iterate; strongly convex: λ = α = 1, η_t = 1/(αt), last iterate.")
    slopes_note = ("Least-squares slope of log excess risk on log n against the notes' rate exponents (−1 for "
                   "Õ(√d/(nε)), −2 for Õ(d/(n²ε²)); their log factors are ignored, so slopes a little flatter are "
                   "expected).")
    caption = ("Excess empirical risk of the notes' DP-SGD with T = n² against n (95% intervals), with the notes' "
               "rates (dashed, anchored at the smallest n) and the fitted slopes in the titles.")
    figure = rates_figure(points, slopes, title=inputs.title("The notes' rates: DP-SGD with T = n²"),
                          caption=inputs.caption(caption))
    return Made(tables={"rates": Table(points, note), "rates_slopes": Table(slopes, slopes_note)},
                figures={"rates": figure})


def _claims(inputs):
    from ...report.products import Made, Table
    from .analyses import claims

    table = claims(inputs.table("lab"), inputs.table("sigmas"), inputs.summary("accuracy"), inputs.cells,
                   inputs.table("sgdma"), inputs.table("rates_slopes"))
    note = ("The notes' claims against what this target measured (accounting lab, the accuracy and SGD-MA "
            "experiments, the rates); every verdict names its test (dperm.report.claims). 'Buys accuracy': the "
            "paired 95% t-interval of the accuracy difference on the same folds and draws (every epsilon of a "
            "dataset pooled) above 0. A verdict resting on a cell that does not learn (accuracy at the majority "
            "rate, one class predicted) is inconclusive. Claims marked 'ours' are this project's, not the notes'; "
            "claims on data the project does not have are listed as not tested, with the reason.")
    return Made(tables={"claims": Table(table, note)})


def _products():
    from ...report.products import Product, Reads

    return (
        Product("lab", make=_lab, tables=("lab_curves", "lab", "sigmas"), figures=("lab",),
                section="accounting lab", spec=lambda paper: paper.analyses["lab"]),
        Product("sgdma", make=_sgdma, tables=("sgdma",), figures=("sgdma",), section="SGD-MA accountants",
                reads=Reads(cells=_sgdma_cells)),
        Product("rates", make=_rates, tables=("rates", "rates_slopes"), figures=("rates",), section="rates",
                spec=lambda paper: paper.analyses["rates"],
                reads=Reads(summaries=lambda paper: list(paper.analyses["rates"]["experiments"].values()))),
        Product("claims", make=_claims, tables=("claims",), section="claims",
                reads=Reads(tables=("lab", "sigmas", "sgdma", "rates_slopes"), summaries=("accuracy",),
                            cells=("accuracy",))),
    )


def _sgdma_cells(paper):
    from ...grid import cells

    return cells(paper, [paper.analyses["sgdma"]["experiment"]])


PRODUCTS = _products()
