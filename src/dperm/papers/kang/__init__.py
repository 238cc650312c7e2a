"""Kang, Li, Liu & Wang, "Performance Improving DP-SGD" (PIDP-SGD): DP-SGD, output-perturbation
SGD, DP-LSSGD and PIDP-SGD on logistic regression and an MLP (Section 7, Figures 1 and 2), with
DP-GD under individual Rényi filters as the DP-correct way to spend noise unevenly. What the
target produces and how it differs from the paper: docs/papers/kang.md.

The grid is ``config/papers/kang.yaml`` (Figures 1 and 2 are generic epsilon figures); this
package adds the table of PIDP-SGD's noise-free fraction (:mod:`.tables`) and the claims check
(:mod:`.claims`), each a ``python -m dperm kang <verb>`` command run by
``workflow/rules/papers/kang.smk``.
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
CLAIMS_NOTE = ("Claims of Kang et al. (Section 7) tested on our Figure 1 and 2 numbers (mean over the runs of "
               "a cell, 95% t-intervals). Baselines: the private algorithms the paper compares with (DP-SGD, "
               "output-perturbation SGD on LR only, DP-LSSGD). PIDP-SGD is a reference variant: not DP as "
               "described; DP-GD with individual filters (ours) is shown beside claim 1 but not judged. 'Rises' means "
               "a positive Spearman correlation with epsilon and a rise from the smallest to the largest epsilon "
               "larger than the two 95% half-widths together. 'Almost 0' means an optimality gap below 0.01 nats.")


SCORECARD_TABLES = ("claims",)


def scorecard(tables):
    """The claims check's rows; the paper prints its results as plots only."""
    from ...report.scorecard import PaperCard, claims_table

    return PaperCard(claims=claims_table(tables["claims"]),
                     note="Kang et al. report their results as figures (accuracy and optimality gap against "
                          "epsilon) with no printed numbers to set ours beside; they are compared through the claims.")


def add_cli(sub) -> None:
    from ...report.tables import add_output_arguments

    p = sub.add_parser("kang", help="Kang et al. (PIDP-SGD): noise-free fraction table and claims")
    verbs = p.add_subparsers(dest="verb", required=True)

    v = verbs.add_parser("noise-free", help="PIDP-SGD's noise-free fraction against epsilon per panel")
    v.add_argument("records", nargs="+", help="the fig experiment's PIDP-SGD cell files")
    v.set_defaults(func=_noise_free)

    v = verbs.add_parser("claims", help="the paper's claims tested on the Figure 1-2 summary")
    v.add_argument("summary", help="results/summaries/kang/fig.csv")
    v.set_defaults(func=_claims)

    for v in verbs.choices.values():
        add_output_arguments(v)


def _noise_free(args) -> None:
    from ...report.captions import with_quick_note
    from ...report.tables import read_records, write_table
    from .tables import noise_free_table

    write_table(noise_free_table(read_records(args.records)), args.csv, args.md,
                with_quick_note(NOISE_FREE_NOTE, args.quick))


def _claims(args) -> None:
    import pandas as pd

    from ...report.captions import with_quick_note
    from ...report.tables import write_table
    from .claims import claims

    summary = pd.read_csv(args.summary, keep_default_na=False, na_values=[""])
    write_table(claims(summary), args.csv, args.md, with_quick_note(CLAIMS_NOTE, args.quick))
