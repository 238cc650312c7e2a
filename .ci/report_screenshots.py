"""Open a Snakemake report in headless Chromium and check it as a reader would see it.

    python .ci/report_screenshots.py results/report.html OUT_DIR [--quick] [--scorecard]

Takes three screenshots into OUT_DIR (``first-page.png``, ``table.png``, ``figure.png``) and
fails, naming what is wrong, unless: the first page says it is a quick run exactly when
``--quick`` is given; it shows the scorecard (``--scorecard``) or says that the run built none,
never both; a table result opens as a rendered table with rows (not a download) and a figure
result as an image the browser decoded. Needs ``playwright`` (pip) and a Chromium (Debian's
``chromium``; ``$CHROMIUM`` to point elsewhere)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path


def _show(page, path: str) -> None:
    """Open one result of the report in its main panel (the eye icon beside its path)."""
    page.evaluate(f"app.showResultInfo({path!r})")
    page.wait_for_timeout(500)
    page.locator(f"text={path}").last.locator("xpath=following-sibling::a").first.click()
    page.wait_for_timeout(1500)


def _frame_with(page, needle: str):
    for frame in page.frames:
        try:
            if frame.locator(needle).count():
                return frame
        except Exception:  # a frame still loading or detached
            continue
    return None


def main(argv=None) -> int:
    from playwright.sync_api import sync_playwright

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("report")
    parser.add_argument("out")
    parser.add_argument("--quick", action="store_true", help="the report is a quick run's")
    parser.add_argument("--scorecard", action="store_true", help="the run built the scorecard")
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    problems = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=os.environ.get("CHROMIUM", "/usr/bin/chromium"),
                                     args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(Path(args.report).resolve().as_uri())
        page.wait_for_timeout(2000)
        page.screenshot(path=str(out / "first-page.png"))
        text = page.inner_text("body")
        if ("This is a quick run" in text) != args.quick:
            problems.append(f"the first page {'does not say' if args.quick else 'says'} it is a quick run")
        promised, none = "The scorecard below" in text, "holds no scorecard" in text
        shown = "Reproduction scorecard" in text
        if args.scorecard and not (promised and shown):
            problems.append("the run built a scorecard but the first page does not show it")
        if not args.scorecard and (promised or shown or not none):
            problems.append("no scorecard was built but the first page promises or shows one")
        results = page.evaluate("Object.keys(results)")
        tables = [r for r in results if r.endswith(".html") and "scorecard" not in r]
        figures = [r for r in results if r.endswith(".png")]
        if not tables or not figures:
            problems.append(f"the report holds {len(tables)} table(s) and {len(figures)} figure(s)")
        if tables:
            _show(page, tables[0])
            page.screenshot(path=str(out / "table.png"))
            frame = _frame_with(page, "table tbody tr")
            rows = frame.locator("table tbody tr").count() if frame else 0
            if rows == 0:
                problems.append(f"{tables[0]} does not open as a table with rows")
            print(f"table {tables[0]}: {rows} rows rendered")
        if figures:
            _show(page, figures[0])
            page.screenshot(path=str(out / "figure.png"))
            widths = page.evaluate("Array.from(document.images).map(i => i.naturalWidth)")
            if not any(w > 300 for w in widths):
                problems.append(f"{figures[0]} does not open as a decoded image (image widths {widths})")
            print(f"figure {figures[0]}: image widths {sorted(widths)[-3:]}")
        browser.close()
    for problem in problems:
        print(f"report check: {problem}", file=sys.stderr)
    print(f"screenshots in {out}: first-page.png, table.png, figure.png")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
