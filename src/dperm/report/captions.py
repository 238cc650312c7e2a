"""Captions: what every reader of a figure or table must know, written from the specs that
produced it (protocol, variants shown, non-private tuning, a quick run)."""

from __future__ import annotations

QUICK_NOTE = ("QUICK RUN: reduced protocol and grid (config/quick.yaml), for checking the pipeline; "
              "not the paper's protocol and not for comparison with it.")


def protocol_text(protocol: dict) -> str:
    """The protocol in words: ``5-fold CV x 2 repeat(s) x 10 draw(s) per point``."""
    if protocol["kind"] == "kfold":
        return (f"{protocol['folds']}-fold CV x {protocol['repeats']} repeat(s) x {protocol['draws']} "
                "draw(s) per point")
    if protocol["kind"] == "full":
        return f"trained and evaluated on all rows, {protocol['repeats']} x {protocol['draws']} run(s) per point"
    if protocol["kind"] == "holdout":
        return (f"{round(100 * (1 - protocol['test_fraction']))}/{round(100 * protocol['test_fraction'])} "
                f"train/test split x {protocol['repeats']} repeat(s) x {protocol['draws']} draw(s) per point")
    return ""


def with_quick_note(text: str, quick: bool) -> str:
    """``text`` prefixed with the quick-run warning when ``quick``."""
    return f"{QUICK_NOTE} {text}".strip() if quick else text


def preprocessing_text(shown) -> str:
    """Whether the curves' features were scaled with bounds read from the data (the papers'
    min-max, not private) or with public bounds (docs/privacy.md#public-bounds)."""
    kinds = set(shown["preprocessing"]) if "preprocessing" in shown else set()
    if kinds == {"data-dependent"}:
        return ("Preprocessing: min-max scaling with bounds read from the data, test folds included (not "
                "private, docs/privacy.md#data-dependent-choices).")
    if kinds == {"public-bounds"}:
        return "Preprocessing: public attribute bounds and categories (docs/privacy.md#public-bounds)."
    if kinds:
        public = sorted(set(shown.loc[shown["preprocessing"] == "public-bounds", "algorithm"]))
        return ("Preprocessing: public attribute bounds (docs/privacy.md#public-bounds) for " + ", ".join(public)
                + "; bounds read from the data, test folds included (not private) for the others.")
    return ""


def figure_caption(spec: dict, summary, protocol: dict, borrowed: dict | None = None, quick: bool = False) -> str:
    """The configured caption plus what every reader must know: protocol (that of each
    experiment a curve comes from), variants, tuning. ``borrowed``: experiment -> (its
    protocol, the algorithms taken from it)."""
    shown = summary[summary["algorithm"].isin(spec.get("algorithms", summary["algorithm"].unique()))]
    parts = [spec.get("caption", "").strip()]
    text = protocol_text(protocol)
    if text:
        parts.append(text[0].upper() + text[1:] + ".")
    for key, steps in spec.get("steps", {}).items():
        parts.append(f"{key}: ε computed by its accountant at T = {', '.join(map(str, steps))} steps.")
    for experiment, (other, algorithms) in (borrowed or {}).items():
        parts.append(f"{', '.join(algorithms)}: the runs of experiment {experiment} "
                     f"({protocol_text(other)}).")
    reference = sorted(set(shown.loc[shown["variant"] == "reference", "label"]))
    if reference:
        parts.append("Reference variants (published code, flaws included): " + "; ".join(reference) + ".")
    if (shown["tuning"] == "non-private").any():
        tuned = sorted(set(shown.loc[shown["tuning"] == "non-private", "algorithm"]))
        parts.append("Hyper-parameters chosen by non-private tuning for: " + ", ".join(tuned) + ".")
    parts.append(preprocessing_text(shown))
    parts.append("Bands: 95% CI of the mean.")
    return with_quick_note(" ".join(p for p in parts if p), quick)
