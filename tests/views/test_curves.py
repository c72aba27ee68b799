"""Loss curves: RMSE in the target's units when the run's scale is known, a waiting note clear of the titles, and
what the polish after them reached."""

import math

import pytest

from get_core.runs.store import MetricPoint
from get_core.views.curves import loss_curves_figure, main_fits


def _points() -> list[MetricPoint]:
    return [MetricPoint("optimize", 0, 0, epoch, epoch, 5.0, 0.04 / (epoch + 1), 0.01 / (epoch + 1))
            for epoch in range(5)]


def test_the_curves_show_rmse_in_the_targets_units_given_its_scale():
    figure = loss_curves_figure(_points(), y_scale=20.0)
    hard = next(t for t in figure.data if t.yaxis == "y2")
    assert hard.y[0] == pytest.approx(math.sqrt(0.01) * 20.0)  # 2.0 in the target's units, not MSE 0.01
    assert figure.layout.yaxis.title.text == "RMSE (target units)"


def test_without_a_scale_the_curves_say_they_are_scaled_mse():
    figure = loss_curves_figure(_points())
    assert next(t for t in figure.data if t.yaxis == "y2").y[0] == pytest.approx(0.01)
    assert figure.layout.yaxis.title.text == "MSE (scaled y)"


def test_the_waiting_note_does_not_overlap_a_subplot_title():
    figure = loss_curves_figure([])
    note = next(a for a in figure.layout.annotations if a.text.startswith("waiting"))
    titles = [a for a in figure.layout.annotations if "loss" in a.text]
    assert len(titles) == 2 and all(abs(note.y - title.y) > 0.1 for title in titles)


def test_after_a_polish_the_figure_says_what_it_reached_without_drawing_its_restarting_epochs():
    def polish(*hard_losses):
        return [MetricPoint("polish", start, 0, 3, 3, 5.0, 0.002, hard) for start, hard in enumerate(hard_losses)]

    figure = loss_curves_figure(_points() + polish(0.0049, 0.0016), y_scale=20.0)
    assert len(figure.data) == 2  # start 0's soft and hard lines: the polish adds none
    notes = [a.text for a in figure.layout.annotations if "polish" in a.text]
    assert notes == ["then the subtree polish: best hard RMSE 0.8944 -> 0.8"]  # the curves' best MSE is 0.002
    worse = loss_curves_figure(_points() + polish(0.0049), y_scale=20.0)
    assert [a.text for a in worse.layout.annotations if "polish" in a.text] == [
        "then the subtree polish: no lower hard loss yet (best RMSE 0.8944)"]
    assert not [a for a in loss_curves_figure(_points()).layout.annotations if "polish" in a.text]


def _race(n_starts: int, survivors: set[int], end: int = 40) -> list[MetricPoint]:
    """``n_starts`` starts; the ``survivors`` reach epoch ``end``, the others stop at epoch 10 (dropped)."""
    return [MetricPoint("optimize", start, 0, epoch, epoch, 5.0, 0.04, 0.01)
            for start in range(n_starts) for epoch in range(0, (end if start in survivors else 10) + 1, 5)]


def _legend(figure) -> list[str]:
    shown = [t for t in figure.data if t.showlegend]
    return [t.name for t in sorted(shown, key=lambda t: t.legendrank)]


def test_a_few_starts_have_an_entry_each():
    assert _legend(loss_curves_figure(_race(4, {0, 1, 2, 3}))) == ["start 0", "start 1", "start 2", "start 3"]


def test_a_race_lists_its_survivors_then_one_faint_entry_for_every_dropped_start():
    figure = loss_curves_figure(_race(128, {0, 5, 17}))
    assert _legend(figure) == ["start 0", "start 5", "start 17", "dropped starts (125)"]
    dropped = [t for t in figure.data if t.legendgroup == "dropped starts (125)"]
    assert len(dropped) == 2 * 125 and all(t.opacity < 1 for t in dropped)  # soft and hard line of each
    assert all(t.opacity == 1 for t in figure.data if t.name == "start 5")


def test_before_the_first_rung_a_race_has_one_entry_for_all_its_starts():
    figure = loss_curves_figure(_race(128, set(range(128))))
    assert _legend(figure) == ["starts racing (128)"]
    assert sum(t.legendgroup == "starts racing (128)" for t in figure.data) == 2 * 128  # one click hides them all


def _search_points(n_epochs: tuple[int, ...] = (10, 6, 8), starts: int = 2, stages: int = 2) -> list[MetricPoint]:
    """Points of a search's fits as the worker numbers them: each fit's stages after the earlier fits'."""
    points, first = [], 0
    for n in n_epochs:
        for start in range(starts):
            for stage in range(stages):
                for epoch in range(0, n + 1, 2):
                    g = first + stage
                    points.append(MetricPoint("optimize", start, g, epoch, g * n + epoch, 5.0, 0.05,
                                              0.02 / (epoch + 1)))
        first += stages
    return points


def test_a_searchs_fits_get_a_panel_each_on_their_own_epochs_without_lines_joining_them():
    """Issue 35, defect 5: 21 fits on one epoch axis, joined by diagonal lines, were unreadable."""
    fits = [{"first_stage": 0, "name": "depth 1"}, {"first_stage": 2, "name": "depth 2"},
            {"first_stage": 4, "name": "refit, depth 2"}]
    figure = loss_curves_figure(_search_points(), fits=fits)
    assert [a.text for a in figure.layout.annotations][:3] == ["depth 1", "depth 2", "refit, depth 2"]
    axes = {}
    for trace in figure.data:
        axes.setdefault(trace.xaxis, []).append(trace)
    assert len(axes) == 3 and all(len(traces) == 2 for traces in axes.values())  # one line per start, per panel
    for traces, n in zip((axes[k] for k in sorted(axes, key=lambda a: int(a[1:] or 1))), (10, 6, 8)):
        for trace in traces:
            assert trace.x[0] == 0 and trace.x[-1] == 2 * n  # its own epochs: 0 .. stages x n
            assert list(trace.x) == sorted(trace.x)  # no jump back: no diagonal join


def test_a_single_fit_keeps_the_soft_and_hard_curves():
    figure = loss_curves_figure(_points(), fits=[{"first_stage": 0, "name": "depth 4"}])
    assert {t.yaxis for t in figure.data} == {"y", "y2"}


def _class_points() -> list[MetricPoint]:
    return [MetricPoint("optimize", 0, 0, epoch, epoch, 5.0, 0.5 / (epoch + 1), 0.4 / (epoch + 1),
                        0.5 + 0.1 * epoch) for epoch in range(5)]


def test_a_class_runs_curves_add_its_hard_training_accuracy_in_percent_in_words():
    figure = loss_curves_figure(_class_points(), classes=True)
    accuracy = [t for t in figure.data if t.yaxis == "y3"]
    assert len(accuracy) == 1 and list(accuracy[0].y) == pytest.approx([50.0, 60.0, 70.0, 80.0, 90.0])
    assert figure.layout.yaxis3.title.text == "accuracy (%)" and figure.layout.yaxis3.type == "linear"
    assert figure.layout.yaxis.title.text == "Brier score"
    assert any("training accuracy" in a.text for a in figure.layout.annotations)
    assert "y3" not in {t.yaxis for t in loss_curves_figure(_points()).data}  # regression: no accuracy plot


def test_a_class_searchs_fit_panels_show_each_fits_training_accuracy():
    points = [MetricPoint("optimize", 0, stage, epoch, stage * 4 + epoch, 5.0, 0.3, 0.2, 0.6 + 0.05 * stage)
              for stage in range(4) for epoch in range(1, 5)]
    fits = [{"first_stage": 0, "name": "depth 1"}, {"first_stage": 2, "name": "depth 2"}]
    figure = loss_curves_figure(points, fits=fits, classes=True)
    assert "training accuracy" in figure.layout.title.text
    assert [list(t.y) for t in figure.data] == [pytest.approx([60.0] * 4 + [65.0] * 4),
                                                pytest.approx([70.0] * 4 + [75.0] * 4)]
    assert figure.layout.yaxis.title.text == "accuracy (%)"


def test_a_fit_with_no_checkpoint_gets_no_empty_panel_and_the_title_counts_it():
    """Issue 48: 6 of 26 per-fit panels were empty."""
    fits = [{"first_stage": 0, "name": "depth 1"}, {"first_stage": 2, "name": "depth 2"},
            {"first_stage": 4, "name": "depth 3"}, {"first_stage": 6, "name": "refit, depth 2"}]
    points = [p for p in _search_points() if p.stage < 4]  # depth 3 and the refit have no checkpoint yet
    figure = loss_curves_figure(points, fits=fits)
    assert [a.text for a in figure.layout.annotations] == ["depth 1", "depth 2"]
    assert {t.xaxis for t in figure.data} == {"x", "x2"}
    assert figure.layout.title.text.endswith("; 2 fits with no checkpoint yet")


def test_the_main_fits_are_the_chosen_fit_and_its_refit_or_the_fit_under_way():
    fits = [{"first_stage": 0, "name": "depth 1"}, {"first_stage": 2, "name": "depth 2"},
            {"first_stage": 4, "name": "depth 3"}]
    assert main_fits(fits) == [2] and main_fits([]) == []
    fits.append({"first_stage": 6, "name": "refit, depth 2"})
    assert main_fits(fits) == [1, 3]
    fits = fits[:2] + [{"first_stage": 4, "name": "refit, depth 2"}]
    figure = loss_curves_figure(_search_points(), fits=fits, shown_fits=main_fits(fits))
    assert [a.text for a in figure.layout.annotations] == ["depth 2", "refit, depth 2"]
    assert "the fits that made the run's tree" in figure.layout.title.text


def test_a_class_runs_brier_score_is_on_a_linear_axis_and_its_polish_note_names_it():
    """Issue 48: on a log axis a Brier score of 0 lost its curve, and the note said "best MSE 0"."""
    polished = [MetricPoint("polish", 0, 0, 3, 3, 5.0, 0.0, 0.0)]
    figure = loss_curves_figure(_class_points() + polished, classes=True)
    assert figure.layout.yaxis.type == figure.layout.yaxis2.type == "linear"
    assert [a.text for a in figure.layout.annotations if "polish" in a.text] == [
        "then the subtree polish: best hard Brier score 0.08 -> 0"]


def test_a_search_fit_that_trains_no_splits_is_not_waited_for():
    """A class search's depth 0 is one logistic model: no checkpoint will come, so the title does not count it."""
    from get_core.views.curves import fits_figure

    points = [MetricPoint("optimize", 0, 0, e, e, 5.0, 1.0, 1.0, 0.5 + e / 100) for e in range(5)]
    fits = [{"first_stage": 0, "name": "depth 0 (one logistic model)", "curve": False},
            {"first_stage": 0, "name": "depth 1"}]
    figure = fits_figure(points, fits, classes=True)
    assert "no checkpoint" not in figure.layout.title.text
    assert [a.text for a in figure.layout.annotations] == ["depth 1"]
    waiting = fits_figure(points, [*fits, {"first_stage": 2, "name": "depth 2"}], classes=True)
    assert "1 fit with no checkpoint yet" in waiting.layout.title.text
