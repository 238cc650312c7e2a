"""Loading and checking a paper configuration.

:func:`load_paper` refuses, with the file, the key and what is allowed, every grid that could not
run as written: the schema first (``dperm/schemas/paper.schema.yaml``, defaults filled in), then
every name a grid uses (algorithms, their hyper-parameters and types, models, experiments, figure
references) and every cross-reference. It returns the typed view (:class:`.views.Paper`).

A file can be read with its ``quick`` section merged in (a quick run) and with an *overlay*
merged over it (another file of the same shape holding only the values that differ: the CI
configuration is the real one with an overlay, not a fork of it).
"""

from __future__ import annotations

import copy

from ..config import ConfigError, read_yaml, validate
from ..protocol.settings import format_epsilon
from ..protocol.splits import split_count
from .cells import algorithm_spec, base_key, experiment_profile, jobs, settings, sweep_key
from .specs import RESERVED, solves_optimum
from .views import Experiment, Figure, Paper


def merge(base, override):
    """``override`` deep-merged over ``base``: mappings merge key by key, anything else replaces,
    and a null value removes the key (a quick run can drop a whole experiment)."""
    if not isinstance(base, dict) or not isinstance(override, dict):
        return copy.deepcopy(override)
    out = copy.deepcopy(base)
    for key, value in override.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge(out.get(key), value)
    return out


def read_paper(path, quick: bool = False, overlay=None) -> tuple[dict, str]:
    """The paper file at ``path`` as a mapping, with the overlay file ``overlay`` (if any) merged
    over it and then, for a quick run, its ``quick`` section (the overlay's own ``quick``
    section merged into the file's first); and the description of where it came from."""
    raw = read_yaml(path)
    where = f"{path}"
    if overlay is not None:
        extra = read_yaml(overlay)
        if not isinstance(raw, dict) or not isinstance(extra, dict):
            raise ConfigError(f"{overlay}: an overlay must be a mapping over the mapping of {path}")
        if "paper" in extra and extra["paper"] != raw.get("paper"):
            raise ConfigError(f"{overlay}: overlays paper {extra['paper']!r} onto {path}, which is "
                              f"paper {raw.get('paper')!r}")
        raw = merge(raw, extra)
        where = f"{path} with the overlay {overlay}"
    overrides = raw.pop("quick", None) if isinstance(raw, dict) else None
    if quick:
        raw = merge(raw, overrides or {})
        if overrides:
            where += " (quick run: its 'quick' section merged in)"
    return raw, where


def load_paper(path, quick: bool = False, overlay=None) -> Paper:
    """Read and check a paper config (module docstring); ``quick``: the file's ``quick`` section is
    merged over it (reduced protocols; see ``config/quick.yaml``) and ``paper.quick`` is true.
    Raises :class:`ConfigError` naming the file and the key."""
    raw, where = read_paper(path, quick, overlay)
    validate(raw, "paper", where)
    paper = Paper.from_config(raw, quick=quick, source=where)
    _check_paper(paper, where)
    return paper


def _fail(where: str, message: str):
    raise ConfigError(f"{where}: {message}")


def check_hyper(paper: Paper, key: str, hyper: dict, where: str) -> None:
    """The algorithm of ``key`` accepts every hyper-parameter named, with a value of its type."""
    spec = algorithm_spec(paper, key)
    given = {k: v for k, v in hyper.items() if k not in RESERVED}
    unknown = sorted(set(given) - set(spec.defaults))
    if unknown:
        _fail(where, f"unknown hyper-parameter(s) {unknown} for algorithm {spec.name!r}; allowed: "
                     f"{sorted(spec.defaults)}")
    try:
        spec.check_types(given, where)
    except ConfigError:
        raise
    except ValueError as err:  # the algorithm's words, as a configuration error
        raise ConfigError(str(err)) from None


def _check_paper(paper: Paper, where: str) -> None:
    from ..algorithms import algorithm_names

    known = algorithm_names()
    for key, block in paper.algorithms.items():
        name = block.get("use", key)
        if name not in known:
            _fail(f"{where}: algorithms.{key}", f"unknown algorithm {name!r}; known algorithms: {', '.join(known)}")
        check_hyper(paper, key, block, f"{where}: algorithms.{key}")
        for model in block.get("model_overrides", {}):
            if model not in paper.models:
                _fail(f"{where}: algorithms.{key}.model_overrides", f"unknown model {model!r}; models: "
                                                                    f"{sorted(paper.models)}")
    for name, exp in paper.experiments.items():
        _check_experiment(paper, exp, f"{where}: experiments.{name}")
    for name, fig in paper.figures.items():
        _check_figure(paper, fig, f"{where}: figures.{name}")
    tuning = paper.tuning
    if tuning:
        missing = sorted(set(tuning.experiments) - set(paper.experiments))
        if missing:
            _fail(f"{where}: tuning.experiments", f"experiments {missing} are not defined; defined: "
                                                  f"{sorted(paper.experiments)}")
        for algorithm in tuning.l2_algorithms:
            if algorithm not in paper.algorithms:
                _fail(f"{where}: tuning.l2.algorithms", f"unknown algorithm key {algorithm!r}")
        keys = [block.algorithm for block in tuning.hyper]
        twice = sorted({k for k in keys if keys.count(k) > 1})
        if twice:  # the second block would silently overwrite the first's choice
            _fail(f"{where}: tuning.hyper", f"algorithm keys {twice} have more than one grid block; give each one "
                                            "block (one grid over all its hyper-parameters)")
        for block in tuning.hyper:
            if block.algorithm not in paper.algorithms:
                _fail(f"{where}: tuning.hyper", f"unknown algorithm key {block.algorithm!r}; defined: "
                                                f"{sorted(paper.algorithms)}")
            for name, values in block.grid.items():  # every value of the grid, not only the first
                for value in values:
                    check_hyper(paper, block.algorithm, {name: value}, f"{where}: tuning.hyper[{block.algorithm}]")
            if block.per_epsilon:
                tokens = {format_epsilon(e) for e in block.epsilons}
                for name in tuning.experiments:
                    exp = paper.experiments[name]
                    if block.algorithm in exp.algorithms:
                        missing = sorted(set(settings(paper, exp, block.algorithm)) - tokens)
                        if missing:
                            _fail(f"{where}: tuning.hyper[{block.algorithm}].epsilons",
                                  f"per_epsilon chooses a point for each epsilon the algorithm runs at; experiment "
                                  f"{name!r} runs it at {missing}, which the block does not tune")
    for key, block in paper.algorithms.items():
        source = block.get("tuned_as")
        if source is None:
            continue
        grid = tuning.hyper_for(source) if tuning else None
        if grid is None:
            tuned = [b.algorithm for b in tuning.hyper] if tuning else []
            _fail(f"{where}: algorithms.{key}.tuned_as", f"{source!r} is not a key the tuning run tunes "
                                                         f"(tuning.hyper); tuned: {tuned}")
        if tuning.hyper_for(key) is not None:
            _fail(f"{where}: algorithms.{key}.tuned_as", "a key with tuned_as takes another key's choices and has no "
                                                         "grid of its own")
        for name, values in grid.grid.items():  # every value the source may choose must suit this key too
            for value in values:
                check_hyper(paper, key, {name: value}, f"{where}: algorithms.{key}.tuned_as")


def _unique_settings(values, where: str, what: str) -> None:
    tokens = [format_epsilon(v) for v in values]
    repeated = sorted({t for t in tokens if tokens.count(t) > 1})
    if repeated:
        _fail(where, f"{what} {list(values)} name the same setting twice ({repeated}): each value would "
                     "count the same fits twice")


def _check_experiment(paper: Paper, exp: Experiment, where: str) -> None:
    for key in ("models", "algorithms"):
        defined = getattr(paper, key)
        unknown = sorted(set(getattr(exp, key)) - set(defined))
        if unknown:
            _fail(f"{where}.{key}", f"{unknown} are not defined in the paper's {key!r} section; defined: "
                                    f"{sorted(defined)}")
    for dataset, models in exp.dataset_models.items():
        if dataset not in exp.datasets or not set(models) <= set(exp.models):
            _fail(f"{where}.dataset_models.{dataset}", f"must name one of the experiment's datasets "
                                                       f"{list(exp.datasets)} and a subset of its models "
                                                       f"{list(exp.models)}")
    for key, models in exp.algorithm_models.items():
        if key not in exp.algorithms or not set(models) <= set(exp.models):
            _fail(f"{where}.algorithm_models.{key}", f"must name one of the experiment's algorithms "
                                                     f"{list(exp.algorithms)} and a subset of its models "
                                                     f"{list(exp.models)}")
    _unique_settings(exp.epsilons, f"{where}.epsilons", "epsilons")
    for key, values in exp.epsilons_by_algorithm.items():
        if key not in exp.algorithms:
            _fail(f"{where}.epsilons_by_algorithm", f"{key!r} is not one of the experiment's algorithms "
                                                    f"{list(exp.algorithms)}")
        _unique_settings(values, f"{where}.epsilons_by_algorithm.{key}", "epsilons")
    for key, steps in exp.steps.items():
        if key not in exp.algorithms or algorithm_spec(paper, key).depends_on_epsilon:
            _fail(f"{where}.steps.{key}", "steps are for algorithms of the experiment whose epsilon is "
                                          "computed from a number of steps (e.g. sgd-ma)")
        if len(set(steps)) != len(steps):
            _fail(f"{where}.steps.{key}", f"{steps} names a step count twice")
    for key in exp.algorithms:
        spec = algorithm_spec(paper, key)
        if spec.private and not settings(paper, exp, key):
            what = "steps" if not spec.depends_on_epsilon else "epsilons"
            _fail(where, f"algorithm {key!r} is private but the experiment gives it no {what}: it would "
                         f"run no cells")
        _check_needs(paper, exp, key, where)
    for block_name, block in [("hyper", exp.hyper)] + [
            (f"per_dataset.{d}", {a: h for a, h in b.items() if a != "models"}) for d, b in exp.per_dataset.items()]:
        for key, hyper in block.items():
            if key not in paper.algorithms:
                _fail(f"{where}.{block_name}", f"unknown algorithm key {key!r}; defined: {sorted(paper.algorithms)}")
            check_hyper(paper, key, hyper, f"{where}.{block_name}.{key}")
    for key, names in exp.data_derived.items():
        if key not in exp.algorithms:
            _fail(f"{where}.data_derived", f"{key!r} is not one of the experiment's algorithms "
                                           f"{list(exp.algorithms)}")
        unknown = sorted(set(names) - set(algorithm_spec(paper, key).defaults))
        if unknown:
            _fail(f"{where}.data_derived.{key}", f"{unknown} are not hyper-parameters of {key!r}")
    for dataset, parts in exp.parts.items():
        if dataset not in exp.datasets:
            _fail(f"{where}.parts", f"{dataset!r} is not one of the experiment's datasets {list(exp.datasets)}")
        for key, n in parts.items():
            if key not in exp.algorithms:
                _fail(f"{where}.parts.{dataset}", f"{key!r} is not one of the experiment's algorithms "
                                                  f"{list(exp.algorithms)}")
            spec = algorithm_spec(paper, key)
            if not (spec.private and spec.depends_on_epsilon):
                _fail(f"{where}.parts.{dataset}.{key}", "only a private algorithm run at target epsilons can be "
                                                        "split (a step-count path is one run)")
            count = len(settings(paper, exp, key))
            if n > count:
                _fail(f"{where}.parts.{dataset}.{key}", f"{n} parts for {count} privacy settings: at most {count}")
    splits = split_count(exp.protocol)
    for dataset, parts in exp.optimum_parts.items():
        if dataset not in exp.datasets:
            _fail(f"{where}.optimum_parts", f"{dataset!r} is not one of the experiment's datasets "
                                            f"{list(exp.datasets)}")
        for model, n in parts.items():
            if model not in exp.models_on(dataset):
                _fail(f"{where}.optimum_parts.{dataset}", f"{model!r} is not one of the models fitted on "
                                                          f"{dataset!r} {list(exp.models_on(dataset))}")
            if not solves_optimum(paper, model):
                _fail(f"{where}.optimum_parts.{dataset}.{model}", f"the paper solves no optimum of {model!r} "
                                                                  "(optimum: solve, multistart): nothing to split")
            if n > splits:
                _fail(f"{where}.optimum_parts.{dataset}.{model}", f"{n} parts for {splits} splits: at most {splits}")
    for dataset in exp.per_dataset:
        if dataset not in exp.datasets:
            _fail(f"{where}.per_dataset", f"{dataset!r} is not one of the experiment's datasets {list(exp.datasets)}")
    other = exp.splits_of
    if other is not None:
        if other not in paper.experiments or other == exp.name:
            _fail(f"{where}.splits_of", f"{other!r} is not another experiment of the paper; defined: "
                                        f"{sorted(paper.experiments)}")
        theirs = paper.experiments[other]
        splits = [{k: v for k, v in e.protocol.items() if k != "draws"} for e in (exp, theirs)]
        if splits[0] != splits[1] or not set(exp.datasets) <= set(theirs.datasets):
            _fail(f"{where}.splits_of", f"experiment {other!r} must split as this one does ({splits[0]}; it has "
                                        f"{splits[1]}) and hold every dataset of this one ({list(exp.datasets)}; "
                                        f"it has {list(theirs.datasets)})")
    if exp.sweep:
        keys = [sweep_key("", exp.sweep.param, v) for v in exp.sweep.values]
        repeated = sorted({k for k in keys if keys.count(k) > 1})
        if repeated:  # 2 and 2.0 name the same cell key (a value of 0 is allowed: key <param>0)
            _fail(f"{where}.sweep.values", f"values {list(exp.sweep.values)} name the same cell twice ({repeated})")
        for key in exp.algorithms:
            for value in exp.sweep.values:
                check_hyper(paper, key, {exp.sweep.param: value}, f"{where}.sweep")


def _check_needs(paper: Paper, exp: Experiment, key: str, where: str) -> None:
    """Every privacy target the experiment gives an algorithm is one it can meet (a finite ε,
    δ > 0 for Gaussian noise: ``needs`` in its registration)."""
    spec = algorithm_spec(paper, key)
    if not spec.private or not spec.depends_on_epsilon:
        return
    hyper = {k: v for k, v in paper.algorithms[key].items() if k not in RESERVED}
    hyper.update(exp.hyper.get(key, {}))
    for dataset in exp.datasets:
        given = {**hyper, **exp.per_dataset.get(dataset, {}).get(key, {})}
        for epsilon in exp.epsilons_by_algorithm.get(key, exp.epsilons):
            unmet = spec.unmet_needs(float(epsilon), float(exp.delta), given)
            if unmet:
                _fail(where, f"algorithm {key!r} ({spec.name}) needs {' and '.join(unmet)}; the experiment runs "
                             f"it at epsilon={epsilon!r}, delta={exp.delta!r}")


def _check_figure(paper: Paper, fig: Figure, where: str) -> None:
    experiments = paper.experiments
    if fig.experiment not in experiments:
        _fail(f"{where}.experiment", f"unknown experiment {fig.experiment!r}; defined: {sorted(experiments)}")
    exp = experiments[fig.experiment]
    available = set(exp.algorithms)
    for other, algorithms in fig.borrow.items():
        if other not in experiments:
            _fail(f"{where}.borrow", f"unknown experiment {other!r}; defined: {sorted(experiments)}")
        missing = sorted(set(algorithms) - set(experiments[other].algorithms))
        if missing:
            _fail(f"{where}.borrow.{other}", f"experiment {other!r} does not run {missing}")
        available |= set(algorithms)
    unknown = sorted(set(fig.algorithms or ()) - available)
    if unknown:
        _fail(f"{where}.algorithms", f"{unknown} are not run by experiment {fig.experiment!r} (nor borrowed); "
                                     f"available: {sorted(available)}")
    drawn = set(fig.algorithms if fig.algorithms is not None else exp.algorithms)
    for key, partner in fig.pairs.items():
        if key not in drawn or partner not in drawn or key == partner or partner in fig.pairs:
            _fail(f"{where}.pairs.{key}", f"pairs two different curves of the figure ({sorted(drawn)}), the second "
                                          f"not itself paired; got {key!r} -> {partner!r}")
    datasets = [p.dataset for p in fig.panels or ()] + list(fig.datasets or ())
    unknown = sorted(set(datasets) - set(exp.datasets))
    if unknown:
        _fail(f"{where}", f"datasets {unknown} are not in experiment {fig.experiment!r} ({list(exp.datasets)})")
    models = [p.model for p in fig.panels or ()] + ([fig.model] if fig.model else [])
    unknown = sorted(set(models) - set(exp.models))
    if unknown:
        _fail(f"{where}", f"models {unknown} are not in experiment {fig.experiment!r} ({list(exp.models)})")
    swept = exp.sweep.param if exp.sweep else None
    if fig.kind == "sweep" and fig.param != swept:
        _fail(f"{where}.param", f"a sweep figure draws its experiment's swept parameter ({swept!r}); "
                                f"got {fig.param!r}")


def profile_options(profiles: dict, dataset: str, profile: str) -> dict:
    """A profile's options for one dataset: its common options, then its per-dataset ones."""
    spec = dict(profiles[profile])
    per_dataset = spec.pop("per_dataset", {}) or {}
    return {**spec, **per_dataset.get(dataset, {})}


def check_profiles(paper: Paper, profiles, source: str) -> None:
    """Every preprocessing profile the paper uses is defined in the global config, and can
    prepare every dataset it is used on (a profile with public bounds refuses a dataset with an
    attribute that has none, docs/privacy.md#public-bounds)."""
    from ..datasets import registry
    from ..datasets.encode import resolve_profile

    checked = set()
    for name, exp in paper.experiments.items():
        for key in exp.algorithms:
            profile = experiment_profile(paper, name, key)
            if profile not in profiles:
                raise ConfigError(f"{source}: experiment {name!r}, algorithm {key!r}: profile {profile!r} is not "
                                  f"in config 'profiles' (defined: {sorted(profiles)})")
            for dataset in exp.datasets:
                if (dataset, profile) in checked:
                    continue
                checked.add((dataset, profile))
                try:
                    resolve_profile(registry.get(dataset), profile_options(profiles, dataset, profile))
                except ValueError as err:
                    raise ConfigError(f"{source}: experiment {name!r}, algorithm {key!r}: profile {profile!r} "
                                      f"cannot prepare dataset {dataset!r}: {err}") from None
    _check_sizes(paper, profiles, source)


def training_rows_bound(dataset: str, options: dict, protocol: dict) -> int | None:
    """An upper bound of the training rows a dataset gives under a profile's options and a split
    protocol (None when the registry does not know its rows): the raw rows, or the subsample's,
    times the share a split trains on."""
    from ..datasets import registry

    rows = [f.rows for f in registry.get(dataset).files]
    if not rows or any(r is None for r in rows):
        return None
    total = sum(rows)
    subsample = options.get("subsample")
    if isinstance(subsample, dict) and subsample.get("rows"):
        total = min(total, int(subsample["rows"]))
    kind = protocol.get("kind")
    if kind == "kfold":
        folds = int(protocol.get("folds", 2))
        return total - total // folds
    if kind == "holdout":
        return total - int(total * float(protocol.get("test_fraction", 0.0)))
    return total


def _check_sizes(paper: Paper, profiles, source: str) -> None:
    """No hyper-parameter an algorithm bounds by the training rows (``size_bounds``: a batch
    size) exceeds an upper bound of them, in any job or tuning grid."""
    from .specs import job_specs

    seen = set()
    for job in jobs(paper):
        spec = job_specs(paper, job, 0)[0]
        algorithm = algorithm_spec(paper, base_key(paper, job))
        key = (job.experiment, job.dataset, job.algorithm)
        if not algorithm.size_bounds or key in seen:
            continue
        seen.add(key)
        options = profile_options(profiles, job.dataset, spec["profile"])
        bound = training_rows_bound(job.dataset, options, spec["protocol"])
        values = {name: [spec["hyper"].get(name)] for name in algorithm.size_bounds}
        for block in paper.tuning.hyper if paper.tuning else ():
            if block.algorithm == base_key(paper, job) and job.experiment in paper.tuning.experiments:
                for name in algorithm.size_bounds:
                    values[name] += list(block.grid.get(name, []))
        for name, given in values.items():
            for value in given:
                if bound is not None and isinstance(value, int) and value > bound:
                    raise ConfigError(f"{source}: experiment {job.experiment!r}, algorithm {job.algorithm!r}, "
                                      f"dataset {job.dataset!r}: {name}={value} exceeds the at most {bound} "
                                      f"training rows")
