"""Paper plugins: everything specific to one paper, one package each (``dperm.papers.<paper>``).

A paper is two things: its grid ``config/papers/<paper>.yaml`` and this package. Nothing outside
those names a paper: the workflow's rules are generic (``workflow/rules/products.smk`` makes one
rule per product a package declares), and so is the CLI (``python -m dperm product``).

A plugin package may define, all optional:

* ``TITLE`` — the paper, as tables and the report name it;
* ``DATASET_SHAPES`` — ``{dataset key: (n, dim)}`` as the paper reports them (the dataset table
  shows them beside ours; ``None`` where the paper gives no number);
* ``PRODUCTS`` — its own tables and figures (:class:`dperm.report.products.Product`), each
  declared once: what it reads, the function that makes it, what it returns, where the report
  shows it; captions in ``captions/<output>.rst`` (else ``captions/<product>.rst``);
* ``ANALYSES_SCHEMA`` — a JSON schema for its config's ``analyses`` section (the settings of its
  products), checked when the config is loaded (:func:`load`);
* ``SCORECARD_TABLES`` and ``scorecard(tables)`` — what the scorecard reads of its tables and
  how it turns them into published-vs-ours rows and claims (:mod:`dperm.report.scorecard`).

Its published numbers live in the package as data files (``importlib.resources``).
"""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path
from types import ModuleType


def names() -> list[str]:
    """Every paper with a plugin package, sorted."""
    return sorted(m.name for m in pkgutil.iter_modules(__path__) if m.ispkg and not m.name.startswith("_"))


def plugin(name: str) -> ModuleType:
    """The plugin package of paper ``name``; an unknown name is a ``KeyError`` listing the known."""
    if name not in names():
        raise KeyError(f"no paper plugin {name!r} (src/dperm/papers/{name}/); known papers: {', '.join(names())}")
    return importlib.import_module(f"{__name__}.{name}")


def products(name: str) -> tuple:
    """The products paper ``name`` declares (checked: unique names, tables read are made)."""
    from ..report.products import check_declarations

    declared = tuple(getattr(plugin(name), "PRODUCTS", ()))
    check_declarations(name, declared)
    return declared


def caption(name: str, product, output: str) -> Path:
    """The report caption of one output of a product: ``captions/<stem>.rst`` (the stem the product
    names for it in ``captions``, else the output's own name) where the package has one, else
    ``captions/<product>.rst``."""
    folder = Path(plugin(name).__file__).parent / "captions"
    for stem in (product.captions.get(output, output), product.name):
        path = folder / f"{stem}.rst"
        if path.is_file():
            return path
    raise FileNotFoundError(f"paper {name!r}: no caption for output {output!r} of product {product.name!r} "
                            f"(looked for {folder}/{output}.rst and {product.name}.rst)")


def load(name: str, path, quick: bool = False, overlay=None):
    """Paper ``name``'s configuration (:func:`dperm.grid.load_paper`), its ``analyses`` section
    checked against the plugin's ``ANALYSES_SCHEMA``, and the file checked to declare that paper."""
    from ..config import ConfigError, validate_against
    from ..grid import load_paper

    paper = load_paper(path, quick=quick, overlay=overlay)
    if paper.key != name:
        raise ConfigError(f"{path}: declares paper {paper.key!r}; the file must be named after it")
    schema = getattr(plugin(name), "ANALYSES_SCHEMA", None)
    if schema is not None:
        validate_against(paper.analyses, schema, f"{paper.source}: analyses")
    elif paper.analyses:
        raise ConfigError(f"{paper.source}: analyses: paper {name!r} reads no analyses section (its plugin "
                          f"declares no ANALYSES_SCHEMA); remove it")
    return paper


def dataset_shapes() -> dict[str, dict[str, tuple]]:
    """paper -> {dataset: (n, dim)} for every plugin that reports dataset sizes."""
    out = {}
    for name in names():
        shapes = getattr(plugin(name), "DATASET_SHAPES", None)
        if shapes:
            out[name] = dict(shapes)
    return out


def published(name: str, filename: str):
    """A published-numbers file shipped with paper ``name``'s package, as a path-like resource."""
    from importlib import resources

    return resources.files(f"{__name__}.{name}").joinpath("published", filename)
