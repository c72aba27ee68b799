"""The node panel: statistics of one node, its split's terms ranked with what each costs to drop, and its plotly figures
(weights, projection, leaf fit, forest view).

Pure functions of an ``ObliqueTree`` and data arrays; nothing here calls streamlit. Row sets are "the rows that
reach the node by hard routing" (``reaches``). Margins are ``a·xs - b`` in scaled units, which equals ``w·x - c``
with (w, c) = ``split_in_original_units``: the same number the diagram's inequality compares, <= 0 goes left.

Units of weights: "original" (per unit of the feature, as in the diagram), "standardized" (per standard deviation
of the feature in the training rows: w_j * sd_j, comparable across features), "range" (per training range of the
feature, or per its 1st-99th percentile span for a robust-scaled tree: the scaled-unit weight a_j the optimizer
sees).
"""

from __future__ import annotations

import html
import math
from dataclasses import replace
from typing import Any, Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from get_core.metrics import r2
from get_core.model.tree import ObliqueTree, raw_rows
from get_core.views import labels

UNITS = ("original", "standardized", "range")
POSITIVE, NEGATIVE = "#1f77b4", "#d62728"
TRAIN_COLOR, TEST_COLOR = "#1f77b4", "#ff7f0e"
MAX_POINTS = 4000  # scatter plots subsample beyond this many rows (deterministically)


# ---------------------------------------------------------------------------------------------- statistics
def engine_view(tree: ObliqueTree, X: Any) -> tuple[ObliqueTree, np.ndarray]:
    """(tree, rows) over the engine's inputs: a tree fitted on raw columns (``ObliqueTree.inputs``) as its twin
    without them and ``X`` encoded (a number's value, its fill where missing, and its "is missing" input; a category
    column's indicators), so that the statistics here index a split's weights by the rows' columns and route
    exactly as ``predict`` does; a tree of plain numbers and its rows as they are."""
    if tree.inputs is None:
        return tree, np.asarray(X, dtype=np.float64)
    return replace(tree, inputs=None), tree.encode(X)


def reaches(tree: ObliqueTree, X: Any, node: int) -> np.ndarray:
    """Boolean mask of the rows of ``X`` that pass through ``node``."""
    labels.node_kind(tree, node)
    X = raw_rows(tree, X)
    if X.shape[0] == 0:
        return np.zeros(0, dtype=bool)
    return tree.decision_path(X)[:, int(node).bit_length() - 1] == node


def node_stats(tree: ObliqueTree, node: int, X_train: Any = None, y_train: Any = None, X_test: Any = None,
               y_test: Any = None) -> dict:
    """Counts, target mean and spread, and errors at ``node``, JSON-ready.

    Keys: node, kind, level, n_train_model (rows the trainer saw, from the model), threshold (original units,
    branches only), and for each of "train" and "test" when data are given: n_<s>, mean_<s>, std_<s> (the error of
    predicting the node's mean), rmse_<s> and mae_<s> (the tree's own predictions on those rows), n_left_<s>/
    n_right_<s> (branches). Missing quantities are None.
    """
    kind = labels.node_kind(tree, node)
    out: dict[str, Any] = {"node": int(node), "kind": kind, "level": int(node).bit_length() - 1,
                           "n_train_model": int(tree.n_samples[node - 1]), "threshold": None}
    if kind == "branch":
        out["threshold"] = tree.split_in_original_units(node)[1]
    raw = tree
    for split, X, y in (("train", X_train, y_train), ("test", X_test, y_test)):
        if X is None or y is None:
            continue
        tree, X = engine_view(raw, X)
        y = np.asarray(y, dtype=np.float64).ravel()
        mask = reaches(tree, X, node)
        yy = y[mask]
        out[f"n_{split}"] = int(mask.sum())
        out[f"mean_{split}"] = float(yy.mean()) if yy.size else None
        out[f"std_{split}"] = float(yy.std()) if yy.size else None
        err = tree.predict(X[mask]) - yy if yy.size else np.empty(0)
        out[f"rmse_{split}"] = float(np.sqrt(np.mean(err ** 2))) if yy.size else None
        out[f"mae_{split}"] = float(np.mean(np.abs(err))) if yy.size else None
        if kind == "branch":
            left = int(np.sum(tree.margins(X[mask])[:, node - 1] <= 0)) if yy.size else 0
            out[f"n_left_{split}"], out[f"n_right_{split}"] = left, int(yy.size - left)
    return out


def train_rows_note(stats: dict) -> str | None:
    """A sentence for ``node_stats``' two training counts where they differ, None where they agree. The diagram
    counts the rows the tree was fitted on (``n_train_model``, from the model); the node panel counts the run's
    training rows that reach the node (``n_train``). A depth search fits each tree on two thirds of the run's
    training rows, so without this the two read as a contradiction ("8,299 rows" against "12,449")."""
    fitted, reached = stats["n_train_model"], stats.get("n_train")
    if reached is None or reached == fitted:
        return None
    return (f"{reached:,} of the run's training rows reach this node; the diagram counts the {fitted:,} row"
            f"{'s' if fitted != 1 else ''} this tree was fitted on, part of the run's training rows (a depth search "
            "fits each tree on two thirds of them and validates it on the rest).")


def feature_std(X: Any, tree: ObliqueTree | None = None) -> np.ndarray:
    """Per-feature standard deviation of training rows (zeros replaced by 1 so standardizing never divides by 0);
    with ``tree``, per input of its engine (``engine_view``), as its weights are."""
    sd = (np.asarray(X, dtype=np.float64) if tree is None else engine_view(tree, X)[1]).std(axis=0)
    return np.where(sd > 0, sd, 1.0)


def term_table(tree: ObliqueTree, node: int, X: Any, y: Any, categories: Sequence[str] = ()) -> pd.DataFrame:
    """Branch ``node``'s non-zero terms ranked by their share of the split, with what dropping each costs.

    ``share``: |w_j| * sd_j as a percentage of the sum over the split's terms, with w_j the weight in original units
    and sd_j the feature's standard deviation on the rows of ``X`` that reach the node (all of ``X`` when fewer than
    two do): how much of the split's swing on its own rows each term carries, comparable across units.
    ``r2_cost``: the tree's R2 on those rows minus its R2 when the term is dropped (``drop_term``: x_j held at its
    mean on those rows) and the rows are re-routed through the subtree; None where R2 is undefined (fewer than two
    rows, or a constant target). Columns: feature, weight (original units), share (%), levels, r2_cost; largest
    share first. The levels of a one-hot column in ``categories`` are one row (``term_groups``).
    """
    if labels.node_kind(tree, node) != "branch":
        raise ValueError(f"Node {node} is a leaf; terms are ranked for branch nodes.")
    raw, (tree, X) = tree, engine_view(tree, X)
    y = np.asarray(y, dtype=np.float64).ravel()
    mask = reaches(tree, X, node)
    rows, targets = X[mask], y[mask]
    terms, share = term_shares(tree, node, rows if len(rows) >= 2 else X)
    groups = term_groups(raw, terms, categories)
    before = r2(targets, tree.predict(rows)) if len(rows) else None
    costs: list[float | None] = [None] * len(groups)
    if before is not None:
        # what drop_term's tree predicts, from two passes: every row sent left, and right, below this node
        left, right = (_sent(tree, node, side).predict(rows) for side in ("left", "right"))
        xs = tree.scale_X(rows)
        for i, (_, members) in enumerate(groups):
            weights, threshold = _dropped_split(tree, node, terms[members], rows)
            costs[i] = before - r2(targets, np.where(_split_sum(weights, xs) > threshold, right, left))
    return _ranked(raw, node, terms, share, groups, r2_cost=costs)


def ranked_terms(tree: ObliqueTree, node: int, X: Any, categories: Sequence[str] = ()) -> pd.DataFrame:
    """``term_table`` without the R2 cost (a class tree has no R2): feature, weight (original units), share (%) and
    levels on the rows of ``X`` that reach ``node`` (all of ``X`` when fewer than two do), largest share first."""
    plain, X = engine_view(tree, X)
    rows = X[reaches(plain, X, node)]
    terms, share = term_shares(plain, node, rows if len(rows) >= 2 else X)
    return _ranked(tree, node, terms, share, term_groups(tree, terms, categories))


def term_groups(tree: ObliqueTree, terms: np.ndarray, categories: Sequence[str]) -> list[tuple[str, np.ndarray]]:
    """The rows of a split's terms table: (name, positions in ``terms``), in order of first appearance. The levels
    ``column=level`` of a one-hot column in ``categories`` share one row, ``column (one-hot)``, as in the
    plain-words summary (``labels.one_hot_group``): a user asks what the column does, not each level. So do the
    inputs of one raw column of a tree fitted on raw columns (its categories, a number and its "is missing")."""
    names = tree.feature_names if tree.inputs is None else [tree.inputs.names[g] for g in tree.groups]
    groups: dict[str, list[int]] = {}
    for i, j in enumerate(terms):
        groups.setdefault(labels.one_hot_group(names[j], categories), []).append(i)
    return [(name, np.array(members)) for name, members in groups.items()]


def _ranked(tree: ObliqueTree, node: int, terms: np.ndarray, share: np.ndarray,
            groups: list[tuple[str, np.ndarray]], **columns: list) -> pd.DataFrame:
    """The terms' table, one row per group (feature, weight in original units (NaN for a one-hot column: see
    levels), share (summed over a group's levels), levels (``level weight, ...`` of a one-hot column, else
    empty), then ``columns``, one value per group), largest share first."""
    w, _ = tree.split_in_original_units(node)
    by_column = {t.column.name: t for t in labels.column_terms(tree, node) or []}
    grouped = [name != tree.feature_names[terms[members[0]]] for name, members in groups]
    weight = [math.nan if one_hot else w[terms[members[0]]] for one_hot, (_, members) in zip(grouped, groups)]
    levels = [", ".join(f"{tree.feature_names[terms[i]].split('=', 1)[1]} {labels.fmt(w[terms[i]])}"
                        for i in members) if one_hot else "" for one_hot, (_, members) in zip(grouped, groups)]
    for i, (name, _) in enumerate(groups):  # a raw column's number and "is missing", or its categories
        column = by_column.get(name)
        if column is not None and column.column.kind == "number":
            weight[i] = column.coef
            levels[i] = (f"if missing: counts as {labels.fmt(column.missing_as)}" if column.column.missing else "")
    total = [math.nan if np.all(np.isnan(share[members])) else float(np.nansum(share[members]))
             for _, members in groups]
    table = pd.DataFrame({"feature": [name for name, _ in groups], "weight": weight, "share": total,
                          "levels": levels, **columns})
    return table.iloc[np.argsort(-np.nan_to_num(total), kind="stable")].reset_index(drop=True)


def term_shares(tree: ObliqueTree, node: int, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(features, shares): branch ``node``'s non-zero terms and each one's |w_j| * sd_j (original-unit weight times
    the feature's standard deviation on ``rows``) as a percentage of their sum; NaN shares when the sum is 0."""
    terms = np.flatnonzero(tree.weights[node - 1])
    w, _ = tree.split_in_original_units(node)
    spread = rows[:, terms].std(axis=0) if len(rows) else np.zeros(terms.size)
    swing = np.abs(w[terms]) * spread
    return terms, (100.0 * swing / swing.sum() if swing.sum() > 0 else np.full(terms.size, np.nan))


def drop_term(tree: ObliqueTree, node: int, feature: int, rows: np.ndarray) -> ObliqueTree:
    """A copy of ``tree`` whose split at ``node`` no longer uses ``feature``: its term is held at the feature's mean
    on ``rows`` (moved into the threshold), so those rows' split moves only by how they differ from that mean."""
    weights, thresholds = tree.weights.copy(), tree.thresholds.copy()
    weights[node - 1], thresholds[node - 1] = _dropped_split(tree, node, [feature], rows)
    return replace(tree, weights=weights, thresholds=thresholds)


def _dropped_split(tree: ObliqueTree, node: int, features: Sequence[int],
                   rows: np.ndarray) -> tuple[np.ndarray, float]:
    """(weights, threshold) of ``node``'s split, scaled units, with each of ``features`` held at its mean on
    ``rows`` (a one-hot column's levels at their shares)."""
    weights = tree.weights[node - 1].copy()
    threshold = float(tree.thresholds[node - 1])
    for feature in features:
        mean = float(np.mean((rows[:, feature] - tree.x_min[feature]) / tree.x_scale[feature])) if len(rows) else 0.0
        threshold -= float(weights[feature] * mean)
        weights[feature] = 0.0
    return weights, threshold


def _sent(tree: ObliqueTree, node: int, side: str) -> ObliqueTree:
    """A copy of ``tree`` whose split at ``node`` sends every row to ``side`` ("left" or "right")."""
    weights, thresholds = tree.weights.copy(), tree.thresholds.copy()
    weights[node - 1] = 0.0
    thresholds[node - 1] = np.inf if side == "left" else -np.inf
    return replace(tree, weights=weights, thresholds=thresholds)


def _split_sum(weights: np.ndarray, xs: np.ndarray) -> np.ndarray:
    """``weights · xs`` per row over the non-zero weights, added in feature order from 0.0: the sum
    ``ObliqueTree.decision_path`` compares, bit for bit."""
    total = np.zeros(len(xs))
    for j in np.flatnonzero(weights):
        total += weights[j] * xs[:, j]
    return total


def weight_table(tree: ObliqueTree, node: int, x_std: Sequence[float] | None = None) -> pd.DataFrame:
    """One row per feature with the node's weight (branch) or slope (linear leaf) in every unit, sorted by
    magnitude in scaled units (largest first). Columns: feature, original, range, standardized (NaN without
    ``x_std``), sign."""
    if labels.node_kind(tree, node) == "branch":
        original, _ = tree.split_in_original_units(node)
    else:
        original = tree.leaf_in_original_units(node)[1]
    original = np.asarray(original, dtype=np.float64)
    in_range = original * tree.x_scale
    std = original * np.asarray(x_std, dtype=np.float64) if x_std is not None else np.full_like(original, np.nan)
    table = pd.DataFrame({"feature": labels.input_labels(tree), "original": original, "range": in_range,
                          "standardized": std, "sign": np.where(original < 0, "negative", "positive")})
    order = np.argsort(-np.abs(in_range), kind="stable")
    return table.iloc[order].reset_index(drop=True)


def forest_importance_table(tree: ObliqueTree, node: int, importances: Sequence[float],
                            x_std: Sequence[float] | None = None, names: Sequence[str] | None = None) -> pd.DataFrame:
    """The forest's feature importances beside this node's weights, each normalized to sum to 1
    (node: |standardized| weights, or |range| weights without ``x_std``). Columns: feature, forest, node.
    ``names``: the forest's inputs (the baselines' ``feature_names``: one-hot "column=level" where the tree was
    handed categories, named as the tree's inputs for them); the tree's row columns by default."""
    table = weight_table(tree, node, x_std)
    column = "standardized" if x_std is not None else "range"
    node_share = np.abs(table[column].to_numpy())
    node_share = node_share / node_share.sum() if node_share.sum() > 0 else node_share
    forest = dict(zip(labels.row_names(tree) if names is None else names, np.asarray(importances, dtype=np.float64)))
    out = pd.DataFrame({"feature": table["feature"], "forest": [forest.get(f, np.nan) for f in table["feature"]],
                        "node": node_share})
    return out.sort_values("forest", ascending=False, kind="stable").reset_index(drop=True)


# ---------------------------------------------------------------------------------------------- figures
def weights_figure(tree: ObliqueTree, node: int, units: str = "original", x_std: Sequence[float] | None = None,
                   max_features: int = 40) -> go.Figure:
    """Signed horizontal bars of the node's weights (or a linear leaf's slopes), largest magnitude on top."""
    if units not in UNITS:
        raise ValueError(f"units must be one of {UNITS}; got {units!r}.")
    if units == "standardized" and x_std is None:
        raise ValueError("Standardized weights need the training rows' standard deviations (x_std).")
    table = weight_table(tree, node, x_std)
    table = table.reindex(table[units].abs().sort_values(ascending=False, kind="stable").index)
    table = table.head(max_features).iloc[::-1]  # plotly draws the first bar at the bottom
    hover = [f"{_hover_name(f)}<br>original: {o:.4g}<br>per range: {r:.4g}<br>per SD: {s:.4g}"
             for f, o, r, s in zip(table["feature"], table["original"], table["range"], table["standardized"])]
    fig = go.Figure(go.Bar(x=table[units], y=[_axis_name(f) for f in table["feature"]], orientation="h",
                           marker_color=[NEGATIVE if v < 0 else POSITIVE for v in table[units]],
                           hovertext=hover, hoverinfo="text"))
    kind = labels.node_kind(tree, node)
    what = "weights" if kind == "branch" else "slopes"
    title = f"Node {node}: {what} ({units} units)"
    if kind == "branch" and units == "original":
        title += f", threshold {labels.fmt(tree.split_in_original_units(node)[1], 4)}"
    hidden = tree.n_features - len(table)
    if hidden > 0:
        title += f" ({hidden} smaller not shown)"
    fig.update_layout(title=title, xaxis_title=f"{what[:-1]} ({units} units)", yaxis_title=None,
                      height=max(240, 22 * len(table) + 120), margin=dict(l=10, r=10, t=50, b=40))
    fig.add_vline(x=0, line_color="#444", line_width=1)
    return fig


def projection_figure(tree: ObliqueTree, node: int, X: Any, y: Any, X_test: Any = None, y_test: Any = None,
                      target_name: str = "target") -> go.Figure:
    """The node's rows projected on its hyperplane: margin ``a·x - b`` (x) against the target (y), the split at 0,
    and each side's mean target (training rows) as a horizontal segment."""
    if labels.node_kind(tree, node) != "branch":
        raise ValueError(f"Node {node} is a leaf; the projection plot is for branch nodes.")
    fig = go.Figure()
    train_margin, train_y = _node_margins(tree, node, X, y)
    for name, (m, t), color in (("train", (train_margin, train_y), TRAIN_COLOR),
                                ("test", _node_margins(tree, node, X_test, y_test), TEST_COLOR)):
        if m.size:
            keep = _subsample(m.size)
            fig.add_trace(go.Scattergl(x=m[keep], y=t[keep], mode="markers", name=f"{name} ({m.size:,})",
                                       marker=dict(color=color, size=5, opacity=0.55)))
    fig.add_vline(x=0, line_dash="dash", line_color="#444", annotation_text="split", annotation_position="top")
    if train_margin.size:
        lo, hi = float(train_margin.min()), float(train_margin.max())
        for side, sel, x0, x1 in (("left", train_margin <= 0, min(lo, 0.0), 0.0),
                                  ("right", train_margin > 0, 0.0, max(hi, 0.0))):
            if sel.any():
                mean = float(train_y[sel].mean())
                fig.add_trace(go.Scatter(x=[x0, x1], y=[mean, mean], mode="lines", line=dict(color="#222", width=3),
                                         name=f"{side} mean {labels.fmt(mean, 4)} ({int(sel.sum()):,} rows)"))
    fig.update_layout(title=f"Node {node}: rows projected on the split (left when a\u00b7x \u2212 b \u2264 0)",
                      xaxis_title="margin a\u00b7x \u2212 b", yaxis_title=_axis_name(target_name, 40),
                      margin=dict(l=10, r=10, t=50, b=40), legend=dict(orientation="h", y=-0.25))
    return fig


def leaf_fit_figure(tree: ObliqueTree, leaf: int, X: Any, y: Any, X_test: Any = None, y_test: Any = None,
                    target_name: str = "target") -> go.Figure:
    """Observed against fitted values of the rows reaching ``leaf``, with the identity line."""
    if labels.node_kind(tree, leaf) != "leaf":
        raise ValueError(f"Node {leaf} is a branch node; observed-vs-fitted is for leaves.")
    fig = go.Figure()
    lo, hi = math.inf, -math.inf
    for name, Xs, ys, color in (("train", X, y, TRAIN_COLOR), ("test", X_test, y_test, TEST_COLOR)):
        if Xs is None or ys is None:
            continue
        Xs = raw_rows(tree, Xs)
        ys = np.asarray(ys, dtype=np.float64).ravel()
        mask = reaches(tree, Xs, leaf)
        if not mask.any():
            continue
        fitted, observed = tree.predict(Xs[mask]), ys[mask]
        keep = _subsample(observed.size)
        fig.add_trace(go.Scattergl(x=fitted[keep], y=observed[keep], mode="markers", name=f"{name} ({mask.sum():,})",
                                   marker=dict(color=color, size=5, opacity=0.6)))
        lo = min(lo, float(fitted.min()), float(observed.min()))
        hi = max(hi, float(fitted.max()), float(observed.max()))
    if math.isfinite(lo):
        fig.add_trace(go.Scatter(x=[lo, hi], y=[lo, hi], mode="lines", name="fitted = observed",
                                 line=dict(color="#444", dash="dot")))
    title = html.escape(f"Leaf {leaf}: y = {labels.leaf_text(tree, leaf, 4, 3, max_name=28)}", quote=False)
    fig.update_layout(title=title, xaxis_title="fitted",
                      yaxis_title=f"observed {_axis_name(target_name, 40)}", margin=dict(l=10, r=10, t=50, b=40),
                      legend=dict(orientation="h", y=-0.25))
    return fig


def forest_importance_figure(tree: ObliqueTree, node: int, importances: Sequence[float],
                             x_std: Sequence[float] | None = None, max_features: int = 25,
                             names: Sequence[str] | None = None) -> go.Figure:
    """Grouped bars: the forest's importances beside this node's share of |weight| per feature (``names``: as
    ``forest_importance_table``'s)."""
    table = forest_importance_table(tree, node, importances, x_std, names).head(max_features).iloc[::-1]
    names = [_axis_name(f) for f in table["feature"]]
    fig = go.Figure([go.Bar(x=table["forest"], y=names, orientation="h", name="random forest importance"),
                     go.Bar(x=table["node"], y=names, orientation="h", name=f"node {node}: share of |weight|")])
    fig.update_layout(barmode="group", title=f"Random forest importances beside node {node}'s weights",
                      height=max(260, 30 * len(table) + 120), margin=dict(l=10, r=10, t=50, b=40),
                      legend=dict(orientation="h", y=-0.2))
    return fig


def predicted_actual_figure(y_true: Sequence[float], predictions: dict[str, Sequence[float]],
                            target_name: str = "target") -> go.Figure:
    """Predicted (x) against actual (y) for several models on the same rows, with the identity line."""
    y_true = np.asarray(y_true, dtype=np.float64)
    fig = go.Figure()
    for name, pred in predictions.items():
        pred = np.array([np.nan if v is None else v for v in pred], dtype=np.float64)
        keep = _subsample(pred.size)
        fig.add_trace(go.Scattergl(x=pred[keep], y=y_true[keep], mode="markers", name=name,
                                   marker=dict(size=5, opacity=0.55)))
    if y_true.size:
        lo, hi = float(np.nanmin(y_true)), float(np.nanmax(y_true))
        fig.add_trace(go.Scatter(x=[lo, hi], y=[lo, hi], mode="lines", name="predicted = actual",
                                 line=dict(color="#444", dash="dot")))
    fig.update_layout(title="Predicted against actual (test rows)", xaxis_title="predicted",
                      yaxis_title=f"actual {_axis_name(target_name, 40)}", margin=dict(l=10, r=10, t=50, b=40))
    return fig


# ---------------------------------------------------------------------------------------------- helpers
def _node_margins(tree: ObliqueTree, node: int, X: Any, y: Any) -> tuple[np.ndarray, np.ndarray]:
    if X is None or y is None:
        return np.empty(0), np.empty(0)
    tree, X = engine_view(tree, X)
    y = np.asarray(y, dtype=np.float64).ravel()
    mask = reaches(tree, X, node)
    if not mask.any():
        return np.empty(0), np.empty(0)
    return tree.margins(X[mask])[:, node - 1], y[mask]


def _subsample(n: int, limit: int = MAX_POINTS) -> np.ndarray:
    if n <= limit:
        return np.arange(n)
    return np.sort(np.random.default_rng(0).choice(n, size=limit, replace=False))


def _axis_name(name: str, max_len: int = 28) -> str:
    """Plotly renders tick and title text as (limited) HTML: escape it and cut long names."""
    return html.escape(labels.shorten(str(name), max_len), quote=False)


def _hover_name(name: str) -> str:
    return html.escape(labels.shorten(str(name), None), quote=False)
