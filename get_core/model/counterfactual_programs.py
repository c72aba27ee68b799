"""The programs behind ``get_core.counterfactual``: a row's free inputs as the variables of one linear (or
mixed-integer) program layout, each tree region's program, and the best-first search over the tree's nodes.

``counterfactual.py`` reads and checks the request and tells the answer; this module only solves. See that module's
docstring for the method and its units.
"""

from __future__ import annotations

import heapq
from decimal import Decimal
from dataclasses import dataclass
from typing import Callable, Iterable, Sequence

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, linprog, milp

from get_core.model.tree import ObliqueTree

#: Margins kept from every split (and from a leaf's goal lines), relative to the row's size, tried in turn until
#: ``predict`` confirms the answer: right branches are strict (``> b``) and HiGHS meets constraints up to rounding.
MARGINS = (1e-9, 1e-7, 1e-5, 1e-3)
#: The margin radius of a whole-number input (original units): HiGHS meets integrality to about 1e-6, and its answer
#: is rounded to the whole number it stands for.
WHOLE_RADIUS = 1e-6
#: A node's own program is solved (a bound for its subtree) only above this many leaves that meet the goal: below,
#: solving those leaves directly costs no more programs.
NODE_PROGRAM_LEAVES = 3
_HIGHS = {"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10}


@dataclass(frozen=True)
class Group:
    """A one-hot categorical column that may change: its model inputs, the level the row holds (-1: none that
    training saw) and what switching costs."""

    column: str
    inputs: np.ndarray  # model input indices, one per level
    levels: tuple[str, ...]
    current: int
    cost: float


@dataclass(frozen=True)
class Line:
    """A linear function of the scaled row that a leaf's answer must keep within [``low``, ``high``]:
    ``intercept + coefs · xs``. A linear leaf's line must land in a regression goal; in a logistic leaf, the wanted
    class's logit less another class's must stay at least 0 (the (1 - m) softmax + m / C mixing keeps the argmax)."""

    coefs: np.ndarray  # (p,), scaled units
    intercept: float
    low: float
    high: float


@dataclass(frozen=True)
class Goal:
    """What the answer must do: land in a leaf of ``meets`` ((L,) bool), keep each of the leaf's ``lines[i]``
    (``Line``s; none for a leaf that meets the goal wherever a row lands in it) within its range, and pass
    ``confirm`` (``predict`` itself says so, for rows (n, p) at once)."""

    meets: np.ndarray
    lines: dict[int, tuple[Line, ...]]
    confirm: Callable[[np.ndarray], np.ndarray]


class Space:
    """The row, what may change and how much it costs, as the variables of the programs.

    Variables (one program layout for every node): per free numeric input j its rise u_j and fall v_j in scaled
    units (the change is u_j - v_j); per free categorical column one z per level (the new row's indicators); with a
    cap, one binary per free numeric input (it changes); per free whole-number input its change k_j (an integer,
    original units); with L-infinity, t (the largest weighted change). A split's value is ``base + rows @
    variables``; ``row_of`` and ``distance`` read an answer back in original units.

    Margins: every free numeric input j has a radius r_j (original units: its grid step, ``WHOLE_RADIUS`` for a
    whole number, 0 without a grid). A region's program keeps each split (and a leaf's goal lines) at least
    ``box`` = sum_j |w_j| r_j / s_j from its boundary, so every row within r_j of the answer in each free input
    lies in the same region; ``snap`` then moves each changed input to its grid (at most r_j / 2), which leaves
    the snapped answer half that box inside (``robust`` checks it).
    """

    def __init__(self, tree: ObliqueTree, x: np.ndarray, numeric: np.ndarray, groups: list[Group], low: np.ndarray,
                 high: np.ndarray, costs: np.ndarray, norm: str, max_changes: int | None,
                 grid: np.ndarray | None = None, whole: Iterable[int] = ()) -> None:
        """``numeric``: the numeric inputs that may move, within [``low``, ``high``] (original units, every input);
        ``groups``: the one-hot columns that may switch; ``costs``: per original unit of every input; ``grid``: per
        input the step its answer snaps to (0: none); ``whole``: inputs that take whole numbers (in ``numeric``)."""
        self.tree, self.x, self.norm, self.cap = tree, x, norm, max_changes
        self.grid = np.zeros(len(x)) if grid is None else np.asarray(grid, dtype=np.float64)
        whole = set(int(j) for j in whole)
        self.whole = np.array([k for k, j in enumerate(numeric) if int(j) in whole], dtype=np.int64)  # in numeric
        self.xs = (x - tree.x_min) / tree.x_scale
        self.costs, self.numeric, self.groups = costs, numeric, groups
        self.x_low, self.x_high = low[numeric].copy(), high[numeric].copy()
        for k, j in enumerate(numeric):  # bounds on the grid (inward), unless the row's own value is the bound
            step = self.grid[j]
            if step > 0 and self.x_low[k] != x[j]:
                up = grid_above(self.x_low[k], step)
                self.x_low[k] = min(x[j], up) if self.x_low[k] < x[j] else up
            if step > 0 and self.x_high[k] != x[j]:
                down = -grid_above(-self.x_high[k], step)
                self.x_high[k] = max(x[j], down) if self.x_high[k] > x[j] else down
        low, high = low.copy(), high.copy()
        low[numeric], high[numeric] = self.x_low, self.x_high
        s = tree.x_scale[numeric]
        self.low, self.high = (low[numeric] - x[numeric]) / s, (high[numeric] - x[numeric]) / s
        self.unit_cost = costs[self.numeric] * s  # per scaled unit
        self.cat = np.concatenate([g.inputs for g in self.groups]) if self.groups else np.zeros(0, dtype=np.int64)
        n, m = len(self.numeric), len(self.cat)
        self.k_offset = 2 * n + m + (n if max_changes is not None else 0)
        self.n_vars = self.k_offset + len(self.whole) + int(norm == "linf")
        self.integrality = np.zeros(self.n_vars)
        self.integrality[2 * n:2 * n + m] = 1
        if max_changes is not None:
            self.integrality[2 * n + m:2 * n + m + n] = 1
        self.integrality[self.k_offset:self.k_offset + len(self.whole)] = 1
        radius = self.grid[self.numeric].copy()
        radius[self.whole] = WHOLE_RADIUS
        self.radius = radius / s  # scaled units
        self.split_box = np.abs(tree.weights[:, self.numeric]) @ self.radius
        self.xs_fixed = self.xs.copy()  # the row as it is, but free indicators at 0 (the z variables set them)
        self.xs_fixed[self.cat] = -tree.x_min[self.cat] / tree.x_scale[self.cat]
        self.split_base, self.split_rows = self._linear(tree.weights, self.xs_fixed)
        # a margin is relative to the size of what it separates
        self.split_size = 1.0 + np.abs(tree.weights).sum(axis=1) + np.abs(tree.thresholds)
        self._fixed: dict[bool, tuple] = {}

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
    def line_box(self, line: Line) -> float:
        """The margin a goal line keeps so that every row within each free input's radius stays on its side."""
        return float(np.abs(line.coefs[self.numeric]) @ self.radius)

    def program(self, path: Sequence[tuple[int, bool]], margin: float, goal: Sequence[Line] | None,
                exact: bool, inclusive: float = 0.0
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, float]:
        """(objective, A, lower, upper, integrality, constant) of the program for the region ``path`` ((branch node,
        goes right) pairs) and a leaf's ``goal`` lines (``Line``). Right branches keep ``margin``, left ones and
        the lines' ends ``inclusive`` (relative to each row's size). Without ``exact`` the integers are relaxed and
        the cap dropped: a lower bound for every leaf below."""
        nodes = np.array([node for node, _ in path], dtype=np.int64) - 1
        right = np.array([goes for _, goes in path], dtype=bool)
        rhs = self.tree.thresholds[nodes] - self.split_base[nodes]
        size = self.split_size[nodes]
        box = self.split_box[nodes]
        rows, lower, upper = [self.split_rows[nodes]], [np.where(right, rhs + margin * size + box, -np.inf)], [
            np.where(right, np.inf, rhs - inclusive * size - box)]
        for line in goal or ():
            base, row = self._linear(line.coefs[None], self.xs_fixed)
            base = float(base[0]) + line.intercept
            gap = inclusive * (1.0 + np.abs(line.coefs).sum() + abs(line.intercept)) + self.line_box(line)
            rows.append(row)
            lower.append([line.low - base + gap])
            upper.append([line.high - base - gap])
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
        for k, j in enumerate(self.whole):  # k_j = (u_j - v_j) s_j: the change in original units, a whole number
            s_j = self.tree.x_scale[self.numeric[j]]
            rows.append(_unit(size, [j], s_j) + _unit(size, [n + j], -s_j) - _unit(size, [self.k_offset + k]))
            lower.append(0.0)
            upper.append(0.0)
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
        whole = self.numeric[self.whole]
        k_low = np.ceil(self.x_low[self.whole] - self.x[whole])
        k_high = np.floor(self.x_high[self.whole] - self.x[whole])
        high = np.concatenate([np.maximum(self.high, 0), np.maximum(-self.low, 0), np.ones(m),
                               np.ones(n if self.cap is not None else 0), k_high,
                               np.full(int(self.norm == "linf"), np.inf)])
        low[:n], low[n:2 * n] = np.maximum(self.low, 0), np.maximum(-self.high, 0)  # a bound that excludes x: move
        low[self.k_offset:self.k_offset + len(whole)] = k_low
        return low, high

    def row_of(self, solution: np.ndarray, exact: bool = False) -> np.ndarray:
        """The new row, original units, from a program's solution (indicators rounded to 0 or 1). Of an ``exact``
        program with a cap, an input whose flag is under one half does not move: the solver meets a flag's
        integrality only to a tolerance, and the move it then allows is round-off, not a change to count."""
        n, m = len(self.numeric), len(self.cat)
        new = self.x.copy()
        step = solution[:n] - solution[n:2 * n]
        if exact and self.cap is not None:
            step = np.where(solution[2 * n + m:3 * n + m] >= 0.5, step, 0.0)
        moved = np.clip(self.x[self.numeric] + step * self.tree.x_scale[self.numeric], self.x_low, self.x_high)
        new[self.numeric] = np.where(step != 0, moved, self.x[self.numeric])
        new[self.cat] = np.round(solution[2 * n:2 * n + m])
        return new

    def snap(self, new: np.ndarray) -> np.ndarray:
        """``new`` with each free numeric input on its grid: a move under half a step (or the solver's round-off,
        a billionth of the span) is no move; a whole number is rounded; a grid step keeps the answer within its
        bounds. Every snap moves an input at most half its radius, which the programs' margins allow for."""
        snapped = new.copy()
        whole = set(self.numeric[self.whole].tolist())
        for k, j in enumerate(self.numeric):
            now, value, step = self.x[j], new[j], self.grid[j]
            if j in whole:
                snapped[j] = float(np.round(value))
            elif abs(value - now) <= max(step / 2, 1e-9 * self.tree.x_scale[j]):
                snapped[j] = now
            elif step > 0:  # within the bounds: they are on the grid, or the row's own value (then this is a move
                snapped[j] = on_step(value, step)  # of over half a step away from it)
        return snapped

    def robust(self, new: np.ndarray, path: Sequence[tuple[int, bool]], goal: Sequence[Line] | None) -> bool:
        """Whether the snapped answer ``new`` keeps half the programs' margin from every split of ``path`` (and
        from a leaf's goal lines): every row within half a radius of it in each free input gets its answer."""
        xs = (new - self.tree.x_min) / self.tree.x_scale
        for node, right in path:
            value = self.tree.weights[node - 1] @ xs - self.tree.thresholds[node - 1]
            half = self.split_box[node - 1] / 2
            if not (value > half if right else value <= -half):
                return False
        for line in goal or ():
            z, half = line.intercept + line.coefs @ xs, self.line_box(line) / 2
            if not (z - half >= line.low and z + half <= line.high):
                return False
        return True

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

def on_step(value: float, step: float) -> float:
    """``value`` rounded to a multiple of ``step``, as the double nearest its decimal (so its text reads back as it)."""
    return round(round(value / step) * step, decimals(step))


def grid_above(value: float, step: float) -> float:
    """The least multiple of ``step`` at or above ``value``."""
    found = on_step(np.ceil(value / step) * step, step)
    return found if found >= value else on_step(found + step, step)


def decimals(step: float) -> int:
    """The decimal places a multiple of ``step`` is written with: 0.25 -> 2, 1e-05 -> 5, 10 -> 0."""
    exponent = Decimal(repr(float(step))).normalize().as_tuple().exponent
    return max(0, -int(exponent))


def path_to(leaf: int) -> tuple[tuple[int, bool], ...]:
    """The (branch node, goes right) pairs from the root to ``leaf``."""
    pairs = []
    while leaf > 1:
        pairs.append((leaf // 2, leaf % 2 == 1))
        leaf //= 2
    return tuple(reversed(pairs))


def _unit(size: int, where: Iterable[int], value: float = 1.0) -> np.ndarray:
    row = np.zeros(size)
    row[list(where)] = value
    return row


def solve(space: Space, program: tuple) -> tuple[np.ndarray, float] | None:
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
def search(space: Space, goal: Goal, n: int = 1) -> tuple[list[tuple[np.ndarray, float, int]], int]:
    """Best-first branch and bound over the tree's nodes: ([(new row, distance, leaf)], programs solved), the ``n``
    nearest answers in distinct leaves, nearest first (fewer where fewer leaves can hold one)."""
    tree = space.tree
    L = tree.n_leaves
    reach = _subtree_counts(goal.meets)  # (N,) leaves meeting the goal below node t (row t-1)
    sides = _half_space_costs(space)
    found: dict[int, tuple[np.ndarray, float, int]] = {}  # per leaf, its nearest answer so far

    def keep(answer: tuple[np.ndarray, float, int] | None) -> None:
        if answer is not None and (answer[2] not in found or answer[1] < found[answer[2]][1]):
            found[answer[2]] = answer

    def bar() -> float:  # the distance an answer must beat to be among the n nearest
        return sorted(a[1] for a in found.values())[n - 1] if len(found) >= n else np.inf

    programs = 0
    heap: list[tuple[float, int, int, tuple]] = [(0.0, 1, 1, ())]  # (bound, not yet solved, node, path)
    while heap:
        bound, unsolved, node, path = heapq.heappop(heap)
        limit = bar()
        if bound >= limit - 1e-12 * (1 + limit):
            break
        if node >= L:  # a leaf: its exact program, with the goal
            programs += 1
            keep(solve_leaf(space, path, node, goal))
            continue
        if unsolved and path and reach[node - 1] >= NODE_PROGRAM_LEAVES:
            # a node's own polytope: a lower bound for its subtree, and maybe an answer
            programs += 1
            solved = solve(space, space.program(path, 0.0, None, exact=False))
            if solved is None:
                continue
            keep(_candidate(space, solved[0], goal))
            heapq.heappush(heap, (max(bound, solved[1]), 0, node, path))
            continue
        for child, cost, goes_right in zip((2 * node, 2 * node + 1), sides(node), (False, True)):
            if reach[child - 1]:
                child_bound = max(bound, cost)
                if np.isfinite(child_bound) and child_bound < limit:
                    heapq.heappush(heap, (child_bound, 1, child, path + ((node, goes_right),)))
    return sorted(found.values(), key=lambda answer: answer[1])[:n], programs


def solve_leaf(space: Space, path: tuple, leaf: int, goal: Goal) -> tuple[np.ndarray, float, int] | None:
    """The nearest row in ``leaf`` that meets the goal, confirmed by ``predict`` (margins widened until it is)."""
    lines = goal.lines.get(leaf - space.tree.n_leaves)
    # Only right branches are strict; left ones and the lines' ends are inclusive: no margin from them unless
    # rounding lands the answer outside (then every side keeps the margin, widened in turn).
    for attempt, margin in enumerate((MARGINS[0], *MARGINS)):
        solved = solve(space, space.program(path, margin, lines, exact=True, inclusive=margin if attempt else 0.0))
        if solved is None:
            if attempt == 0:
                return None  # the leaf cannot be reached at all
            continue
        new = space.snap(space.row_of(solved[0], exact=True))
        if _holds(space, new, leaf, goal):
            return new, space.distance(new), leaf
    return None


def _holds(space: Space, new: np.ndarray, leaf: int, goal: Goal) -> bool:
    """Whether snapped row ``new`` is an answer in ``leaf``: robust there (half its margin kept), within the cap,
    and confirmed by ``predict``."""
    return (space.leaf_of(new) == leaf and space.robust(new, path_to(leaf), goal.lines.get(leaf - space.tree.n_leaves))
            and (space.cap is None or space.n_changed(new) <= space.cap) and bool(goal.confirm(new[None])[0]))


def _candidate(space: Space, solution: np.ndarray, goal: Goal) -> tuple[np.ndarray, float, int] | None:
    """A node's relaxed optimum taken as an answer where it happens to be one: integral, within the cap, and landing
    in a leaf that meets the goal (by ``predict``). It gives the search an early bar to beat."""
    if not space.integral(solution):
        return None
    new = space.snap(space.row_of(solution))
    leaf = space.leaf_of(new)
    if not (goal.meets[leaf - space.tree.n_leaves] and _holds(space, new, leaf, goal)):
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


def _half_space_costs(space: Space) -> Callable[[int], tuple[float, float]]:
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



#####
