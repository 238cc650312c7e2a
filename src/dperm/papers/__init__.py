"""Paper plugins: everything specific to one paper, one package each (``dperm.papers.<paper>``).

A paper is three files' worth of work: its grid ``config/papers/<paper>.yaml``, this package and
its rules ``workflow/rules/papers/<paper>.smk`` (which defines a rule named ``<paper>``, the
paper's target: the default target gathers those of the papers ``config.yaml`` lists). Nothing
outside those three names a paper.

A plugin package may define, all optional:

* ``TITLE`` — the paper, as tables and the report name it;
* ``DATASET_SHAPES`` — ``{dataset key: (n, dim)}`` as the paper reports them (the dataset table
  shows them beside ours; ``None`` where the paper gives no number);
* ``add_cli(subparsers)`` — its own ``python -m dperm <paper> <verb>`` commands, which its rules
  run (tables, claims checks and figures that are not generic).

Its published numbers live in the package as data files (``importlib.resources``).
"""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType


def names() -> list[str]:
    """Every paper with a plugin package, sorted."""
    return sorted(m.name for m in pkgutil.iter_modules(__path__) if m.ispkg and not m.name.startswith("_"))


def plugin(name: str) -> ModuleType:
    """The plugin package of paper ``name``; an unknown name is a ``KeyError`` listing the known."""
    if name not in names():
        raise KeyError(f"no paper plugin {name!r} (src/dperm/papers/{name}/); known papers: {', '.join(names())}")
    return importlib.import_module(f"{__name__}.{name}")


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
