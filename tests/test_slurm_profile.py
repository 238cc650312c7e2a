"""profiles/slurm, the cluster sizes (workflow/cluster.yaml) and the rules' cluster lines agree.

The SLURM run itself is checked by .ci/run on a single-node cluster (.ci/slurm); these tests catch,
without a cluster, the edits that would break it: a group id the profile does not batch, a kind
without sizes, a rule that asks for nothing, a status command that can wait forever.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
import yaml
from conftest import REPO

PROFILE = yaml.safe_load((REPO / "profiles" / "slurm" / "config.yaml").read_text())
SIZES = yaml.safe_load((REPO / "workflow" / "cluster.yaml").read_text())
COMMON = (REPO / "workflow" / "rules" / "common.smk").read_text()
# Rule files whose every rule with a command must carry the cluster lines (the papers' own rule
# files are being replaced by one generic product file, which this glob includes once it exists).
RULE_FILES = sorted((REPO / "workflow" / "rules").glob("*.smk"))


def _literal(name: str):
    """A literal assigned at the top level of common.smk (a .smk file is not importable)."""
    match = re.search(rf"^{name} = ", COMMON, re.M)
    assert match, f"common.smk no longer assigns {name}"
    lines = COMMON[match.end():].splitlines()
    for n in range(1, len(lines) + 1):  # the shortest run of lines that is a whole literal
        try:
            return ast.literal_eval("\n".join(lines[:n]))
        except SyntaxError:
            continue
    raise AssertionError(f"common.smk: {name} is not a literal")


GROUPS = _literal("CLUSTER_GROUPS")


def test_every_group_id_takes_all_its_parts_and_the_profile_names_no_other():
    """A fixed group and each batch (registered under its kind) must be one group job: a count
    below its number of parts would have Snakemake chunk it, and chunks grow (common.smk)."""
    ids = {kind if policy == "batched" else policy.split("-{")[0] for kind, policy in GROUPS.items()
           if policy != "with-fit"}
    assert set(PROFILE["group-components"]) == ids
    assert all(n >= 1000 for n in PROFILE["group-components"].values())


def test_cluster_sizes_cover_every_kind():
    kinds = SIZES["kinds"]
    assert set(GROUPS) | {"tuning"} <= set(kinds)
    for kind, size in kinds.items():
        assert isinstance(size["mem_mb"], int) and size["mem_mb"] >= 100, kind
        assert size["seconds"] > 0, kind
        # the mean job (what dperm estimate counts for a kind sized as a whole) within its largest
        assert 0 < size["mean"] <= size["seconds"], kind
    assert 0 <= SIZES["scheduler_seconds"] < 1  # Snakemake's own CPU per job
    assert SIZES["runtime_factor"] >= 1
    for kind, rows in SIZES["seconds"].items():
        assert kind in kinds
        for key, (seconds, batch) in rows.items():
            assert re.fullmatch(r"[\w.-]+(/[\w.-]+)*", key) and seconds > 0, (kind, key)
            assert batch is None or (isinstance(batch, int) and GROUPS.get(kind) == "batched"), (kind, key)


def test_batches_hold_short_jobs_only():
    """A batch runs its jobs one after the other: a long job in one would hold the rest back."""
    for kind, rows in SIZES["seconds"].items():
        sizes = {}
        for seconds, batch in rows.values():
            if batch is not None:
                assert seconds <= 120, (kind, seconds)
                sizes[batch] = sizes.get(batch, 0) + 1
        assert all(n <= 12 for n in sizes.values()), kind


def _rules(text: str):
    """(name, body) of each rule or checkpoint of a rule file."""
    starts = list(re.finditer(r"^(?:rule|checkpoint) (\w+):\n", text, re.M))
    for this, following in zip(starts, [*starts[1:], None]):
        yield this.group(1), text[this.end(): following.start() if following else len(text)]


@pytest.mark.parametrize("path", RULE_FILES, ids=lambda p: p.name)
def test_every_rule_with_a_command_says_what_a_cluster_job_needs(path):
    text = path.read_text()
    local = set(re.findall(r"^localrules:\n((?:    \w+,\n)+)", text, re.M))
    local = {name for block in local for name in re.findall(r"(\w+),", block)}
    for name, body in _rules(text):
        if "    shell:" not in body or name in local:
            continue
        assert re.search(r"^    resources:\n        \*\*cluster_resources\(\"\w+\"\),", body, re.M), (
            f"{path.name}: rule {name} has no `resources: **cluster_resources(<kind>)`")


def test_status_command_is_squeue_and_the_ci_cluster_keeps_jobs_long_enough():
    """sacct without an accounting daemon prints nothing and the run waits forever; squeue sees a
    finished job for MinJobAge seconds, which must outlast the plugin's longest status interval
    (180 s) and be at least three first intervals (else the plugin silently falls back to sacct)."""
    assert PROFILE["slurm-status-command"] == "squeue"
    ci = (REPO / ".ci" / "slurm").read_text()
    min_job_age = int(re.search(r"^MinJobAge=(\d+)$", ci, re.M).group(1))
    assert min_job_age >= 3 * PROFILE["slurm-init-seconds-before-status-checks"]
    assert min_job_age > 180


def test_profile_sets_no_site_resources():
    """Account and partition are the user's (README); a profile list would be replaced whole by
    any --default-resources on the command line, and the jobs' sizes would go with it."""
    assert "default-resources" not in PROFILE and "set-resources" not in PROFILE


def test_a_job_s_own_usage_wins_over_its_sampled_benchmark(tmp_path):
    """benchmarks/slurm_resources.py sizes jobs from their *.usage.json (getrusage) where they wrote
    one: Snakemake's benchmark files sample CPU time and undercount."""
    import importlib.util
    import json

    spec = importlib.util.spec_from_file_location("slurm_resources", REPO / "benchmarks" / "slurm_resources.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    out = tmp_path / "benchmarks" / "out"
    header = "s\th:m:s\tmax_rss\tmax_vms\tmax_uss\tmax_pss\tio_in\tio_out\tmean_load\tcpu_time\n"
    for rel in ("jobs/p/e/adult/lr/dp-sgd.tsv", "jobs/p/e/adult/lr/majority.tsv", "summaries/p/x.tsv"):
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        (out / rel).write_text(header + "100.0\t0:01:40\t50\t0\t0\t0\t0\t0\t60\t60.0\n")
    usage = tmp_path / "results" / "jobs" / "p" / "e" / "adult" / "lr" / "dp-sgd.usage.json"
    usage.parent.mkdir(parents=True)
    usage.write_text(json.dumps({"cpu_s": 97.5, "wall_s": 99.0, "max_rss_mb": 80.0}))
    rows = {r["key"]: r for r in module.read_runs([f"run={out}"])["run"]}
    assert (rows["p/e/adult/lr/dp-sgd"]["cpu"], rows["p/e/adult/lr/dp-sgd"]["max_rss"]) == (97.5, 80.0)
    assert rows["p/e/adult/lr/majority"]["cpu"] == 60.0 and rows[""]["cpu"] == 60.0
    # a part of a split job is keyed as common.smk's cluster_key keys it (the part's number last)
    assert module.kind_and_key(Path("parts/p/e/adult/lr/dp-agd/part2.tsv")) == ("fit", "p/e/adult/lr/dp-agd/2")
