"""The search chart of a run whose depth or features per split were chosen for the user (``runs.search``): plain
points in, a plotly figure out (no streamlit here).

Validation R2, or a class target's validation accuracy in % (left axis, solid) and the parameters a reader has to
check (right axis, dotted) against depth, one colour per number of features per split and, where a class search
scored both, per kind of leaves (logistic, or class shares; depth 0 is one logistic model); when only k varies (a
fixed depth), against k. The chosen point is a star.
Every marker carries its tree key as ``customdata``, so a click can open that tree.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import plotly.graph_objects as go
from plotly.colors import qualitative
from plotly.subplots import make_subplots

from get_core.config import SPARSITY_TOLERANCE, SPLIT_FEATURE_PATH


def features_label(k: int | None) -> str:
    """A number of features per split for people: "2 features per split", "any features per split"."""
    return "any features per split" if k is None else f"{k} feature{'s' if k != 1 else ''} per split"


def path_text() -> str:
    """The features per split that "choose for me" tries, for people: "1, 2, 3, 5 and any"."""
    words = ["any" if k is None else str(k) for k in SPLIT_FEATURE_PATH]
    return f"{', '.join(words[:-1])} and {words[-1]}"


R2, ACCURACY = "validation_r2", "validation_accuracy"  # a search's score (``runs.search``): regression, classes
#: Each score's name for people.
SCORE_NAMES = {R2: "validation R\u00b2", ACCURACY: "validation accuracy"}


def score_of(point: Mapping[str, Any]) -> str:
    """Which score a search point (or a chosen point) carries: a class target's accuracy, else R2."""
    return ACCURACY if ACCURACY in point else R2


def score_text(point: Mapping[str, Any], digits: int = 3) -> str:
    """A point's validation score for people: "validation R² 0.812", "validation accuracy 91.3%"."""
    score = score_of(point)
    if score == ACCURACY:
        return f"{SCORE_NAMES[score]} {100 * point[score]:.{max(digits - 2, 0)}f}%"
    return f"{SCORE_NAMES[score]} {point[score]:.{digits}f}"


def tolerance_text(score: str = R2) -> str:
    """How much validation score the path of k gives up for fewer features, for people: "0.5 points of R²",
    "0.5 points of accuracy"."""
    return f"{100 * SPARSITY_TOLERANCE:g} points of {'accuracy' if score == ACCURACY else 'R²'}"


#: A class search point's leaves for people (``cv_results_``'s ``leaf``; regression points have none).
LEAF_NAMES = {"logistic": "logistic leaves", "constant": "class-share leaves"}


def leaf_label(point: Mapping[str, Any]) -> str:
    """A search point's leaves for people: "logistic leaves", "one logistic model" at depth 0, "" without a leaf."""
    if point.get("depth") == 0:
        return "one logistic model"
    return LEAF_NAMES.get(point.get("leaf"), "")


def point_label(point: Mapping[str, Any], with_features: bool, parameters: bool = True) -> str:
    """One search fit for a picker: "depth 3, logistic leaves, 2 features per split (validation accuracy 91.3%, 17
    parameters)"; the leaves are named where the point says them (a class search's)."""
    leaves = f", {leaf_label(point)}" if leaf_label(point) else ""
    features = f", {features_label(point['max_split_features'])}" if with_features and point["depth"] else ""
    count = f", {point['n_parameters']:,} parameters" if parameters else ""
    return f"depth {point['depth']}{leaves}{features} ({score_text(point)}{count})"


def search_figure(points: Sequence[Mapping[str, Any]], chosen: Mapping[str, Any] | None = None,
                  height: int = 380, score: str | None = None) -> go.Figure:
    """Validation score and parameter count of every search fit so far; ``chosen`` (a point's depth and k) is
    starred. ``score`` (``R2`` or ``ACCURACY``, in %; None: the points' own) names the left axis before any point."""
    score = score or (score_of(points[0]) if points else R2)
    name_of_score, percent = SCORE_NAMES[score], 100.0 if score == ACCURACY else 1.0
    by_depth = len({p["depth"] for p in points}) > 1 or not points
    figure = make_subplots(specs=[[{"secondary_y": True}]])
    ks = list(dict.fromkeys(p["max_split_features"] for p in points))
    # a class search's kinds of leaves (None: a regression search's); depth 0, one logistic model, is on the logistic line
    leaves = list(dict.fromkeys(p.get("leaf") for p in points))
    palette = qualitative.Plotly
    groups = [(k, leaf) for k in ks for leaf in leaves] if by_depth else [(None, None)]
    for i, (k, leaf) in enumerate(groups):
        line = ([p for p in points if p["max_split_features"] == k and p.get("leaf") == leaf] if by_depth
                else list(points))
        if not line:
            continue
        x = [p["depth"] if by_depth else _k_text(p["max_split_features"]) for p in line]
        words = [w for w, on in ((features_label(k), len(ks) > 1), (LEAF_NAMES.get(leaf, ""), len(leaves) > 1))
                 if on]
        color, name = palette[i % len(palette)], ", ".join(words) or name_of_score
        figure.add_trace(go.Scatter(
            x=x, y=[percent * p[score] for p in line], mode="lines+markers", name=name, legendgroup=name,
            line={"color": color}, marker={"size": [16 if _is(p, chosen) else 9 for p in line],
                                           "symbol": ["star" if _is(p, chosen) else "circle" for p in line]},
            customdata=[p["key"] for p in line],
            text=[f"depth {p['depth']}, {leaf_label(p) + ', ' if leaf_label(p) else ''}"
                  f"{features_label(p['max_split_features'])}<br>{score_text(p, 4)}"
                  f"<br>{p['n_parameters']:,} parameters, widest split "
                  f"{p['widest_split']} feature(s)" for p in line],
            hovertemplate="%{text}<extra></extra>"), secondary_y=False)
        figure.add_trace(go.Scatter(
            x=x, y=[p["n_parameters"] for p in line], mode="lines+markers", name=f"parameters ({name})"
            if len(groups) > 1 else "parameters", legendgroup=name, line={"color": color, "dash": "dot", "width": 1},
            marker={"size": 5, "symbol": "square"}, opacity=0.6, customdata=[p["key"] for p in line],
            hovertemplate="%{y:,} parameters<extra></extra>"), secondary_y=True)
    figure.update_xaxes(title_text="depth" if by_depth else "features per split",
                        dtick=1 if by_depth else None, type="linear" if by_depth else "category")
    figure.update_yaxes(title_text=f"{name_of_score}{' (%)' if score == ACCURACY else ''}", secondary_y=False)
    figure.update_yaxes(title_text="parameters", secondary_y=True, showgrid=False, rangemode="tozero", tickformat=",d")
    figure.update_layout(height=height, margin={"l": 10, "r": 10, "t": 30, "b": 10}, uirevision="keep-zoom",
                         legend={"orientation": "h", "y": -0.2}, clickmode="event+select")
    if not points:
        figure.add_annotation(text="waiting for the first fit to be scored...", showarrow=False, xref="paper",
                              yref="paper", x=0.5, y=0.5)
    return figure


def _is(point: Mapping[str, Any], chosen: Mapping[str, Any] | None) -> bool:
    return chosen is not None and point["key"] == chosen.get("key")


def _k_text(k: int | None) -> str:
    return "any" if k is None else str(k)
