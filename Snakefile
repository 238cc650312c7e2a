# dperm: reproduce and extend five works on differentially private ERM.
# Entry point only: configuration, includes and the default target. See README.md.
from snakemake.utils import min_version

min_version("9.0")


configfile: "config/config.yaml"


report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/runs.smk"
include: "workflow/rules/reports.smk"
include: "workflow/rules/lee2018.smk"
include: "workflow/rules/zhang2017_common.smk"
include: "workflow/rules/zhang2017.smk"


# Everything: the prepared datasets and their table, and every table and figure of every paper in
# config `papers` (each paper's own target; zhang2017-runtime, an hour of timing runs, is apart).
rule all:
    input:
        default_targets(),
        rules.lee2018.input,
        rules.zhang2017.input,
    default_target: True
