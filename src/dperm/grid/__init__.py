"""A paper's configuration, turned into the grid it runs.

* :mod:`.views` — typed views of a validated paper (its experiments, figures, tuning, optima);
* :mod:`.validate` — reading a paper file (with its quick section and an overlay) and refusing,
  with the file, the key and what is allowed, every grid that could not run as written;
* :mod:`.cells` — cells and jobs of the grid;
* :mod:`.specs` — the fully resolved JSON specs a job, an optimum or a figure receives, so that
  Snakemake and ``python -m dperm`` agree.

Its public names are re-exported here.
"""

from .cells import (
    Cell,
    Job,
    algorithm_spec,
    base_key,
    cell_part,
    cell_source,
    cells,
    experiment_profile,
    find_job,
    job_parts,
    job_settings,
    jobs,
    settings,
    sweep_key,
    sweep_lookup,
)
from .specs import (
    RESERVED,
    apply_tuning,
    cell_spec,
    dumps,
    figure_datasets,
    figure_spec,
    job_specs,
    job_uses_tuning,
    l2_token,
    optimum_files,
    optimum_part_count,
    optimum_path,
    optimum_spec,
    paper_path,
    solves_optimum,
    start_file,
    start_path,
    start_specs,
    uses_tuning,
)
from .validate import check_hyper, check_profiles, load_paper, merge, profile_options, read_paper
from .views import Experiment, Figure, HyperGrid, Optimum, Paper, Sweep, Tuning

__all__ = [
    "RESERVED", "Cell", "Experiment", "Figure", "HyperGrid", "Job", "Optimum", "Paper", "Sweep", "Tuning",
    "algorithm_spec", "apply_tuning", "base_key", "cell_part", "cell_source", "cell_spec", "cells", "check_hyper",
    "check_profiles", "dumps", "experiment_profile", "figure_datasets", "figure_spec", "find_job",
    "job_settings", "job_specs", "job_parts", "job_uses_tuning", "jobs", "l2_token", "load_paper", "merge",
    "optimum_files", "optimum_part_count", "optimum_path", "optimum_spec", "paper_path", "profile_options",
    "read_paper", "settings", "solves_optimum", "start_file", "start_path", "start_specs", "sweep_key", "sweep_lookup",
    "uses_tuning",
]
