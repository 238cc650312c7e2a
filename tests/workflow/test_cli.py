"""The command line turns user errors into one message and exit code 2, and writes nothing."""

from __future__ import annotations

import json

import numpy as np
import pytest

from dperm.cli import main
from dperm.datasets.prepare import load_prepared


def _run(capsys, *argv):
    code = main(list(argv))
    return code, capsys.readouterr().err


def test_fetch_and_prepare_end_to_end(mirror, tmp_path, capsys):
    manifest = tmp_path / "raw" / "wine" / "fetch.json"
    assert _run(capsys, "fetch", "wine", "--out", str(manifest), "--mirror", str(mirror))[0] == 0
    out = tmp_path / "prepared" / "wine" / "unit-ball.npz"
    options = json.dumps({"row_norm": "unit", "row_norm_radius": 0.5 ** 0.5, "bias": 0.5 ** 0.5})
    code, _ = _run(capsys, "prepare", "wine", "--fetched", str(manifest), "--profile", "unit-ball",
                   "--options", options, "--out", str(out))
    assert code == 0
    arrays, prov = load_prepared(out)
    assert prov["profile_name"] == "unit-ball" and prov["n"] == 6_497
    assert prov["source"]["kind"] == "mirror" and len(prov["source"]["files"]) == 2
    np.testing.assert_allclose(np.linalg.norm(arrays["X"], axis=1), 1.0)


@pytest.mark.parametrize("argv, message", [
    (["fetch", "wines", "--out", "x/fetch.json"], "unknown dataset 'wines'; known datasets"),
    (["fetch", "wine", "--out", "x/data.json"], "--out must name a file called fetch.json"),
    (["fetch", "wine", "--out", "x/fetch.json", "--mirror", "/no/such/mirror"], "'/no/such/mirror'"),
])
def test_user_errors_exit_2_with_one_message(tmp_path, capsys, monkeypatch, argv, message):
    monkeypatch.chdir(tmp_path)
    code, err = _run(capsys, *argv)
    assert code == 2
    assert message in err
    assert "Traceback" not in err
    assert not (tmp_path / "x").exists()


def test_missing_files_bad_specs_and_unwritable_outputs_are_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "plain").write_text("a file, not a directory")
    spec = json.dumps({"paper": "demo"})
    cases = [
        (["summarise", "--csv", "s.csv", "--md", "s.md", "no-such.csv"], "no-such.csv: No such file or directory"),
        (["run-job", "--spec", spec, "--data", "missing.npz", "--out", "r.csv"], "missing.npz: No such file"),
        (["dataset-table", "no-such.json", "--csv", "plain/d.csv", "--md", "plain/d.md"], "no-such.json"),
    ]
    for argv, message in cases:
        code, err = _run(capsys, *argv)
        assert code == 2 and message in err and "Traceback" not in err, (argv, err)
        assert len(err.strip().splitlines()) == 1, err


def test_a_bare_missing_key_is_named_as_one(tmp_path, capsys, mirror):
    manifest = tmp_path / "raw" / "wine" / "fetch.json"
    main(["fetch", "wine", "--out", str(manifest), "--mirror", str(mirror)])
    data = tmp_path / "wine.npz"
    main(["prepare", "wine", "--fetched", str(manifest), "--out", str(data)])
    code, err = _run(capsys, "run-job", "--spec", json.dumps({"paper": "demo"}), "--data", str(data),
                     "--out", str(tmp_path / "r.csv"))
    assert code == 2 and "missing key '" in err and "in its input" in err, err
    assert not (tmp_path / "r.csv").exists()


def test_summarise_refuses_a_records_file_given_twice(tmp_path, capsys):
    records = tmp_path / "r.csv"
    records.write_text("a\n1\n")
    code, err = _run(capsys, "summarise", "--csv", str(tmp_path / "s.csv"), "--md", str(tmp_path / "s.md"),
                     str(records), str(tmp_path / "." / "r.csv"))
    assert code == 2 and "given more than once" in err and "counted twice" in err
    assert not (tmp_path / "s.csv").exists()


def test_fetch_mirror_option_wins_over_the_environment(mirror, tmp_path, capsys, monkeypatch, caplog):
    monkeypatch.setenv("DPERM_DATA_MIRROR", str(tmp_path / "elsewhere"))  # does not exist: would fail
    manifest = tmp_path / "raw" / "wine" / "fetch.json"
    code, err = _run(capsys, "fetch", "wine", "--out", str(manifest), "--mirror", str(mirror))
    assert code == 0, err
    assert json.loads(manifest.read_text())["source"] == "mirror"
    assert "is used, not $DPERM_DATA_MIRROR" in caplog.text + err


def test_prepare_with_bad_option_writes_nothing(mirror, tmp_path, capsys):
    manifest = tmp_path / "raw" / "wine" / "fetch.json"
    main(["fetch", "wine", "--out", str(manifest), "--mirror", str(mirror)])
    out = tmp_path / "prepared" / "wine" / "default.npz"
    code, err = _run(capsys, "prepare", "wine", "--fetched", str(manifest), "--options",
                     '{"scale": "zscore"}', "--out", str(out))
    assert code == 2 and "scale='zscore'; allowed: ['minmax', 'public', 'none']" in err
    assert not out.parent.exists() or not any(out.parent.iterdir())


def test_no_command_imports_a_paper_package_it_does_not_build():
    """Every pipeline job is a process: the parser knows no paper (a paper has no commands of its
    own), so only the product verb imports a paper's package, and only the paper it builds."""
    import subprocess
    import sys

    probe = ("import sys; from dperm.cli import main, build_parser; build_parser(); "
             "code = main(sys.argv[1:]); "
             "print(sorted(m for m in sys.modules if m.startswith('dperm.papers.')))")
    from conftest import REPO

    def modules(*argv):
        out = subprocess.run([sys.executable, "-c", probe, *argv], capture_output=True, text=True,
                             cwd=REPO, env={"PYTHONPATH": str(REPO / "src"), "PATH": "/usr/bin:/bin"})
        return out.stdout.strip().splitlines()[-1]

    assert modules("--threads", "1", "info") == "[]"
    from dperm.cli import build_parser

    verbs = set(build_parser()._subparsers._group_actions[0].choices)
    assert "product" in verbs and not {"lee2018", "zhang2017", "kang", "lowy2021", "lecture"} & verbs


def test_light_verbs_import_neither_pandas_nor_scipy_nor_numpy(tmp_path):
    """A cut-cell job (1,556 of them in the default target) is a process that reads one CSV and
    writes part of it: importing pandas cost it 0.38 of its 0.44 CPU-seconds."""
    import subprocess
    import sys

    source = tmp_path / "job.csv"
    source.write_text("setting,accuracy\n0.5,0.9\n1,0.8\n0.5,0.7\n")
    probe = ("import sys; from dperm.cli import main; code = main(sys.argv[1:]); "
             "heavy = sorted(m for m in sys.modules if m.split('.')[0] in {'pandas', 'scipy', 'numpy', 'matplotlib'}); "
             "print('HEAVY', heavy); sys.exit(code)")
    argv = ["cut-cell", "--setting", "0.5", str(source), str(tmp_path / "cell.csv")]
    out = subprocess.run([sys.executable, "-c", probe, *argv], capture_output=True, text=True)
    assert out.returncode == 0 and "HEAVY []" in out.stdout, (out.stdout, out.stderr)
    assert (tmp_path / "cell.csv").read_text() == "setting,accuracy\n0.5,0.9\n0.5,0.7\n"


def test_check_paper_finds_the_global_config_beside_the_paper_not_in_the_working_directory(
        tmp_path, capsys, monkeypatch):
    from pathlib import Path
    config = Path(__file__).resolve().parents[2] / "config"
    monkeypatch.chdir(tmp_path)  # no config/config.yaml here: an installed dperm is run from anywhere
    assert main(["check-paper", str(config / "papers" / "zhang2017.yaml"), "--quick"]) == 0
    assert "zhang2017.yaml: paper 'zhang2017'" in capsys.readouterr().out
    (tmp_path / "papers").mkdir()
    (tmp_path / "papers" / "zhang2017.yaml").write_text((config / "papers" / "zhang2017.yaml").read_text())
    code, err = _run(capsys, "check-paper", str(tmp_path / "papers" / "zhang2017.yaml"))
    assert code == 2 and f"no global config at {tmp_path / 'config.yaml'}" in err
