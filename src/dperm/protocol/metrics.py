"""What is measured on a fit: accuracy, test loss, training objective (unregularised and
regularised), one value per draw; and the preprocessing label of the arrays it ran on."""

from __future__ import annotations

import numpy as np


def per_draw(value, draws: int) -> np.ndarray:
    return np.broadcast_to(np.asarray(value, dtype=float), (draws,))


def fit_metrics(loss, result, train, X_test, y_test):
    """(accuracy, test loss, objective, regularised objective), one value per draw. The test
    loss is the unregularised mean loss on the test rows (NaN without test rows); on a tuning
    protocol's folds it is the validation loss the tuning step selects by."""
    draws = result.draws
    constant = result.extra.get("constant_prediction")
    if constant is not None:  # Majority: a label, not weights
        accuracy = np.full(draws, float(np.mean(y_test == constant)) if len(y_test) else np.nan)
        return accuracy, *(np.full(draws, np.nan),) * 3
    W = result.weights
    accuracy = (per_draw(loss.accuracy(W, X_test, y_test), draws) if loss.labels != "real"
                else np.full(draws, np.nan))
    test_loss = per_draw(loss.value(W, X_test, y_test), draws) if len(y_test) else np.full(draws, np.nan)
    objective = per_draw(loss.value(W, train.X, train.y), draws)
    return accuracy, test_loss, objective, per_draw(train.value(W), draws)


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
