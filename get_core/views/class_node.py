"""The node panel of a classification tree: the classes of the rows that reach a node, how often the tree (and the
random forest) classifies them correctly there, the class shares a node stands for as a bar, and a branch's rows
projected on its split, stacked by class.

Colours are the diagram's (``diagram.class_color``, Okabe & Ito's palette); every figure also names its classes in
words (legend, axis, text on the bars), so none needs colour to be read. No streamlit here.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from get_core.model.tree import ObliqueTree
from get_core.views import diagram, labels
from get_core.views.node import engine_view, reaches


def class_counts(tree: ObliqueTree, node: int, X: Any, y: Any) -> np.ndarray:
    """Rows of each class (C,), in ``tree.classes`` order, among the rows ``X``/``y`` that reach ``node``."""
    if X is None or y is None or len(y) == 0:
        return np.zeros(tree.n_classes, dtype=np.int64)
    at = np.asarray(y)[reaches(tree, X, node)]
    return np.array([int(np.sum(at == c)) for c in tree.classes], dtype=np.int64)


def accuracy_at(tree: ObliqueTree, node: int, X: Any, y: Any, predictions: Any = None) -> tuple[int, float | None]:
    """(rows, share classified correctly) of the rows that reach ``node``: by the tree, or by ``predictions`` (one
    label per row of X, e.g. the forest's); None without rows."""
    if X is None or y is None or len(y) == 0:
        return 0, None
    at = reaches(tree, X, node)
    if not at.any():
        return 0, None
    predicted = tree.predict(np.asarray(X)[at]) if predictions is None else np.asarray(predictions, dtype=object)[at]
    return int(at.sum()), float(np.mean(np.asarray(predicted, dtype=object) == np.asarray(y, dtype=object)[at]))


def class_table(tree: ObliqueTree, node: int, X_train: Any = None, y_train: Any = None, X_test: Any = None,
                y_test: Any = None) -> pd.DataFrame:
    """One row per class: the model's weighted training counts at the node, the training and test rows reaching it
    (when given), and for a leaf the probability it predicts."""
    table = {"class": [labels.class_name(c) for c in tree.classes],
             "training rows (model)": [float(v) for v in tree.node_counts[node - 1]]}
    if y_train is not None:
        table["train rows"] = class_counts(tree, node, X_train, y_train).tolist()
    if y_test is not None:
        table["test rows"] = class_counts(tree, node, X_test, y_test).tolist()
    if tree.is_leaf(node):  # a logistic model's probabilities vary by row: its leaf shows its rows' shares
        column = "training share" if labels.has_logistic_model(tree, node) else "predicted probability"
        table[column] = [labels.percent(p) for p in labels.node_shares(tree, node)]
    return pd.DataFrame(table)


#: A leaf's typical range of a feature: the middle 90% of its training rows there (a few rows far out do not set it).
LEAF_RANGE = (5, 95)


def leaf_spans(tree: ObliqueTree, leaf: int, X_train: Any) -> np.ndarray:
    """(p,) each feature's typical range among the training rows reaching ``leaf`` (original units, ``LEAF_RANGE``
    percentiles), what a logistic leaf's odds are measured over (``labels.odds_effects``); the training range where
    the leaf has under two rows or a feature does not vary there."""
    X = engine_view(tree, X_train)[1][reaches(tree, X_train, leaf)]
    if len(X) < 2:
        return tree.x_scale.copy()
    low, high = np.nanpercentile(X, LEAF_RANGE, axis=0)
    span = high - low
    return np.where(np.isfinite(span) & (span > 0), span, tree.x_scale)


def shares_figure(tree: ObliqueTree, node: int) -> go.Figure:
    """The node's class shares as one horizontal stacked bar (a leaf's predicted probabilities, a branch's training
    class shares), each segment in its class's colour and labelled with the class and its percentage."""
    shares = labels.node_shares(tree, node)
    fig = go.Figure()
    for k, (label, share) in enumerate(zip(tree.classes, shares)):
        if share <= 0:
            continue
        name = labels.class_name(label, 30)
        fig.add_trace(go.Bar(x=[share], y=[""], orientation="h", name=name, marker_color=diagram.class_color(k),
                             text=f"{name} {labels.percent(share)}", textposition="inside", insidetextanchor="middle",
                             hovertemplate=f"{name}: {labels.percent(share)}<extra></extra>"))
    what = ("predicted class probabilities" if tree.is_leaf(node) and not labels.has_logistic_model(tree, node)
            else "class shares of its training rows")
    fig.update_layout(barmode="stack", height=150, title=f"Node {node}: {what}", showlegend=True,
                      xaxis=dict(range=[0, 1], tickformat=".0%"), margin=dict(l=10, r=10, t=40, b=10),
                      legend=dict(orientation="h", y=-0.4))
    return fig


def projection_figure(tree: ObliqueTree, node: int, X: Any, y: Any, target_name: str = "class") -> go.Figure:
    """A branch's training rows projected on its split (margin ``a·x - b``; left at <= 0), as a histogram stacked
    by class: where each class falls against the threshold."""
    if tree.is_leaf(node):
        raise ValueError(f"Node {node} is a leaf; the projection plot is for branch nodes.")
    tree, X = engine_view(tree, X)
    at = reaches(tree, X, node)
    X_at, y_at = X[at], np.asarray(y, dtype=object)[at]
    margin = tree.margins(X_at)[:, node - 1] if len(X_at) else np.empty(0)
    fig = go.Figure()
    for k, label in enumerate(tree.classes):
        mine = margin[y_at == label]
        if mine.size:
            fig.add_trace(go.Histogram(x=mine, name=f"{labels.class_name(label, 30)} ({mine.size:,})",
                                       marker_color=diagram.class_color(k), opacity=0.85, nbinsx=40))
    fig.add_vline(x=0, line_dash="dash", line_color="#444", annotation_text="split", annotation_position="top")
    fig.update_layout(barmode="stack", title=f"Node {node}: training rows projected on the split, by {target_name}",
                      xaxis_title="margin a\u00b7x \u2212 b (left when \u2264 0)", yaxis_title="rows",
                      margin=dict(l=10, r=10, t=50, b=40), legend=dict(orientation="h", y=-0.25))
    return fig


def forest_rows(tree: ObliqueTree, node: int, X_test: Any, y_test: Any,
                forest_predictions: Sequence[Any]) -> dict[str, Any]:
    """The tree's and the forest's accuracy on the test rows that reach ``node`` (the forest's stored labels)."""
    n, tree_accuracy = accuracy_at(tree, node, X_test, y_test)
    _, forest_accuracy = accuracy_at(tree, node, X_test, y_test, forest_predictions)
    return {"rows": "test", "reaching this node": n, "tree accuracy": tree_accuracy,
            "forest accuracy": forest_accuracy}
