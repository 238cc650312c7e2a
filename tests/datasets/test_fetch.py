"""fetch_raw: mirror, downloads (faked at the network boundary), verification, clear errors."""

from __future__ import annotations

import gzip
import shutil

import pytest

from dperm.datasets import fetch as fetch_mod
from dperm.datasets import registry
from dperm.datasets.fetch import MANIFEST, FetchError, fetch, resolve_mirror
from dperm.datasets.prepare import availability, load_canonical
from dperm.files import DataFileError, sha256_bytes


def _copy_dataset(mirror, tmp_path, key):
    """A private mirror holding only ``key``'s files (so tests may damage them)."""
    root = tmp_path / "mirror"
    for raw in registry.get(key).files:
        for suffix in ("", ".gz"):
            src = mirror / (raw.mirror_path + suffix)
            if src.exists():
                dst = root / (raw.mirror_path + suffix)
                dst.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy(src, dst)
    return root


def _nothing_written(dest):
    return not dest.exists() or not any(dest.iterdir())


def test_mirror_fetch_verifies_and_records(mirror, tmp_path):
    record = registry.get("wine")
    manifest = fetch(record, tmp_path / "raw", mirror)
    assert manifest["source"] == "mirror"
    assert [f["verified"] for f in manifest["files"]] == ["sha256", "sha256"]
    assert (tmp_path / "raw" / MANIFEST).is_file()
    for entry in manifest["files"]:
        stored = gzip.decompress((tmp_path / "raw" / entry["stored"]).read_bytes())
        assert sha256_bytes(stored) == next(f.sha256 for f in record.files if f.name == entry["name"])


def test_checksum_mismatch_names_file_and_hashes_and_writes_nothing(mirror, tmp_path):
    root = _copy_dataset(mirror, tmp_path, "wine")
    path = root / "wine" / "winequality-red.csv"
    data = bytearray(path.read_bytes())
    data[200] = ord("9") if data[200] != ord("9") else ord("8")
    path.write_bytes(bytes(data))
    dest = tmp_path / "raw"
    with pytest.raises(FetchError) as err:
        fetch(registry.get("wine"), dest, root)
    message = str(err.value)
    assert "checksum mismatch for winequality-red.csv" in message
    assert registry.get("wine").files[0].sha256 in message
    assert sha256_bytes(bytes(data)) in message
    assert _nothing_written(dest)


def test_truncated_gzip_is_reported_and_nothing_written(mirror, tmp_path):
    root = _copy_dataset(mirror, tmp_path, "bank-dpagd")
    path = root / "dpagd" / "BANK.dat.gz"
    path.write_bytes(path.read_bytes()[: 100_000])
    dest = tmp_path / "raw"
    with pytest.raises(FetchError, match="corrupt or truncated gzip.*BANK.dat.gz"):
        fetch(registry.get("bank-dpagd"), dest, root)
    assert _nothing_written(dest)


def test_corrupt_gzip_body_is_reported(mirror, tmp_path):
    root = _copy_dataset(mirror, tmp_path, "bank-dpagd")
    path = root / "dpagd" / "BANK.dat.gz"
    data = bytearray(path.read_bytes())
    data[5000:5100] = b"\x00" * 100
    path.write_bytes(bytes(data))
    with pytest.raises(FetchError, match="BANK.dat"):
        fetch(registry.get("bank-dpagd"), tmp_path / "raw", root)


def test_mirror_path_that_does_not_exist(tmp_path, monkeypatch):
    with pytest.raises(FetchError, match="no-such-dir.*from data.mirror.*does not exist"):
        resolve_mirror(str(tmp_path / "no-such-dir"))
    monkeypatch.setenv("DPERM_DATA_MIRROR", str(tmp_path / "nope"))
    with pytest.raises(FetchError, match=r"nope.*from \$DPERM_DATA_MIRROR"):
        resolve_mirror(None)


def test_environment_variable_wins_over_config(mirror, tmp_path, monkeypatch):
    monkeypatch.setenv("DPERM_DATA_MIRROR", str(mirror))
    assert resolve_mirror(str(tmp_path)) == mirror


def test_unavailable_dataset_says_what_was_tried_and_how_to_fix(mirror, tmp_path):
    record = registry.get("ipums-us")
    with pytest.raises(FetchError) as err:
        fetch(record, tmp_path / "raw", mirror, mode="auto")
    message = str(err.value)
    assert "'ipums-us'" in message
    assert "dpagd/IPUMS-US.dat (or .gz) not found" in message
    assert "download: not tried" in message
    assert "DPERM_DATA_MIRROR" in message or str(mirror) in message
    assert "data.download: always" in message
    assert _nothing_written(tmp_path / "raw")
    ok, why = availability(record, tmp_path / "raw", mirror, "auto")
    assert not ok and "unavailable offline" in why


def _serve_from(mirror, broken=()):
    """A fake HTTP transport that serves the registry's URLs from the mirror's files."""
    by_url = {url: raw for rec in registry.DATASETS.values() for raw in rec.files for url in raw.urls}

    def http_get(url, timeout):
        if url in broken:
            raise OSError(f"HTTP Error 503 for {url}")
        raw = by_url[url]
        path = mirror / raw.mirror_path
        data = (path if path.exists() else path.with_name(path.name + ".gz")).read_bytes()
        return gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data

    return http_get


def test_https_download_verifies_and_falls_back_to_next_url(mirror, tmp_path, monkeypatch, no_network):
    record = registry.get("kddcup99")
    first = record.files[0].urls[0]
    monkeypatch.setattr(fetch_mod, "http_get", _serve_from(mirror, broken={first}))
    manifest = fetch(record, tmp_path / "raw", mirror=None, mode="auto")
    assert manifest["source"] == "https"
    assert manifest["files"][0]["origin"] == record.files[0].urls[1]
    assert any("503" in a for a in manifest["attempts_failed"])
    table, _ = load_canonical(record, tmp_path / "raw" / MANIFEST, parts=["train"])
    assert len(table) == 494_021


def test_https_download_with_wrong_content_is_not_used(mirror, tmp_path, monkeypatch, no_network):
    record = registry.get("wine")
    monkeypatch.setattr(fetch_mod, "http_get", lambda url, timeout: b"not the wine data\n")
    with pytest.raises(FetchError, match="checksum mismatch"):
        fetch(record, tmp_path / "raw", mirror=None, mode="always")
    assert _nothing_written(tmp_path / "raw")


def test_real_download_code_handles_zip_members_and_gzip(tmp_path, monkeypatch):
    """http_get itself, with urlopen faked: nested zip members and gzip bodies."""
    import io
    import urllib.request
    import zipfile

    inner = io.BytesIO()
    with zipfile.ZipFile(inner, "w") as z:
        z.writestr("data/hour.csv", gzip.compress(b"a,b\n1,2\n"))
    outer = io.BytesIO()
    with zipfile.ZipFile(outer, "w") as z:
        z.writestr("inner.zip", inner.getvalue())

    class Response(io.BytesIO):
        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    seen = []
    monkeypatch.setattr(urllib.request, "urlopen",
                        lambda req, timeout: seen.append((req.full_url, timeout)) or Response(outer.getvalue()))
    data = fetch_mod.http_get("https://example.org/x.zip#inner.zip#data/hour.csv", timeout=5)
    assert data == b"a,b\n1,2\n"
    assert seen == [("https://example.org/x.zip", 5)]


def test_wrong_column_count_names_the_line(mirror, tmp_path):
    root = _copy_dataset(mirror, tmp_path, "wine")
    path = root / "wine" / "winequality-white.csv"
    lines = path.read_bytes().splitlines(keepends=True)
    lines[10] = lines[10].rstrip(b"\n") + b";1.0\n"
    record = registry.get("wine")
    from dperm.datasets.canonical import check_field_counts

    with pytest.raises(DataFileError, match="line 11 has 13 fields, expected 12"):
        check_field_counts(b"".join(lines), record, record.files[1])


def test_unverifiable_file_is_checked_by_shape(tmp_path):
    record = registry.get("ipums-us")  # no sha256 known: git blob id verifies it
    good = b"1 2 3\n"
    with pytest.raises(DataFileError, match="expected git blob"):
        fetch_mod.verify(record, record.files[0], good, "test")
    full = registry.get("kddcup99-full")  # neither hash known: shape only
    with pytest.raises(DataFileError, match="fields"):
        fetch_mod.verify(full, full.files[0], b"1,2\n", "test")


def test_stored_file_tampered_after_fetch_is_refused(mirror, tmp_path):
    record = registry.get("wine")
    fetch(record, tmp_path / "raw", mirror)
    stored = tmp_path / "raw" / "winequality-red.csv.gz"
    stored.write_bytes(gzip.compress(b"changed\n"))
    with pytest.raises(DataFileError, match="changed since it was fetched"):
        load_canonical(record, tmp_path / "raw" / MANIFEST)
