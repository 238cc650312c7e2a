"""Every command the README and the docs show is one that works as written.

Commands are read from the fenced ``bash`` blocks and the inline code of README.md, config/README.md
and docs/. Each ``snakemake`` command is parsed by Snakemake's own argument parser (so a target
written after ``--configfile``, which Snakemake would read as a config file, fails here) and its
targets and config files checked; the commands are then dry-run, those sharing config files in
one dry run of all their targets, in a copy of the workflow. Each ``python -m dperm`` verb shown
exists, and the read-only ones (``info``, ``check-paper``, ``estimate``) are run.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, copy_workflow, snakemake_env

DOCS = [REPO / "README.md", REPO / "config" / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
PLACEHOLDER = re.compile(r"[<{]\w[^>}]*[>}]|\.\.\.|FILE\b")
READ_ONLY_VERBS = {"info", "check-paper", "estimate"}


def documented_commands() -> list[tuple[str, str]]:
    """(where, command) of every snakemake / python -m dperm command shown in the docs."""
    out = []
    for path in DOCS:
        text = path.read_text(encoding="utf-8")
        where = str(path.relative_to(REPO))
        for block in re.findall(r"```bash\n(.*?)```", text, re.S):
            for line in block.splitlines():
                line = line.split("#", 1)[0].strip()
                if line.startswith(("snakemake ", "python -m dperm")):
                    out.append((where, line))
        prose = re.sub(r"```.*?```", "", text, flags=re.S)
        for code in re.findall(r"`([^`]+)`", prose):
            code = " ".join(code.split())
            if code.startswith(("snakemake ", "python -m dperm ")):
                out.append((where, code))
    return out


COMMANDS = documented_commands()


def _parse(command: str):
    from snakemake.cli import get_argument_parser

    return get_argument_parser().parse_args(shlex.split(command)[1:])


def test_the_docs_show_commands_at_all():
    words = [c for _, c in COMMANDS]
    assert sum(c.startswith("snakemake") for c in words) >= 20 and any("dperm" in c for c in words)


def _rule_names() -> set[str]:
    out = subprocess.run([sys.executable, "-m", "snakemake", "--list-target-rules"], cwd=REPO,
                         capture_output=True, text=True, env=snakemake_env(REPO.parent / "shared" / "data"))
    assert out.returncode == 0, out.stderr[-2000:]
    return set(out.stdout.split())


@pytest.fixture(scope="module")
def rules():
    return _rule_names()


@pytest.mark.parametrize("where, command", [c for c in COMMANDS if c[1].startswith("snakemake")],
                         ids=[f"{w}: {c}" for w, c in COMMANDS if c.startswith("snakemake")])
def test_a_documented_snakemake_command_parses_as_it_reads(where, command, rules):
    args = _parse(command)
    for configfile in args.configfile or ():
        assert str(configfile).endswith((".yaml", ".yml")) and (REPO / configfile).is_file(), (
            f"{where}: `{command}` reads {configfile} as a config file (a target after --configfile?)")
    for target in args.targets or ():
        if PLACEHOLDER.search(target):
            continue
        assert target in rules or "/" in target, f"{where}: `{command}`: {target!r} is neither a rule nor a file"


def _dry_run_groups() -> dict[tuple, set[str]]:
    """Config files -> the targets the docs run with them (commands with placeholders, reports,
    --unlock and --forcerun are checked by parsing only, or below)."""
    groups: dict[tuple, set[str]] = {}
    for _, command in COMMANDS:
        if not command.startswith("snakemake") or PLACEHOLDER.search(command):
            continue
        args = _parse(command)
        if args.report or args.unlock or args.lint:
            continue
        key = tuple(sorted(map(str, args.configfile or ())))
        groups.setdefault(key, set()).update(args.targets or {"all"})
    return groups


@pytest.mark.slow
def test_the_documented_targets_build_a_dag(tmp_path, mirror):
    copy_workflow(tmp_path)
    groups = _dry_run_groups()
    assert () in groups and ("config/quick.yaml",) in groups, groups
    for configfiles, targets in groups.items():
        command = [sys.executable, "-m", "snakemake", "-n", "--quiet", "rules", "--cores", "2", *sorted(targets)]
        if configfiles:
            command += ["--configfile", *configfiles]
        out = subprocess.run(command, cwd=tmp_path, env=snakemake_env(mirror), capture_output=True, text=True)
        text = out.stdout + out.stderr
        assert out.returncode == 0 and "Exception" not in text, (configfiles, sorted(targets), text[-3000:])


@pytest.mark.slow
def test_unlock_as_the_readme_says_works_in_a_fresh_directory(tmp_path, mirror):
    copy_workflow(tmp_path)
    out = subprocess.run([sys.executable, "-m", "snakemake", "--unlock"], cwd=tmp_path, env=snakemake_env(mirror),
                         capture_output=True, text=True)
    assert out.returncode == 0 and "Unlocked working directory" in out.stdout + out.stderr


@pytest.mark.parametrize("where, command", [c for c in COMMANDS if "dperm" in c[1]],
                         ids=[f"{w}: {c}" for w, c in COMMANDS if "dperm" in c])
def test_a_documented_dperm_command_exists_and_the_read_only_ones_run(where, command, mirror):
    words = shlex.split(command)[3:]
    verb = next((w for w in words if not w.startswith("-")), None)
    if verb is not None and PLACEHOLDER.fullmatch(verb):  # `python -m dperm ...`: any verb
        return
    if verb is None:  # python -m dperm --help
        out = subprocess.run([sys.executable, "-m", "dperm", *words], capture_output=True, text=True, cwd=REPO)
        assert out.returncode == 0, out.stderr
        return
    help_ = subprocess.run([sys.executable, "-m", "dperm", verb, "--help"], capture_output=True, text=True, cwd=REPO)
    assert help_.returncode == 0, f"{where}: `{command}`: no verb {verb!r}: {help_.stderr}"
    if verb in READ_ONLY_VERBS and not PLACEHOLDER.search(command):
        out = subprocess.run([sys.executable, "-m", "dperm", *words], capture_output=True, text=True, cwd=REPO,
                             env=snakemake_env(mirror))
        assert out.returncode == 0, f"{where}: `{command}`: {out.stderr[-2000:]}"


def test_placeholders_are_recognised():
    assert PLACEHOLDER.search("snakemake -n -p <file>") and PLACEHOLDER.search("check-paper FILE")
    assert not PLACEHOLDER.search("snakemake --cores 2 results/runs/demo/demo/adult/lr/dp-sgd/eps0.1.csv")


def test_a_target_after_configfile_is_caught():
    args = _parse("snakemake --configfile config/quick.yaml lee2018")
    assert [Path(c).name for c in args.configfile] == ["quick.yaml", "lee2018"] and not args.targets
