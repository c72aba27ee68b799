"""The teaching view (the Teaching page): the formula, the scaled sigmoid against the step function for each alpha
stage, soft routing hardening as alpha grows, and for a class tree the class shares of the rows a split sends left
and right. No streamlit here.

GET trains with soft splits: at branch node t a row goes left with weight ``S(b_t - a_t·xs) =
1 / (1 + exp(-alpha (b_t - a_t·xs)))`` (the paper's eq. for the approximated branching test), in scaled units, and
raises alpha stage by stage until the soft tree behaves like the hard one it returns. Here the x axis is the margin
``m = a·xs - b`` (the projection plot's), so the hard rule is "left when m <= 0" and the soft one is ``S(-m)``.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from get_core.model.tree import ObliqueTree
from get_core.views import labels
from get_core.views.node import engine_view, reaches

UNDECIDED = (0.05, 0.95)  # a soft weight strictly between these is "undecided"
#: The soft split in LaTeX: the weight of the left branch for a row x at a split a·x <= b (scaled units).
FORMULA = (r"w_{\text{left}}(x) = \sigma(\alpha \cdot m) = \frac{1}{1 + e^{-\alpha m}}, \qquad "
           r"m = b - a \cdot x")


def stage_labels(alphas: Sequence[float], roles: bool = True) -> list[str]:
    """One label per alpha stage, in the order GET runs them, with (``roles``) what each stage does to the splits."""
    alphas = _check_alphas(alphas)
    n = len(alphas)
    stage_roles = ["soft: the splits move freely" if i == 0 and n > 1 else
                   "nearly hard: the splits settle into the tree returned" if i == n - 1 else "hardening"
                   for i in range(n)]
    return [f"stage {i + 1} of {n}, \u03b1 = {alpha:.3g}" + (f" ({role})" if roles else "")
            for i, (alpha, role) in enumerate(zip(alphas, stage_roles))]


def split_class_shares(tree: ObliqueTree, node: int, X: Any, y: Any) -> pd.DataFrame:
    """A class tree's branch ``node``: per class, the rows of ``X``/``y`` reaching it that the hard split sends left
    and right, and each side's class shares."""
    if tree.is_leaf(node):
        raise ValueError(f"Node {node} is a leaf; only a split sends rows left and right.")
    tree, X = engine_view(tree, X)  # raw rows (holes, categories) as the engine's inputs the margins read
    mask = reaches(tree, X, node)
    at = np.asarray(y, dtype=object)[mask]
    left = tree.margins(X[mask])[:, node - 1] <= 0 if mask.any() else np.zeros(0, dtype=bool)
    table: dict[str, list] = {"class": [labels.class_name(c) for c in tree.classes]}
    for side, rows in (("left", at[left]), ("right", at[~left])):
        counts = [int(np.sum(rows == c)) for c in tree.classes]
        table[f"rows going {side}"] = counts
        table[f"share {side}"] = [labels.percent(c / len(rows)) if len(rows) else "–" for c in counts]
    return pd.DataFrame(table)


def soft_left(margin: Any, alpha: float) -> np.ndarray:
    """Soft "go left" weight ``1 / (1 + exp(alpha * margin))``, computed without overflow."""
    z = -alpha * np.asarray(margin, dtype=np.float64)
    out = np.empty_like(z)
    pos = z >= 0
    out[pos] = 1.0 / (1.0 + np.exp(-z[pos]))
    ez = np.exp(z[~pos])
    out[~pos] = ez / (1.0 + ez)
    return out


def sigmoid_figure(alphas: Sequence[float], half_width: float | None = None,
                   names: Sequence[str] | None = None) -> go.Figure:
    """The step function (hard split) and the scaled sigmoid for each alpha (named by ``names``, e.g. the stage
    labels), against the margin."""
    alphas = _check_alphas(alphas)
    names = list(names) if names is not None else [f"alpha = {alpha:g}" for alpha in alphas]
    if half_width is None:
        half_width = float(np.clip(6.0 / min(alphas), 0.05, 2.0))  # the smoothest curve reaches ~0.998 at the edge
    m = np.linspace(-half_width, half_width, 801)
    fig = go.Figure(go.Scatter(x=[-half_width, 0, 0, half_width], y=[1, 1, 0, 0], mode="lines",
                               name="hard split (step)", line=dict(color="#222", width=3)))
    for alpha, name in zip(alphas, names):
        fig.add_trace(go.Scatter(x=m, y=soft_left(m, alpha), mode="lines", name=name))
    fig.update_layout(title="Scaled sigmoid S(b \u2212 a\u00b7x) against the step it approximates",
                      xaxis_title="margin a\u00b7x \u2212 b (scaled units)", yaxis_title="weight of the left branch",
                      yaxis_range=[-0.05, 1.05], margin=dict(l=10, r=10, t=50, b=40))
    return fig


def soft_routing(tree: ObliqueTree, node: int, X: Any, alphas: Sequence[float]) -> dict:
    """Soft left weights of the rows reaching branch ``node`` at each alpha.

    Returns ``{"alphas": [...], "margins": (n,), "weights": (len(alphas), n), "hard_left": (n,) bool,
    "undecided": [share per alpha], "mean_gap": [mean |soft - hard| per alpha]}``.
    """
    alphas = _check_alphas(alphas)
    if tree.is_leaf(node):
        raise ValueError(f"Node {node} is a leaf; soft routing happens at branch nodes.")
    tree, X = engine_view(tree, X)  # raw rows (holes, categories) as the engine's inputs the margins read
    mask = reaches(tree, X, node)
    margins = tree.margins(X[mask])[:, node - 1] if mask.any() else np.empty(0)
    weights = np.stack([soft_left(margins, a) for a in alphas]) if margins.size else np.empty((len(alphas), 0))
    hard = margins <= 0
    lo, hi = UNDECIDED
    undecided = [float(np.mean((w > lo) & (w < hi))) if w.size else None for w in weights]
    gap = [float(np.mean(np.abs(w - hard))) if w.size else None for w in weights]
    return {"alphas": alphas, "margins": margins, "weights": weights, "hard_left": hard, "undecided": undecided,
            "mean_gap": gap}


def soft_routing_figure(tree: ObliqueTree, node: int, X: Any, alphas: Sequence[float],
                        max_points: int = 1500, names: Sequence[str] | None = None) -> go.Figure:
    """For each alpha (named by ``names``), every row's soft left weight at ``node`` (jittered strip), coloured by
    its hard side; the share still undecided is in the axis labels."""
    routing = soft_routing(tree, node, X, alphas)
    names = list(names) if names is not None else [f"alpha {alpha:g}" for alpha in routing["alphas"]]
    n = routing["margins"].size
    keep = np.arange(n) if n <= max_points else np.sort(np.random.default_rng(0).choice(n, max_points, False))
    jitter = np.random.default_rng(1).uniform(-0.3, 0.3, size=keep.size)
    fig = go.Figure()
    ticks = []
    for i in range(len(routing["alphas"])):
        w = routing["weights"][i, keep]
        side = routing["hard_left"][keep]
        for goes_left, color, name in ((True, "#1f77b4", "goes left (hard)"), (False, "#d62728", "goes right (hard)")):
            sel = side == goes_left
            fig.add_trace(go.Scattergl(x=i + jitter[sel], y=w[sel], mode="markers", name=name, legendgroup=name,
                                       showlegend=i == 0, marker=dict(color=color, size=4, opacity=0.5)))
        share = routing["undecided"][i]
        ticks.append(names[i] + ("" if share is None else f"<br>{100 * share:.0f}% undecided"))
    fig.update_layout(title=f"Node {node}: soft routing of its {n:,} rows hardens as alpha grows",
                      xaxis=dict(tickmode="array", tickvals=list(range(len(ticks))), ticktext=ticks),
                      yaxis_title="soft weight of the left branch", yaxis_range=[-0.05, 1.05],
                      margin=dict(l=10, r=10, t=50, b=60))
    return fig


def _check_alphas(alphas: Sequence[float]) -> list[float]:
    values = sorted(float(a) for a in alphas)
    if not values or any(not np.isfinite(a) or a <= 0 for a in values):
        raise ValueError(f"alphas must be positive numbers; got {list(alphas)!r}.")
    return values
