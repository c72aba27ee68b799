"""The live run panel: a run's status, progress with ETA, loss curves, its search chart and Cancel.

Shown by the Train page (the run just started) and the Runs page (the run picked); it refreshes itself only while
the run is queued or running.
"""

from __future__ import annotations

import functools
import time

import streamlit as st

from get_core.runs import launch
from get_core.runs.estimate import format_seconds
from get_core.runs.results import model_inputs
from get_core.runs.spec import FITS
from get_core.runs.store import Run, RunNotFound, RunStatus, RunStore
from get_core.views.curves import BEST_CHECKPOINT, loss_curves_figure, main_fits
from pages import common, search_ui

LIVE_REFRESH_S = 1.0  # the live panel's refresh period while a run is QUEUED or RUNNING
# Streamlit's Material icons for Markdown (titles, captions): they ship with Streamlit, while emoji need a colour emoji
# font the machine may lack (empty boxes). Plain-text places (select options, table cells) show the status word only.
STATUS_ICONS = {RunStatus.QUEUED: ":material/hourglass_empty:", RunStatus.RUNNING: ":material/directions_run:",
                RunStatus.FINISHED: ":material/check_circle:", RunStatus.FAILED: ":material/error:",
                RunStatus.CANCELLED: ":material/stop_circle:"}


def run_panel(run_id: int) -> None:
    """Status, progress with ETA, loss curves and Cancel for one run; refreshes itself only while it is active."""
    try:
        run = common.get_store().get_run(run_id)
    except RunNotFound:
        st.info(f"Run {run_id} no longer exists.")
        return
    live = not run.status.is_finished()

    @st.fragment(run_every=LIVE_REFRESH_S if live else None)
    @common.guarded  # a fragment's own reruns bypass the page's guard
    def panel() -> None:
        if live:
            common.refresh_queue()
        try:
            current = common.get_store().get_run(run_id)
        except RunNotFound:
            st.info(f"Run {run_id} was deleted.")
            return
        _panel_body(current)
        if live and current.status.is_finished():
            st.rerun()  # redraw the page once without the timer, so a finished run stops refreshing

    panel()


def _panel_body(run: Run) -> None:
    store = common.get_store()
    st.subheader(f"{STATUS_ICONS[run.status]} Run #{run.run_id}: {common.plain(run.name)}")
    st.caption(f"{run.status.value} · dataset {common.plain(run.dataset_name)} ({run.n_rows:,} rows, "
               f"{model_inputs(store, run)} inputs) · {common.describe_params(run.params)}")
    if run.status is RunStatus.QUEUED:
        ahead = [r for r in store.list_runs([RunStatus.QUEUED]) if r.run_id < run.run_id]
        st.info(f"Waiting for a free slot: {store.count_running()} run(s) training, {len(ahead)} queued ahead "
                f"(at most {launch.max_running()} at once).")
    st.progress(min(1.0, max(0.0, run.progress)), text=progress_text(run))
    classify = is_class_run(run)
    metrics = store.list_metrics(run.run_id)
    if classify:
        _class_metrics(store, run, metrics)
    else:
        columns = st.columns(4)
        columns[0].metric("Best train R² so far", "–" if run.best_hard_r2 is None else f"{run.best_hard_r2:.4f}",
                          help="R² of the best hard-split tree on the training rows")
        columns[1].metric("Elapsed", "–" if run.duration() is None else format_seconds(run.duration()))
        columns[2].metric("Test R²", "–" if run.test_r2 is None else f"{run.test_r2:.4f}")
        columns[3].metric("Test RMSE", "–" if run.test_rmse is None else f"{run.test_rmse:.4g}")
    if not run.status.is_finished():
        if run.cancel_requested:
            st.warning("Cancelling: the worker keeps the best tree found so far...")
        elif st.button("Cancel run", key=f"cancel-{run.run_id}", type="secondary"):
            launch.cancel_run(store, run.run_id)
            st.warning("Cancelling: the worker keeps the best tree found so far...")
    elif run.status is RunStatus.FAILED:
        st.error(common.plain(run.error or "The run failed."))
    elif run.status is RunStatus.CANCELLED:
        st.warning(common.plain(run.error or "The run was cancelled."))
    else:
        st.success(f"Finished in {format_seconds(run.duration() or 0)}.")
    search_ui.search_section(run)  # a run whose depth or features per split are chosen for the user: its chart
    y_scale, fits = target_scale(store, run.run_id), store.get_json(run.run_id, FITS)
    if y_scale is None and not classify and not run.status.is_finished():
        # its worker writes the scale before training: until then no curve, and the waiting chart's axis already
        # names the unit its curves will have (it read "MSE (scaled y)", then "RMSE (target units)")
        metrics, y_scale = [], 1.0
    curves = functools.partial(loss_curves_figure, metrics, n_epochs=run.n_epochs, n_stages=run.n_stages,
                               y_scale=y_scale, fits=fits, classes=classify)
    figure = curves(shown_fits=main_fits(fits or []))
    if classify:
        st.caption("The curves show the Brier score on the training rows: the squared distance between the class "
                   "shares a row's leaf gives and the row's own class (0 is perfect; guessing every class's share "
                   "equally gives 1 − 1/classes). Lower is better. Below them, the accuracy of the tree's own "
                   "(hard) splits on the training rows, measured at each checkpoint of the training.")
    st.plotly_chart(figure, key=f"curves-{run.run_id}")
    if fits and len(fits) > 1:
        st.caption(BEST_CHECKPOINT)
        with st.expander(f"Every fit of the search ({len(fits)})"):
            st.plotly_chart(curves(), key=f"curves-all-{run.run_id}")


def is_class_run(run: Run) -> bool:
    """Whether the run predicts a class target (its Data page choice)."""
    return (run.params.get("data") or {}).get("task") == "classification"


def _class_metrics(store: RunStore, run: Run, metrics: list) -> None:
    """A class run's figures in words: elapsed time, the training rows' accuracy (live: the best at a checkpoint so
    far, from the metric points; once ended: the run's tree's), then the share of test rows classified correctly,
    balanced accuracy and log loss."""
    scores = store.get_json(run.run_id, "class_scores") or {}
    model = store.get_json(run.run_id, "model") if run.status.is_finished() else None
    train_accuracy = ((model or {}).get("meta") or {}).get("train_accuracy")
    live = [p.hard_accuracy for p in metrics if p.phase == "optimize" and p.hard_accuracy is not None]
    if train_accuracy is None and live:
        train_accuracy = max(live)
    columns = st.columns(5)
    shown = lambda v, f: "–" if v is None else format(v, f)  # noqa: E731
    columns[0].metric("Elapsed", "–" if run.duration() is None else format_seconds(run.duration()))
    columns[1].metric("Train accuracy", shown(train_accuracy, ".1%"),
                      help="the share of training rows the tree's own (hard) splits classify correctly; while it "
                           "trains, the best reached at a checkpoint so far")
    columns[2].metric("Test accuracy", shown(scores.get("accuracy"), ".1%"),
                      help="the share of the test rows set aside before training that the tree classifies correctly")
    columns[3].metric("Balanced accuracy", shown(scores.get("balanced_accuracy"), ".1%"),
                      help="the mean over classes of the share of each class's test rows classified correctly: "
                           "what always guessing the largest class cannot game")
    columns[4].metric("Log loss", shown(scores.get("log_loss"), ".3f"),
                      help="how well the predicted class probabilities fit the test rows (lower is better)")


def target_scale(store: RunStore, run_id: int) -> float | None:
    """The run's target scale (``views.curves``), None for runs stored before the worker wrote it."""
    scale = store.get_json(run_id, "target_scale")
    return float(scale["y_scale"]) if isinstance(scale, dict) else None


def progress_text(run: Run) -> str:
    parts = [f"{run.percent}%"]
    if run.status.is_finished():
        parts.append({RunStatus.FINISHED: "done", RunStatus.FAILED: "failed",
                      RunStatus.CANCELLED: "stopped"}[run.status])
    elif run.phase == "baselines":
        parts.append("step 2 of 2: fitting the baselines (tuned CART, a 100-tree random forest, HistGradientBoosting "
                     "and GET with sparse or dense splits)")
    elif run.stage is not None and run.n_stages:
        parts.append(f"step 1 of 2, {run.phase or 'optimize'}: stage {run.stage + 1}/{run.n_stages}, epoch "
                     f"{run.epoch}/{run.n_epochs}")
    eta = run.eta_seconds()
    if eta is not None:
        parts.append(f"about {format_seconds(eta)} left")
    if run.status is RunStatus.RUNNING and run.heartbeat_at is not None:
        silent = time.time() - run.heartbeat_at
        if silent > 5:
            parts.append(f"no heartbeat for {silent:.0f} s")
    return " · ".join(parts)
