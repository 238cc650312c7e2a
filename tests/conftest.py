"""Shared test fixtures. Tests are offline: real data comes from the shared mirror
(``../shared/data`` beside the checkout, or ``$DPERM_DATA_MIRROR``)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def shared_mirror() -> Path | None:
    for candidate in (os.environ.get("DPERM_DATA_MIRROR"), REPO.parent / "shared" / "data"):
        if candidate and Path(candidate, "MANIFEST.md").is_file():
            return Path(candidate).resolve()
    return None


@pytest.fixture(scope="session")
def mirror() -> Path:
    path = shared_mirror()
    if path is None:
        pytest.skip("the shared data mirror (../shared/data) is not present")
    return path


@pytest.fixture(autouse=True)
def _no_mirror_env(monkeypatch):
    """A developer's DPERM_DATA_MIRROR must not leak into tests that decide the mirror."""
    monkeypatch.delenv("DPERM_DATA_MIRROR", raising=False)


@pytest.fixture
def no_network(monkeypatch):
    """Fail loudly if code under test opens a URL: downloads are faked at the boundary."""
    import urllib.request

    def refuse(*args, **kwargs):
        raise AssertionError(f"test tried to use the network: {args[:1]}")

    monkeypatch.setattr(urllib.request, "urlopen", refuse)
