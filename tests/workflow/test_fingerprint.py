"""Rules rerun when the code they run changes, and only then."""

from __future__ import annotations

import shutil

import dperm.fingerprint as fp


def test_editing_a_module_changes_only_the_fingerprints_that_include_it(tmp_path, monkeypatch):
    copy = tmp_path / "dperm"
    shutil.copytree(fp.PACKAGE, copy)
    monkeypatch.setattr(fp, "PACKAGE", copy)
    fp.source_fingerprint.cache_clear()
    before = fp.source_fingerprint("report"), fp.source_fingerprint("datasets", "files")
    (copy / "datasets" / "encode.py").write_text((copy / "datasets" / "encode.py").read_text() + "\n# edit\n")
    fp.source_fingerprint.cache_clear()
    after = fp.source_fingerprint("report"), fp.source_fingerprint("datasets", "files")
    assert after[0] == before[0] and after[1] != before[1]
    fp.source_fingerprint.cache_clear()


def test_algorithm_fingerprints_follow_their_imports():
    modules = lambda name: {m.rsplit(".", 1)[1] for m in fp._algorithm_modules(name)}  # noqa: E731
    assert {"rrpsgd", "bassily", "perturbation"} <= modules("dperm.algorithms.rrpsgd")
    assert "dp_agd" not in modules("dperm.algorithms.outpert")
    assert fp.algorithm_fingerprint("outpert") != fp.algorithm_fingerprint("nonprivate")
    assert fp.algorithm_fingerprint("dp-agd") == fp.algorithm_fingerprint("dp-agd-reference")
