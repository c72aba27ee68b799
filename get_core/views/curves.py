"""Loss curves of a run: plain metric points in, a plotly figure out (no streamlit here).

Points are any objects with the attributes of ``get_core.runs.store.MetricPoint``: ``phase``, ``start``, ``stage``,
``epoch``, ``step`` (stage * n_epochs + epoch, a run-wide epoch axis), ``alpha``, ``soft_loss`` and ``hard_loss``
(MSE on the min-max scaled target; None where unknown, e.g. the soft loss before a stage's first epoch), and for a
class run ``hard_accuracy`` (the hard-split tree's training accuracy at the engine's checkpoints).
With the run's ``y_scale`` (the training targets' range, by which the trainer divided them) the curves show RMSE in
the target's own units, ``sqrt(MSE) * y_scale``, which people can compare with the run's test RMSE.
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any, Iterable, Mapping, Sequence

import plotly.graph_objects as go
from plotly.colors import qualitative
from plotly.subplots import make_subplots

WAITING_Y = 0.78  # the waiting note sits inside the top plot, clear of both subplot titles (paper y 1.0 and ~0.46)
POLISH_NOTE_Y = 0.36  # inside the bottom (hard loss) plot, below its title
LEGEND_STARTS = 10  # more starts than this (a race has up to 128) share legend entries (``legend_groups``)
DROPPED_OPACITY, DROPPED_RANK = 0.35, 10_000  # dropped starts: faint lines, their entry after the survivors'
FIT_COLUMNS = 4  # a search's fits: panels per row (fits_figure)
#: The loss curves' plots: (the point's attribute, the plot's title); a class run's adds ``ACCURACY_PLOT`` below.
PLOTS = (("soft_loss", "soft loss (sigmoid routing)"), ("hard_loss", "hard loss (the tree's own splits)"))
ACCURACY_PLOT = ("hard_accuracy", "training accuracy of the tree's own (hard) splits, at each checkpoint")
ACCURACY_AXIS = "accuracy (%)"
BRIER = "Brier score"
REFIT = "refit, "  # how ``runs.search`` names the refit's fit: "refit, " + the chosen fit's own name
#: Under the per-fit panels: why a curve that rises from its first checkpoint does not make the fit worse.
BEST_CHECKPOINT = ("Each fit keeps the tree of its best checkpoint (the lowest hard loss of any start, the CART start "
                   "included), not its last: a curve that rises never makes the fit worse than where it started.")
ACCURACY_HEIGHT = 200  # px added for a class run's accuracy plot
MAX_POINTS_PER_LINE = 400  # thinned evenly beyond this (always keeping the last point) so live redraws stay cheap


def loss_curves_figure(points: Iterable[Any], *, n_epochs: int | None = None, n_stages: int | None = None,
                       title: str | None = None, height: int = 460, y_scale: float | None = None,
                       fits: Sequence[Mapping[str, Any]] | None = None, classes: bool = False,
                       shown_fits: Sequence[int] | None = None) -> go.Figure:
    """Soft loss (top) and hard loss (below) against epochs, one colour per start, stages split by dotted lines;
    RMSE in the target's units when ``y_scale`` is given, else MSE of the scaled target; with ``classes`` (a
    classification run) the Brier score: the squared distance between a row's class shares and its class, and a
    third plot of the hard-split tree's training accuracy in %. A search's several ``fits`` (``runs.search.FITS``:
    each fit's first stage and name) get a small panel each instead (``fits_figure``; ``shown_fits``: which)."""
    if fits is not None and len(fits) > 1:
        return fits_figure(points, fits, y_scale=y_scale, classes=classes, shown=shown_fits)
    by_start: dict[int, list[Any]] = defaultdict(list)
    polished: list[Any] = []
    for point in points:
        if point.phase == "optimize":
            by_start[int(point.start)].append(point)
        elif point.phase == "polish":
            polished.append(point)
    plots = PLOTS + (ACCURACY_PLOT,) if classes else PLOTS
    figure = make_subplots(rows=len(plots), cols=1, shared_xaxes=True, vertical_spacing=0.08,
                           subplot_titles=[title for _, title in plots])
    palette = qualitative.Plotly
    legend = legend_groups(by_start)
    for start in sorted(by_start):
        line = _thin(sorted(by_start[start], key=lambda p: p.step))
        color = palette[start % len(palette)]
        group, first_of_group, dropped = legend[start]
        for row, (attribute, _) in enumerate(plots, start=1):
            shown = [p for p in line if getattr(p, attribute, None) is not None]
            plotted = [_percent(p.hard_accuracy) if attribute == "hard_accuracy" else
                       _plotted(getattr(p, attribute), y_scale) for p in shown]
            figure.add_trace(go.Scatter(
                x=[p.step for p in shown], y=plotted, mode="lines",
                name=group, legendgroup=group, showlegend=row == 1 and first_of_group,
                legendrank=DROPPED_RANK if dropped else 1000 + start,  # the survivors' entries first
                line={"color": color, "width": 1 if dropped else 1.5}, opacity=DROPPED_OPACITY if dropped else 1.0,
                customdata=[[p.stage + 1, p.epoch, p.alpha] for p in shown],
                hovertemplate=(f"start {start}<br>stage %{{customdata[0]}}, epoch %{{customdata[1]}}"
                               "<br>alpha %{customdata[2]:.3g}<br>"
                               + ("accuracy %{y:.1f}%" if attribute == "hard_accuracy" else "loss %{y:.4g}")
                               + "<extra></extra>")),
                row=row, col=1)
    if n_epochs and n_stages:
        for stage in range(1, n_stages):
            figure.add_vline(x=stage * n_epochs, line={"dash": "dot", "color": "grey", "width": 1})
    # a Brier score reaches 0 on a perfectly fitted training set, where a log axis would lose the curve
    figure.update_yaxes(type="linear" if classes else "log", title_text=BRIER if classes else
                        "MSE (scaled y)" if y_scale is None else "RMSE (target units)")
    if classes:
        figure.update_yaxes(type="linear", title_text=ACCURACY_AXIS, ticksuffix="%", row=len(plots), col=1)
    figure.update_xaxes(title_text="epoch (all stages)", row=len(plots), col=1)
    figure.update_layout(height=height + (ACCURACY_HEIGHT if classes else 0),
                         margin={"l": 10, "r": 10, "t": 50 if title else 30, "b": 10},
                         title=title, legend={"orientation": "h", "yanchor": "top", "y": -0.18},  # below the x title
                         uirevision="keep-zoom")
    if not by_start:
        figure.add_annotation(text="waiting for the first epochs...", showarrow=False, xref="paper", yref="paper",
                              x=0.5, y=WAITING_Y)
    note = race_note(by_start)
    if note:
        figure.add_annotation(text=note, showarrow=False, xref="paper", yref="paper", x=1.0, xanchor="right",
                              y=WAITING_Y)
    note = polish_note(by_start, polished, y_scale, classes)
    if note:
        figure.add_annotation(text=note, showarrow=False, xref="paper", yref="paper", x=1.0, xanchor="right",
                              y=POLISH_NOTE_Y)
    return figure


def fits_figure(points: Iterable[Any], fits: Sequence[Mapping[str, Any]], *, y_scale: float | None = None,
                columns: int = FIT_COLUMNS, classes: bool = False, shown: Sequence[int] | None = None) -> go.Figure:
    """A search's fits as small multiples: each fit's hard loss (a class run's: its hard training accuracy, in %) in a
    panel of its own, on its own epochs (a fit's stages are numbered after the earlier fits' on the run's axis, so one
    shared axis joined fit to fit by diagonal lines, issue 35), one colour per start; the y axes shared, so panels
    compare. ``shown``: the indices of the fits to draw (``main_fits``; default all). A fit with no checkpoint yet
    gets no panel (an empty one read as a fit that failed): the title counts them, but not a fit that trains no
    splits (``"curve": False``: a class search's depth 0, one logistic model)."""
    attribute = "hard_accuracy" if classes else "hard_loss"
    firsts = [int(fit["first_stage"]) for fit in fits]
    lines: dict[tuple[int, int], list[Any]] = defaultdict(list)
    for point in points:
        if point.phase == "optimize" and getattr(point, attribute, None) is not None:
            fit = max(i for i, first in enumerate(firsts) if first <= point.stage or i == 0)
            lines[(fit, int(point.start))].append(point)
    wanted = range(len(fits)) if shown is None else shown
    drawn = [i for i in wanted if any(fit == i for fit, _ in lines)]
    columns = max(1, min(columns, len(drawn)))
    rows = max(1, math.ceil(len(drawn) / columns))
    figure = make_subplots(rows=rows, cols=columns, shared_yaxes=True, horizontal_spacing=0.03,
                           vertical_spacing=min(0.12, 0.5 / rows),
                           subplot_titles=[str(fits[i]["name"]) for i in drawn] or None)
    palette = qualitative.Plotly
    for (fit, start), line in sorted(lines.items()):
        if fit not in drawn:
            continue
        place = drawn.index(fit)
        points_shown = _thin(sorted(line, key=lambda p: p.step))
        figure.add_trace(go.Scatter(
            x=[_own_epoch(p, firsts[fit]) for p in points_shown],
            y=[_percent(p.hard_accuracy) if classes else _plotted(p.hard_loss, y_scale) for p in points_shown],
            mode="lines", showlegend=False, line={"color": palette[start % len(palette)], "width": 1.2},
            hovertemplate=f"{fits[fit]['name']}, start {start}<br>epoch %{{x}}<br>"
                          + ("training accuracy %{y:.1f}%" if classes else "hard loss %{y:.4g}") + "<extra></extra>"),
            row=place // columns + 1, col=place % columns + 1)
    if classes:
        figure.update_yaxes(ticksuffix="%")
        figure.update_yaxes(title_text=ACCURACY_AXIS, col=1)
    else:
        figure.update_yaxes(type="log")
        figure.update_yaxes(title_text="MSE (scaled y)" if y_scale is None else "RMSE (target units)", col=1)
    figure.update_annotations(font_size=11)
    what = "training accuracy (hard splits)" if classes else "hard loss"
    which = "each fit of the search" if shown is None else "the fits that made the run's tree"
    waiting = len([i for i in wanted if i not in drawn and fits[i].get("curve", True)])
    title = (f"{what} of {which}, each on its own epochs (one colour per start)"
             + (f"; {waiting} fit{'s' if waiting > 1 else ''} with no checkpoint yet" if waiting else ""))
    figure.update_layout(height=150 * rows + 90, margin={"l": 10, "r": 10, "t": 60, "b": 10}, uirevision="keep-zoom",
                         title=title)
    if not drawn:
        figure.add_annotation(text="waiting for the first checkpoint...", showarrow=False, xref="paper",
                              yref="paper", x=0.5, y=0.5)
    return figure


def main_fits(fits: Sequence[Mapping[str, Any]]) -> list[int]:
    """The indices of the fits that made the run's tree: the chosen fit and its refit once the refit has begun
    (``runs.search`` names it ``REFIT`` + the chosen fit's name), else the latest fit."""
    if not fits:
        return []
    last = len(fits) - 1
    name = str(fits[last]["name"])
    if not name.startswith(REFIT):
        return [last]
    chosen = [i for i in range(last) if fits[i]["name"] == name[len(REFIT):]]
    return chosen[-1:] + [last]


def _own_epoch(point: Any, first_stage: int) -> int:
    """A point's epoch counted from its fit's first stage: its run-wide step less the earlier fits' stages (this
    fit's epochs per stage are the step's, ``step = stage * n_epochs + epoch``)."""
    if first_stage == 0:
        return int(point.step)
    per_stage = (point.step - point.epoch) // point.stage
    return int(point.step - first_stage * per_stage)


def legend_groups(by_start: dict[int, list[Any]]) -> dict[int, tuple[str, bool, bool]]:
    """Per start: (its legend entry, whether its trace shows that entry, whether the race dropped it). Up to
    ``LEGEND_STARTS`` starts each have an entry. A race has up to 128: there the dropped ones share one entry (their
    lines faint), and the starts still racing have one each when they are few enough, else one between them."""
    last = {start: max(p.step for p in line) for start, line in by_start.items()}
    if len(last) <= LEGEND_STARTS:
        return {start: (f"start {start}", True, False) for start in sorted(last)}
    end = max(last.values())
    alive = [start for start in sorted(last) if last[start] == end]
    dropped = [start for start in sorted(last) if last[start] < end]
    groups = {start: (f"dropped starts ({len(dropped)})", start == dropped[0], True) for start in dropped}
    if len(alive) <= LEGEND_STARTS:
        return {**groups, **{start: (f"start {start}", True, False) for start in alive}}
    return {**groups, **{start: (f"starts racing ({len(alive)})", start == alive[0], False) for start in alive}}


def polish_note(by_start: dict[int, list[Any]], polished: Sequence[Any], y_scale: float | None,
                classes: bool = False) -> str | None:
    """After a polish (``get_core.engine.polish``, whose epochs restart per level and so are not drawn as lines): the best
    hard loss the curves reached and the best the polish has reported, a whole-tree loss (its subtrees' losses
    weighted by their rows, plus the rest of the tree's), named as the plot names it (a class run's: the Brier
    score). None before the polish reports."""
    seen = [p.hard_loss for line in by_start.values() for p in line if p.hard_loss is not None]
    after = [p.hard_loss for p in polished if p.hard_loss is not None]
    if not seen or not after:
        return None
    unit = "Brier score" if classes else "RMSE" if y_scale is not None else "MSE"
    before, best = _plotted(min(seen), y_scale), _plotted(min(seen + after), y_scale)
    if best >= before:
        return f"then the subtree polish: no lower hard loss yet (best {unit} {before:.4g})"
    return f"then the subtree polish: best hard {unit} {before:.4g} -> {best:.4g}"


def race_note(by_start: dict[int, list[Any]]) -> str | None:
    """With racing starts (a time budget, ``get_core.engine.race``): how many starts are still in the race, whose lines
    reach the latest epoch; the others' lines end where the race dropped them. None when every start is alive."""
    last = {start: max(p.step for p in line) for start, line in by_start.items()}
    if not last:
        return None
    alive = sum(step == max(last.values()) for step in last.values())
    if alive == len(last):
        return None
    return f"racing: {alive} of {len(last)} starts alive; the others were dropped for a worse hard loss"


def _percent(share: float) -> float:
    return 100.0 * share


def _plotted(loss: float, y_scale: float | None) -> float:
    """What the figure plots for a loss: the MSE as it is, or with ``y_scale`` the RMSE in the target's units."""
    return loss if y_scale is None else math.sqrt(max(loss, 0.0)) * y_scale


def _thin(line: Sequence[Any], limit: int = MAX_POINTS_PER_LINE) -> Sequence[Any]:
    if len(line) <= limit:
        return line
    step = len(line) / (limit - 1)
    return [line[int(i * step)] for i in range(limit - 1)] + [line[-1]]
