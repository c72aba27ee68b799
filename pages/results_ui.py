"""UI shared by the explorer pages (Tree, Compare, Predict): which model to look at, cached run results.

Imported by those pages (not a page itself). Finished runs are immutable, so their results are cached per
process; a model file loaded by the user is kept in the session so every page can use it.
"""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from get_core.data.classes import MAX_CLASSES
from get_core.model import model_file
from get_core.model.model_file import ModelFormatError
from get_core.runs.results import RunResults, load_results, runs_with_models
from get_core.model.tree import ObliqueTree
from pages import common, search_ui

UPLOADED = "uploaded_model"  # session key: (file name, ObliqueTree)


@dataclass(frozen=True)
class ModelSource:
    tree: ObliqueTree
    results: RunResults | None  # None for a model loaded from a file (no rows, no baselines)
    label: str


@st.cache_resource(max_entries=4, show_spinner="Loading the run...")
def _cached_results(db_path: str, run_id: int, search_tree: str | None = None) -> RunResults:
    return load_results(common.get_store(), run_id, search_tree)


def forget_results() -> None:
    """Drop the cached results: after a finished run gained its baselines (the one later write a run takes)."""
    _cached_results.clear()


def run_results(run_id: int, search_tree: str | None = None) -> RunResults:
    """The run's results, with its model or (``search_tree``, a ``runs.search.tree_key``) one of its search fits."""
    store = common.get_store()
    store.get_run(run_id)  # raises RunNotFound (shown by common.guarded) if it was deleted meanwhile
    return _cached_results(store.path, run_id, search_tree)


def choose_model(allow_file: bool = True) -> ModelSource | None:
    """Widgets to pick the model: a run with a trained tree (kept in ``?run=``), or a model JSON file."""
    source = "A run"
    if allow_file:
        source = st.radio("Model from", ["A run", "A model file"], horizontal=True, key="model_source",
                          index=1 if UPLOADED in st.session_state and common.selected_run_id() is None else 0)
    if source == "A model file":
        return _model_from_file()
    return _model_from_run(allow_file)


def _model_from_run(allow_file: bool) -> ModelSource | None:
    store = common.get_store()
    runs = runs_with_models(store)
    if not runs:
        st.info("No run has a trained tree yet: train one on the Train page"
                + (" (or load a model file)." if allow_file else "."))
        return None
    ids = [run.run_id for run in runs]
    current = common.selected_run_id()
    if current not in ids:
        if current is not None:
            exists = any(run.run_id == current for run in store.list_runs())
            st.info(f"Run {current} {'has no trained tree (yet)' if exists else 'does not exist'}; showing the "
                    "newest run that has one.")
        current = ids[0]
        common.select_run(current)
    chosen = common.pick_run("Run", runs, current, key=f"run_pick_{current}")
    if chosen != current:
        switch_run(chosen)
        st.rerun()
    results = run_results(chosen, search_ui.tree_picker(store, chosen))
    if results.data_note:
        st.warning(results.data_note)
    return ModelSource(results.tree, results, common.run_label(runs[ids.index(chosen)]))


def switch_run(run_id: int) -> None:
    common.select_run(run_id)
    for name in common.VIEW_PARAMS:
        st.query_params.pop(name, None)


def _model_from_file() -> ModelSource | None:
    upload = st.file_uploader("Model JSON (exported from GET Explorer)", type=["json"], key="model_file")
    if upload is not None:
        try:
            tree = model_file.load_model_json(upload.getvalue(), max_classes=MAX_CLASSES)
        except ModelFormatError as exc:
            st.error(common.plain(f"{upload.name}: {exc}"))
            return None
        if st.session_state.get(UPLOADED, (None,))[0] != upload.name:
            for name in common.VIEW_PARAMS:
                st.query_params.pop(name, None)
        st.session_state[UPLOADED] = (upload.name, tree)
    if UPLOADED not in st.session_state:
        st.info("Load a model JSON file (Export section of the Tree page) to use it without its run.")
        return None
    name, tree = st.session_state[UPLOADED]
    return ModelSource(tree, None, f"model file {name}")
