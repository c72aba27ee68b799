"""The Compare page's figures for classifiers: each model's confusion matrix, and a reliability (calibration) chart
of how often a model is right when it says it is p sure. Plain plotly; every number is written on the figure."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np
import plotly.graph_objects as go

from get_core.views import labels

RELIABILITY_BINS = 10


def confusion_figure(confusion: Sequence[Sequence[int]], classes: Sequence[Any], name: str) -> go.Figure:
    """Rows: the true class; columns: the predicted class; each cell its count of test rows (written in it) and
    shaded by the share of its true class's rows, so the diagonal reads as each class's recall."""
    counts = np.asarray(confusion, dtype=np.float64)
    totals = counts.sum(axis=1, keepdims=True)
    shares = np.divide(counts, totals, out=np.zeros_like(counts), where=totals > 0)
    names = [labels.class_name(c, 20) for c in classes]
    fig = go.Figure(go.Heatmap(z=shares, x=names, y=names, zmin=0, zmax=1, colorscale="Blues", showscale=False,
                               text=counts.astype(int), texttemplate="%{text}",
                               hovertemplate="true %{y}, predicted %{x}: %{text} rows<extra></extra>"))
    fig.update_layout(title={"text": name, "font": {"size": 14}}, height=320, margin=dict(l=10, r=10, t=50, b=10),
                      xaxis_title="predicted", yaxis_title="true", yaxis_autorange="reversed",
                      xaxis_type="category", yaxis_type="category")  # classes 0 and 1 are names, not -0.5 ... 1.5
    return fig


def reliability_points(y_true: Sequence[Any], proba: np.ndarray, classes: Sequence[Any],
                       bins: int = RELIABILITY_BINS) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(mean confidence, accuracy, rows) per confidence bin: a row's confidence is its largest class probability,
    and it is right when that class (the first on a tie) is its class. Empty bins are left out."""
    proba = np.asarray(proba, dtype=np.float64)
    if proba.size == 0:
        return np.empty(0), np.empty(0), np.empty(0)
    confidence = proba.max(axis=1)
    right = np.asarray(classes, dtype=object)[np.argmax(proba, axis=1)] == np.asarray(y_true, dtype=object)
    which = np.minimum((confidence * bins).astype(int), bins - 1)
    used = [b for b in range(bins) if np.any(which == b)]
    return (np.array([confidence[which == b].mean() for b in used]),
            np.array([right[which == b].mean() for b in used]), np.array([np.sum(which == b) for b in used]))


def reliability_figure(y_true: Sequence[Any], probas: Mapping[str, np.ndarray], classes: Sequence[Any]) -> go.Figure:
    """Accuracy against stated confidence per model, with the diagonal a perfectly calibrated model follows."""
    fig = go.Figure(go.Scatter(x=[0, 1], y=[0, 1], mode="lines", name="perfectly calibrated",
                               line=dict(color="#888", dash="dash")))
    for name, proba in probas.items():
        x, y, n = reliability_points(y_true, proba, classes)
        fig.add_trace(go.Scatter(x=x, y=y, mode="lines+markers", name=name, customdata=n,
                                 hovertemplate="confidence %{x:.0%}: right %{y:.0%} of %{customdata} rows"
                                               "<extra></extra>"))
    fig.update_layout(title="Reliability: how often each model is right when it is this sure", height=420,
                      xaxis=dict(title="stated confidence (largest class probability)", range=[0, 1],
                                 tickformat=".0%"),
                      yaxis=dict(title="share right", range=[0, 1.02], tickformat=".0%"),
                      margin=dict(l=10, r=10, t=50, b=10), legend=dict(orientation="h", y=-0.2))
    return fig
