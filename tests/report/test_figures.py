"""Figures: one colour per algorithm across a paper's figures, and curves borrowed from another
experiment's runs are drawn from that experiment, with its protocol in the caption."""

from __future__ import annotations

import pandas as pd
import pytest
from conftest import REPO

from dperm.cli import main
from dperm.grid import dumps, figure_spec, load_paper
from dperm.report import figures
from dperm.report.captions import figure_caption
from dperm.report.paper_figures import figure_rows, read_summaries

PAPER = REPO / "config" / "papers" / "lee2018.yaml"
CI_OVERLAY = REPO / ".test" / "config" / "papers" / "lee2018.yaml"


def test_an_algorithm_keeps_its_colour_when_a_figure_leaves_others_out():
    palette = ["nonprivate", "dp-agd", "dp-agd-reference", "objpert", "outpert", "privgene", "sgd-ma"]
    full = figures.algorithm_styles(["dp-agd", "objpert", "outpert", "privgene", "sgd-ma"], palette)
    partial = figures.algorithm_styles(["dp-agd", "privgene", "sgd-ma"], palette)
    for key in partial:
        assert partial[key] == full[key], key
    colours = [s["color"] for s in full.values()]
    assert len(set(colours)) == len(colours)
    # Without the palette, leaving outpert out would shift privgene's colour: the test can fail.
    assert figures.algorithm_styles(["dp-agd", "privgene"])["privgene"] != full["privgene"]


def test_a_reference_variant_takes_its_base_colour_dashed_and_hollow():
    styles = figures.algorithm_styles(["dp-agd", "dp-agd-reference", "nonprivate"], ["dp-agd"])
    correct, reference = styles["dp-agd"], styles["dp-agd-reference"]
    assert reference["color"] == correct["color"] and reference["marker"] == correct["marker"]
    assert (correct["ls"], reference["ls"]) == ("-", "--")
    assert reference["mfc"] == "none" and correct["mfc"] == correct["color"]
    assert "nonprivate" not in styles  # drawn as a horizontal line


def test_profile_suffixed_keys_keep_their_base_colour_and_baselines_stay_lines():
    keys = ["dp-agd-public", "dp-agd-private-tuning-public", "nonprivate-public", "majority-public"]
    styles = figures.algorithm_styles(keys, ["dp-agd"])
    solid, dashed = styles["dp-agd-public"], styles["dp-agd-private-tuning-public"]
    assert solid["color"] == dashed["color"] and (solid["ls"], dashed["ls"]) == ("-", "--")
    assert not {"nonprivate-public", "majority-public"} & set(styles)  # horizontal lines
    assert figures.baseline_of("nonprivate-public") == "nonprivate" and figures.baseline_of("dp-agd-public") is None
    assert figures.base_key("dp-agd-private-tuning-public") == "dp-agd"


def _summary(experiment: str, algorithms, accuracy: float) -> pd.DataFrame:
    rows = []
    for algorithm in algorithms:
        for eps in (0.1, 0.4):
            rows.append(dict(experiment=experiment, dataset="bank-dpagd", model="svm", algorithm=algorithm,
                             label=algorithm, variant="reference" if algorithm.endswith("-reference") else "",
                             tuning="", setting=str(eps), epsilon=eps if algorithm != "nonprivate" else float("inf"),
                             epsilon_spent_mean=eps, accuracy_mean=accuracy, accuracy_ci95=0.01,
                             objective_mean=0.3, objective_ci95=0.01))
    return pd.DataFrame(rows)


@pytest.fixture
def tables(tmp_path):
    own = tmp_path / "reference.csv"
    other = tmp_path / "fig3.csv"
    # The figure's own experiment also has a dp-agd row: the borrowed one must replace it.
    _summary("reference", ["dp-agd-reference", "dp-agd"], 0.5).to_csv(own, index=False)
    _summary("fig3", ["dp-agd", "dp-agd-gumbel", "nonprivate", "objpert"], 0.9).to_csv(other, index=False)
    return own, other


def test_borrowed_algorithms_come_from_the_other_experiment_only(tables):
    spec = {"experiment": "reference", "borrow": {"fig3": ["dp-agd", "nonprivate"]}}
    rows = figure_rows(spec, read_summaries(tables))
    by = rows.groupby("algorithm")["experiment"].agg(set).to_dict()
    assert by == {"dp-agd-reference": {"reference"}, "dp-agd": {"fig3"}, "nonprivate": {"fig3"}}


def test_borrowing_what_the_other_experiment_lacks_is_an_error(tables):
    spec = {"experiment": "reference", "borrow": {"fig3": ["dp-agd", "sgd-adv"]}}
    with pytest.raises(ValueError, match=r"borrows \['sgd-adv'\] from experiment 'fig3'"):
        figure_rows(spec, read_summaries(tables))
    with pytest.raises(ValueError, match=r"needs the summaries of \['fig3'\]"):
        figure_rows(spec, read_summaries(tables[:1]))


def test_the_caption_states_the_protocol_of_borrowed_curves(tables):
    spec = {"experiment": "reference", "caption": "Side by side."}
    own = {"kind": "kfold", "folds": 5, "repeats": 1, "draws": 2}
    other = {"kind": "kfold", "folds": 5, "repeats": 2, "draws": 10}
    summary = pd.concat([pd.read_csv(p) for p in tables])
    text = figure_caption(spec, summary, own, {"fig3": (other, ["dp-agd", "nonprivate"])})
    assert text.startswith("Side by side. 5-fold CV x 1 repeat(s) x 2 draw(s) per point.")
    assert "dp-agd, nonprivate: the runs of experiment fig3 (5-fold CV x 2 repeat(s) x 10 draw(s) per point)." in text


def test_figure_command_draws_a_borrowing_figure(tables, tmp_path):
    png, pdf = tmp_path / "f.png", tmp_path / "f.pdf"
    spec = dumps(figure_spec(load_paper(PAPER, overlay=CI_OVERLAY), "reference-svm"))
    code = main(["figure", "--spec", spec, "--summary", *map(str, tables), "--png", str(png), "--pdf", str(pdf)])
    assert code in (0, None)
    assert png.stat().st_size > 10_000 and pdf.read_bytes().startswith(b"%PDF")


def test_a_narrow_log_axis_gets_labelled_ticks():
    import matplotlib.pyplot as plt

    from dperm.report.figures import ensure_log_ticks

    fig, ax = plt.subplots()
    ax.plot([1, 2], [0.021, 0.029])
    ax.set_yscale("log")
    fig.canvas.draw()
    low, high = ax.get_ylim()
    assert not [t for t in ax.yaxis.get_majorticklocs() if low <= t <= high]  # no power of ten inside
    ensure_log_ticks(ax, "y")
    fig.canvas.draw()
    shown = [t for t in ax.yaxis.get_majorticklocs() if low <= t <= high]
    labels = [t.get_text() for t in ax.yaxis.get_ticklabels() if t.get_text()]
    assert len(shown) >= 2 and len(labels) >= 2
    plt.close(fig)


def test_off_scale_keeps_every_value_when_most_coincide():
    from dperm.report.figures import off_scale

    flat = [0.8717] * 9 + [0.875, 0.892, 0.583]  # curves at the majority rate and a few others
    assert off_scale(flat) is None
    spread = [0.80, 0.81, 0.82, 0.83, 0.84, 0.85, 0.86, 0.05]  # one far outlier among spread values
    low, high = off_scale(spread)
    assert low > 0.05 and high >= 0.86
