"""UI of runs whose depth or features per split were chosen for the user (``get_core.runs.search``): the live search
chart on the run's panel, and the picker of the explorer pages that opens any tree the search fitted.

Imported by ``run_panel`` (the chart) and ``results_ui`` (the picker); not a page itself. The tree shown is kept in
the URL (``?tree=d3-kany``; none: the run's own tree), so a reload or a shared link opens the same one.
"""

from __future__ import annotations

from typing import Any, Mapping

import streamlit as st

from get_core.config import SEARCH_PATIENCE, validation_split_words
from get_core.runs.spec import SEARCH
from get_core.runs.store import Run, RunStore
from get_core.views.search_chart import (ACCURACY, R2, SCORE_NAMES, features_label, path_text, point_label,
                                         search_figure, tolerance_text)
from pages import common

#: The search's split in words (config.VALIDATION_FRACTION), for the text that explains it.
FIT_PART, SCORE_PART = validation_split_words()

TREE_PAGE = "pages/tree.py"


def search_section(run: Run) -> None:
    """The search chart of a run that has a search (nothing otherwise) and, once it has ended, a way to open each
    tree: a click on its point, or the picker beside the chart."""
    spec = run.params.get("search")
    if not spec:
        return
    search = common.get_store().get_json(run.run_id, SEARCH) or {}
    points, chosen = search.get("points", []), search.get("chosen")
    score = search.get("score") or _run_score(run)
    st.markdown(f"**{_title(spec, score)}**")
    st.caption(_status(search, spec, score))
    chart, picker = st.columns([3, 1])
    openable = run.status.is_finished() and bool(points)
    event = chart.plotly_chart(search_figure(points, chosen, score=score), key=f"search-chart-{run.run_id}",
                               on_select="rerun" if openable else "ignore", selection_mode="points")
    clicked = [p.get("customdata") for p in (event.selection.points if openable and event else [])]
    if clicked and clicked[0]:
        open_tree(run.run_id, clicked[0])
    if not openable:
        picker.caption("Each tree of the search can be opened here once the run has ended.")
        return
    by_key = {p["key"]: p for p in points}
    default = chosen["key"] if chosen and chosen.get("key") in by_key else points[-1]["key"]
    key = picker.selectbox("Tree of the search", list(by_key), index=list(by_key).index(default),
                           format_func=lambda k: point_label(by_key[k], bool(spec.get("split_features"))),
                           key=f"search-pick-{run.run_id}")
    if picker.button("Open this tree", key=f"search-open-{run.run_id}"):
        open_tree(run.run_id, key)
    picker.caption("Or click a point of the chart.")


def open_tree(run_id: int, key: str | None) -> None:
    """Show the run's search fit ``key`` (None: the run's own tree) on the Tree page."""
    common.select_run(run_id)
    st.switch_page(TREE_PAGE, query_params={"run": str(run_id), **({"tree": key} if key else {})})


def tree_picker(store: RunStore, run_id: int) -> str | None:
    """On the explorer pages: which of the run's trees to show, the run's own (None) or a search fit's key, kept in
    ``?tree=``; says which one is open. Nothing for a run without a search."""
    search = store.get_json(run_id, SEARCH)
    if not search or not search.get("points"):
        st.query_params.pop("tree", None)
        return None
    by_key = {p["key"]: p for p in search["points"]}
    current = _shown_tree(run_id)
    current = current if current in by_key else None
    options = [None, *by_key]
    with_features = bool(search.get("split_features"))
    chosen = st.selectbox("Tree of this run", options, index=options.index(current),
                          key=f"tree_pick_{run_id}_{current}",
                          format_func=lambda k: _own_tree(search) if k is None else
                          f"search fit: {point_label(by_key[k], with_features)}")
    if chosen != current:
        view = {} if chosen is None else {"tree": chosen}  # node numbers belong to one tree: a fresh view
        for name in common.VIEW_PARAMS:
            st.query_params.pop(name, None)
        st.query_params.update(view)
        st.session_state.setdefault(common.SAVED_VIEWS, {})[run_id] = view
        st.rerun()
    if current is not None:
        st.info(f"Showing a tree of the search, not the run's own: {point_label(by_key[current], True)}. It was "
                f"fitted on {FIT_PART} of the run's training rows and scored on {SCORE_PART}; the run's test "
                f"scores on the Runs page belong to {_own_tree(search)}.", icon=":material/alt_route:")
    return current


def _shown_tree(run_id: int) -> str | None:
    """The tree in the URL; with no view in the URL (a page opened from the menu), the one last shown for the run."""
    if any(name in st.query_params for name in common.VIEW_PARAMS):
        return st.query_params.get("tree")
    return st.session_state.get(common.SAVED_VIEWS, {}).get(run_id, {}).get("tree")


def _own_tree(search: Mapping[str, Any]) -> str:
    chosen = search.get("chosen") or {}
    what = f"depth {chosen.get('depth')}"
    if search.get("split_features"):
        what += f", {features_label(chosen.get('max_split_features'))}"
    if search.get("status") == "cancelled":
        return f"the run's tree ({what}: the best validated before the run was cancelled)"
    return f"the run's tree ({what}, chosen by the search and refit on all training rows)"


def _run_score(run: Run) -> str:
    """The score a run's search is chosen by, before its first point: a class target's accuracy, else R2."""
    return ACCURACY if (run.params.get("data") or {}).get("task") == "classification" else R2


def _title(spec: Mapping[str, Any], score: str = R2) -> str:
    depth, features = len(spec.get("depths", ())) > 1, bool(spec.get("split_features"))
    what = " and ".join(name for name, on in (("Depth", depth), ("features per split", features)) if on)
    return f"{what[0].upper()}{what[1:]} chosen for you: {SCORE_NAMES[score]} of each tree the search fitted"


def _status(search: Mapping[str, Any], spec: Mapping[str, Any], score: str = R2) -> str:
    points, status = search.get("points", []), search.get("status")
    tried = f"{len(points)} tree(s) scored so far" if points else "no tree scored yet"
    chosen = search.get("chosen")
    if status == "done" and chosen:
        return (f"Chosen: {point_label({**chosen, 'n_parameters': _params_of(search, chosen)}, True)}, then refit "
                f"on all training rows. Each tree was fitted on {FIT_PART} of the training rows and scored on "
                f"{SCORE_PART}; the star marks the choice (the smallest within {tolerance_text(score)} of the best "
                "when features per split were chosen). A shallower tree nearly as good is easier to read: open it.")
    if status == "cancelled":
        return f"Cancelled during the search ({tried}); the best validated tree is kept."
    if status == "refitting":
        return f"Search done ({tried}); refitting the chosen tree on all training rows..."
    depths = spec["depths"]
    if len(depths) == 1:
        return f"Searching ({tried}): {path_text()} features per split at depth {depths[0]}."
    return (f"Searching ({tried}): depths {depths[0]} to {depths[-1]}, stopping once {SEARCH_PATIENCE} depths in a "
            f"row stop improving the {SCORE_NAMES[score]}.")


def _params_of(search: Mapping[str, Any], chosen: Mapping[str, Any]) -> int:
    return next((p["n_parameters"] for p in search.get("points", []) if p["key"] == chosen.get("key")), 0)

