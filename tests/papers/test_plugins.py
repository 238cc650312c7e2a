"""The plugin layout holds: generic files name no paper, a paper is its config and its package
(its products declared once, each output with a caption; no rule file, no CLI glue: a new paper
shown end to end), and no package reaches into another's private names."""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import pytest
import yaml
from conftest import REPO, copy_workflow, snakemake_env

from dperm import papers

SRC = REPO / "src" / "dperm"


def paper_keys() -> set[str]:
    configs = {p.stem for p in (REPO / "config" / "papers").glob("*.yaml")}
    return set(papers.names()) | configs


def generic_files() -> list[Path]:
    """Files that must serve every paper: the entry Snakefile, the rule files outside
    rules/papers/, the report captions, the schemas and the package outside papers/<paper>/."""
    files = [REPO / "Snakefile", *sorted((REPO / "workflow" / "rules").glob("*.smk")),
             *sorted((REPO / "workflow" / "report").glob("*.rst")), *sorted((SRC / "schemas").glob("*.yaml"))]
    for path in sorted(SRC.rglob("*.py")):
        parts = path.relative_to(SRC).parts
        if parts[0] == "papers" and len(parts) > 2:
            continue  # inside a paper's own package
        files.append(path)
    return files


def code_words(path: Path) -> set[str]:
    """The identifiers and string values a file's code uses: Python and Snakemake files without
    their comments and docstrings (prose may cite a paper by its authors), YAML without its
    descriptions, captions as they are."""
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".yaml":
        def walk(node):
            if isinstance(node, dict):
                for key, value in node.items():
                    if key != "description":
                        yield str(key)
                        yield from walk(value)
            elif isinstance(node, list):
                for value in node:
                    yield from walk(value)
            else:
                yield str(node)
        return set(re.findall(r"[A-Za-z0-9_-]+", " ".join(walk(yaml.safe_load(text)))))
    if path.suffix == ".rst":
        return set(re.findall(r"[A-Za-z0-9_-]+", text))
    words, previous = set(), tokenize.NEWLINE
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type == tokenize.STRING and previous in (tokenize.NEWLINE, tokenize.NL, tokenize.INDENT,
                                                        tokenize.DEDENT, tokenize.ENCODING):
            pass  # a docstring (a string that is a statement by itself)
        elif tok.type in (tokenize.NAME, tokenize.STRING, tokenize.FSTRING_MIDDLE if hasattr(tokenize, "FSTRING_MIDDLE") else -1):
            words |= set(re.findall(r"[A-Za-z0-9_-]+", tok.string))
        if tok.type not in (tokenize.COMMENT, tokenize.NL):
            previous = tok.type
    return words


def test_generic_files_name_no_paper():
    keys = paper_keys()
    assert {"lee2018", "zhang2017", "demo"} <= keys
    offenders = {}
    for path in generic_files():
        named = keys & code_words(path)
        if named:
            offenders[str(path.relative_to(REPO))] = sorted(named)
    assert not offenders, f"generic files name papers: {offenders}"


def test_the_check_can_fail(tmp_path):
    """The scan sees a paper key in code and ignores it in comments and docstrings."""
    probe = tmp_path / "probe.py"
    probe.write_text('"""A docstring citing lee2018."""\n# a comment on zhang2017\nx = 1\n')
    assert not {"lee2018", "zhang2017"} & code_words(probe)
    probe.write_text('TARGET = "results/tables/lee2018/claims.csv"\n')
    assert "lee2018" in code_words(probe)


@pytest.mark.parametrize("key", sorted(p.stem for p in (REPO / "config" / "papers").glob("*.yaml")))
def test_every_configured_paper_is_a_package_whose_outputs_have_captions(key):
    assert key in papers.names(), f"config/papers/{key}.yaml has no package src/dperm/papers/{key}/"
    plugin = papers.plugin(key)
    assert isinstance(getattr(plugin, "TITLE", None), str) and plugin.TITLE
    for product in papers.products(key):
        assert product.outputs, f"{key}/{product.name} declares no output"
        for output in product.outputs:
            assert papers.caption(key, product, output).is_file()
    assert not hasattr(plugin, "add_cli"), "a paper has no CLI glue: the one product verb builds its products"
    assert not (REPO / "workflow" / "rules" / "papers").exists(), "no rule file per paper: products.smk is generic"


def test_declarations_are_checked():
    from dperm.report.products import Made, Product, Reads, check, check_declarations

    make = lambda inputs: Made()  # noqa: E731
    with pytest.raises(ValueError, match="product names"):
        check_declarations("p", [Product("a", make, tables=("t",)), Product("a", make, tables=("u",))])
    with pytest.raises(ValueError, match="table names"):
        check_declarations("p", [Product("a", make, tables=("t",)), Product("b", make, tables=("t",))])
    with pytest.raises(ValueError, match="no product makes"):
        check_declarations("p", [Product("a", make, tables=("t",), reads=Reads(tables=("missing",)))])
    check_declarations("p", [Product("a", make, tables=("t",), figures=("t",))])  # a table and a figure may share
    with pytest.raises(ValueError, match="declares tables"):
        check(Product("a", make, tables=("t",)), Made())


NEW_PAPER_PACKAGE = '''"""A paper that exists only for a test: one product reading a summary."""

TITLE = "A new paper"


def _best(inputs):
    import matplotlib.pyplot as plt

    from dperm.report.products import Made, Table

    summary = inputs.summary("run")
    table = summary[["algorithm", "setting", "accuracy_mean", "accuracy_n"]]
    figure, ax = plt.subplots()
    ax.plot(range(len(table)), table["accuracy_mean"])
    return Made(tables={"best": Table(table, "Accuracy per cell.")}, figures={"best": figure})


def _products():
    from dperm.report.products import Product, Reads

    return (Product("best", make=_best, tables=("best",), figures=("best",), reads=Reads(summaries=("run",))),)


PRODUCTS = _products()
'''
NEW_PAPER = {
    "paper": "newpaper", "title": "a new paper",
    "models": {"lr": {"loss": "logistic", "l2": 0.01}},
    "algorithms": {"nonprivate": {}, "majority": {}, "dp-sgd": {"epochs": 1, "batch_size": 32}},
    "experiments": {"run": {"datasets": ["synthetic-logistic-n300-d3"], "models": ["lr"],
                            "algorithms": ["nonprivate", "majority", "dp-sgd"], "epsilons": [1.0], "delta": 1e-5,
                            "profile": "unit-clip", "protocol": {"kind": "kfold", "folds": 2, "draws": 1}}},
    "optimum": {"solve": False},
}


@pytest.mark.slow
def test_a_new_paper_needs_its_config_and_its_package_only(tmp_path, mirror):
    """Drop a package and a config into a copy of the workflow: its product gets a rule, its
    target builds the table and the figure, the report lists them; no rule file, no CLI code."""
    import subprocess
    import sys

    copy_workflow(tmp_path)
    package = tmp_path / "src" / "dperm" / "papers" / "newpaper"
    (package / "captions").mkdir(parents=True)
    (package / "__init__.py").write_text(NEW_PAPER_PACKAGE)
    (package / "captions" / "best.rst").write_text("Accuracy per cell of the new paper.\n")
    (tmp_path / "config" / "papers" / "newpaper.yaml").write_text(yaml.safe_dump(NEW_PAPER))
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    config.update(papers=["newpaper"], datasets=[], data={"download": "never", "mirror": None, "timeout": 60})
    (tmp_path / "test.yaml").write_text(yaml.safe_dump(config))
    run = subprocess.run([sys.executable, "-m", "snakemake", "--cores", "2", "newpaper", "--configfile", "test.yaml"],
                         cwd=tmp_path, env=snakemake_env(mirror), capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "newpaper_best" in run.stderr + run.stdout  # the generated rule ran
    table = (tmp_path / "results" / "tables" / "newpaper" / "best.md").read_text()
    assert table.startswith("Accuracy per cell.") and "dp-sgd" in table
    assert (tmp_path / "figures" / "newpaper" / "best.png").stat().st_size > 1000


def _private_imports(path: Path):
    """(line, text) of imports of a private name or module from another package of dperm (a
    package's private names serve it and its subpackages only)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    here = path.relative_to(SRC).parts[:-1]  # the importing module's package
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom):
            continue
        if node.level:
            target = list(here[: len(here) - node.level + 1]) + (node.module.split(".") if node.module else [])
        elif node.module and node.module.startswith("dperm"):
            target = node.module.split(".")[1:]
        else:
            continue
        for alias in node.names:
            names = [*target, alias.name]
            private = [i for i, part in enumerate(names) if part.startswith("_") and not part.startswith("__")]
            if not private:
                continue
            i = private[0]
            owner = tuple(names[:i] if i < len(names) - 1 else names[: i - 1])  # the package it belongs to
            if tuple(here[: len(owner)]) != owner:
                yield node.lineno, ast.unparse(node)


def test_no_package_imports_another_packages_private_names(tmp_path):
    probe = SRC / "algorithms" / "_probe_for_test.py"
    assert not list(_private_imports(SRC / "algorithms" / "dp_agd" / "engine.py"))  # its parent's helper: fine
    try:
        probe.write_text("from ..losses.glm import _hidden\n")
        assert list(_private_imports(probe)), "the check must see a private name of another package"
    finally:
        probe.unlink()
    found = {f"{p.relative_to(SRC)}:{line}": text for p in SRC.rglob("*.py") for line, text in _private_imports(p)}
    assert not found, f"private names imported across packages: {found}"
