"""``python -m dperm ...``: every step a Snakemake rule runs, usable without Snakemake.

numpy is imported only after ``--threads`` has pinned the BLAS/OpenMP thread pools: OpenBLAS
reads its environment once, when it loads, and unpinned BLAS on 2 cores made small fits up to
8x slower here. Errors a user can fix (bad input, missing data) print one message, exit code 2.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys

THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "GOTO_NUM_THREADS",
               "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS")
log = logging.getLogger("dperm")


def pin_threads(threads: int) -> None:
    if "numpy" in sys.modules:
        log.warning("numpy was imported before the thread count was pinned; BLAS may not obey it")
    for var in THREAD_VARS:
        os.environ[var] = str(threads)


def _cmd_fetch(args) -> None:
    from .datasets import registry
    from .datasets.fetch import fetch, resolve_mirror

    if os.path.basename(args.out) != "fetch.json":
        raise ValueError(f"--out must name a file called fetch.json, not {args.out!r}")
    record = registry.get(args.dataset)
    mirror = resolve_mirror(args.mirror)
    manifest = fetch(record, os.path.dirname(args.out) or ".", mirror, args.download, args.timeout)
    log.info("fetched %s from %s: %s", record.key, manifest["source"],
             ", ".join(f"{f['name']} ({f['verified']})" for f in manifest["files"]))


def _cmd_prepare(args) -> None:
    from .datasets import registry
    from .datasets.prepare import prepare

    record = registry.get(args.dataset)
    options = json.loads(args.options) if args.options else {}
    prov = prepare(record, args.fetched, args.out, args.profile, options)
    log.info("prepared %s/%s: n=%d, features=%d, p=%d", record.key, args.profile, prov["n"],
             prov["n_features"], prov["p"])


def _cmd_dataset_table(args) -> None:
    from .datasets.table import dataset_rows, write_dataset_table

    unavailable = json.loads(args.unavailable) if args.unavailable else {}
    table = dataset_rows(args.provenance, unavailable)
    write_dataset_table(table, args.csv, args.md)
    log.info("dataset table: %d datasets (%d unavailable)", len(table), len(unavailable))


def _load_spec(text: str) -> dict:
    """A spec given inline as JSON, or as @path to a JSON file."""
    from pathlib import Path

    return json.loads(Path(text[1:]).read_text() if text.startswith("@") else text)


def _cmd_run_cell(args) -> None:
    import pandas as pd

    from .datasets.prepare import load_prepared
    from .files import write_text_atomic
    from .protocol import run_cell, run_cells

    spec = _load_spec(args.spec)
    arrays, _ = load_prepared(args.data)
    optima = pd.read_csv(args.optimum) if args.optimum else None
    if isinstance(spec, list):  # a row: several cells on the same data, in one process
        records = run_cells(spec, arrays, optima, log=log.info)
    else:
        records = run_cell(spec, arrays, optima, log=log.info)
    write_text_atomic(args.out, records.to_csv(index=False))
    log.info("%d records -> %s", len(records), args.out)


def _cmd_cut_cell(args) -> None:
    from .records import cut_cell

    count = cut_cell(args.source, args.out, args.setting)
    log.info("%d records at %s from %s -> %s", count, args.setting, args.source, args.out)


def _cmd_optimum(args) -> None:
    from .datasets.prepare import load_prepared
    from .files import write_text_atomic
    from .optimum import compute_optima

    arrays, _ = load_prepared(args.data)
    table = compute_optima(_load_spec(args.spec), arrays, log=log.info)
    write_text_atomic(args.out, table.to_csv(index=False))


def _cmd_summarise(args) -> None:
    import pandas as pd

    from .tables import write_summary

    records = pd.concat([pd.read_csv(p) for p in args.records], ignore_index=True)
    summary = write_summary(records, args.csv, args.md, title=args.title)
    log.info("summary of %d records in %d cells -> %s", len(records), len(summary), args.csv)


def _cmd_tune(args) -> None:
    from pathlib import Path

    from .datasets.prepare import load_prepared
    from .experiments import load_paper
    from .files import write_json_atomic, write_text_atomic
    from .tuning import tune

    files = {(Path(p).parent.name, Path(p).stem): p for p in args.data}
    cache = {}

    def data(dataset, profile):
        if (dataset, profile) not in files:
            raise ValueError(f"tuning needs resources/prepared/{dataset}/{profile}.npz; pass it with --data")
        if (dataset, profile) not in cache:
            cache[(dataset, profile)] = load_prepared(files[(dataset, profile)])[0]
        return cache[(dataset, profile)]

    paper = load_paper(args.paper)
    datasets = sorted({d for d, _ in files})
    chosen, grid = tune(paper, data, args.seed, datasets=datasets, log=log.info)
    write_text_atomic(args.csv, grid.to_csv(index=False))
    write_json_atomic(args.json, chosen)


def _protocol_text(protocol: dict) -> str:
    if protocol["kind"] == "kfold":
        return f"{protocol['folds']}-fold CV x {protocol['repeats']} repeat(s) x {protocol['draws']} draw(s) per point"
    if protocol["kind"] == "full":
        return f"trained and evaluated on all rows, {protocol['repeats']} x {protocol['draws']} run(s) per point"
    return ""


def figure_caption(spec: dict, summary, protocol: dict, borrowed: dict | None = None) -> str:
    """The configured caption plus what every reader must know: protocol (that of each
    experiment a curve comes from), variants, tuning. ``borrowed``: experiment -> (its
    protocol, the algorithms taken from it)."""
    shown = summary[summary["algorithm"].isin(spec.get("algorithms", summary["algorithm"].unique()))]
    parts = [spec.get("caption", "").strip()]
    text = _protocol_text(protocol)
    if text:
        parts.append(text[0].upper() + text[1:] + ".")
    for experiment, (other, algorithms) in (borrowed or {}).items():
        parts.append(f"{', '.join(algorithms)}: the runs of experiment {experiment} "
                     f"({_protocol_text(other)}).")
    reference = sorted(set(shown.loc[shown["variant"] == "reference", "label"]))
    if reference:
        parts.append("Reference variants (published code, flaws included): " + "; ".join(reference) + ".")
    if (shown["tuning"] == "non-private").any():
        tuned = sorted(set(shown.loc[shown["tuning"] == "non-private", "algorithm"]))
        parts.append("Hyper-parameters chosen by non-private tuning for: " + ", ".join(tuned) + ".")
    parts.append("Bands: 95% CI of the mean.")
    return " ".join(p for p in parts if p)


def _figure_summary(spec: dict, paths, pd):
    """The rows a figure draws: its experiment's summary, with the algorithms it borrows
    (``borrow: {experiment: [algorithm, ...]}``) taken from those experiments' summaries
    instead. Each summary is named by its file (<experiment>.csv)."""
    from pathlib import Path

    tables = {Path(p).stem: pd.read_csv(p, keep_default_na=False, na_values=[""]) for p in paths}
    borrow = spec.get("borrow", {})
    missing = sorted({spec["experiment"], *borrow} - set(tables))
    if missing:
        raise ValueError(f"figure needs the summaries of {missing}; got {sorted(tables)}")
    taken = {a for algorithms in borrow.values() for a in algorithms}
    own = tables[spec["experiment"]]
    parts = [own[~own["algorithm"].isin(taken)]]
    for experiment, algorithms in borrow.items():
        rows = tables[experiment][tables[experiment]["algorithm"].isin(algorithms)]
        absent = sorted(set(algorithms) - set(rows["algorithm"]))
        if absent:
            raise ValueError(f"figure borrows {absent} from experiment {experiment!r}, "
                             f"whose summary has no rows for them")
        parts.append(rows)
    return pd.concat(parts, ignore_index=True)


def _cmd_figure(args) -> None:
    import pandas as pd

    from . import figures
    from .experiments import load_paper

    paper = load_paper(args.paper)
    spec = paper["figures"][args.figure]
    exp = paper["experiments"][spec["experiment"]]
    summary = _figure_summary(spec, args.summary, pd)
    borrowed = {e: (paper["experiments"][e]["protocol"], algs) for e, algs in spec.get("borrow", {}).items()}
    caption = figure_caption(spec, summary, exp["protocol"], borrowed)
    common = dict(png=args.png, pdf=args.pdf, title=spec.get("title", ""), caption=caption,
                  metrics=tuple(spec.get("metrics", ("accuracy", "objective"))))
    if spec["kind"] == "epsilon":
        model = spec.get("model", exp["models"][0])
        panels = ([(p["dataset"], p["model"]) for p in spec["panels"]] if "panels" in spec
                  else [(d, model) for d in spec.get("datasets", exp["datasets"])])
        figures.epsilon_figure(summary, panels=panels, algorithms=spec.get("algorithms", exp["algorithms"]),
                               unavailable=json.loads(args.unavailable), labels=spec.get("labels"),
                               palette=list(paper.get("algorithms", {})), **common)
    else:
        figures.sweep_figure(summary, param=spec["param"], param_label=spec.get("param_label"),
                             protocol=exp["protocol"], **common)
    log.info("figure %s -> %s", args.figure, args.png)


def _cmd_info(args) -> None:
    import numpy
    import scipy

    from . import __version__
    from .datasets.registry import DATASET_KEYS

    print(f"dperm {__version__}; numpy {numpy.__version__}; scipy {scipy.__version__}; python {sys.version.split()[0]}")
    print("threads: " + " ".join(f"{v}={os.environ.get(v, '')}" for v in THREAD_VARS))
    print("datasets: " + ", ".join(DATASET_KEYS))


# sub-commands of this module (the paper modules add theirs): a job running one of these does
# not import the paper modules
CORE_COMMANDS = frozenset({"fetch", "prepare", "dataset-table", "run-cell", "cut-cell", "optimum",
                           "summarise", "tune", "figure", "info"})


def paper_modules():
    """Paper-specific modules (dperm.papers.*) that add their own sub-commands via ``add_cli``."""
    import importlib
    import pkgutil

    from . import papers

    return [importlib.import_module(f"{papers.__name__}.{m.name}") for m in pkgutil.iter_modules(papers.__path__)]


def write_table(frame, csv_path, md_path, note: str) -> None:
    """A table as CSV and as Markdown with a note above it (empty cells where a value is unknown)."""
    from .files import write_text_atomic

    write_text_atomic(csv_path, frame.to_csv(index=False))
    shown = frame.astype(object).where(frame.notna(), "")
    write_text_atomic(md_path, note.strip() + "\n\n" + shown.to_markdown(index=False, floatfmt=".5g") + "\n")


def build_parser(papers: bool = True) -> argparse.ArgumentParser:
    """The full parser; ``papers=False`` leaves out the paper modules' sub-commands (importing
    them costs ~0.6 s of pandas/scipy.stats, paid by every one of hundreds of pipeline jobs)."""
    parser = argparse.ArgumentParser(prog="dperm", description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1, help="BLAS/OpenMP threads (default 1)")
    parser.add_argument("-v", "--verbose", action="store_true")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("fetch", help="fetch a dataset's raw files (mirror, ucimlrepo or HTTPS)")
    p.add_argument("dataset")
    p.add_argument("--out", required=True, help="resources/raw/<dataset>/fetch.json")
    p.add_argument("--mirror", default=None, help="mirror directory (else $DPERM_DATA_MIRROR)")
    p.add_argument("--download", default="auto", choices=["auto", "always", "never"])
    p.add_argument("--timeout", type=float, default=60.0, help="seconds per download")
    p.set_defaults(func=_cmd_fetch)

    p = sub.add_parser("prepare", help="build model-ready arrays for one preprocessing profile")
    p.add_argument("dataset")
    p.add_argument("--fetched", required=True, help="the dataset's fetch.json")
    p.add_argument("--profile", default="default", help="profile name (recorded in provenance)")
    p.add_argument("--options", default="{}", help="profile options as JSON")
    p.add_argument("--out", required=True, help="output .npz (a .json provenance goes beside it)")
    p.set_defaults(func=_cmd_prepare)

    p = sub.add_parser("dataset-table", help="the dataset characteristics table")
    p.add_argument("provenance", nargs="*", help="prepared datasets' provenance .json files")
    p.add_argument("--unavailable", default="{}", help="JSON {dataset: reason} for datasets not had")
    p.add_argument("--csv", required=True)
    p.add_argument("--md", required=True)
    p.set_defaults(func=_cmd_dataset_table)

    p = sub.add_parser("run-cell", help="run one table cell (all folds, repeats and draws), or a row of them")
    p.add_argument("--spec", required=True,
                   help="cell spec as JSON, or a JSON list of cell specs on the same data (a row); or @file.json")
    p.add_argument("--data", required=True, help="prepared .npz")
    p.add_argument("--optimum", default=None, help="optima .csv of the same splits (for opt_gap)")
    p.add_argument("--out", required=True, help="records .csv")
    p.set_defaults(func=_cmd_run_cell)

    p = sub.add_parser("cut-cell", help="one privacy setting's records of a row or path file, as a cell file")
    p.add_argument("source", help="results/rows/... or results/paths/... records .csv")
    p.add_argument("out", help="the cell's records .csv")
    p.add_argument("--setting", required=True, help="privacy setting token, e.g. 0.4 or T1000")
    p.set_defaults(func=_cmd_cut_cell)

    p = sub.add_parser("optimum", help="certified optimum of every training fold")
    p.add_argument("--spec", required=True, help="optimum spec as JSON, or @file.json")
    p.add_argument("--data", required=True)
    p.add_argument("--out", required=True)
    p.set_defaults(func=_cmd_optimum)

    p = sub.add_parser("summarise", help="aggregate run records into a table")
    p.add_argument("records", nargs="+", help="records .csv files")
    p.add_argument("--csv", required=True)
    p.add_argument("--md", required=True)
    p.add_argument("--title", default="")
    p.set_defaults(func=_cmd_summarise)

    p = sub.add_parser("tune", help="non-private hyper-parameter selection of a paper's grid")
    p.add_argument("--paper", required=True, help="config/papers/<paper>.yaml")
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--data", nargs="+", required=True, help="prepared .npz files (<dataset>/<profile>.npz)")
    p.add_argument("--json", required=True, help="choices (read by the runs)")
    p.add_argument("--csv", required=True, help="every grid point and its score")
    p.set_defaults(func=_cmd_tune)

    p = sub.add_parser("figure", help="draw one figure of a paper from its summary table")
    p.add_argument("--paper", required=True, help="config/papers/<paper>.yaml")
    p.add_argument("--figure", required=True, help="figure key in the paper's figures section")
    p.add_argument("--summary", nargs="+", required=True,
                   help="summary .csv of the figure's experiment and of any it borrows from "
                        "(results/tables/<paper>/<experiment>.csv)")
    p.add_argument("--unavailable", default="{}", help="JSON {dataset: reason}")
    p.add_argument("--png", required=True)
    p.add_argument("--pdf", required=True)
    p.set_defaults(func=_cmd_figure)

    for module in paper_modules() if papers else ():
        module.add_cli(sub)

    p = sub.add_parser("info", help="versions, thread settings and known datasets")
    p.set_defaults(func=_cmd_info)
    return parser


def main(argv=None) -> int:
    # Pin the thread pools before anything (the paper modules the full parser discovers import
    # numpy) is loaded: a minimal parser reads --threads first.
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--threads", type=int, default=1)
    pre.add_argument("-v", "--verbose", action="store_true")
    pre.add_argument("command", nargs="?")
    known = pre.parse_known_args(argv)[0]
    threads = known.threads
    if threads < 1:
        print(f"dperm: --threads must be >= 1, got {threads}", file=sys.stderr)
        return 2
    pin_threads(threads)
    args = build_parser(papers=known.command not in CORE_COMMANDS).parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    from .datasets.fetch import FetchError
    from .files import DataFileError

    try:
        args.func(args)
    except (FetchError, DataFileError, ValueError, KeyError) as exc:
        message = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        print(f"dperm {args.command}: error: {message}", file=sys.stderr)
        return 2
    return 0
