"""Lee & Kifer 2018: Table 1 (noisy gradient descent) and Table 2 (datasets).

Table 1 is an illustration, not a private algorithm: full-batch gradient descent on Adult's mean
logistic loss from w₀ = 0, with isotropic Gaussian noise of fixed size √E‖Y‖² = 0.50119 added to
each gradient. The paper does not give the step size; we take the one that reproduces the
published objective column (docs/deviations.md#table1-step-size), chosen once (least squares
over t = 0..10, mean of 20 runs) and recorded in ``config/papers/lee2018.yaml``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

PUBLISHED_NOTE = "published: Lee & Kifer 2018 Table 1 (src/dperm/papers/lee2018/published/table1.csv)"


def noisy_gd_table(X, y, *, steps: int, learning_rate: float, noise_norm: float, runs: int, seed: int):
    """Mean over ``runs`` of ‖∇f(w_t)‖, ‖∇f(w_t) + Y_t‖ and f(w_t), t = 0..steps, with
    Y_t ~ N(0, (noise_norm²/p) I) so that √E‖Y_t‖² = noise_norm."""
    from ...losses import get_loss

    loss = get_loss("logistic")
    p = X.shape[1]
    rows = np.zeros((runs, steps + 1, 3))
    for r, child in enumerate(np.random.SeedSequence(seed).spawn(runs)):
        rng, w = np.random.default_rng(child), np.zeros(p)
        for t in range(steps + 1):
            value, grad = loss.value_and_grad(w, X, y)
            noisy = grad + rng.normal(0.0, noise_norm / np.sqrt(p), size=p)
            rows[r, t] = np.linalg.norm(grad), np.linalg.norm(noisy), value
            w = w - learning_rate * noisy
    mean = rows.mean(axis=0)
    return pd.DataFrame({"t": np.arange(steps + 1), "grad_norm": mean[:, 0], "noisy_grad_norm": mean[:, 1],
                         "noise_rms": noise_norm, "objective": mean[:, 2]})


def table1(ours: pd.DataFrame, published: pd.DataFrame) -> pd.DataFrame:
    joined = ours.merge(published, on="t", suffixes=("", "_published"))
    return joined[["t", "grad_norm", "grad_norm_published", "noisy_grad_norm", "noisy_grad_norm_published",
                   "noise_rms", "objective", "objective_published"]]


def table2(datasets: pd.DataFrame, shapes: dict,
           keys=("adult", "bank-dpagd", "ipums-us", "ipums-br", "kddcup99")) -> pd.DataFrame:
    """Lee & Kifer's Table 2 beside ours: n, model coordinates (incl. bias), label. ``shapes``:
    dataset -> (n, dim) as the paper reports them."""
    rows = datasets.set_index("dataset").reindex(list(keys))
    count = lambda column: rows[column].astype("Int64").to_numpy()  # noqa: E731  (NA where unavailable)
    paper = pd.DataFrame([shapes.get(k, (None, None)) for k in keys], columns=["n", "dim"]).astype("Int64")
    return pd.DataFrame({"dataset": list(keys), "n_ours": count("n"), "dim_ours": count("p"),
                         "n_paper": paper["n"].to_numpy(), "dim_paper": paper["dim"].to_numpy(),
                         "label": rows["label"].to_numpy(), "positive_rate": rows["positive_rate"].to_numpy(),
                         "status": rows["status"].to_numpy()})
