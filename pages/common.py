"""UI helpers shared by the pages: the run store, the selected run, the live run panel, error display.

Pages call ``get_core`` through these helpers and never touch SQL or torch. Every page body runs inside
``guarded`` so that a problem shows as a short message, never a traceback.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import math
import re
import time
import traceback
from pathlib import Path
from typing import Any, Callable

import streamlit as st

from get_core.config import DEFAULTS
from get_core.data.columns import DataError
from get_core.model.model_file import ModelFormatError
from get_core.runs import estimate, launch
from get_core.runs.estimate import format_seconds
from get_core.runs.results import model_inputs
from get_core.runs.search import FITS
from get_core.runs.store import Run, RunNotFound, RunStatus, RunStore, StoreError, default_db_path
from get_core.views.curves import loss_curves_figure
from get_core.views.search_chart import features_label

LIVE_REFRESH_S = 1.0  # the live panel's refresh period while a run is QUEUED or RUNNING
# Streamlit's Material icons for Markdown (titles, captions): they ship with Streamlit, while emoji need a colour emoji
# font the machine may lack (empty boxes). Plain-text places (select options, table cells) show the status word only.
STATUS_ICONS = {RunStatus.QUEUED: ":material/hourglass_empty:", RunStatus.RUNNING: ":material/directions_run:",
                RunStatus.FINISHED: ":material/check_circle:", RunStatus.FAILED: ":material/error:",
                RunStatus.CANCELLED: ":material/stop_circle:"}
_LOG = logging.getLogger("get_explorer")
_ROUTER_HANDOVER = "_router_handover"  # session key: this session already left Streamlit's legacy pages mode
# A run's caption names these settings when they are not GETConfig's defaults.
OPTIMIZER_DEFAULTS = {"learning_rate": DEFAULTS.learning_rate, "l1": DEFAULTS.l1}


# Human names of GETConfig's settings, as the Train page's widgets call them (Compare two shows these, not field names).
CONFIG_LABELS = {"depth": "Depth", "leaf": "Leaves", "linear_leaves": "Linear leaves",
                 "clip_leaves": "Keep each leaf within the targets it saw", "n_starts": "Starts",
                 "n_epochs": "Epochs per alpha stage", "alpha_range": "Alpha range (min, max)",
                 "n_alphas": "Alpha stages", "learning_rate": "Learning rate", "l1": "L1 penalty",
                 "weight_decay": "Weight decay", "polish": "Polish subtrees", "random_state": "Optimizer seed",
                 "device": "Device", "fixed_alpha": "Fixed alpha", "scaling": "Feature scaling",
                 "max_split_features": "Features per split"}


def number(value: Any, digits: int = 4) -> str:
    """``value`` for people: ``digits`` significant digits (more for a large whole part), from 1,000 up with
    thousands separators (``12,346`` or ``1,234.57``, never ``1.235e+04``), an en dash for a missing or infinite
    value."""
    if value is None or not math.isfinite(float(value)):
        return "\u2013"
    value = float(value)
    if abs(value) < 1000:
        return f"{value:.{digits}g}"
    return f"{value:,.{max(0, digits - len(str(int(abs(value)))))}f}"


def plain(text: Any) -> str:
    """``text`` shown literally where Streamlit renders Markdown: user-given names and get_core's messages may hold
    ``$`` (which starts a formula), ``*``, ``_`` or brackets."""
    return re.sub(r"([\\`*_\[\]#|<>~$])", r"\\\1", str(text)) or " "


def download(where: Any, label: str, data: Any, file_name: str, mime: str, *, key: str,
             help: str | None = None) -> None:
    """A download button that does not rerun the page. A rerun re-registers every lazily made file (``data`` a
    callable) under a new id and drops the old ones, so with Streamlit's default (rerun on click) a second export
    clicked while the first click's rerun ran asked for a dropped file (``Deferred file ... not found``) and
    nothing came (issue 35)."""
    where.download_button(label, data, file_name, mime, key=key, help=help, on_click="ignore")


# ------------------------------------------------------------------------------------------ router handover
# Why: a folder named pages/ beside app.py makes Streamlit start every server process in its legacy "pages directory"
# mode (PagesManager.uses_pages_directory), which runs the URL's file from pages/ directly (script_runner._mpa_v1),
# never app.py, and lists every module of pages/ (common, results ui, ...) as a page, until some run calls
# st.navigation (which clears the flag for the whole process). So a bookmark such as /tree?run=3&node=5 as a fresh
# server's first request lost the router, its wide layout and its sidebar, for every later visit too.
# Streamlit 1.67 has no supported switch: the mode is decided from the folder's existence alone (PagesManager), no
# setting turns it off (client.showSidebarNavigation only hides the list), Streamlit's own advice is to rename the
# folder (which the brief rules out), and no project code runs before that first script run (app.py does not run
# in it, so it cannot be called from there). So every page body, through ``guarded``, calls use_the_router() first:
# in a legacy run it clears the flag and reruns, which keeps the page (its hash is its URL path, the same in both
# modes) and the query string, and app.py's st.navigation takes over from then on. This is the one place that
# touches Streamlit internals. Guarded by tests/e2e/test_deep_link.py (a deep link as the first request).
def _legacy_pages_run(pages_manager: type) -> bool:
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx()
    if ctx is None:  # imported outside a script run
        return False
    if pages_manager.uses_pages_directory:
        return True  # no st.navigation yet in this process: this run came from the pages folder, not app.py
    # Another session may have cleared the flag after this run had started in the legacy mode: the legacy page
    # list names the entry script itself, which app.py's router never does (nor does a page run on its own).
    pages = ctx.pages_manager.get_pages().values()
    main = Path(ctx.main_script_path).resolve()
    return len(pages) > 1 and any(p.get("script_path") and Path(p["script_path"]).resolve() == main for p in pages)


def use_the_router() -> None:
    """If Streamlit ran this page from the pages folder without app.py, rerun the same URL through app.py's router."""
    try:  # Streamlit internals, imported here so that a future release moving them cannot break the pages
        from streamlit.runtime.pages_manager import PagesManager

        legacy = _legacy_pages_run(PagesManager)
    except Exception:  # keep serving the page as Streamlit ran it (tests/e2e/test_deep_link.py will say so)
        _LOG.warning("cannot tell Streamlit's legacy pages mode:\n%s", traceback.format_exc())
        return
    if not legacy:
        return
    if st.session_state.get(_ROUTER_HANDOVER):  # tried once already in this session: never loop
        _LOG.warning("Streamlit stayed in its legacy pages mode; showing the page without the router")
        return
    st.session_state[_ROUTER_HANDOVER] = True
    PagesManager.uses_pages_directory = False
    st.rerun()  # same page hash and query string; app.py's st.navigation resolves them


@st.cache_resource(show_spinner=False)
def _open_store(path: str) -> RunStore:
    return RunStore(path)


def get_store() -> RunStore:
    """The process-wide store for the configured database (``GET_EXPLORER_DB``)."""
    return _open_store(default_db_path())


def calibration_path() -> Path:
    store = get_store()
    return estimate.calibration_path(store.path, store.is_file)


def refresh_queue() -> None:
    """Fail stale runs and start queued ones (cheap; called on every render and live refresh)."""
    store = get_store()  # a store that cannot be opened raises its own sentence, which ``guarded`` shows
    try:
        launch.dispatch(store)
    except StoreError as exc:
        st.warning(f"The run queue could not be updated: {exc}")


def guarded(body: Callable[[], None]) -> Callable[[], None]:
    """Run a page body; known problems show their own message, anything else a short one (logged in full)."""

    @functools.wraps(body)
    def page() -> None:
        use_the_router()  # first thing in every page run (see the router handover above)
        try:
            body()
        except (DataError, ModelFormatError, StoreError) as exc:  # the project's own errors carry a sentence
            st.error(plain(str(exc)))
        except Exception as exc:  # the UI never shows a traceback; the server log keeps it
            _LOG.error("page %s failed:\n%s", body.__name__, traceback.format_exc())
            st.error(plain(f"Something went wrong ({type(exc).__name__}: {exc}). Reload the page; if it happens "
                           "again, the server log has the details."))

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
    return f"#{run.run_id} {run.name} ({run.status.value.lower()})"


def labelled_key(key: str, labels: list[str]) -> str:
    """``key`` with a digest of a run picker's option labels. Streamlit keeps a keyed selectbox's old option labels
    on screen when only the labels change (streamlit#13788): a run that finished still read "(running)" until a
    reload. A new key draws the picker afresh, so its caller keeps the choice and passes it back as the default."""
    return f"{key}-{hashlib.sha1(chr(10).join(labels).encode()).hexdigest()[:12]}"


def pick_run(label: str, runs: list[Run], current: int | None, key: str) -> int:
    """A selectbox of ``runs`` (labelled by ``run_label``) on ``current``, else the first; see ``labelled_key``."""
    labels = {run.run_id: run_label(run) for run in runs}
    ids = list(labels)
    index = ids.index(current) if current in ids else 0
    return st.selectbox(label, ids, index=index, format_func=labels.get, key=labelled_key(key, list(labels.values())))


def remember(keys: list[str], defaults: dict[str, Any]) -> None:
    """Give widgets ``keys`` their last values (Streamlit forgets a widget's state when its page is left).

    Every key is removed and stored afresh on each run: a key set while its widget was hidden (the linear-leaf
    options, the example list) stays in the session beside the widget's own state, and would bring back that older
    value as soon as the page is left and the widget's state forgotten.
    """
    saved = st.session_state.setdefault("_remembered", {})
    for key in keys:
        st.session_state[key] = saved[key] = st.session_state.pop(key, saved.get(key, defaults.get(key)))


def describe_choice(params: Any, leaf: str = "") -> str:
    """The run's depth (then ``leaf``, if given) and features per split as set or as chosen for the user: "depth 3",
    "depth chosen from 1 to 6 constant, 2 features per split", "depth 4, features per split chosen"."""
    config, search = params.get("config", {}), params.get("search") or {}
    depths = search.get("depths") or [config.get("depth")]
    depth = f"depth chosen from {depths[0]} to {depths[-1]}" if len(depths) > 1 else f"depth {depths[0]}"
    k = config.get("max_split_features")
    features = ", features per split chosen" if search.get("split_features") else (
        f", {features_label(k)}" if k else "")
    return f"{depth} {leaf}{features}" if leaf else depth + features


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
    st.subheader(f"{STATUS_ICONS[run.status]} Run #{run.run_id}: {plain(run.name)}")
    st.caption(f"{run.status.value} · dataset {plain(run.dataset_name)} ({run.n_rows:,} rows, "
               f"{model_inputs(store, run)} inputs) · {describe_params(run.params)}")
    if run.status is RunStatus.QUEUED:
        ahead = [r for r in store.list_runs([RunStatus.QUEUED]) if r.run_id < run.run_id]
        st.info(f"Waiting for a free slot: {store.count_running()} run(s) training, {len(ahead)} queued ahead "
                f"(at most {launch.max_running()} at once).")
    st.progress(min(1.0, max(0.0, run.progress)), text=progress_text(run))
    classify = is_class_run(run)
    if classify:
        _class_metrics(store, run)
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
        st.error(plain(run.error or "The run failed."))
    elif run.status is RunStatus.CANCELLED:
        st.warning(plain(run.error or "The run was cancelled."))
    else:
        st.success(f"Finished in {format_seconds(run.duration() or 0)}.")
    from pages import search_ui  # it imports this module

    search_ui.search_section(run)  # a run whose depth or features per split are chosen for the user: its chart
    figure = loss_curves_figure(store.list_metrics(run.run_id), n_epochs=run.n_epochs,
                                n_stages=run.n_stages, y_scale=target_scale(store, run.run_id),
                                fits=store.get_json(run.run_id, FITS), classes=classify)
    if classify:
        st.caption("The curves show the Brier score on the training rows: the squared distance between the class "
                   "shares a row's leaf gives and the row's own class (0 is perfect; guessing every class's share "
                   "equally gives 1 − 1/classes). Lower is better; accuracy follows it.")
    st.plotly_chart(figure, key=f"curves-{run.run_id}")


def is_class_run(run: Run) -> bool:
    """Whether the run predicts a class target (its Data page choice)."""
    return (run.params.get("data") or {}).get("task") == "classification"


def _class_metrics(store: RunStore, run: Run) -> None:
    """A class run's figures in words: elapsed time, then (once known) the share of test rows classified correctly,
    balanced accuracy, log loss and the training rows' accuracy."""
    scores = store.get_json(run.run_id, "class_scores") or {}
    model = store.get_json(run.run_id, "model") if run.status.is_finished() else None
    train_accuracy = ((model or {}).get("meta") or {}).get("train_accuracy")
    columns = st.columns(5)
    shown = lambda v, f: "–" if v is None else format(v, f)  # noqa: E731
    columns[0].metric("Elapsed", "–" if run.duration() is None else format_seconds(run.duration()))
    columns[1].metric("Train accuracy", shown(train_accuracy, ".1%"),
                      help="the share of training rows the tree's own (hard) splits classify correctly")
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
    parts = [f"{100 * run.progress:.0f}%"]
    if run.status.is_finished():
        parts.append({RunStatus.FINISHED: "done", RunStatus.FAILED: "failed",
                      RunStatus.CANCELLED: "stopped"}[run.status])
    elif run.phase == "baselines":
        parts.append("step 2 of 2: fitting the baselines (CART, a random forest and GET with sparse or dense "
                     "splits)")
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


def describe_params(params: Any) -> str:
    config = params.get("config", {})
    effort = (f"a {config['time_budget']:g} s time budget over {config.get('n_alphas')} alphas"
              if config.get("time_budget") is not None else
              f"{config.get('n_starts')} starts × {config.get('n_epochs')} epochs × {config.get('n_alphas')} alphas")
    budget = f"{describe_choice(params)}, {config.get('leaf')} leaves, {effort}"
    changed = [f"{label} {config[name]:g}" for name, label in (("learning_rate", "learning rate"), ("l1", "L1"))
               if config.get(name, OPTIMIZER_DEFAULTS[name]) != OPTIMIZER_DEFAULTS[name]]
    scaling = ["robust scaling"] if config.get("scaling") == "robust" else []
    return ", ".join([budget, *changed, *scaling, f"seed {params.get('seed')}"])
