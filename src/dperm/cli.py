"""``python -m dperm ...``: every step a Snakemake rule runs, usable without Snakemake.

This module parses and dispatches; the work is in the library (datasets, protocol, tuning,
report, papers). Paper plugins add their own commands (``python -m dperm <paper> <verb>``).
numpy is imported only after ``--threads`` has pinned the BLAS/OpenMP thread pools: OpenBLAS
reads its environment once, when it loads, and unpinned BLAS on 2 cores made small fits up to 8x
slower here. Errors a user can fix (bad input, missing data) print one message, exit code 2.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time

THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "GOTO_NUM_THREADS",
               "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS")
# Where the data commands take their settings when no option gives them (the workflow sets
# these from config: they change how data is fetched, never what it is, so they are not rule
# parameters and changing them reruns nothing).
DOWNLOAD_ENV, TIMEOUT_ENV = "DPERM_DOWNLOAD", "DPERM_TIMEOUT"
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
    mirror = resolve_mirror(None, given=args.mirror)
    download = args.download or os.environ.get(DOWNLOAD_ENV, "auto")
    timeout = args.timeout if args.timeout is not None else float(os.environ.get(TIMEOUT_ENV, 60.0))
    manifest = fetch(record, os.path.dirname(args.out) or ".", mirror, download, timeout)
    log.info("fetched %s from %s: %s", record.key, manifest["source"],
             ", ".join(f"{f['name']} ({f['verified']})" for f in manifest["files"]))


def _cmd_prepare(args) -> None:
    from .datasets import registry
    from .datasets.prepare import prepare

    record = registry.get(args.dataset)
    prov = prepare(record, args.fetched, args.out, args.profile, json.loads(args.options) if args.options else {})
    log.info("prepared %s/%s: n=%d, features=%d, p=%d, preprocessing %s", record.key, args.profile, prov["n"],
             prov["n_features"], prov["p"], prov["preprocessing"])
    for name, counts in prov.get("clipped", {}).items():
        log.info("public bound of %s [%g, %g]: %d value(s) below, %d above, clipped", name,
                 prov["bounds"][name]["lo"], prov["bounds"][name]["hi"], counts["below"], counts["above"])
    if "target_clipped" in prov:
        log.info("public bound of the target: %d value(s) below, %d above, clipped", prov["target_clipped"]["below"],
                 prov["target_clipped"]["above"])


def _cmd_dataset_table(args) -> None:
    from .datasets.table import dataset_rows, shown_dataset_table
    from .papers import dataset_shapes
    from .report.tables import write_table

    unavailable = json.loads(args.unavailable) if args.unavailable else {}
    table = dataset_rows(args.provenance, unavailable, dataset_shapes())
    note, shown = shown_dataset_table(table)
    write_table(table, args.csv, args.md, note, floatfmt="g", shown=shown, html_path=args.html)
    log.info("dataset table: %d datasets (%d unavailable)", len(table), len(unavailable))


def _cmd_run_job(args) -> None:
    from .config import load_spec
    from .datasets.prepare import load_prepared
    from .files import write_text_atomic
    from .grid.specs import apply_tuning
    from .protocol.runner import run_job

    specs = load_spec(args.spec)
    specs = specs if isinstance(specs, list) else [specs]
    tuned = json.loads(open(args.tuning).read()) if args.tuning else None
    specs = [apply_tuning(spec, tuned) for spec in specs]
    arrays, _ = load_prepared(args.data)
    optima = _read_optima(args.optimum) if args.optimum else None
    if args.starts:
        from .algorithms.pidp_sgd import share_starts
        from .optimum import read_starts

        share_starts(read_starts(args.starts))
    data = {}
    for item in args.extra:
        role, _, path = item.partition("=")
        if not role or not path:
            raise ValueError(f"--extra takes <role>=<prepared .npz>; got {item!r}")
        data[role] = load_prepared(path)[0]
    records = run_job(specs, arrays, optima, log=log.info, data=data)
    write_text_atomic(args.out, records.to_csv(index=False))
    log.info("%d records -> %s", len(records), args.out)


def _cmd_cut_cell(args) -> None:
    from .records import cut_cell

    count = cut_cell(args.source, args.out, args.setting)
    log.info("%d records at %s from %s -> %s", count, args.setting, args.source, args.out)


def _read_optima(paths: list[str]):
    """The optima of a job's splits, from one file or from the parts of a split optimum, each
    split once."""
    import pandas as pd

    optima = pd.concat([pd.read_csv(path) for path in paths], ignore_index=True)
    twice = optima.duplicated(["fold", "repeat"])
    if twice.any():
        fold, repeat = optima.loc[twice, ["fold", "repeat"]].iloc[0]
        raise ValueError(f"--optimum {' '.join(paths)}: split (fold {fold}, repeat {repeat}) is given twice")
    return optima


def _cmd_optimum(args) -> None:
    from .config import load_spec
    from .datasets.prepare import load_prepared
    from .files import write_text_atomic
    from .optimum import compute_optima

    part = None
    if args.part is not None:
        k, sep, n = args.part.partition("/")
        if not (sep and k.isdigit() and n.isdigit() and 1 <= int(k) <= int(n)):
            raise ValueError(f"--part takes K/N with 1 <= K <= N (part K of N); got {args.part!r}")
        part = (int(k), int(n))
    arrays, _ = load_prepared(args.data)
    table = compute_optima(load_spec(args.spec), arrays, log=log.info, part=part)
    write_text_atomic(args.out, table.to_csv(index=False))


def _cmd_starts(args) -> None:
    from .config import load_spec
    from .datasets.prepare import load_prepared
    from .optimum import compute_starts, write_starts

    specs = load_spec(args.spec)
    arrays, _ = load_prepared(args.data)
    starts = compute_starts(specs if isinstance(specs, list) else [specs], arrays, log=log.info)
    write_starts(args.out, starts)
    log.info("%d starts -> %s", len(starts), args.out)


def _cmd_summarise(args) -> None:
    from .report.captions import with_quick_note
    from .report.tables import read_records, write_summary

    twice = sorted({str(p) for p in args.records if [os.path.realpath(q) for q in args.records].count(
        os.path.realpath(p)) > 1})
    if twice:  # each fit would count twice: n doubled, intervals too narrow
        raise ValueError(f"records files given more than once: {twice}; each fit would be counted twice")
    records = read_records(args.records)
    summary = write_summary(records, args.csv, args.md, title=args.title, note=with_quick_note("", args.quick),
                            html_path=args.html)
    log.info("summary of %d records in %d cells -> %s", len(records), len(summary), args.csv)


def _cmd_tune(args) -> None:
    from pathlib import Path

    from .config import load_spec
    from .datasets.prepare import load_prepared
    from .tuning import tune

    files = {(Path(p).parent.name, Path(p).stem): p for p in args.data}
    cache = {}

    def data(dataset, profile):
        if (dataset, profile) not in files:
            raise ValueError(f"tuning needs resources/prepared/{dataset}/{profile}.npz; pass it with --data")
        if (dataset, profile) not in cache:
            cache[(dataset, profile)] = load_prepared(files[(dataset, profile)])[0]
        return cache[(dataset, profile)]

    spec = load_spec(args.spec)
    parts = None if args.part is None else [_tuning_part(args.part)]
    chosen, grid = tune(spec, data, args.seed, datasets=[spec["dataset"]], parts=parts, log=log.info)
    _write_tuning(args, chosen, grid)


def _tuning_part(text: str) -> tuple[str, str]:
    model, sep, profile = text.partition("/")
    if not sep or not model or not profile or "/" in profile:
        raise ValueError(f"--part {text!r}: give one tuning part as MODEL/PROFILE, e.g. lr/default")
    return model, profile


def _write_tuning(args, chosen, grid) -> None:
    """A tuning's choices (.json, written last: the runs read it), its grid (.csv) and, when asked
    for, the grid as a page of the report."""
    from pathlib import Path

    from .files import write_json_atomic, write_text_atomic

    write_text_atomic(args.csv, grid.to_csv(index=False))
    if args.html:
        from .report.html import table_page

        note = ("Non-private tuning: every grid point's mean validation loss and accuracy; the chosen "
                "point per tuned algorithm, and whether it lies at the edge of its grid. Cells that use "
                "a choice are labelled tuning: non-private.")
        write_text_atomic(args.html, table_page(grid, note, floatfmt=".4g", csv_name=Path(args.csv).name))
    write_json_atomic(args.json, chosen)


def _cmd_tuning_table(args) -> None:
    import json
    from pathlib import Path

    import pandas as pd

    from .tuning import GRID_COLUMNS, merge

    text = ["dataset", "profile", "model", "tuned", "setting", "at_edge"]
    parts = []
    for path in args.parts:
        if not path.endswith(".json"):
            raise ValueError(f"--parts {path!r}: give each part's choices file (.json; its grid is the .csv beside it)")
        grid = pd.read_csv(path.removesuffix(".json") + ".csv", dtype={c: str for c in text})
        missing = sorted(set(GRID_COLUMNS) - set(grid.columns))
        if missing:
            raise ValueError(f"{path.removesuffix('.json')}.csv has no column(s) {missing}: not a tuning grid")
        grid[text] = grid[text].fillna("")
        parts.append((json.loads(Path(path).read_text(encoding="utf-8")), grid))
    chosen, grid = merge(parts)
    _write_tuning(args, chosen, grid)
    log.info("tuning of %d part(s) -> %s", len(parts), args.json)


def _cmd_figure(args) -> None:
    from .config import load_spec
    from .report.paper_figures import draw

    spec = load_spec(args.spec)
    draw(spec, args.summary, args.png, args.pdf)
    log.info("figure %s -> %s", spec.get("figure", ""), args.png)


def _cmd_audit_subject(args) -> None:
    import pandas as pd

    from .audit import COLUMNS, run_subject, subject
    from .files import write_text_atomic

    rows = run_subject(subject(args.subject), seed=args.seed, scale=args.scale)
    write_text_atomic(args.out, pd.DataFrame(rows, columns=COLUMNS).to_csv(index=False))
    for row in rows:
        log.info("%s / %s: claimed %.4g, lower bound %.4g: %s", row["subject"], row["case"], row["epsilon_claimed"],
                 row["epsilon_lower"], row["verdict"])


def _cmd_audit_table(args) -> None:
    from .report.audit import failures, write_audit
    from .report.tables import read_records

    table = write_audit(read_records(args.subjects), args.csv, args.md, args.png, args.pdf, quick=args.quick,
                        mutation=(args.mutation_csv, args.mutation_md, args.mutation_html) if args.mutation_csv
                        else None,
                        summary=(args.summary_csv, args.summary_md, args.summary_html) if args.summary_csv else None,
                        html=args.html)
    failed = failures(table)
    if args.enforce and len(failed):
        listed = "; ".join(f"{r.subject} ({r.case}): {r.verdict}" for r in failed.itertuples())
        raise ValueError(f"the privacy audit failed ({len(failed)} of {len(table)} cases; table {args.csv}): "
                         f"{listed}")


def _cmd_audit_one_run(args) -> None:
    import pandas as pd

    from .audit_one_run import calibration, run
    from .report.audit import write_one_run

    repeats = max(1, int(round(args.repeats * args.scale)))
    write_one_run(pd.DataFrame(run(seed=args.seed, repeats=repeats)), pd.DataFrame(calibration(seed=args.seed)),
                  args.csv, args.md, args.calibration_csv, args.calibration_md, quick=args.quick, html=args.html)


def _cmd_scorecard(args) -> None:
    import pandas as pd

    from .files import write_text_atomic
    from .papers import plugin
    from .report.scorecard import build, to_html, to_markdown
    from .report.tables import read_records

    spec = json.loads(args.spec)
    tables: dict = {}
    for item in args.table:
        name, _, path = item.partition("=")
        paper, _, table = name.partition("/")
        if not path or not table:
            raise ValueError(f"--table takes <paper>/<table>=<path>; got {item!r}")
        tables.setdefault(paper, {})[table] = pd.read_csv(path)
    summaries = read_records(args.summaries) if args.summaries else pd.DataFrame()
    docs = {os.path.basename(path): open(path, encoding="utf-8").read() for path in args.docs}
    audit = pd.read_csv(args.audit)
    makers = {entry["key"]: getattr(plugin(entry["key"]), "scorecard", None) for entry in spec["papers"]}
    sections = build(spec, tables, summaries, audit, docs, makers)
    docs_dir = os.path.dirname(os.path.abspath(args.docs[0]))
    link = os.path.relpath(docs_dir, os.path.dirname(os.path.abspath(args.md))).replace(os.sep, "/")
    write_text_atomic(args.md, to_markdown(spec, sections, audit, docs_link=link))
    write_text_atomic(args.html, to_html(spec, sections, audit))


def _cmd_product(args) -> None:
    from .config import load_spec
    from .papers import products
    from .report.products import Inputs, output_paths, resolve, write

    product = resolve(products(args.paper), args.product)
    output_paths(product, args.outputs)  # before the work: a wrong output list fails at once
    files = {role: getattr(args, role) for role in PRODUCT_ROLES}
    inputs = Inputs(args.paper, args.product, load_spec(args.spec), args.quick, files)
    made = product.make(inputs)
    written = write(product, made, args.outputs, args.quick)
    log.info("%s/%s: %d file(s) written: %s", args.paper, args.product, len(written), ", ".join(written))


def _cmd_estimate(args) -> None:
    from .estimate import estimate, format_estimate

    options = (["-F"] if args.from_scratch else []) + (["--configfile", *args.configfile] if args.configfile else [])
    result = estimate(args.targets, args.cores, options)
    print(json.dumps(result) if args.json else format_estimate(result))


def _cmd_info(args) -> None:
    import numpy
    import scipy

    from . import __version__
    from .datasets.registry import DATASET_KEYS
    from .papers import names

    print(f"dperm {__version__}; numpy {numpy.__version__}; scipy {scipy.__version__}; python {sys.version.split()[0]}")
    print("threads: " + " ".join(f"{v}={os.environ.get(v, '')}" for v in THREAD_VARS))
    print("datasets: " + ", ".join(DATASET_KEYS))
    print("papers: " + ", ".join(names()))


def _cmd_check_paper(args) -> None:
    from pathlib import Path

    from .config import ConfigError, read_yaml
    from .grid import cells, check_profiles, merge
    from .papers import load, products

    name = read_yaml(args.paper).get("paper", Path(args.paper).stem)
    paper = load(name, args.paper, quick=args.quick, overlay=args.overlay)
    # the global config beside the paper's folder (config/papers/<p>.yaml -> config/config.yaml), not
    # the working directory's: check-paper is run from anywhere, an installed dperm included
    base = Path(args.paper).resolve().parent.parent / "config.yaml"
    if not base.is_file():
        raise ConfigError(f"{args.paper}: no global config at {base} (a paper config lives in <config>/papers/, "
                          f"beside <config>/config.yaml)")
    profiles = {}
    for path in [base, *args.config]:  # merged as Snakemake merges its configfiles
        profiles = merge(profiles, read_yaml(path).get("profiles", {}))
    check_profiles(paper, profiles, paper.source)
    print(f"{args.paper}: paper {paper.key!r}, {len(paper.experiments)} experiment(s), {len(cells(paper))} cell(s), "
          f"{len(paper.figures)} figure(s), {len(products(paper.key))} product(s): OK")


#: what a product reads, one option each (dperm.report.products.Reads)
PRODUCT_ROLES = ("cells", "summaries", "tables", "prepared", "provenance", "datasets")


def build_parser() -> argparse.ArgumentParser:
    """The parser of every sub-command (no paper has commands of its own: a paper's tables and
    figures are built by the one ``product`` verb)."""
    parser = argparse.ArgumentParser(prog="dperm", description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1, help="BLAS/OpenMP threads (default 1)")
    parser.add_argument("-v", "--verbose", action="store_true")
    parser.add_argument("--log", default=None, metavar="FILE",
                        help="write the log to FILE; only progress lines, warnings and errors reach stderr")
    parser.add_argument("--usage", default=None, metavar="FILE",
                        help="on success, write the command's own CPU time, peak memory and wall time (getrusage) "
                             "to FILE as JSON")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("fetch", help="fetch a dataset's raw files (mirror, ucimlrepo or HTTPS)")
    p.add_argument("dataset")
    p.add_argument("--out", required=True, help="resources/raw/<dataset>/fetch.json")
    p.add_argument("--mirror", default=None,
                   help="mirror directory (wins over $DPERM_DATA_MIRROR, which is used without it)")
    p.add_argument("--download", default=None, choices=["auto", "always", "never"],
                   help=f"download policy (else ${DOWNLOAD_ENV}, else auto)")
    p.add_argument("--timeout", type=float, default=None, help=f"seconds per download (else ${TIMEOUT_ENV}, else 60)")
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
    p.add_argument("--html", default=None, help="the table as an HTML page (the report shows it)")
    p.set_defaults(func=_cmd_dataset_table)

    p = sub.add_parser("run-job", help="run a job: the cells of one experiment, dataset, model and algorithm")
    p.add_argument("--spec", required=True,
                   help="a JSON list of cell specs on the same data (or one spec); or @file.json")
    p.add_argument("--data", required=True, help="prepared .npz")
    p.add_argument("--tuning", default=None, help="the paper's tuning choices .json (cells that use them)")
    p.add_argument("--optimum", nargs="+", default=None,
                   help="optima .csv of the same splits (for opt_gap): one file, or the parts of a split optimum")
    p.add_argument("--starts", default=None, help="start file .npz (dperm starts): theta~ solved once for its jobs")
    p.add_argument("--extra", action="append", default=[],
                   help="<role>=<prepared .npz>: other data the cells' metric hooks read (repeatable)")
    p.add_argument("--out", required=True, help="records .csv")
    p.set_defaults(func=_cmd_run_job)

    p = sub.add_parser("cut-cell", help="one privacy setting's records of a job file, as a cell file")
    p.add_argument("source", help="results/jobs/... records .csv")
    p.add_argument("out", help="the cell's records .csv")
    p.add_argument("--setting", required=True, help="privacy setting token, e.g. 0.4, inf or T1000")
    p.set_defaults(func=_cmd_cut_cell)

    p = sub.add_parser("optimum", help="certified optimum of every training fold")
    p.add_argument("--spec", required=True, help="optimum spec as JSON, or @file.json")
    p.add_argument("--data", required=True)
    p.add_argument("--part", default=None, metavar="K/N",
                   help="only part K of N: every N-th split from the K-th (an experiment's optimum_parts)")
    p.add_argument("--out", required=True)
    p.set_defaults(func=_cmd_optimum)

    p = sub.add_parser("starts", help="theta~, the non-private start of PIDP-SGD and its control, once per split "
                                      "for every job that starts from it")
    p.add_argument("--spec", required=True, help="a JSON list of cell specs (one per job), or @file.json")
    p.add_argument("--data", required=True, help="prepared .npz")
    p.add_argument("--out", required=True, help="start file .npz")
    p.set_defaults(func=_cmd_starts)

    p = sub.add_parser("summarise", help="aggregate run records into an experiment summary")
    p.add_argument("records", nargs="+", help="records .csv files")
    p.add_argument("--csv", required=True)
    p.add_argument("--md", required=True)
    p.add_argument("--html", default=None, help="the readable view as an HTML page (the report shows it)")
    p.add_argument("--title", default="")
    p.add_argument("--quick", action="store_true", help="say that this is a quick run")
    p.set_defaults(func=_cmd_summarise)

    p = sub.add_parser("tune", help="non-private hyper-parameter selection for one dataset of a paper")
    p.add_argument("--spec", required=True, help="the tuning spec as JSON (dperm.tuning.tuning_spec), or @file.json")
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--data", nargs="+", required=True, help="prepared .npz files (<dataset>/<profile>.npz)")
    p.add_argument("--json", required=True, help="choices (read by the runs)")
    p.add_argument("--csv", required=True, help="every grid point and its score")
    p.add_argument("--html", default=None, help="the grid as an HTML page (the report shows it)")
    p.add_argument("--part", default=None, metavar="MODEL/PROFILE",
                   help="choose for this (model, tuning profile) only (dperm.tuning.tuning_parts); default: all")
    p.set_defaults(func=_cmd_tune)

    p = sub.add_parser("tuning-table", help="join the parts of one dataset's tuning into its choices and grid")
    p.add_argument("--parts", nargs="+", required=True,
                   help="the parts' choices (.json), in dperm.tuning.tuning_parts' order; "
                        "each grid is the .csv beside it")
    p.add_argument("--json", required=True, help="choices")
    p.add_argument("--csv", required=True, help="every grid point and its score")
    p.add_argument("--html", default=None, help="the grid as an HTML page (the report shows it)")
    p.set_defaults(func=_cmd_tuning_table)

    p = sub.add_parser("figure", help="draw one declared figure of a paper from experiment summaries")
    p.add_argument("--spec", required=True, help="the figure spec as JSON (dperm.grid.figure_spec)")
    p.add_argument("--summary", nargs="+", required=True,
                   help="summary .csv of the figure's experiment and of any it borrows from (<experiment>.csv)")
    p.add_argument("--png", required=True)
    p.add_argument("--pdf", required=True)
    p.set_defaults(func=_cmd_figure)

    p = sub.add_parser("check-paper", help="check a paper config (schema, names, grids) without running it")
    p.add_argument("paper", help="config/papers/<paper>.yaml")
    p.add_argument("--quick", action="store_true", help="check it with its quick section merged in")
    p.add_argument("--overlay", default=None,
                   help="an overlay file merged over it (e.g. .test/config/papers/<paper>.yaml)")
    p.add_argument("--config", nargs="+", default=[], metavar="CONFIGFILE",
                   help="config files merged over the global config beside the paper's folder, as snakemake "
                        "--configfile merges them (their preprocessing profiles are the ones the paper may use)")
    p.set_defaults(func=_cmd_check_paper)

    p = sub.add_parser("audit-subject", help="black-box privacy audit of one algorithm or mutant (dperm.audit)")
    p.add_argument("--subject", required=True, help="an algorithm key, a mutant's name, or its slug")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--scale", type=float, default=1.0, help="fraction of each case's runs (a reduced audit)")
    p.add_argument("--out", required=True, help="the subject's audit rows .csv")
    p.set_defaults(func=_cmd_audit_subject)

    p = sub.add_parser("audit-table", help="the audit's table and figure; fails if a control is not caught")
    p.add_argument("subjects", nargs="+", help="the subjects' audit rows .csv")
    p.add_argument("--csv", required=True)
    p.add_argument("--md", required=True)
    p.add_argument("--html", default=None, help="the table as an HTML page (the report shows it)")
    p.add_argument("--png", required=True)
    p.add_argument("--pdf", required=True)
    p.add_argument("--mutation-csv", help="the mutation table (one row per mutant of an algorithm) .csv")
    p.add_argument("--mutation-md")
    p.add_argument("--mutation-html", default=None, help="the mutation table as an HTML page (the report shows it)")
    p.add_argument("--summary-csv", help="per algorithm: tightness and mutation score .csv")
    p.add_argument("--summary-md")
    p.add_argument("--summary-html", default=None)
    p.add_argument("--enforce", action="store_true", help="exit with an error if any case fails")
    p.add_argument("--quick", action="store_true", help="say that this is a quick run")
    p.set_defaults(func=_cmd_audit_table)

    p = sub.add_parser("audit-one-run", help="one-run audits of DP-SGD and DP-GD at a paper's scale, and the one-run "
                                             "estimators' calibration (dperm.audit_one_run)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--repeats", type=int, default=3, help="training runs per setting")
    p.add_argument("--scale", type=float, default=1.0, help="fraction of the repeats (at least one)")
    for name in ("csv", "md", "calibration-csv", "calibration-md"):
        p.add_argument(f"--{name}", required=True)
    p.add_argument("--html", default=None, help="the one-run table as an HTML page (the report shows it)")
    p.add_argument("--quick", action="store_true", help="say that this is a quick run")
    p.set_defaults(func=_cmd_audit_one_run)

    p = sub.add_parser("scorecard", help="the reproduction scorecard: published vs ours, claims, deviations, "
                                         "labels, audit (results/SCORECARD.md)")
    p.add_argument("--spec", required=True, help="JSON: {papers: [{key, title, deviations, algorithms}], quick, audit}")
    p.add_argument("--table", action="append", default=[], help="<paper>/<table>=<path> (repeatable)")
    p.add_argument("--summaries", nargs="*", default=[], help="every experiment summary (.csv) of the papers")
    p.add_argument("--audit", required=True, help="results/audit/audit.csv")
    p.add_argument("--docs", nargs="+", required=True, help="docs/deviations.md and docs/privacy.md")
    p.add_argument("--md", required=True)
    p.add_argument("--html", required=True)
    p.set_defaults(func=_cmd_scorecard)

    p = sub.add_parser("product", help="build one declared product of a paper (its tables and figures)")
    p.add_argument("paper", help="the paper key (src/dperm/papers/<paper>/)")
    p.add_argument("product", help="a product the paper declares in PRODUCTS")
    p.add_argument("--spec", default="{}", help="the configuration values the product reads, as JSON (or @file)")
    for role in PRODUCT_ROLES:
        p.add_argument(f"--{role}", nargs="*", default=[], help=f"the product's {role} input files")
    p.add_argument("--outputs", nargs="+", required=True,
                   help="every file it writes: <table>.csv and .md of each table, <figure>.png and .pdf of each figure")
    p.add_argument("--quick", action="store_true", help="say in every note, title and caption that this is a quick run")
    p.set_defaults(func=_cmd_product)

    p = sub.add_parser("info", help="versions, thread settings, known datasets and papers")
    p.set_defaults(func=_cmd_info)

    p = sub.add_parser("estimate", help="what a target will cost before it runs: jobs, CPU time, wall time on N "
                                        "cores (a dry run and the measured per-job table workflow/cluster.yaml)")
    p.add_argument("targets", nargs="*", help="Snakemake targets (default: the default target)")
    p.add_argument("--cores", type=int, default=2, help="cores the run will use (default 2)")
    p.add_argument("--configfile", nargs="+", default=[], metavar="FILE", help="as snakemake --configfile")
    p.add_argument("--from-scratch", action="store_true",
                   help="every job, as on a clean clone (snakemake -F); default: only what is not up to date")
    p.add_argument("--json", action="store_true", help="print the estimate as one JSON object")
    p.set_defaults(func=_cmd_estimate)
    return parser


def main(argv=None) -> int:
    # Pin the thread pools before anything (the paper plugins the full parser discovers may
    # import numpy) is loaded: a minimal parser reads --threads first.
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--threads", type=int, default=1)
    pre.add_argument("-v", "--verbose", action="store_true")
    pre.add_argument("--log", default=None)
    pre.add_argument("command", nargs="?")
    known = pre.parse_known_args(argv)[0]
    if known.threads < 1:
        print(f"dperm: --threads must be >= 1, got {known.threads}", file=sys.stderr)
        return 2
    pin_threads(known.threads)
    args = build_parser().parse_args(argv)
    _configure_logging(args)
    from .files import DataFileError, FetchError  # light: a cut-cell job must not import pandas

    started = time.perf_counter()
    try:
        args.func(args)
        if args.usage:
            _write_usage(args, time.perf_counter() - started)
    except (FetchError, DataFileError, ValueError, KeyError, OSError) as exc:
        if args.verbose:  # -v: the whole traceback, for a bug report
            raise
        _error(args, f"dperm {args.command}: error: {_one_line(exc)}")
        return 2
    except BaseException:
        if args.log:  # a bug: its traceback in the log as well as on the terminal
            import traceback

            _append(args.log, traceback.format_exc())
        raise
    return 0


def _write_usage(args, wall: float) -> None:
    """What this process used, measured by itself (``getrusage``: every CPU second, not a sample):
    user and system CPU seconds, peak resident memory, wall seconds; the scheduling and
    critical-path analyses read these (benchmarks/critical_path.py)."""
    import resource

    from .files import write_json_atomic

    own = resource.getrusage(resource.RUSAGE_SELF)
    write_json_atomic(args.usage, {"command": args.command, "cpu_user_s": round(own.ru_utime, 3),
                                   "cpu_system_s": round(own.ru_stime, 3),
                                   "cpu_s": round(own.ru_utime + own.ru_stime, 3),
                                   "max_rss_mb": round(own.ru_maxrss / 1024, 1), "wall_s": round(wall, 3)})


def _configure_logging(args) -> None:
    """Everything to stderr; or, with ``--log FILE``, everything to FILE and only progress lines,
    warnings and errors to stderr (:mod:`dperm.progress`), which Snakemake shows as jobs run."""
    level = logging.DEBUG if args.verbose else logging.INFO
    fmt = "%(asctime)s %(levelname)s %(name)s: %(message)s"
    if not args.log:
        logging.basicConfig(level=level, format=fmt, stream=sys.stderr)
        return
    from .progress import ProgressToStderr

    os.makedirs(os.path.dirname(os.path.abspath(args.log)), exist_ok=True)
    to_file = logging.FileHandler(args.log, mode="w", encoding="utf-8")
    to_file.setFormatter(logging.Formatter(fmt))
    to_terminal = logging.StreamHandler(sys.stderr)
    to_terminal.setFormatter(logging.Formatter("%(asctime)s %(message)s", datefmt="%H:%M:%S"))
    to_terminal.addFilter(ProgressToStderr())
    logging.basicConfig(level=level, handlers=[to_file, to_terminal], force=True)
    logging.captureWarnings(True)


def _append(path: str, text: str) -> None:
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(text if text.endswith("\n") else text + "\n")


def _error(args, line: str) -> None:
    print(line, file=sys.stderr)
    if args.log:
        _append(args.log, line)


def _one_line(exc: BaseException) -> str:
    """An error as one line a user can act on: the file and what went wrong for a file that cannot
    be read or written (a missing input, a read-only results directory), the missing key for a
    bare KeyError (a spec or a file written by another version), else the message."""
    if isinstance(exc, OSError) and exc.filename is not None:
        return f"{exc.filename}: {exc.strerror or exc} (rerun with -v for the traceback)"
    if isinstance(exc, KeyError):
        key = exc.args[0] if exc.args else ""
        if isinstance(key, str) and " " in key:  # already a sentence
            return key
        return f"missing key {key!r} in its input (a spec or a file from another version?; -v for the traceback)"
    return str(exc)
