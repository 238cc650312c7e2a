"""Every link into the project's documentation resolves: a Markdown link to another file names a
file that exists, and an anchor (``file.md#anchor``, in the docs or in a code comment, config or
docstring that cites them) is an ``<a id>`` of that file or one of its headings."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import REPO

MD_LINK = re.compile(r"\]\(([^)\s]+)\)")
CITED = re.compile(r"\b((?:docs/)?(?:papers/)?[A-Za-z0-9_.-]+\.md)#([A-Za-z0-9_-]+)")
DOCS = sorted([REPO / "README.md", REPO / "config" / "README.md", *(REPO / "docs").rglob("*.md")])
SOURCES = sorted([*(REPO / "src").rglob("*.py"), *(REPO / "config").rglob("*.yaml"),
                  *(REPO / "workflow").rglob("*.smk"), *(REPO / "workflow").rglob("*.rst"), *DOCS])


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    text = path.read_text(encoding="utf-8")
    ids = set(re.findall(r'<a id="([^"]+)"></a>', text))
    return ids | {slug(h) for h in re.findall(r"^#+\s+(.+)$", text, flags=re.M)}


def _target(source: Path, ref: str) -> Path | None:
    """The file a cited ``x.md`` means: relative to the citing file, to docs/, or to the repo."""
    for base in (source.parent, REPO / "docs", REPO):
        if (base / ref).is_file():
            return (base / ref).resolve()
    return None


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(REPO)))
def test_markdown_links_name_files_and_anchors_that_exist(doc):
    bad = []
    for link in MD_LINK.findall(doc.read_text(encoding="utf-8")):
        if "://" in link or link.startswith("mailto:"):
            continue
        path, _, anchor = link.partition("#")
        target = doc if not path else (doc.parent / path)
        if not target.exists():
            bad.append(f"{link}: no file {path}")
        elif anchor and target.suffix == ".md" and anchor not in anchors(target):
            bad.append(f"{link}: no anchor #{anchor} in {target.relative_to(REPO)}")
    assert not bad, f"{doc.relative_to(REPO)}: " + "; ".join(bad)


def test_cited_doc_anchors_exist_in_code_config_and_docs():
    bad = []
    for source in SOURCES:
        for ref, anchor in CITED.findall(source.read_text(encoding="utf-8")):
            target = _target(source, ref)
            if target is None or "docs" not in target.parts and target.name != "README.md":
                continue  # not a project doc (e.g. a seed text or a file of another project)
            if anchor not in anchors(target):
                bad.append(f"{source.relative_to(REPO)}: {ref}#{anchor}")
    assert not bad, "anchors cited but not defined: " + "; ".join(sorted(set(bad)))
