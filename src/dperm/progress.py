"""Progress a person can watch: a long job says how many of its fits are done out of how many it
plans, and how long the rest should take, on the terminal Snakemake prints its own progress to.

A job run with ``python -m dperm --log FILE ...`` writes everything to ``FILE`` and only its
progress lines (logger ``dperm.progress``), warnings and errors to stderr, which Snakemake shows
beside its ``n of m steps done`` lines. A line is printed at most every ``every`` seconds (and
for the last fit), so two cores' jobs interleave a few lines a minute, not a flood.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

PROGRESS = "dperm.progress"


def duration(seconds: float) -> str:
    """``75`` -> ``1m15s``; ``4000`` -> ``1h06m``; under a minute in seconds."""
    seconds = max(0.0, float(seconds))
    if seconds < 60:
        return f"{seconds:.0f}s"
    minutes, secs = divmod(int(round(seconds)), 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


class Progress:
    """``done`` of ``total`` units (fits) of the job ``what``, reported through ``emit`` (default:
    the ``dperm.progress`` logger) at most every ``every`` seconds, with the time elapsed and an
    estimate of the time left (the mean time per unit so far times the units left)."""

    def __init__(self, what: str, total: int, unit: str = "fits", every: float = 20.0,
                 emit: Callable[[str], None] | None = None, clock: Callable[[], float] = time.monotonic):
        self.what, self.total, self.unit, self.every = what, max(int(total), 0), unit, every
        self.emit = emit or logging.getLogger(PROGRESS).info
        self.clock = clock
        self.start = self.last = clock()
        self.done = 0

    def line(self) -> str:
        elapsed = self.clock() - self.start
        text = f"{self.what}: {self.done}/{self.total} {self.unit}"
        if self.total:
            text += f" ({100 * self.done / self.total:.0f}%)"
        text += f", {duration(elapsed)} elapsed"
        if 0 < self.done < self.total:
            text += f", ~{duration(elapsed / self.done * (self.total - self.done))} left"
        return text

    def advance(self, units: int = 1) -> None:
        self.done += units
        now = self.clock()
        if self.done >= self.total or now - self.last >= self.every:
            self.last = now
            self.emit(self.line())


class ProgressToStderr(logging.Filter):
    """With ``--log FILE``: what reaches stderr (the terminal): progress lines, warnings, errors."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.name == PROGRESS or record.levelno >= logging.WARNING
