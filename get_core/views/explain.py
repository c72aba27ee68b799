"""Why a row got its prediction: its decision path with each node's margin and largest contributions, and the
column checks for scoring uploaded rows.

A branch node's rule is ``sum_j w_j x_j <= c`` in original units; the contribution of feature j at that node is
``w_j x_j`` (the terms add up to the left-hand side), and the margin ``a·xs - b`` (= lhs - c) decides: <= 0 left.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import pandas as pd

from get_core.data import DataError
from get_core.encoding import Encoding
from get_core.tree import ObliqueTree
from get_core.views import labels


class ColumnMismatch(ValueError):
    """Uploaded rows do not have the model's columns; the message names the missing and unexpected ones."""


def align_columns(tree: ObliqueTree, table: pd.DataFrame, ignore: Sequence[str] = ()) -> np.ndarray:
    """The model's feature columns of ``table`` as a float array, in the model's order.

    Raises ColumnMismatch naming missing columns, unexpected ones (columns in ``ignore``, e.g. the target, are
    allowed), duplicated names, non-numeric cells (column and first row) and empty cells (column and first row).
    """
    columns = [str(c) for c in table.columns]
    problems = []
    duplicated = sorted({c for c in columns if columns.count(c) > 1})
    if duplicated:
        problems.append(f"duplicated column names: {_names(duplicated)}")
    missing = [f for f in tree.feature_names if f not in columns]
    extra = [c for c in columns if c not in tree.feature_names and c not in set(map(str, ignore))]
    if missing:
        problems.append(f"missing columns: {_names(missing)}")
    if extra:
        problems.append(f"unexpected columns: {_names(extra)} (remove them)")
    if problems:
        raise ColumnMismatch(f"The rows do not match the model's {tree.n_features} feature columns ("
                             f"{_names(tree.feature_names)}): " + "; ".join(problems) + ".")
    table = table.set_axis(columns, axis=1)
    X = np.empty((len(table), tree.n_features))
    for j, name in enumerate(tree.feature_names):
        values = pd.to_numeric(table[name], errors="coerce")
        bad = values.isna() & table[name].notna()
        if bad.any():
            row = int(np.flatnonzero(bad.to_numpy())[0])
            raise ColumnMismatch(f"Column {name!r} must hold numbers; row {row + 1} holds {table[name].iloc[row]!r}.")
        if values.isna().any():
            row = int(np.flatnonzero(values.isna().to_numpy())[0])
            raise ColumnMismatch(f"Column {name!r} has an empty cell in row {row + 1}; fill it or drop the row.")
        X[:, j] = values.to_numpy(dtype=np.float64)
    if not np.all(np.isfinite(X)):
        j = int(np.flatnonzero(~np.isfinite(X).all(axis=0))[0])
        raise ColumnMismatch(f"Column {tree.feature_names[j]!r} holds an infinite value.")
    return X


def rows_to_X(tree: ObliqueTree, table: pd.DataFrame, encoding: Encoding | None = None,
              target: str | None = None) -> np.ndarray:
    """Model inputs for uploaded rows. With the run's ``encoding`` the table holds the raw columns the user chose
    on the Data page (categorical ones are one-hot encoded again); without it, the model's own feature columns.
    The target column may be present and is ignored. Raises ColumnMismatch with a message naming the columns."""
    ignore = [c for c in (target, encoding.target if encoding else None) if c]
    if encoding is None:
        return align_columns(tree, table, ignore=ignore)
    columns = [str(c) for c in table.columns]
    missing = [c for c in encoding.columns if c not in columns]
    extra = [c for c in columns if c not in encoding.columns and c not in ignore]
    problems = ([f"missing columns: {_names(missing)}"] if missing else []) + (
        [f"unexpected columns: {_names(extra)} (remove them)"] if extra else [])
    if problems:
        raise ColumnMismatch(f"The rows do not match the {len(encoding.columns)} columns the model was trained on ("
                             f"{_names(encoding.columns)}): " + "; ".join(problems) + ".")
    try:
        X = encoding.transform(table.set_axis(columns, axis=1).set_axis(np.arange(1, len(table) + 1), axis=0))
    except DataError as exc:
        raise ColumnMismatch(str(exc)) from None
    if X.shape[1] != tree.n_features:
        raise ColumnMismatch(f"The encoded rows have {X.shape[1]} inputs but the model expects {tree.n_features}.")
    return X


def explain_row(tree: ObliqueTree, x: Sequence[float], top_k: int = 3) -> dict:
    """Prediction, leaf and decision path of one row.

    Returns ``{"prediction", "leaf", "path": [node ids], "steps": [STEP per branch node], "leaf_model": str,
    "leaf_contributions": [CONTRIB], "clamped": bool}`` (clamped: the leaf's line left the leaf's range and the
    prediction is its nearer bound) with STEP = ``{"node", "direction" ("left"/"right"), "margin", "lhs",
    "threshold", "rule" (the condition the row satisfied), "contributions": [CONTRIB, largest |term| first]}`` and
    CONTRIB = ``{"feature", "weight", "value", "term"}`` (term = weight * value, original units).
    """
    x = np.asarray(x, dtype=np.float64).reshape(1, -1)
    path = tree.decision_path(x)[0]
    margins = tree.margins(x)[0]
    steps = []
    for node, child in zip(path[:-1], path[1:]):
        w, c = tree.split_in_original_units(int(node))
        terms = w * x[0]
        right = bool(child % 2)
        steps.append({
            "node": int(node),
            "direction": "right" if right else "left",
            "margin": float(margins[node - 1]),
            "lhs": float(terms.sum()),
            "threshold": float(c),
            "rule": labels.split_text(tree, int(node), 4, 3, go_right=right),
            "contributions": _contributions(tree, w, x[0], top_k),
        })
    leaf = int(path[-1])
    h, k = tree.leaf_in_original_units(leaf)
    prediction = float(tree.predict(x)[0])
    return {
        "prediction": prediction,
        "leaf": leaf,
        "path": [int(n) for n in path],
        "steps": steps,
        "leaf_model": labels.leaf_text(tree, leaf, 4, None),
        "leaf_contributions": _contributions(tree, k, x[0], top_k) if np.any(k) else [],
        "clamped": bool(tree.leaf_bounds_original(leaf) is not None and not np.isclose(h + k @ x[0], prediction)),
    }


def explain_rows(tree: ObliqueTree, X: Any, top_k: int = 3) -> pd.DataFrame:
    """One CSV-ready row per input row: prediction, leaf, path, and per level the node, its margin and its
    largest contributions as ASCII text (``2*temp=50; -1*pressure=-7``)."""
    X = np.asarray(X, dtype=np.float64)
    path = tree.decision_path(X) if len(X) else np.empty((0, tree.depth + 1), dtype=np.int64)
    out = {"prediction": tree.predict(X) if len(X) else np.empty(0), "leaf": path[:, -1],
           "path": [" > ".join(map(str, p)) for p in path]}
    margins = tree.margins(X) if len(X) else np.empty((0, tree.n_branches))
    for level in range(tree.depth):
        nodes = path[:, level]
        out[f"node_{level}"] = nodes
        out[f"margin_{level}"] = margins[np.arange(len(X)), nodes - 1]
        texts = []
        for i, node in enumerate(nodes):
            w, _ = tree.split_in_original_units(int(node))
            texts.append("; ".join(
                f"{labels.fmt(c['weight'], 4, False)}*{c['feature']}={labels.fmt(c['term'], 4, False)}"
                for c in _contributions(tree, w, X[i], top_k)))
        out[f"top_terms_{level}"] = texts
    return pd.DataFrame(out)


def _contributions(tree: ObliqueTree, w: np.ndarray, x: np.ndarray, top_k: int) -> list[dict]:
    terms = w * x
    order = [j for j in np.argsort(-np.abs(terms), kind="stable") if w[j] != 0][:top_k]
    return [{"feature": tree.feature_names[j], "weight": float(w[j]), "value": float(x[j]), "term": float(terms[j])}
            for j in order]


def _names(names: Sequence[str], limit: int = 8) -> str:
    shown = ", ".join(repr(n) for n in list(names)[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")
