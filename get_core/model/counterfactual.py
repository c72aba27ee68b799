"""Counterfactuals: the smallest change to one row that gives the prediction wanted, exactly, for an oblique tree.

Every leaf of an oblique tree is a polytope, the half-spaces ``w·xs <= b`` (left) and ``w·xs > b`` (right) along its
path, so the nearest row that lands in a leaf whose output meets the goal is a small linear program per leaf
(Carreira-Perpiñán and Hada, "Counterfactual Explanations for Oblique Decision Trees: Exact, Efficient Algorithms",
AAAI 2021). A linear leaf adds one more linear constraint: its line, clamped to the leaf's bounds, must land in the
goal. ``counterfactual`` searches the tree best first instead of solving every leaf: a node's lower bound is the cost
of the dearest single half-space on its path (a fractional knapsack: exact for one half-space within the bounds),
raised to the exact cost of the node's own polytope once the node is reached, and a subtree whose bound cannot beat
the best answer found so far is never opened. Programs are solved by HiGHS: ``scipy.optimize.linprog`` for L1 and
L-infinity, ``scipy.optimize.milp`` when integers enter (a cap on the number of changed features; one-hot categories,
which switch whole, never to a half of two). Every answer is confirmed by ``predict``: right branches are strict, so
an answer keeps a small margin from the splits, widened if rounding still lands it on the wrong side.

Units: the programs work in the model's scaled units (``xs = (x - x_min) / x_scale``, where splits live); distances
are reported in cost units: by default a numeric feature's change divided by its spread (its standard deviation over
``reference`` rows when given, else the span the model scales it by: the training range under min-max scaling, the
1st-99th percentiles under robust scaling) and a category switch costing 1. Bounds default to that span as well,
widened to hold the row's own value, so a feature left alone is always allowed.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, linprog, milp

from get_core.data.columns import DataError
from get_core.data.encoding import Encoding
from get_core.model import model_file
from get_core.model.tree import ObliqueTree

NORMS = ("l1", "linf")
#: Margins kept from every split (and from a linear leaf's goal), relative to the row's size, tried in turn until
#: ``predict`` confirms the answer: right branches are strict (``> b``) and HiGHS meets constraints up to rounding.
MARGINS = (1e-9, 1e-7, 1e-5, 1e-3)
#: A node's own program is solved (a bound for its subtree) only above this many leaves that meet the goal: below,
#: solving those leaves directly costs no more programs.
NODE_PROGRAM_LEAVES = 3
_HIGHS = {"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10}


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


@dataclass(frozen=True)
class Counterfactual:
    """The nearest row that meets the goal: ``x`` (model inputs, original units), its ``prediction`` and ``leaf``
    (heap id), its ``distance`` from the row asked about (cost units), and ``changes``, the dearest first."""

    x: np.ndarray
    prediction: Any
    distance: float
    leaf: int
    changes: tuple[Change, ...]
    programs: int  # linear or mixed-integer programs solved on the way (the search's effort)


@dataclass(frozen=True)
class _Group:
    """A one-hot categorical column that may change: its model inputs, the level the row holds (-1: none that
    training saw) and what switching costs."""

    column: str
    inputs: np.ndarray  # model input indices, one per level
    levels: tuple[str, ...]
    current: int
    cost: float


def counterfactual(model: Any, x: Any, goal: Any = None, *, locked: Iterable[str | int] = (),
                   bounds: Mapping[str | int, tuple[float | None, float | None]] | None = None,
                   max_changes: int | None = None, costs: Any = None, norm: str = "l1",
                   encoding: Encoding | None = None, reference: Any = None, leaf: int | None = None) -> Counterfactual:
    """The smallest change to row ``x`` that makes ``model`` predict ``goal``; exact (see the module docstring).

    Parameters
    ----------
    model : ObliqueTree or fitted estimator
        The tree, or an estimator holding it in ``tree_``.
    x : array-like of shape (n_features,)
        The row, model inputs in the model's feature order and original units.
    goal : tuple (low, high) or class label
        Regression: the range the prediction must land in, either end None (``(None, 40.0)``: at most 40).
        Classification: the class the prediction must be. May be None only with ``leaf``.
    locked : iterable of str or int
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
        Only this leaf (heap id) may hold the answer: the shortest way into it.

    Returns
    -------
    Counterfactual

    Raises
    ------
    CounterfactualError
        When the request is malformed or no row meets the goal under the constraints; the message says why.
    """
    tree = _tree_of(model)
    x = _row(tree, x)
    if norm not in NORMS:
        raise CounterfactualError(f"norm must be one of {NORMS}; got {norm!r}.")
    if max_changes is not None and (isinstance(max_changes, bool) or not isinstance(max_changes, (int, np.integer))
                                    or max_changes < 1):
        raise CounterfactualError(f"max_changes must be a whole number of at least 1 (or None); got {max_changes!r}.")
    if encoding is None:
        encoding = _saved_encoding(tree)
    space = _Space(tree, x, encoding, set(_indices(tree, encoding, locked, "locked")), bounds or {},
                   _costs(tree, encoding, costs, reference), norm, max_changes)
    best, programs = _search(space, _goal(tree, goal, leaf))
    if best is None:
        raise CounterfactualError(_blocked(tree, goal, leaf, space))
    new_x, distance, _ = best  # confirmed by predict; the leaf as apply routes it (the search's screen agrees but
    # for rounding on a split)
    return Counterfactual(x=new_x, prediction=tree.predict(new_x[None])[0], distance=distance,
                          leaf=int(tree.apply(new_x[None])[0]), changes=space.changes(new_x), programs=programs)


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


def _indices(tree: ObliqueTree, encoding: Encoding | None, keys: Iterable[str | int], what: str) -> list[int]:
    names, found = _names(tree, encoding), []
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


def _positive(value: Any, what: str) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = float("nan")
    if not (np.isfinite(number) and number > 0):
        raise CounterfactualError(f"{what} must be a finite number above 0; got {value!r}.")
    return number


def _leaves_meeting(tree: ObliqueTree, goal: Any, leaf: int | None) -> np.ndarray:
    """(L,) bool: the leaves whose output can meet ``goal`` (a linear leaf: somewhere; ``_Space.goal_row`` then
    says where), restricted to ``leaf`` when given."""
    L = tree.n_leaves
    if leaf is not None and not (isinstance(leaf, (int, np.integer)) and L <= leaf < 2 * L):
        raise CounterfactualError(f"leaf must be a leaf's node number, {L} to {2 * L - 1}; got {leaf!r}.")
    if goal is None:
        if leaf is None:
            raise CounterfactualError("Say what the prediction should be: a goal range (low, high) or a class, "
                                      "or a leaf to reach.")
        meets = np.ones(L, dtype=bool)
    elif _is_classifier(tree):
        meets = tree.leaf_class_index == _class_index(tree, goal)
    else:
        low, high = _goal_range(goal)
        lo, hi = _leaf_output_ranges(tree)
        meets = (hi >= low) & (lo <= high)
    if leaf is not None:
        meets &= np.arange(L, 2 * L) == leaf
    return meets


def _is_classifier(tree: ObliqueTree) -> bool:
    return bool(getattr(tree, "is_classifier", False))


def _class_index(tree: ObliqueTree, goal: Any) -> int:
    label = goal.item() if isinstance(goal, np.generic) else goal
    if label not in tree.classes:
        shown = ", ".join(repr(c) for c in tree.classes[:10])
        raise CounterfactualError(f"The goal {goal!r} is not a class of this model; its classes are {shown}.")
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
    if np.isnan(low) or np.isnan(high) or low > high or (np.isinf(low) and np.isinf(high)) \
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


# ---------------------------------------------------------------------------------------------- the programs
class _Space:
    """The row, what may change and how much it costs, as the variables of the programs.

    Variables (one program layout for every node): per free numeric input j its rise u_j and fall v_j in scaled
    units (the change is u_j - v_j); per free categorical column one z per level (the new row's indicators); with a
    cap, one binary per free numeric input (it changes); with L-infinity, t (the largest weighted change). A split's
    value is ``base + rows @ variables``; ``changes`` and ``distance`` read an answer back in original units.
    """

    def __init__(self, tree: ObliqueTree, x: np.ndarray, encoding: Encoding | None, locked: set[int],
                 bounds: Mapping[str | int, tuple[float | None, float | None]], costs: np.ndarray, norm: str,
                 max_changes: int | None) -> None:
        self.tree, self.x, self.norm, self.cap = tree, x, norm, max_changes
        self.xs = (x - tree.x_min) / tree.x_scale
        self.costs = costs
        self.groups = self._groups(encoding, locked)
        in_groups = {int(j) for g in _all_groups(tree, encoding) for j in g}
        self.numeric = np.array([j for j in range(tree.n_features) if j not in locked and j not in in_groups],
                                dtype=np.int64)
        low, high = self._bounds(encoding, bounds, locked, in_groups)
        self.x_low, self.x_high = low[self.numeric], high[self.numeric]
        s = tree.x_scale[self.numeric]
        self.low, self.high = (low[self.numeric] - x[self.numeric]) / s, (high[self.numeric] - x[self.numeric]) / s
        self.unit_cost = costs[self.numeric] * s  # per scaled unit
        self.cat = np.concatenate([g.inputs for g in self.groups]) if self.groups else np.zeros(0, dtype=np.int64)
        n, m = len(self.numeric), len(self.cat)
        self.n_vars = 2 * n + m + (n if max_changes is not None else 0) + int(norm == "linf")
        self.integrality = np.zeros(self.n_vars)
        self.integrality[2 * n:2 * n + m] = 1
        if max_changes is not None:
            self.integrality[2 * n + m:2 * n + m + n] = 1
        xs_fixed = self.xs.copy()  # the row as it is, but free indicators at 0 (the z variables set them)
        xs_fixed[self.cat] = -tree.x_min[self.cat] / tree.x_scale[self.cat]
        self.split_base, self.split_rows = self._linear(tree.weights, xs_fixed)
        self.leaf_base, self.leaf_rows = self._linear(tree.leaf_coefs, xs_fixed)
        self.leaf_base = self.leaf_base + tree.leaf_intercepts
        # a margin is relative to the size of what it separates
        self.split_size = 1.0 + np.abs(tree.weights).sum(axis=1) + np.abs(tree.thresholds)
        self.leaf_size = 1.0 + np.abs(tree.leaf_coefs).sum(axis=1) + np.abs(tree.leaf_intercepts)
        self._fixed: dict[bool, tuple] = {}

    # ------------------------------------------------------------------ layout
    def _groups(self, encoding: Encoding | None, locked: set[int]) -> list[_Group]:
        groups = []
        for column, inputs in zip(encoding.categories if encoding is not None else (),
                                  _all_groups(self.tree, encoding)):
            values = self.x[inputs]
            if not np.all((values == 0) | (values == 1)) or values.sum() > 1:
                raise CounterfactualError(f"Column '{column}' is one-hot encoded, so its inputs must be 0 or 1 "
                                          f"with at most one 1; x holds {values.tolist()}.")
            if set(inputs.tolist()) & locked:
                continue
            current = int(np.argmax(values)) if values.sum() == 1 else -1
            groups.append(_Group(column, inputs, tuple(encoding.categories[column]), current,
                                 float(self.costs[inputs[0]])))
        return groups

    def _bounds(self, encoding: Encoding | None, bounds: Mapping, locked: set[int],
                in_groups: set[int]) -> tuple[np.ndarray, np.ndarray]:
        tree, x = self.tree, self.x
        low = np.minimum(tree.x_min, x)
        high = np.maximum(tree.x_min + tree.x_scale, x)
        for key, pair in bounds.items():
            found = _indices(tree, encoding, [key], "bounds")
            if len(found) != 1 or found[0] in in_groups:
                raise CounterfactualError(f"bounds: '{key}' is a categorical column; bounds apply to numeric "
                                          "features (lock the column to keep its level).")
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

    def _linear(self, coefs: np.ndarray, xs_fixed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``coefs @ xs`` of the new row as (base, rows): base + rows @ variables."""
        n = len(self.numeric)
        rows = np.zeros((coefs.shape[0], self.n_vars))
        rows[:, :n] = coefs[:, self.numeric]
        rows[:, n:2 * n] = -coefs[:, self.numeric]
        rows[:, 2 * n:2 * n + len(self.cat)] = coefs[:, self.cat] / self.tree.x_scale[self.cat]
        return coefs @ xs_fixed, rows

    # ------------------------------------------------------------------ bounds of single half-spaces
    def relaxed_box(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(inputs, low, high, unit cost): every free input's change in scaled units with categories relaxed to
        [0, 1] (a switch costs half its price per indicator it moves; from an unseen level, the full price)."""
        tree, cat = self.tree, self.cat
        cat_cost = np.concatenate([np.full(len(g.inputs), g.cost / (2 if g.current >= 0 else 1)) for g in self.groups]
                                  ) if self.groups else np.zeros(0)
        s_cat = tree.x_scale[cat]
        inputs = np.concatenate([self.numeric, cat])
        low = np.concatenate([np.minimum(self.low, 0), -self.x[cat] / s_cat])
        high = np.concatenate([np.maximum(self.high, 0), (1 - self.x[cat]) / s_cat])
        return inputs, low, high, np.concatenate([self.unit_cost, cat_cost * s_cat])

    # ------------------------------------------------------------------ programs
    def program(self, path: Sequence[tuple[int, bool]], margin: float, goal: tuple[int, float, float] | None,
                exact: bool, inclusive: float = 0.0
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, float]:
        """(objective, A, lower, upper, integrality, constant) of the program for the region ``path`` ((branch node,
        goes right) pairs) and, for a linear leaf, ``goal`` (leaf index, lowest and highest raw line value). Right
        branches keep ``margin``, left ones and the goal's ends ``inclusive`` (relative to each row's size). Without
        ``exact`` the integers are relaxed and the cap dropped: a lower bound for every leaf below."""
        nodes = np.array([node for node, _ in path], dtype=np.int64) - 1
        right = np.array([goes for _, goes in path], dtype=bool)
        rhs = self.tree.thresholds[nodes] - self.split_base[nodes]
        size = self.split_size[nodes]
        rows, lower, upper = [self.split_rows[nodes]], [np.where(right, rhs + margin * size, -np.inf)], [
            np.where(right, np.inf, rhs - inclusive * size)]
        if goal is not None:
            i, z_low, z_high = goal
            gap = inclusive * self.leaf_size[i]
            rows.append(self.leaf_rows[i][None])
            lower.append([z_low - self.leaf_base[i] + gap])
            upper.append([z_high - self.leaf_base[i] - gap])
        objective, static_rows, static_lower, static_upper, constant = self._fixed_part(exact)
        A = np.vstack([*rows, static_rows])
        integrality = self.integrality if exact else np.zeros(self.n_vars)
        return objective, A, np.concatenate([*lower, static_lower]), np.concatenate([*upper, static_upper]), \
            integrality, constant

    def _fixed_part(self, exact: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, float]:
        """What every program shares: (objective, rows, lower, upper, constant) of the categorical columns (one
        level each, or none where the row holds a level training never had), L-infinity's t and the cap."""
        if exact in self._fixed:
            return self._fixed[exact]
        n, m, size = len(self.numeric), len(self.cat), self.n_vars
        rows, lower, upper = [], [], []
        changed = []  # per column (row, constant): 1 where it switches level, at integers
        offset = 2 * n
        for g in self.groups:
            levels = range(offset, offset + len(g.inputs))
            rows.append(_unit(size, levels))
            lower.append(1.0 if g.current >= 0 else 0.0)
            upper.append(1.0)
            changed.append((-_unit(size, [offset + g.current]), 1.0, g.cost) if g.current >= 0
                           else (_unit(size, levels), 0.0, g.cost))
            offset += len(g.inputs)
        objective, constant = np.zeros(size), 0.0
        if self.norm == "l1":
            objective[:n] = objective[n:2 * n] = self.unit_cost
            for row, change_const, cost in changed:
                objective += cost * row
                constant += cost * change_const
        else:
            objective[-1] = 1.0
            for j in range(n):
                rows.append(_unit(size, [j, n + j], self.unit_cost[j]) - _unit(size, [size - 1]))
                lower.append(-np.inf)
                upper.append(0.0)
            for row, change_const, cost in changed:
                rows.append(cost * row - _unit(size, [size - 1]))
                lower.append(-np.inf)
                upper.append(-cost * change_const)
        if exact and self.cap is not None:  # a rise or fall only where its flag is 1; flags and switches <= cap
            reach = (np.maximum(self.high, 0), np.maximum(-self.low, 0))
            for j in range(n):
                for var, far in ((j, reach[0][j]), (n + j, reach[1][j])):
                    rows.append(_unit(size, [var]) - _unit(size, [2 * n + m + j], far))
                    lower.append(-np.inf)
                    upper.append(0.0)
            count = _unit(size, range(2 * n + m, 3 * n + m))
            for row, _, _ in changed:
                count = count + row
            rows.append(count)
            lower.append(-np.inf)
            upper.append(self.cap - sum(change_const for _, change_const, _ in changed))
        part = (objective, np.array(rows).reshape(len(rows), size), np.array(lower, dtype=float),
                np.array(upper, dtype=float), constant)
        self._fixed[exact] = part
        return part

    def variable_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        n, m = len(self.numeric), len(self.cat)
        low = np.zeros(self.n_vars)
        high = np.concatenate([np.maximum(self.high, 0), np.maximum(-self.low, 0), np.ones(m),
                               np.ones(n if self.cap is not None else 0), np.full(int(self.norm == "linf"), np.inf)])
        low[:n], low[n:2 * n] = np.maximum(self.low, 0), np.maximum(-self.high, 0)  # a bound that excludes x: move
        return low, high

    def row_of(self, solution: np.ndarray) -> np.ndarray:
        """The new row, original units, from a program's solution (indicators rounded to 0 or 1)."""
        n, m = len(self.numeric), len(self.cat)
        new = self.x.copy()
        step = solution[:n] - solution[n:2 * n]
        moved = np.clip(self.x[self.numeric] + step * self.tree.x_scale[self.numeric], self.x_low, self.x_high)
        new[self.numeric] = np.where(step != 0, moved, self.x[self.numeric])
        new[self.cat] = np.round(solution[2 * n:2 * n + m])
        return new

    def leaf_of(self, new: np.ndarray) -> int:
        """The leaf ``new`` reaches, routed with plain dot products: a quick screen (``apply`` adds in a fixed
        order, feature by feature, and is what the answer is finally confirmed and reported by)."""
        xs, node = (new - self.tree.x_min) / self.tree.x_scale, 1
        while node < self.tree.n_leaves:
            node = 2 * node + int(self.tree.weights[node - 1] @ xs > self.tree.thresholds[node - 1])
        return node

    def integral(self, solution: np.ndarray) -> bool:
        n, m = len(self.numeric), len(self.cat)
        z = solution[2 * n:2 * n + m]
        return bool(np.all(np.abs(z - np.round(z)) < 1e-9))

    def n_changed(self, new: np.ndarray) -> int:
        numeric = int(np.count_nonzero(new[self.numeric] != self.x[self.numeric]))
        return numeric + sum(bool(np.any(new[g.inputs] != self.x[g.inputs])) for g in self.groups)

    def distance(self, new: np.ndarray) -> float:
        """The cost of moving from x to ``new``: L1 sum or L-infinity maximum of the weighted changes."""
        parts = [self.costs[self.numeric] * np.abs(new[self.numeric] - self.x[self.numeric])]
        parts.append(np.array([g.cost for g in self.groups if np.any(new[g.inputs] != self.x[g.inputs])]))
        weighted = np.concatenate(parts)
        if weighted.size == 0:
            return 0.0
        return float(weighted.sum() if self.norm == "l1" else weighted.max())

    def changes(self, new: np.ndarray) -> tuple[Change, ...]:
        found = []
        for j in self.numeric:
            if new[j] != self.x[j]:
                found.append((self.costs[j] * abs(new[j] - self.x[j]),
                              Change(self.tree.feature_names[j], float(self.x[j]), float(new[j]),
                                     float(new[j] - self.x[j]))))
        for g in self.groups:
            if np.any(new[g.inputs] != self.x[g.inputs]):
                now = g.levels[g.current] if g.current >= 0 else None
                found.append((g.cost, Change(g.column, now, g.levels[int(np.argmax(new[g.inputs]))], None)))
        found.sort(key=lambda item: -item[0])
        return tuple(change for _, change in found)


def _all_groups(tree: ObliqueTree, encoding: Encoding | None) -> list[np.ndarray]:
    if encoding is None:
        return []
    names = _names(tree, encoding)
    return [np.array(names[column], dtype=np.int64) for column in encoding.categories]


def _unit(size: int, where: Iterable[int], value: float = 1.0) -> np.ndarray:
    row = np.zeros(size)
    row[list(where)] = value
    return row


def _solve(space: _Space, program: tuple) -> tuple[np.ndarray, float] | None:
    """(solution, cost) of a program, or None when it has none: HiGHS through linprog, or milp when integers enter."""
    objective, A, lower, upper, integrality, constant = program
    if space.n_vars == 0:  # everything locked: the row itself, if it is inside
        return (np.zeros(0), constant) if np.all(lower <= 0) and np.all(upper >= 0) else None
    var_low, var_high = space.variable_bounds()
    if integrality.any():
        result = milp(objective, constraints=LinearConstraint(A, lower, upper) if len(A) else None,
                      integrality=integrality, bounds=Bounds(var_low, var_high))
        ok = result.status == 0
    else:
        finite_up, finite_low = np.isfinite(upper), np.isfinite(lower)
        equal = finite_up & finite_low & (lower == upper)
        A_ub = np.vstack([A[finite_up & ~equal], -A[finite_low & ~equal]])
        b_ub = np.concatenate([upper[finite_up & ~equal], -lower[finite_low & ~equal]])
        result = linprog(objective, A_ub=A_ub if len(A_ub) else None, b_ub=b_ub if len(b_ub) else None,
                         A_eq=A[equal] if equal.any() else None, b_eq=lower[equal] if equal.any() else None,
                         bounds=np.column_stack([var_low, var_high]), method="highs", options=_HIGHS)
        ok = result.status == 0
    if not ok:
        return None
    return result.x, float(result.fun) + constant


# ---------------------------------------------------------------------------------------------- the search
@dataclass(frozen=True)
class _Goal:
    """What the answer must do: land in a leaf of ``meets`` ((L,) bool), with a linear leaf's line within
    ``lines[i]`` (index, lowest and highest raw value), and pass ``confirm`` (``predict`` itself says so)."""

    meets: np.ndarray
    lines: dict[int, tuple[int, float, float]]
    confirm: Callable[[np.ndarray], bool]


def _goal(tree: ObliqueTree, goal: Any, leaf: int | None) -> _Goal:
    meets = _leaves_meeting(tree, goal, leaf)
    if not meets.any():
        raise CounterfactualError(_unreachable(tree, goal, leaf))
    if goal is None:
        return _Goal(meets, {}, lambda new: True)
    if _is_classifier(tree):
        label = tree.classes[_class_index(tree, goal)]
        return _Goal(meets, {}, lambda new: tree.predict(new[None])[0] == label)
    low, high = _goal_range(goal)
    return _Goal(meets, _goal_lines(tree, goal, meets), lambda new: bool(low <= tree.predict(new[None])[0] <= high))


def _search(space: _Space, goal: _Goal) -> tuple[tuple[np.ndarray, float, int] | None, int]:
    """Best-first branch and bound over the tree's nodes; ((new row, distance, leaf) or None, programs solved)."""
    tree = space.tree
    L = tree.n_leaves
    reach = _subtree_counts(goal.meets)  # (N,) leaves meeting the goal below node t (row t-1)
    sides = _half_space_costs(space)
    best: tuple[np.ndarray, float, int] | None = None
    programs = 0
    heap: list[tuple[float, int, int, tuple]] = [(0.0, 1, 1, ())]  # (bound, not yet solved, node, path)
    while heap:
        bound, unsolved, node, path = heapq.heappop(heap)
        if best is not None and bound >= best[1] - 1e-12 * (1 + best[1]):
            break
        if node >= L:  # a leaf: its exact program, with the goal
            programs += 1
            found = _solve_leaf(space, path, node, goal)
            if found is not None and (best is None or found[1] < best[1]):
                best = found
            continue
        if unsolved and path and reach[node - 1] >= NODE_PROGRAM_LEAVES:
            # a node's own polytope: a lower bound for its subtree, and maybe an answer
            programs += 1
            solved = _solve(space, space.program(path, 0.0, None, exact=False))
            if solved is None:
                continue
            candidate = _candidate(space, solved[0], goal)
            if candidate is not None and (best is None or candidate[1] < best[1]):
                best = candidate
            heapq.heappush(heap, (max(bound, solved[1]), 0, node, path))
            continue
        for child, cost, goes_right in zip((2 * node, 2 * node + 1), sides(node), (False, True)):
            if reach[child - 1]:
                child_bound = max(bound, cost)
                if np.isfinite(child_bound) and (best is None or child_bound < best[1]):
                    heapq.heappush(heap, (child_bound, 1, child, path + ((node, goes_right),)))
    return best, programs


def _solve_leaf(space: _Space, path: tuple, leaf: int, goal: _Goal) -> tuple[np.ndarray, float, int] | None:
    """The nearest row in ``leaf`` that meets the goal, confirmed by ``predict`` (margins widened until it is)."""
    line = goal.lines.get(leaf - space.tree.n_leaves)
    # Only right branches are strict; left ones and the goal's ends are inclusive: no margin from them unless
    # rounding lands the answer outside (then every side keeps the margin, widened in turn).
    for attempt, margin in enumerate((MARGINS[0], *MARGINS)):
        solved = _solve(space, space.program(path, margin, line, exact=True, inclusive=margin if attempt else 0.0))
        if solved is None:
            if attempt == 0:
                return None  # the leaf cannot be reached at all
            continue
        new = space.row_of(solved[0])
        if space.leaf_of(new) == leaf and goal.confirm(new):
            return new, space.distance(new), leaf
    return None


def _candidate(space: _Space, solution: np.ndarray, goal: _Goal) -> tuple[np.ndarray, float, int] | None:
    """A node's relaxed optimum taken as an answer where it happens to be one: integral, within the cap, and landing
    in a leaf that meets the goal (by ``predict``). It gives the search an early bar to beat."""
    if not space.integral(solution):
        return None
    new = space.row_of(solution)
    if space.cap is not None and space.n_changed(new) > space.cap:
        return None
    leaf = space.leaf_of(new)
    if not (goal.meets[leaf - space.tree.n_leaves] and goal.confirm(new)):
        return None
    return new, space.distance(new), leaf


def _subtree_counts(meets: np.ndarray) -> np.ndarray:
    """(N,) per node (row t-1): how many leaves below it are in ``meets``."""
    L = len(meets)
    counts = np.zeros(2 * L - 1, dtype=np.int64)
    counts[L - 1:] = meets
    for t in range(L - 1, 0, -1):
        counts[t - 1] = counts[2 * t - 1] + counts[2 * t]
    return counts


def _goal_lines(tree: ObliqueTree, goal: Any, meets: np.ndarray) -> dict[int, tuple[int, float, float]]:
    """Per linear leaf (index) that can meet a regression goal: (index, lowest, highest raw line value) for which
    the clamped line lands in the goal. Constant leaves need none: they meet it or were left out."""
    if tree.leaf_type != "linear":
        return {}
    low, high = _goal_range(goal)
    lowest, highest = _leaf_output_ranges(tree)
    lines = {}
    for i in np.flatnonzero(meets & np.any(tree.leaf_coefs != 0, axis=1)):
        # clip(z, lo, hi) >= low holds for every z when the clamp's low end does (compared as predict computes it:
        # in original units, so rounding cannot part the two), else iff z >= low; the same for high
        lines[int(i)] = (int(i), -np.inf if lowest[i] >= low else (low - tree.y_min) / tree.y_scale,
                         np.inf if highest[i] <= high else (high - tree.y_min) / tree.y_scale)
    return lines


def _half_space_costs(space: _Space) -> Callable[[int], tuple[float, float]]:
    """Per branch node t (asked for as the search opens it), the least cost of meeting its left (``<= b``) and
    right (``> b``) half-space alone, within the bounds: a fractional knapsack (inf where the bounds rule a side
    out)."""
    tree = space.tree
    inputs, low, high, unit_cost = space.relaxed_box()

    def sides(node: int) -> tuple[float, float]:
        w = tree.weights[node - 1]
        gap = tree.thresholds[node - 1] - w @ space.xs  # the left side holds now iff gap >= 0
        # left: lower w @ d by max(0, -gap); right: raise it by max(0, gap) (the margin is negligible for a bound)
        W, need = np.array([w[inputs], -w[inputs]]), np.array([-gap, gap])
        left, right = _knapsack(W, need, low, high, unit_cost, space.norm)
        return float(left), float(right)

    return sides


def _knapsack(W: np.ndarray, need: np.ndarray, low: np.ndarray, high: np.ndarray, unit_cost: np.ndarray,
              norm: str) -> np.ndarray:
    """Per row r, the least cost of changes d within [low, high] that lower ``W[r] @ d`` by ``need[r]``: each input
    lowers it by up to its capacity at cost per unit ``unit_cost / |W|``; L1 takes the cheapest first, L-infinity
    raises every input's change together."""
    capacity = np.maximum(-W * np.where(W > 0, low, high), 0.0)  # (B, F)
    with np.errstate(divide="ignore"):
        per_unit = np.where(W != 0, unit_cost / np.abs(W), np.inf)
    need = np.maximum(need, 0.0)
    if norm == "l1":
        order = np.argsort(per_unit, axis=1)
        cap_sorted = np.take_along_axis(capacity, order, axis=1)
        price = np.take_along_axis(per_unit, order, axis=1)
        cum = np.cumsum(cap_sorted, axis=1)
        before = cum - cap_sorted
        take = np.clip(need[:, None] - before, 0.0, cap_sorted)
        with np.errstate(invalid="ignore"):
            cost = np.where(take > 0, take * price, 0.0).sum(axis=1)
    else:  # the cost t at which sum_j min(capacity_j, t / price_j) reaches need
        with np.errstate(invalid="ignore"):
            knee = np.where(np.isfinite(per_unit), capacity * per_unit, np.inf)
        order = np.argsort(knee, axis=1)
        knee_sorted = np.take_along_axis(knee, order, axis=1)
        cap_sorted = np.take_along_axis(capacity, order, axis=1)
        rate = np.take_along_axis(np.where(np.isfinite(per_unit), 1.0 / per_unit, 0.0), order, axis=1)
        full = np.cumsum(cap_sorted, axis=1) - cap_sorted  # capacity of the inputs already at their limit
        slope = np.cumsum(rate[:, ::-1], axis=1)[:, ::-1]  # rate of the inputs still moving
        with np.errstate(divide="ignore", invalid="ignore"):
            t = np.where(slope > 0, (need[:, None] - full) / slope, np.inf)
            previous = np.concatenate([np.zeros((len(W), 1)), knee_sorted[:, :-1]], axis=1)
            valid = (t >= previous - 1e-15) & (t <= knee_sorted + 1e-15)
        cost = np.where(valid.any(axis=1), np.where(valid, t, np.inf).min(axis=1), np.inf)
    cost = np.where(need <= 0, 0.0, cost)
    return np.where(capacity.sum(axis=1) + 1e-12 < need, np.inf, cost)


# ---------------------------------------------------------------------------------------------- sentences
def _describe_goal(tree: ObliqueTree, goal: Any) -> str:
    """The goal in words: "a prediction of at most 40", "class 'approved'"."""
    if _is_classifier(tree):
        return f"class {goal!r}"
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


def _blocked(tree: ObliqueTree, goal: Any, leaf: int | None, space: _Space) -> str:
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
    return (f"No change to this row gives {wanted} within the bounds" + (f" with {' and '.join(limits)}" if limits
                                                                           else "")
            + f": {', '.join(fixes[:-1]) + ' or ' if len(fixes) > 1 else ''}{fixes[-1]}.")
