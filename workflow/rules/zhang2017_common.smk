# Zhang et al. 2017: the paper's configuration, fingerprints and the input functions of
# workflow/rules/zhang2017.smk (kept apart so that rule files hold rules only).
ZHANG = PAPERS.get("zhang2017")
ZHANG_FILE = paper_file("zhang2017") if ZHANG else ""
# Fingerprints (see dperm.fingerprint): assembly code, and the code the paper's own runs execute.
ZHANG_CODE = source_fingerprint("papers", "tables", "figures")
ZHANG_RUN_CODE = source_fingerprint(
    "papers", "algorithms", "privacy", "protocol", "losses", "problem", "solvers", "experiments"
)


def zhang_analysis(name):
    return ZHANG["analyses"][name] if ZHANG else {}


def zhang_table3_cells(wildcards=None):
    return [
        path
        for experiment in zhang_analysis("table3").get("experiments", [])
        for path in experiment_cells("zhang2017", experiment)
    ]


def zhang_table3_datasets():
    return [
        d
        for experiment in zhang_analysis("table3").get("experiments", [])
        for d in ZHANG["experiments"][experiment]["datasets"]
        if dataset_available(d)
    ]


def zhang_experiment_of(dataset):
    return next(
        e
        for e in zhang_analysis("table3")["experiments"]
        if dataset in ZHANG["experiments"][e]["datasets"]
    )


def zhang_optima(dataset):
    """model -> certified optimum file of the dataset's Table 3 cells (shared with the runs)."""
    experiment = zhang_experiment_of(dataset)
    out = {}
    for model in experiments.experiment_models(ZHANG["experiments"][experiment], dataset):
        cell = experiments.Cell("zhang2017", experiment, dataset, model, "outpert-gd", "1")
        spec = experiments.cell_spec(ZHANG, cell, config["seed"])
        out[model] = experiments.optimum_path(spec)
    return out


def zhang_rrpsgd_runs():
    cfg = zhang_analysis("rrpsgd")
    if not cfg or not dataset_available(cfg["dataset"]):
        return []
    return [
        f"results/zhang2017/rrpsgd/{s['noise']}/eps{experiments.format_epsilon(e)}.csv"
        for s in cfg["settings"]
        for e in s["epsilons"]
    ]


def zhang_runtime_priority(wildcards):
    """Longest jobs first (Bassily et al. at T = n^2/m by n), so that 2 cores finish together."""
    if wildcards.algorithm != "bassily-sgd":
        return 0
    order = ["wine", "bike", "credit", "adult", "bank"]  # ascending n^2/m
    return 1 + (order.index(wildcards.dataset) if wildcards.dataset in order else len(order))


def zhang_runtime_runs():
    cfg = zhang_analysis("runtime")
    out = []
    for dataset in zhang_table3_datasets():
        out += [
            f"results/zhang2017/runtime/{dataset}/outpert-gd/run{r}.csv"
            for r in range(int(cfg.get("outpert_runs", 1)))
        ]
        out += [
            f"results/zhang2017/runtime/{dataset}/bassily-sgd/run{r}.csv"
            for r in range(len(cfg.get("bassily", {}).get(dataset, [])))
        ]
    return out
