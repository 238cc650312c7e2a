"""Kang, Li, Liu & Wang, "Performance Improving DP-SGD" (PIDP-SGD): DP-SGD, output-perturbation
SGD, DP-LSSGD and PIDP-SGD on logistic regression and an MLP (Section 7, Figures 1 and 2), with
DP-GD under individual Rényi filters as the DP-correct way to spend noise unevenly. What the
target produces and how it differs from the paper: docs/papers/kang.md.

The grid is ``config/papers/kang.yaml`` (Figures 1 and 2 are generic epsilon figures); this
package adds the table of PIDP-SGD's noise-free fraction (:mod:`.tables`) and the claims check
(:mod:`.claims`), declared in ``PRODUCTS`` (:mod:`dperm.report.products`).
"""

from __future__ import annotations

TITLE = "Kang et al.: PIDP-SGD"

# (n, dim) as the paper reports them: row counts only (no dimensions are given). KDDCup99's
# 70,000 is a subsample (ours: a seeded 70,000 rows of the 10% file, profile kang).
DATASET_SHAPES = {"kddcup99": (70_000, None), "adult": (45_222, None), "bank-additional": (41_188, None)}

NOISE_FREE_NOTE = ("PIDP-SGD (Kang et al. Algorithm 1, reference variant: not DP as described, "
                   "docs/privacy.md#pidp-sgd): fraction of its T steps taken without noise, mean ± 95% "
                   "t-interval half-width over the runs of a cell (80/20 holdout repeats), with the test's "
                   "threshold 2r*delta_1*(1 + e^-eps_1) and the contribution noise sigma_c of the same runs. "
                   "T and the learning rate: tuning: non-private.")
CLAIMS_NOTE = ("Claims of Kang et al. (Section 7) tested on our Figure 1 and 2 numbers and PIDP-SGD's noise-free "
               "fraction; every verdict names its test (dperm.report.claims: Welch 95% intervals of differences; "
               "'rises' / 'falls': the value at the largest epsilon against the value at the smallest). Baselines: "
               "the private algorithms the paper compares with (DP-SGD, output-perturbation SGD on LR only, "
               "DP-LSSGD). PIDP-SGD is a reference variant, not DP as described; DP-GD with individual filters is "
               "ours and judged apart (source: ours). 'Almost 0' means an optimality gap whose 95% interval is "
               "below 0.01 nats. A verdict resting on a cell that does not learn (accuracy at the majority rate, one "
               "class predicted) is inconclusive. 'On some datasets' claims are supported overall when one panel "
               "supports them.")


SCORECARD_TABLES = ("claims",)


def scorecard(tables):
    """The claims check's rows; the paper prints its results as plots only."""
    from ...report.scorecard import PaperCard, claims_table

    return PaperCard(claims=claims_table(tables["claims"]),
                     note="Kang et al. report their results as figures (accuracy and optimality gap against "
                          "epsilon) with no printed numbers to set ours beside; they are compared through the claims.")


def _pidp_cells(paper):
    from ...grid import cells

    return [c for c in cells(paper, ["fig"]) if c.algorithm == "pidp-sgd-reference"]


def _noise_free(inputs):
    from ...report.products import Made, Table
    from .tables import noise_free_table

    return Made(tables={"noise_free": Table(noise_free_table(inputs.cells), NOISE_FREE_NOTE)})


def _claims(inputs):
    from ...report.products import Made, Table
    from .claims import claims

    return Made(tables={"claims": Table(claims(inputs.summary("fig"), inputs.table("noise_free")), CLAIMS_NOTE)})


def _products():
    from ...report.products import Product, Reads

    return (
        Product("noise-free", make=_noise_free, tables=("noise_free",), reads=Reads(cells=_pidp_cells)),
        Product("claims", make=_claims, tables=("claims",), reads=Reads(summaries=("fig",), tables=("noise_free",))),
    )


PRODUCTS = _products()
