"""No dead rules: a fitted tree's splits that route every training row one way, collapsed in the model itself.

GET optimizes a complete tree of a fixed depth, so some splits end up sending all of their training rows to one
side: drawn as rules, they read as conditions that decide nothing ("horsepower <= -64.5", 0 rows left), and the
subtree on the other side holds only empty leaves. ``collapse_dead_splits`` turns each such split into a
*pass-through*: all weights zero and threshold +1 (every row left) or -1 (every row right). That is the model's own
routing test (``w·xs <= b`` over the non-zero weights, ``tree.py``), so every routing path and export (native, numpy,
Python, C, ONNX, counterfactuals) sends every row to the live child, exactly, with no format change; the dead side's
splits get zero weights too. Training rows keep their leaves, so training predictions are unchanged.

The tree keeps its heap numbering; what a reader sees skips pass-throughs (``shown``: a node stands for the first
real split or leaf below it) and never reaches the dead side (``live``). A branch with no non-zero weight is a
pass-through whoever made it (a CART start leaves such splits where CART stopped), so trees collapsed or not read
the same way. This module imports nothing of the project: ``tree.py`` counts parameters through it.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

#: An ``ObliqueTree`` (``model.tree``), named but not imported: ``tree.py`` imports this module, and an import the
#: other way, even for type checkers only, would close a circle (``tests/test_floors.py``).
Tree = Any

#: A pass-through's threshold: 0 (its empty weighted sum) <= +1 sends every row left, 0 <= -1 none.
PASS_LEFT, PASS_RIGHT = 1.0, -1.0


def passes_to(tree: Tree, node: int) -> int | None:
    """The child every row of branch ``node`` goes to when it is a pass-through (no non-zero weight), else None."""
    if tree.is_leaf(node) or np.any(tree.weights[node - 1]):
        return None
    return 2 * node if tree.thresholds[node - 1] >= 0 else 2 * node + 1


def shown(tree: Tree, node: int) -> int:
    """The node a reader sees in ``node``'s place: ``node`` itself, or below a pass-through its live child's."""
    while (child := passes_to(tree, node)) is not None:
        node = child
    return node


def shown_children(tree: Tree, node: int) -> tuple[int, int]:
    """(left, right): what a reader sees under real split ``node`` on each side (``shown``)."""
    return shown(tree, 2 * node), shown(tree, 2 * node + 1)


def live(tree: Tree) -> np.ndarray:
    """(N,) bool, row t-1 for node t: the real splits and leaves a row can reach, pass-throughs left out (they
    decide nothing) and so is the dead side below them."""
    out = np.zeros(tree.n_nodes, dtype=bool)
    stack = [shown(tree, 1)]
    while stack:
        node = stack.pop()
        out[node - 1] = True
        if not tree.is_leaf(node):
            stack.extend(shown_children(tree, node))
    return out


def live_branches(tree: Tree) -> np.ndarray:
    """Node ids of the real splits a row can reach, in heap order."""
    nodes = np.flatnonzero(live(tree)) + 1
    return nodes[nodes < tree.n_leaves]


def live_leaves(tree: Tree) -> np.ndarray:
    """Node ids of the leaves a row can reach, in heap order."""
    nodes = np.flatnonzero(live(tree)) + 1
    return nodes[nodes >= tree.n_leaves]


def shown_path(tree: Tree, path: Any) -> list[int]:
    """A root-to-leaf ``path`` of heap ids (``decision_path``'s row) without its pass-throughs."""
    return [int(t) for t in path if passes_to(tree, int(t)) is None]


def collapse_dead_splits(tree: Tree, X: np.ndarray) -> Tree:
    """A copy of ``tree`` with every split that sends all of ``X`` (its training rows, original units) one way made
    a pass-through to its live child, and every split below the dead side zeroed (no row reaches it).
    ``meta["collapsed"]`` lists what went, ``{"node", "kept", "rows"}`` per collapsed split (kept: the child that
    took its place; rows: the training rows that pass through it)."""
    counts = np.bincount(tree.decision_path(X).ravel(), minlength=tree.n_nodes + 1)[1:]  # row t-1: node t
    weights, thresholds = tree.weights.copy(), tree.thresholds.copy()
    collapsed = []
    for node in range(1, tree.n_leaves):
        rows, left, right = counts[node - 1], counts[2 * node - 1], counts[2 * node]
        if left and right:
            continue
        if rows and np.any(weights[node - 1]):
            collapsed.append({"node": node, "kept": 2 * node if left else 2 * node + 1, "rows": int(rows)})
        weights[node - 1], thresholds[node - 1] = 0.0, PASS_RIGHT if right else PASS_LEFT
    return replace(tree, weights=weights, thresholds=thresholds, meta={**tree.meta, "collapsed": collapsed})
