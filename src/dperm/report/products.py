"""A paper's products — the tables and figures of its own, beyond the generic summaries and
declared figures — declared once, as data, and built by generic code.

A paper plugin lists its products in ``PRODUCTS`` (:class:`Product`): a name, what it reads
(:class:`Reads`: cell records, experiment summaries, other products' tables, prepared arrays and
their provenance, the dataset table), the function that makes it, the tables and figures that
function returns, and where the report shows them. Nothing else is written by hand:

* the workflow generates one rule per product (``workflow/rules/products.smk``), whose inputs are
  resolved from :class:`Reads` and whose outputs are ``results/tables/<paper>/<table>.csv`` and
  ``.md`` and ``figures/<paper>/<figure>.png`` and ``.pdf``, each in the report with its caption
  (``src/dperm/papers/<paper>/captions/<output>.rst``, else ``<product>.rst``);
* one CLI verb builds any product: ``python -m dperm product <paper> <product> ...``
  (:func:`build`), and writes its outputs atomically and in one way (:func:`write`), the quick
  run's warning included;
* a paper's target is the union of its products, computed from these declarations.

A product's ``make(inputs) -> Made`` reads through :class:`Inputs` and writes nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import pandas as pd

from .captions import QUICK_NOTE, with_quick_note


@dataclass(frozen=True)
class Reads:
    """What a product reads. ``cells`` and ``summaries`` name experiments (every cell of them, or
    their summaries), or are functions of the paper config (:class:`dperm.grid.Paper`) returning
    cells (:class:`dperm.grid.Cell`) or experiment names; ``tables`` names other products'
    tables of the same paper; ``prepared`` and ``provenance`` are functions returning
    (dataset, profile) pairs; ``datasets`` asks for the dataset table."""

    cells: tuple[str, ...] | Callable = ()
    summaries: tuple[str, ...] | Callable = ()
    tables: tuple[str, ...] = ()
    prepared: Callable | None = None
    provenance: Callable | None = None
    datasets: bool = False


@dataclass(frozen=True)
class Product:
    """One product of a paper (module docstring). ``spec(paper)`` returns the configuration
    values ``make`` reads (a rule parameter: the product is rebuilt exactly when one changes);
    ``when(paper)`` is false where the configuration does not ask for the product; ``target``
    names an extra target the product belongs to instead of the paper's own (long timing runs);
    ``section`` is its subcategory in the report."""

    name: str
    make: Callable[[Inputs], Made]
    tables: tuple[str, ...] = ()
    figures: tuple[str, ...] = ()
    reads: Reads = field(default_factory=Reads)
    spec: Callable | None = None
    section: str = "tables"
    target: str | None = None
    when: Callable | None = None
    captions: dict = field(default_factory=dict)  # output -> caption file stem, where not its own name

    @property
    def outputs(self) -> tuple[str, ...]:
        return self.tables + self.figures


@dataclass
class Table:
    """A table as a product returns it: the frame (its CSV), the note above its Markdown, the
    frame the Markdown shows when it differs (a narrower or formatted view) and the float format."""

    frame: pd.DataFrame
    note: str
    shown: pd.DataFrame | None = None
    floatfmt: str = ".5g"


@dataclass
class Made:
    """What ``make`` returns: tables and matplotlib figures by their declared names."""

    tables: dict[str, Table] = field(default_factory=dict)
    figures: dict = field(default_factory=dict)


class Inputs:
    """What a product reads, loaded on first use. ``files`` maps each role of :class:`Reads`
    (``cells``, ``summaries``, ``tables``, ``prepared``, ``provenance``, ``datasets``) to its files;
    a summary or a table is named by its file's stem, prepared arrays by ``<dataset>/<profile>``."""

    def __init__(self, paper: str, product: str, spec: dict, quick: bool, files: dict[str, list[str]]):
        self.paper, self.product, self.spec, self.quick = paper, product, spec, quick
        self.files = {role: list(paths) for role, paths in files.items()}

    def _named(self, role: str) -> dict[str, str]:
        return {Path(p).stem: p for p in self.files.get(role, [])}

    @cached_property
    def cells(self) -> pd.DataFrame:
        """The records of every cell the product reads, as one frame."""
        from .tables import read_records

        paths = self.files.get("cells", [])
        return read_records(paths) if paths else pd.DataFrame()

    def summary(self, experiment: str) -> pd.DataFrame:
        """An experiment's summary (:func:`dperm.report.tables.summarise`)."""
        return _read(self._named("summaries"), experiment, "summary")

    def summaries(self) -> dict[str, pd.DataFrame]:
        return {name: self.summary(name) for name in self._named("summaries")}

    def table(self, name: str) -> pd.DataFrame:
        """Another product's table of the same paper."""
        return _read(self._named("tables"), name, "table")

    def prepared(self, dataset: str, profile: str = "default") -> dict:
        from ..datasets.prepare import load_prepared

        key = f"{dataset}/{profile}"
        files = {f"{Path(p).parent.name}/{Path(p).stem}": p for p in self.files.get("prepared", [])}
        if key not in files:
            raise ValueError(f"product {self.paper}/{self.product} reads prepared arrays {key}, which it was not "
                             f"given; given: {sorted(files)}")
        return load_prepared(files[key])[0]

    def provenance(self) -> list[dict]:
        import json

        return [json.loads(Path(p).read_text()) for p in self.files.get("provenance", [])]

    def datasets(self) -> pd.DataFrame:
        paths = self.files.get("datasets", [])
        if len(paths) != 1:
            raise ValueError(f"product {self.paper}/{self.product} reads the dataset table; given {paths}")
        return pd.read_csv(paths[0], keep_default_na=False, na_values=[""])

    def title(self, text: str) -> str:
        """A figure title, marked as a quick run's where it is one."""
        return ("[quick run] " if self.quick else "") + text

    def caption(self, text: str) -> str:
        """A figure caption, with the quick run's warning where it is one."""
        return with_quick_note(text, self.quick)


def _read(files: dict[str, str], name: str, what: str) -> pd.DataFrame:
    if name not in files:
        raise ValueError(f"no {what} {name!r} among the inputs; given: {sorted(files)}")
    return pd.read_csv(files[name], keep_default_na=False, na_values=[""])


def check(product: Product, made: Made) -> None:
    """``made`` holds exactly the tables and figures ``product`` declares (no output is written
    otherwise, so a product cannot leave a declared file stale or write an undeclared one)."""
    for kind, declared, got in (("tables", product.tables, made.tables), ("figures", product.figures, made.figures)):
        if set(declared) != set(got):
            raise ValueError(f"product {product.name!r} declares {kind} {sorted(declared)} but made {sorted(got)}")


#: the files of each declared table and figure
TABLE_FILES, FIGURE_FILES = ("csv", "md", "html"), ("png", "pdf")


def output_paths(product: Product, outputs) -> dict[tuple[str, str], Path]:
    """(output name, extension) -> path, from the output files a rule hands over (each declared
    table's ``.csv``, ``.md`` and ``.html``, each figure's ``.png`` and ``.pdf``, exactly once)."""
    given: dict[tuple[str, str], Path] = {}
    for path in map(Path, outputs):
        key = (path.stem, path.suffix.lstrip("."))
        if key in given:
            raise ValueError(f"output {path} is given twice ({given[key]})")
        given[key] = path
    wanted = {(t, ext) for t in product.tables for ext in TABLE_FILES} | \
             {(f, ext) for f in product.figures for ext in FIGURE_FILES}
    if set(given) != wanted:
        raise ValueError(f"product {product.name!r} writes {sorted('.'.join(k) for k in wanted)}; given outputs "
                         f"{sorted(map(str, outputs))}")
    return given


def write(product: Product, made: Made, outputs, quick: bool) -> list[str]:
    """Write ``made`` atomically to ``outputs`` (:func:`output_paths`): each table as ``.csv``,
    ``.md`` and ``.html`` (its note above it, with the quick run's warning where it is one), each
    figure as ``.png`` and ``.pdf``. Returns the paths written."""
    from .figures import save_figure
    from .tables import write_table

    check(product, made)
    paths = output_paths(product, outputs)
    written = []
    for name, table in made.tables.items():
        files = [paths[(name, ext)] for ext in TABLE_FILES]
        write_table(table.frame, files[0], files[1], with_quick_note(table.note, quick), floatfmt=table.floatfmt,
                    shown=table.shown, html_path=files[2])
        written += list(map(str, files))
    for name, figure in made.figures.items():
        png, pdf = paths[(name, "png")], paths[(name, "pdf")]
        save_figure(figure, png, pdf)
        written += [str(png), str(pdf)]
    return written


def resolve(products: Iterable[Product], name: str) -> Product:
    by_name = {p.name: p for p in products}
    if name not in by_name:
        raise KeyError(f"no product {name!r}; the paper declares {sorted(by_name)}")
    return by_name[name]


def check_declarations(paper: str, products: Iterable[Product]) -> None:
    """Every product name, table name and figure name of a paper is unique (a table and a figure
    may share a name: their files differ), and every table a product reads is made by another of
    its products."""
    products = list(products)
    names = [p.name for p in products]
    tables = [o for p in products for o in p.tables]
    figures = [o for p in products for o in p.figures]
    for what, values in (("product", names), ("table", tables), ("figure", figures)):
        repeated = sorted({v for v in values if values.count(v) > 1})
        if repeated:
            raise ValueError(f"paper {paper!r} declares {what} names {repeated} more than once")
    made = {t for p in products for t in p.tables}
    for p in products:
        missing = sorted(set(p.reads.tables) - made)
        if missing:
            raise ValueError(f"paper {paper!r}: product {p.name!r} reads tables {missing} that no product makes")


__all__ = ["QUICK_NOTE", "Inputs", "Made", "Product", "Reads", "Table", "check", "check_declarations", "resolve",
           "write"]
