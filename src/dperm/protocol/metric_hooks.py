"""Metrics an experiment asks the protocol to compute on every fit, beyond the standard record
columns: ``metrics: {<hook>: <settings>}`` in the experiment's config. Each hook sees the fit
(its released weights, the training and test rows, the resolved hyper-parameters, the prepared
arrays' column names) and returns per-draw values, which the record carries in its ``extra`` JSON
beside what the algorithm reports; the records stay ordinary records, summarised and read by the
report layer (:func:`dperm.report.stats.with_extra`).

* ``groups`` (``group_by``: one-hot attributes): the worst group's mean test loss and accuracy
  over every combination of the attributes' levels (groups with test rows), which groups those
  are, the smallest group's size, and the tilted objective F_t of the released weights on the
  training rows at the fit's own tilt t (``tilted_objective_t``: its ``tilt`` hyper-parameter
  with the algorithm's default; an algorithm without one minimises the plain risk, t = 0).
* ``robust`` (``test_radii``, ``attack``): accuracy under the worst ℓ2 attack of each radius r (a
  row counts iff y⟨w, x⟩ − r‖w_A‖ > 0), and the radius the fit was trained at (its ``radius``, or
  0). ``attack``: ``all`` (default; A = every column) or ``numeric`` (A = the columns that are
  neither one-hot indicators, ``<attribute>=<level>``, nor the bias: what an attacker can move
  continuously); a fit trained against an attack (``attack_coordinates``) must have been trained
  against this one.
* ``population`` (``dataset``, ``start``): excess population risk F_P(w) − min F_P on rows
  [start, end) of a prepared dataset (the same seeded stream the training rows are a prefix of,
  never trained on); only where the training dataset is of that stream (same synthetic family and
  dimension, n ≤ start), NaN elsewhere.
* ``curvature`` (no settings): tr ∇²F(ŵ)/p at the certified minimiser ŵ of the training rows (the
  quadratic model's factor: excess ≈ ½·(tr∇²F/p)·E‖z‖² for isotropic noise z), with ŵ's
  certified gap bound.
* ``solver_speed`` (``sgd_budget``: full-gradient equivalents SGD may run): for a black-box fit
  (``outpert-blackbox``, μ > 0), the iterations its solver needs on the training rows to reach
  F(w) − F* ≤ α (the α its sensitivity needs), measured against the split's certified optimum F*
  (:mod:`dperm.algorithms.blackbox.speed`), beside the certified count; one measurement per
  split, shared by the cells of a job (the solve does not depend on ε). Other fits: nothing.

A hook that needs other data declares it (:func:`data_needs`): the job then receives those
prepared arrays (``run-job --extra <role>=<file>``).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

HOOKS: dict[str, Callable] = {}
NEEDS: dict[str, Callable] = {}


def metric_hook(name: str, needs: Callable | None = None):
    """Register ``hook(context) -> {key: per-draw values}`` under ``name``; ``needs(settings,
    spec) -> {role: (dataset, profile)}`` names the other prepared arrays it reads."""

    def register(hook):
        HOOKS[name] = hook
        if needs is not None:
            NEEDS[name] = needs
        return hook

    return register


@dataclass
class FitContext:
    """One fit as a hook sees it."""

    spec: dict
    settings: dict
    split: object
    train: object  # the training rows' Problem
    full: object  # every row's Problem
    arrays: dict  # the prepared arrays (column names, labels)
    weights: np.ndarray  # (draws, p)
    hyper: dict  # every hyper-parameter of the fit, defaults filled in
    data: dict = field(default_factory=dict)  # role -> other prepared arrays (data_needs)
    cache: dict = field(default_factory=dict)  # shared by the fits of one job
    optimum: dict | None = None  # the split's certified optima (F_star, ...), where the cell has them
    result_extra: dict = field(default_factory=dict)  # what the algorithm reported beyond the weights

    @property
    def test(self):
        return self.full.X[self.split.test], self.full.y[self.split.test]


def data_needs(spec: dict) -> dict[str, tuple[str, str]]:
    """role -> (dataset, profile) of the prepared arrays a cell's metric hooks read."""
    out = {}
    for name, settings in (spec.get("metrics") or {}).items():
        if name in NEEDS:
            out.update(NEEDS[name](settings, spec))
    return out


def compute(context: FitContext) -> dict:
    """Every hook the cell's spec asks for, merged (a key two hooks both return is an error)."""
    out: dict = {}
    for name, settings in (context.spec.get("metrics") or {}).items():
        if name not in HOOKS:
            raise ValueError(f"unknown metric hook {name!r}; known: {sorted(HOOKS)}")
        context.settings = settings or {}
        values = HOOKS[name](context)
        twice = sorted(set(values) & set(out))
        if twice:
            raise ValueError(f"metric hook {name!r} returns keys {twice} another hook returns")
        out.update(values)
    return out


# -- groups ------------------------------------------------------------------------------------------

def group_masks(columns, rows_X, group_by) -> dict[str, np.ndarray]:
    """{"sex=Female & race=Black": mask, ...}: every combination of the one-hot columns whose
    names start with ``<attribute>=`` for each attribute of ``group_by`` (rows of ``rows_X``)."""
    columns = [str(c) for c in columns]
    levels = []
    for attribute in group_by:
        idx = [j for j, c in enumerate(columns) if c.startswith(f"{attribute}=")]
        if not idx:
            raise ValueError(f"no one-hot columns '{attribute}=...' among the prepared columns")
        levels.append(idx)
    masks = {}
    for combo in itertools.product(*levels):
        mask = np.ones(rows_X.shape[0], dtype=bool)
        for j in combo:
            mask &= rows_X[:, j] > 0
        masks[" & ".join(columns[j] for j in combo)] = mask
    return masks


@metric_hook("groups")
def groups(ctx: FitContext) -> dict:
    from ..losses import Tilted
    from ..problem import Problem

    X_test, y_test = ctx.test
    masks = {k: m for k, m in group_masks(ctx.arrays["columns"], X_test, ctx.settings["group_by"]).items() if m.any()}
    W = ctx.weights
    loss = ctx.full.loss
    losses = np.atleast_2d(loss.per_example_value(W, X_test, y_test))  # (draws, n_test)
    correct = ((W @ X_test.T) >= 0) == (y_test > 0)
    tilt = float(ctx.hyper.get("tilt", 0.0))
    tilted = Problem(ctx.train.X, ctx.train.y, Tilted(tilt, base=loss), ctx.train.l2)
    out = {key: [] for key in ("worst_group_loss", "worst_loss_group", "worst_group_accuracy",
                               "worst_accuracy_group", "tilted_objective")}
    for d in range(W.shape[0]):
        group_loss = {k: float(losses[d, m].mean()) for k, m in masks.items()}
        group_acc = {k: float(correct[d, m].mean()) for k, m in masks.items()}
        worst_loss = max(group_loss, key=group_loss.get)
        worst_acc = min(group_acc, key=group_acc.get)
        out["worst_group_loss"].append(group_loss[worst_loss])
        out["worst_loss_group"].append(worst_loss)
        out["worst_group_accuracy"].append(group_acc[worst_acc])
        out["worst_accuracy_group"].append(worst_acc)
        out["tilted_objective"].append(float(tilted.value(W[d])))
    return {**out, "tilted_objective_t": tilt, "n_groups": len(masks),
            "smallest_group": int(min(m.sum() for m in masks.values()))}


# -- robust accuracy ---------------------------------------------------------------------------------

def radius_token(value) -> str:
    return f"{float(value):g}"


ATTACKS = ("all", "numeric")


def attack_coordinates(columns, attack: str) -> tuple[int, ...] | None:
    """The column indices an attack of kind ``attack`` may move (None: every column)."""
    if attack not in ATTACKS:
        raise ValueError(f"robust: attack must be one of {ATTACKS}; got {attack!r}")
    columns = [str(c) for c in columns]
    if attack == "all":
        return None
    picked = tuple(j for j, c in enumerate(columns) if "=" not in c and c != "bias")
    if not picked:
        raise ValueError("robust: attack 'numeric' found no numeric column among the prepared columns")
    return None if len(picked) == len(columns) else picked


@metric_hook("robust")
def robust(ctx: FitContext) -> dict:
    from ..losses import robust_accuracy

    X_test, y_test = ctx.test
    coordinates = attack_coordinates(ctx.arrays["columns"], ctx.settings.get("attack", "all"))
    trained = ctx.hyper.get("attack_coordinates")
    trained = None if trained is None or len(trained) == X_test.shape[1] else tuple(sorted(int(j) for j in trained))
    radius = float(ctx.hyper.get("radius", 0.0))
    if "attack_coordinates" in ctx.hyper and radius > 0 and trained != coordinates:
        raise ValueError(f"robust: the fit was trained against the attack on columns {trained} but is measured "
                         f"against {coordinates} (attack {ctx.settings.get('attack', 'all')!r})")
    out = {"train_radius": radius}
    for r in ctx.settings["test_radii"]:
        out[f"robust_accuracy_{radius_token(r)}"] = np.atleast_1d(
            robust_accuracy(ctx.weights, X_test, y_test, r, coordinates))
    return out


# -- population excess risk --------------------------------------------------------------------------

def _population_applies(settings: dict, dataset: str) -> bool:
    from ..datasets import synthetic

    mine, theirs = synthetic.parse(dataset), synthetic.parse(settings["dataset"])
    if mine is None or theirs is None or mine[0] != theirs[0] or mine[2] != theirs[2]:
        return False
    if mine[1] > int(settings["start"]):
        raise ValueError(f"population rows start at {settings['start']} but dataset {dataset} trains on its first "
                         f"{mine[1]} rows: the population would include training rows")
    return True


def _population_needs(settings: dict, spec: dict) -> dict:
    if not _population_applies(settings, spec["dataset"]):
        return {}
    return {"population": (settings["dataset"], spec["profile"])}


@metric_hook("population", needs=_population_needs)
def population(ctx: FitContext) -> dict:
    from .. import solvers
    from ..losses import to_label_form
    from ..problem import Problem

    draws = ctx.weights.shape[0]
    if not _population_applies(ctx.settings, ctx.spec["dataset"]):
        return {"population_excess_risk": np.full(draws, np.nan), "n_population": 0}
    arrays, start = ctx.data["population"], int(ctx.settings["start"])
    key = ("population", start, ctx.full.loss.labels, ctx.train.l2, ctx.weights.shape[1])
    if key not in ctx.cache:
        y = to_label_form(arrays["y01"][start:], ctx.full.loss.labels)
        P = Problem(np.ascontiguousarray(arrays["X"][start:], dtype=float), y, ctx.full.loss, ctx.train.l2)
        ctx.cache[key] = (P, float(solvers.lbfgs(P, gtol=1e-10).fun))
    P, best = ctx.cache[key]
    excess = np.array([P.value(w) for w in ctx.weights]) - best  # one draw at a time: ~10⁶ rows
    return {"population_excess_risk": excess, "n_population": int(P.n)}


# -- curvature at the optimum ------------------------------------------------------------------------

@metric_hook("curvature")
def curvature(ctx: FitContext) -> dict:
    from .. import solvers

    key = ("curvature", ctx.split.fold, ctx.split.repeat, ctx.train.n, ctx.train.l2)
    if key not in ctx.cache:
        res = solvers.lbfgs(ctx.train, gtol=1e-10)
        ctx.cache[key] = (float(np.trace(solvers.glm_hessian(ctx.train, res.x)) / ctx.train.p), float(res.gap_bound))
    value, gap = ctx.cache[key]
    return {"curvature": value, "optimum_gap_bound": gap}


# -- measured solver speed ---------------------------------------------------------------------------

@metric_hook("solver_speed")
def solver_speed(ctx: FitContext) -> dict:
    from ..algorithms.blackbox import speed
    from .seeds import cell_algorithm, derive_seed

    if ctx.result_extra.get("solver") not in speed.MEASURED:
        return {}
    if ctx.optimum is None:
        raise ValueError("solver_speed needs the certified optima of the training rows: a cell of a convex model "
                         "whose experiment solves them")
    key = ("solver_speed", cell_algorithm(ctx.spec), ctx.split.fold, ctx.split.repeat)
    if key not in ctx.cache:
        seed = derive_seed(ctx.spec["seed"], "solver_speed", ctx.spec["paper"], ctx.spec["experiment"],
                           ctx.spec["dataset"], ctx.spec["model"]["name"], *key[1:])
        ctx.cache[key] = speed.measure(ctx.train, ctx.result_extra, ctx.hyper, f_star=float(ctx.optimum["F_star"]),
                                       rng=np.random.default_rng(seed),
                                       sgd_budget=float(ctx.settings.get("sgd_budget", 20.0)))
    return dict(ctx.cache[key])
