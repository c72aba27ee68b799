"""What would change this prediction, and a what-if editor: widgets over ``get_core.views.what_if`` for the Predict
page (a row it explains) and the Tree page (the shortest way into a clicked leaf). Imported, not a page itself."""

from __future__ import annotations

from typing import Any

import numpy as np
import streamlit as st

from get_core.data.encoding import Encoding
from get_core.model.counterfactual import MIN_SUPPORT, CounterfactualError
from get_core.model.tree import ObliqueTree
from get_core.views import diagram, labels, what_if
from pages import common, diagram_widget

NO_CAP = "any number"
ARROW = " \u2192 "
ANSWERS = 3  # answers in distinct leaves, side by side


def what_would_change(tree: ObliqueTree, x: np.ndarray, encoding: Encoding | None, reference: Any,
                      scope: str) -> None:
    """Goal, locked features, a cap on the changes, directions, whole numbers and the support an answer needs for
    row ``x``; the ``ANSWERS`` nearest changes that meet the goal side by side, each as a sentence and a table, and
    the old and new paths of the one chosen on the diagram."""
    key = f"cf_{scope}"
    numeric = list(encoding.numeric) if encoding is not None else list(tree.feature_names)
    with st.form(key):
        goal = _goal_widgets(tree, x, key)
        columns = list(encoding.columns) if encoding is not None else list(tree.feature_names)
        cols = st.columns([3, 1])
        locked = cols[0].multiselect("Features that may not change", columns, key=f"{key}_locked")
        cap = cols[1].selectbox("Features that may change", [NO_CAP, *range(1, min(len(columns), 10) + 1)],
                                key=f"{key}_cap")
        cols = st.columns(3)
        up = cols[0].multiselect("May only increase", numeric, key=f"{key}_up")
        down = cols[1].multiselect("May only decrease", numeric, key=f"{key}_down")
        whole = cols[2].multiselect("Whole numbers", numeric,
                                    default=what_if.whole_columns(tree, x, reference, encoding), key=f"{key}_whole",
                                    help="Started with the columns whose training values are all whole numbers")
        support = st.number_input("Training rows an answer's leaf needs at least", 0, None, MIN_SUPPORT, step=1,
                                  key=f"{key}_support", help="Leaves that rest on fewer rows are left out; lower it to "
                                                             "see them (each answer says how many rows it rests on)")
        asked = st.form_submit_button("Find the smallest change")
    if asked:
        both = [c for c in up if c in down]  # may neither rise nor fall: locked
        directions = {**{c: "increase" for c in up if c not in both}, **{c: "decrease" for c in down if c not in both}}
        try:
            st.session_state[f"{key}_answer"] = what_if.ask(
                tree, x, goal, locked=[*locked, *both], max_changes=None if cap == NO_CAP else int(cap),
                encoding=encoding, reference=reference, directions=directions, integers=whole,
                min_support=int(support), n=ANSWERS)
        except CounterfactualError as exc:
            st.session_state[f"{key}_answer"] = str(exc)
    answers = st.session_state.get(f"{key}_answer")
    if answers is None:
        st.caption("The smallest change is exact: every leaf of the tree is a region bounded by its splits, and the "
                   "nearest point of each leaf that gives the goal is found by linear programming, a step inside "
                   "the leaf so that the values shown hold when typed back. The three nearest leaves give three "
                   "answers; leaves with too few training rows give none. Distance: the sum of each change divided "
                   "by the feature's spread (a category switch counts 1); features stay within their training "
                   "range.")
        return
    if isinstance(answers, str):
        st.warning(common.plain(answers))
        return
    show_answers(tree, answers, key)


def show_answers(tree: ObliqueTree, answers: tuple[what_if.Answer, ...], key: str) -> None:
    """Up to ``ANSWERS`` answers side by side, nearest first, and the paths of the one chosen on the diagram."""
    for i, (column, answer) in enumerate(zip(st.columns(len(answers)), answers)):
        with column:
            st.markdown(f"**Answer {i + 1}**, distance {answer.result.distance:.4g}")
            st.success(common.plain(answer.sentence))
            if len(answer.table):
                st.table(answer.table.set_index("feature"))
            st.caption(common.plain(what_if.support_note(tree, answer.result)))
    st.caption("Each needed value is shown with every digit it has: typed back as shown it gives the answer, and so "
               "does any value within half its last digit (the answer keeps that margin inside its leaf). 'Keeps "
               "it': the values of that feature, the other changes made, that give the same answer.")
    chosen = 0
    if len(answers) > 1:
        chosen = st.radio("Drawn on the diagram", range(len(answers)), format_func=lambda i: f"Answer {i + 1}",
                          horizontal=True, key=f"{key}_drawn")
    answer = answers[chosen]
    st.caption(f"Path now (blue): {ARROW.join(map(str, answer.old_path))}; after answer {chosen + 1} (green): "
               f"{ARROW.join(map(str, answer.new_path))}.")
    paths_diagram(tree, answer.old_path, answer.new_path, key=f"{key}_diagram")


def _goal_widgets(tree: ObliqueTree, x: np.ndarray, key: str) -> Any:
    """The goal, started away from today's prediction (``what_if.default_goal``)."""
    start = what_if.default_goal(tree, x)
    if getattr(tree, "is_classifier", False):
        classes = list(tree.classes)
        return st.selectbox("Class wanted", classes, index=classes.index(start), key=f"{key}_class",
                            format_func=labels.class_name)
    mode, low, high = start
    cols = st.columns([1, 1, 1])
    mode = cols[0].selectbox("Prediction wanted", what_if.GOAL_MODES, index=what_if.GOAL_MODES.index(mode),
                             key=f"{key}_mode")
    low = cols[1].number_input("Low", value=low, format="%g", key=f"{key}_low",
                               help="Used by 'at least' and 'between'")
    high = cols[2].number_input("High", value=high, format="%g", key=f"{key}_high",
                                help="Used by 'at most' and 'between'")
    return what_if.regression_goal(mode, low, high)


def what_if_editor(tree: ObliqueTree, x: np.ndarray, encoding: Encoding | None, scope: str) -> None:
    """Sliders within the training range for row ``x``; the prediction and the path follow them live."""
    st.caption("Move a value and watch the prediction and the path; sliders span each feature's training "
               + ("1st-99th percentiles." if tree.scaling == "robust" else "range."))
    values = {}
    controls = what_if.sliders(tree, x, encoding)
    columns = st.columns(3)
    for i, control in enumerate(controls):
        where, key = columns[i % 3], f"whatif_{scope}_{i}"
        if control.levels:
            values[control.column] = where.selectbox(common.plain(control.column), control.levels,
                                                     index=control.levels.index(control.value), key=key)
        elif control.high > control.low:
            values[control.column] = where.slider(common.plain(control.column), control.low, control.high,
                                                  control.value, key=key)
        else:  # a feature that never varied in training
            values[control.column] = control.value
    edited = what_if.edited_row(tree, values, encoding)
    old, new = what_if.path_of(tree, x), what_if.path_of(tree, edited)
    cols = st.columns(2)
    cols[0].metric("Prediction now", common.number(tree.predict(x[None])[0]) if not _classes(tree)
                   else str(tree.predict(x[None])[0]))
    after = tree.predict(edited[None])[0]
    cols[1].metric("Prediction after the edits", common.number(after) if not _classes(tree) else str(after))
    st.caption(f"Path now (blue): {ARROW.join(map(str, old))}; after the edits (green): "
               f"{ARROW.join(map(str, new))}.")
    paths_diagram(tree, old, new, key=f"whatif_{scope}_diagram")


def _classes(tree: ObliqueTree) -> bool:
    return bool(getattr(tree, "is_classifier", False))


@st.cache_data(max_entries=32, show_spinner=False)
def _svg(dot: str) -> str:
    return diagram.render_svg(dot)


def paths_diagram(tree: ObliqueTree, old_path, new_path, key: str) -> None:
    """The diagram opened down to both leaves, the old path blue and the new one green."""
    levels = tree.depth + 1 if tree.depth <= 4 else 3
    options = what_if.paths_options(tree, diagram.DiagramOptions(levels=levels), old_path, new_path)
    dot = diagram.to_dot(tree, options)
    try:
        svg = _svg(dot)
    except diagram.GraphvizError:
        st.graphviz_chart(dot)
        return
    diagram_widget.tree_diagram(diagram.with_node_names(svg, tree), new_path[-1], key=key, on_click=lambda _: None)


def way_into_leaf(tree: ObliqueTree, leaf: int, X_train: Any, encoding: Encoding | None) -> None:
    """The Tree page's clicked leaf: the smallest change that takes a typical row (the training rows' median) into
    it, on request."""
    start = what_if.typical_row(tree, X_train, encoding)
    whence = "the training rows' median" if X_train is not None else "the middle of each feature's training span"
    with st.expander(f"Shortest way into leaf {leaf}"):
        st.caption(f"From {whence}" + (" (categorical columns at their most frequent level)"
                                       if encoding is not None and encoding.categories else "") + ".")
        key = f"leafway_{leaf}"
        if st.button("Find the shortest way in", key=f"{key}_go"):
            try:
                st.session_state[key] = what_if.ask(tree, start, leaf=leaf, encoding=encoding, reference=X_train)
            except CounterfactualError as exc:
                st.session_state[key] = str(exc)
        answer = st.session_state.get(key)
        if isinstance(answer, str):
            st.warning(common.plain(answer))
        elif answer is not None:
            show_answers(tree, (answer,), key)
