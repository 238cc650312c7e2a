"""Wang's lecture notes, Lecture 15 (DP-GD, DP-SGD and the moments accountant). What the target
produces and how it departs from the notes: docs/papers/lecture.md.

The notes have no experiments; the grid (``config/papers/lecture.yaml``) runs their algorithms
(``dp-gd-lecture``, ``dp-sgd-lecture``) with the notes' calibrations and the tighter accountants
(RDP; PLD, tight up to its discretisation) on Lee & Kifer's datasets, SGD-MA under three
accountants, and the notes' rates on seeded synthetic data. This package computes the accounting
lab (:mod:`.lab`, not a grid of fits) and builds the SGD-MA, rates and claims tables and figures
from the cell records and summaries (:mod:`.analyses`), each a ``python -m dperm lecture <verb>`` command run by
``workflow/rules/papers/lecture.smk``.
"""

from __future__ import annotations

TITLE = "Wang's lecture notes (Lecture 15): DP-GD, DP-SGD, the moments accountant"

# verb -> (help, positional input, the files it writes, whether it takes a --spec)
VERBS = {
    "lab": ("the accounting lab: epsilon(T) per accountant, ratios, sigma for a target", None,
            ("curves", "csv", "md", "sigmas-csv", "sigmas-md", "png", "pdf"), True),
    "sgdma": ("SGD-MA's runs under three accountants: table and figure", "records", ("csv", "md", "png", "pdf"),
              False),
    "rates": ("excess empirical risk against n with the notes' rates and fitted slopes", None,
              ("csv", "md", "slopes-csv", "slopes-md", "png", "pdf"), False),
    "claims": ("the notes' claims with what was measured", None, ("csv", "md"), False),
}


SCORECARD_TABLES = ("claims",)


def scorecard(tables):
    """The claims check's rows; the notes print no experimental numbers of their own."""
    from ...report.scorecard import PaperCard, claims_table

    return PaperCard(claims=claims_table(tables["claims"], scope=(), reason="measured"),
                     note="The notes derive calibrations and rates and quote Abadi et al.'s deep-learning numbers; "
                          "they print no experiment of their own, so there is no published number to set ours beside "
                          "(the calibrations are checked against independent accountants in the tests).")


def add_cli(sub) -> None:
    from ...report.tables import add_output_arguments

    p = sub.add_parser("lecture", help="Wang's lecture notes: accounting lab, SGD-MA accountants, rates, claims")
    verbs = p.add_subparsers(dest="verb", required=True)
    handlers = {"lab": _lab, "sgdma": _sgdma, "rates": _rates, "claims": _claims}
    for verb, (text, source, outputs, spec) in VERBS.items():
        v = verbs.add_parser(verb, help=text)
        if source:
            v.add_argument(source, nargs="+")
        if spec:
            v.add_argument("--spec", required=True, help="what the analysis reads from the config, as JSON")
        if verb == "rates":
            v.add_argument("--convex", required=True, help="summary CSV of the convex experiment")
            v.add_argument("--strong", required=True, help="summary CSV of the strongly convex experiment")
        if verb == "claims":
            for name in ("lab", "sigmas", "accuracy", "sgdma", "slopes"):
                v.add_argument(f"--{name}", required=True)
        add_output_arguments(v, outputs)
        v.set_defaults(func=handlers[verb])


def _title(text: str, quick: bool) -> str:
    return ("[quick run] " if quick else "") + text


def _lab(args) -> None:
    import json

    from ...files import write_text_atomic
    from ...report.captions import with_quick_note
    from ...report.tables import write_table
    from .lab import LABELS, epsilon_curves, lab_figure, ratio_table, sigma_table

    spec = json.loads(args.spec)
    curves = epsilon_curves(spec)
    write_text_atomic(args.curves, curves.to_csv(index=False))
    ratios = ratio_table(curves, spec["reference_steps"])
    accountants = "; ".join(f"{k}: {v}" for k, v in LABELS.items())
    note = (f"The accounting lab: ε at δ = {spec['delta']:g} of T steps of the Poisson-subsampled Gaussian (rate q, "
            f"noise multiplier σ, add/remove), at the reference T. Accountants — {accountants}. Advanced composition "
            "follows the notes (Lemmas 15.2–15.4: classical Gaussian at δ/(2Tq), amplification ln(1 + q(e^ε − 1)), "
            "slack δ/2; the exact Gaussian profile where the classical form's ε ≥ 1). Ratios: how many times the "
            "looser accountant's ε is the tighter's; √ln(T/δ) is the factor the notes say the moments accountant "
            "saves. Every ε is an upper bound by its own argument; none is a fit.")
    write_table(ratios, args.csv, args.md, with_quick_note(note, args.quick))
    sigmas = sigma_table(spec)
    write_table(sigmas, args.sigmas_csv, args.sigmas_md, with_quick_note(
        f"The smallest noise multiplier σ (to 1e-4 relative) each accountant needs for the target (ε, δ = "
        f"{spec['delta']:g}) at sampling rate q over T steps; ratios of σ between accountants (noise std, and so "
        "the gradient noise, scales with σ).", args.quick))
    caption = ("ε against T (log–log) of the Poisson-subsampled Gaussian under each accountant at δ = "
               f"{spec['delta']:g}. Advanced composition grows fastest (like √T·√ln(T/δ) while the per-step ε is "
               "small, linearly in T beyond); the moments accountant like √T; "
               "orders ≤ 32 floor ε at ln(1/δ)/32 for small T; RDP (all orders, improved conversion) and PLD are "
               "tighter still.")
    lab_figure(curves, args.png, args.pdf, title=_title("The accounting lab: ε(T) per accountant", args.quick),
               caption=with_quick_note(caption, args.quick))


def _sgdma(args) -> None:
    from ...report.captions import with_quick_note
    from ...report.tables import read_records, write_table
    from .analyses import sgdma_figure, sgdma_table

    records = read_records(args.records)
    table = sgdma_table(records)
    fits = int(table["fits"].max())
    note = ("SGD-MA (σ = 4, C = 4, b = ⌊√n + 10⌋, η = 0.05, λ = 0, Poisson batches; Lee & Kifer's Figure 2 "
            f"setting) on 5-fold CV; {fits} fits per point (Lee & Kifer: 100). One run per fold and step count; its ε "
            "under three accountants at δ = 1e-8: the moments accountant with orders ≤ 32 read at order 32 as the "
            "DP-AGD code (what Lee & Kifer's figure plots), RDP, PLD. Same weights, same accuracy: only ε moves.")
    write_table(table, args.csv, args.md, with_quick_note(note, args.quick))
    caption = ("The same SGD-MA runs drawn at the ε of each accountant (points labelled by T): computed tighter, "
               "every point moves left. Beside Lee & Kifer's Figure 2 (lee2018 target), whose SGD-MA curve is the "
               f"dashed one here. {fits} fits per point, 95% intervals.")
    sgdma_figure(table, args.png, args.pdf, title=_title("SGD-MA under three accountants", args.quick),
                 caption=with_quick_note(caption, args.quick))


def _rates(args) -> None:
    import pandas as pd

    from ...report.captions import with_quick_note
    from ...report.tables import write_table
    from .analyses import rates_figure, rates_table

    points, slopes = rates_table({"convex": pd.read_csv(args.convex), "strong": pd.read_csv(args.strong)})
    fits = int(points["fits"].max())
    note = ("The notes' DP-SGD (one example per step, Lemma 15.5's σ, T = n², ball of radius 25, per-example "
            "gradients clipped to L = 1) on seeded synthetic logistic data (d = 5 features + bias, min-max scaled), "
            f"ε = 8 (the largest the notes' condition allows at T = n²), δ = 1e-5, {fits} runs per n: excess "
            "empirical risk F(θ̂) − min F on the training rows (min F: the certified unconstrained optimum). Convex: "
            "λ = 0, η_t = ‖C‖/(G√t), averaged iterate; strongly convex: λ = α = 1, η_t = 1/(αt), last iterate.")
    write_table(points, args.csv, args.md, with_quick_note(note, args.quick))
    write_table(slopes, args.slopes_csv, args.slopes_md, with_quick_note(
        "Least-squares slope of log excess risk on log n against the notes' rate exponents (−1 for Õ(√d/(nε)), −2 "
        "for Õ(d/(n²ε²)); their log factors are ignored, so slopes a little flatter are expected).", args.quick))
    caption = ("Excess empirical risk of the notes' DP-SGD with T = n² against n (95% intervals), with the notes' "
               "rates (dashed, anchored at the smallest n) and the fitted slopes in the titles.")
    rates_figure(points, slopes, args.png, args.pdf, title=_title("The notes' rates: DP-SGD with T = n²", args.quick),
                 caption=with_quick_note(caption, args.quick))


def _claims(args) -> None:
    import pandas as pd

    from ...report.captions import with_quick_note
    from ...report.tables import write_table
    from .analyses import claims

    table = claims(pd.read_csv(args.lab), pd.read_csv(args.sigmas), pd.read_csv(args.accuracy),
                   pd.read_csv(args.sgdma), pd.read_csv(args.slopes))
    write_table(table, args.csv, args.md, with_quick_note(
        "The notes' claims against what this target measured (accounting lab, the accuracy and SGD-MA experiments, "
        "the rates); the verdict says whether the measurement supports the claim. Claims on data the project does "
        "not have are listed as not tested, with the reason.", args.quick))
