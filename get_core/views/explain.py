"""Why a row got its prediction: its decision path with each node's margin and largest contributions, and uploaded
rows made model inputs (rows that cannot be scored and columns the model does not use are named, not refused).

A branch node's rule is ``sum_j w_j x_j <= c`` in original units, and the margin ``a·xs - b`` (= lhs - c) decides:
<= 0 left. The contribution of feature j at that node is ``w_j (x_j - m_j)``, with ``m_j`` the middle of the feature's
training range (``reference``): how far this row's value moves the weighted sum from a mid-range row's. The raw term
``w_j x_j`` would rank a feature by its magnitude: a feature always near 1010 would top every list however little it
varies. (The tree stores no per-node feature means, so the reference is the model's own scaling.)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from get_core.data.encoding import Encoding
from get_core.errors import GETExplorerError
from get_core.model import prune
from get_core.model.tree import ObliqueTree, raw_rows
from get_core.views import labels, node as node_view


#: The most bytes of numbers ``explain_rows`` computes at once.
CHUNK_BYTES = 32 << 20


class ColumnMismatch(GETExplorerError, ValueError):
    """Uploaded rows lack columns the model needs (or name one twice); the message names them."""


#: The most memory a scored table and its CSV may take while they are made (the Predict page): the server holds
#: several sessions under 2 GB (issue 50: 20,000 rows of a 20,000-class model took it past 6 GB).
SCORED_TABLE_MB = 1024


class TooManyRows(GETExplorerError, ValueError):
    """More uploaded rows than this model's scored table holds within ``SCORED_TABLE_MB``; the message says how many."""


def scored_row_bytes(tree: ObliqueTree, n_columns: int) -> int:
    """Peak bytes a row of ``scored_table`` and its ``csv_out.csv_bytes`` take, an upper bound measured on 50,000
    to 100,000 rows (results/predict-memory.md): per level its node, margin and top-terms text (about 0.5 KB), per
    number (inputs, class probabilities) its float, copies and CSV text, and the path and prediction."""
    return 2048 + 64 * (n_columns + tree.n_classes) + 512 * tree.depth


def check_scorable(tree: ObliqueTree, n_rows: int, n_columns: int, filename: str) -> None:
    """Raises TooManyRows when ``n_rows`` rows of ``n_columns`` columns make a scored table past ``SCORED_TABLE_MB``."""
    most = (SCORED_TABLE_MB << 20) // scored_row_bytes(tree, n_columns)
    if n_rows > most:
        kind = f"{tree.n_classes} classes" if tree.is_classifier else "a regression tree"
        raise TooManyRows(f"'{filename}' has {n_rows:,} rows; with this model ({kind}, depth {tree.depth}) and "
                          f"{n_columns} columns the Predict page scores at most {most:,} rows at a time: split the "
                          f"file into parts of at most {most:,} rows.")


@dataclass(frozen=True)
class Rows:
    """Uploaded rows as model inputs. A row that cannot be scored does not refuse the file: its row of ``X`` is NaN
    and ``problems`` says why; columns the model does not use are ignored and named."""

    X: np.ndarray  # (n, p) model inputs of every uploaded row
    problems: Mapping[int, str]  # row number in the file (1 = first data row) -> why it cannot be scored
    ignored: tuple[str, ...]  # columns the model does not use (the target, an index, IDs ...)

    @property
    def scored(self) -> np.ndarray:
        """(n,) bool: the rows that can be scored."""
        return ~np.isin(np.arange(1, len(self.X) + 1), list(self.problems))


def rows_to_X(tree: ObliqueTree, table: pd.DataFrame, encoding: Encoding | None = None) -> Rows:
    """Model inputs for uploaded rows. With the run's ``encoding`` (or the one saved in its model file) the table
    holds the raw columns chosen on the Data page, categorical ones one-hot encoded again and missing values filled
    where training filled them; without one, the model's own numeric feature columns.

    Raises ColumnMismatch naming the columns the model needs that are missing or duplicated; other columns (the
    target, an index pandas saved, IDs) are ignored, and rows with a cell that cannot be used are left unscored.
    """
    names = labels.row_names(tree)
    encoding = encoding or Encoding.of_model(tree)
    if list(encoding.feature_names) != names:
        raise ColumnMismatch(f"The encoding makes inputs {quoted(encoding.feature_names)} but the model expects "
                             f"{quoted(names)}.")
    columns = [str(c) for c in table.columns]
    missing = [c for c in encoding.columns if c not in columns]
    duplicated = [c for c in encoding.columns if columns.count(c) > 1]
    problems = ([f"missing columns: {quoted(missing)}"] if missing else []) + (
        [f"duplicated column names: {quoted(duplicated)}"] if duplicated else [])
    if problems:
        raise ColumnMismatch(f"The rows do not have the {len(encoding.columns)} columns the model needs ("
                             f"{quoted(encoding.columns)}): " + "; ".join(problems) + ".")
    X, unusable = encoding.encode(table.set_axis(columns, axis=1))
    return Rows(X=X, problems={position + 1: reason for position, reason in unusable.items()},
                ignored=tuple(c for c in columns if c not in encoding.columns))


def scored_table(tree: ObliqueTree, table: pd.DataFrame, rows: Rows) -> pd.DataFrame:
    """The uploaded table with ``explain_rows``'s columns after it (``get_``-prefixed where the table has the name).
    A row that cannot be scored keeps its place with those cells empty, so the rows stay in the file's order."""
    scored = rows.scored
    out = explain_rows(tree, rows.X[scored])
    out = out.astype({c: "Int64" for c in out.select_dtypes("integer").columns})  # an empty cell, not a float 4.0
    out = out.set_axis(np.flatnonzero(scored)).reindex(np.arange(len(table)))
    taken = {str(c) for c in table.columns}
    out = out.rename(columns={c: f"get_{c}" for c in out.columns if c in taken})
    return pd.concat([table.reset_index(drop=True), out], axis=1)


def explain_row(tree: ObliqueTree, x: Sequence[float], top_k: int = 3) -> dict:
    """Prediction, leaf and decision path of one row (a classifier's: its class, and ``"probabilities"`` in class
    order).

    Returns ``{"prediction", "leaf", "path": [node ids], "steps": [STEP per branch node], "leaf_model": str,
    "leaf_contributions": [CONTRIB], "clamped": bool}`` (clamped: the leaf's line left the leaf's range and the
    prediction is its nearer bound) with STEP = ``{"node", "direction" ("left"/"right"), "margin", "lhs",
    "threshold", "rule" (the condition the row satisfied), "contributions": [CONTRIB, largest |term| first]}`` and
    CONTRIB = ``{"feature", "weight", "value", "reference", "term"}`` (term = weight * (value - reference), in the
    weighted sum's units; reference = the middle of the feature's training range, see the module docstring).
    """
    words, (tree, x) = tree, node_view.engine_view(tree, raw_rows(tree, x).reshape(1, -1))
    names = labels.input_labels(words)  # a tree fitted on raw columns: its engine's inputs, told in words
    path = tree.decision_path(x)[0]
    margins = tree.margins(x)[0]
    steps = []
    for node, child in zip(path[:-1], path[1:]):
        if prune.passes_to(tree, int(node)) is not None:  # every row passes it: no step a reader would take
            continue
        w, c = tree.split_in_original_units(int(node))
        terms = w * x[0]
        right = bool(child % 2)
        steps.append({
            "node": int(node),
            "direction": "right" if right else "left",
            "margin": float(margins[node - 1]),
            "lhs": float(terms.sum()),
            "threshold": float(c),
            "rule": labels.split_text(words, int(node), 4, 3, go_right=right),
            "contributions": _contributions(tree, w, x[0], top_k, names),
        })
    leaf = int(path[-1])
    h, k = tree.leaf_in_original_units(leaf)
    if tree.is_classifier:  # the class (of the labels' own type) and every class's probability
        return {"prediction": tree.predict(x).tolist()[0], "probabilities": tree.predict_proba(x)[0].tolist(),
                "leaf": leaf, "path": prune.shown_path(tree, path), "steps": steps,
                "leaf_model": labels.leaf_text(tree, leaf), "leaf_contributions": [], "clamped": False}
    prediction = float(tree.predict(x)[0])
    return {
        "prediction": prediction,
        "leaf": leaf,
        "path": prune.shown_path(tree, path),
        "steps": steps,
        "leaf_model": labels.leaf_text(tree, leaf, 4, None),
        "leaf_contributions": _contributions(tree, k, x[0], top_k, names) if np.any(k) else [],
        "clamped": bool(tree.leaf_bounds_original(leaf) is not None and not np.isclose(h + k @ x[0], prediction)),
    }


def explain_rows(tree: ObliqueTree, X: Any, top_k: int = 3) -> pd.DataFrame:
    """One CSV-ready row per input row: prediction, leaf, path, and per level the node, its margin and its
    largest contributions as ASCII text (``2*(temp-10)=50; -1*(pressure-3)=-7``: weight * (value - reference)).

    Computed in row chunks of at most ``CHUNK_BYTES`` of numbers (every branch's margin, every class's probability):
    at once, a million rows at depth 8 held 2 GB of margins alone."""
    names = labels.input_labels(tree)
    tree, X = node_view.engine_view(tree, X)  # a tree fitted on raw columns: over its engine's inputs
    per_row = 8 * (tree.n_features + tree.n_branches + tree.n_classes + tree.depth + 1)
    step = max(1, CHUNK_BYTES // per_row)
    chunks = [_explain_chunk(tree, X[start:start + step], top_k, names) for start in range(0, max(1, len(X)), step)]
    if len(chunks) == 1:
        return chunks[0]
    return pd.DataFrame({column: np.concatenate([chunk[column].to_numpy() for chunk in chunks])
                         for column in chunks[0].columns})


def _explain_chunk(tree: ObliqueTree, X: np.ndarray, top_k: int, names: Sequence[str]) -> pd.DataFrame:
    """``explain_rows`` of one chunk of rows."""
    path = tree.decision_path(X) if len(X) else np.empty((0, tree.depth + 1), dtype=np.int64)
    leaf_paths = {int(p[-1]): " > ".join(map(str, prune.shown_path(tree, p)))  # a leaf's path is one path
                  for p in path[np.unique(path[:, -1], return_index=True)[1]]}
    out = {"prediction": tree.predict(X) if len(X) else np.empty(0), "leaf": path[:, -1],
           "path": [leaf_paths[leaf] for leaf in path[:, -1].tolist()]}
    if tree.is_classifier:  # one probability column per class, after the prediction
        proba = tree.predict_proba(X) if len(X) else np.empty((0, tree.n_classes))
        probabilities = {f"probability {labels.class_name(c)}": proba[:, k] for k, c in enumerate(tree.classes)}
        out = {"prediction": out.pop("prediction"), **probabilities, **out}
    margins = tree.margins(X) if len(X) else np.empty((0, tree.n_branches))
    for level in range(tree.depth):
        nodes = path[:, level]
        out[f"node_{level}"] = nodes
        out[f"margin_{level}"] = margins[np.arange(len(X)), nodes - 1]
        out[f"top_terms_{level}"] = _top_terms(tree, X, nodes, top_k, names)
    return pd.DataFrame(out)


def _top_terms(tree: ObliqueTree, X: np.ndarray, nodes: np.ndarray, top_k: int,
               names: Sequence[str]) -> list[str]:
    """Each row's ``_contributions`` at its node as text (``2*(temp-10)=50; ...``), node by node rather than row by
    row: a node's split, its terms' order and their ``weight*(feature-reference)=`` text are made once for all its
    rows (one row at a time this took about 0.9 ms a row on the Predict page's uploads)."""
    reference = reference_row(tree)
    texts = np.empty(len(X), dtype=object)
    for node in np.unique(nodes):
        rows = np.flatnonzero(nodes == node)
        w, _ = tree.split_in_original_units(int(node))
        terms = w * (X[rows] - reference)  # (rows, p)
        order = np.argsort(-np.abs(terms), axis=1, kind="stable")  # as _contributions: stable, then w != 0
        order = order[w[order] != 0].reshape(len(rows), -1)[:, :top_k]
        prefix = {j: f"{labels.fmt(float(w[j]), 4, False)}*({names[j]}-"
                     f"{labels.fmt(float(reference[j]), 4, False)})=" for j in np.unique(order).tolist()}
        chosen = np.take_along_axis(terms, order, axis=1)
        texts[rows] = ["; ".join(prefix[j] + labels.fmt(float(t), 4, False) for j, t in zip(js, ts))
                       for js, ts in zip(order.tolist(), chosen.tolist())]
    return texts.tolist()


def reference_row(tree: ObliqueTree) -> np.ndarray:
    """(p,) the middle of each feature's training range (of its 1st-99th percentiles for robust scaling): the row
    contributions are measured from."""
    return tree.x_min + tree.x_scale / 2


def _contributions(tree: ObliqueTree, w: np.ndarray, x: np.ndarray, top_k: int, names: Sequence[str]
                   ) -> list[dict]:
    reference = reference_row(tree)
    terms = w * (x - reference)
    order = [j for j in np.argsort(-np.abs(terms), kind="stable") if w[j] != 0][:top_k]
    return [{"feature": names[j], "weight": float(w[j]), "value": float(x[j]),
             "reference": float(reference[j]), "term": float(terms[j])} for j in order]


def quoted(names: Sequence[str], limit: int = 8) -> str:
    """``'a', 'b' and 3 more``: names for a message, at most ``limit`` of them."""
    shown = ", ".join(repr(str(n)) for n in list(names)[:limit])  # str: numpy's text reads np.str_('a') in repr
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")
