# dperm: reproduce and extend works on differentially private ERM. Entry point only:
# configuration, includes and the default target; no paper is named here (see README.md).
from snakemake.utils import min_version

min_version("9.0")


configfile: "config/config.yaml"


report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/runs.smk"
include: "workflow/rules/reports.smk"
include: "workflow/rules/audit.smk"
include: "workflow/rules/products.smk"


# Local runs: drop Snakemake's job-rate limiter (--max-jobs-per-timespan, default 100/1s). Each
# pass of its scheduling loop arms a 1 s timer that wakes the loop again, and every finished job
# wakes it once more, so the wake-ups per second grow with the jobs finished (about 10 per second
# after 10 jobs). Every pass re-reads the inputs of all ready jobs: in a full paper run that
# took ~30% of a core by mid-run, CPU the jobs needed. Without the limiter the loop wakes only
# when a job finishes. Cluster executors keep their limiter.
onstart:
    scheduler = getattr(workflow, "scheduler", None)
    if workflow.local_exec and getattr(scheduler, "job_rate_limiter", None) is not None:
        scheduler.job_rate_limiter = None


# Everything: the prepared datasets and their table, every output of every paper in config
# `papers` (each paper's own target; a paper's extra targets, such as long timing runs, are apart)
# and the scorecard, which reads them all and the privacy audit.
rule all:
    default_target: True
    input:
        default_targets(),
        [paper_outputs(paper, makeable=True) for paper in PAPERS],
        rules.scorecard.output,
