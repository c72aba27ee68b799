"""UI helpers shared by the pages: the run store, the selected run, the live run panel, error display.

Pages call ``get_core`` through these helpers and never touch SQL or torch. Every page body runs inside
``guarded`` so that a problem shows as a short message, never a traceback.
"""

from __future__ import annotations

import functools
import logging
import time
import traceback
from pathlib import Path
from typing import Any, Callable

import streamlit as st

from get_core.data import DataError
from get_core.runs import launch
from get_core.runs.estimate import format_seconds
from get_core.runs.store import Run, RunNotFound, RunStatus, RunStore, StoreError, default_db_path
from get_core.views.curves import loss_curves_figure

LIVE_REFRESH_S = 1.0  # the live panel's refresh period while a run is QUEUED or RUNNING
STATUS_ICONS = {RunStatus.QUEUED: "⏳", RunStatus.RUNNING: "🏃", RunStatus.FINISHED: "✅",
                RunStatus.FAILED: "❌", RunStatus.CANCELLED: "⏹️"}
_LOG = logging.getLogger("get_explorer")


@st.cache_resource(show_spinner=False)
def _open_store(path: str) -> RunStore:
    return RunStore(path)


def get_store() -> RunStore:
    """The process-wide store for the configured database (``GET_EXPLORER_DB``)."""
    return _open_store(default_db_path())


def calibration_path() -> Path:
    store = get_store()
    base = Path(store.path).parent if store.is_file else Path(default_db_path()).parent
    return base / "calibration.json"


def refresh_queue() -> None:
    """Fail stale runs and start queued ones (cheap; called on every render and live refresh)."""
    try:
        launch.dispatch(get_store())
    except StoreError as exc:
        st.warning(f"The run queue could not be updated: {exc}")


def guarded(body: Callable[[], None]) -> Callable[[], None]:
    """Run a page body; known problems show their own message, anything else a short one (logged in full)."""

    @functools.wraps(body)
    def page() -> None:
        try:
            body()
        except (DataError, StoreError) as exc:
            st.error(str(exc))
        except Exception as exc:  # the UI never shows a traceback; the server log keeps it
            _LOG.error("page %s failed:\n%s", body.__name__, traceback.format_exc())
            st.error(f"Something went wrong ({type(exc).__name__}: {exc}). Reload the page; if it happens again, "
                     "the server log has the details.")

    return page


# ------------------------------------------------------------------------------------------ selected run
def selected_run_id() -> int | None:
    """The run the user is looking at: kept in the URL (``?run=ID``) so a reload finds it again."""
    value = st.session_state.get("run_id") or st.query_params.get("run")
    try:
        return int(value) if value is not None else None
    except (TypeError, ValueError):
        return None


def select_run(run_id: int | None) -> None:
    st.session_state["run_id"] = run_id
    if run_id is None:
        st.query_params.pop("run", None)
    else:
        st.query_params["run"] = str(run_id)


def run_label(run: Run) -> str:
    return f"#{run.run_id} {run.name} ({STATUS_ICONS[run.status]} {run.status.value.lower()})"


def remember(keys: list[str], defaults: dict[str, Any]) -> None:
    """Give widgets ``keys`` their last values (Streamlit forgets a widget's state when its page is left)."""
    saved = st.session_state.setdefault("_remembered", {})
    for key in keys:
        if key not in st.session_state:
            st.session_state[key] = saved.get(key, defaults.get(key))
        saved[key] = st.session_state[key]


# ------------------------------------------------------------------------------------------ live run panel
def run_panel(run_id: int) -> None:
    """Status, progress with ETA, loss curves and Cancel for one run; refreshes itself only while it is active."""
    try:
        run = get_store().get_run(run_id)
    except RunNotFound:
        st.info(f"Run {run_id} no longer exists.")
        return
    live = not run.status.is_finished()

    @st.fragment(run_every=LIVE_REFRESH_S if live else None)
    @guarded  # a fragment's own reruns bypass the page's guard
    def panel() -> None:
        if live:
            refresh_queue()
        try:
            current = get_store().get_run(run_id)
        except RunNotFound:
            st.info(f"Run {run_id} was deleted.")
            return
        _panel_body(current)
        if live and current.status.is_finished():
            st.rerun()  # redraw the page once without the timer, so a finished run stops refreshing

    panel()


def _panel_body(run: Run) -> None:
    store = get_store()
    st.subheader(f"{STATUS_ICONS[run.status]} Run #{run.run_id}: {run.name}")
    st.caption(f"{run.status.value} · dataset {run.dataset_name} ({run.n_rows:,} rows, {run.n_features} inputs) · "
               f"{describe_params(run.params)}")
    if run.status is RunStatus.QUEUED:
        ahead = [r for r in store.list_runs([RunStatus.QUEUED]) if r.run_id < run.run_id]
        st.info(f"Waiting for a free slot: {store.count_running()} run(s) training, {len(ahead)} queued ahead "
                f"(at most {launch.max_running()} at once).")
    st.progress(min(1.0, max(0.0, run.progress)), text=progress_text(run))
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
        st.error(run.error or "The run failed.")
    elif run.status is RunStatus.CANCELLED:
        st.warning(run.error or "The run was cancelled.")
    else:
        st.success(f"Finished in {format_seconds(run.duration() or 0)}.")
    figure = loss_curves_figure(store.list_metrics(run.run_id, phase="optimize"), n_epochs=run.n_epochs,
                                n_stages=run.n_stages)
    st.plotly_chart(figure, key=f"curves-{run.run_id}")


def progress_text(run: Run) -> str:
    parts = [f"{100 * run.progress:.0f}%"]
    if run.status.is_finished():
        parts.append({RunStatus.FINISHED: "done", RunStatus.FAILED: "failed",
                      RunStatus.CANCELLED: "stopped"}[run.status])
    elif run.phase == "baselines":
        parts.append("fitting the CART and random-forest baselines")
    elif run.stage is not None and run.n_stages:
        parts.append(f"{run.phase or 'optimize'}: stage {run.stage + 1}/{run.n_stages}, epoch {run.epoch}/"
                     f"{run.n_epochs}")
    eta = run.eta_seconds()
    if eta is not None:
        parts.append(f"about {format_seconds(eta)} left")
    if run.status is RunStatus.RUNNING and run.heartbeat_at is not None:
        silent = time.time() - run.heartbeat_at
        if silent > 5:
            parts.append(f"no heartbeat for {silent:.0f} s")
    return " · ".join(parts)


def describe_params(params: Any) -> str:
    config = params.get("config", {})
    return (f"depth {config.get('depth')}, {config.get('leaf')} leaves, {config.get('n_starts')} starts × "
            f"{config.get('n_epochs')} epochs × {config.get('n_alphas')} alphas, seed {params.get('seed')}")
