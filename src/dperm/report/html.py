"""A table as a small standalone HTML page, for the Snakemake report: the report shows an HTML
output inline, where a CSV is only a download. The page holds the table's note (its caveats and
the quick run's warning) above the table as the Markdown version shows it, and names the CSV
that holds every column."""

from __future__ import annotations

import html
import re

import pandas as pd

STYLE = """<style>
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;font-size:14px;margin:8px;
color:#222}
p{max-width:60em;line-height:1.4}
table{border-collapse:collapse;margin:0.5em 0}
th,td{border:1px solid #ccc;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f2f2f2;position:sticky;top:0}
td.num{text-align:right;font-variant-numeric:tabular-nums}
tr:nth-child(even) td{background:#fafafa}
p.quick{background:#fff3cd;border:1px solid #e0c36a;padding:4px 8px}
code{background:#f4f4f4;padding:0 3px}
</style>"""


def _inline(text: str) -> str:
    """Escaped text with Markdown's `code` and **bold** kept as such."""
    out = html.escape(text)
    out = re.sub(r"`([^`]+)`", r"<code>\1</code>", out)
    return re.sub(r"\*\*([^*]+)\*\*", r"<strong>\1</strong>", out)


def _paragraphs(note: str) -> list[str]:
    out = []
    for block in (b.strip() for b in note.strip().split("\n\n")):
        if not block:
            continue
        if block.startswith("#"):
            level = min(len(block) - len(block.lstrip("#")) + 1, 4)
            out.append(f"<h{level}>{_inline(block.lstrip('#').strip())}</h{level}>")
        else:
            css = ' class="quick"' if "quick run" in block.lower() else ""
            out.append(f"<p{css}>{_inline(' '.join(block.split()))}</p>")
    return out


def _format(value, floatfmt: str) -> tuple[str, bool]:
    """(text, is a number) of one cell; empty for a missing value."""
    if value is None or (isinstance(value, float) and pd.isna(value)) or value is pd.NA:
        return "", False
    if isinstance(value, bool):
        return str(value), False
    if isinstance(value, float):
        return format(value, floatfmt), True
    if isinstance(value, int):
        return str(value), True
    return str(value), False


def table_page(shown: pd.DataFrame, note: str = "", floatfmt: str = ".5g", title: str = "",
               csv_name: str | None = None) -> str:
    """``shown`` (the frame the Markdown shows) as an HTML page with ``note`` above it."""
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             f"<title>{html.escape(title or (csv_name or 'table'))}</title>", STYLE, "</head><body>"]
    if title:
        parts.append(f"<h2>{html.escape(title)}</h2>")
    parts += _paragraphs(note)
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in shown.columns)
    rows = []
    for record in shown.itertuples(index=False):
        cells = []
        for value in record:
            text, number = _format(value, floatfmt)
            cells.append(f'<td class="num">{html.escape(text)}</td>' if number else f"<td>{_inline(text)}</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    parts.append(f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>")
    if csv_name:
        parts.append(f"<p>Every column, unformatted: <code>{html.escape(csv_name)}</code>.</p>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"
