"""Counterfactuals: the smallest change to one row that gives the prediction wanted, exactly, for an oblique tree.

Every leaf of an oblique tree is a polytope, the half-spaces ``w·xs <= b`` (left) and ``w·xs > b`` (right) along its
path, so the nearest row that lands in a leaf whose output meets the goal is a small linear program per leaf
(Carreira-Perpiñán and Hada, "Counterfactual Explanations for Oblique Decision Trees: Exact, Efficient Algorithms",
AAAI 2021). A linear leaf adds one more linear constraint: its line, clamped to the leaf's bounds, must land in the
goal; a logistic leaf (issue 52) adds C-1: the wanted class's logit less each other class's at least 0 (its
probabilities, (1 - m) softmax + m / C, keep the logits' order), so the programs stay exact. ``counterfactual``
searches the tree best first instead of solving every leaf: a node's lower bound is the cost of the dearest single
half-space on its path (a fractional knapsack: exact for one half-space within the bounds),
raised to the exact cost of the node's own polytope once the node is reached, and a subtree whose bound cannot beat
the best answer found so far is never opened. Programs are solved by HiGHS: ``scipy.optimize.linprog`` for L1 and
L-infinity, ``scipy.optimize.milp`` when integers enter (a cap on the number of changed features; one-hot categories,
which switch whole, never to a half of two). Every answer is confirmed by ``predict``: right branches are strict, so
an answer keeps a small margin from the splits, widened if rounding still lands it on the wrong side.

Answers that hold when typed back: each numeric feature has a grid step (``resolution``; by default a power of ten,
a thousandth to a ten-thousandth of its span: 1 for a span of 2,654, 0.01 for 30) and each answer's values lie on
it, so they are written exactly with that many decimals. The programs keep every split, and a linear leaf's goal,
one step per free feature away (the margin, in the feature's own units: every row within one step of the program's
optimum in each free feature lies in the same leaf); snapping moves a value at most half a step, so every row within
half a step of the answer, in each free feature, gets the same leaf and meets the goal. The price is optimality:
the answer is the nearest row of the leaves *shrunk* by the margin, snapped, so it can be farther than the exact
infimum (on the leaf's rim, which a display's rounding could push across) by the margin's cost, and a leaf thinner
than two steps (a sliver) holds no answer at all. ``resolution=0`` gives the exact nearest row instead, a hair
(``MARGINS``) inside. Whole-number features take whole values exactly (a mixed-integer program), within a margin
of ``WHOLE_RADIUS``.

Support: an answer in a leaf where few training rows fell rests on little. Leaves with fewer than ``min_support``
training rows (``ObliqueTree.n_samples``) hold no answer unless the caller lowers it (trees that record no counts
skip the check); each answer carries its leaf's rows, class shares or target mean and range (``Support``), and,
with ``reference`` rows, the distance to the nearest of them that the model gives the wanted outcome.

Units: the programs work in the model's scaled units (``xs = (x - x_min) / x_scale``, where splits live); distances
are reported in cost units: by default a numeric feature's change divided by its spread (its standard deviation over
``reference`` rows when given, else the span the model scales it by: the training range under min-max scaling, the
1st-99th percentiles under robust scaling) and a category switch costing 1. Bounds default to that span as well,
widened to hold the row's own value, so a feature left alone is always allowed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from get_core.data.columns import DataError
from get_core.data.encoding import Encoding
from get_core.model import model_file
from get_core.model.counterfactual_programs import Goal, Group, Line, Space, grid_above, on_step, path_to, search
from get_core.model.tree import ObliqueTree

NORMS = ("l1", "linf")
DIRECTIONS = ("increase", "decrease")
#: Leaves with fewer training rows than this hold no answer unless the caller lowers it: the engine's own floor for a
#: leaf with a model of its own (``engine.leaves.MIN_LEAF_ROWS``); a leaf of two or three rows is a quirk of the fit.
MIN_SUPPORT = 10
#: A feature's default grid step: the power of ten this many places below its span's leading digit.
GRID_PLACES = 3

class CounterfactualError(DataError):
    """No row meets the goal under the constraints given, or the request itself is malformed; the message says
    which and what to change."""


@dataclass(frozen=True)
class Change:
    """One feature the answer changes: a numeric model input (``change`` = needed - now) or a categorical column
    switching level (``now`` and ``needed`` are levels, ``change`` None; ``now`` None for a level training never had)."""

    feature: str
    now: float | str | None
    needed: float | str
    change: float | None
    #: the values of this feature, the others as the answer has them, that keep its leaf and goal: (low, high), on
    #: the feature's grid and confirmed by ``predict``; None for a category
    keeps: tuple[float, float] | None = None
    #: the grid step ``needed`` lies on (1: a whole number; 0: none, written in full)
    step: float = 0.0


@dataclass(frozen=True)
class Support:
    """What an answer's leaf rests on: its training ``rows`` (None when the tree records none), a classifier's class
    ``shares`` there, a regression leaf's training target ``mean`` and ``spread`` (a linear leaf's clamp, when it has
    one), ``nearest``: the distance from the answer to the nearest ``reference`` row the model gives the wanted
    outcome (None without reference rows or when none does), and ``few``: fewer rows than ``MIN_SUPPORT``."""

    rows: int | None
    shares: dict[Any, float] | None = None
    mean: float | None = None
    spread: tuple[float, float] | None = None
    nearest: float | None = None
    few: bool = False


@dataclass(frozen=True)
class Counterfactual:
    """The nearest row that meets the goal: ``x`` (model inputs, original units), its ``prediction`` and ``leaf``
    (heap id), its ``distance`` from the row asked about (cost units), ``changes`` (the dearest first) and what its
    leaf rests on (``support``)."""

    x: np.ndarray
    prediction: Any
    distance: float
    leaf: int
    changes: tuple[Change, ...]
    programs: int  # linear or mixed-integer programs solved on the way (the search's effort)
    support: Support | None = None


def counterfactual(model: Any, x: Any, goal: Any = None, *, locked: Iterable[str | int] | str = (),
                   bounds: Mapping[str | int, tuple[float | None, float | None]] | None = None,
                   max_changes: int | None = None, costs: Any = None, norm: str = "l1",
                   encoding: Encoding | None = None, reference: Any = None, leaf: int | None = None,
                   directions: Mapping[str | int, str] | None = None, integers: Iterable[str | int] | str = (),
                   resolution: float | Mapping[str | int, float] | None = None, min_support: int = MIN_SUPPORT,
                   n: int | None = None) -> Counterfactual | tuple[Counterfactual, ...]:
    """The smallest change to row ``x`` that makes ``model`` predict ``goal``, on each feature's grid and a margin
    inside its leaf (see the module docstring for both and what they cost in optimality).

    Parameters
    ----------
    model : ObliqueTree or fitted estimator
        The tree, or an estimator holding it in ``tree_``.
    x : array-like of shape (n_features,)
        The row, model inputs in the model's feature order and original units.
    goal : tuple (low, high) or class label
        Regression: the range the prediction must land in, either end None (``(None, 40.0)``: at most 40).
        Classification: the class the prediction must be. May be None only with ``leaf``.
    locked : iterable of str or int, or one str
        Features that may not change: model input names or indices, or categorical columns (all their levels).
    bounds : mapping, optional
        Feature -> (low, high) in original units that the answer must respect; a None end keeps the default, the
        span the model scales the feature by, widened to hold the row's value.
    max_changes : int, optional
        At most this many features change (a categorical column counts once); solved as a mixed-integer program.
    costs : mapping or array-like, optional
        Cost per original unit of each numeric feature (by name or as an array in feature order; for a categorical
        column by name, the cost of switching it). Default: 1 / spread (see the module docstring), switches 1.
    norm : {"l1", "linf"}
        The distance: the sum of the weighted changes, or the largest one.
    encoding : Encoding, optional
        How raw columns became model inputs, so one-hot columns switch whole; by default the one saved with the
        model (``model_file.model_encoding``), else every input is numeric.
    reference : array-like of shape (n, n_features), optional
        Rows (e.g. the training rows) whose standard deviations set the default costs.
    leaf : int, optional
        Only this leaf (heap id) may hold the answer: the shortest way into it (whatever its support).
    directions : mapping, optional
        Feature -> "increase" or "decrease": the only way it may move (numeric features).
    integers : iterable of str or int, or one str
        Numeric features that take whole numbers only (the row must hold one); solved as a mixed-integer program.
    resolution : 0, or mapping, optional
        The grid step of each numeric feature's answer (original units): by default a power of ten, ``GRID_PLACES``
        places below the span's leading digit; a mapping sets some; 0 turns the grid and its margin off everywhere.
    min_support : int
        Leaves with fewer training rows than this hold no answer (default ``MIN_SUPPORT``); 0 allows every leaf.
    n : int, optional
        Return the ``n`` nearest answers in distinct leaves, nearest first (fewer when fewer leaves hold one).

    Returns
    -------
    Counterfactual, or a tuple of them when ``n`` is given

    Raises
    ------
    CounterfactualError
        When the request is malformed or no row meets the goal under the constraints; the message says why.
    """
    tree = _tree_of(model)
    x = _row(tree, x)
    if norm not in NORMS:
        raise CounterfactualError(f"norm must be one of {NORMS}; got {norm!r}.")
    for value, what, least in ((max_changes, "max_changes", 1), (n, "n", 1), (min_support, "min_support", 0)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, np.integer))
                                  or value < least):
            raise CounterfactualError(f"{what} must be a whole number of at least {least}"
                                      f"{' (or None)' if what != 'min_support' else ''}; got {value!r}.")
    if encoding is None:
        encoding = _saved_encoding(tree)
    whole = _whole(tree, x, encoding, integers)
    space = _space(tree, x, encoding, set(_indices(tree, encoding, locked, "locked")), bounds or {},
                   _costs(tree, encoding, costs, reference), norm, max_changes, directions or {},
                   _grid(tree, encoding, resolution, whole), whole)
    wanted = _goal(tree, goal, leaf, min_support)
    found, programs = search(space, wanted, 1 if n is None else int(n))
    if not found:
        raise CounterfactualError(_blocked(tree, goal, leaf, space, min_support))
    reached = _reached(tree, wanted, reference)
    answers = tuple(_answer(space, wanted, new_x, distance, programs, reached, _all_groups(tree, encoding))
                    for new_x, distance, _ in found)
    return answers[0] if n is None else answers


def _answer(space: Space, goal: Goal, new_x: np.ndarray, distance: float, programs: int,
            reached: np.ndarray | None, groups: list[np.ndarray]) -> Counterfactual:
    """A found row as the caller reads it; the leaf as ``apply`` routes it (the search's screen agrees but for
    rounding on a split, which the margin rules out)."""
    tree = space.tree
    leaf = int(tree.apply(new_x[None])[0])
    nearest = None
    if reached is not None and len(reached):
        nearest = float(_distances(space, groups, reached, new_x).min())
    return Counterfactual(x=new_x, prediction=_plain(tree.predict(new_x[None])[0]), distance=distance, leaf=leaf,
                          changes=_changes(space, new_x, leaf, goal), programs=programs,
                          support=_support(tree, leaf, nearest))


def _reached(tree: ObliqueTree, goal: Goal, reference: Any) -> np.ndarray | None:
    """The ``reference`` rows the model gives the wanted outcome (None without reference rows)."""
    if reference is None:
        return None
    rows = np.asarray(reference, dtype=np.float64)  # its shape was checked with the costs
    rows = rows[np.all(np.isfinite(rows), axis=1)]
    return rows[goal.meets[tree.apply(rows) - tree.n_leaves] & goal.confirm(rows)] if len(rows) else rows


def _distances(space: Space, groups: list[np.ndarray], rows: np.ndarray, point: np.ndarray) -> np.ndarray:
    """(n,) distance from ``point`` to each row, as answers are measured: numeric inputs by their cost per unit, a
    categorical column by its switching cost where the levels differ."""
    in_groups = np.concatenate(groups) if groups else np.zeros(0, dtype=np.int64)
    numeric = np.setdiff1d(np.arange(space.tree.n_features), in_groups)
    parts = [space.costs[numeric] * np.abs(rows[:, numeric] - point[numeric])]
    parts += [(space.costs[g[0]] * np.any(rows[:, g] != point[g], axis=1))[:, None] for g in groups]
    weighted = np.hstack(parts)
    return weighted.sum(axis=1) if space.norm == "l1" else weighted.max(axis=1, initial=0.0)


def _support(tree: ObliqueTree, leaf: int, nearest: float | None) -> Support:
    """What ``leaf`` rests on (see ``Support``)."""
    rows = int(tree.n_samples[leaf - 1]) if _has_counts(tree) else None
    few = rows is not None and rows < MIN_SUPPORT
    if _is_classifier(tree):
        counts = tree.node_counts[leaf - 1] if tree.node_counts is not None else None
        shares = None if counts is None or counts.sum() <= 0 else {
            _plain(label): float(c / counts.sum()) for label, c in zip(tree.classes, counts)}
        return Support(rows, shares=shares, nearest=nearest, few=few)
    mean = tree.node_value_original(leaf)
    bounds = tree.leaf_bounds_original(leaf)
    return Support(rows, mean=float(mean) if np.isfinite(mean) else None,
                   spread=None if bounds is None else (float(bounds[0]), float(bounds[1])), nearest=nearest, few=few)


def _plain(value: Any) -> Any:
    """A numpy scalar as the Python value it holds (a label prints as 'B', never np.str_('B'))."""
    return value.item() if isinstance(value, np.generic) else value


# ---------------------------------------------------------------------------------------------- the request
def _tree_of(model: Any) -> ObliqueTree:
    if isinstance(model, ObliqueTree):
        return model
    tree = getattr(model, "tree_", None)
    if isinstance(tree, ObliqueTree):
        return tree
    raise CounterfactualError(f"model must be an ObliqueTree or a fitted GET estimator; got {type(model).__name__}"
                              + (" that is not fitted yet: call fit first." if hasattr(model, "fit") else "."))


def _row(tree: ObliqueTree, x: Any) -> np.ndarray:
    try:
        row = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError):
        raise CounterfactualError("x must be one row of numbers, the model's inputs in order.") from None
    if row.shape != (tree.n_features,):
        raise CounterfactualError(f"x must be one row of {tree.n_features} numbers (the model's inputs in order); "
                                  f"got shape {row.shape}.")
    bad = np.flatnonzero(~np.isfinite(row))
    if bad.size:
        raise CounterfactualError(f"x holds no usable value for feature '{tree.feature_names[bad[0]]}' "
                                  f"({row[bad[0]]}): give every feature a finite number.")
    return row


def _saved_encoding(tree: ObliqueTree) -> Encoding | None:
    try:
        return model_file.model_encoding(tree)
    except model_file.ModelFormatError:  # a hand-edited encoding: treat every input as numeric
        return None


def _names(tree: ObliqueTree, encoding: Encoding | None) -> dict[str, list[int]]:
    """Every name a caller may use for features: model inputs, and categorical columns (all their inputs)."""
    names = {name: [j] for j, name in enumerate(tree.feature_names)}
    for column, levels in (encoding.categories.items() if encoding is not None else ()):
        names[column] = [tree.feature_names.index(f"{column}={level}") for level in levels]
    return names


def _indices(tree: ObliqueTree, encoding: Encoding | None, keys: Iterable[str | int] | str, what: str) -> list[int]:
    """The model inputs ``keys`` name; one string is one feature (never read letter by letter)."""
    names, found = _names(tree, encoding), []
    if isinstance(keys, (str, int, np.integer)):
        keys = [keys]
    elif not isinstance(keys, Iterable):
        raise CounterfactualError(f"{what} must be a feature's name or a list of them; got {keys!r}.")
    for key in keys:
        if isinstance(key, (int, np.integer)) and not isinstance(key, bool):
            if not 0 <= key < tree.n_features:
                raise CounterfactualError(f"{what}: feature index {key} is out of range; the model has "
                                          f"{tree.n_features} features (0 to {tree.n_features - 1}).")
            found.append(int(key))
        elif isinstance(key, str) and key in names:
            found.extend(names[key])
        else:
            shown = ", ".join(f"'{n}'" for n in list(names)[:10]) + (" ..." if len(names) > 10 else "")
            raise CounterfactualError(f"{what}: '{key}' is not a feature of the model; its features are {shown}.")
    return found


def _costs(tree: ObliqueTree, encoding: Encoding | None, costs: Any, reference: Any) -> np.ndarray:
    """Cost per original unit of each model input; a categorical column's inputs hold its switching cost."""
    spread = tree.x_scale.copy()
    if reference is not None:
        std = np.std(np.asarray(reference, dtype=np.float64), axis=0)
        if std.shape != spread.shape:
            raise CounterfactualError(f"reference must hold rows of {tree.n_features} features; got shape "
                                      f"{np.shape(reference)}.")
        spread = np.where(std > 0, std, spread)
    per_unit = 1.0 / spread
    for column in (encoding.categories if encoding is not None else {}):
        per_unit[_names(tree, encoding)[column]] = 1.0
    if costs is None:
        return per_unit
    if isinstance(costs, Mapping):
        for key, value in costs.items():
            per_unit[_indices(tree, encoding, [key], "costs")] = _positive(value, f"costs['{key}']")
        return per_unit
    given = np.asarray(costs, dtype=np.float64)
    if given.shape != per_unit.shape:
        raise CounterfactualError(f"costs must be a mapping of features to costs or {tree.n_features} numbers; got "
                                  f"shape {given.shape}.")
    for j, value in enumerate(given):
        _positive(value, f"costs for '{tree.feature_names[j]}'")
    return given


def _whole(tree: ObliqueTree, x: np.ndarray, encoding: Encoding | None, integers: Iterable[str | int] | str
           ) -> list[int]:
    """The numeric inputs that take whole numbers; the row must hold one in each."""
    in_groups = {int(j) for g in _all_groups(tree, encoding) for j in g}
    found = _indices(tree, encoding, integers, "integers")
    for j in found:
        name = tree.feature_names[j]
        if j in in_groups:
            raise CounterfactualError(f"integers: '{name}' is a level of a categorical column, which switches whole "
                                      "already; name numeric features only.")
        if x[j] != np.round(x[j]):
            raise CounterfactualError(f"Feature '{name}' takes whole numbers, but the row holds {x[j]:g}: give it a "
                                      "whole number or leave it out of integers.")
    return sorted(set(found))


def _grid(tree: ObliqueTree, encoding: Encoding | None, resolution: Any, whole: list[int]) -> np.ndarray:
    """Per model input, the step its answer lies on (original units; 0: none): see the module docstring."""
    span = tree.x_scale
    with np.errstate(divide="ignore", invalid="ignore"):
        grid = np.where(np.isfinite(span) & (span > 0),
                        10.0 ** (np.floor(np.log10(np.where(span > 0, span, 1.0))) - GRID_PLACES), 0.0)
    grid = np.array([float(f"{g:.0e}") for g in grid])  # exact powers of ten (10.0 ** -5 is not 1e-05)
    in_groups = {int(j) for g in _all_groups(tree, encoding) for j in g}
    grid[list(in_groups)] = 0.0
    if isinstance(resolution, Mapping):
        for key, value in resolution.items():
            found = _indices(tree, encoding, [key], "resolution")
            if len(found) != 1 or found[0] in in_groups:
                raise CounterfactualError(f"resolution: '{key}' is a categorical column; a step applies to numeric "
                                          "features.")
            grid[found[0]] = _positive(value, f"resolution['{key}']")
    elif resolution is not None:
        if isinstance(resolution, bool) or not isinstance(resolution, (int, float)) or resolution != 0:
            raise CounterfactualError("resolution must be None (each feature's default step), 0 (no grid) or a "
                                      f"mapping of features to steps; got {resolution!r}.")
        grid[:] = 0.0
    grid[whole] = 1.0
    return grid


def _positive(value: Any, what: str) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = float("nan")
    if not (np.isfinite(number) and number > 0):
        raise CounterfactualError(f"{what} must be a finite number above 0; got {value!r}.")
    return number


def _leaves_meeting(tree: ObliqueTree, goal: Any, leaf: int | None, min_support: int = 0) -> np.ndarray:
    """(L,) bool: the leaves whose output can meet ``goal`` (a linear leaf: somewhere; ``_goal_lines`` then
    says where) on at least ``min_support`` training rows, restricted to ``leaf`` when given (whatever its rows)."""
    L = tree.n_leaves
    if leaf is not None and not (isinstance(leaf, (int, np.integer)) and L <= leaf < 2 * L):
        raise CounterfactualError(f"leaf must be a leaf's node number, {L} to {2 * L - 1}; got {leaf!r}.")
    if goal is None:
        if leaf is None:
            raise CounterfactualError("Say what the prediction should be: a goal range (low, high) or a class, "
                                      "or a leaf to reach.")
        meets = np.ones(L, dtype=bool)
    elif _is_classifier(tree):
        meets = _leaf_classes(tree) == _class_index(tree, goal)
        if tree.has_logistic_leaves:  # a logistic model's class changes within its leaf: its goal lines say where
            meets |= np.any(tree.logit_coefs != 0, axis=(1, 2))
    else:
        low, high = _goal_range(goal)
        lo, hi = _leaf_output_ranges(tree)
        meets = (hi >= low) & (lo <= high)
    if leaf is not None:
        meets &= np.arange(L, 2 * L) == leaf
    elif _has_counts(tree):
        meets &= tree.n_samples[L - 1:] >= min_support
    return meets


def _leaf_classes(tree: ObliqueTree) -> np.ndarray:
    """(L,) the class index each leaf predicts wherever a row lands in it: its largest share, or with logistic leaves
    its largest logit (meaningful for a leaf whose slopes are all 0, the same at every row)."""
    return np.argmax(tree.logit_intercepts, axis=1) if tree.has_logistic_leaves else tree.leaf_class_index


def _has_counts(tree: ObliqueTree) -> bool:
    """Whether the tree records its training rows per node (a hand-made tree may hold zeros)."""
    return bool(tree.n_samples[0] > 0)


def _is_classifier(tree: ObliqueTree) -> bool:
    return bool(getattr(tree, "is_classifier", False))


def _class_index(tree: ObliqueTree, goal: Any) -> int:
    label = goal.item() if isinstance(goal, np.generic) else goal
    if label not in tree.classes:
        shown = ", ".join(repr(_plain(c)) for c in tree.classes[:10])
        raise CounterfactualError(f"The goal {label!r} is not a class of this model; its classes are {shown}.")
    return list(tree.classes).index(label)


def _goal_range(goal: Any) -> tuple[float, float]:
    """(low, high) of a regression goal, open ends as infinities."""
    if isinstance(goal, (str, bytes)) or not isinstance(goal, Sequence) or len(goal) != 2:
        raise CounterfactualError(f"A regression goal is a range (low, high) of the prediction, either end None "
                                  f"(e.g. (None, 40.0) for 'at most 40'); got {goal!r}.")
    ends = []
    for end, missing in zip(goal, (-np.inf, np.inf)):
        try:
            ends.append(missing if end is None else float(end))
        except (TypeError, ValueError):
            ends.append(float("nan"))
    low, high = ends
    if low > high:
        raise CounterfactualError(f"The goal's low end ({low:g}) is above its high end ({high:g}): no prediction "
                                  "can be both; swap them.")
    if np.isnan(low) or np.isnan(high) or (np.isinf(low) and np.isinf(high)) \
            or low == np.inf or high == -np.inf:
        raise CounterfactualError(f"A regression goal needs low <= high, finite numbers or None, and at least one "
                                  f"end; got {goal!r}.")
    return low, high


def _leaf_output_ranges(tree: ObliqueTree) -> tuple[np.ndarray, np.ndarray]:
    """(L,) lowest and highest prediction each leaf can give, original units: a constant leaf's value, a linear
    leaf's clamp (unbounded where it has none)."""
    lo, hi = tree.leaf_lower.copy(), tree.leaf_upper.copy()
    constant = ~np.any(tree.leaf_coefs != 0, axis=1) | (tree.leaf_type == "constant")
    value = np.clip(tree.leaf_intercepts, tree.leaf_lower, tree.leaf_upper)
    lo[constant], hi[constant] = value[constant], value[constant]
    return tree.y_min + tree.y_scale * lo, tree.y_min + tree.y_scale * hi


# ---------------------------------------------------------------------------------------------- the row's freedom
def _space(tree: ObliqueTree, x: np.ndarray, encoding: Encoding | None, locked: set[int],
           bounds: Mapping[str | int, tuple[float | None, float | None]], costs: np.ndarray, norm: str,
           max_changes: int | None, directions: Mapping[str | int, str] | None = None, grid: np.ndarray | None = None,
           whole: Iterable[int] = ()) -> Space:
    """The programs' variables for row ``x``: what may move, which way, within which bounds, on which grid, at what
    cost."""
    groups = _groups(tree, x, encoding, locked, costs)
    in_groups = {int(j) for g in _all_groups(tree, encoding) for j in g}
    numeric = np.array([j for j in range(tree.n_features) if j not in locked and j not in in_groups], dtype=np.int64)
    low, high = _bounds(tree, x, encoding, bounds, locked, in_groups)
    for key, way in (directions or {}).items():
        found = _indices(tree, encoding, [key], "directions")
        if len(found) != 1 or found[0] in in_groups:
            raise CounterfactualError(f"directions: '{key}' is a categorical column; a direction applies to numeric "
                                      "features (lock the column to keep its level).")
        j, name = found[0], tree.feature_names[found[0]]
        if way not in DIRECTIONS:
            raise CounterfactualError(f"directions['{name}'] must be 'increase' or 'decrease'; got {way!r}.")
        if way == "increase":
            low[j] = max(low[j], x[j])
        else:
            high[j] = min(high[j], x[j])
        if low[j] > high[j]:
            raise CounterfactualError(f"Feature '{name}' may only {way} from {x[j]:g}, but its bounds are "
                                      f"[{low[j]:g}, {high[j]:g}]: widen them or drop the direction.")
    return Space(tree, x, numeric, groups, low, high, costs, norm, max_changes, grid, whole)


def _groups(tree: ObliqueTree, x: np.ndarray, encoding: Encoding | None, locked: set[int],
            costs: np.ndarray) -> list[Group]:
    """The one-hot columns that may switch (every one not locked), the row's level in each checked."""
    groups = []
    for column, inputs in zip(encoding.categories if encoding is not None else (), _all_groups(tree, encoding)):
        values = x[inputs]
        if not np.all((values == 0) | (values == 1)) or values.sum() > 1:
            raise CounterfactualError(f"Column '{column}' is one-hot encoded, so its inputs must be 0 or 1 with at "
                                      f"most one 1; x holds {values.tolist()}.")
        if set(inputs.tolist()) & locked:
            continue
        current = int(np.argmax(values)) if values.sum() == 1 else -1
        groups.append(Group(column, inputs, tuple(encoding.categories[column]), current, float(costs[inputs[0]])))
    return groups


def _all_groups(tree: ObliqueTree, encoding: Encoding | None) -> list[np.ndarray]:
    if encoding is None:
        return []
    names = _names(tree, encoding)
    return [np.array(names[column], dtype=np.int64) for column in encoding.categories]


def _bounds(tree: ObliqueTree, x: np.ndarray, encoding: Encoding | None, bounds: Mapping, locked: set[int],
            in_groups: set[int]) -> tuple[np.ndarray, np.ndarray]:
    """(low, high) of every input, original units: the model's span widened to hold x, then ``bounds``."""
    low = np.minimum(tree.x_min, x)
    high = np.maximum(tree.x_min + tree.x_scale, x)
    for key, pair in bounds.items():
        found = _indices(tree, encoding, [key], "bounds")
        if len(found) != 1 or found[0] in in_groups:
            raise CounterfactualError(f"bounds: '{key}' is a categorical column; bounds apply to numeric features "
                                      "(lock the column to keep its level).")
        j = found[0]
        name = tree.feature_names[j]
        if not (isinstance(pair, Sequence) and len(pair) == 2):
            raise CounterfactualError(f"bounds['{name}'] must be a pair (low, high), either None; got {pair!r}.")
        for end, target in zip(pair, (low, high)):
            if end is not None:
                try:
                    target[j] = float(end)
                except (TypeError, ValueError):
                    target[j] = np.nan
        if not (np.isfinite(low[j]) and np.isfinite(high[j]) and low[j] <= high[j]):
            raise CounterfactualError(f"bounds['{name}'] must be finite numbers with low <= high; got {pair!r}.")
        if j in locked and not low[j] <= x[j] <= high[j]:
            raise CounterfactualError(f"Feature '{name}' is locked at {x[j]:g}, outside its bounds "
                                      f"[{low[j]:g}, {high[j]:g}]: unlock it or widen the bounds.")
    return low, high


def _changes(space: Space, new: np.ndarray, leaf: int, goal: Goal) -> tuple[Change, ...]:
    """The moves from the row to ``new`` (in ``leaf``), the dearest first."""
    x, found = space.x, []
    for k, j in enumerate(space.numeric):
        if new[j] != x[j]:
            found.append((space.costs[j] * abs(new[j] - x[j]),
                          Change(space.tree.feature_names[j], float(x[j]), float(new[j]), float(new[j] - x[j]),
                                 keeps=_keeps(space, new, k, leaf, goal), step=float(space.grid[j]))))
    for g in space.groups:
        if np.any(new[g.inputs] != x[g.inputs]):
            now = g.levels[g.current] if g.current >= 0 else None
            found.append((g.cost, Change(g.column, now, g.levels[int(np.argmax(new[g.inputs]))], None)))
    found.sort(key=lambda item: -item[0])
    return tuple(change for _, change in found)


def _keeps(space: Space, new: np.ndarray, k: int, leaf: int, goal: Goal) -> tuple[float, float]:
    """The values of free numeric input ``numeric[k]``, the others as in ``new``, that keep ``leaf`` and the goal
    within the bounds: each split on the path (and a linear leaf's goal) is linear in it; the ends are taken to
    the grid inward and confirmed by ``predict`` (stepped inward while rounding on a split says otherwise)."""
    tree, j = space.tree, int(space.numeric[k])
    xs = (new - tree.x_min) / tree.x_scale
    low, high = float(space.x_low[k]), float(space.x_high[k])
    edges = []  # (value of the feature where a constraint's side changes, whether it caps the feature from above)
    for node, right in path_to(leaf):
        slope = tree.weights[node - 1, j] / tree.x_scale[j]
        if slope != 0:
            value = tree.weights[node - 1] @ xs - tree.thresholds[node - 1]
            edges.append((new[j] - value / slope, (slope > 0) != right))
    for line in goal.lines.get(leaf - tree.n_leaves, ()):
        slope = line.coefs[j] / tree.x_scale[j]
        if slope != 0:
            z = line.intercept + line.coefs @ xs
            edges += [(new[j] + (line.low - z) / slope, slope < 0), (new[j] + (line.high - z) / slope, slope > 0)]
    for edge, caps in edges:
        if np.isfinite(edge):
            low, high = (low, min(high, edge)) if caps else (max(low, edge), high)
    step = space.grid[j]

    def holds(value: float) -> bool:
        row = new.copy()
        row[j] = value
        return int(tree.apply(row[None])[0]) == leaf and bool(goal.confirm(row[None])[0])

    ends = []
    for end, inward in ((low, 1.0), (high, -1.0)):
        if step > 0:
            end = inward * grid_above(inward * end, step)
        for _ in range(4):
            if (end - new[j]) * inward >= 0 or holds(end):
                break
            end = on_step(end + inward * step, step) if step > 0 else end + (new[j] - end) * 1e-6
        ends.append(float(end) if (end - new[j]) * inward < 0 and holds(end) else float(new[j]))
    return ends[0], ends[1]


# ---------------------------------------------------------------------------------------------- the goal
def _goal(tree: ObliqueTree, goal: Any, leaf: int | None, min_support: int = 0) -> Goal:
    """The leaves that meet ``goal`` (or are ``leaf``) on at least ``min_support`` rows, their lines, and the check
    by ``predict``."""
    meets = _leaves_meeting(tree, goal, leaf, min_support)
    if not meets.any():
        if _leaves_meeting(tree, goal, leaf).any():
            raise CounterfactualError(_unsupported(tree, goal, min_support))
        raise CounterfactualError(_unreachable(tree, goal, leaf))
    if goal is None:
        return Goal(meets, {}, lambda rows: np.ones(len(rows), dtype=bool))
    if _is_classifier(tree):
        k = _class_index(tree, goal)
        label = tree.classes[k]
        return Goal(meets, _class_lines(tree, k, meets), lambda rows: tree.predict(rows) == label)
    low, high = _goal_range(goal)
    def within(rows: np.ndarray) -> np.ndarray:
        predicted = tree.predict(rows)
        return (low <= predicted) & (predicted <= high)

    return Goal(meets, _goal_lines(tree, goal, meets), within)


def _class_lines(tree: ObliqueTree, k: int, meets: np.ndarray) -> dict[int, tuple[Line, ...]]:
    """Per logistic leaf (index) with a model that may give class ``k``: class k's logit less each other class's,
    at least 0, which is where k has the largest probability ((1 - m) softmax + m / C keeps the logits' order;
    on a tie the first class wins, which the margins and ``predict``'s confirmation settle). Leaves without a
    model need none: they give k everywhere or were left out."""
    if not tree.has_logistic_leaves:
        return {}
    lines = {}
    for i in np.flatnonzero(meets & np.any(tree.logit_coefs != 0, axis=(1, 2))):
        b, W = tree.logit_intercepts[i], tree.logit_coefs[i]
        lines[int(i)] = tuple(Line(W[k] - W[c], float(b[k] - b[c]), 0.0, np.inf)
                              for c in range(tree.n_classes) if c != k)
    return lines


def _goal_lines(tree: ObliqueTree, goal: Any, meets: np.ndarray) -> dict[int, tuple[Line, ...]]:
    """Per linear leaf (index) that can meet a regression goal: its line, between the lowest and highest raw value
    for which the clamped line lands in the goal. Constant leaves need none: they meet it or were left out."""
    if tree.leaf_type != "linear":
        return {}
    low, high = _goal_range(goal)
    lowest, highest = _leaf_output_ranges(tree)
    lines = {}
    for i in np.flatnonzero(meets & np.any(tree.leaf_coefs != 0, axis=1)):
        # clip(z, lo, hi) >= low holds for every z when the clamp's low end does (compared as predict computes it:
        # in original units, so rounding cannot part the two), else iff z >= low; the same for high
        lines[int(i)] = (Line(tree.leaf_coefs[i], float(tree.leaf_intercepts[i]),
                              -np.inf if lowest[i] >= low else (low - tree.y_min) / tree.y_scale,
                              np.inf if highest[i] <= high else (high - tree.y_min) / tree.y_scale),)
    return lines


# ---------------------------------------------------------------------------------------------- sentences
def _describe_goal(tree: ObliqueTree, goal: Any) -> str:
    """The goal in words: "a prediction of at most 40", "class 'approved'"."""
    if _is_classifier(tree):
        return f"class {_plain(goal)!r}"
    low, high = _goal_range(goal)
    if np.isinf(low):
        return f"a prediction of at most {high:g}"
    if np.isinf(high):
        return f"a prediction of at least {low:g}"
    return f"a prediction between {low:g} and {high:g}"


def _unreachable(tree: ObliqueTree, goal: Any, leaf: int | None) -> str:
    """Why no leaf can meet the goal, whatever the row."""
    wanted = _describe_goal(tree, goal)
    if _is_classifier(tree):
        where = f"Leaf {leaf} does not predict" if leaf is not None else "No leaf of this tree predicts"
        return f"{where} {wanted}, so no row can get it: choose another class" + (" or leaf." if leaf else ".")
    lo, hi = _leaf_output_ranges(tree)
    if leaf is not None:
        i = leaf - tree.n_leaves
        span = f"{lo[i]:.4g}" if lo[i] == hi[i] else f"{lo[i]:.4g} to {hi[i]:.4g}"
        return f"Leaf {leaf} predicts {span}, never {wanted}: widen the goal or choose another leaf."
    low, high = _goal_range(goal)
    nearest = [f"{v:.4g}" for v in (hi[hi < low].max(initial=-np.inf), lo[lo > high].min(initial=np.inf))
               if np.isfinite(v)]
    return f"No leaf of this tree gives {wanted}; the nearest leaves predict {' and '.join(nearest)}: widen the goal."


def _unsupported(tree: ObliqueTree, goal: Any, min_support: int) -> str:
    """Why no leaf may hold an answer: every leaf that gives the goal rests on too few training rows."""
    rows = tree.n_samples[tree.n_leaves - 1:][_leaves_meeting(tree, goal, None)]
    return (f"Only leaves with at most {int(rows.max())} training row{'s' * bool(rows.max() != 1)} give "
            f"{_describe_goal(tree, goal)}, fewer than the {min_support} an answer needs: lower that number "
            "(min_support) to see answers that rest on so few rows, or choose another goal.")


def _blocked(tree: ObliqueTree, goal: Any, leaf: int | None, space: Space, min_support: int = 0) -> str:
    """Why no change meets the goal although some leaf could: the locks, the cap or the bounds stand in the way."""
    wanted = "a way into leaf " + str(leaf) if goal is None else _describe_goal(tree, goal) + (
        f" in leaf {leaf}" if leaf is not None else "")
    limits = []
    locked = tree.n_features - len(space.numeric) - len(space.cat)
    if locked:
        limits.append(f"{locked} input{'s' * (locked > 1)} locked")
    if space.cap is not None:
        limits.append(f"at most {space.cap} change{'s' * (space.cap > 1)}")
    fixes = ["unlock features"] * bool(locked) + ["widen the bounds"] + ["allow more changes"] * (space.cap is not None)
    if leaf is None and min_support > 0 and _has_counts(tree):
        limits.append(f"leaves of at least {min_support} training rows")
        fixes.append("lower min_support")
    return (f"No change to this row gives {wanted} within the bounds" + (f" with {' and '.join(limits)}" if limits
                                                                           else "")
            + f": {', '.join(fixes[:-1]) + ' or ' if len(fixes) > 1 else ''}{fixes[-1]}.")
