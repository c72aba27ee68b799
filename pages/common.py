"""UI helpers shared by the pages: the run store, the selected run, how a run is described, error display.

Pages call ``get_core`` through these helpers and never touch SQL or torch. Every page body runs inside
``guarded`` so that a problem shows as a short message, never a traceback.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import math
import re
import traceback
from pathlib import Path
from typing import Any, Callable

import streamlit as st

from get_core.config import DEFAULTS
from get_core.errors import GETExplorerError
from get_core.runs import estimate, launch
from get_core.runs.spec import leaves_text
from get_core.runs.store import Run, RunStore, StoreError, default_db_path
from get_core.views.search_chart import features_label
from pages import signin

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
                 "max_split_features": "Features per split", "class_leaf": "Leaves (class target)"}


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
    where.download_button(label, data, file_name, mime, key=key, help=help, on_click="ignore", width="stretch")


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


def open_store() -> RunStore:
    """The process-wide store for the configured database (``GET_EXPLORER_DB``): every owner's runs."""
    return _open_store(default_db_path())


def get_store() -> RunStore:
    """The store as this session may use it: its own workspace's runs and tables, or a review link's one run
    read-only (``signin.current_scope``). Every page reaches the runs through this."""
    return open_store().scoped(signin.current_scope())


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
        except GETExplorerError as exc:  # the project's own errors carry a sentence
            st.error(plain(str(exc)))
        except Exception as exc:  # the UI never shows a traceback; the server log keeps it
            _LOG.error("page %s failed:\n%s", body.__name__, traceback.format_exc())
            st.error(plain(f"Something went wrong ({type(exc).__name__}: {exc}). Reload the page; if it happens "
                           "again, the server log has the details."))

    return page


# ------------------------------------------------------------------------------------------ selected run
VIEW_PARAMS = ("node", "expand", "tree")  # query parameters that belong to one model (tree: a search fit's key)
SAVED_VIEWS = "_tree_views"  # session key: run id -> its view's query parameters, kept by the Tree page


STARTING = "_starting_run"  # session key: the Train page's Start was clicked and its run not yet selected


#: Numbers as a URL writes them: ASCII digits only. Python's int() and float() also read '1_0' (as 10), ' 10', and
#: other scripts' digits, so ``?run=1_0`` opened run 10.
_URL_INT = re.compile(r"-?[0-9]{1,18}")
_URL_NUMBER = re.compile(r"-?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]{1,3})?")


def url_int(value: Any) -> int | None:
    """A whole number from a URL parameter (or an int kept in the session), else None."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    return int(value) if isinstance(value, str) and _URL_INT.fullmatch(value) else None


def url_number(value: str, whole: bool) -> int | float | None:
    """A URL parameter's number (``whole``: an int), written as a URL writes it, else None."""
    if whole:
        return url_int(value)
    return float(value) if isinstance(value, str) and _URL_NUMBER.fullmatch(value) else None


def selected_run_id() -> int | None:
    """The run the user is looking at: kept in the URL (``?run=ID``) so a reload finds it again. Right after Start
    (the page was left before Start selected its run): the newest run, not the one looked at before."""
    if st.session_state.pop(STARTING, False):
        newest = get_store().list_runs()[:1]
        if newest:
            select_run(newest[0].run_id)
    return url_int(st.session_state.get("run_id") or st.query_params.get("run"))


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


def describe_params(params: Any) -> str:
    config = params.get("config", {})
    effort = (f"a {config['time_budget']:g} s time budget over {config.get('n_alphas')} alphas"
              if config.get("time_budget") is not None else
              f"{config.get('n_starts')} starts × {config.get('n_epochs')} epochs × {config.get('n_alphas')} alphas")
    budget = f"{describe_choice(params)}, {leaves_text(params)} leaves, {effort}"
    changed = [f"{label} {config[name]:g}" for name, label in (("learning_rate", "learning rate"), ("l1", "L1"))
               if config.get(name, OPTIMIZER_DEFAULTS[name]) != OPTIMIZER_DEFAULTS[name]]
    scaling = ["robust scaling"] if config.get("scaling") == "robust" else []
    return ", ".join([budget, *changed, *scaling, f"seed {params.get('seed')}"])
