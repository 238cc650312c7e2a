"""Lee & Kifer 2018: Table 1 (noisy gradient descent), Table 2 (datasets), and the claims check.

Table 1 is an illustration, not a private algorithm: full-batch gradient descent on Adult's mean
logistic loss from w₀ = 0, with isotropic Gaussian noise of fixed size √E‖Y‖² = 0.50119 added to
each gradient. The paper does not give the step size; spec decision Q4 asks for the one that
reproduces the published objective column, chosen once (least squares over t = 0..10, mean of 20
runs) and recorded in ``config/papers/lee2018.yaml``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..cli import write_table

PUBLISHED_NOTE = "published: Lee & Kifer 2018 Table 1 (config/published/lee2018_table1.csv)"


def noisy_gd_table(X, y, *, steps: int, learning_rate: float, noise_norm: float, runs: int, seed: int):
    """Mean over ``runs`` of ‖∇f(w_t)‖, ‖∇f(w_t) + Y_t‖ and f(w_t), t = 0..steps, with
    Y_t ~ N(0, (noise_norm²/p) I) so that √E‖Y_t‖² = noise_norm."""
    from ..losses import get_loss

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


def table2(datasets: pd.DataFrame, keys=("adult", "bank-dpagd", "ipums-us", "ipums-br", "kddcup99")) -> pd.DataFrame:
    """Lee & Kifer's Table 2 beside ours: n, model coordinates (incl. bias), label."""
    rows = datasets.set_index("dataset").reindex(list(keys))
    count = lambda column: rows[column].astype("Int64").to_numpy()  # noqa: E731  (NA where unavailable)
    return pd.DataFrame({"dataset": list(keys), "n_ours": count("n"), "dim_ours": count("p"),
                         "n_paper": count("lee2018_n"), "dim_paper": count("lee2018_dim"),
                         "label": rows["label"].to_numpy(), "positive_rate": rows["positive_rate"].to_numpy(),
                         "status": rows["status"].to_numpy()})


# -- claims ---------------------------------------------------------------------------------------

COMPARED = ["dp-agd", "objpert", "outpert", "privgene", "sgd-adv", "sgd-ma"]


def _competitive(a_mean, a_half, b_mean, b_half, slack=0.005):
    """a is competitive with b: within ``slack`` of it, or their 95% intervals overlap."""
    return a_mean >= b_mean - slack or a_mean + a_half >= b_mean - b_half


def _x(row):
    return row["epsilon_spent_mean"] if str(row["setting"]).startswith("T") else row["epsilon"]


def _best_other(cells: pd.DataFrame, eps: float, exclude: str):
    """The best mean accuracy among the other compared algorithms at privacy ≤ ε."""
    best = None
    for key in COMPARED:
        if key == exclude:
            continue
        rows = cells[cells["algorithm"] == key]
        # a boolean array, not a list: an empty list would select no columns instead of no rows
        rows = rows[np.array([_x(r) <= eps * (1 + 1e-9) for _, r in rows.iterrows()], dtype=bool)]
        if key != "sgd-ma":
            rows = rows[np.isclose(rows["epsilon"].astype(float), eps)]
        for _, r in rows.iterrows():
            if best is None or r["accuracy_mean"] > best["accuracy_mean"]:
                best = r
    return best


def claims(summary: pd.DataFrame) -> pd.DataFrame:
    """The paper's qualitative statements tested on our numbers (Figures 2 and 3 summaries)."""
    out = []
    for (dataset, model), cells in summary.groupby(["dataset", "model"]):
        agd = cells[cells["algorithm"] == "dp-agd"].sort_values("epsilon")
        small = agd[agd["epsilon"] <= 0.8]
        if not small.empty:
            wins, details = 0, []
            for _, r in small.iterrows():
                rival = _best_other(cells, float(r["epsilon"]), "dp-agd")
                ok = rival is None or _competitive(r["accuracy_mean"], r["accuracy_ci95"],
                                                   rival["accuracy_mean"], rival["accuracy_ci95"])
                wins += ok
                if rival is not None:
                    details.append(f"ε={r['epsilon']:g}: {r['accuracy_mean']:.3f} vs {rival['algorithm']} "
                                   f"{rival['accuracy_mean']:.3f}")
            verdict = "supported" if wins == len(small) else ("partly" if wins >= len(small) / 2 else "not supported")
            out.append({"claim": "DP-AGD is best or competitive for ε ≤ 0.8", "dataset": dataset, "model": model,
                        "evidence": f"competitive at {wins}/{len(small)} ε; " + "; ".join(details),
                        "verdict": verdict})
        for key, accountant in (("sgd-ma", "RDP (tight)"), ("sgd-ma-reference", "moments, orders ≤ 32")):
            ma = cells[cells["algorithm"] == key]
            ma = ma[(ma["epsilon_spent_mean"] > 0.8) & (ma["epsilon_spent_mean"] <= 1.6 + 1e-9)]
            others = cells[cells["algorithm"].isin([k for k in COMPARED if k != "sgd-ma"])
                           & np.isclose(cells["epsilon"].astype(float), 1.6)]
            if ma.empty or others.empty:
                out.append({"claim": f"SGD-MA is best for ε > 0.8 ({accountant})", "dataset": dataset,
                            "model": model, "verdict": "not testable",
                            "evidence": "no SGD-MA setting with 0.8 < ε ≤ 1.6 under this accountant"})
                continue
            best_ma = ma.loc[ma["accuracy_mean"].idxmax()]
            rival = others.loc[others["accuracy_mean"].idxmax()]
            ok = _competitive(best_ma["accuracy_mean"], best_ma["accuracy_ci95"], rival["accuracy_mean"],
                              rival["accuracy_ci95"], slack=0.0)
            verdict = "supported" if best_ma["accuracy_mean"] >= rival["accuracy_mean"] else (
                "partly (within CI)" if ok else "not supported")
            out.append({"claim": f"SGD-MA is best for ε > 0.8 ({accountant})", "dataset": dataset, "model": model,
                        "evidence": f"SGD-MA {best_ma['accuracy_mean']:.3f} at ε={best_ma['epsilon_spent_mean']:.2f} "
                                    f"vs best other {rival['algorithm']} {rival['accuracy_mean']:.3f} at ε=1.6",
                        "verdict": verdict})
    bank_svm = summary[(summary["dataset"] == "bank-dpagd") & (summary["model"] == "svm")
                       & (summary["algorithm"] == "dp-agd")].set_index("epsilon")
    if {0.1, 0.4} <= set(bank_svm.index):
        a01, a04 = bank_svm.loc[0.1], bank_svm.loc[0.4]
        unstable = a04["accuracy_mean"] < a01["accuracy_mean"]
        obj_down = a04["objective_mean"] < a01["objective_mean"]
        verdict = "supported" if unstable and obj_down else ("partly" if unstable or obj_down else "not supported")
        out.append({"claim": "DP-AGD is unstable for SVM on BANK (accuracy at ε=0.4 below ε=0.1 while the "
                             "objective still decreases)", "dataset": "bank-dpagd", "model": "svm",
                    "evidence": f"accuracy {a01['accuracy_mean']:.4f} (ε=0.1) → {a04['accuracy_mean']:.4f} (ε=0.4); "
                                f"objective {a01['objective_mean']:.4f} → {a04['objective_mean']:.4f}",
                    "verdict": verdict})
    return pd.DataFrame(out, columns=["claim", "dataset", "model", "verdict", "evidence"])


# -- command line: python -m dperm lee2018 {table1,table2,claims} ... ------------------------------

def add_cli(sub) -> None:
    p = sub.add_parser("lee2018", help="Lee & Kifer 2018 tables 1 and 2 and the claims check")
    p.add_argument("what", choices=["table1", "table2", "claims"])
    p.add_argument("inputs", nargs="+", help="table1: adult .npz, published .csv; table2: datasets.csv; "
                                             "claims: fig2 and fig3 summary .csv")
    p.add_argument("--paper", default="config/papers/lee2018.yaml")
    p.add_argument("--csv", required=True)
    p.add_argument("--md", required=True)
    p.set_defaults(func=_run_cli)


def _run_cli(args) -> None:
    import pandas as pd

    if args.what == "table1":
        from ..datasets.prepare import load_prepared
        from ..experiments import load_paper

        cfg = load_paper(args.paper)["analyses"]["table1"]
        arrays, _ = load_prepared(args.inputs[0])
        ours = noisy_gd_table(arrays["X"], arrays["y01"].astype(float), steps=cfg["steps"],
                                      learning_rate=cfg["learning_rate"], noise_norm=cfg["noise_norm"],
                                      runs=cfg["runs"], seed=cfg["seed"])
        published = pd.read_csv(args.inputs[1], comment="#")
        note = (f"Table 1 (Lee & Kifer 2018): noisy full-batch gradient descent on Adult's mean logistic "
                f"loss, noise of fixed size sqrt(E||Y||^2) = {cfg['noise_norm']}, step size {cfg['learning_rate']} "
                f"(chosen to fit the published objective column, spec decision Q4), mean of {cfg['runs']} runs. "
                f"Our Adult encoding has {arrays['X'].shape[1]} coordinates (the paper's a9a file: 124), so the "
                f"columns differ in level; the pattern (the noisy norm stays near the noise size while the "
                f"objective keeps falling) is what the table illustrates. {PUBLISHED_NOTE}.")
        write_table(table1(ours, published), args.csv, args.md, note)
    elif args.what == "table2":
        table = table2(pd.read_csv(args.inputs[0]))
        note = ("Table 2 (Lee & Kifer 2018): dataset characteristics, ours beside the paper's. dim = model "
                "coordinates including the bias. Adult is our own encoding of the raw UCI files (rows with "
                "missing values dropped); BANK and IPUMS-BR are the authors' files; KDDCup99 is the 10% file.")
        write_table(table, args.csv, args.md, note)
    else:
        summary = pd.concat([pd.read_csv(p) for p in args.inputs], ignore_index=True)
        note = ("Claims of Lee & Kifer 2018 tested on our Figure 2 and 3 numbers. 'Competitive' means "
                "within 0.5 percentage points of, or with a 95% interval overlapping, the best other private "
                "algorithm at the same or smaller epsilon (SGD-MA at the epsilon its accountant computes).")
        write_table(claims(summary), args.csv, args.md, note)
