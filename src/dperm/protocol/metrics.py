"""What is measured on a fit: accuracy, test loss, training objective (unregularised and
regularised), one value per draw; the learning guard's two quantities (the test split's majority
rate and the share of positive predictions, :mod:`dperm.report.guard`); and the preprocessing
label of the arrays it ran on."""

from __future__ import annotations

import numpy as np


def per_draw(value, draws: int) -> np.ndarray:
    return np.broadcast_to(np.asarray(value, dtype=float), (draws,))


def majority_rate(loss, y_test) -> float:
    """The share of the test split's more frequent label: the accuracy of the best constant
    classifier there (NaN for regression or without test rows)."""
    if loss.labels == "real" or not len(y_test):
        return np.nan
    positive = float(np.mean(np.asarray(y_test) > 0))
    return max(positive, 1.0 - positive)


def fit_metrics(loss, result, train, X_test, y_test) -> dict[str, np.ndarray]:
    """Per draw: ``accuracy``, ``test_loss`` (the unregularised mean loss on the test rows, NaN
    without test rows; on a tuning protocol's folds it is the validation loss the tuning step
    selects by), ``objective`` and ``regularised_objective`` on the training rows, and the
    learning guard's ``majority_rate`` (of the test split) and ``positive_share`` (of the test
    rows predicted positive). Regression: accuracy and the guard's two are NaN."""
    draws = result.draws
    nan = np.full(draws, np.nan)
    majority = np.full(draws, majority_rate(loss, y_test))
    constant = result.extra.get("constant_prediction")
    if constant is not None:  # Majority: a label, not weights
        accuracy = np.full(draws, float(np.mean(y_test == constant)) if len(y_test) else np.nan)
        share = np.full(draws, float(constant > 0) if loss.labels != "real" else np.nan)
        return {"accuracy": accuracy, "test_loss": nan, "objective": nan, "regularised_objective": nan,
                "majority_rate": majority, "positive_share": share}
    W = result.weights
    classify = loss.labels != "real" and len(y_test)
    accuracy = per_draw(loss.accuracy(W, X_test, y_test), draws) if classify else nan
    share = per_draw(np.mean(np.atleast_2d(loss.predict(W, X_test)) > 0, axis=-1), draws) if classify else nan
    test_loss = per_draw(loss.value(W, X_test, y_test), draws) if len(y_test) else nan
    return {"accuracy": accuracy, "test_loss": test_loss, "objective": per_draw(loss.value(W, train.X, train.y), draws),
            "regularised_objective": per_draw(train.value(W), draws), "majority_rate": majority,
            "positive_share": share}


def preprocessing_label(arrays: dict) -> str:
    """How the prepared arrays were made: ``data-dependent`` (a scaling bound or category list
    read from the data) or ``public-bounds`` (docs/privacy.md#public-bounds), as prepare wrote it
    into them."""
    from ..datasets.encode import PREPROCESSING

    if "preprocessing" not in arrays:
        raise ValueError("the prepared arrays carry no 'preprocessing' entry (prepared by an older dperm?): "
                         "prepare them again")
    label = str(arrays["preprocessing"])
    if label not in PREPROCESSING:
        raise ValueError(f"the prepared arrays' preprocessing is {label!r}; expected one of {PREPROCESSING}")
    return label
