"""The training pipeline: ``train(X, y, config, on_progress) -> ObliqueTree``.

Min-max (or robust) scaling, multi-start (start 0 from CART, the others random) with all starts in one tensor program
(``optimize.run_stages``), best-of by hard training loss, node refits (``node_refit``: after sparse and budgeted
fits), optional subtree polish (``polish``), and the final ``ObliqueTree`` in the data's original units, its splits that send
every training row one way collapsed (``model.prune``).
"""

from __future__ import annotations

import copy
import time
from dataclasses import asdict, dataclass, replace
from typing import Sequence

import numpy as np
import torch

from get_core.budget import (CART_SHARE, LOGISTIC_SHARE, MAX_FINISH_SHARE, POLISH_SHARE, REFIT_SHARE, Budget,
                             Counting, counting, now)
from get_core.engine import classes as class_task
from get_core.engine import leaves, logistic
from get_core.config import GETConfig, polishes, soft_rows
from get_core.engine.memory import max_starts, refuse_oversized_fit
from get_core.engine.node_refit import BUDGETED_PASSES, refit_nodes
from get_core.data.columns import ROBUST_PERCENTILES
from get_core.metrics import target_span
from get_core.engine.optimize import (Problems, alpha_schedule, budgeted, initial_params, repeatable, resolve_device,
                                      run_stages)
from get_core.engine.plan import Plan, fit_header, record, replay_config, replayed
from get_core.engine.polish import polish
from get_core.engine.starts import cart_splits
from get_core.engine.progress import ProgressCallback, Reporter
from get_core.engine.race import Race
from get_core.engine.soft import LOGISTIC, Params
from get_core.model import routing
from get_core.model.prune import collapse_dead_splits
from get_core.model.tree import CLASS_LEAVES, LOGISTIC_FIELDS, ObliqueTree, logistic_proba

#: Robust scaling maps a feature's whole range to at most this many units (values up to data.MAX_ABS stay finite).
MAX_ROBUST_STRETCH = 1e6


@dataclass(frozen=True)
class MinMax:
    """Min-max scaling to [0, 1] learned on the training data (the paper's preprocessing)."""

    x_min: np.ndarray
    x_scale: np.ndarray
    y_min: float
    y_scale: float

    @classmethod
    def fit(cls, X: np.ndarray, y: np.ndarray, scaling: str = "minmax") -> "MinMax":
        """``scaling="robust"`` maps each feature's 1st-99th percentiles to [0, 1] instead of its range (min-max
        where those coincide), so a few far outliers cannot squeeze the other rows into a sliver of [0, 1] where
        the sigmoid is flat at every alpha and GET's splits hardly move; trees are affine-invariant per feature,
        so either is the same model class."""
        x_min, y_min = X.min(axis=0), float(y.min())
        x_range = X.max(axis=0) - x_min
        if scaling == "robust":
            low, high = np.percentile(X, ROBUST_PERCENTILES, axis=0)
            span = np.maximum(high - low, x_range / MAX_ROBUST_STRETCH)  # float32 keeps every scaled value finite
            x_min, x_range = np.where(high > low, low, x_min), np.where(high > low, span, x_range)
        return cls(x_min, np.where(x_range > 0, x_range, 1.0), y_min, target_span(y))

    def transform(self, X: np.ndarray, y: np.ndarray | None = None):
        Xs = (X - self.x_min) / self.x_scale
        return Xs if y is None else (Xs, (y - self.y_min) / self.y_scale)


def make_generator(random_state: int | None) -> torch.Generator:
    return torch.Generator().manual_seed(int(fresh_seed() if random_state is None else random_state))


def fresh_seed() -> int:
    """A seed from fresh entropy."""
    return int(np.random.SeedSequence().entropy % (2 ** 63))


def train(X: np.ndarray, y: np.ndarray, config: GETConfig, on_progress: ProgressCallback | None = None,
          feature_names: Sequence[str] | None = None, warm_start: ObliqueTree | None = None,
          sample_weight: np.ndarray | None = None, classes: Sequence | None = None,
          class_loss: str | None = None, replay_plan: dict | None = None,
          groups: np.ndarray | None = None) -> ObliqueTree:
    """Fit one oblique regression tree by GET; see the module docstring. Returns it in the data's original units.
    A time budget counts the seconds the fit was not kept waiting for a core (``budget.counting``).

    ``warm_start`` (a tree of ``config.depth`` on the same features, e.g. one fitted on a subset of these rows) takes
    start 0's place, before the CART start; the result is never worse on X, y than that tree's splits.
    ``classes`` (the C labels, ``np.unique`` order) makes it a classification tree: y then holds each row's class
    index 0..C-1, and ``class_loss`` is the soft loss per leaf (``classes``; None: ``soft.LOGISTIC`` for logistic
    leaves when ``logistic.SOFT_PHASE``, else ``classes.SOFT_LOSS``). ``sample_weight`` (n,) >= 0, not all 0.
    A budgeted fit records every decision it took from the clock in ``tree.meta["plan"]`` (``plan``; with
    ``random_state=None`` it draws a seed and records it); ``replay_plan``, such a record, makes the fit take them
    from it instead (its budget and seed where ``config`` leaves them None), and so return the recorded tree.
    ``groups`` (p,), engine column -> raw column (``ObliqueTree.groups``): ``max_split_features`` counts groups.
    """
    wall, cpu0 = time.monotonic(), time.process_time()
    with counting() as clock, repeatable(resolve_device(config.device)):
        tree = _train(X, y, config, on_progress, feature_names, warm_start, sample_weight, classes, class_loss,
                      replay_plan, groups)
        tree.meta["fit_seconds"] = time.monotonic() - wall
        tree.meta.update(cpu_record(clock, time.process_time() - cpu0, tree.meta["fit_seconds"], config))
    return tree


def _train(X: np.ndarray, y: np.ndarray, config: GETConfig, on_progress: ProgressCallback | None,
           feature_names: Sequence[str] | None, warm_start: ObliqueTree | None, sample_weight: np.ndarray | None,
           classes: Sequence | None, class_loss: str | None, replay_plan: dict | None,
           groups: np.ndarray | None = None) -> ObliqueTree:
    """``train``'s fit, its budget on the fit's clock."""
    X = np.asarray(X, dtype=np.float64)
    config = config if replay_plan is None else replay_config(config, replay_plan)
    if config.time_budget is not None and config.random_state is None:
        config = replace(config, random_state=fresh_seed())  # recorded with its plan: a replay draws the same
    n_classes = 0 if classes is None else len(classes)
    refuse_oversized_fit(*X.shape, config, n_classes)  # a sentence now rather than torch's "can't allocate" later
    t0 = now()
    whole = None if config.time_budget is None else Budget(config.time_budget, t0)
    logistic_leaves = classes is not None and config.class_leaf == "logistic"
    fit = whole.first(1.0 - LOGISTIC_SHARE) if whole is not None and logistic_leaves else whole
    if class_loss is None:
        class_loss = LOGISTIC if logistic_leaves and logistic.SOFT_PHASE else class_task.SOFT_LOSS
    if classes is None:
        if config.class_leaf != "constant":
            raise ValueError(f"class_leaf={config.class_leaf!r} is for classification; a regression tree's leaves are "
                             "set by leaf ('constant' or 'linear').")
        y = np.asarray(y, dtype=np.float64).ravel()
        scaling = MinMax.fit(X, y, config.scaling)
        Xs, ys = scaling.transform(X, y)
    else:
        if config.leaf != "constant":
            raise ValueError(f"A classification tree's leaves hold class shares or logistic models (class_leaf); "
                             f"leaf={config.leaf!r} is for regression.")
        scaling = MinMax.fit(X, np.array([0.0, 1.0]), config.scaling)
        Xs, ys = scaling.transform(X), class_task.one_hot(np.asarray(y).ravel(), len(classes))
    sw = None if sample_weight is None else _mean_one(sample_weight)
    device = resolve_device(config.device)
    gen = make_generator(config.random_state)
    data = [(Xs, ys) if sw is None else (Xs, ys, sw)]
    problems = Problems.from_arrays(data, device, class_loss=class_loss)
    problems.groups = None if groups is None else torch.as_tensor(groups, dtype=torch.long, device=device)
    warm = None if warm_start is None else rescaled_splits(warm_start, scaling, config.depth)
    header = None if fit is None else fit_header(X, y, config, device.type, sw, warm)
    decisions = Plan() if replay_plan is None else replayed(replay_plan, header)
    polishing = polishes(config, len(ys)) and class_loss != LOGISTIC  # both judge by class shares
    most_starts = None if fit is None else max_starts(*X.shape, config, n_classes)
    planned, race, refit_deadline = _planned(problems, config, polishing, gen, fit, decisions,
                                             protected=1 + (warm is not None), most_starts=most_starts)
    cart_data = data if fit is None else _cart_rows(data, config, CART_SHARE * fit.seconds, decisions)
    params = initial_params(problems, cart_data, planned, config.depth, gen, warm=warm)
    alphas = alpha_schedule(planned.n_starts, planned, gen)
    y_var = _total_variance(ys, sw)
    span = (0.0, 0.5 if polishing else 1.0)
    reporter = Reporter(on_progress, y_var, "optimize", span)
    result = run_stages(problems, params, alphas, planned, planned.n_starts, reporter, race)
    tree = tree_from_params(result.best, scaling, feature_names, config, Xs, ys, classes, sw, scaled=True)
    k = min(config.max_split_features or X.shape[1], X.shape[1])
    if ((k < X.shape[1] or race is not None) and not reporter.cancelled and class_loss != LOGISTIC
            and soft_rows(config.batch_rows, len(ys)) is None):  # not on sampled tables: its scans copy every row
        refit_nodes(tree, Xs, ys, k, config.linear_leaves, config.clip_leaves,
                    *((BUDGETED_PASSES, refit_deadline) if race is not None else ()), sample_weight=sw,
                    decisions=decisions, scaled=True, first_by=None if fit is None else fit.end)
    tree.meta.update(
        config={k: (list(v) if isinstance(v, tuple) else v) for k, v in asdict(planned).items()},
        alphas=alphas.tolist(), device=str(device), optimize_seconds=now() - t0,
        cancelled=reporter.cancelled,
    )
    if polishing and not reporter.cancelled and (fit is None or decisions.answer(
            "polish", lambda: fit.left() > 0, lambda v: isinstance(v, bool))):  # a race cut short leaves it time
        tree = polish(tree, X, y if classes is None else ys, config, gen,
                      Reporter(on_progress, y_var, "polish", (0.5, 1.0)), fit, sw, decisions)
    tree = collapse_dead_splits(tree, X)  # no rule that decides nothing, in the model and so in every view
    loss = float(np.mean(leaves.row_losses(tree, Xs, ys, sw, scaled=True)))
    tree.meta["train_brier" if tree.is_classifier else "train_mse_scaled"] = loss
    tree.meta["train_r2"] = 1.0 - loss / max(y_var, 1e-300)  # a classifier's: the share of the Gini impurity removed
    if logistic_leaves:
        trained = None if class_loss != LOGISTIC else tuple(t[0].double().cpu().numpy() for t in (
            result.best.intercepts, result.best.coefs))
        _fit_logistic_leaves(tree, Xs, np.argmax(ys, axis=1), sw, config.random_state, whole, decisions, trained)
    if tree.is_classifier:
        tree.meta["train_accuracy"] = train_accuracy(tree, Xs, ys, sw)
    if header is not None and not tree.meta["cancelled"]:  # a cancelled fit stopped where no plan can say
        decisions.finish()
        tree.meta["plan"] = record(header, decisions)
    return tree


def _fit_logistic_leaves(tree: ObliqueTree, Xs: np.ndarray, codes: np.ndarray, sw: np.ndarray | None,
                         random_state: int | None, whole: Budget | None, decisions: Plan,
                         trained: tuple[np.ndarray, np.ndarray] | None) -> None:
    """The tree's logistic leaves within what is left of the fit's budget ``whole`` (``budget.LOGISTIC_SHARE``):
    how many leaves it took up is a decision of the clock, recorded, and a replay takes up as many. ``trained``:
    the soft phase's leaf models, which the leaves not taken up keep."""
    if whole is None:
        logistic.fit_logistic_leaves(tree, Xs, codes, sw, random_state, trained=trained)
        return
    tried = decisions.answer("logistic_leaves", lambda: logistic.fit_logistic_leaves(
        tree, Xs, codes, sw, random_state, budget=whole, trained=trained).meta["logistic_leaves_tried"],
        lambda v: isinstance(v, int) and 0 <= v <= tree.n_leaves)
    if decisions.replaying:
        logistic.fit_logistic_leaves(tree, Xs, codes, sw, random_state, limit=tried, trained=trained)


def train_accuracy(tree: ObliqueTree, Xs: np.ndarray, ys: np.ndarray, sw: np.ndarray | None) -> float:
    """A classification tree's (weighted) accuracy on scaled rows ``Xs`` with one-hot ``ys``: its leaves' classes, or
    with logistic leaves each row's most probable class."""
    leaf = routing.leaves(tree, Xs, scaled=True) - tree.n_leaves
    predicted = (np.argmax(logistic_proba(tree, Xs, leaf), axis=1) if tree.has_logistic_leaves
                 else tree.leaf_class_index[leaf])
    return float(np.average(predicted == np.argmax(ys, axis=1), weights=sw))


def with_class_leaves(tree: ObliqueTree, X: np.ndarray, codes: np.ndarray,
                      sample_weight: np.ndarray | None) -> ObliqueTree:
    """A copy of the logistic-leaf ``tree`` that keeps only its leaves' class shares, fitted on the rows (X, class
    indices ``codes``) of its leaves: the same splits with the other leaf type (``meta["leaf_variant"]``), at no
    fit's cost."""
    variant = copy.deepcopy(tree)
    for name in LOGISTIC_FIELDS:
        setattr(variant, name, None)
    for key in ("leaf_strengths", "logistic_leaves_tried"):
        variant.meta.pop(key, None)
    sw = None if sample_weight is None else _mean_one(sample_weight)
    variant.meta["config"] = {**variant.meta.get("config", {}), "class_leaf": "constant"}
    variant.meta.update(leaf_variant=True, train_accuracy=train_accuracy(
        variant, variant.scale_X(X), class_task.one_hot(codes, variant.n_classes), sw))
    return variant


def logistic_model(X: np.ndarray, y: np.ndarray, config: GETConfig, classes: Sequence,
                   feature_names: Sequence[str] | None = None, sample_weight: np.ndarray | None = None) -> ObliqueTree:
    """Depth 0 with logistic leaves: one multinomial logistic model on the min-max scaled inputs (``logistic``), held
    as a depth-1 tree whose split has no terms (0 <= 0: every row goes left) and whose right leaf repeats the left
    one, so every reader, export and model file of trees takes it as it is. ``config`` gives the scaling and seed."""
    X = np.asarray(X, dtype=np.float64)
    wall = time.monotonic()
    scaling = MinMax.fit(X, np.array([0.0, 1.0]), config.scaling)
    Xs, ys = scaling.transform(X), class_task.one_hot(np.asarray(y).ravel(), len(classes))
    sw = None if sample_weight is None else _mean_one(sample_weight)
    p = X.shape[1]
    no_split = Params(torch.zeros(1, 1, p, dtype=torch.float64), torch.zeros(1, 1, dtype=torch.float64), None, None)
    tree = tree_from_params(no_split, scaling, feature_names, config, Xs, ys, classes, sw, scaled=True)
    logistic.fit_logistic_leaves(tree, Xs, np.argmax(ys, axis=1), sw, config.random_state)
    for name in ("logit_intercepts", "logit_coefs", "logit_mix"):
        getattr(tree, name)[1] = getattr(tree, name)[0]
    tree.leaf_proba[1] = tree.leaf_proba[0]
    tree.meta["leaf_strengths"][1] = tree.meta["leaf_strengths"][0]
    tree.meta.update(config={**asdict(replace(config, depth=1, class_leaf="logistic")), "alpha_range": list(
        config.alpha_range)}, single_model=True, fit_seconds=time.monotonic() - wall, cancelled=False,
        train_accuracy=train_accuracy(tree, Xs, ys, sw))
    return tree


#: A budgeted fit whose thread ran less than this share of its wall time (it waited for a core the rest) was
#: starved: its budget's clock ran at its floor (``budget.STRETCH``), so it bought less search than on a free machine
#: (under 0.5: less than 0.9 of it); the app says so.
STARVED_SHARE = 0.5


def cpu_record(clock: Counting, cpu_seconds: float, wall_seconds: float, config: GETConfig) -> dict:
    """``cpu_share``: the share of the fit's wall seconds its thread was not kept waiting for a core
    (``Counting.run_share``; where the machine does not say, the process's CPU seconds over the wall seconds its
    torch threads could have run), and for a budgeted fit ``starved`` (under ``STARVED_SHARE``)."""
    share = clock.run_share()
    if share is None:
        share = cpu_seconds / max(wall_seconds * torch.get_num_threads(), 1e-9)
    return {"cpu_share": share, **({"starved": share < STARVED_SHARE} if config.time_budget is not None else {})}


#: What follows a budgeted race on every row (the tree's float64 routing and leaves, its training loss, a
#: classifier's accuracy), in one-start hard checkpoints as the probe timed them; the race's deadline comes at least
#: that much before the optimization's end, at most ``budget.MAX_FINISH_SHARE`` of its seconds (on 1,000,000 rows of
#: 50 classes those passes take seconds).
FINISH_CHECKPOINTS = 3
CART_PROBE_ROWS = 2_000


def _cart_rows(data: list[tuple[np.ndarray, ...]], config: GETConfig, seconds: float,
               decisions: Plan) -> list[tuple[np.ndarray, ...]]:
    """Each problem's rows for the CART start of a budgeted fit: all of them, or the most that a CART fits in
    ``seconds`` on the fit's clock (``decisions``' "cart_rows" answer, ``_affordable_rows``), drawn without
    replacement (by ``random_state``, in their order)."""
    rng = np.random.default_rng(config.random_state)
    chosen = []
    for part in data:
        n = len(part[1])
        if n > CART_PROBE_ROWS:
            rows = decisions.answer("cart_rows", lambda: _affordable_rows(part, config, seconds),
                                    lambda v: isinstance(v, int) and CART_PROBE_ROWS <= v <= n)
            if rows < n:
                part = tuple(a[np.sort(rng.choice(n, rows, replace=False))] for a in part)
        chosen.append(part)
    return chosen


def _affordable_rows(part: tuple[np.ndarray, ...], config: GETConfig, seconds: float) -> int:
    """The rows of ``part`` a CART start fits in ``seconds`` on the fit's clock (timed on ``CART_PROBE_ROWS`` of
    them drawn by their own generator, its cost taken as rows x log(rows)), at least ``CART_PROBE_ROWS``."""
    n = len(part[1])
    probe = np.sort(np.random.default_rng([config.random_state, 1]).choice(n, CART_PROBE_ROWS, replace=False))
    clock = now()
    cart_splits(*(a[probe] for a in part[:2]), config.depth, config.random_state,
                None if len(part) < 3 else part[2][probe])
    per_row = max(now() - clock, 1e-9) / CART_PROBE_ROWS
    return int(min(n, max(CART_PROBE_ROWS, seconds / per_row * np.log(CART_PROBE_ROWS) / np.log(n))))


def _mean_one(sample_weight: np.ndarray) -> np.ndarray:
    """Sample weights rescaled to mean 1, so a weighted sum of row losses over n is a weighted mean."""
    sw = np.asarray(sample_weight, dtype=np.float64).ravel()
    return sw * (len(sw) / sw.sum())


def _total_variance(ys: np.ndarray, sw: np.ndarray | None) -> float:
    """The loss of the best constant (weighted): the target's variance, or for one-hot rows the summed variance
    of the class indicators, 1 - sum_c share_c^2 (the root's Gini impurity), from the shares alone (no (n, C) pass
    of squares: 1.1 s of a 20-s fit at 1,000,000 rows of 50 classes)."""
    mean = np.average(ys, axis=0, weights=sw)
    if ys.ndim == 2:
        return float(1.0 - np.square(mean).sum())
    return float(np.average((ys - mean) ** 2, weights=sw))


def _planned(problems: Problems, config: GETConfig, polishing: bool, gen: torch.Generator, fit: Budget | None,
             decisions: Plan, protected: int, most_starts: int | None = None
             ) -> tuple[GETConfig, Race | None, float | None]:
    """With the ``fit``'s budget: the starts and epochs a race fills it with (``race``), the race, and when the node
    refit after it should end (the race leaves it ``REFIT_SHARE`` of the optimization's seconds); else ``config`` as
    given, no race and no deadline. ``protected``: how many first starts (warm, CART) the race never drops.
    ``polishing``: a polish follows, which takes the last ``POLISH_SHARE`` of the budget. The race leaves the node
    refit its share, or the passes over every row that follow it (``FINISH_CHECKPOINTS``) their time where that is
    more (a large table, where no node refit runs); there it stops, however late it runs, in time for those passes
    (at 1,000,000 rows of 50 classes it ran to the optimization's end and they followed it), elsewhere the node
    refit's share takes a late race's overrun. The race's clock-dependent
    decisions go through ``decisions``. ``most_starts``: the most starts the race may take in memory
    (``memory.max_starts``)."""
    if fit is None:
        return config, None, None
    optimizing = fit.first(1.0 - POLISH_SHARE) if polishing else fit
    left = optimizing.left()  # before the probes: their time comes out of the budget
    planned, race_plan, costs = budgeted(problems, config, config.depth, left * (1.0 - REFIT_SHARE), gen, decisions,
                                         most_starts=most_starts)
    finish = 0.0 if costs is None else min(FINISH_CHECKPOINTS * costs.seconds(0, 1, 1), MAX_FINISH_SHARE * left)
    race = Race(race_plan, costs, optimizing.end - max(left * REFIT_SHARE, finish),
                optimizing.seconds * (1.0 - REFIT_SHARE), protected, decisions,
                stop_by=None if soft_rows(config.batch_rows, int(problems.n_rows.max())) is None
                else optimizing.end - finish)
    return planned, race, optimizing.end


def rescaled_splits(tree: ObliqueTree, scaling: MinMax, depth: int) -> Params:
    """``tree``'s hyperplanes as split parameters in ``scaling``'s [0, 1] units (same regions of feature space)."""
    if tree.depth != depth or tree.n_features != len(scaling.x_min):
        raise ValueError(f"warm_start must be a depth-{depth} tree on {len(scaling.x_min)} features; got depth "
                         f"{tree.depth} on {tree.n_features}.")
    a, c = map(np.array, zip(*(tree.split_in_original_units(t) for t in range(1, tree.n_branches + 1))))
    return scaled_splits(a, c, scaling, torch.float32)


def scaled_splits(a: np.ndarray, c: np.ndarray, scaling: MinMax, dtype: torch.dtype) -> Params:
    """Splits ``a·x <= c`` (original units; a (N, p), c (N,)) as one model's split parameters in ``scaling``'s
    [0, 1] units: with x = x_min + x_scale·u the same split reads (a·x_scale)·u <= c - a·x_min."""
    return Params(torch.as_tensor((a * scaling.x_scale)[None], dtype=dtype),
                  torch.as_tensor((c - a @ scaling.x_min)[None], dtype=dtype), None, None)


def tree_from_params(best: Params, scaling: MinMax, feature_names: Sequence[str] | None, config: GETConfig,
                     X: np.ndarray, y_scaled: np.ndarray, classes: Sequence | None = None,
                     sample_weight: np.ndarray | None = None, scaled: bool = False) -> ObliqueTree:
    """The ObliqueTree of model 0 of ``best``, leaves refit in float64 from the tree's own hard routing (a
    classifier's with ``classes``: y_scaled one-hot). ``scaled``: X is already in ``scaling``'s units."""
    weights = best.weights[0].double().cpu().numpy()
    p, L = weights.shape[1], weights.shape[0] + 1
    labels = {} if classes is None else dict(
        classes=list(classes), leaf_proba=np.full((L, len(classes)), 1.0 / len(classes)),
        node_counts=np.zeros((2 * L - 1, len(classes))))
    tree = ObliqueTree(weights, best.thresholds[0].double().cpu().numpy(), np.zeros(L), np.zeros((L, p)),
                       np.zeros(2 * L - 1, dtype=np.int64), np.full(2 * L - 1, np.nan), scaling.x_min,
                       scaling.x_scale, scaling.y_min, scaling.y_scale,
                       list(feature_names) if feature_names is not None else [],
                       config.leaf if classes is None else CLASS_LEAVES, **labels)
    return leaves.refit_tree_leaves(tree, X, y_scaled, config.linear_leaves, config.clip_leaves, sample_weight,
                                   scaled)
